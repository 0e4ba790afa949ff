"""The training step of Inputs/linear-mse-grad.mlir, independently in Python.

  linear-mse-reference.py INPUT_DIR OUT_DIR [WRONG_DIR]

reads INPUT_DIR/input_0.npy (w [3, 2]), input_1.npy (x [M, 4, 3]) and
input_2.npy (target [M, 4, 2]) as written by pipeopt-npy-diff --make-inputs,
and writes OUT_DIR/loss.npy (f32 scalar) and OUT_DIR/grad_0.npy (f32 [3, 2]):
the means over the M microbatches of loss = mean((x @ w - t)^2) and its
gradient with respect to w, x^T @ (2 (x @ w - t) / 8), computed in double
(numpy is not required). With WRONG_DIR, also writes what wrong
reductions would give, for the test to show that they fail:
WRONG_DIR/sum/{loss,grad_0}.npy (the sum over microbatches) and
WRONG_DIR/last/{loss,grad_0}.npy (the last microbatch alone).
"""
import ast
import os
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
    return header["shape"], struct.unpack("<%df" % (len(body) // 4), body)


def write(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % (
        "(%s)" % "".join("%d," % d for d in shape) if shape else "()")
    total = 10 + len(header) + 1
    header += " " * ((total + 63) // 64 * 64 - total) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode("latin1"))
        f.write(struct.pack("<%df" % len(values), *values))


def main(src, dst, wrong=None):
    wshape, w = read(os.path.join(src, "input_0.npy"))
    xshape, x = read(os.path.join(src, "input_1.npy"))
    tshape, t = read(os.path.join(src, "input_2.npy"))
    assert wshape == (3, 2) and xshape[1:] == (4, 3) and tshape[1:] == (4, 2)
    m = xshape[0]
    loss, grad = 0.0, [0.0] * 6
    last_loss, last_grad = 0.0, [0.0] * 6
    for mb in range(m):
        xs = x[mb * 12:(mb + 1) * 12]
        ts = t[mb * 8:(mb + 1) * 8]
        d = [sum(xs[r * 3 + k] * w[k * 2 + n] for k in range(3)) - ts[r * 2 + n]
             for r in range(4) for n in range(2)]
        last_loss = sum(v * v for v in d) / 8
        last_grad = [sum(xs[r * 3 + k] * 2 * d[r * 2 + n] / 8 for r in range(4))
                     for k in range(3) for n in range(2)]
        loss += last_loss / m
        grad = [g + lg / m for g, lg in zip(grad, last_grad)]
    os.makedirs(dst, exist_ok=True)
    write(os.path.join(dst, "loss.npy"), (), [loss])
    write(os.path.join(dst, "grad_0.npy"), (3, 2), grad)
    if wrong:
        for name, l, g in (("sum", loss * m, [v * m for v in grad]),
                           ("last", last_loss, last_grad)):
            os.makedirs(os.path.join(wrong, name), exist_ok=True)
            write(os.path.join(wrong, name, "loss.npy"), (), [l])
            write(os.path.join(wrong, name, "grad_0.npy"), (3, 2), g)
    # The mean, not the sum or the last microbatch: show the numbers.
    print("reference loss %.6g grad_0[0] %.6g over %d microbatches"
          % (loss, grad[0], m))


if __name__ == "__main__":
    main(*sys.argv[1:4])
