"""The core API (pipeopt.compile, pipeopt.Session) with NumPy only.

The references are computed here, independently of pipeopt: the 4-layer MLP
of examples/mlp4.tosa.mlir in float64 NumPy, its MSE loss and gradients by
hand (the chain rule), and SGD / AdamW updates as torch.optim defines them.
"""

import os
from pathlib import Path

import numpy as np
import pytest

import pipeopt

SOURCE = Path(os.environ.get("PIPEOPT_SOURCE_DIR",
                             Path(__file__).resolve().parents[2]))
MLP4 = SOURCE / "examples" / "mlp4.tosa.mlir"
M = 4  # microbatches
SIZES = [64, 128, 128, 128, 16]


def mlp4_params(rng):
    params = []
    for i in range(4):
        params.append((rng.standard_normal(
            (1, SIZES[i], SIZES[i + 1])) / np.sqrt(SIZES[i])).astype(np.float32))
        params.append((0.1 * rng.standard_normal(
            (1, 1, SIZES[i + 1]))).astype(np.float32))
    return params


def mlp4_forward(x, params):
    """x: [rows, 64] float64; returns the output and the activations."""
    acts = [x]
    h = x
    for i in range(4):
        w, b = params[2 * i][0], params[2 * i + 1][0, 0]
        h = h @ w + b
        if i < 3:
            h = np.maximum(h, 0.0)
        acts.append(h)
    return h, acts


def mlp4_mse_grads(x, t, params):
    """Loss (mean over every element) and the gradient of every parameter."""
    p64 = [p.astype(np.float64) for p in params]
    y, acts = mlp4_forward(x, p64)
    loss = np.mean((y - t)**2)
    g = 2.0 * (y - t) / y.size
    grads = [None] * 8
    for i in reversed(range(4)):
        w = p64[2 * i][0]
        grads[2 * i] = (acts[i].T @ g)[None]
        grads[2 * i + 1] = g.sum(axis=0)[None, None]
        g = g @ w.T
        if i > 0:
            g = g * (acts[i] > 0)
    return loss, grads


def assert_sgd_matches_numpy(x, t, params, lr, steps, losses, trained):
    """`losses` (one per step) and `trained` (input index -> weight) are
    those of `steps` SGD steps on the whole batch x, t from `params`, in
    float64 NumPy."""
    ref = [p.astype(np.float64) for p in params]
    xr = x.reshape(-1, 64).astype(np.float64)
    tr = t.reshape(-1, 16).astype(np.float64)
    for step in range(steps):
        loss, grads = mlp4_mse_grads(xr, tr, ref)
        np.testing.assert_allclose(losses[step], loss, rtol=1e-5)
        ref = [p - lr * g for p, g in zip(ref, grads)]
    for i in range(8):
        np.testing.assert_allclose(trained[i + 1], ref[i], rtol=1e-5,
                                   atol=1e-6)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("core")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((M, 8, 64)).astype(np.float32)
    t = rng.standard_normal((M, 8, 16)).astype(np.float32)
    return x, t, mlp4_params(rng)


