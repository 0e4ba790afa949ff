#!/usr/bin/env python3
"""Training steps of transformer language models: pipeopt against PyTorch.

Builds causal language models from transformers configs (random weights,
nothing downloaded; dropout 0 so that every side computes the same
function):

  gpt2-4x128    GPT2LMHeadModel, 4 layers x 128, 4 heads, vocab 4096,
                batch 8 x seq 32
  llama-4x128   LlamaForCausalLM, 4 layers x 128, 4 query / 2 key-value
                heads (grouped-query attention), SwiGLU 352, RMSNorm, RoPE,
                vocab 4096, batch 8 x seq 32
  gpt2-8x512    GPT2LMHeadModel, 8 x 512, 8 heads, vocab 50257, batch 8 x
                seq 64
  gpt2-12x768   GPT-2 small's shape: 12 x 768, 12 heads, vocab 50257, batch
                8 x seq 16 (a short sequence, so that it runs here)
  gpt2-16x512   gpt2-8x512 with twice the layers, for the compile time
                (--models gpt2-16x512 --sides reference)

and measures, in alternating rounds (every side once per round, in the
same order; a shared machine's load changes), the training step (AdamW,
lr 1e-4, betas 0.9/0.999, eps 1e-8, weight decay 0.01; cross-entropy over
the next token at every position, the mean over the batch) of:

  eager         torch, the module called eagerly (torch.set_num_threads(T)),
                torch.optim.AdamW; a persistent worker process
  compile       the same module under torch.compile (inductor), where it
                compiles on this host (else the row says why)
  reference     pipeopt's unpartitioned step: pipeopt-compile --reference
                --train (M_ref microbatches, default 1: the whole batch at
                once, as torch) and pipeopt-run --threads T
  <sched>-r<R>  pipeopt pipelined: --schedule <sched> --num-stages R
                (1f1b and zb-h1, R = 2 and 4 by default), M microbatches
                (default 4), loopback (R rank threads); MPI once (the first
                schedule with the first rank count, one round, mpirun -np R)
  torchpp-r<R>  torch.distributed.pipelining: R processes over gloo,
                PipelineStage + Schedule1F1B(loss_fn=cross-entropy), AdamW
                on each stage, the blocks split evenly (embeddings on the
                first stage, final norm and LM head on the last); GPT-2 only

Step times: torch's are the wall time of zero_grad + forward + backward +
optimizer.step() per step (Schedule1F1B: the slowest rank's, after an
untimed barrier); pipeopt's the per-step lines of pipeopt-run ("step k/N:
loss L (S s)"), which cover the whole step, optimizer included. The table
shows the median over all measured steps of all rounds and its ratio to
torch eager's, the first loss of each side (they start from the same
weights and data, so the losses must agree), and the peak resident memory
(ru_maxrss) of each side's process: the torch worker (model, optimizer,
activations, and torch itself; for Schedule1F1B the largest rank's) and
pipeopt-run (the largest over the rounds, polled every 10 ms; not measured
under mpirun), as VmHWM of /proc/<pid>/status.

Also printed: pipeopt-compile's time per phase (--timing: parse,
schedule, lower, llvm-opt, codegen, link) for every build, the export time,
and where pipeopt's step goes, from pipeopt-run --profile of the last
round: per rank the compute of the actions (forward, backward, per stage),
the time in send / recv (recv includes waiting for the message) and input /
output calls, and the rest of the step (the optimizer, the gradient
accumulation and exchange between ranks, and whatever else runs outside the
actions), and within them the library kernels (GEMM), the gradient
accumulation and the rest of the generated code, and the update at the
step's end (gradient exchange and optimizer): pipeopt-run's profile fields
kernel_s, gradient_s and update_s.

pipeopt-run runs without an OPENBLAS_CORETYPE of this environment (this
host sets OPENBLAS_CORETYPE=Haswell, which would hold OpenBLAS to its AVX2
kernels on an AVX-512 CPU): the runtime then picks the kernels as it does
for any user who did not set it; --keep-blas-coretype keeps the variable.
The kernels pipeopt-run used are printed at the end.

Needs torch, torch-mlir and transformers (never needed by the build or the
tests), a build with pipeopt-compile and pipeopt-run, and mpirun for the MPI
row. Not a test: nothing asserts on these numbers.

  python3 benchmarks/train_lm_vs_torch.py --quick
  python3 benchmarks/train_lm_vs_torch.py --models gpt2-4x128,llama-4x128 --rounds 3
  python3 benchmarks/train_lm_vs_torch.py --models gpt2-8x512 --sides eager,reference,1f1b-r2,torchpp-r2
"""

