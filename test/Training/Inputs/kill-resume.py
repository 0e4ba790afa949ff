#!/usr/bin/env python3
"""Helpers of kill-resume.test (standard library only, no numpy).

  kill-resume.py dataset OUT.npy D0 D1 ... [--seed S]
      writes an f32 .npy of shape [D0, D1, ...], uniform in [-1, 1)
  kill-resume.py same A B
      every file of directory A is in directory B with the same bytes and B
      has no other files; prints the names, exits 1 on any difference
"""
import os
import random
import struct
import sys


def dataset(argv):
    seed = 0
    if "--seed" in argv:
        i = argv.index("--seed")
        seed = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    out, dims = argv[0], [int(d) for d in argv[1:]]
    n = 1
    for d in dims:
        n *= d
    rng = random.Random(seed)
    shape = "(" + "".join("%d, " % d for d in dims) + ")"
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(out, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode("latin1"))
        f.write(struct.pack("<%df" % n, *[rng.uniform(-1, 1) for _ in range(n)]))


def same(a, b):
    names_a = sorted(os.listdir(a))
    names_b = sorted(os.listdir(b))
    bad = ["only in %s: %s" % (b, n) for n in names_b if n not in names_a]
    for n in names_a:
        pa, pb = os.path.join(a, n), os.path.join(b, n)
        if not os.path.isfile(pb):
            bad.append("only in %s: %s" % (a, n))
            continue
        with open(pa, "rb") as fa, open(pb, "rb") as fb:
            if fa.read() != fb.read():
                bad.append("differs: %s" % n)
    if bad:
        print("\n".join(bad))
        sys.exit(1)
    print("same bytes: %s (%d files)" % (" ".join(names_a), len(names_a)))


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "dataset":
        dataset(sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "same":
        same(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
