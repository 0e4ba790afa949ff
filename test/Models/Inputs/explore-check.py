"""Checks `pipeopt-explore --model ... --format=json` output
(test/Models/explore-llama.test).

Usage: explore-check.py out.json --stages 4,8 --microbatches 8,16,32,64
    --systems 9 --weights-min B --weights-max B
Prints "ok ..." / "FAIL ..." per check and PASS or FAIL at the end.
"""
import argparse
import json

ap = argparse.ArgumentParser()
ap.add_argument("json")
ap.add_argument("--stages", required=True)
ap.add_argument("--microbatches", required=True)
ap.add_argument("--systems", type=int, required=True)
ap.add_argument("--weights-min", type=float, required=True)
ap.add_argument("--weights-max", type=float, required=True)
args = ap.parse_args()
d = json.load(open(args.json))
stages = [int(x) for x in args.stages.split(",")]
mbs = [int(x) for x in args.microbatches.split(",")]
failed = False


def check(name, ok, detail=""):
    global failed
    print(("ok   " if ok else "FAIL ") + name + (": " + str(detail) if detail != "" else ""))
    failed |= not ok


rows = d["rows"]
check("rows present", len(rows) > 0, len(rows))
check("three levels per point", len(rows) % 3 == 0, len(rows))
check("cost table names the model", "buddy_llama2_7b" in d["cost_table"], d["cost_table"])
check("systems", len(d["systems"]) == args.systems, len(d["systems"]))
check("stages column", sorted({r["stages"] for r in rows}) == stages,
      sorted({r["stages"] for r in rows}))
check("microbatches column", sorted({r["microbatches"] for r in rows}) == mbs,
      sorted({r["microbatches"] for r in rows}))

# One partition per model stage count the schedules use (S, and 2S for the
# two-chunk schedules), with the model's weights split over the stages.
parts = {p["model_stages"]: p for p in d["model_partitions"]}
needed = sorted({r["model_stages"] for r in rows})
check("a partition per model stage count", sorted(parts) == needed,
      "%s vs %s" % (sorted(parts), needed))
for n, p in sorted(parts.items()):
    st = p["stages"]
    total_w = sum(s["weight_bytes"] for s in st)
    check("partition %d: %d stages" % (n, n), len(st) == n, len(st))
    check("partition %d: weights %.3g B in [%.3g, %.3g]" %
          (n, total_w, args.weights_min, args.weights_max),
          args.weights_min <= total_w <= args.weights_max)
    fwd = [s["forward_s"] for s in st]
    check("partition %d: every stage has F, B and W > 0" % n,
          all(s["forward_s"] > 0 and s["backward_input_s"] > 0 and
              s["backward_weight_s"] > 0 for s in st))
    check("partition %d: balanced (imbalance %.3f < 1.1)" % (n, p["imbalance"]),
          p["imbalance"] < 1.1)
    check("partition %d: not a uniform table (F differs between stages)" % n,
          max(fwd) > min(fwd), fwd)

# The makespans come from the partition: GPipe at the table level on the
# reference-speed system (free communication) takes at least M x the slowest
# stage's F + B + W, and at most the flow-shop bound of its two phases,
# sum_k (F_k + B_k + W_k) + (M - 1) (max F + max (B + W)).
for S in stages:
    p = parts[S]["stages"]
    fw = [s["forward_s"] for s in p]
    bw = [s["backward_input_s"] + s["backward_weight_s"] for s in p]
    t = max(f + b for f, b in zip(fw, bw))
    for M in mbs:
        r = [r for r in rows if r["schedule"] == "gpipe" and r["stages"] == S
             and r["microbatches"] == M and r["level"] == "table"
             and r["system"] == "compute-medium/net-medium"]
        ms = r[0]["makespan_s"] if r else -1
        hi = sum(fw) + sum(bw) + (M - 1) * (max(fw) + max(bw))
        check("gpipe S=%d M=%d table makespan %.4g s within [%.4g, %.4g]" %
              (S, M, ms, M * t, hi),
              M * t * (1 - 1e-9) <= ms <= hi * (1 + 1e-9))
        # The built-in uniform table (F = B = W = 10 ms per stage) would give
        # (M + S - 1) x 30 ms.
        check("gpipe S=%d M=%d differs from the uniform table" % (S, M),
              abs(ms - (M + S - 1) * 0.03) > 1e-3)

flips = d["flips"]
check("ranking flips present", len(flips) > 0, len(flips))
for f in flips:
    ok = (f["level_a"] != f["level_b"] and f["best_a"] and f["best_b"]
          and not set(f["best_a"]) & set(f["best_b"])
          and f["best_a_makespan_at_a_s"] > 0 and f["best_b_makespan_at_b_s"] > 0
          and f["best_a_makespan_at_b_s"] >= f["best_b_makespan_at_b_s"] * (1 - 1e-9)
          and f["best_b_makespan_at_a_s"] >= f["best_a_makespan_at_a_s"] * (1 - 1e-9))
    if not ok:
        check("flip consistent", False, f)
        break
else:
    check("every flip consistent (disjoint bests, each best at its level)", True)
pairs = sorted({(f["level_a"], f["level_b"]) for f in flips})
print("flip level pairs: " + ", ".join("%s->%s" % p for p in pairs))
print("FAIL" if failed else "PASS")
