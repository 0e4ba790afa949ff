"""Tests of pipeopt.torch._export.export_training_step.

The exporter needs torch and torch-mlir; the GPT-2 / LLaMA cases also need
transformers, and the training comparisons the built pipeopt-compile and
pipeopt-run (PIPEOPT_BIN_DIR, default <repo>/build/bin). Whatever is missing
skips the tests that need it, saying what.

Run: python3 -m pytest python/tests/torch -v  (about a minute on 2 cores)
"""

import copy
import importlib.util
import os
import subprocess
import sys

import pytest

np = pytest.importorskip("numpy", reason="needs numpy")
torch = pytest.importorskip("torch", reason="needs torch (pip install torch)")
pytest.importorskip("torch_mlir", reason="needs torch-mlir "
                    "(pip install torch-mlir): the exporter calls "
                    "torch_mlir.fx.export_and_import")

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(os.path.dirname(HERE))
REPO = os.path.dirname(PYTHON_DIR)
BIN_DIR = os.environ.get("PIPEOPT_BIN_DIR", os.path.join(REPO, "build", "bin"))


def _load_export():
    """The module under test, loaded by path: it needs nothing else of the
    pipeopt package (whose __init__ may load compiled bindings)."""
    name = "_pipeopt_torch_export_under_test"
    if name in sys.modules:
        return sys.modules[name]
    path = os.path.join(PYTHON_DIR, "pipeopt", "torch", "_export.py")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


ex = _load_export()
nn = torch.nn
F = torch.nn.functional


# ---------------------------------------------------------------------------
# Small models.
# ---------------------------------------------------------------------------

