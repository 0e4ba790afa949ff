#!/usr/bin/env python3
"""Time pipeopt's partition + outline passes against parse + print.

Usage: benchmarks/passes_vs_parse.py [--build build] [--runs 15] [--stages 8] [model.mlir]

Runs, interleaved and repeated (these machines are noisy), in the same run:
  A  mlir-opt-22  model -o out          (upstream parse + print)
  B  pipeopt      model -o out          (pipeopt's parse + print)
  C  pipeopt      model -pipe-prepare -pipe-partition -pipe-outline-stages -o out
and prints the median wall time of each, the time the passes add (C - B) and
its ratio to parse + print (A). The project's target: C - B <= A.
This is a benchmark, not a test: nothing asserts on its numbers.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?",
                    default=os.path.join(ROOT, "..", "shared", "models",
                                         "buddy_llama2_7b.tosa.mlir"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--stages", type=int, default=8)
    args = ap.parse_args()
    if not os.path.exists(args.model):
        sys.exit("model not found: " + args.model)
    pipeopt = os.path.join(args.build, "bin", "pipeopt")
    mlir_opt = "/usr/lib/llvm-22/bin/mlir-opt"
    out = "/dev/null"
    cmds = {
        "A mlir-opt parse+print": [mlir_opt, args.model, "-o", out],
        "B pipeopt parse+print": [pipeopt, args.model, "-o", out],
        "C pipeopt partition+outline": [
            pipeopt, args.model, "-pipe-prepare",
            "-pipe-partition=num-stages=%d" % args.stages,
            "-pipe-outline-stages", "-o", out],
    }
    times = {k: [] for k in cmds}
    for _ in range(args.runs):
        for k, c in cmds.items():
            t0 = time.perf_counter()
            subprocess.run(c, check=True, stdout=subprocess.DEVNULL)
            times[k].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    print("model: %s, %d runs each, interleaved" % (os.path.basename(args.model), args.runs))
    for k, v in med.items():
        print("  %-30s median %.3f s  (min %.3f, max %.3f)" %
              (k, v, min(times[k]), max(times[k])))
    added = med["C pipeopt partition+outline"] - med["B pipeopt parse+print"]
    base = med["A mlir-opt parse+print"]
    print("passes add %.3f s = %.2fx mlir-opt parse+print (target <= 1.00x)" %
          (added, added / base))


if __name__ == "__main__":
    main()