import argparse
import collections
import importlib.util
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LR, BETAS, EPS, WEIGHT_DECAY = 1e-4, (0.9, 0.999), 1e-8, 0.01

# pipeopt-run's environment (set in main: without OPENBLAS_CORETYPE unless
# --keep-blas-coretype) and the "kernels:" lines it printed.
PIPEOPT_ENV = None
KERNELS_SEEN = set()

# name -> (family, layers, width, heads, kv heads, mlp width, vocab, batch,
#          seq)
MODELS = collections.OrderedDict([
    ("gpt2-4x128", ("gpt2", 4, 128, 4, 4, 512, 4096, 8, 32)),
    ("llama-4x128", ("llama", 4, 128, 4, 2, 352, 4096, 8, 32)),
    ("gpt2-8x512", ("gpt2", 8, 512, 8, 8, 2048, 50257, 8, 64)),
    ("gpt2-12x768", ("gpt2", 12, 768, 12, 12, 3072, 50257, 8, 16)),
    # Twice gpt2-8x512's depth: for the compile time (--sides reference).
    ("gpt2-16x512", ("gpt2", 16, 512, 8, 8, 2048, 50257, 8, 64)),
])
DEFAULT_MODELS = "gpt2-4x128,llama-4x128"


def die(msg):
    sys.exit("train_lm_vs_torch.py: error: " + msg)


def peak_rss(pid="self"):
    """VmHWM of /proc/<pid>/status in bytes: the peak resident set of the
    process's current address space (since its exec). Not ru_maxrss: Linux
    keeps that across fork and exec, so a process started from this large
    Python process would report this one's size. 0 where unreadable."""
    try:
        with open("/proc/%s/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


# ---------------------------------------------------------------------------
# Models and data (the same in every process: fixed seeds).
# ---------------------------------------------------------------------------

def build_model(name):
    """The transformers model of MODELS[name], seed 0, dropout 0, eager
    attention (what pipeopt's exporter falls back to; the same on the torch
    side so that both compute the same function)."""
    import torch
    import transformers
    fam, layers, width, heads, kv, mlp, vocab, _, seq = MODELS[name]
    torch.manual_seed(0)
    if fam == "gpt2":
        cfg = transformers.GPT2Config(
            n_layer=layers, n_embd=width, n_head=heads, n_inner=mlp,
            vocab_size=vocab, n_positions=seq, resid_pdrop=0.0,
            embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0,
            attn_implementation="eager")
        return transformers.GPT2LMHeadModel(cfg)
    cfg = transformers.LlamaConfig(
        vocab_size=vocab, hidden_size=width, intermediate_size=mlp,
        num_hidden_layers=layers, num_attention_heads=heads,
        num_key_value_heads=kv, max_position_embeddings=seq, bos_token_id=0,
        eos_token_id=0, attn_implementation="eager")
    return transformers.LlamaForCausalLM(cfg)


def make_data(name):
    """ids [batch, seq] and their next tokens [batch, seq] (i64)."""
    import torch
    _, _, _, _, _, _, vocab, batch, seq = MODELS[name]
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, vocab, (batch, seq + 1), generator=g)
    return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def torch_loss(model, ids, target):
    import torch
    import torch.nn.functional as F
    logits = model(input_ids=ids, attention_mask=torch.ones_like(ids),
                   use_cache=False).logits
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           target.reshape(-1))


