"""Prints, per rank of a pipeopt-run --profile file, how kernel_s,
gradient_s and update_s compare with 0 and kernel_s with busy_s."""
import json
import sys

prof = json.load(open(sys.argv[1]))
for r in prof["ranks"]:
    def sign(key):
        return "> 0" if r[key] > 0 else "= 0" if r[key] == 0 else "< 0"
    print("rank %d: kernel %s, kernel %s busy, gradient %s, update %s" % (
        r["rank"], sign("kernel_s"),
        "<=" if r["kernel_s"] <= r["busy_s"] else ">", sign("gradient_s"),
        sign("update_s")))
