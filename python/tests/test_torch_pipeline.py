"""pipeopt.torch against torch's own training (skipped without torch,
torch-mlir or transformers: CI runs the NumPy tests only).

Reference: the same module trained by torch.optim in float32 (what a user
compares with) and in float64 (the truth both float32 runs approximate).
Losses must agree with torch's float32 losses to 1e-5 relative; every
trained tensor must be as close to the float64 training as torch's own
float32 training is, within a factor of 5 (max |pipeopt - f64| <= 5 max
|torch f32 - f64|, per tensor): both are float32 computations whose
rounding differs (summation order, fused kernels) and AdamW's normalized
steps amplify it alike.
"""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs torch (pip install torch)")
pytest.importorskip("torch_mlir", reason="needs torch-mlir (pip install "
                    "torch-mlir)")
transformers = pytest.importorskip("transformers",
                                   reason="needs transformers")

import pipeopt  # noqa: E402
import pipeopt.torch  # noqa: E402

F64_FACTOR = 5.0


def train_torch(model, inputs, targets, make_opt, steps, dtype):
    m = copy.deepcopy(model).to(dtype)
    m.eval()  # dropout off, as the export
    opt = make_opt(m.parameters())
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        out = m(inputs)
        logits = out.logits if hasattr(out, "logits") else out
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses), m.state_dict()


def check_against_torch(pipe, model, inputs, targets, make_opt, steps):
    losses = np.array([pipe.step(inputs, targets).item() for _ in range(steps)])
    l32, s32 = train_torch(model, inputs, targets, make_opt, steps,
                           torch.float32)
    _, s64 = train_torch(model, inputs, targets, make_opt, steps,
                         torch.float64)
    np.testing.assert_allclose(losses, l32, rtol=1e-5)
    mine = pipe.state_dict()
    assert list(mine) == list(model.state_dict())
    for name, ref in s64.items():
        if not ref.is_floating_point():
            assert torch.equal(mine[name], s32[name]), name
            continue
        ours = (mine[name].double() - ref).abs().max().item()
        theirs = (s32[name].double() - ref).abs().max().item()
        assert ours <= F64_FACTOR * theirs + 1e-9, (
            f"{name}: pipeopt is {ours:.3g} from the float64 training, "
            f"torch float32 {theirs:.3g}")
    return losses


def tiny_gpt2():
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2,
                                  vocab_size=128, n_positions=32,
                                  bos_token_id=0, eos_token_id=0)
    return transformers.GPT2LMHeadModel(cfg)


def tiny_llama():
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128,
                                   num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=128,
                                   max_position_embeddings=32, bos_token_id=0,
                                   eos_token_id=0, pad_token_id=0)
    return transformers.LlamaForCausalLM(cfg)


def batch(vocab=128, rows=8, seq=16, seed=1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (rows, seq + 1), generator=g)
    return ids[:, :-1], ids[:, 1:]


def test_gpt2_adamw_1f1b_matches_torch(tmp_path):
    model = tiny_gpt2()
    inputs, targets = batch()

    def make_opt(params):
        return torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)

    pipe = pipeopt.torch.pipeline(model, inputs, "cross_entropy",
                                  num_stages=2, num_microbatches=4,
                                  optimizer=make_opt(model.parameters()),
                                  workdir=tmp_path)
    assert pipe.build.num_ranks == 2 and pipe.build.schedule == "1f1b"
    assert any("tied" in n for n in pipe.notes)
    check_against_torch(pipe, model, inputs, targets, make_opt, steps=6)
    # forward() with the trained weights equals torch's output for them.
    trained = copy.deepcopy(model)
    trained.load_state_dict(pipe.state_dict())
    trained.eval()
    with torch.no_grad():
        ref = trained(inputs).logits
    out = pipe.forward(inputs)
    assert out.shape == ref.shape
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)


def test_llama_momentum_zb_h1_matches_torch(tmp_path):
    model = tiny_llama()
    inputs, targets = batch()

    def make_opt(params):
        return torch.optim.SGD(params, lr=0.05, momentum=0.9)

    pipe = pipeopt.torch.pipeline(model, inputs, "cross_entropy",
                                  num_stages=2, num_microbatches=2,
                                  schedule="zb-h1",
                                  optimizer=make_opt(model.parameters()),
                                  workdir=tmp_path)
    assert pipe.build.training["optimizer"] == "momentum"
    check_against_torch(pipe, model, inputs, targets, make_opt, steps=4)


def test_checkpoint_save_load_continues_exactly(tmp_path):
    model = tiny_gpt2()
    inputs, targets = batch()
    kw = dict(num_stages=2, num_microbatches=4)
    a = pipeopt.torch.pipeline(model, inputs, "cross_entropy",
                               workdir=tmp_path / "a", **kw)
    for _ in range(4):
        a.step(inputs, targets)
    b = pipeopt.torch.pipeline(model, inputs, "cross_entropy",
                               workdir=tmp_path / "b", **kw)
    b.step(inputs, targets)
    b.step(inputs, targets)
    b.save(tmp_path / "ckpt")
    c = pipeopt.torch.pipeline(model, inputs, "cross_entropy",
                               workdir=tmp_path / "c", **kw)
    assert c.load(tmp_path / "ckpt") == 2
    c.step(inputs, targets)
    c.step(inputs, targets)
    np.testing.assert_array_equal(c.losses(), a.losses())
    for name, value in a.state_dict().items():
        assert torch.equal(c.state_dict()[name], value), name