def test_inference_matches_numpy(workdir, data):
    x, _, params = data
    build = pipeopt.compile(MLP4, workdir / "mlp4.so", num_stages=2,
                            num_microbatches=M)
    assert build.num_ranks == 2 and build.num_microbatches == M
    assert build.schedule_grid()[0] == ["F0.0", "F0.1", "F0.2", "F0.3"]
    with pipeopt.Session(build) as s:
        s.set_input(0, x)  # the whole batch [M*1, 8, 64]
        for i, p in enumerate(params):
            s.set_input(i + 1, p)
        s.run()
        y = s.output(0)
    assert y.shape == (M, 1, 8, 16)
    p64 = [p.astype(np.float64) for p in params]
    for k in range(M):
        ref, _ = mlp4_forward(x[k].astype(np.float64), p64)
        np.testing.assert_allclose(y[k, 0], ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
def test_training_steps_match_numpy_sgd(workdir, data, schedule):
    x, t, params = data
    lr = 0.05
    build = pipeopt.compile(MLP4, workdir / f"mlp4-{schedule}.so",
                            num_stages=2, num_microbatches=M, train=True,
                            loss="mse", optimizer="sgd", lr=lr,
                            schedule=schedule)
    assert build.training["optimizer"] == "sgd"
    steps = 3
    with pipeopt.Session(build) as s:
        s.set_input(0, x)
        s.set_input(9, t)  # the target, microbatched like x
        for i, p in enumerate(params):
            s.set_input(i + 1, p)
        for _ in range(steps):  # one call per step, as a training loop does
            s.run(1)
        losses = s.losses()
        trained = s.weights()
        assert s.steps_done == steps
    with pytest.raises(pipeopt.UsageError, match="closed"):
        s.run(1)
    assert_sgd_matches_numpy(x, t, params, lr, steps, losses, trained)


@pytest.mark.parametrize("zero", [0, 1])
def test_data_parallel_matches_numpy_on_the_global_batch(workdir, data, zero):
    """Two replicas of the 2-rank 1F1B pipeline (4 loopback ranks), each on
    its half of a global batch of 2 x M microbatches, train like one model
    on the whole global batch (NumPy's gradient of the mean loss over it),
    with the gradients all-reduced (zero=0) or the optimizer sharded
    (zero=1)."""
    _, _, params = data
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2 * M, 8, 64)).astype(np.float32)
    t = rng.standard_normal((2 * M, 8, 16)).astype(np.float32)
    lr = 0.05
    build = pipeopt.compile(MLP4, workdir / "mlp4-dp.so", num_stages=2,
                            num_microbatches=M, train=True, loss="mse",
                            optimizer="sgd", lr=lr, schedule="1f1b")
    steps = 3
    with pipeopt.Session(build, data_parallel=2, zero=zero) as s:
        with pytest.raises(pipeopt.UsageError, match="global batch"):
            s.set_input(0, x[:M])  # one replica's share is not enough
        s.set_input(0, x)
        s.set_input(9, t)
        for i, p in enumerate(params):
            s.set_input(i + 1, p)
        for _ in range(steps):
            s.run(1)
        losses = s.losses()
        trained = s.weights()
    assert_sgd_matches_numpy(x, t, params, lr, steps, losses, trained)


def test_adamw_checkpoint_resume_equals_uninterrupted(workdir, data):
    x, t, params = data
    build = pipeopt.compile(MLP4, workdir / "mlp4-adamw.so", num_stages=2,
                            num_microbatches=M, train=True, loss="mse",
                            optimizer="adamw", lr=1e-3, weight_decay=0.01)

    def session():
        s = pipeopt.Session(build)
        s.set_input(0, x)
        s.set_input(9, t)
        for i, p in enumerate(params):
            s.set_input(i + 1, p)
        return s

    whole = session()
    whole.run(4)
    first = session()
    first.run(2)
    first.save_checkpoint(workdir / "ckpt")
    second = session()
    second.resume(workdir / "ckpt")
    second.run(2)
    assert second.steps_done == 4
    np.testing.assert_array_equal(second.losses(), whole.losses())
    for index, w in whole.weights().items():
        np.testing.assert_array_equal(second.weight(index), w)


def test_compile_errors_carry_diagnostics(workdir):
    bad = ("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
           "  %0 = tosa.bogus %a : (tensor<2xf32>) -> tensor<2xf32>\n"
           "  return %0 : tensor<2xf32>\n}\n")
    with pytest.raises(pipeopt.CompileError, match=r":2:8: error: .*tosa.bogus"):
        pipeopt.compile(bad, workdir / "bad.so", num_stages=1)
    with pytest.raises(pipeopt.CompileError, match="num-stages must be"):
        pipeopt.compile(MLP4, workdir / "bad2.so", num_stages=0)
    with pytest.raises(TypeError, match="did you mean num_stages"):
        pipeopt.compile(MLP4, workdir / "bad3.so", num_stage=2)
    with pytest.raises(TypeError, match="takes True or False"):
        pipeopt.compile(MLP4, workdir / "bad4.so", train="yes")
    assert not (workdir / "bad.so").exists()
    assert not (workdir / "bad2.so").exists()


