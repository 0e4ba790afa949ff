#!/usr/bin/env python3
"""Data x pipeline parallelism at run time: step time and all-reduce overlap.

Compiles one training build (default: the demo's 8-layer MLP, 1f1b on P = 2
ranks, 4 microbatches, AdamW) and runs it, in alternating rounds, as one
pipeline (P ranks) and as D replicas (pipeopt-run --data-parallel D, D x P
ranks, the global batch D times as large), under loopback and MPI, with and
without ZeRO-1. Prints per configuration the median step time over all
measured steps, the time per microbatch of the global batch, and from
pipeopt-run's summary how long the gradient all-reduces were in flight per
step and how much of that was hidden under the backward.

Usage: data_parallel.py [--model F.mlir] [--microbatch-args 0] [--loss mse]
         [--schedule 1f1b] [--ranks 2] [--microbatches 4] [--replicas 2]
         [--steps 10] [--rounds 3] [--optimizer adamw] [--no-mpi] [--bin DIR]
Tools are taken from --bin (default: build/bin beside this script's
repository), mpirun from PATH. Nothing here asserts: it measures.
"""
import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        sys.exit("command failed (%d): %s\n%s" %
                 (p.returncode, " ".join(map(shlex.quote, cmd)), p.stdout))
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(ROOT, "examples",
                                                    "mlp8.tosa.mlir"))
    ap.add_argument("--microbatch-args", default="0")
    ap.add_argument("--loss", default="mse")
    ap.add_argument("--schedule", default="1f1b")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--microbatches", type=int, default=4)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--optimizer", default="adamw")
    ap.add_argument("--no-mpi", action="store_true")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    a = ap.parse_args()
    tool = lambda name: os.path.join(a.bin, name)
    work = tempfile.mkdtemp(prefix="pipeopt-dp-")
    so = os.path.join(work, "p.so")
    stages = a.ranks * (2 if a.schedule in ("interleaved-1f1b",
                                            "interleaved-zb") else 1)
    cmd = [tool("pipeopt-compile"), a.model, "--train", "--loss", a.loss,
           "--schedule", a.schedule, "--num-stages", str(stages),
           "--num-microbatches", str(a.microbatches), "--optimizer",
           a.optimizer, "--lr", "1e-4", "-o", so]
    if a.microbatch_args:
        cmd += ["--microbatch-args", a.microbatch_args]
    run(cmd)
    mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np"]
    configs = [("one pipeline, loopback", 1, 0, False)]
    configs += [("D=%d, loopback" % a.replicas, a.replicas, 0, False),
                ("D=%d ZeRO-1, loopback" % a.replicas, a.replicas, 1, False)]
    if not a.no_mpi:
        configs += [("one pipeline, MPI", 1, 0, True),
                    ("D=%d, MPI" % a.replicas, a.replicas, 0, True),
                    ("D=%d ZeRO-1, MPI" % a.replicas, a.replicas, 1, True)]
    steps = {c[0]: [] for c in configs}
    dp = {c[0]: [] for c in configs}
    for _ in range(a.rounds):
        for name, d, zero, mpi in configs:
            cmd = [tool("pipeopt-run"), so, "--steps", str(a.steps),
                   "--threads", "1", "--seed", "1"]
            if d > 1:
                cmd += ["--data-parallel", str(d), "--zero", str(zero)]
            if mpi:
                cmd = mpirun + [str(d * a.ranks)] + cmd + ["--comm", "mpi"]
            out = run(cmd)
            # Step 1 learns the buckets (everything at its end): left out
            # of the step times (the summary's all-reduce figures keep it).
            times = [float(t) for k, t in re.findall(
                r"step (\d+)/\d+: loss \S+ \(([0-9.]+) s\)", out)
                if int(k) > 1]
            steps[name] += times
            m = re.search(r"in flight ([0-9.]+) ms per rank and step, "
                          r"([0-9.]+) ms of it waited", out)
            if m:
                dp[name].append((float(m.group(1)), float(m.group(2))))
    base = statistics.median(steps[configs[0][0]])
    print("model %s, %s, P = %d ranks, M = %d microbatches per replica, "
          "%d steps x %d rounds, 1 thread per rank" %
          (os.path.basename(a.model), a.schedule, a.ranks, a.microbatches,
           a.steps, a.rounds))
    print("| configuration | ranks | median step | per microbatch of the "
          "global batch | all-reduce in flight / waited per rank and step | hidden |")
    print("|---|---|---|---|---|---|")
    for name, d, zero, mpi in configs:
        med = statistics.median(steps[name])
        per_mb = med / (d * a.microbatches)
        overlap = ""
        hidden = ""
        if dp[name]:
            f = statistics.median(x[0] for x in dp[name])
            w = statistics.median(x[1] for x in dp[name])
            overlap = "%.2f / %.2f ms" % (f, w)
            hidden = "%.0f%%" % (100 * max(0.0, 1 - w / f)) if f > 0 else ""
        print("| %s | %d | %.2f ms (%.2fx) | %.3f ms | %s | %s |" %
              (name, d * a.ranks, 1e3 * med, med / base, 1e3 * per_mb,
               overlap, hidden))


if __name__ == "__main__":
    main()
