"""Writes a little-endian float32 .npy vector: write-npy.py OUT V1 V2 ...

Values are parsed by float() ("nan", "inf", "-inf" included); used by the
pipeopt-npy-diff tests, which must not depend on numpy.
"""
import struct
import sys

out, values = sys.argv[1], [float(v) for v in sys.argv[2:]]
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % len(values)
total = 10 + len(header) + 1
header += " " * ((total + 63) // 64 * 64 - total) + "\n"
with open(out, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
    f.write(header.encode("latin1"))
    f.write(struct.pack("<%df" % len(values), *values))
