#!/usr/bin/env python3
"""Checks the order of data-parallel all-reduces in a pipeopt-run --trace.

  dp-trace-order.py TRACE.json

For every measured step after the first (the first learns which action
completes each gradient and all-reduces everything at its end), every rank
of the trace (replica 0's) must have started some gradient all-reduce
bucket before its last backward action (B, W or BW) of that step ended:
the all-reduce overlaps the replica's backward. Prints one line per
(rank, step): the start of its first bucket and the end of its last
backward action, in ms; exits 1 if a bucket started only after the
backward, or if a step has no bucket at all.
"""
import json
import sys


def main():
    with open(sys.argv[1]) as f:
        events = json.load(f)["traceEvents"]
    first = {}      # (rank, step) -> start of the first bucket (us)
    last_bwd = {}   # (rank, step) -> end of the last backward action (us)
    steps = set()
    for e in events:
        if e.get("ph") != "X":
            continue
        key = (e["tid"], e["args"]["iteration"])
        steps.add(key)
        if e["cat"] == "all-reduce" and e["name"].startswith("all-reduce bucket"):
            first[key] = min(first.get(key, float("inf")), e["ts"])
        elif e["cat"] in ("B", "W", "BW"):
            last_bwd[key] = max(last_bwd.get(key, 0.0), e["ts"] + e["dur"])
    bad = 0
    for key in sorted(steps):
        rank, step = key
        if step == 0 or key not in last_bwd:
            continue
        if key not in first:
            print("rank %d step %d: no all-reduce bucket" % (rank, step + 1))
            bad += 1
            continue
        ok = first[key] < last_bwd[key]
        print("rank %d step %d: first bucket started %s the last backward "
              "action ended" % (rank, step + 1, "before" if ok else "AFTER"))
        bad += 0 if ok else 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