def test_session_usage_errors_leave_it_usable(workdir, data):
    x, _, params = data
    build = pipeopt.compile(MLP4, workdir / "mlp4u.so", num_stages=2,
                            num_microbatches=M)
    s = pipeopt.Session(build)
    with pytest.raises(pipeopt.UsageError, match="microbatched"):
        s.set_input(0, np.ones((3, 3), np.float32))
    with pytest.raises(pipeopt.UsageError, match="unsupported element type"):
        s.set_input(0, np.ones((M, 8, 64), np.uint16))
    with pytest.raises(pipeopt.UsageError):
        s.set_input(99, x)
    with pytest.raises(pipeopt.UsageError, match="was not set"):
        s.run()
    s.set_input(0, x)
    for i, p in enumerate(params):
        s.set_input(i + 1, p)
    s.run()
    assert s.output(0).shape == (M, 1, 8, 16)
    with pytest.raises(pipeopt.UsageError):
        pipeopt.Session(workdir / "missing.so")


def test_reports_partition_grid_and_simulation(workdir):
    build = pipeopt.compile(MLP4, workdir / "mlp4-rep.so", num_stages=2,
                            num_microbatches=M, train=True, loss="mse",
                            save_temps=True)
    part = build.partition_report()
    assert part["num_stages"] == 2 and len(part["stages"]) == 2
    assert part["bottleneck_s"] >= part["lower_bound_s"] > 0
    grid = build.schedule_grid()
    # 1F1B on 2 ranks, 4 microbatches: rank 1 alternates F and B from the
    # start; every rank runs M forwards and M backwards.
    assert grid[1][:2] == ["F1.0", "BW1.0"]
    for row in grid:
        assert sum(a.startswith("F") for a in row) == M
        assert sum(a.startswith("B") for a in row) == M
    sim = build.simulate()
    assert sim["device"] == "cpu"
    rows = [r for r in sim["rows"] if r.get("available")]
    assert rows and all(r["bubble_ratio"] >= 0 for r in rows)
    assert "1f1b" in build.report() and "rank 1: F1.0 BW1.0" in build.report()
    # A reference build is not partitioned.
    ref = pipeopt.compile(MLP4, workdir / "mlp4-ref.so", reference=True,
                          num_microbatches=M)
    assert ref.partition_report() is None and ref.num_ranks == 1


def test_weights_and_optimizer_state_between_steps(workdir, data):
    """One-step runs without gathering, set_weight between steps and the
    optimizer state, against the NumPy SGD-with-momentum reference."""
    x, t, params = data
    lr, mu = 0.05, 0.9
    build = pipeopt.compile(MLP4, workdir / "mlp4-mom.so", num_stages=2,
                            num_microbatches=M, train=True, loss="mse",
                            optimizer="momentum", lr=lr, momentum=mu)
    s = pipeopt.Session(build, gather_after_run=False)
    s.set_inputs({0: x, 9: t})
    s.set_inputs({i + 1: p for i, p in enumerate(params)})
    s.run(1)
    # Replace w0 between steps; the momentum buffers are kept.
    new_w0 = (0.5 * params[0]).astype(np.float32)
    s.set_weight(1, new_w0)
    s.run(1)
    xr = x.reshape(-1, 64).astype(np.float64)
    tr = t.reshape(-1, 16).astype(np.float64)
    ref = [p.astype(np.float64) for p in params]
    buf = [np.zeros_like(p) for p in ref]
    for step in range(2):
        if step == 1:
            ref[0] = new_w0.astype(np.float64)
        _, grads = mlp4_mse_grads(xr, tr, ref)
        buf = [mu * b + g for b, g in zip(buf, grads)]
        ref = [p - lr * b for p, b in zip(ref, buf)]
    for i in range(8):
        np.testing.assert_allclose(s.weight(i + 1), ref[i], rtol=1e-5,
                                   atol=1e-6)
    state = s.optimizer_state(1)
    assert state["step"] == 2
    np.testing.assert_allclose(state["first"], buf[0], rtol=1e-5, atol=1e-7)
    # The state round-trips: zeroing the buffer changes the next update to
    # plain SGD on the new gradient.
    s.set_optimizer_state(1, np.zeros_like(state["first"]), state["second"],
                          state["step"])
    before = s.weight(1).astype(np.float64)
    _, grads = mlp4_mse_grads(xr, tr, [s.weight(i + 1).astype(np.float64)
                                       for i in range(8)])
    s.run(1)
    np.testing.assert_allclose(s.weight(1), before - lr * grads[0], rtol=1e-5,
                               atol=1e-6)
    with pytest.raises(pipeopt.UsageError):
        s.set_weight(1, np.zeros((3, 3), np.float32))