# ---------------------------------------------------------------------------
# torch eager / torch.compile: a persistent worker process per side.
# ---------------------------------------------------------------------------

def torch_worker(conn, name, compiled, threads):
    import torch
    torch.set_num_threads(threads)
    try:
        model = build_model(name)
        model.train()
        ids, target = make_data(name)
        opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS,
                                eps=EPS, weight_decay=WEIGHT_DECAY)
        fn = model
        t0 = time.perf_counter()
        if compiled:
            fn = torch.compile(model)

        def step():
            opt.zero_grad(set_to_none=True)
            loss = torch_loss(fn, ids, target)
            loss.backward()
            opt.step()
            return loss.item()

        first_loss = step()  # compiles under torch.compile
        setup = time.perf_counter() - t0
        conn.send(("ready", first_loss, setup))
    except Exception as e:  # report, do not hang the parent
        conn.send(("error", "%s: %s" % (type(e).__name__,
                                       str(e).splitlines()[0][:200]), 0))
        return
    while True:
        cmd = conn.recv()
        if cmd[0] == "steps":
            times = []
            for _ in range(cmd[1]):
                t = time.perf_counter()
                step()
                times.append(time.perf_counter() - t)
            conn.send(times)
        elif cmd[0] == "rss":
            conn.send(peak_rss())
        else:
            return


class TorchSide:
    def __init__(self, name, compiled, threads):
        import multiprocessing as mp
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=torch_worker,
                                args=(child, name, compiled, threads))
        self.proc.start()
        status, self.first_loss, self.setup_s = self.conn.recv()
        self.error = self.first_loss if status == "error" else None

    def steps(self, n, warmup):
        if warmup:
            self.conn.send(("steps", warmup))
            self.conn.recv()
        self.conn.send(("steps", n))
        return self.conn.recv()

    def rss(self):
        self.conn.send(("rss",))
        return self.conn.recv()

    def close(self):
        if self.proc.is_alive():
            self.conn.send(("quit",))
        self.proc.join()


# ---------------------------------------------------------------------------
# torch.distributed.pipelining Schedule1F1B over gloo (GPT-2).
# ---------------------------------------------------------------------------

def gpt2_stage_module(model, rank, ranks, seq):
    """Stage `rank` of `ranks` of a GPT2LMHeadModel: embeddings + the first
    blocks on stage 0, the final LayerNorm and the tied LM head on the last
    (which then holds its own copy of the table: Schedule1F1B has no tied
    parameters), the blocks split evenly."""
    import torch
    import torch.nn as nn
    t = model.transformer
    n = len(t.h)
    lo, hi = rank * n // ranks, (rank + 1) * n // ranks
    mask = torch.full((seq, seq), float("-inf")).triu(1)[None, None]

    class Stage(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(t.h[lo:hi])
            if rank == 0:
                self.wte, self.wpe = t.wte, t.wpe
            if rank == ranks - 1:
                self.ln_f = t.ln_f
                self.head = nn.Linear(t.wte.weight.shape[1],
                                      t.wte.weight.shape[0], bias=False)
                self.head.weight = nn.Parameter(t.wte.weight.detach().clone())
            self.register_buffer("mask", mask, persistent=False)

        def forward(self, x):
            if rank == 0:
                pos = torch.arange(x.shape[1])
                x = self.wte(x) + self.wpe(pos)[None]
            for b in self.blocks:
                out = b(x, attention_mask=self.mask)
                x = out[0] if isinstance(out, tuple) else out
            if rank == ranks - 1:
                x = self.head(self.ln_f(x))
            return x

    return Stage()


def torchpp_worker(rank, ranks, name, microbatches, threads, steps, warmup,
                   port, result):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B
    torch.set_num_threads(threads)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=ranks)
    model = build_model(name)
    ids, target = make_data(name)
    sub = gpt2_stage_module(model, rank, ranks, ids.shape[1])
    stage = PipelineStage(sub, rank, ranks, torch.device("cpu"))

    def loss_fn(logits, tgt):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               tgt.reshape(-1))

    sched = Schedule1F1B(stage, n_microbatches=microbatches, loss_fn=loss_fn)
    opt = torch.optim.AdamW(sub.parameters(), lr=LR, betas=BETAS, eps=EPS,
                            weight_decay=WEIGHT_DECAY)
    times, first_loss = [], None
    for i in range(warmup + steps):
        dist.barrier()
        t = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        losses = []
        if rank == 0:
            sched.step(ids)
        elif rank == ranks - 1:
            sched.step(target=target, losses=losses)
        else:
            sched.step()
        opt.step()
        dt = torch.tensor([time.perf_counter() - t])
        dist.all_reduce(dt, op=dist.ReduceOp.MAX)
        if i >= warmup:
            times.append(dt.item())
        if losses and first_loss is None:
            first_loss = torch.stack(losses).mean().item()
    rss = torch.tensor([float(peak_rss())])
    dist.all_reduce(rss, op=dist.ReduceOp.MAX)
    if rank == ranks - 1:
        result.put((times, first_loss, rss.item()))
    dist.destroy_process_group()


