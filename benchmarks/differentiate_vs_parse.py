#!/usr/bin/env python3
"""Time pipe-differentiate on the LLaMA-2-7B graph in 8 stages against
parsing it.

Usage: benchmarks/differentiate_vs_parse.py [--build build] [--runs 11]
           [--stages 8] [--pipeopt PATH] [model.mlir]

First partitions and outlines the model into S stages (one run, into a
temporary file: pipe-prepare, pipe-partition=num-stages=S,
pipe-outline-stages). Then runs on that file, interleaved and repeated
(these machines are noisy), each with --mlir-timing (JSON), with threads and
with --mlir-disable-threading:

  D  pipeopt stages.mlir -pipe-differentiate -o /dev/null
  N  the same with --verify-each=false
  P  pipeopt stages.mlir --verify-each=false --pass-pipeline=<prepare>
     (the TOSA -> linalg lowering pipe-differentiate runs first, on its
     own: tosa-to-linalg-named, tosa-to-linalg, tosa-to-arith,
     tosa-to-tensor, convert-elementwise-to-linalg, canonicalize)

and reports, from the timing reports:

  parse    D's parser (reading stages.mlir into IR, with its verification)
  pass     D's pipe-differentiate, wall time, with the pass manager's
           verification of its result
  verify   that verification: D's pass - N's pass
  prepare  P's passes
  itself   N's pass - P's passes: differentiation proper (CSE of the
           lowered functions, building F, B+W, B and W of every stage, CSE
           of B+W and of the loss functions)
  output   D's printing of the result (5x the functions of the input)

Prints the median of each and its ratio to the median parse time; the
issue's target is differentiation <= parse. This is a benchmark, not a
test: nothing asserts on its numbers.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREPARE = ("builtin.module(func.func(tosa-to-linalg-named,tosa-to-linalg,"
           "tosa-to-arith,tosa-to-tensor,convert-elementwise-to-linalg,"
           "canonicalize))")


def timing(cmd):
    """The top-level entries of pipeopt's JSON timing report, by name."""
    r = subprocess.run(cmd + ["--mlir-timing", "--mlir-output-format=json"],
                       check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    t = {}
    for e in json.loads(r.stderr):
        if e and "name" in e:
            t[e["name"]] = t.get(e["name"], 0.0) + e["wall"]["duration"]
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?",
                    default=os.path.join(ROOT, "..", "shared", "models",
                                         "buddy_llama2_7b.tosa.mlir"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--pipeopt",
                    help="the pipeopt binary (default: BUILD/bin/pipeopt)")
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--stages", type=int, default=8)
    args = ap.parse_args()
    if not os.path.exists(args.model):
        sys.exit("model not found: " + args.model)
    pipeopt = args.pipeopt or os.path.join(args.build, "bin", "pipeopt")
    modes = {"threads": [], "no threads": ["--mlir-disable-threading"]}
    keys = ["parse", "pass", "verify", "prepare", "itself", "output"]
    with tempfile.TemporaryDirectory() as tmp:
        stages = os.path.join(tmp, "stages.mlir")
        subprocess.run([pipeopt, args.model, "-pipe-prepare",
                        "-pipe-partition=num-stages=%d" % args.stages,
                        "-pipe-outline-stages", "-o", stages], check=True)
        diff = [pipeopt, stages, "-pipe-differentiate", "-o", os.devnull]
        prep = [pipeopt, stages, "--verify-each=false",
                "--pass-pipeline=" + PREPARE, "-o", os.devnull]
        runs = {m: {k: [] for k in keys} for m in modes}
        for _ in range(args.runs):
            for m, extra in modes.items():
                d = timing(diff + extra)
                n = timing(diff + extra + ["--verify-each=false"])
                p = timing(prep + extra)
                p_passes = sum(v for k, v in p.items() if k not in (
                    "Parser", "Output", "Rest", "Total"))
                r = runs[m]
                r["parse"].append(d["Parser"])
                r["pass"].append(d["DifferentiatePass"])
                r["verify"].append(d["DifferentiatePass"]
                                   - n["DifferentiatePass"])
                r["prepare"].append(p_passes)
                r["itself"].append(n["DifferentiatePass"] - p_passes)
                r["output"].append(d["Output"])
    print("model: %s in %d stages, %d runs of each, interleaved; "
          "median seconds (min - max), ratio of the medians to parse"
          % (os.path.basename(args.model), args.stages, args.runs))
    for m in modes:
        med = {k: statistics.median(runs[m][k]) for k in keys}
        print("%s:" % m)
        for k in keys:
            v = runs[m][k]
            print("  %-8s %.4f (%.4f - %.4f)  %.2fx"
                  % (k, med[k], min(v), max(v), med[k] / med["parse"]))


if __name__ == "__main__":
    main()
