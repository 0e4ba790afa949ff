"""Float32 .npy helpers for the runtime tests (numpy is not required).

  npy-slices.py distinct FILE MIN_RATIO
      Splits FILE along its leading dimension (one slice per microbatch)
      and prints the largest |value|, A, and the smallest max-abs
      difference between two slices, D. Prints "FAIL" and exits 1 unless
      D >= MIN_RATIO * A, i.e. unless every two microbatches' slices
      differ clearly.
  npy-slices.py zeros IN OUT
      Writes OUT with IN's header and all data zero.
  npy-slices.py swap IN OUT I J
      Writes OUT: IN with leading-dimension slices I and J exchanged (two
      microbatches' data given in each other's place).
"""
import ast
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", path
    if data[6] == 1:
        (hlen,) = struct.unpack("<H", data[8:10])
        start = 10
    else:
        (hlen,) = struct.unpack("<I", data[8:12])
        start = 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    assert header["descr"] == "<f4" and not header["fortran_order"], header
    body = data[start + hlen:]
    values = struct.unpack("<%df" % (len(body) // 4), body)
    return data[:start + hlen], header["shape"], values


def distinct(path, min_ratio):
    _, shape, values = read(path)
    m = shape[0]
    n = len(values) // m
    slices = [values[i * n:(i + 1) * n] for i in range(m)]
    biggest = max(abs(v) for v in values)
    smallest, pair = None, None
    for i in range(m):
        for j in range(i + 1, m):
            d = max(abs(a - b) for a, b in zip(slices[i], slices[j]))
            if smallest is None or d < smallest:
                smallest, pair = d, (i, j)
    ok = smallest is not None and smallest >= min_ratio * biggest
    print("%s: %d slices of %d elements, max abs value %.4g; smallest max abs "
          "difference between two slices %.4g (microbatches %d and %d), "
          "%.3g of the max abs value: %s"
          % (path, m, n, biggest, smallest, pair[0], pair[1],
             smallest / biggest if biggest else 0.0,
             "distinct" if ok else "FAIL"))
    return 0 if ok else 1


def zeros(src, dst):
    head, _, values = read(src)
    with open(dst, "wb") as f:
        f.write(head)
        f.write(b"\0" * (4 * len(values)))
    return 0


def swap(src, dst, i, j):
    head, shape, values = read(src)
    n = len(values) // shape[0]
    slices = [list(values[k * n:(k + 1) * n]) for k in range(shape[0])]
    slices[i], slices[j] = slices[j], slices[i]
    with open(dst, "wb") as f:
        f.write(head)
        for sl in slices:
            f.write(struct.pack("<%df" % n, *sl))
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "distinct":
        sys.exit(distinct(sys.argv[2], float(sys.argv[3])))
    if sys.argv[1] == "swap":
        sys.exit(swap(sys.argv[2], sys.argv[3], int(sys.argv[4]),
                      int(sys.argv[5])))
    sys.exit(zeros(sys.argv[2], sys.argv[3]))
