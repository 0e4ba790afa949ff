"""Checks a pipe-simulate JSON report (test/Transforms/simulate.mlir).

Usage: simulate-check.py report.json KEY=VALUE...
  bubble.<level>=x       overall bubble ratio at <level> equals x (1e-9)
  event>table            event makespan strictly above the table's
  event=table            event makespan equals the table's (1e-12 relative)
  formula=table          formula makespan equals the table's (1e-9 relative)
  weights=x              largest rank's weight bytes at the table level
  stages=n ranks=n microbatches=n schedule=name
Prints "ok <check>" per check, then PASS, or "FAIL <check>: ..." and exits 1.
"""
import json
import sys

report = json.load(open(sys.argv[1]))
rows = {r["level"]: r for r in report["rows"]}
fields = ["schedule", "stages", "model_stages", "microbatches", "system",
          "level", "available", "makespan_s", "bubble_ratio",
          "bubble_ratio_per_rank", "peak_activation_bytes",
          "peak_activation_bytes_per_rank", "weight_bytes",
          "weight_bytes_per_rank", "comm_bytes"]
failed = False


def check(name, ok, detail=""):
    global failed
    print(("ok   " if ok else "FAIL ") + name + (": " + detail if detail else ""))
    failed |= not ok


check("three levels", sorted(rows) == ["event", "formula", "table"], str(sorted(rows)))
for level in ("table", "event"):
    missing = [f for f in fields if f not in rows[level]]
    check("explorer row fields at " + level, not missing, str(missing))
for arg in sys.argv[2:]:
    if arg == "event>table":
        check(arg, rows["event"]["makespan_s"] > rows["table"]["makespan_s"],
              "%g vs %g" % (rows["event"]["makespan_s"], rows["table"]["makespan_s"]))
        continue
    if arg in ("event=table", "formula=table"):
        a, b = arg.split("=")
        x, y = rows[a]["makespan_s"], rows[b]["makespan_s"]
        check(arg, abs(x - y) <= 1e-9 * y, "%g vs %g" % (x, y))
        continue
    key, value = arg.split("=")
    if key.startswith("bubble."):
        got = rows[key.split(".")[1]]["bubble_ratio"]
        check(arg, abs(got - float(eval(value))) < 1e-9, "got %r" % got)
    elif key == "weights":
        got = rows["table"]["weight_bytes"]
        check(arg, got == float(value), "got %r" % got)
    else:
        name = {"ranks": "stages", "stages": "model_stages"}.get(key, key)
        got = rows["table"][name]
        check(arg, str(got) == value, "got %r" % got)
print("FAIL" if failed else "PASS")
sys.exit(1 if failed else 0)
