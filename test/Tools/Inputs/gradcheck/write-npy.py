"""Writes a little-endian C-order .npy array without numpy:

    write-npy.py OUT DTYPE SHAPE V1 V2 ...

DTYPE is f4, f8, i8, i4 or f2 (half, written as raw bits of the values
given as integers); SHAPE is e.g. 4x3, or "scalar" for rank 0. The values
are parsed by float() (f4, f8) or int() (i8, i4, f2).
"""
import struct
import sys

out, dtype, shape_text = sys.argv[1], sys.argv[2], sys.argv[3]
shape = () if shape_text == "scalar" else tuple(int(d) for d in shape_text.split("x"))
fmt = {"f4": "f", "f8": "d", "i8": "q", "i4": "i", "f2": "H"}[dtype]
parse = float if dtype in ("f4", "f8") else int
values = [parse(v) for v in sys.argv[4:]]
shape_str = "(%d,)" % shape[0] if len(shape) == 1 else "(%s)" % ", ".join(map(str, shape))
header = "{'descr': '<%s', 'fortran_order': False, 'shape': %s, }" % (dtype, shape_str)
total = 10 + len(header) + 1
header += " " * ((total + 63) // 64 * 64 - total) + "\n"
with open(out, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
    f.write(header.encode("latin1"))
    f.write(struct.pack("<%d%s" % (len(values), fmt), *values))
