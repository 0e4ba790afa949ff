#!/usr/bin/env python3
"""How steady pipeopt-calibrate's GEMM peak and operand rate are when
another job runs on the node for part of the calibration.

Each trial starts `pipeopt-calibrate --ranks R` and, `--delay` seconds
later, `--hogs` busy processes for `--seconds` seconds (none with
--hogs 0), then reads the rates from the calibration's log line. With
`--baseline BIN` the trials alternate between BIN and the calibrate under
test, so both see the same hour. Prints every trial and, per binary,
min / median / max of the f32 GEMM peak (GFLOP/s) and of the written
operand rate (GB/s out of L2). A measurement, never a test.

  python3 benchmarks/calibrate_disturbed.py --trials 9 \\
      --baseline /tmp/calibrate-old              # 4 hogs, 0.4 s after 20 ms
  python3 benchmarks/calibrate_disturbed.py --hogs 0 --trials 5  # quiet
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINE = re.compile(r"GEMM ([0-9.]+) / ([0-9.]+) GFLOP/s.*?operands ([0-9.]+) "
                  r"GB/s out of L2 / ([0-9.]+) GB/s in L2")


def trial(binary, args):
    cal = subprocess.Popen(
        [binary, "--ranks", str(args.ranks), "-o", "-"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    hogs = []
    try:
        if args.hogs > 0:
            time.sleep(args.delay)
            hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                    for _ in range(args.hogs)]
            time.sleep(args.seconds)
        for h in hogs:
            h.kill()
        _, err = cal.communicate(timeout=600)
    finally:
        # Killed or interrupted: no busy process and no calibration left.
        for p in hogs + [cal]:
            if p.poll() is None:
                p.kill()
                p.wait()
    if cal.returncode != 0:
        sys.exit(f"{binary} failed (exit {cal.returncode}):\n{err}")
    m = LINE.search(err)
    if not m:
        sys.exit(f"{binary}: no rates in its log:\n{err}")
    warned = [w for w in ("the GEMM rounds disagree", "operands out of L2 measured faster")
              if w in err]
    return float(m.group(1)), float(m.group(3)), warned


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calibrate", default=str(ROOT / "build/bin/pipeopt-calibrate"))
    p.add_argument("--baseline", help="another pipeopt-calibrate to alternate with")
    p.add_argument("--trials", type=int, default=9)
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--hogs", type=int, default=4, help="busy processes (0: none)")
    p.add_argument("--delay", type=float, default=0.02, help="seconds before the hogs start")
    p.add_argument("--seconds", type=float, default=0.4, help="how long the hogs run")
    args = p.parse_args()
    if args.trials < 1 or args.ranks < 1 or args.hogs < 0:
        p.error("--trials and --ranks must be at least 1, --hogs at least 0")
    if args.delay < 0 or args.seconds < 0:
        p.error("--delay and --seconds must not be negative")

    binaries = [args.calibrate] + ([args.baseline] if args.baseline else [])
    for b, what in zip(binaries, ["--calibrate", "--baseline"]):
        if not (Path(b).is_file() and os.access(b, os.X_OK)):
            hint = " (build first: ninja -C build)" if what == "--calibrate" else ""
            sys.exit(f"{what} {b}: no such executable{hint}")
    results = {b: [] for b in binaries}
    for t in range(args.trials):
        for b in (binaries if t % 2 == 0 else binaries[::-1]):
            gemm, operands, warned = trial(b, args)
            results[b].append((gemm, operands))
            print(f"trial {t + 1}/{args.trials} {b}: GEMM {gemm:.1f} GFLOP/s, "
                  f"operands {operands:.1f} GB/s"
                  + "".join(f" (warning: {w})" for w in warned),
                  flush=True)

    def summary(values):
        return (f"{min(values):.1f} / {statistics.median(values):.1f} / "
                f"{max(values):.1f}")
    print(f"\n{args.hogs} busy process(es) for {args.seconds} s after {args.delay} s"
          if args.hogs else "\nno disturbance")
    print("binary: GEMM f32 GFLOP/s min / median / max; operands GB/s min / median / max")
    for b, r in results.items():
        print(f"{b}: {summary([g for g, _ in r])}; {summary([o for _, o in r])}")


if __name__ == "__main__":
    main()
