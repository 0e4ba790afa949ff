#!/usr/bin/env python3
"""Asynchronous PipeDream against 1F1B on a real pipelined model: loss
against wall time, trained by pipeopt-run on this machine.

The simulated counterpart is pipeopt-converge (docs/Convergence.md); this
runs the real thing:

  * the model: an L-layer ReLU MLP (default 8 layers of width 128, written
    here as TOSA text: tosa.matmul + tosa.add + tosa.clamp, weights
    [1, in, out] and biases [1, 1, out] as arguments), microbatches of B
    rows (default 64), M microbatches per step (default 8), loss mse,
    plain SGD with the same learning rate for both schedules;
  * the data: one fixed training set of M x B rows (x ~ U(-1, 1), the
    target y = tanh(x A) with a fixed random A, seed --seed), fed every
    step, and the same initial weights (seed --seed) for both schedules;
  * the schedules: `pipeopt-compile --train --schedule 1f1b` (one update per
    stage per step with the mean of its M microbatch gradients) and
    `--schedule pipedream` (an update of a stage's weights after each of its
    backwards, forwards reading the newest weights and keeping that version
    for the backward: weight stashing), same S, M, lr, split
    (--partition-options strategy=params: L / S layers per stage);
  * the run: pipeopt-run over loopback (S threads of one process),
    --steps N; loss.npy (f32[N], the mean microbatch loss of each step) and
    the per-step times pipeopt-run prints ('step i/N: loss X (T s)', the
    slowest rank's step) give loss against wall time (cumulative step
    times) of the fastest of --rounds alternating runs (the load of the
    machine changes; every run's losses are the same); the whole command's wall time (compile excluded, process start
    and data loading included) is recorded too.

A staleness-free reference isolates what the delays do: the same per-
microbatch SGD updates PipeDream makes (M per stage per step, in microbatch
order), but every microbatch computed at the newest weights (plain
sequential SGD), recomputed here in float64 numpy. 1F1B is likewise
recomputed in numpy (mean gradient per step) as a check that the model,
data and loss here are the ones pipeopt trains (its loss must match
pipeopt-run's to ~1e-5 relative).

Writes OUT/converge_real.json, OUT/converge_real.csv (schedule, step,
wall_s, loss) and OUT/converge_real.svg (loss against wall time, log y, one
line per schedule), and prints a summary table.

Needs numpy (benchmark only; the build and tests do not).

usage: benchmarks/converge_real.py [--build build] [--out DIR] [--stages 4]
           [--microbatches 8] [--layers 8] [--width 128] [--batch 64]
           [--steps 200] [--lr 0.05] [--seed 0] [--threads 1] [--rounds 3]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def model_text(layers, rows, width):
    """TOSA text of the MLP: %x, then (w_i [1, W, W], b_i [1, 1, W]) per layer."""
    act = "tensor<1x%dx%dxf32>" % (rows, width)
    wty = "tensor<1x%dx%dxf32>" % (width, width)
    bty = "tensor<1x1x%dxf32>" % width
    params = ["%%x: %s" % act]
    for i in range(layers):
        params.append("%%w%d: %s" % (i, wty))
        params.append("%%b%d: %s" % (i, bty))
    lines = ["// ReLU MLP for benchmarks/converge_real.py: %d layers, width %d, "
             "%d rows" % (layers, width, rows),
             "func.func @mlp(%s) -> %s {" % (", ".join(params), act),
             '  %zero = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> '
             ': () -> tensor<1xf32>']
    h = "%x"
    for i in range(layers):
        lines.append("  %%mm%d = tosa.matmul %s, %%w%d, %%zero, %%zero : (%s, %s, "
                     "tensor<1xf32>, tensor<1xf32>) -> %s" % (i, h, i, act, wty, act))
        lines.append("  %%z%d = tosa.add %%mm%d, %%b%d : (%s, %s) -> %s"
                     % (i, i, i, act, bty, act))
        h = "%%z%d" % i
        if i + 1 < layers:
            lines.append("  %%h%d = tosa.clamp %%z%d {min_val = 0.0 : f32, max_val = "
                         "3.4e38 : f32} : (%s) -> %s" % (i, i, act, act))
            h = "%%h%d" % i
    lines += ["  return %s : %s" % (h, act), "}"]
    return "\n".join(lines) + "\n"


def make_problem(np, a):
    """Initial weights (He-scaled normal, zero bias) and the fixed data set."""
    rng = np.random.default_rng(a.seed)
    ws = [rng.standard_normal((a.width, a.width)) * np.sqrt(2.0 / a.width)
          for _ in range(a.layers)]
    bs = [np.zeros(a.width) for _ in range(a.layers)]
    x = rng.uniform(-1, 1, (a.microbatches, a.batch, a.width))
    teacher = rng.standard_normal((a.width, a.width)) / np.sqrt(a.width)
    y = np.tanh(x @ teacher)
    return ws, bs, x, y


def forward_backward(np, ws, bs, x, y):
    """mse loss (mean over the microbatch's elements) and its gradients."""
    hs, zs = [x], []
    h = x
    for i, (w, b) in enumerate(zip(ws, bs)):
        z = h @ w + b
        zs.append(z)
        h = np.maximum(z, 0) if i + 1 < len(ws) else z
        hs.append(h)
    diff = h - y
    loss = float(np.mean(diff * diff))
    g = 2.0 * diff / diff.size
    gws, gbs = [None] * len(ws), [None] * len(ws)
    for i in reversed(range(len(ws))):
        if i + 1 < len(ws):
            g = g * (zs[i] > 0)
        gws[i] = hs[i].T @ g
        gbs[i] = g.sum(axis=0)
        g = g @ ws[i].T
    return loss, gws, gbs


def reference(np, a, ws, bs, x, y, per_microbatch):
    """float64 losses per step: 1F1B (mean gradient per step) or sequential
    per-microbatch SGD at the newest weights (PipeDream without staleness)."""
    ws, bs = [w.copy() for w in ws], [b.copy() for b in bs]
    losses = []
    for _ in range(a.steps):
        step_loss, acc_w, acc_b = 0.0, None, None
        for m in range(a.microbatches):
            loss, gws, gbs = forward_backward(np, ws, bs, x[m], y[m])
            step_loss += loss / a.microbatches
            if per_microbatch:
                for i in range(a.layers):
                    ws[i] -= a.lr * gws[i]
                    bs[i] -= a.lr * gbs[i]
            elif acc_w is None:
                acc_w, acc_b = gws, gbs
            else:
                acc_w = [p + q for p, q in zip(acc_w, gws)]
                acc_b = [p + q for p, q in zip(acc_b, gbs)]
        if not per_microbatch:
            for i in range(a.layers):
                ws[i] -= a.lr * acc_w[i] / a.microbatches
                bs[i] -= a.lr * acc_b[i] / a.microbatches
        losses.append(step_loss)
    return losses


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return r.stdout + r.stderr


def step_times(text, steps):
    """Per-step seconds from pipeopt-run's 'step i/N: loss X (T s)' lines
    (the slowest rank's step time); None when they are not all there."""
    found = re.findall(r"step (\d+)/\d+: loss \S+ \(([0-9.eE+-]+) s\)", text)
    times = {int(i): float(t) for i, t in found}
    if sorted(times) != list(range(1, steps + 1)):
        return None
    return [times[i] for i in range(1, steps + 1)]


def svg(series, path, title):
    """Loss against wall time, log-scale y, one polyline per schedule."""
    import math
    W, H, ml, mr, mt, mb = 640, 400, 70, 20, 35, 50
    xs = [t for s in series for t in s["wall"]]
    ys = [v for s in series for v in s["loss"] if v > 0]
    xmax = max(xs) if xs else 1.0
    lo, hi = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    if hi <= lo:
        hi = lo + 1

    def px(t):
        return ml + (W - ml - mr) * t / xmax

    def py(v):
        return mt + (H - mt - mb) * (hi - math.log10(max(v, 10 ** lo))) / (hi - lo)

    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (W, H + 20),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="20" text-anchor="middle" font-size="13">%s</text>'
           % (W / 2, title),
           '<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>'
           % (ml, mt, W - ml - mr, H - mt - mb)]
    e = lo
    while e <= hi:
        out.append('<text x="%d" y="%.1f" text-anchor="end">1e%d</text>'
                   % (ml - 4, py(10 ** e) + 4, e))
        e += max(1, (hi - lo) // 8)
    for k in range(5):
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%.3g</text>'
                   % (px(xmax * k / 4), H - mb + 15, xmax * k / 4))
    out.append('<text x="%.1f" y="%d" text-anchor="middle">wall time (s)</text>'
               % (ml + (W - ml - mr) / 2, H - 12))
    for i, s in enumerate(series):
        pts = " ".join("%.1f,%.1f" % (px(t), py(v)) for t, v in zip(s["wall"], s["loss"]))
        out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>'
                   % (colors[i % 4], pts))
        lx = 20 + 200 * i
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>'
                   % (lx, H + 8, lx + 20, H + 8, colors[i % 4]))
        out.append('<text x="%d" y="%d">%s</text>' % (lx + 25, H + 12, s["label"]))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default="converge-real")
    ap.add_argument("--stages", type=int, default=4)
    ap.add_argument("--microbatches", type=int, default=8)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--batch", type=int, default=64, help="rows per microbatch")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads per rank")
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating runs per schedule; the fastest is kept")
    a = ap.parse_args()
    try:
        import numpy as np
    except ImportError:
        sys.exit("converge_real.py needs numpy (benchmark only)")
    if a.layers % a.stages:
        sys.exit("--layers %d is not a multiple of --stages %d" % (a.layers, a.stages))
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="pipeopt-converge-real-")
    model = os.path.join(tmp, "mlp.tosa.mlir")
    with open(model, "w") as f:
        f.write(model_text(a.layers, a.batch, a.width))
    ws, bs, x, y = make_problem(np, a)
    feed = []

    def put(index, arr):
        path = os.path.join(tmp, "in_%d.npy" % index)
        np.save(path, np.ascontiguousarray(arr, dtype=np.float32))
        feed.extend(["--input", "%d=%s" % (index, path)])

    put(0, x.reshape(a.microbatches, 1, a.batch, a.width))
    for i in range(a.layers):
        put(1 + 2 * i, ws[i].reshape(1, a.width, a.width))
        put(2 + 2 * i, bs[i].reshape(1, 1, a.width))
    put(1 + 2 * a.layers, y.reshape(a.microbatches, 1, a.batch, a.width))

    bin_dir = os.path.join(a.build, "bin")
    results = {}
    for sched in ["1f1b", "pipedream"]:
        so = os.path.join(tmp, "mlp-%s.so" % sched)
        run([os.path.join(bin_dir, "pipeopt-compile"), model, "--train", "--loss", "mse",
             "--schedule", sched, "--num-stages", str(a.stages), "--num-microbatches",
             str(a.microbatches), "--microbatch-args", "0", "--partition-options",
             "strategy=params", "--optimizer", "sgd", "--lr", repr(a.lr), "-o", so])
        results[sched] = {"so": so, "rounds": []}
    # Alternating rounds (1f1b, pipedream, 1f1b, ...): the machine's load
    # changes; each schedule keeps its round with the smallest median step.
    for rnd in range(a.rounds):
        for sched in ["1f1b", "pipedream"]:
            out_dir = os.path.join(tmp, "run-%s-%d" % (sched, rnd))
            t0 = time.perf_counter()
            text = run([os.path.join(bin_dir, "pipeopt-run"), results[sched]["so"],
                        "--steps", str(a.steps), "--threads", str(a.threads),
                        "--output-dir", out_dir, *feed])
            total = time.perf_counter() - t0
            loss = np.load(os.path.join(out_dir, "loss.npy")).astype(float).tolist()
            per = step_times(text, a.steps)
            if per is None:
                sys.exit("pipeopt-run printed no per-step times:\n" + text[-2000:])
            results[sched]["rounds"].append((sorted(per)[len(per) // 2], per, loss, total))
    for sched in ["1f1b", "pipedream"]:
        rounds = results[sched]["rounds"]
        if any(r[2] != rounds[0][2] for r in rounds):
            print("note: %s losses differ between rounds" % sched)
        med, per, loss, total = min(rounds, key=lambda r: r[0])
        results[sched] = {"loss": loss, "step_s": per, "wall": list(np.cumsum(per)),
                          "command_wall_s": total,
                          "round_medians_s": [r[0] for r in rounds]}

    ref_sync = reference(np, a, ws, bs, x, y, per_microbatch=False)
    ref_seq = reference(np, a, ws, bs, x, y, per_microbatch=True)
    sync_err = max(abs(p - q) / max(abs(q), 1e-30)
                   for p, q in zip(results["1f1b"]["loss"], ref_sync))

    def median(v):
        v = sorted(v)
        return v[len(v) // 2]

    rows = []
    for sched in ["1f1b", "pipedream"]:
        r = results[sched]
        rows.append((sched, r["loss"][-1], median(r["step_s"]), sum(r["step_s"]),
                     r["command_wall_s"]))
    pd, sy = results["pipedream"], results["1f1b"]
    # Wall time each schedule needs to reach 1F1B's final loss.
    target = sy["loss"][-1]
    reach = next((t for t, v in zip(pd["wall"], pd["loss"]) if v <= target), None)
    # Staleness: PipeDream against the same updates without delays.
    stale_gap = [p / q for p, q in zip(pd["loss"], ref_seq)]
    summary = {
        "model": "%d x (W %dx%d + b) ReLU MLP, %d rows per microbatch, mse" %
                 (a.layers, a.width, a.width, a.batch),
        "stages": a.stages, "microbatches": a.microbatches, "lr": a.lr,
        "steps": a.steps, "seed": a.seed, "threads": a.threads,
        "schedules": {s: {"final_loss": r[1], "median_step_s": r[2],
                          "sum_step_s": r[3], "command_wall_s": r[4]}
                      for s, r in zip(["1f1b", "pipedream"], rows)},
        "step_time_ratio_pipedream_over_1f1b": rows[1][2] / rows[0][2],
        "pipedream_wall_s_to_1f1b_final_loss": reach,
        "sync_reference_max_rel_err": sync_err,
        "sequential_sgd_reference_loss": ref_seq,
        "pipedream_over_sequential_sgd_loss": {
            "step_1": stale_gap[0], "step_10": stale_gap[min(9, a.steps - 1)],
            "final": stale_gap[-1], "max": max(stale_gap)},
        "rounds": a.rounds,
        "round_median_step_s": {s: r["round_medians_s"] for s, r in results.items()},
        "curves": {s: {"loss": r["loss"], "wall_s": r["wall"], "step_s": r["step_s"]}
                   for s, r in results.items()},
    }
    with open(os.path.join(a.out, "converge_real.json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(a.out, "converge_real.csv"), "w") as f:
        f.write("schedule,step,wall_s,loss\n")
        for s, r in results.items():
            for i, (t, v) in enumerate(zip(r["wall"], r["loss"])):
                f.write("%s,%d,%.6e,%.8e\n" % (s, i + 1, t, v))
        for i, v in enumerate(ref_seq):
            f.write("sequential-sgd-ref,%d,,%.8e\n" % (i + 1, v))
    svg([{"label": "1f1b", "wall": sy["wall"], "loss": sy["loss"]},
         {"label": "pipedream", "wall": pd["wall"], "loss": pd["loss"]}],
        os.path.join(a.out, "converge_real.svg"),
        "MLP %d x %d, S = %d, M = %d, lr %g: training loss vs wall time"
        % (a.layers, a.width, a.stages, a.microbatches, a.lr))

    print("model: %s; S = %d, M = %d, SGD lr %g, %d steps, loopback, %d thread(s) per rank"
          % (summary["model"], a.stages, a.microbatches, a.lr, a.steps, a.threads))
    print("%-10s %12s %14s %12s %14s" % ("schedule", "final loss", "median step s",
                                         "sum steps s", "command wall s"))
    for r in rows:
        print("%-10s %12.4e %14.3e %12.3f %14.2f" % r)
    print("step time pipedream / 1f1b: %.3f" % summary["step_time_ratio_pipedream_over_1f1b"])
    print("pipedream reaches 1f1b's final loss %.4e after: %s" %
          (target, "%.3f s" % reach if reach is not None else "never"))
    print("1f1b loss vs numpy float64 reference: max rel err %.2e" % sync_err)
    g = summary["pipedream_over_sequential_sgd_loss"]
    print("pipedream loss / sequential SGD without staleness (same updates): step 1 %.4f, "
          "step 10 %.4f, final %.4f, max %.4f" % (g["step_1"], g["step_10"], g["final"],
                                                   g["max"]))
    print("sequential SGD reference final loss: %.4e" % ref_seq[-1])
    print("wrote %s/converge_real.{json,csv,svg}" % a.out)


if __name__ == "__main__":
    main()
