#!/usr/bin/env python3
"""pipeopt's stage kernels against torch eager and torch.distributed.pipelining.

Measures, in one run on this machine, side by side:

  * mlp8 (examples/mlp8.tosa.mlir, 8 microbatches of 16 x 256) and ResNet-18
    (../shared/models/buddy_resnet18.tosa.mlir, 224 x 224, 4 microbatches),
    unpartitioned, as GFLOP/s: pipeopt's reference build with the BLAS
    kernels, the same build with --kernels=false --fuse=false (the naive
    loop nests of before), and torch eager on the same shapes with one
    thread;
  * the BERT attention layer (../shared/models/tf_small_bert_mha.linalg.mlir,
    a TF graph with no torch counterpart): BLAS kernels against loops;
  * an element-wise chain (8 ops on 4 Mi floats, fused into one loop nest)
    as GB/s of its input + output bytes, against numpy's memory copy of the
    same size (the bandwidth bound) and torch eager's chain; pipeopt's whole
    iteration also copies the input in and the output out (pipeopt_rt_input
    / output), so the F action's own time is shown too;
  * mlp8 also against numpy (matmul + bias + ReLU per layer, its bundled
    OpenBLAS on one thread);
  * the 4-stage pipelined mlp8 (GPipe / forward-only, 8 microbatches,
    loopback threads, one BLAS thread per rank) against
    torch.distributed.pipelining's ScheduleGPipe on the same split (4
    processes, gloo, one thread each): seconds per iteration (forward only).

Ratios are of medians of repeated iterations. Needs torch and numpy from
PyPI (benchmark only; never needed by the build or the tests).

usage: benchmarks/vs_torch.py [--build build] [--iterations N] [--quick]
"""
import argparse
import os

# numpy's bundled OpenBLAS on one thread, like torch eager below; the
# pipeopt-run subprocesses get an environment without it (run()).
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(os.path.dirname(ROOT), "shared", "models")

MLP_LAYERS, MLP_BATCH, MLP_WIDTH, MLP_OUT = 8, 16, 256, 32


def mlp8_flops_per_microbatch():
    dims = [MLP_WIDTH] * MLP_LAYERS + [MLP_OUT]
    return sum(2 * MLP_BATCH * dims[i] * dims[i + 1] for i in range(MLP_LAYERS))


def resnet18_flops_per_image():
    """2 x multiply-accumulates of ResNet-18's convolutions and FC (10 classes)."""
    macs = 0
    h = 112
    macs += 112 * 112 * 64 * 3 * 7 * 7           # conv1, stride 2
    h = 56                                        # max pool
    cin = 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        for block in range(2):
            s = stride if block == 0 else 1
            ho = h // s
            macs += ho * ho * cout * cin * 9      # 3x3, stride s
            macs += ho * ho * cout * cout * 9     # 3x3
            if s != 1 or cin != cout:
                macs += ho * ho * cout * cin      # 1x1 downsample
            h, cin = ho, cout
    macs += 512 * 10
    return 2 * macs


def elementwise_chain_mlir(n):
    """y = max(((x * 1.5 + 0.25) * x - 0.5) * 0.75 + x, 0) - 1: 8 generics."""
    ops = [("mulf", "1.5"), ("addf", "0.25"), ("mulx", None), ("subf", "0.5"),
           ("mulf", "0.75"), ("addx", None), ("maximumf", "0.0"), ("subf", "1.0")]
    t = "tensor<1x%dxf32>" % n
    lines = ["func.func @chain(%%x: %s) -> %s {" % (t, t),
             "  %%e = tensor.empty() : %s" % t]
    cur = "%x"
    for i, (op, c) in enumerate(ops):
        v = "%%v%d" % i
        if c is None:
            body = "%%r = arith.%s %%a, %%b : f32" % (op[:-1] + "f")
            lines.append("  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, "
                         "affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types "
                         "= [\"parallel\", \"parallel\"]} ins(%s, %%x : %s, %s) outs(%%e : %s) {"
                         % (v, cur, t, t, t))
            lines.append("  ^bb0(%a: f32, %b: f32, %o: f32):")
        else:
            body = "%%c = arith.constant %s : f32\n    %%r = arith.%s %%a, %%c : f32" % (c, op)
            lines.append("  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, "
                         "affine_map<(i, j) -> (i, j)>], iterator_types = [\"parallel\", "
                         "\"parallel\"]} ins(%s : %s) outs(%%e : %s) {" % (v, cur, t, t))
            lines.append("  ^bb0(%a: f32, %o: f32):")
        lines.append("    " + body)
        lines.append("    linalg.yield %r : f32")
        lines.append("  } -> %s" % t)
        cur = v
    lines.append("  return %s : %s" % (cur, t))
    lines.append("}")
    return "\n".join(lines) + "\n"


