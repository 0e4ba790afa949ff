#!/usr/bin/env python3
"""A 1F1B training step: pipeopt against torch.distributed.pipelining.

The same model, split, optimizer, loss and data on both sides, measured in
one run on this machine:

  * the model: an L-layer MLP (default 8 layers of width 512, Linear + ReLU,
    no ReLU after the last), microbatches of B rows (default 64), M
    microbatches (default 8), loss mse (the mean over a microbatch's
    elements, gradients averaged over the microbatches), plain SGD (lr
    0.01, no momentum, no weight decay);
  * the split: L / S consecutive layers per stage, S = 2 and 4 stages;
  * pipeopt: the model written here as TOSA text (as examples/gen_mlp.py
    does: tosa.matmul + tosa.add + tosa.clamp, weights [1, in, out] as
    arguments), `pipeopt-compile --train --loss mse --schedule 1f1b
    --num-stages S --num-microbatches M --optimizer sgd`, run by pipeopt-run
    with loopback (S threads of one process) and with MPI (mpirun -np S,
    one process per rank), --threads T;
  * torch: S processes (torch.multiprocessing, spawn), gloo, PipelineStage
    + Schedule1F1B(loss_fn=mse_loss) and torch.optim.SGD on each stage,
    torch.set_num_threads(T).

T = max(1, cores / S) on both sides (cores: os.sched_getaffinity).

Step time: both sides time the same thing per rank, from the start of the
step's forward work to the end of its optimizer update, with an untimed
barrier before each step; a step's time is the slowest rank's (pipeopt-run
prints exactly that per step), and the table shows the median over the
measured steps of --rounds alternating rounds (torch, pipeopt loopback,
pipeopt MPI, torch, ...; the load of a shared machine changes), each after
--warmup unmeasured steps (pipeopt: steps run and dropped, since
pipeopt-run's --warmup is for builds without an optimizer), and the
smallest of each side's per-round medians ("best round", the least
disturbed by other work on the machine).

Same computation: both sides start from the same weights (torch's
nn.Linear init, seed 0, fed to pipeopt-run as .npy, transposed to [1, in,
out]) and read the same data (one fixed batch, all steps), so their
per-step losses must agree; the table prints the largest relative
difference of the losses of all steps run.

Needs torch and numpy (benchmark only; never needed by the build or the
tests) and, for the MPI rows, mpirun.

usage: benchmarks/train_vs_torch.py [--build build] [--stages 2,4]
           [--steps 15] [--warmup 3] [--rounds 3] [--layers 8] [--width 512]
           [--batch 64] [--microbatches 8] [--comms loopback,mpi]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LR = 0.01


def mlp_tosa(layers, batch, width):
    """The model as TOSA text: argument 0 is x, then w_i [1,W,W], b_i [1,1,W]."""
    t = "tensor<1x%dx%dxf32>" % (batch, width)
    wt = "tensor<1x%dx%dxf32>" % (width, width)
    bt = "tensor<1x1x%dxf32>" % width
    args = ["%%x: %s" % t]
    for i in range(layers):
        args += ["%%w%d: %s" % (i, wt), "%%b%d: %s" % (i, bt)]
    out = ["// %d-layer MLP, batch %d, width %d (benchmarks/train_vs_torch.py)"
           % (layers, batch, width),
           "func.func @mlp(%s) -> %s {" % (", ".join(args), t),
           '  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : '
           '() -> tensor<1xf32>']
    cur = "%x"
    for i in range(layers):
        out.append("  %%m%d = tosa.matmul %s, %%w%d, %%zp, %%zp : (%s, %s, tensor<1xf32>, "
                   "tensor<1xf32>) -> %s" % (i, cur, i, t, wt, t))
        out.append("  %%a%d = tosa.add %%m%d, %%b%d : (%s, %s) -> %s" % (i, i, i, t, bt, t))
        cur = "%%a%d" % i
        if i + 1 < layers:
            out.append("  %%r%d = tosa.clamp %%a%d {min_val = 0.0 : f32, max_val = 3.4e38 : "
                       "f32} : (%s) -> %s" % (i, i, t, t))
            cur = "%%r%d" % i
    out.append("  return %s : %s" % (cur, t))
    out.append("}")
    return "\n".join(out) + "\n"


def torch_model(layers, width):
    import torch
    torch.manual_seed(0)
    mods = []
    for i in range(layers):
        mods.append(torch.nn.Linear(width, width))
        if i + 1 < layers:
            mods.append(torch.nn.ReLU())
    return torch.nn.Sequential(*mods)


def make_data(a):
    import torch
    g = torch.Generator().manual_seed(1)
    x = torch.rand(a.microbatches * a.batch, a.width, generator=g) * 2 - 1
    y = torch.rand(a.microbatches * a.batch, a.width, generator=g) * 2 - 1
    return x, y


def stage_bounds(layers, stages):
    """Module index ranges of torch_model: layers/stages Linear layers each,
    with the ReLU that follows each layer."""
    per = layers // stages
    return [(2 * per * s, min(2 * per * (s + 1), 2 * layers - 1)) for s in range(stages)]


def torch_worker(rank, world, a, threads, port, result):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import time
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B
    torch.set_num_threads(threads)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    full = torch_model(a.layers, a.width)
    lo, hi = stage_bounds(a.layers, world)[rank]
    sub = torch.nn.Sequential(*list(full)[lo:hi])
    stage = PipelineStage(sub, rank, world, torch.device("cpu"))
    schedule = Schedule1F1B(stage, n_microbatches=a.microbatches, loss_fn=F.mse_loss)
    opt = torch.optim.SGD(sub.parameters(), lr=LR)
    x, y = make_data(a)
    times, losses = [], []
    for it in range(a.warmup + a.steps):
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        mb_losses = []
        if rank == 0:
            schedule.step(x)
        elif rank == world - 1:
            schedule.step(target=y, losses=mb_losses)
        else:
            schedule.step()
        opt.step()
        times.append(time.perf_counter() - t0)
        if rank == world - 1:
            losses.append(float(torch.stack(mb_losses).detach().double().mean()))
    # Per step, the slowest rank.
    tt = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(tt, op=dist.ReduceOp.MAX)
    # The final weights of this stage's layers, by layer number.
    first = lo // 2
    lins = [m for m in sub if isinstance(m, torch.nn.Linear)]
    result.put(("weights", {first + i: (m.weight.detach().numpy().copy(),
                                        m.bias.detach().numpy().copy())
                            for i, m in enumerate(lins)}))
    if rank == world - 1:
        result.put(("times", tt.tolist(), losses))
    dist.barrier()
    dist.destroy_process_group()


def run_torch(a, stages, threads):
    import queue
    import time
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = 29500 + (os.getpid() + 7 * stages) % 1000
    procs = [ctx.Process(target=torch_worker, args=(r, stages, a, threads, port, q))
             for r in range(stages)]
    for p in procs:
        p.start()
    deadline = time.time() + 900
    weights, times = {}, None
    while times is None or len(weights) < len(procs):
        try:
            item = q.get(timeout=2)
            if item[0] == "weights":
                weights[min(item[1])] = item[1]
            else:
                times, losses = item[1], item[2]
        except queue.Empty:
            failed = [p for p in procs if p.exitcode not in (None, 0)]
            if failed or time.time() > deadline:
                for p in procs:
                    p.kill()
                sys.exit("torch.distributed.pipelining run failed (%d stages)" % stages)
    for p in procs:
        p.join()
    layers = {}
    for w in weights.values():
        layers.update(w)
    return times[a.warmup:], losses, layers


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return r.stdout + r.stderr


def write_inputs(a, tmp):
    """torch's initial weights and the data as pipeopt-run --input files."""
    import numpy as np
    model = torch_model(a.layers, a.width)
    x, y = make_data(a)
    feed = []

    def put(index, arr):
        path = os.path.join(tmp, "in_%d.npy" % index)
        np.save(path, np.ascontiguousarray(arr, dtype=np.float32))
        feed.extend(["--input", "%d=%s" % (index, path)])

    put(0, x.numpy().reshape(a.microbatches, 1, a.batch, a.width))
    linears = [m for m in model if hasattr(m, "weight")]
    for i, lin in enumerate(linears):
        put(1 + 2 * i, lin.weight.detach().numpy().T.reshape(1, a.width, a.width))
        put(2 + 2 * i, lin.bias.detach().numpy().reshape(1, 1, a.width))
    put(1 + 2 * a.layers, y.numpy().reshape(a.microbatches, 1, a.batch, a.width))
    return feed


