#!/usr/bin/env python3
"""What a training step costs when Python drives it, against pipeopt-run.

Builds a transformers GPT-2 (default 8 layers x 512 wide, vocab 50257, batch
8 x seq 64, as issue 33's benchmark) with pipeopt.torch, once, and then runs
the same build in alternating rounds:

  python   : PipelinedModule.step(inputs, targets) per step (the inputs are
             set from torch tensors every step, the loss is read back), wall
             time of each call;
  pipeopt-run : `pipeopt-run model.so --steps N` on the same .so, manifest,
             weights and batch, per-step times from its "step k/N" lines
             (each covers the whole step, optimizer included).

Prints the median step of each side per round, and the overall medians and
their ratio (python / pipeopt-run). Needs torch, torch-mlir, transformers
and the built package on PYTHONPATH (build/python). Not a test: nothing
asserts on these numbers.

    PYTHONPATH=build/python python3 benchmarks/python_step_overhead.py --rounds 3 --steps 6
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--stages", type=int, default=2)
    ap.add_argument("--microbatches", type=int, default=4)
    ap.add_argument("--schedule", default="1f1b")
    ap.add_argument("--threads", type=int, default=1,
                    help="kernel threads per rank (both sides)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=6,
                    help="measured steps per round and side")
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()

    import torch
    import transformers
    import pipeopt
    import pipeopt.torch

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=args.layers, n_embd=args.width,
                                  n_head=args.heads, vocab_size=args.vocab,
                                  n_positions=max(64, args.seq),
                                  bos_token_id=0, eos_token_id=0)
    model = transformers.GPT2LMHeadModel(cfg)
    ids = torch.randint(0, args.vocab, (args.batch, args.seq + 1))
    inputs, targets = ids[:, :-1], ids[:, 1:]
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="pipeopt-ovh-"))
    t0 = time.perf_counter()
    pipe = pipeopt.torch.pipeline(
        model, inputs, "cross_entropy", num_stages=args.stages,
        num_microbatches=args.microbatches, schedule=args.schedule,
        optimizer=torch.optim.AdamW(model.parameters(), lr=1e-4),
        workdir=workdir, threads=args.threads)
    print(f"export + compile: {time.perf_counter() - t0:.1f} s "
          f"({pipe.build.model_path})", flush=True)
    flags = pipe.exported.write(str(workdir / "inputs"), inputs, targets)
    run_tool = pipeopt._tool("pipeopt-run")

    def python_round():
        times = []
        for _ in range(args.steps):
            t = time.perf_counter()
            pipe.step(inputs, targets)
            times.append(time.perf_counter() - t)
        return times

    def tool_round():
        cmd = [str(run_tool), str(pipe.build.model_path), "--steps",
               str(args.steps), "--threads", str(args.threads)] + flags
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        times = []
        for line in out.stdout.splitlines():
            m = re.search(r"step \d+/\d+: .*\(([0-9.]+) s\)", line)
            if m:
                times.append(float(m.group(1)))
        if len(times) != args.steps:
            sys.exit("could not read the step times of pipeopt-run:\n" +
                     out.stdout)
        return times

    python_all, tool_all = [], []
    pipe.step(inputs, targets)  # warm-up (first-touch of the buffers)
    for r in range(args.rounds):
        py = python_round()
        tl = tool_round()
        python_all += py
        tool_all += tl
        print(f"round {r + 1}: python median {statistics.median(py):.4f} s, "
              f"pipeopt-run median {statistics.median(tl):.4f} s", flush=True)
    mp, mt = statistics.median(python_all), statistics.median(tool_all)
    print(f"GPT-2 {args.layers}x{args.width}, batch {args.batch} x seq "
          f"{args.seq}, {args.stages} ranks {args.schedule}, M = "
          f"{args.microbatches}, {args.threads} thread(s) per rank")
    print(f"median step: python {mp:.4f} s, pipeopt-run {mt:.4f} s, "
          f"ratio {mp / mt:.3f}")


if __name__ == "__main__":
    main()
