#!/usr/bin/env python3
"""Sequential reference for asynchronous pipeline schedules (PipeDream,
PipeDream-2BW) on Inputs/mlp2-relu.mlir with loss mse and SGD.

The model has two weight blocks, w1 (stage 0, argument 1) and w2 (stage 1,
argument 2): y = relu(x @ w1) @ w2, loss = mean((y - t)^2). The script
replays the schedule of the manifest (each rank's "actions", repeated for
every step) in an order that respects the pipeline's dependencies, with the
staleness model of asynchronous pipelines (Ilin & Richtarik, arXiv
2606.03498; Narayanan et al. SOSP'19 for weight stashing): the forward of
microbatch m on stage j reads the current version of block j; the backward
of m on stage j computes the gradient of block j at the versions microbatch
m's forwards read (w1 as read by F(0, m), w2 as read by F(1, m)) and, every
`update_every` backwards of stage j (the manifest's "training"), block j is
updated by SGD with the mean of those gradients. Everything in double
precision in plain Python (no numpy), independently of pipeopt's runtime.

Writes DIR/weight_1.npy, DIR/weight_2.npy (f32) and DIR/loss.npy (f32[steps],
the mean over microbatches of the loss each forward computed). With
--no-stash the backward uses the block's current version instead of the
stashed one, and with --update-every K overrides the manifest: variants that
must NOT match pipeopt's run.

Usage: async-reference.py MANIFEST INPUTS_DIR OUT_DIR --steps N
         [--no-stash] [--update-every K]
"""

import argparse
import importlib.util
import json
import os

# The .npy reader and writer of test/Runtime/Inputs/linear-mse-reference.py.
_spec = importlib.util.spec_from_file_location(
    "npyio", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                          "Runtime", "Inputs", "linear-mse-reference.py"))
_npyio = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_npyio)


def load(path):
    """A float32 .npy as (shape, nested lists of floats)."""
    shape, flat = _npyio.read(path)

    def nest(values, dims):
        if len(dims) == 1:
            return list(values)
        step = len(values) // dims[0]
        return [nest(values[i * step:(i + 1) * step], dims[1:])
                for i in range(dims[0])]
    return nest(list(flat), list(shape))


def save(path, rows):
    """A matrix (list of rows) or a vector as a float32 .npy."""
    if rows and isinstance(rows[0], list):
        _npyio.write(path, (len(rows), len(rows[0])),
                     [v for row in rows for v in row])
    else:
        _npyio.write(path, (len(rows),), rows)


def matmul(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(len(b)))
             for j in range(len(b[0]))] for i in range(len(a))]


def transpose(a):
    return [list(col) for col in zip(*a)]


def combine(a, b, f):
    return [[f(x, y) for x, y in zip(ra, rb)] for ra, rb in zip(a, b)]


def copy(a):
    return [list(r) for r in a]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("inputs")
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--no-stash", action="store_true")
    ap.add_argument("--update-every", type=int, default=None)
    a = ap.parse_args()
    with open(a.manifest) as f:
        m = json.load(f)
    tr = m["training"]
    assert tr["optimizer"] == "sgd" and tr.get("weight_decay", 0) == 0
    lr = tr["lr"]
    k = a.update_every if a.update_every is not None else tr["update_every"]
    M = m["num_microbatches"]
    x = load(os.path.join(a.inputs, "input_0.npy"))
    t = load(os.path.join(a.inputs, "input_3.npy"))
    w = {0: load(os.path.join(a.inputs, "input_1.npy")),
         1: load(os.path.join(a.inputs, "input_2.npy"))}
    # Which rank runs each stage (one stage per rank for these schedules).
    stage_rank = m["stage_rank"]
    assert stage_rank == [0, 1], stage_rank
    for p in m["parameters"]:
        assert p["ranks"] == [p["index"] - 1], m["parameters"]

    def forward(w1, w2, mb):
        h = matmul(x[mb], w1)
        r = [[max(v, 0.0) for v in row] for row in h]
        return h, r, matmul(r, w2)

    def zeros(like):
        return [[0.0] * len(like[0]) for _ in like]

    def mse(y, target):
        n = len(y) * len(y[0])
        return sum((v - u) ** 2 for ry, rt in zip(y, target)
                   for v, u in zip(ry, rt)) / n

    pending = {0: zeros(w[0]), 1: zeros(w[1])}
    count = {0: 0, 1: 0}
    losses = []
    for step in range(a.steps):
        read = {}  # (stage, mb) -> version of its block read by F
        done = set()
        pos = [0, 0]
        step_loss = 0.0
        actions = m["actions"]
        while pos[0] < len(actions[0]) or pos[1] < len(actions[1]):
            progressed = False
            for r in (0, 1):
                if pos[r] >= len(actions[r]):
                    continue
                act = actions[r][pos[r]]
                j, mb, kind = act["stage"], act["microbatch"], act["kind"]
                if kind == "F":
                    if j == 1 and ("F", 0, mb) not in done:
                        continue
                    read[(j, mb)] = copy(w[j])
                    if j == 1:
                        _, _, y = forward(read[(0, mb)], read[(1, mb)], mb)
                        step_loss += mse(y, t[mb])
                else:
                    assert kind == "BW", kind
                    if j == 0 and ("BW", 1, mb) not in done:
                        continue
                    w1 = w[0] if a.no_stash else read[(0, mb)]
                    w2 = w[1] if a.no_stash else read[(1, mb)]
                    h, rr, y = forward(w1, w2, mb)
                    n = len(y) * len(y[0])
                    dy = combine(y, t[mb], lambda v, u: 2 * (v - u) / n)
                    if j == 1:
                        g = matmul(transpose(rr), dy)
                    else:
                        dh = combine(matmul(dy, transpose(w2)), h,
                                     lambda d, v: d if v > 0 else 0.0)
                        g = matmul(transpose(x[mb]), dh)
                    pending[j] = combine(pending[j], g, lambda p, q: p + q)
                    count[j] += 1
                    if count[j] == k:
                        w[j] = combine(w[j], pending[j],
                                       lambda v, p: v - lr * p / k)
                        pending[j] = zeros(w[j])
                        count[j] = 0
                done.add((kind, j, mb))
                pos[r] += 1
                progressed = True
            assert progressed, "the schedule deadlocks"
        losses.append(step_loss / M)
    os.makedirs(a.out, exist_ok=True)
    save(os.path.join(a.out, "weight_1.npy"), w[0])
    save(os.path.join(a.out, "weight_2.npy"), w[1])
    save(os.path.join(a.out, "loss.npy"), losses)


if __name__ == "__main__":
    main()
