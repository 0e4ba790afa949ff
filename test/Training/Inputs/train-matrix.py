#!/usr/bin/env python3
"""Pipelined training against the unpartitioned training reference.

For one model, trains every (schedule, ranks, microbatches, optimizer,
communicator) combination given for --steps steps and compares the final
weights (weight_<i>.npy of every trainable argument) and the per-step
losses with those of `pipeopt-compile --reference --train` on the same
data: the reference runs the whole model's training step (@f_grad, the
model differentiated as one function) for every microbatch on one rank,
the pipelined build the stage functions' F / B / W as the schedule orders
them on R ranks, with the activations and gradients sent between ranks.
They share the runtime's optimizer code and nothing else.

Prints one line per combination:

  1f1b ranks=2 microbatches=4 sgd loopback: ok (4 weights, 3 losses)

and, per mismatching file, pipeopt-npy-diff's FAIL line; exits 1 if any
combination fails. Tools are taken from PATH (lit puts build/bin there).

With --data-parallel D the pipelined builds run D replicas
(pipeopt-run --data-parallel D, D x R ranks; --zero 0,1 also with ZeRO-1)
on the global batch of D x M microbatches, and the reference is the
unpartitioned step over those D x M microbatches: the gradient averaged
over the replicas equals the reference's mean over the global batch.

Usage: train-matrix.py MODEL WORKDIR --loss mse [--microbatch-args LIST]
         [--schedules a,b] [--ranks 2,4] [--microbatches 4,8]
         [--optimizers sgd,adamw] [--comms loopback,mpi] [--mpirun CMD]
         [--steps 3] [--seed N] [--lr X] [--eps X] [--data-parallel D]
         [--zero 0,1]
"""

import argparse
import json
import os
import shlex
import subprocess
import sys

# Schedules that place two stages (chunks) on every rank: R ranks need 2R
# stages (pipeopt-pipeline's num-stages help).
TWO_CHUNK = {"interleaved-1f1b", "looped-bfs", "zb-v", "dualpipev", "hanayo",
             "interleaved-zb"}

# Hyper-parameters of each optimizer (pipeopt-compile flags).
OPTIMIZERS = {
    "sgd": ["--optimizer", "sgd", "--lr", "0.1"],
    "momentum": ["--optimizer", "momentum", "--lr", "0.05", "--momentum", "0.9",
                 "--weight-decay", "0.01"],
    "adamw": ["--optimizer", "adamw", "--lr", "0.01", "--betas", "0.9,0.999",
              "--eps", "1e-8", "--weight-decay", "0.01"],
}


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, **kw)
    return p.returncode, p.stdout