def test_load_state_dict_before_training(tmp_path):
    model = tiny_gpt2()
    other = tiny_gpt2()
    with torch.no_grad():
        for p in other.parameters():
            p.mul_(0.5)
    inputs, targets = batch()
    pipe = pipeopt.torch.pipeline(model, inputs, "cross_entropy",
                                  num_stages=2, num_microbatches=4,
                                  optimizer=torch.optim.SGD(
                                      model.parameters(), lr=0.1),
                                  workdir=tmp_path)
    pipe.load_state_dict(other.state_dict())
    loss = pipe.step(inputs, targets).item()
    with torch.no_grad():
        logits = other.eval()(inputs).logits
        ref = torch.nn.functional.cross_entropy(logits.reshape(-1, 128),
                                                targets.reshape(-1)).item()
    assert loss == pytest.approx(ref, rel=1e-5)


def test_errors(tmp_path):
    model = tiny_gpt2()
    inputs, targets = batch()
    with pytest.raises(ValueError, match="amsgrad"):
        pipeopt.torch.optimizer_options(
            torch.optim.AdamW(model.parameters(), amsgrad=True))
    with pytest.raises(ValueError, match="L2"):
        pipeopt.torch.optimizer_options(
            torch.optim.Adam(model.parameters(), weight_decay=0.1))
    with pytest.raises(ValueError, match="not supported"):
        pipeopt.torch.optimizer_options(torch.optim.RMSprop(
            model.parameters()))
    pipe = pipeopt.torch.pipeline(model, inputs, "cross_entropy",
                                  num_stages=2, num_microbatches=4,
                                  workdir=tmp_path)
    with pytest.raises(pipeopt.UsageError, match=r"built for \(8, 16\)"):
        pipe.step(inputs[:4], targets[:4])
    with pytest.raises(pipeopt.UsageError, match="needs the targets"):
        pipe.step(inputs)


class TwoInputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 16)
        self.b = torch.nn.Linear(3, 16)
        self.c = torch.nn.Linear(16, 4)
        self.register_buffer("scale", torch.tensor([2.0]))

    def forward(self, x, z):
        return self.c(torch.tanh(self.a(x) + self.b(z))) * self.scale


def test_review_fixes_on_a_small_module(tmp_path):
    torch.manual_seed(3)
    model = TwoInputs()
    x, z, y = torch.randn(8, 8), torch.randn(8, 3), torch.randn(8, 4)
    # The optimizer's parameters are the trained ones (a and c frozen).
    opt = torch.optim.SGD(model.b.parameters(), lr=0.1)
    pipe = pipeopt.torch.pipeline(model, {"x": x, "z": z}, "mse",
                                  example_target=y, num_stages=2,
                                  num_microbatches=2, optimizer=opt,
                                  workdir=tmp_path)
    # Dict inputs are matched by key, not position.
    loss = pipe.step({"z": z, "x": x}, y)
    ref = copy.deepcopy(model)
    ref_opt = torch.optim.SGD(ref.b.parameters(), lr=0.1)
    ref_loss = torch.nn.functional.mse_loss(ref(x, z), y)
    ref_loss.backward()
    ref_opt.step()
    assert loss.item() == pytest.approx(ref_loss.item(), rel=1e-5)
    sd = pipe.state_dict()  # frozen parameters included
    for name, value in ref.state_dict().items():
        torch.testing.assert_close(sd[name], value, rtol=1e-5, atol=1e-6)
    # load_state_dict between steps sets buffers too, strictly.
    sd2 = dict(sd)
    sd2["scale"] = torch.tensor([10.0])
    pipe.load_state_dict(sd2)
    assert pipe.state_dict()["scale"].item() == 10.0
    ref.scale.fill_(10.0)
    with torch.no_grad():
        torch.testing.assert_close(pipe.forward({"x": x, "z": z}), ref(x, z),
                                   rtol=1e-5, atol=1e-5)
    with pytest.raises(pipeopt.UsageError, match="unexpected keys"):
        pipe.load_state_dict({**sd2, "extra": torch.zeros(1)})
    bad = dict(sd2)
    bad["a.weight"] = bad["a.weight"].reshape(8, 16)
    with pytest.raises(pipeopt.UsageError, match="shape"):
        pipe.load_state_dict(bad)
    with pytest.raises(pipeopt.UsageError, match="keys"):
        pipe.step({"x": x}, y)
    with pytest.raises(pipeopt.UsageError, match="float64"):
        pipe.step({"x": x.double(), "z": z}, y)
    with pytest.raises(ValueError, match="scheduler"):
        o = torch.optim.SGD(model.parameters(), lr=0.1)
        torch.optim.lr_scheduler.LinearLR(o)
        pipeopt.torch.optimizer_options(o)
    with pytest.raises(TypeError, match="sets lr"):
        pipeopt.torch.pipeline(model, {"x": x, "z": z}, "mse",
                               example_target=y, lr=0.5)
    with pytest.raises(pipeopt.UsageError, match="float32 modules"):
        pipeopt.torch.pipeline(copy.deepcopy(model).double(),
                               {"x": x.double(), "z": z.double()}, "mse")
    adamw = pipeopt.torch.optimizer_options(torch.optim.Adam(
        model.parameters(), weight_decay=0.1, decoupled_weight_decay=True))
    assert adamw["optimizer"] == "adamw" and adamw["weight_decay"] == 0.1