def run_torchpp(name, ranks, microbatches, threads, steps, warmup):
    import multiprocessing as mp
    import socket
    ctx = mp.get_context("spawn")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    q = ctx.Queue()
    procs = [ctx.Process(target=torchpp_worker,
                         args=(r, ranks, name, microbatches, threads, steps,
                               warmup, port, q)) for r in range(ranks)]
    for p in procs:
        p.start()
    out = q.get(timeout=1800)
    for p in procs:
        p.join()
    return out


# ---------------------------------------------------------------------------
# pipeopt: export, compile, run.
# ---------------------------------------------------------------------------

def exporter():
    """python/pipeopt/torch/_export.py by path (needs torch only, not the
    compiled pipeopt package)."""
    name = "_pipeopt_torch_export"
    if name not in sys.modules:
        path = os.path.join(ROOT, "python", "pipeopt", "torch", "_export.py")
        spec = importlib.util.spec_from_file_location(name, path)
        # Registered before it runs: its dataclasses look their module up.
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def export(name, microbatches, work):
    """Exports the model for batch / microbatches rows; returns (compile
    flags, pipeopt-run input flags, seconds)."""
    model = build_model(name)
    ids, target = make_data(name)
    t0 = time.perf_counter()
    step = exporter().export_training_step(
        model, {"input_ids": ids}, "cross_entropy",
        num_microbatches=microbatches, attention_mask="ones")
    secs = time.perf_counter() - t0
    d = os.path.join(work, "%s-m%d" % (name, microbatches))
    # The target (i64 class indices, the argument pipeopt appends for
    # --loss cross-entropy) is the step's "target" record.
    inputs = step.write(d, {"input_ids": ids}, target)
    return os.path.join(d, "model.mlir"), step.compile_flags(), inputs, secs


def optimizer_flags():
    return ["--optimizer", "adamw", "--lr", repr(LR), "--betas",
            "%r,%r" % BETAS, "--eps", repr(EPS), "--weight-decay",
            repr(WEIGHT_DECAY)]


def compile_build(tools, mlir, flags, extra, so):
    # The object cache off: these are compile times, not cache hits.
    cmd = [tools["compile"], mlir] + flags + extra + optimizer_flags() + [
        "--timing", "--cache=false", "-o", so]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    secs = time.perf_counter() - t0
    if p.returncode != 0:
        return None, "compile failed: " + p.stdout.strip()[-400:]
    phases = collections.OrderedDict(
        (m.group(1), float(m.group(2))) for m in re.finditer(
            r"pipeopt-compile: (\S+)\s+([0-9.]+) s", p.stdout))
    phases["total"] = secs
    return phases, None


