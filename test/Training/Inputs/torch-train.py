"""Trains one exported torch case pipelined with pipeopt and compares the
weights and losses with torch.optim's (test/Autodiff/Inputs/torch/<case>/
train, made by scripts/export-torch-cases.py --train-only).

torch-train.py COMPILE RUN DIFF CASE OUTDIR [--opt NAME]... [--schedule S]...
               [-O N] [--partition-options OPTS] [--override FLAG=VALUE]...

COMPILE, RUN, DIFF are the paths of pipeopt-compile, pipeopt-run and
pipeopt-npy-diff; CASE is the case's directory. For every optimizer
(--opt, default: every one in CASE/train/config.json) and every schedule
(--schedule, default 1f1b):

1. pipeopt-compile CASE/model.mb2.mlir (the model for half the batch)
   --train --loss <case.json loss> --trainable=<params>
   --microbatch-args=<data> --num-stages 2 --num-microbatches 2
   --schedule S -O N (default 0) [--partition-options OPTS]
   (--num-stages 4 for the schedules that put two stages on every rank,
   TWO_CHUNK: always 2 ranks)
   <the optimizer's flags in config.json> -o OUTDIR/<opt>-<S>.so;
2. pipeopt-run --steps <config.json steps> with every committed argument
   CASE/arg_<i>.npy (the data whole: the runtime splits the batch of 4 into
   2 microbatches of 2) and the target CASE/target.npy, --output-dir
   OUTDIR/<opt>-<S>;
3. pipeopt-npy-diff of loss.npy and every weight_<i>.npy against
   CASE/train/<opt>/, with config.json's tolerance (weight_tolerance for
   the weights that have their own).

Prints pipeopt-npy-diff's line for every compared file, in the order
above; exits 1 at the first failure (a missing file is one).

--override FLAG=VALUE replaces the value of one of the optimizer's flags
(e.g. --override --lr=0.11) and skips step 3: the run's files are left in
OUTDIR/<opt>-<S>-override for the test to show that they do NOT match.

Compiles and runs two jobs at a time. Needs no numpy (the lit tests must
not).
"""
import concurrent.futures
import json
import os
import subprocess
import sys


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    return r.returncode, r.stdout


def usage(msg):
    sys.exit("torch-train.py: error: %s\n\n%s" % (msg, __doc__))


# Schedules that place two stages (chunks) on every rank: 2 ranks need 4
# stages (as in train-matrix.py).
TWO_CHUNK = {"interleaved-1f1b", "looped-bfs", "zb-v", "dualpipev", "hanayo",
             "interleaved-zb"}


def parse(argv):
    if len(argv) < 5:
        usage("expected COMPILE RUN DIFF CASE OUTDIR")
    tools = dict(zip(("compile", "run", "diff"), argv[:3]))
    case, out = argv[3], argv[4]
    opts, schedules, level, overrides, partition = [], [], "0", [], []
    rest = list(argv[5:])
    while rest:
        a = rest.pop(0)
        if a in ("--opt", "--schedule", "-O", "--override",
                 "--partition-options") and not rest:
            usage("%s needs a value" % a)
        if a == "--opt":
            opts.append(rest.pop(0))
        elif a == "--schedule":
            schedules.append(rest.pop(0))
        elif a == "-O":
            level = rest.pop(0)
        elif a == "--partition-options":
            partition = ["--partition-options=" + rest.pop(0)]
        elif a == "--override":
            flag, sep, value = rest.pop(0).partition("=")
            if not sep:
                usage("--override takes FLAG=VALUE")
            overrides.append((flag, value))
        else:
            usage("unknown argument '%s'" % a)
    return (tools, case, out, opts, schedules or ["1f1b"], level, overrides,
            partition)