class TiedLm(nn.Module):
    """ids -> Embedding -> tanh(Linear) -> tied head; a non-persistent and a
    persistent buffer (scale) on the way."""

    def __init__(self, vocab=32, d=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.proj = nn.Linear(d, d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.embed.weight
        self.register_buffer("scale", torch.full((d,), 0.5), persistent=False)
        self.register_buffer("shift", torch.full((d,), 0.1))

    def forward(self, ids):
        h = torch.tanh(self.proj(self.embed(ids)) * self.scale + self.shift)
        return self.head(h)


class PaddedLm(TiedLm):
    """TiedLm whose embedding has padding_idx=0 (as transformers' LLaMA
    with pad_token_id=0): torch passes no gradient from the lookups of
    token 0 to row 0 of the table; the tied head still gives row 0 one."""

    def __init__(self, vocab=32, d=16):
        super().__init__(vocab, d)
        self.embed.padding_idx = 0
        self.head.weight = self.embed.weight


class CumsumMasked(nn.Module):
    """Builds its positions with a cumsum of the mask (as some transformers
    versions do) when no attention_mask is given."""

    def __init__(self, vocab=16, d=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(8, d)
        self.out = nn.Linear(d, vocab)

    def forward(self, input_ids, attention_mask=None):
        if attention_mask is None:
            attention_mask = (input_ids >= 0).long()
            positions = attention_mask.cumsum(-1) - 1
        else:
            positions = torch.arange(input_ids.shape[1]).expand_as(input_ids)
        h = self.embed(input_ids) + self.pos(positions)
        h = h * attention_mask.unsqueeze(-1).to(h.dtype)
        return self.out(torch.tanh(h))


class Cumsum(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.cumsum(self.lin(x), dim=1)


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if y.sum().item() > 0:  # data-dependent: torch.export refuses
            return y
        return -y


# ---------------------------------------------------------------------------
# Export alone.
# ---------------------------------------------------------------------------

def test_tied_parameter_and_buffers_are_arguments():
    torch.manual_seed(0)
    m = TiedLm()
    ids = torch.randint(0, 32, (4, 8))
    tgt = torch.randint(0, 32, (4, 8))
    step = ex.export_training_step(m, ids, "cross_entropy", tgt,
                                   num_microbatches=2)
    roles = [a.role for a in step.args]
    assert roles == ["parameter"] * 3 + ["buffer"] * 2 + ["data", "target"]
    assert step.args[0].names == ["embed.weight", "head.weight"]
    assert [a.names for a in step.args[3:5]] == [["scale"], ["shift"]]
    assert step.args[5].shape == (2, 8) and step.args[5].dtype == "i64"
    assert step.args[6].shape == (2, 8) and step.args[6].dtype == "i64"
    assert step.loss == "cross-entropy"
    assert step.trainable == [0, 1, 2]
    assert step.microbatch_args == [5]
    assert set(step.parameters) == {"embed.weight", "proj.weight",
                                    "proj.bias"}
    assert all(v.dtype == np.float32 for v in step.parameters.values())
    assert set(step.buffers) == {"scale", "shift"}
    assert step.mlir.count("func.func @forward") == 1
    # 6 arguments: 3 parameters, 2 buffers, the ids (the target is pipeopt's)
    head = step.mlir[step.mlir.index("func.func @forward"):]
    head = head[:head.index("{")]
    assert head.count("%arg") == 6, head
    assert "tensor<2x8xi64>" in head and "-> tensor<2x8x32xf32>" in head
    assert any("tied parameter: embed.weight, head.weight" in n
               for n in step.notes)
    assert any("non-persistent: scale" in n for n in step.notes)
    flags = step.compile_flags()
    assert flags[flags.index("--trainable") + 1] == "0,1,2"
    assert flags[flags.index("--microbatch-args") + 1] == "5"
    assert flags[flags.index("--loss") + 1] == "cross-entropy"


def test_no_grad_copy_is_exact():
    x = torch.tensor([0.0, -0.0, 1.0, -3.5, 1e-45, -1e-45, 1.1754942e-38,
                      3.4028235e38, -3.4028235e38, float("inf"),
                      float("-inf"), float("nan")])
    x = torch.cat([x, torch.randn(1000) * 10.0 ** torch.randint(-40, 38,
                                                                (1000,))])
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        v = x.to(dtype)
        c = ex._no_grad_copy(v)
        assert c.dtype == dtype
        bits = torch.int16 if dtype != torch.float32 else torch.int32
        assert torch.equal(c.view(bits), v.view(bits)), dtype
    w = torch.randn(5, requires_grad=True)
    ex._no_grad_copy(w).sum().backward()
    assert torch.equal(w.grad, torch.zeros(5))


def test_embedding_padding_idx_gradient_matches_torch(tmp_path):
    """The gradient of an nn.Embedding(padding_idx=0) table whose ids hold
    token 0: pipeopt's (reference build, --save-grads) equals
    torch.autograd's, row 0 included (only the tied head's gradient)."""
    comp, run = _binaries()
    torch.manual_seed(0)
    m = PaddedLm().eval()
    ids = torch.randint(0, 32, (4, 8))
    ids[0, :3] = 0
    ids[3, 5] = 0
    tgt = torch.randint(0, 32, (4, 8))
    step = ex.export_training_step(m, ids, "cross_entropy", tgt,
                                   num_microbatches=2)
    assert any(n.startswith("padding_idx: embed is nn.Embedding(padding_idx"
                            "=0)") for n in step.notes), step.notes
    assert step.args[0].names == ["embed.weight", "head.weight"]
    flags = step.write(str(tmp_path), ids, tgt)
    so = os.path.join(str(tmp_path), "ref.so")
    cmd = [comp, os.path.join(str(tmp_path), "model.mlir"), "--reference",
           "--optimizer", "none", "-o", so] + step.compile_flags()
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, "%s\n%s%s" % (" ".join(cmd), r.stdout,
                                            r.stderr)
    out = os.path.join(str(tmp_path), "run")
    cmd = [run, so, "--save-grads", "--output-dir", out, "--quiet"] + flags
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, "%s\n%s%s" % (" ".join(cmd), r.stdout,
                                            r.stderr)
    logits = m(ids)
    loss = F.cross_entropy(logits.reshape(-1, 32), tgt.reshape(-1))
    loss.backward()
    assert rel_err(np.load(os.path.join(out, "loss.npy")),
                   loss.detach().numpy()) <= 1e-6
    grad = np.load(os.path.join(out, "grad_0.npy"))
    ref = m.embed.weight.grad.numpy()
    # Row 0's gradient is the head's alone; the lookups' would be as large.
    assert np.abs(ref[0]).max() > 0.1 * np.abs(ref).max()
    assert rel_err(grad[0], ref[0]) <= 1e-5, (grad[0], ref[0])
    assert rel_err(grad, ref) <= 1e-5
    for a in step.args[1:3]:
        assert rel_err(np.load(os.path.join(out, "grad_%d.npy" % a.index)),
                       dict(m.named_parameters())[a.name].grad.numpy()) \
            <= 1e-5, a.name


def test_callable_loss_and_mse():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 3))
    x = torch.randn(6, 6)
    y = torch.randn(6, 3)
    step = ex.export_training_step(
        m, (x,), lambda out, t: ((out - t) ** 2).mean() * 0.5, y,
        num_microbatches=3)
    assert step.loss == "none"
    assert [a.role for a in step.args][-2:] == ["data", "target"]
    assert step.microbatch_args == [4, 5]
    assert step.args[4].shape == (2, 6) and step.args[5].shape == (2, 3)
    assert "-> tensor<f32>" in step.mlir
    step = ex.export_training_step(m, x, "mse", y, num_microbatches=2)
    assert step.loss == "mse" and step.microbatch_args == [4]
    assert step.args[-1].role == "target" and step.args[-1].shape == (3, 3)
    assert step.args[-1].dtype == "f32"


def test_bad_arguments_raise_export_error():
    m = nn.Linear(4, 4)
    with pytest.raises(ex.ExportError, match="does not divide"):
        ex.export_training_step(m, torch.randn(5, 4), "mse",
                                num_microbatches=2)
    with pytest.raises(ex.ExportError, match="cross-entropy target"):
        ex.export_training_step(m, torch.randn(4, 4), "cross_entropy",
                                torch.randn(4, 4))
    with pytest.raises(ex.ExportError, match="loss must be"):
        ex.export_training_step(m, torch.randn(4, 4), "hinge")
    assert issubclass(ex.ExportError, ValueError)


def test_torch_export_failure_is_export_error():
    with pytest.raises(ex.ExportError,
                       match="torch_mlir.fx.export_and_import failed on "
                             "Branchy"):
        ex.export_training_step(Branchy(), torch.randn(2, 4), "mse")


def test_foreign_op_names_op_and_location():
    with pytest.raises(ex.ExportError) as e:
        ex.export_training_step(Cumsum(), torch.randn(2, 4, 4), "mse")
    msg = str(e.value)
    assert "ops pipeopt cannot take" in msg
    assert "tm_tensor.scan" in msg
    assert "test_export.py" in msg  # the torch location of the cumsum


def test_attention_mask_auto_removes_scan():
    torch.manual_seed(0)
    m = CumsumMasked()
    ids = torch.randint(0, 16, (4, 8))
    with pytest.raises(ex.ExportError, match="tm_tensor.scan"):
        ex.export_training_step(m, {"input_ids": ids}, "cross_entropy",
                                attention_mask="none")
    step = ex.export_training_step(m, {"input_ids": ids}, "cross_entropy",
                                   num_microbatches=2)
    assert "tm_tensor" not in step.mlir
    assert any("all-ones i64 mask" in n and "tm_tensor.scan" in n
               for n in step.notes), step.notes
    assert [a.role for a in step.args].count("data") == 1


# ---------------------------------------------------------------------------
# Training with pipeopt against torch.optim.AdamW.
# ---------------------------------------------------------------------------

STEPS = 3
ADAMW = dict(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
# Loss: pipeopt against torch.optim (f32).
LOSS_RTOL = 1e-5
# Weights after 3 AdamW steps, per tensor, against torch in float64:
# max|pipeopt - torch64| <= max(WEIGHT_RTOL, 2 * err(torch32)) * max|torch64|
# where err(torch32) is torch's own f32 error. AdamW divides each gradient by
# its root mean square, so an element whose gradient is small amplifies f32
# rounding (torch's as pipeopt's, summed in different orders) into steps of
# order lr: torch f32 itself is only ~1e-5..1e-3 from f64 on these models.
WEIGHT_RTOL = 1e-4


def _binaries():
    comp = os.path.join(BIN_DIR, "pipeopt-compile")
    run = os.path.join(BIN_DIR, "pipeopt-run")
    for b in (comp, run):
        if not os.access(b, os.X_OK):
            pytest.skip("needs %s (build pipeopt, or set PIPEOPT_BIN_DIR)"
                        % b)
    return comp, run


def torch_adamw(module, inputs, target, steps=STEPS):
    """torch.optim.AdamW (foreach=False) on the whole batch, the cross
    entropy a mean over every position, eval mode: the loss before each
    step, every parameter afterwards and its first gradient (by every
    name, tied ones included)."""
    module.eval()
    params = list(module.parameters())  # tied ones once
    opt = torch.optim.AdamW(params, foreach=False, amsgrad=False, **ADAMW)
    losses, grads = [], {}
    for k in range(steps):
        opt.zero_grad(set_to_none=True)
        logits = module(**inputs).logits
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               target.reshape(-1))
        loss.backward()
        losses.append(loss.item())
        if k == 0:
            grads = {n: p.grad.detach().double().numpy().copy()
                     for n, p in module.named_parameters(
                         remove_duplicate=False)}
        opt.step()
    weights = {n: p.detach().numpy().copy()
               for n, p in module.named_parameters(remove_duplicate=False)}
    return np.array(losses), weights, grads


def adam_step_bound(b1, b2, t):
    """max |m_hat_t| / sqrt(v_hat_t) over every gradient sequence (as in
    scripts/export-torch-cases.py): one AdamW step moves an element by at
    most lr times this."""
    s = sum((b1 * b1 / b2) ** j for j in range(t))
    return ((1 - b1) / (1 - b1 ** t) * np.sqrt((1 - b2 ** t) / (1 - b2))
            * np.sqrt(s))


def train_with_pipeopt(step, inputs, target, workdir):
    comp, run = _binaries()
    flags = step.write(str(workdir), inputs, target)
    so = os.path.join(str(workdir), "step.so")
    cmd = [comp, os.path.join(str(workdir), "model.mlir"),
           "--num-stages", "2", "--schedule", "1f1b", "--optimizer", "adamw",
           "--lr", repr(ADAMW["lr"]),
           "--betas", ",".join(map(repr, ADAMW["betas"])),
           "--eps", repr(ADAMW["eps"]),
           "--weight-decay", repr(ADAMW["weight_decay"]),
           "-O", "1", "-o", so] + step.compile_flags()
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, "%s\n%s%s" % (" ".join(cmd), r.stdout,
                                            r.stderr)
    out = os.path.join(str(workdir), "run")
    cmd = [run, so, "--steps", str(STEPS), "--threads", "1", "--output-dir",
           out, "--quiet"] + flags
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, "%s\n%s%s" % (" ".join(cmd), r.stdout,
                                            r.stderr)
    losses = np.load(os.path.join(out, "loss.npy")).reshape(-1)
    weights = {}
    for a in step.args:
        if a.role == "parameter":
            weights[a.index] = np.load(os.path.join(out,
                                                    "weight_%d.npy" % a.index))
    return losses, weights


def rel_err(a, ref):
    a = np.asarray(a, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    scale = np.abs(ref).max()
    return float(np.abs(a - ref).max() / (scale if scale > 0 else 1.0))


def check_training(model_builder, tmp_path):
    transformers = pytest.importorskip(
        "transformers", reason="needs transformers (pip install transformers)")
    _binaries()
    torch.manual_seed(0)
    model = model_builder(transformers)
    model64 = copy.deepcopy(model).double()
    ids = torch.randint(0, 128, (4, 16))
    target = torch.randint(0, 128, (4, 16))
    inputs = {"input_ids": ids}
    step = ex.export_training_step(model, inputs, "cross_entropy", target,
                                   num_microbatches=2)
    assert "tm_tensor" not in step.mlir
    assert step.args[-1].role == "target" and step.args[-1].shape == (2, 16)
    p_losses, p_weights = train_with_pipeopt(step, inputs, target, tmp_path)
    t_losses, t_weights, g32 = torch_adamw(model, inputs, target)
    _, w64, g64 = torch_adamw(model64, inputs, target)
    # Elements whose gradient is zero in exact arithmetic but not in f32
    # (the key bias of softmax attention): f32 noise that AdamW turns into
    # steps of up to lr * adam_step_bound, in any direction, on both sides.
    # (Exactly zero in f32 too, e.g. unused embedding rows: weight decay
    # alone, compared as the rest.)
    largest = max(np.abs(g).max() for g in g64.values())
    b1, b2 = ADAMW["betas"]
    noise_atol = 2 * ADAMW["lr"] * sum(adam_step_bound(b1, b2, t)
                                       for t in range(1, STEPS + 1))
    rows = []
    for a in step.args:
        if a.role != "parameter":
            continue
        for n in a.names:  # tied names: the same trained tensor
            p, t32, t64 = (p_weights[a.index].astype(np.float64),
                           t_weights[n].astype(np.float64), w64[n])
            zero = (np.abs(g64[n]) <= 1e-12 * largest) & (g32[n] != 0)
            if zero.any():
                assert np.abs(p - t64)[zero].max() <= noise_atol, n
            keep = ~zero
            if not keep.any():
                continue
            rows.append((n, rel_err(p[keep], t32[keep]),
                         rel_err(p[keep], t64[keep]),
                         rel_err(t32[keep], t64[keep]), int(zero.sum())))
    loss_err = rel_err(p_losses, t_losses)
    worst32 = max(rows, key=lambda r: r[1])
    print("\n%s: loss per step pipeopt %s, torch %s (rel err %.2e); "
          "weights after %d AdamW steps, max rel err vs torch f32 %.2e (%s), "
          "vs torch f64 %.2e (torch f32 vs f64 %.2e); %d elements of exact "
          "gradient zero but f32 noise compared with atol %.3g" % (
              type(model).__name__, np.array2string(p_losses, precision=7),
              np.array2string(t_losses, precision=7), loss_err, STEPS,
              worst32[1], worst32[0], max(r[2] for r in rows),
              max(r[3] for r in rows), sum(r[4] for r in rows), noise_atol))
    assert p_losses.shape == (STEPS,)
    assert loss_err <= LOSS_RTOL
    for n, e32, e64, t_err, _ in rows:
        assert e64 <= max(WEIGHT_RTOL, 2 * t_err), (n, e32, e64, t_err)
    moved = max(np.abs(t_weights[a.name] - step.parameters[a.name]).max()
                for a in step.args if a.role == "parameter")
    assert moved > 1e-3  # the weights did train
    return step


def _gpt2(transformers):
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2,
                                  vocab_size=128, n_positions=32,
                                  bos_token_id=0, eos_token_id=0,
                                  initializer_range=0.2)
    return transformers.GPT2LMHeadModel(cfg)


def _llama(transformers):
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=64,
                                   intermediate_size=128,
                                   num_hidden_layers=2,
                                   num_attention_heads=4,
                                   num_key_value_heads=2,
                                   max_position_embeddings=32,
                                   initializer_range=0.2)
    return transformers.LlamaForCausalLM(cfg)


def test_gpt2_trains_like_torch_adamw(tmp_path):
    step = check_training(_gpt2, tmp_path)
    assert step.args[0].names == ["transformer.wte.weight", "lm_head.weight"]


def test_llama_gqa_trains_like_torch_adamw(tmp_path):
    step = check_training(_llama, tmp_path)
    bufs = [a for a in step.args if a.role == "buffer"]
    assert "model.rotary_emb.inv_freq" in [a.name for a in bufs]
    assert not any(a.index in step.trainable for a in bufs)