def run_pipeopt(tools, so, inputs, steps, warmup, threads, prefix=(),
                profile=None):
    """pipeopt-run --steps warmup+steps; returns (measured step times, first
    loss, peak RSS in bytes) or raises RuntimeError."""
    cmd = list(prefix) + [tools["run"], so, "--steps", str(warmup + steps),
                          "--threads", str(threads), "--timeout-s", "600"]
    cmd += inputs
    if prefix:
        cmd += ["--comm", "mpi"]
    if profile:
        cmd += ["--profile", profile]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=PIPEOPT_ENV)
    # pipeopt-run's peak resident set, polled while it runs (loopback: all
    # ranks are this one process; under mpirun the ranks are not measured).
    rss = [0]
    done = threading.Event()

    def poll():
        while not done.wait(0.01):
            rss[0] = max(rss[0], peak_rss(p.pid))

    poller = threading.Thread(target=poll, daemon=True)
    if not prefix:
        poller.start()
    out = p.stdout.read()
    p.wait()
    done.set()
    if not prefix:
        poller.join()
    if p.returncode != 0:
        raise RuntimeError("pipeopt-run failed (%d): %s\n%s" % (
            p.returncode, " ".join(map(shlex.quote, cmd[:6])), out[-600:]))
    steps_seen = [(float(m.group(1)), float(m.group(2))) for m in re.finditer(
        r"step \d+/\d+: loss ([-0-9.e+na]+) \(([0-9.e-]+) s\)", out)]
    if len(steps_seen) != warmup + steps:
        raise RuntimeError("could not read pipeopt-run's step lines:\n" +
                           out[-600:])
    kernels = re.search(r"kernels: (.*)", out)
    if kernels:
        KERNELS_SEEN.add(kernels.group(1).strip())
    return [t for _, t in steps_seen[warmup:]], steps_seen[0][0], rss[0]


def profile_breakdown(path, step_s):
    """Where one step goes, from pipeopt-run's profile JSON: per rank its
    compute (busy_s), send, recv (waiting included), input and output, and
    the rest of the step."""
    prof = json.load(open(path))
    lines = []
    for st in prof["stages"]:
        parts = ["F %.2f ms" % (1e3 * st["forward_s"])]
        for k, lab in (("backward_input_s", "B"), ("backward_weight_s", "W"),
                       ("backward_full_s", "BW")):
            if st.get(k) is not None:
                parts.append("%s %.2f ms" % (lab, 1e3 * st[k]))
        lines.append("      stage %d (rank %s), per microbatch: %s%s" % (
            st["stage"], ",".join(map(str, st["ranks"])), ", ".join(parts),
            " (unpartitioned: F is the whole forward and backward)"
            if prof.get("schedule") == "unpartitioned" else ""))
    for r in prof["ranks"]:
        if "kernel_s" in r:
            # Means over all the run's steps (the first, with its
            # first-touch costs, included), unlike the median step.
            lines.append(
                "      rank %d, mean per step: GEMM and other library kernels "
                "%.1f ms, other code in the actions (loop nests, copies, "
                "fills) %.1f ms, gradient accumulation %.1f ms, update "
                "(gradient exchange with its wait for the peer, optimizer) "
                "%.1f ms" % (
                    r["rank"], 1e3 * r["kernel_s"],
                    1e3 * (r["busy_s"] - r["kernel_s"]),
                    1e3 * r["gradient_s"], 1e3 * r["update_s"]))
        rest = step_s - r["busy_s"] - r["send_s"] - r["recv_s"] - \
            r["input_s"] - r["output_s"]
        lines.append(
            "      rank %d, per step: actions %.1f ms (%.0f%%), send %.1f ms,"
            " recv+wait %.1f ms, input %.1f ms, output %.1f ms, rest "
            "(optimizer, gradient accumulation and exchange, other) %.1f ms"
            " (%.0f%%)" % (r["rank"], 1e3 * r["busy_s"],
                           100 * r["busy_s"] / step_s, 1e3 * r["send_s"],
                           1e3 * r["recv_s"], 1e3 * r["input_s"],
                           1e3 * r["output_s"], 1e3 * rest,
                           100 * rest / step_s))
    return lines