def run_pipeopt(a, so, stages, threads, feed, comm):
    import numpy as np
    out_dir = so[:-3] + "-" + comm
    cmd = [os.path.join(a.build, "bin", "pipeopt-run"), so, "--steps",
           str(a.warmup + a.steps), "--threads", str(threads), "--output-dir", out_dir,
           *feed]
    if comm == "mpi":
        cmd = [a.mpirun, "--allow-run-as-root", "--oversubscribe", "-np",
               str(stages), *cmd, "--comm", "mpi"]
    out = run(cmd)
    steps = re.findall(r"step (\d+)/\d+: loss ([0-9.eE+-]+|nan) \(([0-9.eE+-]+) s\)", out)
    if len(steps) != a.warmup + a.steps:
        sys.exit("pipeopt-run printed %d step lines, expected %d:\n%s" %
                 (len(steps), a.warmup + a.steps, out))
    times = [float(s[2]) for s in steps][a.warmup:]
    losses = [float(v) for v in np.load(os.path.join(out_dir, "loss.npy"))]
    return times, losses, out_dir


def weight_difference(a, out_dir, torch_layers):
    """max |pipeopt - torch| over the final weights and biases, and the
    largest change training made to any of them (torch's), for scale."""
    import numpy as np
    init = torch_model(a.layers, a.width)
    init = [m for m in init if hasattr(m, "weight")]
    diff = moved = 0.0
    for i in range(a.layers):
        tw, tb = torch_layers[i]
        pw = np.load(os.path.join(out_dir, "weight_%d.npy" % (1 + 2 * i))).reshape(
            a.width, a.width).T
        pb = np.load(os.path.join(out_dir, "weight_%d.npy" % (2 + 2 * i))).reshape(a.width)
        iw = init[i].weight.detach().numpy()
        ib = init[i].bias.detach().numpy()
        diff = max(diff, float(np.abs(pw - tw).max()), float(np.abs(pb - tb).max()))
        moved = max(moved, float(np.abs(tw - iw).max()), float(np.abs(tb - ib).max()))
    return diff, moved