def torch_chain(x):
    import torch
    y = x * 1.5
    y = y + 0.25
    y = y * x
    y = y - 0.5
    y = y * 0.75
    y = y + x
    y = torch.clamp_min(y, 0.0)
    return y - 1.0


def run(cmd, **kw):
    env = dict(os.environ)
    env.pop("OPENBLAS_NUM_THREADS", None)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, **kw)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return r.stdout + r.stderr


def pipeopt_median(build, so, iterations, extra=()):
    out = run([os.path.join(build, "bin", "pipeopt-run"), so, "--iterations",
               str(iterations), "--warmup", "2", *extra])
    return float(re.search(r"median iteration ([0-9.e+-]+) s", out).group(1))


def compile_model(build, model, out, args):
    t0 = time.perf_counter()
    run([os.path.join(build, "bin", "pipeopt-compile"), model, *args, "-o", out])
    return time.perf_counter() - t0


def torch_median(fn, iterations):
    fn()
    fn()
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def torch_mlp8():
    import torch
    dims = [MLP_WIDTH] * MLP_LAYERS + [MLP_OUT]
    layers = []
    for i in range(MLP_LAYERS):
        layers.append(torch.nn.Linear(dims[i], dims[i + 1]))
        if i + 1 < MLP_LAYERS:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def torch_resnet18():
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return torch.relu(y + (self.down(x) if self.down else x))

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10)]
    return nn.Sequential(*layers).eval()


def gpipe_worker(rank, world, microbatches, iterations, port, result):
    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    full = torch_mlp8()
    per = len(full) // world + (1 if len(full) % world else 0)
    # Two linear layers (and their ReLUs) per stage, as pipeopt's 4-stage split.
    bounds = []
    linear_idx = [i for i, m in enumerate(full) if isinstance(m, torch.nn.Linear)]
    per_stage = MLP_LAYERS // world
    for s in range(world):
        start = linear_idx[s * per_stage]
        end = linear_idx[(s + 1) * per_stage] if s + 1 < world else len(full)
        bounds.append((start, end))
    sub = torch.nn.Sequential(*list(full)[bounds[rank][0]:bounds[rank][1]])
    with torch.no_grad():
        stage = PipelineStage(sub, rank, world, torch.device("cpu"))
        schedule = ScheduleGPipe(stage, n_microbatches=microbatches)
        x = torch.randn(microbatches * MLP_BATCH, MLP_WIDTH)

        def step():
            if rank == 0:
                schedule.step(x)
            else:
                schedule.step()
            dist.barrier()

        med = torch_median(step, iterations)
    if rank == 0:
        result.put(med)
    dist.destroy_process_group()


