"""Drops the leading microbatch dimension of a pipeopt-run output:
npy-drop-microbatch.py IN OUT

IN is a .npy file of shape [1, d0, d1, ...] (pipeopt-run --output-dir
writes a microbatched output as [M, ...shape]; these tests run one
microbatch); OUT gets the same dtype and data with shape [d0, d1, ...].
Exits 1 with a message if IN is not a version 1-3 .npy file whose leading
dimension is 1. Used by the lit tests, which must not depend on numpy.
"""
import ast
import struct
import sys


def main(src, dst):
    with open(src, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY" or data[6] not in (1, 2, 3):
        sys.exit("npy-drop-microbatch.py: error: %s: not a .npy file" % src)
    if data[6] == 1:
        (hlen,) = struct.unpack("<H", data[8:10])
        start = 10
    else:
        (hlen,) = struct.unpack("<I", data[8:12])
        start = 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    shape = tuple(header["shape"])
    if not shape or shape[0] != 1:
        sys.exit("npy-drop-microbatch.py: error: %s: shape %s, expected a "
                 "leading dimension of 1" % (src, shape))
    text = "{'descr': %r, 'fortran_order': %r, 'shape': %r, }" % (
        header["descr"], header["fortran_order"], shape[1:])
    total = 10 + len(text) + 1
    text += " " * ((total + 63) // 64 * 64 - total) + "\n"
    with open(dst, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)))
        f.write(text.encode("latin1"))
        f.write(data[start + hlen:])


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