def must(cmd):
    rc, out = run(cmd)
    if rc != 0:
        sys.stdout.write("command failed (%d): %s\n%s" %
                         (rc, " ".join(shlex.quote(c) for c in cmd), out))
        sys.exit(1)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("work")
    ap.add_argument("--loss", required=True)
    ap.add_argument("--microbatch-args", default=None)
    ap.add_argument("--schedules", default="gpipe,1f1b,interleaved-1f1b,"
                    "looped-bfs,zb-h1,zb-v,dualpipev,chimera,hanayo")
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--microbatches", default="4,8")
    ap.add_argument("--optimizers", default="sgd,adamw")
    ap.add_argument("--comms", default="loopback")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", default=None,
                    help="the learning rate of every optimizer (default: "
                         "each one's in OPTIMIZERS)")
    ap.add_argument("--eps", default=None,
                    help="AdamW's epsilon (default 1e-8)")
    ap.add_argument("--data-parallel", type=int, default=1,
                    help="replicas D of every pipelined build "
                         "(pipeopt-run --data-parallel)")
    ap.add_argument("--zero", default="0",
                    help="ZeRO stages to run with D > 1 (0, 1 or 0,1)")
    ap.add_argument("--pipelined-extra", default="",
                    help="extra pipeopt-compile flags for the pipelined builds "
                         "only (a deliberately wrong build: the comparison "
                         "must fail)")
    ap.add_argument("--lift-constants", action="store_true",
                    help="make the model's weight constants arguments first "
                         "(pipe-lift-constants), so that they are trained")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    if a.lift_constants:
        lifted = os.path.join(a.work, "lifted.mlir")
        must(["pipeopt", a.model, "--pipe-lift-constants", "-o", lifted])
        a.model = lifted

    common = [a.model, "--train", "--loss", a.loss, "-O", "0"]
    if a.microbatch_args is not None:
        common += ["--microbatch-args", a.microbatch_args]
    if a.lr is not None:
        for flags in OPTIMIZERS.values():
            flags[flags.index("--lr") + 1] = a.lr
    if a.eps is not None:
        flags = OPTIMIZERS["adamw"]
        flags[flags.index("--eps") + 1] = a.eps
    failures = 0
    D = a.data_parallel
    zeros = [int(z) for z in a.zero.split(",")] if D > 1 else [0]
    for m in [int(x) for x in a.microbatches.split(",")]:
        for opt in a.optimizers.split(","):
            ref = os.path.join(a.work, "ref-m%d-%s" % (D * m, opt))
            must(["pipeopt-compile", *common, "--reference",
                  "--num-microbatches", str(D * m), *OPTIMIZERS[opt],
                  "-o", ref + ".so"])
            inputs = os.path.join(a.work, "in-m%d" % (D * m))
            if not os.path.isdir(inputs):
                must(["pipeopt-npy-diff", "--make-inputs",
                      ref + ".manifest.json", inputs, "--seed", str(a.seed)])
            feed = []
            for f in sorted(os.listdir(inputs)):
                if f.startswith("input_") and f.endswith(".npy"):
                    feed += ["--input", "%s=%s" % (f[6:-4],
                                                   os.path.join(inputs, f))]
            must(["pipeopt-run", ref + ".so", "--steps", str(a.steps),
                  "--quiet", "--output-dir", ref, *feed])
            refs = sorted(f for f in os.listdir(ref)
                          if f.startswith("weight_") or f == "loss.npy")
            if not any(f.startswith("weight_") for f in refs):
                print("reference m=%d %s wrote no weights" % (m, opt))
                sys.exit(1)
            for sched in a.schedules.split(","):
                for r in [int(x) for x in a.ranks.split(",")]:
                    if sched == "dualpipev" and m < 2 * r:
                        # DualPipeV's two directions need 2R microbatches.
                        print("%s ranks=%d microbatches=%d %s: skipped "
                              "(needs microbatches >= 2 x ranks)" %
                              (sched, r, m, opt))
                        continue
                    stages = 2 * r if sched in TWO_CHUNK else r
                    name = "%s-r%d-m%d-%s" % (sched, r, m, opt)
                    so = os.path.join(a.work, name + ".so")
                    rc, out = run(["pipeopt-compile", *common,
                                   "--schedule", sched,
                                   "--num-stages", str(stages),
                                   "--num-microbatches", str(m),
                                   *OPTIMIZERS[opt],
                                   *shlex.split(a.pipelined_extra),
                                   "-o", so])
                    if rc != 0:
                        print("%s ranks=%d microbatches=%d %s: compile "
                              "FAILED\n%s" % (sched, r, m, opt, out))
                        failures += 1
                        continue
                    with open(os.path.join(a.work, name + ".manifest.json")) as f:
                        ranks = json.load(f)["num_ranks"]
                    if ranks != r:
                        print("%s: %d ranks, expected %d" % (name, ranks, r))
                        failures += 1
                        continue
                    for comm, zero in [(c, z) for c in a.comms.split(",")
                                       for z in zeros]:
                        dp = []
                        suffix = ""
                        if D > 1:
                            dp = ["--data-parallel", str(D), "--zero",
                                  str(zero)]
                            suffix = " dp=%d zero=%d" % (D, zero)
                        out_dir = os.path.join(a.work, "%s-%s-d%d-z%d" % (
                            name, comm, D, zero))
                        cmd = ["pipeopt-run", so, "--steps", str(a.steps),
                               "--quiet", "--timeout-s", "60",
                               "--output-dir", out_dir, *dp, *feed]
                        if comm == "mpi":
                            cmd = shlex.split(a.mpirun) + \
                                ["-np", str(r * D)] + cmd + ["--comm", "mpi"]
                        rc, out = run(cmd)
                        label = "%s ranks=%d microbatches=%d %s %s%s" % (
                            sched, r, m, opt, comm, suffix)
                        if rc != 0:
                            print("%s: run FAILED\n%s" % (label, out))
                            failures += 1
                            continue
                        bad = []
                        for f in refs:
                            rc, out = run(["pipeopt-npy-diff",
                                           os.path.join(out_dir, f),
                                           os.path.join(ref, f)])
                            if rc != 0:
                                bad.append(out.strip())
                        if bad:
                            print("%s: FAIL\n%s" % (label, "\n".join(bad)))
                            failures += 1
                        else:
                            print("%s: ok (%d weights, %d losses)" % (
                                label, len(refs) - 1, a.steps))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
