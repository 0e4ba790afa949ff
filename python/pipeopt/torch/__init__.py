"""pipeopt for PyTorch: train an ``nn.Module`` pipelined over ranks.

::

    import torch, pipeopt.torch
    pipe = pipeopt.torch.pipeline(model, inputs, "cross_entropy",
                                  num_stages=2, num_microbatches=4,
                                  optimizer=torch.optim.AdamW(model.parameters(), lr=1e-3))
    for _ in range(20):
        loss = pipe.step(inputs, targets)      # a 0-d torch tensor
    model.load_state_dict(pipe.state_dict())   # the trained weights, torch's names

`pipeline` exports the module with torch-mlir (every parameter an argument,
tied parameters once, buffers as non-trainable arguments, transformers'
attention mask built inside the function when needed: `PipelinedModule.notes`
says what was done), compiles the training step with pipeopt (partition into
`num_stages` stages, the schedule, the optimizer), and opens a runtime
session: every rank a thread of this process, or, under ``mpirun -np S``,
this process's rank over MPI.  The same script runs both ways; under MPI
every process passes the same data (SPMD), and the loss, `state_dict` and
checkpoints are produced in the process of rank 0 (`is_root`); elsewhere
`step` returns None and `state_dict` an empty dict.

Needs torch and torch-mlir (``pip install torch torch-mlir``), and
transformers for its models.
"""

from __future__ import annotations

import collections
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence, Union

import numpy as np

import pipeopt
from pipeopt import CompileError, RunError, UsageError

from ._export import ExportError, ExportedStep, export_training_step

__all__ = [
    "ExportError",
    "PipelinedModule",
    "optimizer_options",
    "pipeline",
]


def _torch():
    import torch
    return torch


# --------------------------------------------------------------------------
# Optimizers
# --------------------------------------------------------------------------


def optimizer_options(optimizer: Any) -> Dict[str, Any]:
    """pipeopt's optimizer options for `optimizer`, when they are exact.

    Args:
      optimizer: a ``torch.optim.AdamW``, ``Adam`` (weight_decay 0) or
        ``SGD`` (with or without momentum; no dampening, no Nesterov), a
        dict of pipeopt options (``{"optimizer": "adamw", "lr": 1e-3,
        "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.1}``), or None
        (AdamW with torch's defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8,
        weight_decay 0.01).

    Returns:
      Keyword options of `pipeopt.compile` (optimizer, lr, momentum, betas,
      eps, weight_decay).

    Raises:
      ValueError: a torch optimizer pipeopt does not implement exactly
        (several parameter groups with different settings, amsgrad,
        maximize, Nesterov, dampening, Adam's coupled weight decay, a
        learning-rate scheduler attached), or one that has already taken
        steps.
    """
    if optimizer is None:
        return dict(optimizer="adamw", lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                    weight_decay=0.01)
    if isinstance(optimizer, dict):
        return dict(optimizer)
    torch = _torch()
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError("optimizer must be a torch.optim.Optimizer, a dict of "
                        "pipeopt options or None, not "
                        f"{type(optimizer).__name__}")
    kind = type(optimizer).__name__
    groups = optimizer.param_groups
    keys = ("lr", "betas", "eps", "weight_decay", "momentum", "dampening",
            "nesterov", "amsgrad", "maximize")
    first = {k: groups[0].get(k) for k in keys}
    for g in groups[1:]:
        if any(g.get(k) != first[k] for k in keys):
            raise ValueError(f"{kind} has parameter groups with different "
                             "settings; pipeopt applies one setting to every "
                             "parameter")
    if any("initial_lr" in g for g in groups):
        raise ValueError(f"{kind} has a learning-rate scheduler attached "
                         "(its param groups carry 'initial_lr'); pipeopt's "
                         "learning rate is constant: pass an optimizer "
                         "without a scheduler")
    if any(len(s) for s in optimizer.state.values()):
        raise ValueError(f"{kind} has already taken steps; pipeopt starts "
                         "from a fresh optimizer state (pass a new one, or "
                         "load a pipeopt checkpoint)")
    if first.get("maximize"):
        raise ValueError(f"{kind}(maximize=True) is not supported")
    lr = first["lr"]
    if isinstance(lr, torch.Tensor):
        lr = float(lr)
    if kind in ("AdamW", "Adam"):
        if first.get("amsgrad"):
            raise ValueError(f"{kind}(amsgrad=True) is not supported")
        wd = first["weight_decay"]
        decoupled = kind == "AdamW" or groups[0].get("decoupled_weight_decay")
        if not decoupled and wd:
            raise ValueError("Adam's weight_decay adds wd * w to the gradient "
                             "(L2), which pipeopt does not implement; use "
                             "AdamW (decoupled weight decay) or weight_decay=0")
        b1, b2 = first["betas"]
        return dict(optimizer="adamw", lr=lr, betas=(float(b1), float(b2)),
                    eps=first["eps"], weight_decay=wd)
    if kind == "SGD":
        if first.get("nesterov"):
            raise ValueError("SGD(nesterov=True) is not supported")
        if first.get("dampening") and first.get("momentum"):
            raise ValueError("SGD(dampening != 0) is not supported")
        # pipeopt's SGD adds weight_decay * w to the gradient before the
        # momentum buffer, as torch.optim.SGD does.
        wd = first.get("weight_decay") or 0.0
        if first.get("momentum"):
            return dict(optimizer="momentum", lr=lr,
                        momentum=first["momentum"], weight_decay=wd)
        return dict(optimizer="sgd", lr=lr, weight_decay=wd)
    raise ValueError(f"torch.optim.{kind} is not supported (pipeopt has "
                     "SGD, SGD with momentum and AdamW)")