def check_split(manifest, layers, stages):
    """Every stage got layers/stages layers: parameter ranks from the manifest."""
    import json
    with open(manifest) as f:
        m = json.load(f)
    ranks = {p["index"]: p["ranks"] for p in m["parameters"]}
    per = layers // stages
    for i in range(layers):
        want = [i // per]
        for index in (1 + 2 * i, 2 + 2 * i):
            if ranks.get(index) != want:
                sys.exit("%s: parameter %d (layer %d) is on ranks %s, expected %s: pipeopt's "
                         "partition is not %d layers per stage" %
                         (manifest, index, i, ranks.get(index), want, per))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--stages", default="2,4")
    ap.add_argument("--steps", type=int, default=15, help="measured steps")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--batch", type=int, default=64, help="rows per microbatch")
    ap.add_argument("--microbatches", type=int, default=8)
    ap.add_argument("--mpirun", default=shutil.which("mpirun") or "")
    ap.add_argument("--comms", default="loopback,mpi")
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating rounds of every side (median over all)")
    a = ap.parse_args()
    try:
        import torch  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        sys.exit("train_vs_torch.py needs torch and numpy (pip install torch numpy); the build "
                 "and tests do not")
    comms = a.comms.split(",")
    if "mpi" in comms and not a.mpirun:
        sys.exit("no mpirun found; pass --comms loopback or --mpirun PATH")
    cores = len(os.sched_getaffinity(0))
    tmp = tempfile.mkdtemp(prefix="pipeopt-train-vs-torch-")
    model = os.path.join(tmp, "mlp.tosa.mlir")
    with open(model, "w") as f:
        f.write(mlp_tosa(a.layers, a.batch, a.width))
    feed = write_inputs(a, tmp)
    print("model: %d x Linear(%d, %d) + ReLU, microbatch %d rows, %d microbatches, 1F1B, "
          "SGD lr %g, mse; %d cores; %d rounds of %d measured steps after %d warm-up"
          % (a.layers, a.width, a.width, a.batch, a.microbatches, LR, cores, a.rounds,
             a.steps, a.warmup), flush=True)
    rows = []
    for stages in [int(s) for s in a.stages.split(",")]:
        if a.layers % stages:
            sys.exit("--layers %d is not a multiple of %d stages" % (a.layers, stages))
        threads = max(1, cores // stages)
        so = os.path.join(tmp, "mlp-s%d.so" % stages)
        run([os.path.join(a.build, "bin", "pipeopt-compile"), model, "--train", "--loss", "mse",
             "--schedule", "1f1b", "--num-stages", str(stages), "--num-microbatches",
             str(a.microbatches), "--microbatch-args", "0", "--partition-options",
             "strategy=params", "--optimizer", "sgd", "--lr",
             str(LR), "-o", so])
        check_split(os.path.join(tmp, "mlp-s%d.manifest.json" % stages), a.layers, stages)
        # Rounds of torch, then pipeopt with each communicator, alternating,
        # so that a change of the machine's load hits every side alike; the
        # median is over the measured steps of all rounds.
        times = {side: [] for side in ["torch"] + comms}
        best = {side: float("inf") for side in ["torch"] + comms}
        result = {}
        for rnd in range(a.rounds):
            t, l_torch, w_torch = run_torch(a, stages, threads)
            times["torch"] += t
            best["torch"] = min(best["torch"], statistics.median(t))
            print("%d stages, round %d: torch median %.2f ms, losses %s" %
                  (stages, rnd + 1, statistics.median(t) * 1e3,
                   " ".join("%.6g" % v for v in l_torch[:3])), flush=True)
            for comm in comms:
                t, l, out_dir = run_pipeopt(a, so, stages, threads, feed, comm)
                times[comm] += t
                best[comm] = min(best[comm], statistics.median(t))
                rel = max(abs(p - q) / abs(q) for p, q in zip(l, l_torch))
                wdiff, moved = weight_difference(a, out_dir, w_torch)
                result[comm] = (rel, wdiff, moved)
                print("%d stages, round %d: pipeopt %s median %.2f ms, losses %s; final "
                      "weights: max abs difference to torch's %.2e, training moved them by "
                      "up to %.2e" % (stages, rnd + 1, comm, statistics.median(t) * 1e3,
                                      " ".join("%.6g" % v for v in l[:3]), wdiff, moved),
                      flush=True)
        med_torch = statistics.median(times["torch"])
        rows.append((stages, "torch Schedule1F1B, gloo, %d procs" % stages, threads,
                     med_torch, None, best["torch"], None, None))
        for comm in comms:
            med = statistics.median(times[comm])
            rows.append((stages, "pipeopt 1f1b, %s" % comm, threads, med, med / med_torch,
                         best[comm], best[comm] / best["torch"], result[comm]))
    print()
    print("| stages | side | threads/rank | median step | pipeopt/torch | best round's "
          "median | pipeopt/torch | loss vs torch: max rel. diff (%d steps) | final weights "
          "vs torch: max abs diff / max update |" % (a.warmup + a.steps))
    print("|---|---|---|---|---|---|---|---|---|")
    for stages, side, threads, med, ratio, bmed, bratio, cmp in rows:
        print("| %d | %s | %d | %.2f ms | %s | %.2f ms | %s | %s | %s |" %
              (stages, side, threads, med * 1e3, "" if ratio is None else "%.2fx" % ratio,
               bmed * 1e3, "" if bratio is None else "%.2fx" % bratio,
               "" if cmp is None else "%.1e" % cmp[0],
               "" if cmp is None else "%.1e / %.1e" % (cmp[1], cmp[2])))
    print("\nfiles in", tmp)


if __name__ == "__main__":
    main()
