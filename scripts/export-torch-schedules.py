#!/usr/bin/env python3
"""Golden files from torch.distributed.pipelining for pipeopt's CSV tests.

Writes, into test/Schedule/Inputs/torch/ (or --out):

  <Class>-S<s>-M<m>.csv        torch's compute-only schedule (pipeline_order,
                               as _dump_csv(format="compute_only") writes it)
  <Class>-S<s>-M<m>.comms.csv  torch's lowered schedule with communication
                               (pipeline_order_with_comms, as
                               _dump_csv(format="compute_comms") writes it)
  pipeopt/<schedule>-R<r>-M<m>[.compute].csv
                               pipeopt's exports (with --pipeopt)
  verdicts.json                torch's verdict on every pipeopt export, the
                               torch version and the cases torch rejected
                               when generating its own schedules

for every torch schedule class at S (ranks) in {2, 4, 8} and M
(microbatches) in {S, 2S, 16}. The CSV files are torch's own output, byte
for byte (Python's csv writer, "\\r\\n" rows).

Usage: python3 scripts/export-torch-schedules.py [--pipeopt build/bin/pipeopt]

torch (from PyPI, CPU is enough) is needed only to run this script; the
tests read the committed files and never import torch. No process group is
created: schedule objects are built on stand-in stage objects that carry
only the attributes the schedule constructors read.
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import types

try:
    import torch
    from torch.distributed.pipelining import schedules as ts
except ImportError:  # pragma: no cover
    sys.exit("export-torch-schedules.py needs torch (pip install torch)")

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "test", "Schedule", "Inputs", "torch")

# torch class -> (stages per rank, single-stage class?)
CLASSES = [
    ("ScheduleGPipe", 1, True),
    ("Schedule1F1B", 1, True),
    ("ScheduleLoopedBFS", 2, False),
    ("ScheduleInterleaved1F1B", 2, False),
    ("ScheduleInterleavedZeroBubble", 2, False),
    ("ScheduleZBVZeroBubble", 2, False),
    ("ScheduleDualPipeV", 2, False),
]

# pipeopt registry schedule -> pipe-schedule options besides
# num-microbatches (R ranks). Compared with torch's loader.
PIPEOPT = [
    ("gpipe", 1, ""),
    ("1f1b", 1, ""),
    ("interleaved-1f1b", 2, "virtual-stages=2"),
    ("looped-bfs", 2, "virtual-stages=2"),
    ("zb-h1", 1, ""),
    ("zb-h2", 1, ""),
    ("zb-v", 2, ""),
    ("interleaved-zb", 2, "virtual-stages=2"),
    ("dualpipev", 2, ""),
    ("chimera", 1, ""),
    ("hanayo", 2, "virtual-stages=2"),
    ("forward-only", 1, ""),
]


def sweep():
    for s in (2, 4, 8):
        for m in sorted({s, 2 * s, 16}):
            yield s, m


def stages_for(rank, ranks, per_rank):
    """Stand-ins for the PipelineStage objects of `rank`."""
    n = ranks * per_rank
    out = []
    for k in range(per_rank):
        idx = rank + k * ranks
        out.append(types.SimpleNamespace(
            num_stages=n, group_size=ranks, group_rank=rank, stage_index=idx,
            is_first=idx == 0, is_last=idx == n - 1, submod=None,
            stage_index_to_group_rank=None))
    return out


def write_rows(path, rows):
    # What torch's _dump_csv does.
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        for r in sorted(rows):
            w.writerow(rows[r])


def runtime(ranks, per_rank, m):
    return ts._PipelineScheduleRuntime(stages_for(0, ranks, per_rank), m)


def torch_dumps(out, rejected, invalid):
    written = []
    for name, per_rank, single in CLASSES:
        cls = getattr(ts, name)
        for s, m in sweep():
            base = os.path.join(out, f"{name}-S{s}-M{m}")
            try:
                if single:
                    sched = cls(stages_for(0, s, 1)[0], m)
                    order = sched.pipeline_order
                    write_rows(base + ".csv", order)
                    # Single-stage classes run without a lowered table; the
                    # comms form is torch's own lowering of their compute
                    # order (REDUCE_GRAD markers removed first: the lowering
                    # adds them again).
                    compute = {
                        r: [a for a in acts if a is None or a.is_compute_op]
                        for r, acts in order.items()}
                    rt = runtime(s, 1, m)
                    try:
                        rt._prepare_schedule_with_comms(compute)
                    except Exception as e:
                        # torch's own validator rejects its compute order
                        # (Schedule1F1B in torch 2.15: the last rank's
                        # microbatch indices are off by one). Keep the dump:
                        # pipeopt must reject it too.
                        invalid.append({
                            "file": os.path.basename(base) + ".csv",
                            "error": f"{type(e).__name__}: "
                                     f"{str(e).splitlines()[0]}"})
                        continue
                    rt._dump_csv(base + ".comms.csv", format="compute_comms")
                else:
                    sched = cls(stages_for(0, s, per_rank), m)
                    sched._dump_csv(base + ".csv", format="compute_only")
                    sched._dump_csv(base + ".comms.csv", format="compute_comms")
                written.append(os.path.basename(base))
            except Exception as e:  # torch refuses this (S, M)
                for suffix in (".csv", ".comms.csv"):
                    if os.path.exists(base + suffix):
                        os.remove(base + suffix)
                rejected.append({"class": name, "S": s, "M": m,
                                 "error": f"{type(e).__name__}: "
                                          f"{str(e).splitlines()[0]}"})
    return written


STAGE_GRAPH = """\
{funcs}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {{pipe.num_stages = {n} : i64}} {{
{calls}
  return %v{last} : tensor<4xf32>
}}
"""


def stage_graph(n):
    funcs = "\n".join(
        f"func.func @m_stage{k}(%x: tensor<4xf32>) -> tensor<4xf32> "
        f"attributes {{pipe.stage = {k} : i64}} {{\n  return %x : tensor<4xf32>\n}}"
        for k in range(n))
    calls, prev = [], "%x"
    for k in range(n):
        calls.append(f"  %v{k} = pipe.stage_call @m_stage{k}({prev}) stage {k} "
                     f": (tensor<4xf32>) -> tensor<4xf32>")
        prev = f"%v{k}"
    return STAGE_GRAPH.format(funcs=funcs, n=n, calls="\n".join(calls),
                              last=n - 1)


def torch_verdict(path, fmt):
    """torch's loader (and, for the comms form, its simulator) on a file."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    ranks = len(rows)
    stages = set()
    mbs = set()
    for row in rows:
        for cell in row:
            a = ts._Action.from_str(cell)
            if a is not None and a.sub_actions is None:
                stages.add(a.stage_index)
                if a.microbatch_index is not None:
                    mbs.add(a.microbatch_index)
    n = max(stages) + 1
    if n % ranks:
        return False, f"{n} stages do not divide over {ranks} ranks"
    try:
        rt = runtime(ranks, n // ranks, max(mbs) + 1)
        rt._load_csv(path, format=fmt)
        # torch's simulator knows pipeline actions only: it raises
        # "Unsupported action type 0UNSHARD" on torch's own lowering, so the
        # FSDP and gradient-reduction markers its compute_only lowering adds
        # are left out of the simulation.
        skip = (ts.UNSHARD, ts.RESHARD, ts.REDUCE_GRAD, ts.WAIT_REDUCE_GRAD)
        order = {r: [a for a in acts if a.computation_type not in skip]
                 for r, acts in rt.pipeline_order_with_comms.items()}
        ts._simulate_comms_compute(
            order, lambda st: rt.stage_index_to_group_rank[st], n)
    except Exception as e:
        return False, f"{type(e).__name__}: {str(e).splitlines()[0]}"
    return True, ""


def pipeopt_exports(pipeopt, out):
    cases = []
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, per_rank, extra in PIPEOPT:
            for r, m in sweep():
                n = r * per_rank
                mlir = os.path.join(tmp, f"g{n}.mlir")
                with open(mlir, "w") as f:
                    f.write(stage_graph(n))
                base = os.path.join(out, f"{name}-R{r}-M{m}")
                made = True
                for suffix, flag in ((".csv", ""),
                                     (".compute.csv", " export-csv-compute-only")):
                    opts = (f"schedule={name} num-microbatches={m} {extra} "
                            f"export-csv={base}{suffix}{flag}")
                    p = subprocess.run(
                        [pipeopt, mlir, f"--pipe-schedule={opts}", "-o",
                         os.devnull], capture_output=True, text=True)
                    if p.returncode:
                        made = False
                        first = p.stderr.strip().splitlines()[0]
                        cases.append({"schedule": name, "ranks": r, "M": m,
                                      "pipeopt": "rejected: " +
                                      first.split("error: ", 1)[-1]})
                        break
                if not made:
                    continue
                case = {"schedule": name, "ranks": r, "M": m}
                for suffix, fmt in ((".csv", "compute_comms"),
                                    (".compute.csv", "compute_only")):
                    ok, why = torch_verdict(base + suffix, fmt)
                    case[fmt] = "accepted" if ok else "rejected: " + why
                cases.append(case)
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--pipeopt", help="pipeopt binary: also write pipeopt's "
                    "exports and torch's verdict on them")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    rejected, invalid = [], []
    written = torch_dumps(out, rejected, invalid)
    record = {"torch": torch.__version__,
              "sweep": "S in {2, 4, 8}, M in {S, 2S, 16}",
              "torch_dumps": written,
              "torch_rejected": rejected,
              "torch_invalid": invalid}
    if args.pipeopt:
        record["pipeopt_exports"] = pipeopt_exports(
            args.pipeopt, os.path.join(out, "pipeopt"))
    with open(os.path.join(out, "verdicts.json"), "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print(f"{len(written)} torch schedules, {len(rejected)} (S, M) torch "
          f"rejects -> {out}")


if __name__ == "__main__":
    main()
