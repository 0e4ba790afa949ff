"""Writes a little-endian .npy vector: write-npy.py [--i64] OUT V1 V2 ...

float32 by default, values parsed by float() ("nan", "inf", "-inf"
included); with --i64, int64 values parsed by int() (class indices). Used by
tests that must not depend on numpy.
"""
import struct
import sys

args = sys.argv[1:]
i64 = bool(args) and args[0] == "--i64"
if i64:
    args = args[1:]
out = args[0]
values = [int(v) for v in args[1:]] if i64 else [float(v) for v in args[1:]]
descr, code = ("<i8", "q") if i64 else ("<f4", "f")
header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (
    descr, len(values))
total = 10 + len(header) + 1
header += " " * ((total + 63) // 64 * 64 - total) + "\n"
with open(out, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
    f.write(header.encode("latin1"))
    f.write(struct.pack("<%d%s" % (len(values), code), *values))