# ---------------------------------------------------------------------------

def mib(b):
    return "%.0f MiB" % (b / 2 ** 20) if b else "-"


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="models: " + ", ".join(MODELS))
    ap.add_argument("--models", default=DEFAULT_MODELS,
                    help="comma-separated (default %(default)s; 'all' for "
                         "every one: the 8x512 and 12x768 builds take "
                         "minutes)")
    ap.add_argument("--sides", default=None,
                    help="comma-separated subset of eager, compile, "
                         "reference, <schedule>-r<R> (e.g. 1f1b-r2), mpi, "
                         "torchpp-r<R> (default: all of them for "
                         "--schedules and --ranks)")
    ap.add_argument("--schedules", default="1f1b,zb-h1")
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--microbatches", type=int, default=4,
                    help="M of the pipelined builds and Schedule1F1B")
    ap.add_argument("--ref-microbatches", type=int, default=1,
                    help="M of pipeopt's unpartitioned step (default 1: "
                         "the whole batch at once, as torch eager)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5,
                    help="measured steps per side and round")
    ap.add_argument("--warmup", type=int, default=2,
                    help="unmeasured steps before each round's")
    ap.add_argument("--threads", type=int, default=1,
                    help="threads per rank (torch: set_num_threads)")
    ap.add_argument("-O", dest="opt_level", default="3",
                    help="pipeopt-compile's -O (default %(default)s)")
    ap.add_argument("--quick", action="store_true",
                    help="gpt2-4x128 only; eager, reference, 1f1b-r2, "
                         "torchpp-r2; 2 rounds of 3 steps")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--mpirun", default="mpirun --allow-run-as-root "
                    "--oversubscribe")
    ap.add_argument("--keep-blas-coretype", action="store_true",
                    help="run pipeopt-run with this environment's "
                    "OPENBLAS_CORETYPE (default: without it, so that the "
                    "runtime picks OpenBLAS's kernels for this CPU as it "
                    "does for a user who did not set it; torch's matmuls "
                    "are its own, whatever it says)")
    ap.add_argument("--workdir", default=None,
                    help="keep the exports and builds here (default: a "
                         "temporary directory, removed)")
    a = ap.parse_args()
    if a.quick:
        a.models = "gpt2-4x128"
        a.sides = a.sides or "eager,reference,1f1b-r2,torchpp-r2"
        a.rounds, a.steps = 2, 3
    models = list(MODELS) if a.models == "all" else a.models.split(",")
    for m in models:
        if m not in MODELS:
            die("unknown model '%s' (known: %s)" % (m, ", ".join(MODELS)))
    ranks = [int(r) for r in a.ranks.split(",")]
    schedules = a.schedules.split(",")
    pipelined = ["%s-r%d" % (s, r) for s in schedules for r in ranks]
    every = (["eager", "compile", "reference"] + pipelined + ["mpi"] +
             ["torchpp-r%d" % r for r in ranks])
    sides = every if a.sides is None else a.sides.split(",")
    for s in sides:
        if s not in every and not re.fullmatch(r"(\S+)-r(\d+)", s):
            die("unknown side '%s' (e.g. %s)" % (s, ", ".join(every)))
    for s in sides:
        if re.fullmatch(r"(\S+)-r(\d+)", s) and s not in pipelined and \
                not s.startswith("torchpp"):
            pipelined.append(s)
    tools = {t: os.path.join(a.build, "bin", "pipeopt-" + t)
             for t in ("compile", "run")}
    for t in tools.values():
        if not os.access(t, os.X_OK):
            die("%s not found: build it (ninja -C build pipeopt-compile "
                "pipeopt-run) or pass --build" % t)
    if "mpi" in sides and not shutil.which(shlex.split(a.mpirun)[0]):
        print("no %s: the MPI row is skipped" % shlex.split(a.mpirun)[0])
        sides.remove("mpi")
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
        import torch_mlir  # noqa: F401
    except ImportError as e:
        die("%s (needs torch, torch-mlir and transformers: pip install "
            "torch torch-mlir transformers)" % e)
    work = a.workdir or tempfile.mkdtemp(prefix="pipeopt-lm-")
    os.makedirs(work, exist_ok=True)
    print("threads per rank %d, %d rounds x %d steps (+%d warm-up), -O%s, "
          "work %s" % (a.threads, a.rounds, a.steps, a.warmup, a.opt_level,
                       work), flush=True)
    global PIPEOPT_ENV
    PIPEOPT_ENV = dict(os.environ)
    if not a.keep_blas_coretype and PIPEOPT_ENV.pop("OPENBLAS_CORETYPE",
                                                    None) is not None:
        print("pipeopt-run runs without this environment's "
              "OPENBLAS_CORETYPE=%s (the runtime picks the kernels; "
              "--keep-blas-coretype keeps it)" % os.environ[
                  "OPENBLAS_CORETYPE"], flush=True)
    try:
        for name in models:
            bench_model(a, tools, name, sides, pipelined, work)
        if KERNELS_SEEN:
            print("\npipeopt-run's kernels: " + "; ".join(
                sorted(KERNELS_SEEN)))
    finally:
        if not a.workdir:
            shutil.rmtree(work, ignore_errors=True)


