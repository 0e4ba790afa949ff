"""pipeopt-calibrate.test: the contraction_operand_bandwidth of a written
hardware JSON is the operand rate that the log line names as written
("operands X GB/s out of L2 / Y GB/s in L2 (<which> written)"), or the
field is absent when that rate is 0 ("(<which>: not slower per FLOP than
the peak, none written)")."""
import json
import re
import sys

log, path, which = sys.argv[1], sys.argv[2], sys.argv[3]
m = re.search(r"operands ([0-9.]+) GB/s out of L2 / ([0-9.]+) GB/s in L2 "
              r"\((out of L2|in L2)( written|: not slower per FLOP than the "
              r"peak, none written)\)", open(log).read())
assert m, "no operand rates in the log"
assert m.group(3) == which, (m.group(3), which)
written_said = m.group(4) == " written"
device = json.load(open(path))
if not written_said:
    # Not slower per FLOP than the peak (in-cache operands, a noisy --quick
    # run): the field is omitted (the plain roofline).
    assert "contraction_operand_bandwidth" not in device, device
    print("not measurable: omitted (%s)" % which)
    sys.exit(0)
logged = float(m.group(1) if which == "out of L2" else m.group(2))
written = device["contraction_operand_bandwidth"] / 1e9
assert abs(written - logged) <= 0.05 + 1e-9, (written, logged)
print("written %.1f GB/s = logged %.1f GB/s (%s)" % (written, logged, which))
