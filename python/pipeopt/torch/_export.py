"""Export a torch ``nn.Module`` as one training-ready MLIR function for pipeopt.

``export_training_step`` turns a module into an MLIR module (linalg on
tensors, by ``torch_mlir.fx.export_and_import``) whose single public function
``@forward`` takes every parameter, every buffer and every data input as an
argument, in this order::

    @forward(params..., buffers..., data..., [target]) -> logits | output | loss

and returns what pipeopt's ``pipeopt-compile --train --loss ...`` expects:

* ``loss="cross_entropy"``: the logits ``[b, ..., C]``; pipeopt appends the
  loss (mean over every position of the microbatch of ``logsumexp - logit
  of the target``, the same as ``torch.nn.functional.cross_entropy`` on the
  flattened logits) and takes an i64 target ``[b, ...]`` as the argument after
  the model's (``--loss cross-entropy``).
* ``loss="mse"``: the output; pipeopt appends the mean squared error against
  an f32 target of the output's shape (``--loss mse``).
* ``loss=callable(output, target) -> scalar``: the function returns the
  scalar itself and the target is the last argument of ``@forward``
  (``--loss none``: the model is its own loss).

pipeopt compiles the function at the microbatch size and splits the whole
batch along dim 0 at run time into ``num_microbatches`` slices, so the data
inputs (and the target) are exported with ``batch / num_microbatches`` rows.
The gradients pipeopt applies are the mean over the microbatches of the
per-microbatch loss, which is the whole batch's loss for the mean losses
above (equal microbatches).

Only torch is needed to import this module; torch-mlir is imported when
``export_training_step`` runs, transformers never (``ModelOutput`` results
are recognised by their ``logits`` attribute).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

__all__ = [
    "ArgRecord",
    "ExportError",
    "ExportedStep",
    "PIPEOPT_DIALECTS",
    "export_training_step",
]

# Dialects pipeopt parses as model input (lib/InitAll/InitAll.cpp
# registerAllDialects, docs/Design.md "Inputs"): upstream func, tosa, linalg,
# tensor, arith, math, scf (and cf), ml_program. Anything else (torch-mlir's
# tm_tensor, torch, torch_c, ...) makes pipeopt-compile fail to parse.
PIPEOPT_DIALECTS = frozenset([
    "builtin", "func", "arith", "tensor", "linalg", "math", "tosa", "scf",
    "cf", "ml_program", "bufferization",
])

_LOSS_NAMES = {
    "cross_entropy": "cross-entropy",
    "cross-entropy": "cross-entropy",
    "ce": "cross-entropy",
    "mse": "mse",
}


class ExportError(ValueError):
    """The module cannot be exported as a pipeopt training step: torch's
    export or torch-mlir failed, or the MLIR holds ops pipeopt cannot take,
    or the arguments are inconsistent (batch not divisible, ...)."""


@dataclasses.dataclass
class ArgRecord:
    """One argument of the training step pipeopt compiles.

    index: the argument's position (the target of a ``cross-entropy`` or
    ``mse`` loss is the argument after the MLIR function's, which pipeopt
    appends). role: ``parameter``, ``buffer``, ``data`` or ``target``.
    names: the torch names (fully qualified for parameters and buffers; more
    than one when the tensor is tied; the argument name or keyword for data;
    ``target``). dtype: the MLIR element type (``f32``, ``i64``, ...).
    shape: the shape in the MLIR function (microbatch rows for data and
    target). trainable, microbatched: what pipeopt is told.
    """

    index: int
    role: str
    names: List[str]
    dtype: str
    shape: Tuple[int, ...]
    trainable: bool = False
    microbatched: bool = False

    @property
    def name(self) -> str:
        return self.names[0]


@dataclasses.dataclass
class ExportedStep:
    """The result of ``export_training_step``.

    mlir: the MLIR module's text (one public ``@forward``).
    args: one ``ArgRecord`` per argument of the training step, in order.
    parameters: parameter name (the first of tied names) -> initial value,
      float32 numpy array (integer parameters keep their dtype).
    buffers: buffer name -> value (float buffers as float32), the values of
      the ``buffer`` arguments.
    loss: pipeopt's ``--loss`` value (``cross-entropy``, ``mse`` or
      ``none``).
    trainable: ``--trainable`` indices (float parameters).
    microbatch_args: ``--microbatch-args`` indices (data inputs, and the
      target when it is an argument of ``@forward``, i.e. a callable loss).
    notes: what the exporter did that the user should know.
    num_microbatches, function_name, batch_size (the whole batch),
    microbatch_size.
    """

    mlir: str
    args: List[ArgRecord]
    parameters: Dict[str, np.ndarray]
    loss: str
    trainable: List[int]
    microbatch_args: List[int]
    notes: List[str]
    buffers: Dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    num_microbatches: int = 1
    function_name: str = "forward"
    batch_size: int = 0
    microbatch_size: int = 0

    def arg(self, name: str) -> ArgRecord:
        """The record of the argument with this torch name (any tied name)."""
        for a in self.args:
            if name in a.names:
                return a
        raise KeyError(name)

    def compile_flags(self) -> List[str]:
        """``pipeopt-compile`` flags of this step (add the schedule, stages
        and optimizer): ``--train --loss L --num-microbatches M
        --trainable I,.. --microbatch-args J,..``."""
        return [
            "--train",
            "--loss", self.loss,
            "--num-microbatches", str(self.num_microbatches),
            "--trainable", ",".join(map(str, self.trainable)) or "none",
            "--microbatch-args",
            ",".join(map(str, self.microbatch_args)) or "none",
        ]

    def input_arrays(self, inputs: Any = None,
                     target: Any = None) -> Dict[int, np.ndarray]:
        """{argument index: numpy array} of every argument, for
        ``pipeopt-run --input I=FILE.npy``: the parameters' and buffers'
        values, and the whole batch of ``inputs`` (the same structure as
        ``example_inputs``) and ``target`` where given (data arguments are
        matched by position in the order of the data records)."""
        out: Dict[int, np.ndarray] = {}
        data = []
        if inputs is not None:
            data = [_to_numpy(t) for t in _flatten_inputs(inputs)[2]]
        data_recs = [a for a in self.args if a.role == "data"]
        if inputs is not None and len(data) != len(data_recs):
            raise ValueError("expected %d data tensors, got %d"
                             % (len(data_recs), len(data)))
        for a in self.args:
            if a.role == "parameter":
                out[a.index] = self.parameters[a.name]
            elif a.role == "buffer":
                out[a.index] = self.buffers[a.name]
        for a, d in zip(data_recs, data):
            out[a.index] = d
        if target is not None:
            t = [a for a in self.args if a.role == "target"][0]
            arr = _to_numpy(target)
            if arr.dtype == np.float64:
                arr = arr.astype(np.float32)
            out[t.index] = arr
        return out

    def write(self, directory: str, inputs: Any = None,
              target: Any = None) -> List[str]:
        """Writes ``model.mlir`` and ``arg_<i>.npy`` (see ``input_arrays``)
        into ``directory``; returns the ``pipeopt-run`` input flags
        (``--input i=<dir>/arg_<i>.npy`` ...)."""
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "model.mlir"), "w") as f:
            f.write(self.mlir)
        flags = []
        for i, arr in sorted(self.input_arrays(inputs, target).items()):
            path = os.path.join(directory, "arg_%d.npy" % i)
            np.save(path, np.ascontiguousarray(arr).copy(order="C"))
            flags += ["--input", "%d=%s" % (i, path)]
        return flags


# ---------------------------------------------------------------------------
# Helpers.
# ---------------------------------------------------------------------------

def _torch():
    import torch  # noqa: local so that importing this file needs no torch
    return torch


def _to_numpy(t: Any) -> np.ndarray:
    torch = _torch()
    if isinstance(t, torch.Tensor):
        return t.detach().cpu().numpy().copy(order="C")
    return np.asarray(t)


_MLIR_DTYPES = {
    "float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
    "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8",
    "uint8": "ui8", "bool": "i1",
}


def _mlir_dtype(t) -> str:
    name = str(t.dtype).replace("torch.", "")
    return _MLIR_DTYPES.get(name, name)


def _flatten_inputs(example_inputs):
    """(positional list, kwargs dict, data tensors in order, where) of the
    example inputs: a tensor, a tuple/list (positional) or a dict
    (keyword). ``where[k]`` is ("pos", i) or ("kw", name) for data tensor k;
    non-tensor values stay constants of the export."""
    torch = _torch()
    if isinstance(example_inputs, torch.Tensor):
        pos, kw = [example_inputs], {}
    elif isinstance(example_inputs, dict):
        pos, kw = [], dict(example_inputs)
    elif isinstance(example_inputs, (tuple, list)):
        pos, kw = list(example_inputs), {}
    else:
        raise ExportError("example_inputs must be a tensor, a tuple/list of "
                          "positional inputs or a dict of keyword inputs, "
                          "got %s" % type(example_inputs).__name__)
    data, where = [], []
    for i, v in enumerate(pos):
        if isinstance(v, torch.Tensor):
            data.append(v)
            where.append(("pos", i))
    for k, v in kw.items():
        if isinstance(v, torch.Tensor):
            data.append(v)
            where.append(("kw", k))
    return pos, kw, data, where


def _select_output(out, output_fn):
    if output_fn is not None:
        return output_fn(out)
    torch = _torch()
    if isinstance(out, torch.Tensor):
        return out
    logits = getattr(out, "logits", None)
    if isinstance(logits, torch.Tensor):  # transformers ModelOutput
        return logits
    if isinstance(out, dict) and isinstance(out.get("logits"), torch.Tensor):
        return out["logits"]
    if isinstance(out, (tuple, list)) and out and \
            isinstance(out[0], torch.Tensor):
        return out[0]
    raise ExportError("cannot tell which output of %s to train: give "
                      "output_fn=lambda out: ..." % type(out).__name__)


def _no_grad_copy(x):
    """`x`'s value, which pipeopt's reverse mode passes no gradient through.

    pipeopt has no stop-gradient op (and the export drops ``detach``), but its
    autodiff gives ``math.roundeven`` no gradient (lib/Autodiff
    ScalarRules.cpp hasNoGradient; torch's ``round`` has zero gradient
    too). Every float32/16 value is a multiple of 2**-149, so in float64
    ``round(x * 2**149) / 2**149`` is ``x`` exactly (powers of two scale
    exactly, the product is an integer and below 2**278), inf and nan
    included: the value is bit for bit ``x``, the gradient zero."""
    torch = _torch()
    scale = 2.0 ** 149
    return (torch.round(x.double() * scale) / scale).to(x.dtype)


def _padding_idx_hooks(module, notes: List[str]):
    """Forward hooks that give the exported function torch's gradient of
    ``nn.Embedding(padding_idx=p)``: torch's embedding backward passes no
    gradient from a lookup of token p to row p of the table (the forward is
    an ordinary lookup). torch-mlir exports only the forward, a gather whose
    true gradient reaches row p, so pipeopt's gradient of that row would
    differ from torch.autograd's (e.g. transformers' LLaMA,
    pad_token_id=0). Each hook replaces the lookups of token p by a copy of
    their value without gradient (`_no_grad_copy`): the same output, row p
    gets only the gradient of other uses of the table (a tied lm_head).
    Returns the handles; the caller removes them after the export."""
    torch = _torch()
    hooks = []
    for name, m in module.named_modules():
        # Subclasses too (transformers' scaled embeddings call
        # nn.Embedding's forward and scale its output: row p still gets no
        # gradient from their lookups of p).
        if not isinstance(m, torch.nn.Embedding) or m.padding_idx is None:
            continue
        w = m.weight
        if not (w.is_floating_point() and w.requires_grad):
            continue
        pad = int(m.padding_idx)
        if w.dtype not in (torch.float32, torch.float16, torch.bfloat16):
            notes.append("padding_idx: %s is nn.Embedding(padding_idx=%d) "
                         "with a %s table: pipeopt's gradient of row %d "
                         "includes its lookups (torch's does not)"
                         % (name or "the module", pad, w.dtype, pad))
            continue

        def hook(mod, inputs, out, pad=pad):
            ids = inputs[0]
            return torch.where((ids == pad).unsqueeze(-1), _no_grad_copy(out),
                               out)

        hooks.append(m.register_forward_hook(hook))
        notes.append("padding_idx: %s is nn.Embedding(padding_idx=%d): its "
                     "lookups of token %d pass no gradient to row %d of "
                     "%s.weight, as in torch" % (name or "the module", pad,
                                                 pad, pad, name or "module"))
    return hooks


def _tied_groups(named):
    """[(names, tensor)] with tensors that are the same object (tied) once,
    in the order of their first name."""
    groups: Dict[int, Tuple[List[str], Any]] = {}
    order = []
    for name, t in named:
        key = id(t)
        if key not in groups:
            groups[key] = ([], t)
            order.append(key)
        groups[key][0].append(name)
    return [groups[k] for k in order]


def _foreign_ops(module) -> List[Tuple[str, str]]:
    """(op name, location text) of every op outside PIPEOPT_DIALECTS."""
    from torch_mlir import ir
    found = []

    def visit(op):
        name = op.name
        if name.split(".", 1)[0] not in PIPEOPT_DIALECTS:
            found.append((name, str(op.location)))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _unused_args(module, function_name: str, count: int) -> List[int]:
    """Indices < count of @function_name's arguments that nothing uses."""
    for op in module.body.operations:
        if op.operation.name != "func.func":
            continue
        if str(op.attributes["sym_name"]).strip('"') != function_name:
            continue
        block = op.regions[0].blocks[0]
        out = []
        for i, arg in enumerate(block.arguments):
            if i >= count:
                break
            try:
                used = any(True for _ in arg.uses)
            except AttributeError:  # older bindings: look at the text
                used = True
            if not used:
                out.append(i)
        return out
    return []


