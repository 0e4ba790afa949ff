#!/usr/bin/env python3
"""Time pipe-differentiate on the LLaMA-2-7B graph in 8 stages against
parsing it.

Usage: benchmarks/differentiate_vs_parse.py [--build build] [--runs 11] [--stages 8] [model.mlir]

First partitions and outlines the model into S stages (one run, into a
temporary file). Then runs, interleaved and repeated (these machines are
noisy), on that file:
  A  pipeopt stages.mlir -o /dev/null                    (parse + print)
  B  pipeopt stages.mlir --pass-pipeline=<prepare> ...    (A + what
     pipe-differentiate runs before differentiating: TOSA -> linalg,
     element-wise -> linalg, canonicalize, per stage function)
  C  pipeopt stages.mlir --pipe-differentiate ...         (the whole pass:
     B + differentiation (F, B+W, B, W of every stage) + canonicalize/CSE
     of the generated functions; printing them too)
and prints the medians, the differentiation's time (C - B) and its ratio
to parse + print (A). The issue's target: differentiation <= parsing.
This is a benchmark, not a test: nothing asserts on its numbers.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREPARE = ("builtin.module(func.func(tosa-to-linalg-named,tosa-to-linalg,"
           "tosa-to-arith,tosa-to-tensor,convert-elementwise-to-linalg,"
           "canonicalize))")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?",
                    default=os.path.join(ROOT, "..", "shared", "models",
                                         "buddy_llama2_7b.tosa.mlir"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--stages", type=int, default=8)
    args = ap.parse_args()
    if not os.path.exists(args.model):
        sys.exit("model not found: " + args.model)
    pipeopt = os.path.join(args.build, "bin", "pipeopt")
    with tempfile.TemporaryDirectory() as tmp:
        stages = os.path.join(tmp, "stages.mlir")
        subprocess.run([pipeopt, args.model, "-pipe-prepare",
                        "-pipe-partition=num-stages=%d" % args.stages,
                        "-pipe-outline-stages", "-o", stages], check=True)
        cmds = {
            "A parse+print": [pipeopt, stages, "-o", os.devnull],
            "B + prepare": [pipeopt, stages, "--pass-pipeline=" + PREPARE,
                            "-o", os.devnull],
            "C + pipe-differentiate": [pipeopt, stages, "-pipe-differentiate",
                                       "-o", os.devnull],
        }
        times = {k: [] for k in cmds}
        for _ in range(args.runs):
            for k, c in cmds.items():
                t0 = time.perf_counter()
                subprocess.run(c, check=True, stdout=subprocess.DEVNULL)
                times[k].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    print("model: %s in %d stages, %d runs each, interleaved"
          % (os.path.basename(args.model), args.stages, args.runs))
    for k, v in med.items():
        print("  %-26s median %.3f s  (min %.3f, max %.3f)"
              % (k, v, min(times[k]), max(times[k])))
    ad = med["C + pipe-differentiate"] - med["B + prepare"]
    base = med["A parse+print"]
    print("differentiation (C - B) %.3f s = %.2fx parse+print (target <= 1.00x)"
          % (ad, ad / base))


if __name__ == "__main__":
    main()