def bench_model(a, tools, name, sides, pipelined, work):
    fam, layers, width, heads, kv, mlp, vocab, batch, seq = MODELS[name]
    print("\n== %s: %s %d layers x %d, %d heads%s, vocab %d, batch %d x seq "
          "%d ==" % (name, fam, layers, width, heads,
                     " (%d key/value)" % kv if kv != heads else "", vocab,
                     batch, seq), flush=True)
    rows = collections.OrderedDict()  # side -> dict(times, loss, rss, note)
    builds = collections.OrderedDict()  # side -> (so, inputs)
    # -- pipeopt builds ----------------------------------------------------
    exports = {}

    def get_export(m):
        if m not in exports:
            exports[m] = export(name, m, work)
            print("  export (M = %d): %.1f s" % (m, exports[m][3]),
                  flush=True)
        return exports[m]

    want = [s for s in sides if s == "reference" or s in pipelined]
    for side in want:
        m = a.ref_microbatches if side == "reference" else a.microbatches
        mlir, flags, inputs, _ = get_export(m)
        so = os.path.join(work, "%s-%s.so" % (name, side))
        if side == "reference":
            extra = ["--reference"]
        else:
            sched, r = re.fullmatch(r"(\S+)-r(\d+)", side).groups()
            stages = 2 * int(r) if sched.startswith("interleaved") else int(r)
            extra = ["--schedule", sched, "--num-stages", str(stages)]
        phases, err = compile_build(tools, mlir, flags,
                                    extra + ["-O" + a.opt_level], so)
        if err:
            rows[side] = {"note": err.splitlines()[-1][:160]}
            print("  %s: %s" % (side, err), flush=True)
            continue
        builds[side] = (so, inputs)
        print("  compile %-12s %s" % (side, ", ".join(
            "%s %.1f s" % kv for kv in phases.items())), flush=True)
    # -- torch workers -----------------------------------------------------
    workers = {}
    for side, compiled in (("eager", False), ("compile", True)):
        if side not in sides:
            continue
        w = TorchSide(name, compiled, a.threads)
        if w.error:
            rows[side] = {"note": w.error}
            print("  %s: %s" % (side, w.error), flush=True)
            w.close()
            continue
        workers[side] = w
        print("  torch %s: set-up %.1f s (first step%s)" % (
            side, w.setup_s, " and inductor" if compiled else ""),
            flush=True)
    # -- rounds ------------------------------------------------------------
    for side in list(workers) + list(builds) + [
            s for s in sides if s.startswith("torchpp")]:
        rows.setdefault(side, {"times": [], "loss": None, "rss": 0})
    prof_path = {}
    for rnd in range(a.rounds):
        last = rnd == a.rounds - 1
        for side in rows:
            row = rows[side]
            if "note" in row:
                continue
            try:
                if side in workers:
                    row["times"] += workers[side].steps(a.steps, a.warmup)
                    row["loss"] = workers[side].first_loss
                elif side in builds:
                    so, inputs = builds[side]
                    prof = os.path.join(work, "%s-%s.profile.json" % (
                        name, side)) if last else None
                    t, loss, rss = run_pipeopt(tools, so, inputs, a.steps,
                                               a.warmup, a.threads,
                                               profile=prof)
                    row["times"] += t
                    row["loss"], row["rss"] = loss, max(row["rss"], rss)
                    if prof:
                        prof_path[side] = prof
                elif side.startswith("torchpp"):
                    if fam != "gpt2":
                        row["note"] = ("not built: this script splits "
                                       "GPT-2 only")
                        continue
                    r = int(side.split("-r")[1])
                    t, loss, rss = run_torchpp(name, r, a.microbatches,
                                               a.threads, a.steps, a.warmup)
                    row["times"] += t
                    row["loss"], row["rss"] = loss, max(row["rss"], rss)
            except Exception as e:  # keep the other sides' figures
                row["note"] = ("%s: %s" % (type(e).__name__, e))[:300]
                print("  %s: %s" % (side, row["note"]), flush=True)
        print("  round %d: %s" % (rnd + 1, ", ".join(
            "%s %.1f ms" % (s, 1e3 * statistics.median(
                r["times"][-a.steps:]))
            for s, r in rows.items() if r.get("times"))), flush=True)
    # MPI once: the first pipelined build, one round.
    if "mpi" in sides:
        first = next((s for s in builds if s != "reference"), None)
        if first:
            r = int(first.split("-r")[1])
            so, inputs = builds[first]
            try:
                t, loss, rss = run_pipeopt(
                    tools, so, inputs, a.steps, a.warmup, a.threads,
                    prefix=shlex.split(a.mpirun) + ["-np", str(r)])
                rows[first + " mpi"] = {"times": t, "loss": loss, "rss": rss}
            except Exception as e:
                rows[first + " mpi"] = {"note": str(e)[:300]}
    for side, w in workers.items():
        rows[side]["rss"] = w.rss()
        w.close()
    # -- table -------------------------------------------------------------
    base = statistics.median(rows["eager"]["times"]) \
        if rows.get("eager", {}).get("times") else None
    print("\n  %-22s %12s %8s %10s %10s  %s" % (
        "side", "median step", "/ eager", "first loss", "peak RSS", "note"))
    for side, row in rows.items():
        if not row.get("times"):
            print("  %-22s %12s %8s %10s %10s  %s" % (
                side, "-", "-", "-", "-", row.get("note", "")))
            continue
        med = statistics.median(row["times"])
        print("  %-22s %9.1f ms %8s %10.5f %10s  %s" % (
            side, 1e3 * med, "%.2fx" % (med / base) if base else "-",
            row["loss"] if row["loss"] is not None else float("nan"),
            mib(row["rss"]), row.get("note", "")))
    for side, path in prof_path.items():
        med = statistics.median(rows[side]["times"])
        print("  where pipeopt's %s step goes (last round's profile, step "
              "median %.1f ms):" % (side, 1e3 * med))
        for line in profile_breakdown(path, med):
            print(line)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
