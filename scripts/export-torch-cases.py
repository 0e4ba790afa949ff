#!/usr/bin/env python3
"""torch.autograd reference cases for pipeopt's differentiation tests.

Writes, for every case, into test/Autodiff/Inputs/torch/<case>/ (or --out):

  model.mlir    the model as one function @forward(params..., data...) ->
                output, exported by torch-mlir
                (torch_mlir.fx.export_and_import, linalg-on-tensors). Every
                parameter is a function argument (the model is exported
                through torch.func.functional_call), the function returns
                the model's output (prediction or logits), not the loss.
  arg_<i>.npy   the value of argument i (f32 parameters and data, i64 token
                ids)
  target.npy    the loss target: f32 of the output's shape (mse) or i64
                class indices of the output's shape less its last dimension
                (cross-entropy)
  output.npy    torch's forward output (f32)
  loss.npy      torch's loss, 0-d f32 (torch.nn.MSELoss or CrossEntropyLoss,
                mean over every element / position of the whole batch)
  grad_<i>.npy  torch.autograd's gradient of the loss with respect to every
                f32 argument i (parameters and float data inputs)
  case.json     function name, loss kind, the arguments (index, name, kind
                param|data, dtype, shape, gradient file and its tolerance),
                the tolerance, the microbatch counts that divide the batch,
                the versions used and the histogram of the exported MLIR's
                operations (linalg region bodies included)
  train/<opt>/weight_<i>.npy, train/<opt>/loss.npy
                torch.optim's training on the committed batch (the same
                data every step, the loss a mean over the batch): every
                parameter after TRAIN_STEPS steps of optimizer <opt> (sgd,
                momentum, adamw: OPTIMIZERS below), and the loss before
                each step (f32[TRAIN_STEPS]), f32
  train/config.json
                the steps, each optimizer's hyperparameters, its
                pipeopt-compile flags, the tolerance of the comparison
                (and the weights that need their own) and the f32-vs-f64
                errors of the training

Everything is computed in float32, as the model runs. The script also
recomputes each case in float64 and fails unless the f32 and f64 outputs,
losses and gradients agree to F64_RTOL (max abs difference <= F64_RTOL *
max abs f64 value, per array), so that a case is well conditioned and a
1e-4 relative comparison against it is meaningful. A gradient that is zero
in exact arithmetic (f64 max <= 1e-12 of the case's largest gradient: the
key bias of softmax attention) gets an absolute tolerance instead, RTOL
times the case's largest gradient. The cnn case also checks that no ReLU
input and no max-pool tie is within MIN_MARGIN of switching.

The training references are recomputed in float64 too and must agree
to F64_RTOL as well.

Usage: python3 scripts/export-torch-cases.py [--out DIR] [--case NAME ...]
       python3 scripts/export-torch-cases.py --train-only [--case NAME ...]

--train-only writes only train/ (needs no torch-mlir): it rebuilds each
model from its seeds, requires every rebuilt argument and target to equal
the committed arg_<i>.npy / target.npy bit for bit, and leaves every other
file alone.

Needs torch and numpy, and torch-mlir from PyPI (pip install torch-mlir
packaging; the cases were generated with TORCH_MLIR_VERSION below), and
for gpt2_tiny, gpt2_4layers and llama_tiny (also with --train-only)
transformers (5.25
here). The
tests read the committed files only; CI never runs this script. Seeds are
fixed and torch runs on one CPU thread, so a rerun with the same versions
writes the same files.
"""

import argparse
import collections
import importlib.metadata
import json
import math
import os
import re
import sys

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover - developer tool
    sys.exit("export-torch-cases.py: error: %s (needs torch and numpy)" % e)


def import_torch_mlir():
    """torch-mlir is needed for the export only (not for --train-only)."""
    global tmfx, tmir
    try:
        from torch_mlir import fx as tmfx
        from torch_mlir import ir as tmir
    except ImportError as e:  # pragma: no cover - developer tool
        sys.exit("export-torch-cases.py: error: %s (the export needs "
                 "torch-mlir: pip install torch-mlir packaging; "
                 "--train-only does not)" % e)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "test", "Autodiff", "Inputs", "torch")
TORCH_MLIR_VERSION = "20261001"
# The tolerance the gradient tests use against these files (f32):
# max|actual - reference| <= RTOL * max|reference|, per array, as
# pipeopt-npy-diff --rtol computes it.
RTOL = 1e-4
# f32 and f64 torch must agree this well for a case to be committed.
F64_RTOL = 1e-5
BATCH = 4
# Smallest distance allowed from a point where the model is not
# differentiable (ReLU at 0, a max-pool tie), far above f32 rounding.
MIN_MARGIN = 1e-5
MAX_MODEL_BYTES = 200 * 1024


# ---------------------------------------------------------------------------
# Models. Each builder returns (module, [(name, data tensor)], loss, target).
# ---------------------------------------------------------------------------

def perturb_layer_norm(ln, g):
    """LayerNorm weight 1 + 0.2 N(0,1), bias 0.1 N(0,1) (not the identity)."""
    with torch.no_grad():
        ln.weight.copy_(1 + 0.2 * torch.randn(ln.weight.shape, generator=g))
        ln.bias.copy_(0.1 * torch.randn(ln.bias.shape, generator=g))


class MlpGelu(nn.Module):
    def __init__(self, d_in=16, d_hidden=32, d_out=8):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.act = nn.GELU(approximate="none")
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def build_mlp_gelu(g):
    m = MlpGelu()
    x = torch.randn(BATCH, 16, generator=g)
    target = 0.5 * torch.randn(BATCH, 8, generator=g)
    return m, [("x", x)], "mse", target


