#!/usr/bin/env bash
#===- scripts/demo.sh - pipeopt's main job on a bundled example -----------===#
#
# Usage: scripts/demo.sh [build-dir]
#
# The end-to-end flow on examples/mlp8.tosa.mlir (an 8-layer MLP, CPU-sized):
#   1. partition it into stages with the cost model and print the report;
#   2. compare schedules x stages x microbatches (formula / table / event);
#   3. schedule it (per-rank programs with send/recv) and verify the programs;
#   4. compile the pipelined programs and the unpartitioned reference to
#      shared objects;
#   5. run both on the loopback communicator (one thread per rank) with the
#      same seeded inputs, and print the difference of the outputs;
#   6. print the simulator's makespan from the cost model and from the
#      measured profile next to the measured iteration time.
# Environment: STAGES (default 4), MICROBATCHES (8), SCHEDULE (forward-only;
# execution supports forward-only schedules today),
# MODEL (default examples/mlp8.tosa.mlir), MICROBATCH_ARGS (model arguments
# that differ per microbatch; 0 for the bundled model, else auto),
# PIPEOPT_DEMO_OUT (demo-out).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$BUILD/bin"
# The bundled MLP takes its input activation as argument 0 and weights as
# the rest: only argument 0 differs per microbatch. Other models: auto
# (docs/Runtime.md), or set MICROBATCH_ARGS.
if [ -z "${MODEL:-}" ]; then
  MODEL=$ROOT/examples/mlp8.tosa.mlir
  MICROBATCH_ARGS=${MICROBATCH_ARGS:-0}
fi
MICROBATCH_ARGS=${MICROBATCH_ARGS:-auto}
STAGES=${STAGES:-4}
MICROBATCHES=${MICROBATCHES:-8}
SCHEDULE=${SCHEDULE:-forward-only}
OUT=${PIPEOPT_DEMO_OUT:-demo-out}
mkdir -p "$OUT"

step() { printf '\n== %s\n' "$*"; }

step "1. Partition $(basename "$MODEL") into $STAGES stages (cost model: cpu preset)"
"$BIN/pipeopt" "$MODEL" -pipe-prepare \
  -pipe-partition="num-stages=$STAGES num-microbatches=$MICROBATCHES schedule=$SCHEDULE device=cpu report=-" \
  -o "$OUT/partitioned.mlir"
"$BIN/pipeopt" "$MODEL" -pipe-prepare \
  -pipe-partition="num-stages=$STAGES num-microbatches=$MICROBATCHES schedule=$SCHEDULE device=cpu report=$OUT/partition.json" \
  -o /dev/null
echo "   JSON report: $OUT/partition.json"

step "2. Which schedule? formula / idealized table / communication-aware simulation"
if "$BIN/pipeopt-explore" --help 2>/dev/null | grep -q -- '--model'; then
  "$BIN/pipeopt-explore" --model "$MODEL" --device cpu --stages=2,4 \
    --microbatches=4,8 --systems=compute-medium/net-medium \
    --schedules=gpipe,1f1b,interleaved-1f1b,zb-h1,chimera
else
  "$BIN/pipeopt-explore" --uniform-stage-time=1e-3 --stages=2,4 \
    --microbatches=4,8 --systems=compute-medium/net-medium \
    --schedules=gpipe,1f1b,interleaved-1f1b,zb-h1,chimera
fi

step "3. Schedule ($SCHEDULE, $MICROBATCHES microbatches) and verify the per-rank programs"
"$BIN/pipeopt" "$OUT/partitioned.mlir" -pipe-outline-stages \
  -pipe-schedule="schedule=$SCHEDULE num-microbatches=$MICROBATCHES print-grid=true" \
  -pipe-verify-schedule -o "$OUT/scheduled.mlir"
echo "   $(grep -c 'pipe.program' "$OUT/scheduled.mlir") per-rank programs, $(grep -c 'pipe.send' "$OUT/scheduled.mlir") sends: $OUT/scheduled.mlir"

step "4. Compile the pipelined programs and the unpartitioned reference (CPU, AOT)"
"$BIN/pipeopt-compile" "$OUT/scheduled.mlir" -o "$OUT/pipelined.so" --timing \
  --microbatch-args="$MICROBATCH_ARGS"
"$BIN/pipeopt-compile" "$MODEL" --reference --num-microbatches="$MICROBATCHES" \
  --microbatch-args="$MICROBATCH_ARGS" \
  -o "$OUT/reference.so" --timing

step "5. Run both on the loopback communicator and compare"
"$BIN/pipeopt-run" "$OUT/pipelined.so" --seed 7 --iterations 20 --warmup 2 \
  --output-dir "$OUT/pipelined-out" --trace "$OUT/trace.json" --profile "$OUT/profile.json"
"$BIN/pipeopt-run" "$OUT/reference.so" --seed 7 --iterations 20 --warmup 2 \
  --output-dir "$OUT/reference-out"
"$BIN/pipeopt-npy-diff" "$OUT/pipelined-out" "$OUT/reference-out"

step "6. Predicted vs measured (pipe-simulate: presets, this host calibrated, measured stage times)"
# The calibrated hardware file is this machine measured through the same
# kernels and communicator, right before the timed run (pipeopt-calibrate;
# docs/Runtime.md "Predicted vs measured"): kernel rates, the cache, the
# loopback link, and how much compute the node's ranks get when all are
# busy (topology.cores_per_node). The event
# level uses all of it: links, and the node's cores shared among its busy
# ranks; the table level gives every rank a core and free links.
RANKS=$(sed -n 's/.*"num_ranks": *\([0-9]*\).*/\1/p' "$OUT/pipelined.manifest.json")
"$BIN/pipeopt-calibrate" --ranks "$RANKS" -o "$OUT/calibrated.json" 2>&1 | tail -n 1
# Many short iterations after a warm-up; the median and the spread.
"$BIN/pipeopt-run" "$OUT/pipelined.so" --seed 7 --iterations 300 --warmup 30 \
  --profile "$OUT/profile-timing.json" --quiet
