#!/usr/bin/env python3
# ===- partition-check.py - checks a pipe-partition JSON report -----------===#
#
# Part of pipeopt. Used by test/Models/partition-*.test.
#
# Checks that the report has the requested number of stages, that no stage
# is empty, that every top-level op of the function is either placed in
# exactly one stage or rematerialized (sum of num_ops == placed_ops and
# placed_ops + remat_ops == function_ops), that the bottleneck is the slowest
# stage and not below the lower bound, and optionally that the balanced
# bottleneck is within a gap of the lower bound and strictly below both
# baselines. Prints one line per check and "PASS" or "FAIL: ..." last; exits
# non-zero on failure.
#
# ===----------------------------------------------------------------------===#
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--stages", type=int, required=True)
    ap.add_argument("--max-gap", type=float, default=None,
                    help="bottleneck <= (1 + gap) * lower bound")
    ap.add_argument("--below-baselines", action="store_true",
                    help="bottleneck < uniform and params baselines")
    args = ap.parse_args()

    with open(args.report) as f:
        r = json.load(f)
    failures = []

    def check(ok, line):
        print(("ok   " if ok else "FAIL ") + line)
        if not ok:
            failures.append(line)

    stages = r["stages"]
    check(r["num_stages"] == args.stages and len(stages) == args.stages,
          "stages: %d (expected %d)" % (len(stages), args.stages))
    empty = [k for k, s in enumerate(stages) if s["num_ops"] < 1]
    check(not empty, "empty stages: %s" % (empty or "none"))
    placed = sum(s["num_ops"] for s in stages)
    check(placed == r["placed_ops"],
          "placed ops: sum over stages %d == %d" % (placed, r["placed_ops"]))
    check(r["placed_ops"] + r["remat_ops"] == r["function_ops"],
          "every op assigned: %d placed + %d rematerialized == %d ops"
          % (r["placed_ops"], r["remat_ops"], r["function_ops"]))
    bottleneck = r["bottleneck_s"]
    slowest = max(s["time_s"] for s in stages)
    check(abs(bottleneck - slowest) <= 1e-9 * slowest,
          "bottleneck %.4e s == slowest stage %.4e s" % (bottleneck, slowest))
    lower = r["lower_bound_s"]
    check(bottleneck >= lower * (1 - 1e-9),
          "bottleneck %.4e s >= lower bound %.4e s" % (bottleneck, lower))
    gap = bottleneck / lower - 1 if lower > 0 else 0.0
    print("info gap to lower bound: %+.2f%%" % (100 * gap))
    uniform = r["baselines"]["uniform"]["bottleneck_s"]
    params = r["baselines"]["params"]["bottleneck_s"]
    print("info vs uniform: %+.2f%% (%.4e s), vs params: %+.2f%% (%.4e s)"
          % (100 * (bottleneck / uniform - 1), uniform,
             100 * (bottleneck / params - 1), params))
    if args.max_gap is not None:
        check(gap <= args.max_gap,
              "gap to lower bound %.2f%% <= %.2f%%"
              % (100 * gap, 100 * args.max_gap))
    if args.below_baselines:
        check(bottleneck < uniform,
              "bottleneck %.4e s < uniform %.4e s" % (bottleneck, uniform))
        check(bottleneck < params,
              "bottleneck %.4e s < params %.4e s" % (bottleneck, params))
    if failures:
        print("FAIL: " + "; ".join(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