def _check_ops(module, what: str):
    bad = _foreign_ops(module)
    if not bad:
        return
    seen = {}
    for name, loc in bad:
        seen.setdefault(name, []).append(loc)
    parts = []
    # Terminators (tm_tensor.yield) after the ops that hold them.
    for name, locs in sorted(seen.items(),
                             key=lambda kv: kv[0].endswith(".yield")):
        parts.append("%s (%d op%s; first at %s)" % (
            name, len(locs), "" if len(locs) == 1 else "s", locs[0]))
    raise ExportError(
        "%s: the exported MLIR contains ops pipeopt cannot take (it parses "
        "only the dialects %s): %s" % (
            what, ", ".join(sorted(PIPEOPT_DIALECTS - {"builtin"})),
            "; ".join(parts)))


# ---------------------------------------------------------------------------
# The exporter.
# ---------------------------------------------------------------------------

def export_training_step(
    module,
    example_inputs,
    loss: Union[str, Callable[[Any, Any], Any]],
    example_target=None,
    *,
    num_microbatches: int = 1,
    output_fn: Optional[Callable[[Any], Any]] = None,
    attention_mask: str = "auto",
    attn_implementation: str = "auto",
    function_name: str = "forward",
    eval_mode: bool = True,
    debug_info: bool = False,
) -> ExportedStep:
    """Exports ``module`` as a pipeopt training step (see the module doc).

    module: a ``torch.nn.Module`` (float32 parameters).
    example_inputs: the whole batch, dim 0 the batch: a tensor, a tuple of
      positional inputs or a dict of keyword inputs (``{"input_ids": ids}``).
      Non-tensor values are constants of the export.
    loss: ``"cross_entropy"`` (or ``"cross-entropy"``), ``"mse"`` or a
      callable ``loss(output, target) -> scalar`` (mean over the batch).
    example_target: the whole batch's target; needed for a callable loss
      (its shape and dtype become @forward's last argument), optional for
      the built-in losses (only checked against the output).
    num_microbatches: M; the batch must divide by M and the function is
      exported for batch / M rows.
    output_fn: picks the trained tensor from the module's output (default:
      the tensor itself, ``.logits`` of a ModelOutput, or element 0).
    attention_mask: when ``module.forward`` takes an ``attention_mask`` that
      the inputs do not give: ``"auto"`` exports without one and, if the MLIR
      then holds ops pipeopt cannot take (transformers versions that build
      the mask with a cumsum, torch-mlir's ``tm_tensor.scan``), exports
      again with an all-ones i64 mask of ``input_ids``' shape built inside
      the function (not an argument), keeping that when it helps;
      ``"ones"`` always passes that mask; ``"none"`` never does.
    attn_implementation: ``"auto"``: when the export of a transformers
      model fails with its attention implementation (sdpa), export again
      with ``"eager"`` (restoring the setting afterwards); ``"keep"``: never
      switch; any other value: set it (e.g. ``"eager"``) for the export.
    eval_mode: export in eval mode (dropout off), restoring the module's
      mode afterwards.
    debug_info: keep ``loc(...)`` locations in ``ExportedStep.mlir``.

    Raises ExportError when the export fails or the MLIR holds ops pipeopt
    cannot take (naming them and their torch locations).
    """
    torch = _torch()
    try:
        from torch_mlir import fx as tmfx
    except ImportError as e:
        raise ExportError("export_training_step needs torch-mlir "
                          "(pip install torch-mlir): %s" % e) from e

    if not isinstance(module, torch.nn.Module):
        raise ExportError("module must be a torch.nn.Module, got %s"
                          % type(module).__name__)
    if not isinstance(num_microbatches, int) or num_microbatches < 1:
        raise ExportError("num_microbatches must be a positive int, got %r"
                          % (num_microbatches,))
    notes: List[str] = []

    # -- the loss ----------------------------------------------------------
    loss_fn = None
    if callable(loss) and not isinstance(loss, str):
        loss_fn = loss
        pipeopt_loss = "none"
        if example_target is None:
            raise ExportError("a callable loss needs example_target (it "
                              "becomes the last argument of @%s)"
                              % function_name)
        notes.append("loss: the callable is exported inside @%s, which "
                     "returns the scalar loss; the target is its last "
                     "argument; pipeopt-compile --loss none (the model is "
                     "its own loss; the mean over microbatches is "
                     "applied)" % function_name)
    elif isinstance(loss, str) and loss.lower() in _LOSS_NAMES:
        pipeopt_loss = _LOSS_NAMES[loss.lower()]
    else:
        raise ExportError("loss must be 'cross_entropy', 'mse' or a "
                          "callable(output, target) -> scalar, got %r"
                          % (loss,))

    # -- inputs, microbatch slices -----------------------------------------
    pos, kw, data, where = _flatten_inputs(example_inputs)
    if not data:
        raise ExportError("example_inputs hold no tensor")
    batch = data[0].shape[0] if data[0].dim() > 0 else None
    for t, w in zip(data, where):
        if t.dim() == 0 or t.shape[0] != batch:
            raise ExportError(
                "every data input must have the batch as dim 0: input %s has "
                "shape %s, the first %s" % (w[1], list(t.shape),
                                            list(data[0].shape)))
    if batch % num_microbatches:
        raise ExportError("the batch (%d) does not divide by "
                          "num_microbatches (%d)" % (batch, num_microbatches))
    mb = batch // num_microbatches
    mb_data = [t[:mb].detach().clone() for t in data]
    mb_target = None
    if example_target is not None:
        if not isinstance(example_target, torch.Tensor):
            raise ExportError("example_target must be a tensor")
        if example_target.dim() == 0 or example_target.shape[0] != batch:
            raise ExportError("example_target must have the batch (%d) as "
                              "dim 0, has shape %s"
                              % (batch, list(example_target.shape)))
        mb_target = example_target[:mb].detach().clone()

    # -- the forward's signature: attention_mask ---------------------------
    try:
        sig = inspect.signature(module.forward)
    except (TypeError, ValueError):
        sig = None
    if attention_mask not in ("auto", "ones", "none"):
        raise ExportError("attention_mask must be 'auto', 'ones' or 'none', "
                          "got %r" % (attention_mask,))
    mask_src = None  # index of the data tensor whose shape the mask takes
    if attention_mask != "none" and sig is not None and \
            "attention_mask" in sig.parameters:
        names_list = [p.name for p in sig.parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY,
                                    p.POSITIONAL_OR_KEYWORD)]
        j = names_list.index("attention_mask") \
            if "attention_mask" in names_list else None
        given = "attention_mask" in kw or (
            j is not None and j < len(pos) and pos[j] is not None)
        if not given:
            for k, w in enumerate(where):
                if w == ("kw", "input_ids") or (
                        w[0] == "pos" and w[1] < len(names_list)
                        and names_list[w[1]] == "input_ids"):
                    mask_src = k
            if mask_src is None and where[0][0] == "pos":
                mask_src = 0
            if mask_src is not None and mb_data[mask_src].dim() < 2:
                mask_src = None
    if attention_mask == "ones" and mask_src is None:
        raise ExportError("attention_mask='ones': %s.forward takes no "
                          "attention_mask, or one is given, or there is no "
                          "[b, s] input_ids to shape it"
                          % type(module).__name__)

    # -- parameters and buffers (tied ones once) ---------------------------
    p_groups = _tied_groups(module.named_parameters(remove_duplicate=False))
    b_groups = _tied_groups(module.named_buffers(remove_duplicate=False))
    p_ids = {id(t) for _, t in p_groups}
    b_groups = [(n, t) for n, t in b_groups if id(t) not in p_ids]
    for names, _ in p_groups:
        if len(names) > 1:
            notes.append("tied parameter: %s share one tensor, one argument"
                         % ", ".join(names))
    persistent = set(module.state_dict(keep_vars=True).keys())

    all_names = [names for names, _ in p_groups] + \
                [names for names, _ in b_groups]
    state_tensors = [t for _, t in p_groups] + [t for _, t in b_groups]
    n_state = len(state_tensors)
    use_mask = [False]

    class _Step(torch.nn.Module):
        """forward(*params, *buffers, *data[, target]); the wrapped module is
        not a submodule, so torch.export sees no state of its own."""

        def __init__(self):
            super().__init__()
            object.__setattr__(self, "_inner", module)

        def forward(self, *args):
            state = {}
            for names, v in zip(all_names, args[:n_state]):
                for n in names:
                    state[n] = v
            rest = list(args[n_state:])
            d, rest = rest[:len(data)], rest[len(data):]
            call_pos = list(pos)
            call_kw = dict(kw)
            for v, w in zip(d, where):
                if w[0] == "pos":
                    call_pos[w[1]] = v
                else:
                    call_kw[w[1]] = v
            if use_mask[0]:
                ids = d[mask_src]
                call_kw["attention_mask"] = torch.ones(
                    tuple(ids.shape[:2]), dtype=torch.int64)
            out = torch.func.functional_call(
                self._inner, state, tuple(call_pos), call_kw,
                tie_weights=False, strict=False)
            y = _select_output(out, output_fn)
            if loss_fn is not None:
                return loss_fn(y, rest[0])
            return y

    step = _Step()
    state_args = [t.detach().clone() for t in state_tensors]
    call_args = state_args + mb_data + (
        [mb_target] if loss_fn is not None else [])
    what = "export of %s" % type(module).__name__

    def export_once():
        try:
            return tmfx.export_and_import(
                step, *call_args, output_type="linalg-on-tensors",
                func_name=function_name)
        except ExportError:
            raise
        except Exception as e:  # torch.export or torch-mlir
            msg = str(e).strip().splitlines()
            raise ExportError(
                "torch_mlir.fx.export_and_import failed on %s "
                "(linalg-on-tensors): %s: %s" % (
                    type(module).__name__, type(e).__name__,
                    "\n".join(msg[:20]))) from e

    attn_cfg = getattr(module, "config", None)
    attn_before = getattr(attn_cfg, "_attn_implementation", None)
    can_eager = (attn_implementation == "auto"
                 and hasattr(module, "set_attn_implementation")
                 and attn_before not in (None, "eager"))
    if attn_implementation not in ("auto", "keep") and \
            hasattr(module, "set_attn_implementation"):
        module.set_attn_implementation(attn_implementation)

    pad_hooks = _padding_idx_hooks(module, notes)
    was_training = module.training
    if eval_mode:
        module.eval()
        if was_training:
            notes.append("exported in eval mode (dropout off); the module's "
                         "training mode was restored")
    try:
        use_mask[0] = attention_mask == "ones"
        with torch.no_grad():
            y = step(*call_args)
        if not isinstance(y, torch.Tensor) or not y.is_floating_point():
            raise ExportError("the trained output must be a float tensor, "
                              "got %s" % (getattr(y, "dtype", type(y)),))
        if loss_fn is not None and y.numel() != 1:
            raise ExportError("the callable loss must return a scalar, "
                              "returned shape %s" % list(y.shape))
        if pipeopt_loss == "cross-entropy":
            if y.dim() < 1:
                raise ExportError("cross-entropy needs logits [b, ..., C]")
            want = tuple(y.shape[:-1])
            if mb_target is not None and (
                    tuple(mb_target.shape) != want
                    or mb_target.dtype != torch.int64):
                raise ExportError(
                    "cross-entropy target: expected int64 of the logits' "
                    "shape less its last dim %s (microbatch rows), got %s %s"
                    % (list(want), mb_target.dtype, list(mb_target.shape)))
            tgt_shape, tgt_dtype = want, "i64"
        elif pipeopt_loss == "mse":
            if mb_target is not None and (
                    tuple(mb_target.shape) != tuple(y.shape)
                    or not mb_target.is_floating_point()):
                raise ExportError(
                    "mse target: expected float of the output's shape %s "
                    "(microbatch rows), got %s %s" % (
                        list(y.shape), mb_target.dtype,
                        list(mb_target.shape)))
            tgt_shape, tgt_dtype = tuple(y.shape), _mlir_dtype(y)
        try:
            mlir_module = export_once()
        except ExportError as first:
            if not can_eager:
                raise
            # transformers' sdpa attention fails torch.export's
            # decompositions (e.g. GPT-2: "Cannot view a tensor with shape
            # [b, s, d] and strides ..."): the eager attention computes the
            # same and exports.
            module.set_attn_implementation("eager")
            try:
                mlir_module = export_once()
            except ExportError:
                raise first
            notes.append(
                "attention: the export with attn_implementation=%r failed "
                "(%s); exported with 'eager' attention (the same function), "
                "the module's setting was restored"
                % (attn_before, str(first).splitlines()[0][:300]))
        bad = _foreign_ops(mlir_module)
        if bad and attention_mask == "auto" and mask_src is not None:
            use_mask[0] = True
            retry = export_once()
            if not _foreign_ops(retry):
                notes.append(
                    "attention_mask: %s.forward takes one and none was "
                    "given; exported without one the MLIR held %s, which "
                    "pipeopt does not take, so @%s passes an all-ones i64 "
                    "mask of input_ids' shape %s inside the function (not "
                    "an argument; padding is not masked)" % (
                        type(module).__name__,
                        ", ".join(sorted({n for n, _ in bad})),
                        function_name, list(mb_data[mask_src].shape[:2])))
                mlir_module = retry
            else:
                use_mask[0] = False
        elif use_mask[0]:
            notes.append("attention_mask: @%s passes an all-ones i64 mask "
                         "of input_ids' shape %s inside the function (not "
                         "an argument)" % (function_name,
                                           list(mb_data[mask_src].shape[:2])))
        elif mask_src is not None:
            notes.append("attention_mask: none given; %s exported without "
                         "one and the MLIR holds only ops pipeopt takes, so "
                         "none is added (attention_mask='ones' forces an "
                         "all-ones mask)" % type(module).__name__)
        # Parameters and buffers the function does not read: pipeopt leaves
        # an unused argument out of its manifest (pipeopt-run then refuses
        # its --input), so they are not arguments at all.
        unused = _unused_args(mlir_module, function_name, n_state)
        if unused:
            gone = {id(state_tensors[i]) for i in unused}
            dropped = [all_names[i][0] for i in unused]
            p_groups = [g for g in p_groups if id(g[1]) not in gone]
            b_groups = [g for g in b_groups if id(g[1]) not in gone]
            all_names = [n for n, _ in p_groups] + [n for n, _ in b_groups]
            state_tensors = [t for _, t in p_groups] + \
                [t for _, t in b_groups]
            n_state = len(state_tensors)
            call_args = [t.detach().clone() for t in state_tensors] + \
                call_args[n_state + len(unused):]
            mlir_module = export_once()
            notes.append(
                "unused: %s %s not read by the forward, so %s not an argument "
                "(pipeopt would leave an unused argument out of its "
                "manifest; an unused parameter gets no gradient and "
                "torch.optim leaves it as is too)" % (
                    ", ".join(dropped),
                    "is" if len(dropped) == 1 else "are",
                    "it is" if len(dropped) == 1 else "they are"))
    finally:
        for h in pad_hooks:
            h.remove()
        if eval_mode and was_training:
            module.train()
        if hasattr(module, "set_attn_implementation") and \
                attn_before is not None and \
                getattr(attn_cfg, "_attn_implementation", None) != attn_before:
            module.set_attn_implementation(attn_before)

    _check_ops(mlir_module, what)
    nonpersistent = [n[0] for n, _ in b_groups if n[0] not in persistent]
    if b_groups:
        notes.append(
            "buffers: %s %s argument%s of @%s after the parameters (values "
            "in ExportedStep.buffers), never trainable nor microbatched%s"
            % (", ".join(n[0] for n, _ in b_groups),
               "is an" if len(b_groups) == 1 else "are",
               "" if len(b_groups) == 1 else "s", function_name,
               ("; non-persistent: %s (torch-mlir's frozen import of module "
                "state fails on those with 'Could not find state mapping "
                "for buffer', so the exported wrapper holds no state and "
                "passes every parameter and buffer through "
                "torch.func.functional_call)" % ", ".join(nonpersistent))
               if nonpersistent else ""))

    text = mlir_module.operation.get_asm(enable_debug_info=debug_info)
    if "dense_resource" in text:
        notes.append("the MLIR holds dense_resource constants (tensors the "
                     "model creates or holds outside parameters and "
                     "buffers); pipeopt-compile takes them as constants")

    # -- the records -------------------------------------------------------
    args: List[ArgRecord] = []
    parameters: Dict[str, np.ndarray] = {}
    buffers: Dict[str, np.ndarray] = {}
    i = 0
    for names, t in p_groups:
        trainable = t.is_floating_point() and t.requires_grad
        args.append(ArgRecord(i, "parameter", list(names), _mlir_dtype(t),
                              tuple(t.shape), trainable=trainable))
        arr = t.detach().cpu()
        parameters[names[0]] = (arr.float() if arr.is_floating_point()
                                else arr).numpy().copy(order="C")
        i += 1
    frozen = [a.name for a in args if not a.trainable]
    if frozen:
        notes.append("not trainable (integer or requires_grad=False): %s"
                     % ", ".join(frozen))
    for names, t in b_groups:
        args.append(ArgRecord(i, "buffer", list(names), _mlir_dtype(t),
                              tuple(t.shape)))
        arr = t.detach().cpu()
        buffers[names[0]] = (arr.float() if arr.is_floating_point()
                             else arr).numpy().copy(order="C")
        i += 1
    for t, w in zip(mb_data, where):
        name = w[1] if w[0] == "kw" else _positional_name(sig, w[1])
        args.append(ArgRecord(i, "data", [name], _mlir_dtype(t),
                              tuple(t.shape), microbatched=True))
        i += 1
    if loss_fn is not None:
        args.append(ArgRecord(i, "target", ["target"],
                              _mlir_dtype(mb_target), tuple(mb_target.shape),
                              microbatched=True))
    else:
        args.append(ArgRecord(i, "target", ["target"], tgt_dtype,
                              tuple(tgt_shape), microbatched=True))
        notes.append("target: argument %d of the training step (pipeopt "
                     "appends it after @%s's arguments), %s %s per "
                     "microbatch; pipeopt marks it microbatched itself, so "
                     "it is not in microbatch_args" % (
                         i, function_name, tgt_dtype, list(tgt_shape)))
    trainable_idx = [a.index for a in args if a.trainable]
    mb_idx = [a.index for a in args if a.microbatched and
              (a.role == "data" or loss_fn is not None)]
    return ExportedStep(
        mlir=text, args=args, parameters=parameters, loss=pipeopt_loss,
        trainable=trainable_idx, microbatch_args=mb_idx, notes=notes,
        buffers=buffers, num_microbatches=num_microbatches,
        function_name=function_name, batch_size=batch, microbatch_size=mb)


def _positional_name(sig, i: int) -> str:
    if sig is not None:
        ps = [p for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if i < len(ps):
            return ps[i].name
    return "input_%d" % i