class TransformerBlock(nn.Module):
    """Pre-LN block: x + Attn(LN1(x)); then h + MLP(LN2(h))."""

    def __init__(self, d=16, heads=2, d_mlp=32):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, d_mlp)
        self.fc2 = nn.Linear(d_mlp, d)

    def forward(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        a = self.ln1(x)

        def split(t):  # [b, s, d] -> [b, heads, s, hd]
            return t.reshape(b, s, self.heads, hd).transpose(1, 2)

        q, k, v = split(self.q(a)), split(self.k(a)), split(self.v(a))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(hd)
        p = torch.softmax(scores, dim=-1)
        att = torch.matmul(p, v).transpose(1, 2).reshape(b, s, d)
        h = x + self.o(att)
        return h + self.fc2(F.gelu(self.fc1(self.ln2(h))))


def build_transformer_block(g):
    m = TransformerBlock()
    perturb_layer_norm(m.ln1, g)
    perturb_layer_norm(m.ln2, g)
    # Larger q/k weights than nn.Linear's default: attention that is not
    # nearly uniform, so the softmax's gradient matters.
    with torch.no_grad():
        m.q.weight.mul_(2.0)
        m.k.weight.mul_(2.0)
    x = torch.randn(BATCH, 8, 16, generator=g)
    target = torch.randn(BATCH, 8, 16, generator=g)
    return m, [("x", x)], "mse", target


class Cnn(nn.Module):
    """[4,3,8,8] -> conv 3x3 pad 1 -> ReLU -> conv 3x3 stride 2 pad 1 ->
    ReLU -> MaxPool 2 -> AvgPool 2 -> flatten -> Linear -> logits [4,5]."""

    def __init__(self, classes=5):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3, stride=2, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.avg = nn.AvgPool2d(2)
        self.fc = nn.Linear(8, classes)

    def forward(self, x):
        h = F.relu(self.conv1(x))
        h = self.pool(F.relu(self.conv2(h)))
        return self.fc(torch.flatten(self.avg(h), 1))

    def margins(self, x):
        """Distances from the points where the model is not differentiable
        (a ReLU input at 0, two max-pool candidates equal): a rounding
        difference smaller than these cannot change which branch is taken."""
        c1 = self.conv1(x)
        c2 = self.conv2(F.relu(c1))
        r2 = F.relu(c2)
        b, c, hh, ww = r2.shape
        win = r2.reshape(b, c, hh // 2, 2, ww // 2, 2).permute(
            0, 1, 2, 4, 3, 5).reshape(b, c, hh // 2, ww // 2, 4)
        top2 = win.topk(2, dim=-1).values
        gap = top2[..., 0] - top2[..., 1]
        # A window whose maximum is 0 (every ReLU closed) passes no gradient
        # whichever element wins; only open windows need a clear winner.
        gap = gap[top2[..., 0] > 0]
        return {"|conv1 out| (ReLU input)": c1.abs().min().item(),
                "|conv2 out| (ReLU input)": c2.abs().min().item(),
                "max-pool top-2 gap": gap.min().item()}


def build_cnn(g):
    m = Cnn()
    # Positive conv biases keep most ReLUs open; a larger head makes the
    # logits (and so the softmax) clearly non-uniform.
    with torch.no_grad():
        m.conv1.bias.copy_(0.1 + 0.1 * torch.rand(4, generator=g))
        m.conv2.bias.copy_(0.1 + 0.1 * torch.rand(8, generator=g))
        m.fc.weight.mul_(6.0)
    x = torch.randn(BATCH, 3, 8, 8, generator=g)
    target = torch.randint(0, 5, (BATCH,), generator=g, dtype=torch.int64)
    return m, [("x", x)], "cross-entropy", target


class EmbeddingLm(nn.Module):
    """ids [4,8] -> Embedding(32, 16) -> tanh(Linear) -> tied head
    (h @ embedding.weight.T) -> logits [4,8,32]."""

    def __init__(self, vocab=32, d=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.proj = nn.Linear(d, d)

    def forward(self, ids):
        h = torch.tanh(self.proj(self.embed(ids)))
        return torch.matmul(h, self.embed.weight.t())


class EmbeddingPadding(EmbeddingLm):
    """EmbeddingLm whose table has padding_idx=0 (as transformers' LLaMA
    with pad_token_id=0): torch passes no gradient from the lookups of
    token 0 to row 0; the tied head still does."""

    def __init__(self, vocab=32, d=16):
        super().__init__(vocab, d)
        self.embed.padding_idx = 0


def build_embedding_lm(g):
    m = EmbeddingLm()
    with torch.no_grad():
        m.embed.weight.copy_(0.7 * torch.randn(32, 16, generator=g))
    ids = torch.randint(0, 32, (BATCH, 8), generator=g, dtype=torch.int64)
    target = torch.randint(0, 32, (BATCH, 8), generator=g, dtype=torch.int64)
    return m, [("ids", ids)], "cross-entropy", target


def build_embedding_padding(g):
    m = EmbeddingPadding()
    with torch.no_grad():
        m.embed.weight.copy_(0.7 * torch.randn(32, 16, generator=g))
    ids = torch.randint(0, 32, (BATCH, 8), generator=g, dtype=torch.int64)
    ids[0, :3] = 0  # token 0 in both microbatches of 2 rows
    ids[3, 5] = 0
    target = torch.randint(0, 32, (BATCH, 8), generator=g, dtype=torch.int64)
    return m, [("ids", ids)], "cross-entropy", target


# Causal language models from transformers (imported by their builders
# only: the other cases need no transformers). Random weights from a
# config, nothing downloaded; eager attention (the export of the sdpa path
# is not linalg); the output is the logits [4, 8, vocab] and the loss the
# script's cross-entropy over every position, the target at position t
# being token t+1 of a sequence one longer than the ids (next-token
# prediction, as transformers' own loss computes it, but without its
# shift: the last position has a target too, so every position counts).
LM_SEQ = 8


class CausalLm(nn.Module):
    """ids [b, LM_SEQ] i64 -> logits [b, LM_SEQ, vocab] of a transformers
    *ForCausalLM, with an explicit all-ones attention_mask (without one,
    GPT-2 computes its position ids with a cumulative sum, which torch-mlir
    exports as tm_tensor.scan) and no key/value cache."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids, attention_mask=torch.ones_like(ids),
                          use_cache=False).logits


def rope_in_graph(rotary):
    """LLaMA's rotary embedding keeps its inverse frequencies in a
    non-persistent buffer, which torch-mlir's export cannot map (and would
    otherwise freeze as a constant). Computes them in the graph instead, by
    transformers' own formula (1 / theta^(2i/head_dim), f32), after
    checking that this gives the buffer's value bit for bit."""
    before = rotary.inv_freq.clone()
    for b in ("inv_freq", "original_inv_freq"):
        rotary._buffers.pop(b, None)
        rotary._non_persistent_buffers_set.discard(b)
    cls = type(rotary)
    rotary.__class__ = type("RopeInGraph", (cls,), {"inv_freq": property(
        lambda self: cls.compute_default_rope_parameters(self.config)[0])})
    assert torch.equal(rotary.inv_freq, before)


def lm_data(g, vocab):
    """Token ids [BATCH, LM_SEQ] and their next tokens (the target)."""
    tokens = torch.randint(0, vocab, (BATCH, LM_SEQ + 1), generator=g,
                           dtype=torch.int64)
    return tokens[:, :-1].clone(), tokens[:, 1:].clone()


def perturb_norms(model, g):
    """Every LayerNorm / RMSNorm weight 1 + 0.2 N(0,1), every LayerNorm
    bias 0.1 N(0,1): not the identity, so their gradients are tested."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() != 1 or not re.search(r"(ln_|norm)", name):
                continue
            if name.endswith("weight"):
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))


def import_transformers():
    """transformers, for the gpt2_tiny, gpt2_4layers and llama_tiny cases."""
    try:
        import transformers
    except ImportError as e:  # pragma: no cover - developer tool
        sys.exit("export-torch-cases.py: error: %s (gpt2_tiny, gpt2_4layers "
                 "and llama_tiny need transformers: pip install transformers; "
                 "--case NAME selects the other cases)" % e)
    return transformers


def build_gpt2_tiny(g, layers=2):
    tf = import_transformers()
    GPT2Config, GPT2LMHeadModel = tf.GPT2Config, tf.GPT2LMHeadModel
    vocab = 64
    config = GPT2Config(n_layer=layers, n_embd=32, n_head=4, vocab_size=vocab,
                        n_positions=LM_SEQ, initializer_range=0.1,
                        bos_token_id=0, eos_token_id=0,
                        attn_implementation="eager")
    m = GPT2LMHeadModel(config)
    perturb_norms(m, g)
    # GPT-2 initializes its linear biases to zero; start them at 0.1 N(0,1)
    # so that they are not trained from an exceptional point and a
    # comparison relative to their size is not one relative to the step.
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("bias") and "ln_" not in name:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
    ids, target = lm_data(g, vocab)
    return CausalLm(m), [("ids", ids)], "cross-entropy", target


def build_gpt2_4layers(g):
    return build_gpt2_tiny(g, layers=4)


def build_llama_tiny(g):
    tf = import_transformers()
    LlamaConfig, LlamaForCausalLM = tf.LlamaConfig, tf.LlamaForCausalLM
    vocab = 64
    config = LlamaConfig(vocab_size=vocab, hidden_size=32,
                         intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=LM_SEQ,
                         initializer_range=0.1, bos_token_id=0,
                         eos_token_id=0, pad_token_id=None,
                         attn_implementation="eager")
    m = LlamaForCausalLM(config)
    rope_in_graph(m.model.rotary_emb)
    perturb_norms(m, g)
    ids, target = lm_data(g, vocab)
    return CausalLm(m), [("ids", ids)], "cross-entropy", target


CASES = collections.OrderedDict([
    ("mlp_gelu", (build_mlp_gelu,
                  "Linear(16,32) -> GELU (erf) -> Linear(32,8); x [4,16]; "
                  "loss mse")),
    ("transformer_block", (build_transformer_block,
                           "pre-LN transformer block, 2-head softmax "
                           "attention, hidden 16, MLP 32 with GELU; "
                           "x [4,8,16]; loss mse")),
    ("cnn", (build_cnn,
             "conv3x3 pad1 -> ReLU -> conv3x3 stride2 pad1 -> ReLU -> "
             "MaxPool2 -> AvgPool2 -> Linear(8,5); x [4,3,8,8] NCHW; loss "
             "cross-entropy over 5 classes")),
    ("embedding_lm", (build_embedding_lm,
                      "Embedding(32,16) -> tanh(Linear(16,16)) -> tied LM "
                      "head h @ E^T; ids [4,8] int64; loss cross-entropy "
                      "over 32 tokens at every position")),
    ("embedding_padding", (build_embedding_padding,
                           "embedding_lm with Embedding(32,16,padding_idx=0)"
                           ", token 0 in the ids, exported as "
                           "pipeopt.torch exports it (the lookups of token "
                           "0 pass no gradient); ids [4,8] int64; loss "
                           "cross-entropy over 32 tokens")),
    ("gpt2_tiny", (build_gpt2_tiny,
                   "transformers GPT2LMHeadModel, 2 layers, width 32, 4 "
                   "heads, vocabulary 64, 8 positions, eager attention, "
                   "LM head tied to the token embedding; ids [4,8] int64; "
                   "output logits [4,8,64]; loss cross-entropy over the "
                   "next token at every position")),
    ("gpt2_4layers", (build_gpt2_4layers,
                      "gpt2_tiny with 4 layers: its two middle layers are "
                      "the same code on different weights, which "
                      "pipeopt-outline-repeats compiles once; ids [4,8] "
                      "int64; output logits [4,8,64]; loss cross-entropy "
                      "over the next token at every position")),
    ("llama_tiny", (build_llama_tiny,
                    "transformers LlamaForCausalLM, 2 layers, width 32, 4 "
                    "query heads and 2 key/value heads (grouped-query "
                    "attention), SwiGLU MLP 64, RMSNorm, RoPE, vocabulary "
                    "64, eager attention; ids [4,8] int64; output logits "
                    "[4,8,64]; loss cross-entropy over the next token at "
                    "every position")),
])


# ---------------------------------------------------------------------------
# Functional form: every parameter an argument.
# ---------------------------------------------------------------------------

class Functional(nn.Module):
    """forward(*params, *data) = module(*data) with the given parameters.

    Holds the module only for its structure: its own parameters are
    replaced on every call (torch.func.functional_call), so that
    torch.export sees them as user inputs, not as weights to freeze."""

    def __init__(self, module, param_names):
        super().__init__()
        self.module = module
        self.param_names = list(param_names)

    def forward(self, *args):
        n = len(self.param_names)
        params = dict(zip(self.param_names, args[:n]))
        return torch.func.functional_call(self.module, params, tuple(args[n:]))


def loss_of(kind, out, target):
    if kind == "mse":
        return F.mse_loss(out, target)
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))


def run_torch(fn, args, kind, target, dtype):
    """Output, loss and gradients (None for integer args) in `dtype`."""
    leaves = []
    for a in args:
        if a.is_floating_point():
            a = a.detach().to(dtype).requires_grad_(True)
        leaves.append(a)
    t = target.to(dtype) if target.is_floating_point() else target
    out = fn(*leaves)
    loss = loss_of(kind, out, t)
    floats = [a for a in leaves if a.is_floating_point()]
    grads = iter(torch.autograd.grad(loss, floats))
    return (out.detach(), loss.detach(),
            [next(grads) if a.is_floating_point() else None for a in leaves])


def rel_err(a, ref):
    a = a.double()
    ref = ref.double()
    scale = ref.abs().max().item()
    return (a - ref).abs().max().item() / (scale if scale > 0 else 1.0)


# ---------------------------------------------------------------------------
# Export and checks of the MLIR.
# ---------------------------------------------------------------------------

def pipeopt_torch_export():
    """python/pipeopt/torch/_export.py, loaded by path (it needs torch
    only, not the compiled pipeopt package)."""
    import importlib.util
    name = "_pipeopt_torch_export"
    if name not in sys.modules:
        path = os.path.join(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__))), "python", "pipeopt", "torch",
            "_export.py")
        spec = importlib.util.spec_from_file_location(name, path)
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def export_mlir(fn, args):
    # As pipeopt.torch exports: an nn.Embedding(padding_idx=p) passes no
    # gradient from its lookups of p (torch's backward), which the forward
    # alone does not say (the torch reference is computed without this).
    hooks = pipeopt_torch_export()._padding_idx_hooks(fn.module, [])
    try:
        module = tmfx.export_and_import(fn, *args,
                                        output_type="linalg-on-tensors",
                                        func_name="forward")
    finally:
        for h in hooks:
            h.remove()
    return module


def op_histogram(module):
    """{op name: count} over every op nested in the module (linalg bodies
    included), and the list of top-level ops of @forward's body."""
    hist = collections.Counter()

    def visit(op):
        hist[op.name] += 1
        return tmir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for wrapper in ("builtin.module", "func.func", "func.return"):
        hist.pop(wrapper, None)
    return dict(sorted(hist.items()))


def check_mlir(text, args, case):
    """Everything the tests rely on: one public @forward, every parameter
    an argument, ranked static tensors only, no resources or globals."""
    for bad in ("dense_resource", "ml_program", "torch.", "?x", "x?",
                "tensor<*"):
        if bad in text:
            sys.exit("export-torch-cases.py: error: %s: the exported MLIR "
                     "contains '%s'" % (case, bad))
    m = re.search(r"func\.func @forward\((.*?)\)\s*->", text)
    if not m or text.count("func.func") != 1:
        sys.exit("export-torch-cases.py: error: %s: expected exactly one "
                 "function @forward" % case)
    nargs = len(re.findall(r"%arg\d+:", m.group(1)))
    if nargs != len(args):
        sys.exit("export-torch-cases.py: error: %s: @forward has %d "
                 "arguments, expected %d (every parameter and input)"
                 % (case, nargs, len(args)))
    # Large splat-free constants would mean a parameter was frozen.
    for c in re.findall(r"arith\.constant dense<([^>]*)>", text):
        if "," in c:
            sys.exit("export-torch-cases.py: error: %s: non-splat tensor "
                     "constant in the exported MLIR (a frozen parameter?)"
                     % case)


# ---------------------------------------------------------------------------
# Writing.
# ---------------------------------------------------------------------------

DTYPES = {torch.float32: "f32", torch.int64: "i64"}


def save(path, tensor, written):
    arr = tensor.detach().cpu().numpy()
    if arr.dtype == np.float64:
        raise AssertionError(path)
    # copy(order="C"), not np.ascontiguousarray, which makes a 0-d array 1-d.
    np.save(path, arr.copy(order="C"))
    written.append(path)


def build_case(name, builder):
    """The case's module, its functional form and its arguments, from the
    fixed seeds: the same values on every call (the export and
    --train-only build them identically)."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(sum(map(ord, name)))
    module, data, kind, target = builder(g)
    module.eval()
    params = list(module.named_parameters())
    fn = Functional(module, [n for n, _ in params])
    args = [p.detach().clone() for _, p in params] + [t for _, t in data]
    kinds = ["param"] * len(params) + ["data"] * len(data)
    names = [n for n, _ in params] + [n for n, _ in data]
    return module, data, kind, target, fn, args, kinds, names


def make_case(name, builder, description, out_root):
    module, data, kind, target, fn, args, kinds, names = build_case(
        name, builder)

    # The functional form computes what the module computes.
    with torch.no_grad():
        direct = module(*[t for _, t in data])
        assert torch.equal(direct, fn(*args)), name

    if hasattr(module, "margins"):
        with torch.no_grad():
            for what, v in module.margins(*[t for _, t in data]).items():
                print("  margin: min %s %.2e" % (what, v))
                if v < MIN_MARGIN:
                    sys.exit("export-torch-cases.py: error: %s: %s is %.1e "
                             "< %.0e: a rounding difference could change "
                             "the gradient; change the seed or the init"
                             % (name, what, v, MIN_MARGIN))
    out32, loss32, grads32 = run_torch(fn, args, kind, target, torch.float32)
    out64, loss64, grads64 = run_torch(fn, args, kind, target, torch.float64)
    print("%s: loss %.6g (f64 %.6g)" % (name, loss32.item(), loss64.item()))
    worst = max(rel_err(out32, out64), rel_err(loss32, loss64))
    print("  output: shape %s, max|y| %.3g, f32 vs f64 rel err %.2e"
          % (list(out32.shape), out32.abs().max().item(),
             rel_err(out32, out64)))
    # A gradient that is zero in exact arithmetic (the key bias of softmax
    # attention: softmax is invariant to a shift that is the same for every
    # key) is f32 rounding noise in torch as in pipeopt: it is compared
    # with an absolute tolerance, RTOL times the largest gradient of the
    # case, instead of relative to itself.
    largest = max(g.abs().max().item() for g in grads64 if g is not None)
    tolerances = []
    for i, (g32, g64) in enumerate(zip(grads32, grads64)):
        tolerances.append(None)
        if g32 is None:
            continue
        if g64.abs().max().item() <= 1e-12 * largest:
            tolerances[i] = (RTOL, RTOL * largest)
            e = g32.abs().max().item() / largest
            print("  grad_%d %-14s %-16s zero in exact arithmetic (f64 max "
                  "%.1e); f32 noise %.1e of the largest gradient, atol %.2e"
                  % (i, names[i], str(list(g32.shape)),
                     g64.abs().max().item(), e, RTOL * largest))
            worst = max(worst, e)
            continue
        tolerances[i] = (RTOL, 0.0)
        e = rel_err(g32, g64)
        worst = max(worst, e)
        print("  grad_%d %-14s %-16s max|g| %.3g, f32 vs f64 rel err %.2e"
              % (i, names[i], str(list(g32.shape)), g32.abs().max().item(), e))
        if g32.abs().max().item() < 1e-3:
            sys.exit("export-torch-cases.py: error: %s: gradient of %s is "
                     "tiny (max %.2g): adjust the initialization"
                     % (name, names[i], g32.abs().max().item()))
    if worst > F64_RTOL:
        sys.exit("export-torch-cases.py: error: %s: f32 and f64 torch "
                 "disagree (%.2e > %.0e): the case is ill conditioned"
                 % (name, worst, F64_RTOL))
    print("  f32 vs f64: worst rel err %.2e <= %.0e: ok" % (worst, F64_RTOL))

    module_ir = export_mlir(fn, args)
    text = str(module_ir)
    check_mlir(text, args, name)
    hist = op_histogram(module_ir)

    out_dir = os.path.join(out_root, name)
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):  # no stale files from an older layout
        if f.endswith(".npy") or f in ("model.mlir", "model.mb2.mlir",
                                        "case.json"):
            os.remove(os.path.join(out_dir, f))
    written = []
    header = ("// %s: %s.\n"
              "// Generated by scripts/export-torch-cases.py (torch %s, "
              "torch-mlir %s, torch_mlir.fx.export_and_import "
              "linalg-on-tensors); do not edit.\n"
              % (name, description, torch.__version__.split("+")[0],
                 importlib.metadata.version("torch-mlir")))
    # The same function for half the batch (model.mb2.mlir): pipeopt runs
    # the batch as 2 microbatches of BATCH/2 each, whose mean gradient is
    # the batch's (tests of pipeopt-compile --train --num-microbatches 2).
    half = [a if k == "param" else a[: BATCH // 2] for a, k in zip(args, kinds)]
    text_mb2 = str(export_mlir(fn, half))
    check_mlir(text_mb2, half, name)
    for file_name, body in (("model.mlir", text), ("model.mb2.mlir", text_mb2)):
        model_path = os.path.join(out_dir, file_name)
        with open(model_path, "w") as f:
            f.write(header + body)
        written.append(model_path)
        if os.path.getsize(model_path) > MAX_MODEL_BYTES:
            sys.exit("export-torch-cases.py: error: %s: %s is %d bytes"
                     % (name, file_name, os.path.getsize(model_path)))

    arg_entries = []
    for i, a in enumerate(args):
        save(os.path.join(out_dir, "arg_%d.npy" % i), a, written)
        entry = collections.OrderedDict([
            ("index", i), ("name", names[i]), ("kind", kinds[i]),
            ("dtype", DTYPES[a.dtype]), ("shape", list(a.shape)),
            ("grad", "grad_%d.npy" % i if grads32[i] is not None else None)])
        if tolerances[i] is not None:
            entry["grad_tolerance"] = {"rtol": tolerances[i][0],
                                       "atol": float("%.3g" % tolerances[i][1])}
        arg_entries.append(entry)
        if grads32[i] is not None:
            save(os.path.join(out_dir, "grad_%d.npy" % i), grads32[i], written)
    save(os.path.join(out_dir, "target.npy"), target, written)
    save(os.path.join(out_dir, "output.npy"), out32, written)
    save(os.path.join(out_dir, "loss.npy"), loss32.reshape(()), written)

    case = collections.OrderedDict([
        ("case", name),
        ("description", description),
        ("function", "forward"),
        ("loss", kind),
        ("args", arg_entries),
        ("output", {"dtype": "f32", "shape": list(out32.shape)}),
        ("target", {"dtype": DTYPES[target.dtype],
                    "shape": list(target.shape)}),
        ("batch", BATCH),
        ("num_microbatches_ok",
         [m for m in (1, 2, 4) if BATCH % m == 0]),
        ("tolerance", collections.OrderedDict([
            ("rtol", RTOL), ("atol", 0.0),
            ("meaning", "per array: max|actual - reference| <= rtol * "
                        "max|reference| + atol (pipeopt-npy-diff --rtol "
                        "--atol), for the output, the loss and every "
                        "gradient; args[i].grad_tolerance gives the "
                        "gradient's own (an atol where the exact gradient "
                        "is zero)"),
        ])),
        ("f32_vs_f64_rel_err", float("%.3g" % worst)),
        ("torch", torch.__version__),
        ("torch_mlir", importlib.metadata.version("torch-mlir")),
        ("mlir_ops", hist),
    ])
    json_path = os.path.join(out_dir, "case.json")
    with open(json_path, "w") as f:
        json.dump(case, f, indent=2)
        f.write("\n")
    written.append(json_path)
    for p in written:
        print("  wrote %s (%d bytes)" % (os.path.relpath(p), os.path.getsize(p)))
    print("  ops: " + ", ".join("%s %d" % kv for kv in hist.items()))
    make_train_refs(name, fn, args, kinds, names, kind, target, out_dir,
                    tolerances)


# ---------------------------------------------------------------------------
# Training references: torch.optim on the committed batch (train/).
# ---------------------------------------------------------------------------

TRAIN_STEPS = 3
# loss.npy's tolerance (the weights': RTOL), as the gradient tests' loss.
LOSS_RTOL = 1e-5
# The optimizers of the pipelined-training tests, with their hyperparameters
# (pipeopt-compile's --optimizer / --lr / --momentum / --betas / --eps /
# --weight-decay, and the torch.optim class that defines them).
OPTIMIZERS = collections.OrderedDict([
    ("sgd", collections.OrderedDict([
        ("optimizer", "sgd"), ("lr", 0.1)])),
    ("momentum", collections.OrderedDict([
        ("optimizer", "momentum"), ("lr", 0.05), ("momentum", 0.9),
        ("weight_decay", 0.01)])),
    ("adamw", collections.OrderedDict([
        ("optimizer", "adamw"), ("lr", 0.01), ("betas", [0.9, 0.999]),
        ("eps", 1e-8), ("weight_decay", 0.01)])),
])


# Per-case changes to OPTIMIZERS, each with its reason (config.json's
# "why"). gpt2_tiny's attention has a key bias (inside the fused c_attn
# bias, arguments 5 and 17, elements 32-63) whose exact gradient is zero, so
# its f32 gradient is rounding noise, which AdamW with eps 1e-8 turns into
# steps of about lr with arbitrary signs: torch's f32 and f64 trainings
# differ by 5.0e-3 and 3.0e-3 relative to those arrays (every other weight:
# <= 4e-6). With eps 1e-3 (below every array's largest gradient, so the
# other elements still take Adam's normalized steps) the noise moves the
# key bias by about lr x noise / eps, and every weight agrees to 1.1e-6.
# The per-array exception for a zero gradient (weight_tolerance) cannot
# serve here: it would loosen the query and value biases of the same array.
GPT2_ADAMW = {"adamw": {
        "eps": 1e-3,
        "why": "the key bias (elements 32-63 of c_attn.bias, arguments 5 "
               "and 17) has an exact gradient of zero; with eps 1e-8 AdamW "
               "turns its f32 rounding noise into steps of about lr (torch "
               "f32 vs f64: 5.0e-3 and 3.0e-3 relative, the other weights "
               "<= 4e-6); eps 1e-3 keeps every weight within 1.1e-6"}}
CASE_OPTIMIZERS = {"gpt2_tiny": GPT2_ADAMW, "gpt2_4layers": GPT2_ADAMW}


def optimizer_spec(case, opt_name):
    """OPTIMIZERS[opt_name] with the case's changes (CASE_OPTIMIZERS)."""
    spec = collections.OrderedDict(OPTIMIZERS[opt_name])
    spec.update(CASE_OPTIMIZERS.get(case, {}).get(opt_name, {}))
    return spec


def optimizer_flags(spec):
    """pipeopt-compile's flags for one OPTIMIZERS entry."""
    flags = ["--optimizer", spec["optimizer"], "--lr", repr(spec["lr"])]
    if "momentum" in spec:
        flags += ["--momentum", repr(spec["momentum"])]
    if "betas" in spec:
        flags += ["--betas", ",".join(repr(b) for b in spec["betas"])]
    if "eps" in spec:
        flags += ["--eps", repr(spec["eps"])]
    if "weight_decay" in spec:
        flags += ["--weight-decay", repr(spec["weight_decay"])]
    return flags


def torch_optimizer(spec, params):
    """torch.optim for one OPTIMIZERS entry, single-tensor (foreach=False)
    as pipeopt-run's optimizer follows it."""
    wd = spec.get("weight_decay", 0.0)
    if spec["optimizer"] == "sgd":
        return torch.optim.SGD(params, lr=spec["lr"], weight_decay=wd,
                               foreach=False)
    if spec["optimizer"] == "momentum":
        return torch.optim.SGD(params, lr=spec["lr"],
                               momentum=spec["momentum"], dampening=0,
                               nesterov=False, weight_decay=wd,
                               foreach=False)
    assert spec["optimizer"] == "adamw", spec
    return torch.optim.AdamW(params, lr=spec["lr"],
                             betas=tuple(spec["betas"]), eps=spec["eps"],
                             weight_decay=wd, amsgrad=False, foreach=False)


def train_torch(fn, args, kinds, kind, target, spec, dtype):
    """TRAIN_STEPS steps of the optimizer on the whole batch (the same data
    every step, the loss a mean over the batch): the loss before each step
    and the parameters after the last, in `dtype`."""
    params = [a.detach().to(dtype).clone().requires_grad_(True)
              for a, k in zip(args, kinds) if k == "param"]
    data = [a.to(dtype) if a.is_floating_point() else a
            for a, k in zip(args, kinds) if k == "data"]
    t = target.to(dtype) if target.is_floating_point() else target
    opt = torch_optimizer(spec, params)
    losses = []
    for _ in range(TRAIN_STEPS):
        opt.zero_grad(set_to_none=True)
        # One tensor per parameter: a parameter used twice (the tied
        # embedding table) gets the sum of both uses' gradients.
        loss = loss_of(kind, fn(*params, *data), t)
        loss.backward()
        losses.append(loss.detach().clone())
        opt.step()
    return torch.stack(losses), [p.detach().clone() for p in params]


def adam_step_bound(b1, b2, t):
    """max |m_hat_t| / sqrt(v_hat_t) over every gradient sequence g_1..g_t
    (Cauchy-Schwarz on m_t = (1-b1) sum b1^(t-k) g_k against v_t = (1-b2)
    sum b2^(t-k) g_k^2): an Adam(W) step moves an element by at most lr
    times this, whatever its gradient."""
    s = sum((b1 * b1 / b2) ** j for j in range(t))
    return ((1 - b1) / (1 - b1 ** t) * math.sqrt((1 - b2 ** t) / (1 - b2))
            * math.sqrt(s))


def make_train_refs(name, fn, args, kinds, names, kind, target, out_dir,
                    grad_tolerances):
    """train/<opt>/weight_<i>.npy (every parameter after TRAIN_STEPS steps)
    and loss.npy (f32[TRAIN_STEPS], the loss before each step), f32 torch;
    train/config.json: the hyperparameters, pipeopt-compile's flags, the
    tolerance of every weight, the f32-vs-f64 check."""
    train_dir = os.path.join(out_dir, "train")
    params = [i for i, k in enumerate(kinds) if k == "param"]
    written = []
    config = collections.OrderedDict([
        ("case", name),
        ("steps", TRAIN_STEPS),
        ("batch", BATCH),
        ("data", "the committed batch (arg_<i>.npy of the data args, "
                 "target.npy), the same every step; loss a mean over the "
                 "batch; loss.npy[k] is the loss before step k+1"),
        ("torch", torch.__version__),
        ("dtype", "float32"),
        ("parameters", params),
        ("optimizers", collections.OrderedDict()),
    ])
    for opt_name in OPTIMIZERS:
        spec = optimizer_spec(name, opt_name)
        loss32, w32 = train_torch(fn, args, kinds, kind, target, spec,
                                  torch.float32)
        loss64, w64 = train_torch(fn, args, kinds, kind, target, spec,
                                  torch.float64)
        d = os.path.join(train_dir, opt_name)
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            if f.endswith(".npy"):
                os.remove(os.path.join(d, f))
        save(os.path.join(d, "loss.npy"), loss32, written)
        exceptions = collections.OrderedDict()
        f64_err = collections.OrderedDict()
        f64_err["loss"] = float("%.3g" % rel_err(loss32, loss64))
        worst = f64_err["loss"]
        print("%s %s: loss %s (f64 %s), f32 vs f64 rel err %.2e" % (
            name, opt_name, " ".join("%.6g" % v for v in loss32.tolist()),
            " ".join("%.6g" % v for v in loss64.tolist()), f64_err["loss"]))
        for i, a32, a64 in zip(params, w32, w64):
            save(os.path.join(d, "weight_%d.npy" % i), a32, written)
            gt = grad_tolerances[i]
            if spec["optimizer"] == "adamw" and gt[1] > 0:
                # The exact gradient is zero (the attention's key bias):
                # both torch's and pipeopt's are f32 rounding noise, which
                # AdamW normalizes into steps of order lr with arbitrary
                # signs. The one thing known is Adam's bound on a step,
                # lr * adam_step_bound; two runs from the same start (the
                # same decay) differ by at most twice the sum over steps.
                b1, b2 = spec["betas"]
                bound = 2 * spec["lr"] * sum(
                    adam_step_bound(b1, b2, t)
                    for t in range(1, TRAIN_STEPS + 1))
                atol = math.ceil(bound * 1e3) / 1e3
                exceptions[str(i)] = {
                    "rtol": 0.0, "atol": atol,
                    "why": "exact gradient zero (case.json grad_tolerance "
                           "atol): AdamW steps of rounding noise; 2 x lr x "
                           "sum of Adam's per-step bound over %d steps "
                           "(%.4g), rounded up to 1e-3"
                           % (TRAIN_STEPS, bound)}
                e = (a32.double() - a64).abs().max().item()
                print("  weight_%-3d %-14s exact gradient zero: f32 vs f64 "
                      "max abs diff %.2e (noise), atol %.2g" % (
                          i, names[i], e, atol))
                f64_err["weight_%d" % i] = "abs %.3g (noise)" % e
                continue
            e = rel_err(a32, a64)
            worst = max(worst, e)
            f64_err["weight_%d" % i] = float("%.3g" % e)
            print("  weight_%-3d %-14s max|w| %.3g, moved %.3g, f32 vs f64 "
                  "rel err %.2e" % (i, names[i], a32.abs().max().item(),
                                    (a32 - args[i]).abs().max().item(), e))
        if worst > F64_RTOL:
            sys.exit("export-torch-cases.py: error: %s %s: f32 and f64 "
                     "training disagree (%.2e > %.0e): ill conditioned"
                     % (name, opt_name, worst, F64_RTOL))
        print("  f32 vs f64: worst rel err %.2e <= %.0e: ok" % (worst,
                                                               F64_RTOL))
        entry = collections.OrderedDict(spec)
        entry["torch_optim"] = {
            "sgd": "torch.optim.SGD(lr, foreach=False)",
            "momentum": "torch.optim.SGD(lr, momentum, dampening=0, "
                        "nesterov=False, weight_decay, foreach=False)",
            "adamw": "torch.optim.AdamW(lr, betas, eps, weight_decay, "
                     "amsgrad=False, foreach=False)"}[spec["optimizer"]]
        entry["flags"] = optimizer_flags(spec)
        entry["tolerance"] = collections.OrderedDict([
            ("meaning", "per array: max|actual - reference| <= rtol * "
                        "max|reference| + atol (pipeopt-npy-diff --rtol "
                        "--atol); 'loss' for loss.npy, 'weights' for every "
                        "weight_<i>.npy but those in weight_tolerance"),
            ("loss", {"rtol": LOSS_RTOL, "atol": 0.0}),
            ("weights", {"rtol": RTOL, "atol": 0.0}),
            ("weight_tolerance", exceptions)])
        entry["f32_vs_f64_rel_err"] = f64_err
        config["optimizers"][opt_name] = entry
    json_path = os.path.join(train_dir, "config.json")
    with open(json_path, "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    written.append(json_path)
    for p in written:
        print("  wrote %s (%d bytes)" % (os.path.relpath(p), os.path.getsize(p)))


def train_only(name, builder, out_root):
    """Rebuilds the case from its seeds, checks that it is the committed one
    (every arg_<i>.npy and target.npy bit for bit, and the committed
    gradients' tolerances) and writes its training references; neither the
    MLIR nor the other files are touched."""
    module, data, kind, target, fn, args, kinds, names = build_case(
        name, builder)
    out_dir = os.path.join(out_root, name)
    meta = json.load(open(os.path.join(out_dir, "case.json")))
    if len(meta["args"]) != len(args):
        sys.exit("export-torch-cases.py: error: %s: %d args, the committed "
                 "case has %d" % (name, len(args), len(meta["args"])))
    pairs = [("arg_%d.npy" % i, a) for i, a in enumerate(args)]
    pairs.append(("target.npy", target))
    for f, a in pairs:
        committed = np.load(os.path.join(out_dir, f))
        mine = a.detach().cpu().numpy()
        if (committed.dtype != mine.dtype or committed.shape != mine.shape
                or not np.array_equal(committed, mine)):
            sys.exit("export-torch-cases.py: error: %s: %s differs from "
                     "the rebuilt case (dtype %s/%s, shape %s/%s)" % (
                         name, f, committed.dtype, mine.dtype,
                         committed.shape, mine.shape))
    print("%s: rebuilt case equals the committed arg_0..%d.npy and "
          "target.npy bit for bit" % (name, len(args) - 1))
    tolerances = []
    for a in meta["args"]:
        t = a.get("grad_tolerance")
        tolerances.append((t["rtol"], t["atol"]) if t else None)
    make_train_refs(name, fn, args, kinds, names, kind, target, out_dir,
                    tolerances)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT,
                    help="output directory (default: %(default)s)")
    ap.add_argument("--case", action="append", choices=list(CASES),
                    help="only this case (repeatable; default: all)")
    ap.add_argument("--train-only", action="store_true",
                    help="only the training references (train/): rebuild "
                    "the models, check them against the committed "
                    "arguments, run torch.optim; needs no torch-mlir and "
                    "writes nothing else")
    opts = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    if opts.train_only:
        for name in opts.case or CASES:
            train_only(name, CASES[name][0], opts.out)
        return
    import_torch_mlir()
    if importlib.metadata.version("torch-mlir") != TORCH_MLIR_VERSION:
        print("export-torch-cases.py: warning: torch-mlir %s, the committed "
              "files were made with %s" % (
                  importlib.metadata.version("torch-mlir"),
                  TORCH_MLIR_VERSION), file=sys.stderr)
    for name in opts.case or CASES:
        builder, description = CASES[name]
        make_case(name, builder, description, opts.out)


if __name__ == "__main__":
    main()