level() { sed -n "s/^level $1: makespan \([^ ]*\) s.*/\1/p"; }
simulate() { "$BIN/pipeopt" "$OUT/scheduled.mlir" -pipe-simulate="$1" -o /dev/null; }
PRED_COST=$(simulate "device=cpu" | level table)
PRED_CAL_TABLE=$(simulate "hardware=$OUT/calibrated.json" | level table)
PRED_CAL=$(simulate "hardware=$OUT/calibrated.json" | level event)
PRED_PROF=$(simulate "device=cpu profile=$OUT/profile-timing.json" | level table)
# Iteration times of the timed run, sorted: median, mean, 10th and 90th
# percentiles.
read -r MEDIAN MEAN P10 P90 < <(
  awk '/"iteration_s": \[/ { f = 1; next } f && /\]/ { f = 0 }
       f { gsub(/[ ,]/, ""); print }' "$OUT/profile-timing.json" | sort -g |
  awk '{ v[NR] = $1; s += $1 }
       END { printf "%s %.9g %s %s\n", v[int((NR + 1) / 2)], s / NR,
             v[int(NR / 10) + 1], v[int(NR * 9 / 10)] }')
CORES=$(sed -n 's/.*"cores_per_node": *\([0-9.eE+-]*\).*/\1/p' "$OUT/calibrated.json")
printf '   predicted (cost model, cpu preset):             %.4g s\n' "$PRED_COST"
printf '   predicted (calibrated, a core per rank, table): %.4g s\n' "$PRED_CAL_TABLE"
printf '   predicted (calibrated, event level):            %.4g s  (%s ranks share %.3g cores: %s)\n' \
  "$PRED_CAL" "$RANKS" "${CORES:-0}" "$OUT/calibrated.json"
printf '   predicted (measured per-stage times, table):    %.4g s\n' "$PRED_PROF"
printf '   measured  (300 iterations, loopback):           median %.4g s, mean %.4g s (10%%-90%%: %.4g-%.4g s)\n' \
  "$MEDIAN" "$MEAN" "$P10" "$P90"
awk -v p="$PRED_CAL" -v m="$MEDIAN" -v f="$P10" 'BEGIN {
  if (m > 0 && f > 0)
    printf "   calibrated prediction / measured:               %.2f (median), %.2f (10%% percentile)\n", p / m, p / f }'
# Where each rank's iteration went (medians of the per-stage actions are in
# the profile; these are per-iteration sums).
echo "   per rank, per iteration (profile ranks[]: actions, then time in runtime calls):"
awk '/"ranks": \[$/ && !done { f = 1; next }
     f && /"rank":/ { gsub(/[ ,]/, ""); split($0, a, ":"); r = a[2] }
     f && /"(busy|send|recv|input|output)_s":/ {
       gsub(/[ ,"]/, ""); split($0, a, ":"); v[a[1]] = a[2] * 1e6 }
     f && /^    }/ {
       printf "     rank %s: actions %.0f us, send %.0f us, recv (incl. waiting) %.0f us, input %.0f us\n",
              r, v["busy_s"], v["send_s"], v["recv_s"], v["input_s"] }
     f && /^  \]/ { f = 0; done = 1 }' "$OUT/profile-timing.json"
echo "   (the cpu preset models a large server. The calibrated rates and cores are"
echo "   this node undisturbed; other jobs on it slow the measurement, most of all"
echo "   the median: the fastest iterations are the ones they left alone.)"
step "7. Train: 1f1b on $STAGES ranks, $MICROBATCHES microbatches, 5 SGD steps (loss mse, lr 0.001), against the unpartitioned training step"
# The loss is appended to the model and partitioned with it; every stage's
# B and W are generated (pipe-differentiate's library), the runtime averages
# the microbatches' gradients and updates the weights (docs/Training.md).
"$BIN/pipeopt-compile" "$MODEL" --train --loss mse --schedule 1f1b \
  --num-stages "$STAGES" --num-microbatches "$MICROBATCHES" \
  --microbatch-args="$MICROBATCH_ARGS" \
  --optimizer sgd --lr 0.001 -o "$OUT/train.so"
"$BIN/pipeopt-compile" "$MODEL" --reference --train --loss mse \
  --num-microbatches "$MICROBATCHES" --microbatch-args="$MICROBATCH_ARGS" \
  --optimizer sgd --lr 0.001 -o "$OUT/train-reference.so"
"$BIN/pipeopt-npy-diff" --make-inputs "$OUT/train-reference.manifest.json" \
  "$OUT/train-in" --seed 7 > /dev/null
TRAIN_IN=()
for f in "$OUT"/train-in/input_*.npy; do
  i=${f##*input_}; TRAIN_IN+=(--input "${i%.npy}=$f")
done
"$BIN/pipeopt-run" "$OUT/train.so" "${TRAIN_IN[@]}" --steps 5 \
  --output-dir "$OUT/train-out"
"$BIN/pipeopt-run" "$OUT/train-reference.so" "${TRAIN_IN[@]}" --steps 5 \
  --output-dir "$OUT/train-reference-out" --quiet
echo "   final weights and per-step losses, pipelined vs unpartitioned:"
"$BIN/pipeopt-npy-diff" "$OUT/train-out" "$OUT/train-reference-out"

echo
echo "Done. Trace (open in https://ui.perfetto.dev or chrome://tracing): $OUT/trace.json"
echo "Measured profile (feed back with pipe-partition profile=...): $OUT/profile.json"
