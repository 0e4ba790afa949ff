#!/usr/bin/env python3
"""Measured peak stashed activation bytes vs the simulator's prediction.

For every schedule given: compiles MODEL for training (--save-temps keeps
the materialized programs, <stem>.scheduled.mlir), runs one step with
pipeopt-run --profile (peak_stash_bytes_per_rank, what the runtime counted
while the program ran) and pipe-simulate on the scheduled module (table
level peak_activation_bytes_per_rank, from the simulator's own timeline of
the same programs), and prints

  1f1b: measured [a, b] simulated [a, b]: equal

Also checks the textbook in-flight counts against the per-stage activation
bytes of the simulator's report: GPipe holds all M microbatches on every
rank, 1F1B holds min(S - r, M) on rank r (Narayanan et al., "Memory-
Efficient Pipeline-Parallel DNN Training", 2021, section 3.2). Exits 1 on
any difference. Tools come from PATH.

Usage: stash-peak.py MODEL WORKDIR --loss mse --ranks R --microbatches M
         --schedules 1f1b,gpipe,zb-h1,interleaved-1f1b
"""

import argparse
import json
import os
import subprocess
import sys

TWO_CHUNK = {"interleaved-1f1b", "looped-bfs", "zb-v", "dualpipev", "hanayo"}


def must(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        print("command failed (%d): %s\n%s" % (p.returncode, " ".join(cmd),
                                                p.stdout))
        sys.exit(1)
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("work")
    ap.add_argument("--loss", required=True)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--microbatches", type=int, default=8)
    ap.add_argument("--schedules", default="1f1b,gpipe,zb-h1,interleaved-1f1b")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    R, M = a.ranks, a.microbatches
    bad = 0
    for sched in a.schedules.split(","):
        S = 2 * R if sched in TWO_CHUNK else R
        stem = os.path.join(a.work, sched)
        must(["pipeopt-compile", a.model, "--train", "--loss", a.loss,
              "--schedule", sched, "--num-stages", str(S),
              "--num-microbatches", str(M), "-O", "0", "--save-temps",
              "-o", stem + ".so"])
        must(["pipeopt-run", stem + ".so", "--steps", "1", "--quiet",
              "--profile", stem + ".profile.json"])
        with open(stem + ".profile.json") as f:
            measured = json.load(f)["peak_stash_bytes_per_rank"]
        must(["pipeopt", stem + ".scheduled.mlir",
              "--pipe-simulate=device=cpu report=" + stem + ".sim.json",
              "-o", os.devnull])
        with open(stem + ".sim.json") as f:
            report = json.load(f)
        row = [r for r in report["rows"] if r["level"] == "table"][0]
        simulated = row["peak_activation_bytes_per_rank"]
        act = [s["activation_bytes"]
               for s in report["functions"][0]["cost_table"]["stages"]]
        same = [int(x) for x in measured] == [int(x) for x in simulated]
        print("%s: measured %s simulated %s: %s" % (
            sched, [int(x) for x in measured], [int(x) for x in simulated],
            "equal" if same else "DIFFERENT"))
        bad += not same
        if sched in ("gpipe", "1f1b"):
            want = [(M if sched == "gpipe" else min(S - r, M)) * act[r]
                    for r in range(R)]
            ok = [int(x) for x in want] == [int(x) for x in measured]
            print("%s: in-flight x activation bytes %s: %s" % (
                sched, [int(x) for x in want], "equal" if ok else "DIFFERENT"))
            bad += not ok
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