def torch_gpipe(microbatches, iterations):
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = 29500 + os.getpid() % 1000
    procs = [ctx.Process(target=gpipe_worker, args=(r, 4, microbatches, iterations, port, q))
             for r in range(4)]
    for p in procs:
        p.start()
    import queue
    deadline = time.time() + 600
    while True:
        try:
            med = q.get(timeout=2)
            break
        except queue.Empty:
            failed = [p for p in procs if p.exitcode not in (None, 0)]
            if failed or time.time() > deadline:
                for p in procs:
                    p.kill()
                sys.exit("torch.distributed.pipelining run failed (rank %s)" %
                         ([procs.index(p) for p in failed] or "timeout"))
    for p in procs:
        p.join()
    return med


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--quick", action="store_true", help="mlp8 only")
    ap.add_argument("--rounds", type=int, default=5,
                    help="alternating ResNet-18 torch/pipeopt rounds of 10 iterations "
                         "after the main table (0: none)")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("vs_torch.py needs torch (pip install torch); the build and tests do not")
    torch.set_num_threads(1)
    tmp = tempfile.mkdtemp(prefix="pipeopt-vs-torch-")
    rows = []

    def row(name, value, unit, base=None):
        rows.append((name, value, unit, base))
        ratio = "" if base is None else "  %.2fx" % (value / base)
        print("%-58s %10.3f %s%s" % (name, value, unit, ratio), flush=True)

    # --- mlp8, unpartitioned, 8 microbatches ---
    mlp8 = os.path.join(ROOT, "examples", "mlp8.tosa.mlir")
    M = 8
    f_mlp = mlp8_flops_per_microbatch() * M
    compile_model(a.build, mlp8, os.path.join(tmp, "mlp8-ref.so"),
                  ["--reference", "--num-microbatches=%d" % M, "--microbatch-args=0"])
    compile_model(a.build, mlp8, os.path.join(tmp, "mlp8-loops.so"),
                  ["--reference", "--num-microbatches=%d" % M, "--microbatch-args=0",
                   "--kernels=false", "--fuse=false"])
    model = torch_mlp8().eval()
    xs = [torch.randn(MLP_BATCH, MLP_WIDTH) for _ in range(M)]
    with torch.no_grad():
        t_torch = torch_median(lambda: [model(x) for x in xs], a.iterations)
    g_torch = f_mlp / t_torch / 1e9
    row("mlp8 torch eager, 1 thread (GFLOP/s)", g_torch, "")
    t = pipeopt_median(a.build, os.path.join(tmp, "mlp8-ref.so"), a.iterations, ["--threads", "1"])
    row("mlp8 pipeopt reference, BLAS kernels, 1 thread (GFLOP/s)", f_mlp / t / 1e9, "", g_torch)
    t = pipeopt_median(a.build, os.path.join(tmp, "mlp8-ref.so"), a.iterations)
    row("mlp8 pipeopt reference, BLAS kernels, default threads", f_mlp / t / 1e9, "", g_torch)
    t = pipeopt_median(a.build, os.path.join(tmp, "mlp8-loops.so"), max(3, a.iterations // 5))
    row("mlp8 pipeopt reference, loops (--kernels=false)", f_mlp / t / 1e9, "", g_torch)
    import numpy as np
    ws = [p.detach().numpy() for p in model.parameters()]
    xs_np = [x.numpy() for x in xs]

    def numpy_mlp():
        for x in xs_np:
            h = x
            for i in range(0, len(ws), 2):
                h = h @ ws[i].T + ws[i + 1]
                if i + 2 < len(ws):
                    h = np.maximum(h, 0)

    t = torch_median(numpy_mlp, a.iterations)
    row("mlp8 numpy (OpenBLAS), 1 thread (GFLOP/s)", f_mlp / t / 1e9, "", g_torch)

    # --- element-wise chain, fused ---
    n = 1 << 22
    chain = os.path.join(tmp, "chain.mlir")
    with open(chain, "w") as f:
        f.write(elementwise_chain_mlir(n))
    compile_model(a.build, chain, os.path.join(tmp, "chain.so"),
                  ["--reference", "--num-microbatches=1", "--microbatch-args=0"])
    compile_model(a.build, chain, os.path.join(tmp, "chain-nofuse.so"),
                  ["--reference", "--num-microbatches=1", "--microbatch-args=0",
                   "--fuse=false"])
    bytes_moved = 2 * 4 * n
    src = np.ones(n, np.float32)
    dst = np.empty_like(src)
    t_copy = torch_median(lambda: np.copyto(dst, src), a.iterations)
    row("elementwise: numpy copy of 16 MiB (GB/s, the bound)", bytes_moved / t_copy / 1e9, "")
    xt = torch.rand(n)
    with torch.no_grad():
        t = torch_median(lambda: torch_chain(xt), a.iterations)
    row("elementwise chain torch eager, 1 thread (GB/s)", bytes_moved / t / 1e9, "",
        bytes_moved / t_copy / 1e9)
    prof = os.path.join(tmp, "chain-profile.json")
    t = pipeopt_median(a.build, os.path.join(tmp, "chain.so"), a.iterations,
                       ["--threads", "1", "--profile", prof])
    row("elementwise chain pipeopt, fused, whole iteration (GB/s)", bytes_moved / t / 1e9, "",
        bytes_moved / t_copy / 1e9)
    import json
    with open(prof) as f:
        t_f = json.load(f)["stages"][0]["forward_s"]
    row("elementwise chain pipeopt, fused, the F action only (GB/s)", bytes_moved / t_f / 1e9,
        "", bytes_moved / t_copy / 1e9)
    t = pipeopt_median(a.build, os.path.join(tmp, "chain-nofuse.so"), a.iterations,
                       ["--threads", "1"])
    row("elementwise chain pipeopt, --fuse=false (GB/s)", bytes_moved / t / 1e9, "",
        bytes_moved / t_copy / 1e9)

    # --- mlp8, 4 stages, GPipe vs torch.distributed.pipelining ---
    compile_model(a.build, mlp8, os.path.join(tmp, "mlp8-4.so"),
                  ["--num-stages=4", "--num-microbatches=%d" % M, "--microbatch-args=0"])
    t_pipe = pipeopt_median(a.build, os.path.join(tmp, "mlp8-4.so"), a.iterations)
    t_gpipe = torch_gpipe(M, a.iterations)
    row("mlp8 4-stage torch.distributed.pipelining GPipe (ms/iter)", t_gpipe * 1e3, "")
    row("mlp8 4-stage pipeopt forward-only, loopback (ms/iter)", t_pipe * 1e3, "", t_gpipe * 1e3)

    if not a.quick:
        # --- BERT attention layer (TF), kernels against loops ---
        mha = os.path.join(MODELS, "tf_small_bert_mha.linalg.mlir")
        f_mha = 34791424 * 4   # FLOP per microbatch (-test-pipe-cost-model) x 4
        compile_model(a.build, mha, os.path.join(tmp, "mha.so"),
                      ["--reference", "--microbatch-args=0"])
        compile_model(a.build, mha, os.path.join(tmp, "mha-loops.so"),
                      ["--reference", "--microbatch-args=0", "--kernels=false", "--fuse=false"])
        t_loops = pipeopt_median(a.build, os.path.join(tmp, "mha-loops.so"),
                                 max(3, a.iterations // 5), ["--threads", "1"])
        row("BERT attention layer pipeopt, loops (GFLOP/s)", f_mha / t_loops / 1e9, "")
        t = pipeopt_median(a.build, os.path.join(tmp, "mha.so"), a.iterations, ["--threads", "1"])
        row("BERT attention layer pipeopt, BLAS kernels, 1 thread (GFLOP/s)", f_mha / t / 1e9, "",
            f_mha / t_loops / 1e9)

        # --- ResNet-18, unpartitioned, 4 microbatches of one image ---
        rn = os.path.join(MODELS, "buddy_resnet18.tosa.mlir")
        f_rn = resnet18_flops_per_image() * 4
        ct = compile_model(a.build, rn, os.path.join(tmp, "rn18.so"), ["--reference"])
        row("resnet18 pipeopt reference compile time (s)", ct, "")
        model = torch_resnet18()
        imgs = [torch.randn(1, 3, 224, 224) for _ in range(4)]
        with torch.no_grad():
            t_torch = torch_median(lambda: [model(x) for x in imgs], max(3, a.iterations // 3))
        g_torch = f_rn / t_torch / 1e9
        row("resnet18 torch eager, 1 thread (GFLOP/s)", g_torch, "")
        t = pipeopt_median(a.build, os.path.join(tmp, "rn18.so"), max(3, a.iterations // 3),
                           ["--threads", "1"])
        row("resnet18 pipeopt reference, BLAS kernels, 1 thread (GFLOP/s)", f_rn / t / 1e9, "",
            g_torch)
        # The VM is noisy: alternate the pair to quote a median ratio.
        ratios = []
        for r in range(a.rounds):
            with torch.no_grad():
                tt = torch_median(lambda: [model(x) for x in imgs], 10)
            tp = pipeopt_median(a.build, os.path.join(tmp, "rn18.so"), 10, ["--threads", "1"])
            ratios.append(tt / tp)
            print("resnet18 round %d/%d: torch %.1f, pipeopt %.1f GFLOP/s, %.2fx"
                  % (r + 1, a.rounds, f_rn / tt / 1e9, f_rn / tp / 1e9, tt / tp), flush=True)
        if ratios:
            row("resnet18 pipeopt / torch, median of %d alternating rounds" % len(ratios),
                statistics.median(ratios), "x")
    print("\nratios are against the torch row above them; files in", tmp)


if __name__ == "__main__":
    main()
