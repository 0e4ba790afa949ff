"""Checks pipeopt's gradients of one exported torch case against
torch.autograd's (test/Autodiff/Inputs/torch/<case>, made by
scripts/export-torch-cases.py).

torch-grad.py PIPEOPT COMPILE RUN DIFF CASE OUTDIR [PIPE-DIFFERENTIATE OPTIONS]
torch-grad.py PIPEOPT COMPILE RUN DIFF CASE OUTDIR --train=M [--auto] [PIPEOPT-COMPILE OPTIONS]

PIPEOPT, COMPILE, RUN, DIFF are the paths of pipeopt, pipeopt-compile,
pipeopt-run and pipeopt-npy-diff.

1. `pipeopt CASE/model.mlir --pipe-differentiate="loss=<case.json loss>
   OPTIONS"` builds @forward_grad (loss and the gradient of every float
   argument, in argument order);
2. pipeopt-compile --reference --function forward_grad (one microbatch: the
   whole batch, as torch computed it) and pipeopt-run on the committed
   arguments CASE/arg_<i>.npy and target CASE/target.npy;
3. pipeopt-npy-diff compares the loss with CASE/loss.npy and each gradient
   with CASE/grad_<i>.npy, with the case's tolerance (case.json:
   rtol 1e-4 relative to the largest torch gradient of that argument, and
   an absolute bound only where torch's gradient is exactly zero).

With --train=M the user-facing path instead: pipeopt-compile --reference
--train --loss --trainable=<params> --microbatch-args=<data> with M
microbatches (CASE/model.mb<M>.mlir, the model for batch/M examples;
the committed arguments are the whole batch), and pipeopt-run --steps 1
--save-grads, whose loss.npy and
grad_<i>.npy (the mean over microbatches) are compared with torch's.

Prints one pipeopt-npy-diff line per compared file; exits 1 on the first
failure. Needs no numpy (the lit tests must not).
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode != 0:
        sys.stdout.write(r.stdout)
        sys.exit("torch-grad.py: error: %s failed (exit %d)"
                 % (os.path.basename(cmd[0]), r.returncode))
    return r.stdout


def train_reference(tool, meta, case, out, microbatches, options):
    """The user-facing path: pipeopt-compile --reference --train with M
    microbatches (the gradient of the batch is the mean of the microbatch
    gradients), pipeopt-run --save-grads."""
    args = meta["args"]
    data = [str(a["index"]) for a in args if a["kind"] == "data"]
    trainable = [str(a["index"]) for a in args if a["kind"] == "param"]
    so = os.path.join(out, "train.so")
    # model.mb<M>.mlir is the model for BATCH/M examples.
    model = "model.mlir" if microbatches == 1 else "model.mb%d.mlir" % microbatches
    # --auto: pipeopt-compile's own classification of parameters and data
    # (--trainable=auto --microbatch-args=auto) instead of case.json's.
    classify = ["--trainable=" + ",".join(trainable),
                "--microbatch-args=" + ",".join(data)]
    if "--auto" in options:
        classify = []
        options = [o for o in options if o != "--auto"]
    run([tool("pipeopt-compile"), os.path.join(case, model),
         "--reference", "--train", "--loss=" + meta["loss"]] + classify +
        ["--num-microbatches", str(microbatches), "-O1", "-o", so] +
        list(options))
    inputs = []
    for a in args:
        inputs += ["--input", "%d=%s" % (a["index"],
                                         os.path.join(case, "arg_%d.npy" % a["index"]))]
    inputs += ["--input", "%d=%s" % (len(args), os.path.join(case, "target.npy"))]
    rundir = os.path.join(out, "run")
    run([tool("pipeopt-run"), so] + inputs +
        ["--steps", "1", "--save-grads", "--output-dir", rundir, "--quiet"])
    sys.stdout.write(run([tool("pipeopt-npy-diff"), "--rtol", "1e-5",
                          os.path.join(rundir, "loss.npy"),
                          os.path.join(case, "loss.npy")]))
    for a in args:
        if a["kind"] != "param":
            continue
        tol = a["grad_tolerance"]
        sys.stdout.write(run([tool("pipeopt-npy-diff"), "--rtol", repr(tol["rtol"]),
                              "--atol", repr(tol["atol"]),
                              os.path.join(rundir, "grad_%d.npy" % a["index"]),
                              os.path.join(case, a["grad"])]))


def main(pipeopt, compile_, run_, diff, case, out, *options):
    meta = json.load(open(os.path.join(case, "case.json")))
    os.makedirs(out, exist_ok=True)
    paths = {"pipeopt": pipeopt, "pipeopt-compile": compile_,
             "pipeopt-run": run_, "pipeopt-npy-diff": diff}
    tool = lambda name: paths[name]
    if options and options[0].startswith("--train="):
        return train_reference(tool, meta, case, out,
                               int(options[0].split("=", 1)[1]), options[1:])
    ad = os.path.join(out, "ad.mlir")
    opts = " ".join(["loss=" + meta["loss"]] + list(options))
    run([tool("pipeopt"), os.path.join(case, "model.mlir"),
         "--pipe-differentiate=" + opts, "-o", ad])
    so = os.path.join(out, "grad.so")
    run([tool("pipeopt-compile"), ad, "--reference", "--function",
         meta["function"] + "_grad", "--num-microbatches", "1", "-O1",
         "-o", so])
    args = meta["args"]
    inputs = []
    for a in args:
        inputs += ["--input", "%d=%s" % (a["index"],
                                         os.path.join(case, "arg_%d.npy" % a["index"]))]
    inputs += ["--input", "%d=%s" % (len(args), os.path.join(case, "target.npy"))]
    rundir = os.path.join(out, "run")
    run([tool("pipeopt-run"), so] + inputs + ["--output-dir", rundir, "--quiet"])
    drop = os.path.join(HERE, "npy-drop-microbatch.py")

    def compare(k, ref, rtol, atol):
        got = os.path.join(out, os.path.basename(ref))
        run([sys.executable, drop, os.path.join(rundir, "output_%d.npy" % k), got])
        sys.stdout.write(run([tool("pipeopt-npy-diff"), "--rtol", repr(rtol),
                              "--atol", repr(atol), got, ref]))

    compare(0, os.path.join(case, "loss.npy"), 1e-5, 0.0)
    k = 1
    for a in args:
        if not a["dtype"].startswith("f"):
            continue
        tol = a["grad_tolerance"]
        compare(k, os.path.join(case, a["grad"]), tol["rtol"], tol["atol"])
        k += 1


if __name__ == "__main__":
    if len(sys.argv) < 7:
        sys.exit(__doc__)
    main(*sys.argv[1:])