def job(tools, case, out, meta, config, opt, schedule, level, overrides,
        partition):
    """Compiles and runs one (optimizer, schedule); returns (run directory,
    log) or raises RuntimeError with the failing tool's output."""
    spec = config["optimizers"][opt]
    flags = list(spec["flags"])
    for flag, value in overrides:
        if flag not in flags[::2]:
            raise RuntimeError("--override %s: the optimizer %s has no such "
                               "flag (%s)" % (flag, opt, " ".join(flags)))
        flags[flags.index(flag) + 1] = value
    args = meta["args"]
    trainable = [str(a["index"]) for a in args if a["kind"] == "param"]
    data = [str(a["index"]) for a in args if a["kind"] == "data"]
    if [int(i) for i in trainable] != config["parameters"]:
        raise RuntimeError("case.json's parameters %s are not config.json's "
                           "%s" % (trainable, config["parameters"]))
    name = "%s-%s%s" % (opt, schedule, "-override" if overrides else "")
    so = os.path.join(out, name + ".so")
    rundir = os.path.join(out, name)
    compile_cmd = [tools["compile"], os.path.join(case, "model.mb2.mlir"),
                   "--train", "--loss=" + meta["loss"],
                   "--trainable=" + ",".join(trainable),
                   "--microbatch-args=" + ",".join(data),
                   "--num-stages", "4" if schedule in TWO_CHUNK else "2",
                   "--num-microbatches", "2",
                   "--schedule", schedule, "-O" + level] + partition + \
        flags + ["-o", so]
    rc, log = run(compile_cmd)
    if rc != 0:
        raise RuntimeError("%s\n%s failed (exit %d)" % (
            log, " ".join(compile_cmd), rc))
    inputs = []
    for a in args:
        inputs += ["--input", "%d=%s" % (
            a["index"], os.path.join(case, "arg_%d.npy" % a["index"]))]
    inputs += ["--input", "%d=%s" % (len(args),
                                     os.path.join(case, "target.npy"))]
    run_cmd = [tools["run"], so] + inputs + [
        "--steps", str(config["steps"]), "--output-dir", rundir, "--quiet"]
    rc, log = run(run_cmd)
    if rc != 0:
        raise RuntimeError("%s\n%s failed (exit %d)" % (
            log, " ".join(run_cmd), rc))
    return rundir


def main(argv):
    (tools, case, out, opts, schedules, level, overrides,
     partition) = parse(argv)
    meta = json.load(open(os.path.join(case, "case.json")))
    config = json.load(open(os.path.join(case, "train", "config.json")))
    for o in opts:
        if o not in config["optimizers"]:
            usage("--opt %s: not one of %s" % (o, ", ".join(
                config["optimizers"])))
    opts = opts or list(config["optimizers"])
    os.makedirs(out, exist_ok=True)
    jobs = [(o, s) for o in opts for s in schedules]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(job, tools, case, out, meta, config, o, s,
                               level, overrides, partition)
                   for o, s in jobs]
        for (opt, schedule), fut in zip(jobs, futures):
            try:
                rundir = fut.result()
            except RuntimeError as e:
                sys.stdout.write(str(e) + "\n")
                sys.exit("torch-train.py: error: %s %s: %s" % (
                    os.path.basename(case), opt, schedule))
            if overrides:
                print("%s: not compared (--override %s)" % (
                    rundir, " ".join("%s=%s" % fv for fv in overrides)))
                continue
            tol = config["optimizers"][opt]["tolerance"]
            ref = os.path.join(case, "train", opt)
            files = ["loss.npy"] + ["weight_%d.npy" % i
                                    for i in config["parameters"]]
            for f in files:
                if f == "loss.npy":
                    t = tol["loss"]
                else:
                    t = tol["weight_tolerance"].get(
                        f[len("weight_"):-len(".npy")], tol["weights"])
                rc, log = run([tools["diff"], "--rtol", repr(t["rtol"]),
                               "--atol", repr(t["atol"]),
                               os.path.join(rundir, f),
                               os.path.join(ref, f)])
                sys.stdout.write(log)
                if rc != 0:
                    sys.exit("torch-train.py: error: %s %s %s: %s: "
                             "pipeopt-npy-diff failed (no match, or a file "
                             "missing)" % (os.path.basename(case), opt,
                                           schedule, f))


if __name__ == "__main__":
    main(sys.argv[1:])