def test_inputs_from_npz_and_directory(workdir, data):
    x, t, params = data
    build = pipeopt.compile(MLP4, workdir / "mlp4-npz.so", num_stages=2,
                            num_microbatches=M)
    arrays = {f"arg_{i + 1}": p for i, p in enumerate(params)}
    np.savez(workdir / "inputs.npz", x, **arrays)  # x is "arr_0": unknown
    s = pipeopt.Session(build)
    with pytest.raises(pipeopt.UsageError, match="arr_0"):
        s.set_inputs(workdir / "inputs.npz")
    np.savez_compressed(workdir / "inputs2.npz", arg_0=x, **arrays)
    s.set_inputs(workdir / "inputs2.npz")
    s.run()
    d = workdir / "inputs-dir"
    d.mkdir()
    np.save(d / "0.npy", x)
    for i, p in enumerate(params):
        np.save(d / f"{i + 1}.npy", p)
    s2 = pipeopt.Session(build)
    s2.set_inputs(d)
    s2.run()
    np.testing.assert_array_equal(s.output(0), s2.output(0))


SCALE = """
#m0 = affine_map<(d0, d1) -> ()>
#m1 = affine_map<(d0, d1) -> (d0, d1)>
func.func @scale(%x: tensor<2x8xf32>, %a: tensor<f32>) -> tensor<2x8xf32> {
  %e = tensor.empty() : tensor<2x8xf32>
  %r = linalg.generic {indexing_maps = [#m1, #m0, #m1],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %a : tensor<2x8xf32>, tensor<f32>) outs(%e : tensor<2x8xf32>) {
  ^bb0(%i: f32, %s: f32, %o: f32):
    %m = arith.mulf %i, %s : f32
    linalg.yield %m : f32
  } -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}
"""


def test_zero_d_inputs_and_argument_errors(workdir):
    build = pipeopt.compile(SCALE, workdir / "scale.so", reference=True,
                            num_microbatches=2, microbatch_args=[0])
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    with pipeopt.Session(build) as s:
        s.set_input(0, x)
        s.set_input(1, np.float32(3.0))  # a 0-d input stays 0-d
        s.run()
        np.testing.assert_array_equal(s.output(0).reshape(4, 8), 3 * x)
        with pytest.raises(TypeError, match="index .* or a name"):
            s.set_input(1.0, x)
    with pytest.raises(pipeopt.UsageError, match="timeout_s"):
        pipeopt.Session(build, timeout_s=0)
    with pytest.raises(pipeopt.UsageError, match="empty"):
        pipeopt.compile("")
    with pytest.raises(pipeopt.UsageError, match="not a file"):
        pipeopt.compile(workdir)
    # A value the option parser refuses is in the exception's message.
    with pytest.raises(pipeopt.CompileError, match="num-stages.*2.5"):
        pipeopt.compile(MLP4, workdir / "bad5.so", num_stages=2.5)
    # NumPy arrays give list options.
    b = pipeopt.compile(MLP4, workdir / "betas.so", train=True, loss="mse",
                        optimizer="adamw", betas=np.array([0.8, 0.9]))
    assert b.training["beta1"] == 0.8 and b.training["beta2"] == 0.9