# --------------------------------------------------------------------------
# The pipelined module
# --------------------------------------------------------------------------


def _as_tuple(inputs: Any, names: Sequence[str] = ()) -> tuple:
    """The data inputs in the export's order: a dict is matched by key
    (`names`: the exported data arguments' names), a tuple by position."""
    if isinstance(inputs, dict):
        if names and set(inputs) == set(names):
            return tuple(inputs[n] for n in names)
        if names:
            raise UsageError(f"the inputs have the keys {sorted(inputs)}, but "
                             f"the pipeline was built for {list(names)}")
        return tuple(inputs.values())
    if isinstance(inputs, tuple):
        return inputs
    return (inputs,)


def _numpy(t: Any) -> np.ndarray:
    torch = _torch()
    if isinstance(t, torch.Tensor):
        return t.detach().cpu().contiguous().numpy()
    return np.asarray(t)


class PipelinedModule:
    """A module's training step compiled by pipeopt and ready to run.

    Made by `pipeline`.  Attributes: `build` (the `pipeopt.Build`: schedule,
    stages, ranks, `report()`), `exported` (what the exporter produced),
    `notes` (what the exporter did), `session` (the `pipeopt.Session`).
    """

    def __init__(self, module: Any, exported: ExportedStep,
                 build: "pipeopt.Build", session: "pipeopt.Session"):
        self.module = module
        self.exported = exported
        self.build = build
        self.session = session
        self.notes = list(exported.notes)
        self._data = [a for a in exported.args if a.role == "data"]
        self._target = [a for a in exported.args if a.role == "target"]
        self._params = [a for a in exported.args if a.role == "parameter"]
        self._buffers = [a for a in exported.args if a.role == "buffer"]
        self._weights_set = False
        self._forward: Optional[tuple] = None
        self._timeout_s = 60.0
        self._tmp = None  # a temporary work directory, removed with self

    # -- running -----------------------------------------------------------

    @property
    def is_root(self) -> bool:
        """True in the process of rank 0 (losses and weights are there)."""
        return self.session.is_root

    @property
    def num_microbatches(self) -> int:
        """M: the microbatches each step() splits its batch into."""
        return self.build.num_microbatches

    def _check_batch(self, what: str, arg, value: np.ndarray) -> None:
        rows = arg.shape[0] if arg.shape else 1
        want = (self.num_microbatches * rows, ) + tuple(arg.shape[1:])
        if tuple(value.shape) != want:
            raise UsageError(
                f"{what} {arg.name!r} has shape {tuple(value.shape)}, but "
                f"this pipeline was built for {want}: {self.num_microbatches} "
                f"microbatches of {rows} row(s) (the example inputs' batch); "
                "build a new pipeline for another batch size")

    _DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16",
               "i64": "int64 (torch.long)", "i32": "int32", "i8": "int8",
               "i1": "bool"}

    def _check_dtype(self, what: str, arg, value: np.ndarray) -> None:
        want = self._DTYPES.get(arg.dtype, arg.dtype)
        if str(value.dtype) != want.split(" ")[0]:
            raise UsageError(f"{what} {arg.name!r} is {value.dtype}, but the "
                             f"pipeline takes {want}")

    def _set_data(self, session: "pipeopt.Session", inputs: Any) -> None:
        """Checks the data inputs of a whole batch and sets them on
        `session` (the training or the forward session)."""
        values = _as_tuple(inputs, [a.name for a in self._data])
        if len(values) != len(self._data):
            raise UsageError(f"expected {len(self._data)} input(s) "
                             f"({', '.join(a.name for a in self._data)}), got "
                             f"{len(values)}")
        for arg, v in zip(self._data, values):
            v = _numpy(v)
            self._check_batch("input", arg, v)
            self._check_dtype("input", arg, v)
            session.set_input(arg.index, v)

    def _set_batch(self, inputs: Any, targets: Any = None) -> None:
        self._set_data(self.session, inputs)
        if self._target:
            if targets is None:
                raise UsageError("step() needs the targets")
            t = _numpy(targets)
            self._check_batch("target", self._target[0], t)
            self._check_dtype("target", self._target[0], t)
            self.session.set_input(self._target[0].index, t)

    def _set_initial_weights(self) -> None:
        if self._weights_set:
            return
        for arg in self._params:
            self.session.set_input(arg.index,
                                   self.exported.parameters[arg.name])
        for arg in self._buffers:
            self.session.set_input(arg.index, self.exported.buffers[arg.name])
        self._weights_set = True

    def step(self, inputs: Any, targets: Any = None):
        """One training step on the whole batch (forward, backward over the
        pipeline schedule, gradient reduction, optimizer update).

        Args:
          inputs: the batch as the module takes it (a tensor, a tuple, or a
            dict in the example's order), ``num_microbatches`` times the
            exported microbatch rows along dimension 0.
          targets: the loss target of the whole batch (class indices for
            cross-entropy, values for mse; a callable loss's second
            argument).

        Returns:
          The loss of this step (the mean over the batch) as a 0-d float32
          torch tensor, in rank 0's process; None elsewhere.

        Raises:
          UsageError: a shape or dtype that does not match the build.
          RunError: a rank failed.
        """
        self._set_initial_weights()
        self._set_batch(inputs, targets)
        self.session.run(1)
        if not self.is_root:
            return None
        return _torch().tensor(float(self.session.losses()[-1]))

    def losses(self) -> Optional[np.ndarray]:
        """Every step's loss so far (rank 0)."""
        return self.session.losses()

    # -- weights -----------------------------------------------------------

    @property
    def _trained(self) -> bool:
        """True once the ranks hold weights that steps have changed."""
        return self._weights_set and self.session.steps_done > 0

    def _current_weight(self, arg) -> np.ndarray:
        """A parameter's value now: the ranks' (rank 0's process) once
        trained, else the value it was given (always, when frozen)."""
        if self._trained and arg.trainable:
            return self.session.weight(arg.index)
        return self.exported.parameters[arg.name]

    def state_dict(self) -> "collections.OrderedDict[str, Any]":
        """The trained parameters and the buffers, keyed by the module's own
        names (every name of a tied parameter), as CPU torch tensors, in the
        order of ``module.state_dict()``; in rank 0's process (elsewhere an
        empty dict)."""
        torch = _torch()
        out = collections.OrderedDict()
        if self._trained and self.session.uses_mpi:
            self.session.synchronize()  # collective
        if not self.is_root:
            return out
        values: Dict[str, Any] = {}
        for arg in self._params:
            v = self._current_weight(arg)
            for name in arg.names:
                values[name] = torch.from_numpy(np.array(v))
        for arg in self._buffers:
            for name in arg.names:
                values[name] = torch.from_numpy(
                    np.array(self.exported.buffers[arg.name]))
        for name, value in self.module.state_dict().items():
            if name in values:
                out[name] = values[name].reshape(value.shape).to(value.dtype)
            else:
                out[name] = value.detach().clone()
        return out

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Sets the parameters and buffers from `state` (keyed like
        ``module.state_dict()``; strict, as torch's default: every key
        present, no other key, the same shapes), before the first step or
        between steps (the optimizer state is kept; `load` restores a whole
        checkpoint).  Under MPI every process calls it with the same state.

        Raises:
          UsageError: a missing or unexpected key, a wrong shape or dtype.
        """
        expected = self.module.state_dict()
        missing = [k for k in expected if k not in state]
        unexpected = [k for k in state if k not in expected]
        if missing or unexpected:
            raise UsageError(f"load_state_dict: missing keys {missing}, "
                             f"unexpected keys {unexpected}")
        values = {}
        for arg in self._params + self._buffers:
            name = next(n for n in arg.names if n in state)
            v = _numpy(state[name])
            if tuple(v.shape) != tuple(expected[name].shape):
                raise UsageError(f"load_state_dict: {name!r} has shape "
                                 f"{tuple(v.shape)}, the module's is "
                                 f"{tuple(expected[name].shape)}")
            if v.dtype.kind != np.dtype(str(expected[name].dtype).replace(
                    "torch.", "")).kind:
                raise UsageError(f"load_state_dict: {name!r} is {v.dtype}, "
                                 f"the module's is {expected[name].dtype}")
            store = (self.exported.parameters if arg.role == "parameter" else
                     self.exported.buffers)
            values[arg.index] = (arg, v.astype(store[arg.name].dtype).reshape(
                store[arg.name].shape))
        running = self._trained
        for index, (arg, v) in values.items():
            store = (self.exported.parameters if arg.role == "parameter" else
                     self.exported.buffers)
            store[arg.name] = v
            if running:
                if arg.role == "parameter" and arg.trainable:
                    self.session.set_weight(index, v)
                else:
                    self.session.set_input(index, v)
        if not running:
            self._weights_set = False

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Writes a checkpoint (weights, optimizer state, losses, step
        count) into the directory `path` (created; atomic; written by rank
        0's process; under MPI every process calls it)."""
        self.session.save_checkpoint(path)

    def load(self, path: Union[str, os.PathLike]) -> int:
        """Continues from the newest checkpoint in `path` that verifies (a
        pipeline built the same way); returns the step it resumes after."""
        # Under MPI, rank 0's process writes the checkpoint: the others wait
        # for it (a save() just before).
        if self.session.uses_mpi:
            deadline = time.monotonic() + self._timeout_s
            while not Path(path, "latest").exists() and (
                    time.monotonic() < deadline):
                time.sleep(0.05)
        # Every input needs a value (the checkpoint then replaces the
        # weights and the optimizer state on the first step).
        self._set_initial_weights()
        self.session.resume(path)
        return self.session.steps_done

    # -- inference and reports -----------------------------------------------

    def forward(self, inputs: Any):
        """The module's output (what the loss is computed on) for `inputs`
        with the current weights, computed by pipeopt (the same stages,
        forward only), as a torch tensor of the whole batch; rank 0's
        process (None elsewhere).  Compiled on the first call."""
        torch = _torch()
        if self.exported.loss not in ("cross-entropy", "mse"):
            raise UsageError("forward() needs a pipeline built with the loss "
                             "'cross_entropy' or 'mse' (the exported function "
                             "returns the model's output)")
        if self.session.uses_mpi:
            raise UsageError("forward() runs in one process (loopback); under "
                             "mpirun, take state_dict() on rank 0 and run the "
                             "module there")
        if self._forward is None:
            workdir = Path(self.build.model_path).parent
            build = pipeopt.compile(
                self.exported.mlir, workdir / "forward.so",
                num_stages=self.build.num_stages,
                num_microbatches=self.num_microbatches,
                microbatch_args=[a.index for a in self._data])
            self._forward = (build, pipeopt.Session(build, comm=self.session.comm))
        build, session = self._forward
        for arg in self._params:
            session.set_input(arg.index, self._current_weight(arg))
        for arg in self._buffers:
            session.set_input(arg.index, self.exported.buffers[arg.name])
        self._set_data(session, inputs)
        session.run(1)
        if not session.is_root:
            return None
        out = session.output(0)
        return torch.from_numpy(out.reshape((-1, ) + out.shape[2:]))

    def report(self) -> str:
        """What pipeopt chose (stages, ranks, schedule, optimizer, the grid)
        and what the exporter did."""
        lines = [self.build.report()]
        lines += [f"export: {n}" for n in self.notes]
        return "\n".join(lines)


