"""Flips one random bit of a model .so, N times, and runs pipeopt-run on
each copy with the build's manifest; prints one line per copy:
"flip <k> at byte <offset>: exit <status>" and the first line of stderr.

usage: flip-bits.py PIPEOPT_RUN MODEL.so MANIFEST OUTDIR N [SEED]
"""
import random
import shutil
import subprocess
import sys


def main():
    run, so, manifest, outdir, n = sys.argv[1:6]
    rng = random.Random(int(sys.argv[6]) if len(sys.argv) > 6 else 1)
    data = open(so, "rb").read()
    for k in range(int(n)):
        offset = rng.randrange(len(data))
        bit = rng.randrange(8)
        flipped = bytearray(data)
        flipped[offset] ^= 1 << bit
        path = f"{outdir}/flip{k}.so"
        with open(path, "wb") as f:
            f.write(flipped)
        p = subprocess.run([run, path, "--manifest", manifest, "--steps", "1",
                            "--quiet", "--timeout-s", "20"],
                           capture_output=True, text=True, timeout=120)
        first = (p.stderr.splitlines() or [""])[0]
        print(f"flip {k} at byte {offset}: exit {p.returncode}")
        print(f"  {first}")


if __name__ == "__main__":
    main()
