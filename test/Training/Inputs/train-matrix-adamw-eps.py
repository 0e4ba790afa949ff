#!/usr/bin/env python3
"""train-matrix.py with another AdamW epsilon.

Usage: train-matrix-adamw-eps.py EPS <train-matrix.py's arguments>

Runs train-matrix.py (beside this file) unchanged except that its AdamW
flags carry --eps EPS instead of 1e-8, for the reference and the pipelined
builds alike. For a model one of whose parameters has an exact gradient of
zero (GPT-2's attention key bias): AdamW with eps 1e-8 divides that
gradient's f32 rounding noise by its own size, so two correct builds that
add the same terms in another order take different steps of about lr
there; a larger eps makes that step about lr * noise / eps.

Exits 2 with a message if train-matrix.py no longer has the AdamW flags
this replaces (use its own option then).
"""
import importlib.util
import os
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit("train-matrix-adamw-eps.py: error: expected EPS and "
                 "train-matrix.py's arguments")
    eps = sys.argv[1]
    try:
        if not float(eps) > 0:
            raise ValueError
    except ValueError:
        sys.exit("train-matrix-adamw-eps.py: error: EPS must be a positive "
                 "number, got '%s'" % eps)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "train-matrix.py")
    spec = importlib.util.spec_from_file_location("train_matrix", path)
    tm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tm)
    flags = getattr(tm, "OPTIMIZERS", {}).get("adamw")
    if not isinstance(flags, list) or "--eps" not in flags[:-1]:
        print("train-matrix-adamw-eps.py: error: %s has no AdamW flag list "
              "with --eps to replace; pass the epsilon with its own option "
              "instead" % path, file=sys.stderr)
        sys.exit(2)
    flags[flags.index("--eps") + 1] = eps
    sys.argv = [path] + sys.argv[2:]
    tm.main()


if __name__ == "__main__":
    main()