def pipeline(module: Any,
             example_inputs: Any,
             loss: Union[str, Callable[[Any, Any], Any]] = "cross_entropy",
             *,
             example_target: Any = None,
             num_stages: int = 2,
             schedule: str = "1f1b",
             num_microbatches: int = 4,
             optimizer: Any = None,
             workdir: Optional[Union[str, os.PathLike]] = None,
             comm: str = "auto",
             threads: int = 0,
             timeout_s: float = 60.0,
             **compile_options: Any) -> PipelinedModule:
    """Builds `module`'s pipelined training step.

    Args:
      module: a ``torch.nn.Module`` with float32 parameters (a
        ``transformers`` model works; its ``.logits`` are trained).
      example_inputs: one batch as the module takes it: a tensor, a tuple
        of positional inputs or a dict of keyword inputs; dimension 0 is
        the batch and must divide by `num_microbatches` (the module is
        exported for batch / num_microbatches rows; `step` then takes
        batches of this size).
      loss: ``"cross_entropy"`` (targets: class indices of the output's
        shape less its last dimension, mean over every position),
        ``"mse"`` (mean over every element), or a callable
        ``loss(output, target) -> scalar`` torch-mlir can export (then
        `example_target` is required) that is a *mean* over the batch's
        rows: pipeopt calls it per microbatch and averages the results, so
        a sum would come out divided by num_microbatches.
      num_stages: pipeline ranks (processes under mpirun); a schedule with
        several chunks per rank (interleaved-1f1b, zb-v, ...) splits the
        model into more stages than ranks (`build.num_ranks` says how
        many processes to start).
      schedule: a pipeopt schedule ("1f1b", "gpipe", "zb-h1",
        "interleaved-1f1b", ..., or "auto": the explorer's choice).
      num_microbatches: M.
      optimizer: see `optimizer_options` (default AdamW, torch's defaults).
      workdir: where the MLIR, the .so and the manifest go (default: a new
        temporary directory; under mpirun one per process).
      comm, threads, timeout_s: see `pipeopt.Session`.
      **compile_options: more `pipeopt.compile` options (recompute,
        memory_limit, timing, ...).

    Returns:
      A `PipelinedModule`.

    Raises:
      ExportError: the export failed (torch-mlir's message; ops pipeopt
        does not take, with their torch source location when known).
      CompileError: pipeopt could not compile it (its diagnostics).
      ValueError: an optimizer pipeopt cannot reproduce exactly.
    """
    torch = _torch()
    reserved = {"train", "loss", "trainable", "microbatch_args", "optimizer",
                "lr", "momentum", "betas", "eps", "weight_decay",
                "num_stages", "schedule", "num_microbatches"}
    clash = sorted(reserved & set(compile_options))
    if clash:
        raise TypeError(f"pipeline() sets {', '.join(clash)} itself (give the "
                        "optimizer as `optimizer=`, the stages, schedule and "
                        "microbatches as pipeline()'s own arguments)")
    floats = {p.dtype for p in module.parameters() if p.is_floating_point()}
    if floats - {torch.float32}:
        raise UsageError("pipeopt.torch trains float32 modules; this one has "
                         f"{sorted(str(d) for d in floats)} parameters "
                         "(module.float())")
    opt = optimizer_options(optimizer)
    exported = export_training_step(module, example_inputs, loss,
                                    example_target,
                                    num_microbatches=num_microbatches)
    if isinstance(optimizer, torch.optim.Optimizer):
        # The optimizer's parameters are the trained ones; the module's
        # others are frozen, as they are for torch.
        in_opt = {id(p) for g in optimizer.param_groups for p in g["params"]}
        named = dict(module.named_parameters(remove_duplicate=False))
        if in_opt - {id(p) for p in named.values()}:
            raise ValueError("the optimizer holds tensors that are not "
                             "parameters of this module")
        for a in exported.args:
            if a.role == "parameter" and a.trainable and not any(
                    id(named[n]) in in_opt for n in a.names if n in named):
                a.trainable = False
        exported.trainable = [a.index for a in exported.args if a.trainable]
    world = pipeopt.launcher_world()
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="pipeopt-torch-")
        workdir = tmp.name
    workdir = Path(workdir)
    if world is not None:
        workdir = workdir / f"rank-{world[0]}"
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "model.mlir").write_text(exported.mlir)
    (workdir / "arguments.json").write_text(json.dumps(
        [dict(index=a.index, role=a.role, names=a.names, dtype=a.dtype,
              shape=list(a.shape)) for a in exported.args], indent=1))
    options = dict(num_stages=num_stages, schedule=schedule,
                   num_microbatches=num_microbatches, train=True,
                   loss=exported.loss, trainable=exported.trainable or "none",
                   microbatch_args=exported.microbatch_args)
    options.update(opt)
    options.update(compile_options)
    build = pipeopt.compile(workdir / "model.mlir", workdir / "model.so",
                            **options)
    # One run(1) per step: the ranks keep their weights and optimizer state,
    # and nothing is copied to rank 0 until state_dict() / save() ask.
    session = pipeopt.Session(build, comm=comm, threads=threads,
                              timeout_s=timeout_s, gather_after_run=False)
    pipe = PipelinedModule(module, exported, build, session)
    pipe._timeout_s = float(timeout_s)
    pipe._tmp = tmp
    return pipe
