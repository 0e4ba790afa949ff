"""pipeopt from Python: compile a model into pipelined per-rank programs and run them.

The core API (this module) wraps pipeopt's compiler driver and its runtime
Session (docs/Python.md, docs/RuntimeSession.md)::

    import numpy as np, pipeopt
    build = pipeopt.compile("examples/mlp4.tosa.mlir", "/tmp/mlp4.so",
                            num_stages=2, num_microbatches=4)
    with pipeopt.Session(build) as s:
        s.set_input(0, np.ones((4, 8, 64), np.float32))  # M=4 microbatches of [1, 8, 64]
        s.run()
        y = s.output(0)

`pipeopt.torch` builds a pipelined training step from a PyTorch module.

Conventions used throughout:

* A model is compiled at the *microbatch* size: its data arguments have
  batch / num_microbatches rows.  At run time a microbatched input takes the
  whole batch (``[num_microbatches * rows, ...]``), split along dimension 0,
  or ``[num_microbatches, rows, ...]``.
* Times are in seconds, sizes in bytes.
* Errors: `CompileError` (the compiler's diagnostics, with locations),
  `UsageError` (a ``ValueError``: a bad option, name, shape or path; the
  object stays usable), `RunError` (a ``RuntimeError``: a rank failed; the
  message names the rank, stage and microbatch).
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _pipeopt
from ._pipeopt import CompileError, RunError, UsageError

__all__ = [
    "Build",
    "CompileError",
    "RunError",
    "Session",
    "UsageError",
    "compile",
    "compile_options",
    "launcher_world",
]

PathLike = Union[str, "os.PathLike[str]"]

# --------------------------------------------------------------------------
# Compiling
# --------------------------------------------------------------------------


def compile_options() -> Dict[str, str]:
    """The keyword options `compile` takes: ``{python_name: help}``.

    They are pipeopt-compile's options (``pipeopt-compile --help``) with
    dashes written as underscores: ``num_stages``, ``num_microbatches``,
    ``schedule``, ``train``, ``loss``, ``optimizer``, ``lr``, ...
    """
    return {n.replace("-", "_"): h for n, _, h in _pipeopt.compile_options()}


def _option_kinds() -> Dict[str, str]:
    return {n: k for n, k, _ in _pipeopt.compile_options()}


def _option_argument(name: str, kind: str, value: Any) -> List[str]:
    """One keyword argument as pipeopt-compile command-line arguments."""
    flag = "--" + name if len(name) > 1 else "-" + name
    if kind == "flag":
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"compile option {name.replace('-', '_')} takes "
                            f"True or False, not {value!r}")
        return [flag] if value else [flag + "=false"]
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"compile option {name.replace('-', '_')} takes a "
                        f"value, not {value!r}")
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple, range)):
        text = ",".join(str(v) for v in value)
    else:
        text = str(value)
    return [f"{flag}={text}"]


def _model_text(model: Any) -> Optional[str]:
    """The MLIR text of `model` when it is not a path (text or a module
    object with an MLIR ``__str__``, e.g. torch-mlir's)."""
    if isinstance(model, os.PathLike):
        return None
    if isinstance(model, str):
        looks_like_mlir = ("func.func" in model or "module" in model) and (
            "{" in model)
        return model if looks_like_mlir and not os.path.exists(model) else None
    if hasattr(model, "operation") or type(model).__name__ == "Module":
        return str(model)
    raise TypeError("model must be a path to an .mlir file, MLIR text or an "
                    f"MLIR module object, not {type(model).__name__}")


def _sibling(model: PathLike, suffix: str) -> Path:
    """The file pipeopt-compile writes beside `model` (a ``.so``): the same
    stem with `suffix` (``.manifest.json``, ``.partition.json``, ...)."""
    text = str(model)
    return Path((text[:-3] if text.endswith(".so") else text) + suffix)


def compile(model: Any,
            output: Optional[PathLike] = None,
            *,
            manifest: Optional[PathLike] = None,
            **options: Any) -> "Build":
    """Compiles `model` to a shared object and its manifest, like pipeopt-compile.

    Args:
      model: a path to an ``.mlir`` file, MLIR text (func + tosa or
        linalg-on-tensors), or an MLIR module object (its ``str()``).
      output: the ``.so`` to write (default: ``<stem>.so`` next to an input
        file; for text, ``model.so`` in a new temporary directory).  Its
        directory must exist.
      manifest: the manifest path (default ``<output stem>.manifest.json``).
      **options: pipeopt-compile's options with underscores for dashes
        (`compile_options` lists them): ``num_stages=4, schedule="zb-h1",
        num_microbatches=8, train=True, loss="cross-entropy",
        optimizer="adamw", lr=1e-3, betas=(0.9, 0.95),
        microbatch_args=[52], timing=True, ...``.  A flag takes a bool, a
        list option a sequence.

    Returns:
      A `Build` (the paths, the manifest, what the compiler printed).

    Raises:
      TypeError: an unknown keyword (the message suggests the closest).
      CompileError: the compiler's diagnostics, with their locations.
    """
    kinds = _option_kinds()
    args: List[str] = []
    for key, value in options.items():
        name = key.replace("_", "-")
        if name not in kinds:
            close = difflib.get_close_matches(
                key, [k.replace("-", "_") for k in kinds], n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise TypeError(f"compile() got an unknown option {key!r}{hint} "
                            "(pipeopt.compile_options() lists them)")
        if value is None:
            continue
        args += _option_argument(name, kinds[name], value)

    if isinstance(model, (str, os.PathLike)) and str(model).strip() == "":
        raise UsageError("compile(): the model is an empty string (give an "
                         ".mlir path or MLIR text)")
    tmp = None
    text = _model_text(model)
    if text is not None:
        if output is None:
            tmp = tempfile.TemporaryDirectory(prefix="pipeopt-")
            output = Path(tmp.name) / "model.so"
        source = Path(output).with_suffix(".input.mlir")
        source.write_text(text)
    else:
        source = Path(model)
        if not source.exists():
            shown = str(model) if len(str(model)) < 200 else str(model)[:200] + "..."
            raise UsageError(f"no such model file: {shown} (MLIR text must "
                             "hold a func.func or a module)")
        if not source.is_file():
            raise UsageError(f"{source} is not a file (give an .mlir file)")
    if output is None:
        output = source.with_suffix(".so")
    # The partition report, for Build.partition_report(), when the front
    # half runs (not for --reference or an input that is already scheduled,
    # where partition options are an error).
    if (not options.get("reference") and
            "report=" not in str(options.get("partition_options") or "") and
            "pipe.program" not in source.read_text(errors="replace")):
        extra = str(options.get("partition_options") or "")
        args = [a for a in args if not a.startswith("--partition-options=")]
        report = _sibling(output, ".partition.json")
        value = " ".join(filter(None, [extra, f"report={report}"]))
        args.append(f"--partition-options={value}")
    args = [str(source), "-o", str(output)] + args
    if manifest is not None:
        args += ["--manifest", str(manifest)]
    printed = _pipeopt.compile(args)
    manifest_path = (Path(manifest) if manifest is not None else _sibling(
        output, ".manifest.json"))
    build = Build(Path(output), manifest_path, printed, source)
    build._tmp = tmp  # a temporary directory lives as long as its Build
    return build


@dataclass
class Build:
    """A compiled model: the shared object, its manifest and what pipeopt chose.

    Attributes:
      model_path: the ``.so``.
      manifest_path: its manifest (JSON, docs/Runtime.md).
      compiler_output: what the compiler printed (``timing=True`` lines,
        warnings, the partition table when asked for).
      source: the MLIR file compiled.
    """

    model_path: Path
    manifest_path: Path
    compiler_output: str = ""
    source: Optional[Path] = None
    _manifest: Optional[dict] = field(default=None, repr=False)
    _tmp: Any = field(default=None, repr=False)

    @property
    def manifest(self) -> dict:
        """The manifest as a dict (parsed once)."""
        if self._manifest is None:
            self._manifest = json.loads(Path(self.manifest_path).read_text())
        return self._manifest

    @property
    def num_ranks(self) -> int:
        """The ranks (threads in loopback, processes under mpirun)."""
        return int(self.manifest["num_ranks"])

    @property
    def num_stages(self) -> int:
        """The pipeline stages (more than ranks for multi-chunk schedules)."""
        return int(self.manifest["num_stages"])

    @property
    def num_microbatches(self) -> int:
        """M: the microbatches of one step (the batch is M times the rows
        the model was compiled for)."""
        return int(self.manifest["num_microbatches"])

    @property
    def schedule(self) -> str:
        """The schedule's key ("1f1b", "zb-h1", ...; "" if unrecorded)."""
        return str(self.manifest.get("schedule", ""))

    @property
    def inputs(self) -> List[dict]:
        """Every model input: index, name, dtype, shape (per microbatch when
        microbatched), microbatched."""
        return list(self.manifest.get("inputs", []))

    @property
    def outputs(self) -> List[dict]:
        """Every model output: index, name, dtype, shape, microbatched and
        "reduce" ("mean" for a training build's loss)."""
        return list(self.manifest.get("outputs", []))

    @property
    def parameters(self) -> List[dict]:
        """The trained parameters of a training build (index, ranks, ...)."""
        return list(self.manifest.get("parameters", []))

    @property
    def training(self) -> dict:
        """The optimizer and its hyper-parameters (empty for inference)."""
        return dict(self.manifest.get("training", {}))

    def partition_report(self) -> Optional[dict]:
        """pipe-partition's report of the stages (per stage: ops, FLOP,
        bytes, forward / backward seconds predicted, the bottleneck and the
        lower bound), or None for a build that was not partitioned (a
        reference build, or programs given in the input)."""
        path = _sibling(self.model_path, ".partition.json")
        return json.loads(path.read_text()) if path.exists() else None

    def schedule_grid(self) -> List[List[str]]:
        """The schedule as one list of actions per rank, in execution order:
        ``"F3.1"`` is the forward of stage 3 for microbatch 1, ``B``/``W``
        the backward (input gradient) and weight gradient, ``"SEND ..."``
        style communication is not listed (it is implied by the stages)."""
        grid = []
        for actions in self.manifest.get("actions", []):
            row = []
            for a in actions:
                row.append(f"{a.get('kind', '?')}{a.get('stage', '')}."
                           f"{a.get('microbatch', '')}")
            grid.append(row)
        return grid

    def report(self) -> str:
        """A readable summary: ranks, stages, schedule, microbatches, the
        optimizer and the grid of the first microbatches."""
        lines = [
            f"{self.model_path.name}: {self.num_stages} stage(s) on "
            f"{self.num_ranks} rank(s), schedule "
            f"{self.schedule or 'none'}, {self.num_microbatches} "
            "microbatch(es)"
        ]
        if self.training:
            hp = ", ".join(f"{k}={v}" for k, v in self.training.items()
                           if k != "optimizer")
            lines.append(f"training: {self.training.get('optimizer')} ({hp}), "
                         f"{len(self.parameters)} parameter(s)")
        for r, row in enumerate(self.schedule_grid()):
            shown = " ".join(row[:24]) + (" ..." if len(row) > 24 else "")
            lines.append(f"  rank {r}: {shown}")
        return "\n".join(lines)

    def simulate(self,
                 hardware: Optional[PathLike] = None,
                 *,
                 device: Optional[str] = None,
                 optimizer_step: bool = True) -> dict:
        """The simulator's prediction for this build's programs (formula,
        idealized table and event level; seconds), as the dict that
        ``pipeopt --pipe-simulate=report=...`` writes.  Needs the scheduled
        MLIR, i.e. a build compiled with ``save_temps=True``.

        Args:
          hardware: a machine JSON (``pipeopt-calibrate``'s, for this host's
            measured rates; docs/CostModel.md).
          device: a device preset (h100, h200, a100, cpu); default: the
            build's target (cpu, or h100 for cuda).
          optimizer_step: cost the optimizer step of a training build.

        Raises:
          UsageError: the build has no ``.scheduled.mlir``.
          CompileError: the simulator failed (its message).
        """
        scheduled = _sibling(self.model_path, ".scheduled.mlir")
        if not scheduled.exists():
            raise UsageError(f"{scheduled} does not exist: compile with "
                             "save_temps=True to simulate a build")
        with tempfile.TemporaryDirectory(prefix="pipeopt-sim-") as d:
            report = Path(d) / "report.json"
            if device is None:
                device = ("h100" if self.manifest.get("target") == "cuda" else
                          "cpu")
            opts = f"report={report} device={device}"
            if hardware is not None:
                opts += f" hardware={hardware}"
            if optimizer_step and self.training:
                opts += " optimizer-step=true"
            cmd = [
                str(_tool("pipeopt")),
                str(scheduled), f"--pipe-simulate={opts}", "-o", os.devnull
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise CompileError(proc.stderr or proc.stdout)
            return json.loads(report.read_text())


def _tool(name: str) -> Path:
    """A pipeopt tool: $PIPEOPT_BIN_DIR, then the build tree's bin/."""
    candidates = []
    if os.environ.get("PIPEOPT_BIN_DIR"):
        candidates.append(Path(os.environ["PIPEOPT_BIN_DIR"]) / name)
    try:
        from . import _build_config
        candidates.append(Path(_build_config.BIN_DIR) / name)
    except ImportError:
        pass
    for c in candidates:
        if c.exists():
            return c
    raise UsageError(f"cannot find the pipeopt tool {name!r} (set "
                     "PIPEOPT_BIN_DIR to the directory that holds it)")


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


def launcher_world() -> Optional[tuple]:
    """(rank, size) when this process was started by mpirun / srun as one of
    several processes (Open MPI, MPICH/PMI or Slurm variables), else None."""
    for rank_var, size_var in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                               ("PMI_RANK", "PMI_SIZE"),
                               ("PMIX_RANK", "PMIX_SIZE"),
                               ("SLURM_PROCID", "SLURM_NTASKS")):
        if rank_var in os.environ and size_var in os.environ:
            size = int(os.environ[size_var])
            if size > 1:
                return int(os.environ[rank_var]), size
    return None


Key = Union[int, str]


def _key(key: Any) -> Union[int, str]:
    """An input key: an index (int, NumPy integer) or a name."""
    if isinstance(key, (bool, np.bool_)) or not isinstance(
            key, (int, np.integer, str)):
        raise TypeError("an input key is an index (int) or a name (str), not "
                        f"{type(key).__name__}")
    return key if isinstance(key, str) else int(key)


def _c_array(value: Any, dtype: Any = None) -> np.ndarray:
    """A C-contiguous NumPy array of `value` that keeps its rank (0-d stays
    0-d, which numpy.ascontiguousarray does not)."""
    return np.require(np.asarray(value, dtype=dtype), requirements="C")


class Session:
    """A loaded build, run step by step (the runtime Session).

    ``comm="auto"`` runs every rank as a thread of this process (loopback),
    or, when the process was started by ``mpirun -np P`` (P = the build's
    ranks), this process's rank over MPI (NCCL for a CUDA build).  Under MPI
    every process runs the same script and passes the same inputs
    (SPMD); outputs, weights and losses are gathered in the process of rank
    0 (`is_root`), the others get ``None``.

    Args:
      build: a `Build`, or the path of a ``.so`` (its manifest next to it).
      manifest: the manifest path when `build` is a path and it is elsewhere.
      comm: ``"auto"``, ``"loopback"``, ``"mpi"`` or ``"nccl"``.
      timeout_s: the limit of every blocking communication call, seconds.
      threads: threads per rank for the kernels (0: the cores divided among
        the ranks of this node).
      seed: seed of the pseudo-random data of inputs set neither here nor by
        `set_random_inputs`.
      quiet: no progress line per training step.
      checkpoint_dir, checkpoint_every: write a checkpoint every
        `checkpoint_every` steps into `checkpoint_dir` (atomically).
      trace, profile: Chrome trace / profile JSON of the last run.
      gather_after_run: copy every parameter to rank 0 after each `run`
        (for `weight`); False saves that copy in a loop of one-step runs,
        and `synchronize` (automatic in loopback) makes it when needed.
      data_parallel: D replicas of the build's P-rank pipeline on D x P
        ranks (``mpirun -np D*P``, or D x P threads in loopback); every
        microbatched input then takes the global batch, D times the
        build's, and the replicas average their gradients (docs/Runtime.md,
        "Data parallelism").
      zero: 1 shards the optimizer state over the D replicas (ZeRO-1).
      bucket_mb: the largest gradient all-reduce bucket, MiB of f64 sums.

    Raises:
      UsageError: a missing or damaged build, a manifest of another build,
        options the build cannot take.
    """

    def __init__(self,
                 build: Union[Build, PathLike],
                 *,
                 manifest: Optional[PathLike] = None,
                 comm: str = "auto",
                 timeout_s: float = 60.0,
                 threads: int = 0,
                 seed: int = 0,
                 quiet: bool = True,
                 pin_ranks: str = "auto",
                 checkpoint_dir: Optional[PathLike] = None,
                 checkpoint_every: int = 0,
                 trace: Optional[PathLike] = None,
                 profile: Optional[PathLike] = None,
                 devices: Sequence[int] = (),
                 gather_after_run: bool = True,
                 data_parallel: int = 1,
                 zero: int = 0,
                 bucket_mb: float = 25.0):
        if not timeout_s > 0:
            raise UsageError(f"timeout_s must be > 0 seconds, got {timeout_s}")
        for name, value in (("data_parallel", data_parallel), ("zero", zero)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise UsageError(f"{name} must be an integer, got {value!r}")
        if isinstance(build, Build):
            model, manifest_path = build.model_path, build.manifest_path
            self.build = build
        else:
            model = Path(build)
            manifest_path = Path(manifest) if manifest else _sibling(
                model, ".manifest.json")
            self.build = Build(model, manifest_path)
        if comm == "auto":
            comm = "loopback"
            if launcher_world() is not None:
                comm = ("nccl" if self.build.manifest.get("target") == "cuda"
                        else "mpi")
        self.comm = comm
        self._native = _pipeopt.Session()
        self._native.load(str(model), str(manifest_path), comm, float(timeout_s),
                     int(threads), int(seed), bool(quiet), pin_ranks,
                     str(checkpoint_dir or ""), int(checkpoint_every),
                     str(trace or ""), str(profile or ""), list(devices),
                     int(data_parallel), int(zero), float(bucket_mb))
        self._native.set_gather_after_run(bool(gather_after_run))

    # Context manager: nothing to release explicitly, but `with` reads well
    # and drops the session (and MPI, when it initialized it) at the end.
    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Releases the session (finalizes MPI when it initialized it)."""
        self._native = None

    @property
    def _s(self):
        if self._native is None:
            raise UsageError("the session is closed")
        return self._native

    @property
    def is_root(self) -> bool:
        """True in the process that runs rank 0 (outputs, weights and losses
        are gathered there)."""
        return bool(self._s.has_rank0())

    @property
    def uses_mpi(self) -> bool:
        """True when this process runs one rank of several (mpirun)."""
        return bool(self._s.uses_mpi())

    @property
    def steps_done(self) -> int:
        """The measured steps (or inference iterations) run so far."""
        return int(self._s.steps_done())

    def set_input(self, key: Key, value: Any) -> None:
        """Sets model input `key` (its index or manifest name) to `value` (a
        NumPy array or anything `numpy.asarray` takes; copied).

        A microbatched input takes the whole batch, ``[M * rows, ...]`` or
        ``[M, rows, ...]`` (M = the build's microbatches; with
        ``data_parallel=D`` the global batch, ``[D * M * rows, ...]`` or
        ``[D * M, rows, ...]``, replica d training on its d-th part); other
        inputs their exact shape.  For a new batch per step, set it before
        each ``run(1)``.

        Raises:
          UsageError: unknown input, wrong dtype or shape (the message says
            how the input was classified and how to change that).
        """
        self._s.set_input(_key(key), _c_array(value))

    def set_inputs(self, values: Union[Mapping[Key, Any], PathLike]) -> None:
        """Sets several inputs: a mapping ``{key: array}`` (`set_input` for
        each), or the path of a directory of ``.npy`` files or of an
        ``.npz`` archive (``numpy.savez``) whose entries are named by input
        index (``3``, ``arg_3``, ``arg3``, ``input_3``) or by the manifest's
        input name, as ``pipeopt-run --inputs``.

        Raises:
          UsageError: an unknown entry, a damaged archive, a wrong dtype or
            shape (naming the file and the entry); nothing is set then.
        """
        if isinstance(values, Mapping):
            for k, v in values.items():
                self.set_input(k, v)
        else:
            self._s.set_inputs_from(str(values))

    def set_random_inputs(self, enabled: bool = True, seed: int = 0) -> None:
        """Pseudo-random data for the inputs that are not set."""
        self._s.set_random_inputs(bool(enabled), int(seed))

    def run(self, steps: int = 1) -> None:
        """Runs `steps` inference iterations or training steps (gradients,
        their reduction over ranks and the optimizer update), continuing
        from the previous run.

        Raises:
          UsageError: inputs missing or malformed.
          RunError: a rank failed (every failed rank's error).
        """
        self._s.run(int(steps))

    def output(self, key: Key) -> Optional[np.ndarray]:
        """Output `key` of the last run (rank 0's process; None elsewhere):
        microbatched outputs ``[M, ...]``, ``"reduce": "mean"`` outputs (the
        loss) their mean over the microbatches."""
        return np.asarray(self._s.output(key)) if self.is_root else None

    def outputs(self) -> Dict[Key, np.ndarray]:
        """Every output of the last run, by name (index when unnamed)."""
        if not self.is_root:
            return {}
        return {o.get("name") or o["index"]: np.asarray(self._s.output(o["index"]))
                for o in self.build.outputs}

    def losses(self) -> Optional[np.ndarray]:
        """The loss of every training step so far (f32; rank 0's process)."""
        return np.asarray(self._s.losses(), np.float32) if self.is_root else None

    def weight(self, key: Key) -> Optional[np.ndarray]:
        """The current value of parameter `key` (input index or name)."""
        return np.asarray(self._s.weight(key)) if self.is_root else None

    def weights(self) -> Dict[int, np.ndarray]:
        """Every parameter's current value, by input index (rank 0)."""
        if not self.is_root:
            return {}
        return {p["index"]: np.asarray(self._s.weight(p["index"]))
                for p in self.build.parameters}

    def set_weight(self, key: Key, value: Any) -> None:
        """Replaces parameter `key`'s value (every rank that holds it),
        before the first step or between steps.  Collective under MPI:
        every process calls it with the same value.

        Raises:
          UsageError: not a parameter, a wrong shape or dtype.
        """
        self._s.set_weight(_key(key), _c_array(value))

    def optimizer_state(self, key: Key) -> Optional[dict]:
        """Parameter `key`'s optimizer state (rank 0's process):
        ``{"first": ..., "second": ..., "step": n}`` with the moments as
        float64 arrays of the parameter's shape (AdamW: exp_avg and
        exp_avg_sq; momentum: the buffer in "first"; an empty array when
        the optimizer keeps no such moment or has not stepped yet) and the
        number of updates applied."""
        if not self.is_root:
            return None
        first, second, step = self._s.optimizer_state(key)
        return {"first": np.asarray(first), "second": np.asarray(second),
                "step": int(step)}

    def set_optimizer_state(self, key: Key, first: Any, second: Any,
                            step: int) -> None:
        """Replaces parameter `key`'s optimizer state (see
        `optimizer_state`; empty arrays for moments the optimizer does not
        keep).  Collective under MPI."""
        self._s.set_optimizer_state(_key(key), _c_array(first, np.float64),
                                    _c_array(second, np.float64), int(step))

    def synchronize(self) -> None:
        """Gathers every parameter and its optimizer state to rank 0's
        process.  Needed (and collective: every process calls it) under MPI
        after steps run with ``gather_after_run=False``, before `weight`,
        `weights`, `optimizer_state` or `save_checkpoint`; loopback sessions
        do it by themselves."""
        self._s.synchronize()

    def save_checkpoint(self, directory: PathLike) -> None:
        """Writes the weights, optimizer state and losses as a checkpoint of
        the current step into `directory` (created; written atomically, in
        rank 0's process).  Collective under MPI (it synchronizes first)."""
        if self.uses_mpi:
            self.synchronize()
        if self.is_root:
            self._s.write_checkpoint(str(directory))

    def resume(self, directory: PathLike) -> List[str]:
        """Continues from the newest checkpoint in `directory` that verifies;
        returns notes on what was skipped."""
        return list(self._s.resume(str(directory)))

    def summary(self) -> str:
        """pipeopt-run's summary of the last run (step times, ...); empty
        for a session opened with ``quiet=True`` (the default)."""
        return self._s.write_results() if self.is_root else ""
