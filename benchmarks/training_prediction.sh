#!/usr/bin/env bash
#===- training_prediction.sh - training steps: predicted against measured -===#
#
# mlp8 (examples/mlp8.tosa.mlir), 1F1B, 8 microbatches, SGD, loopback, one
# thread per rank: for each of ROUNDS rounds, a fresh `pipeopt-calibrate
# --ranks 4`, then pipeopt-run's median step (steps 3-100 of the per-step
# lines) and pipe-simulate's event-level makespan (optimizer-step=true) for
# P = 4, P = 2 and D = 2 x P = 2 (pipeopt-run --data-parallel 2, loopback
# and MPI; MPI predicted from an MPI calibration, `--bind-to none`). docs/Performance.md,
# "Predicted against measured: training steps", has the figures.
#
#   benchmarks/training_prediction.sh [BIN_DIR [WORK_DIR [ROUNDS]]]
#
# Defaults: build/bin, a new temporary directory, 5. Needs mpirun for the
# MPI column (skipped without it). Measures, never asserts.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "${1:-$ROOT/build/bin}" && pwd)
O=${2:-$(mktemp -d)}
R=${3:-5}
M=$ROOT/examples/mlp8.tosa.mlir
mkdir -p "$O" && cd "$O"
for P in 4 2; do
  F="--train --loss mse --optimizer sgd --lr 0.001 --schedule 1f1b --num-stages $P --num-microbatches 8 --microbatch-args=0"
  "$B/pipeopt-compile" "$M" $F -o "t$P.so"
  "$B/pipeopt-compile" "$M" $F --emit scheduled -o "t$P.mlir"
done
# The median of the per-step times (ms) of steps 3 and later.
med() {
  grep -o "step [0-9]*/[0-9]*: loss [^ ]* ([0-9.]* s)" |
    awk -F'[(/ ]' '{ if ($2 + 0 > 2) print $(NF - 1) }' | sort -g |
    awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] * 1000 }'
}
# The event level's makespan (ms) of module $1 on machine file $2.
sim() {
  "$B/pipeopt" "$1" -pipe-simulate="hardware=$2 optimizer-step=true $3" \
    -o /dev/null 2>&1 | grep "level event" |
    sed -E 's/.*makespan ([0-9.e+-]+) s.*/\1/' | awk '{ print $1 * 1000 }'
}
echo "round: measured / predicted ms (P = 4 | P = 2 | D = 2 x P = 2 loopback | MPI)"
for r in $(seq "$R"); do
  "$B/pipeopt-calibrate" --ranks 4 -o host.json > /dev/null 2>&1
  a=$("$B/pipeopt-run" t4.so --steps 100 --seed 7 2> /dev/null | med)
  b=$("$B/pipeopt-run" t2.so --steps 100 --seed 7 2> /dev/null | med)
  c=$("$B/pipeopt-run" t2.so --data-parallel 2 --steps 100 --seed 7 2> /dev/null | med)
  pc=$(sim t2.mlir host.json "data-parallel=2")
  d=- pd=-
  if command -v mpirun > /dev/null; then
    # Unbound, as the oversubscribed run (docs/Runtime.md).
    mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
      "$B/pipeopt-calibrate" --comm mpi --ranks 4 -o host-mpi.json > /dev/null 2>&1
    d=$(mpirun --allow-run-as-root --oversubscribe -np 4 "$B/pipeopt-run" t2.so \
      --comm mpi --data-parallel 2 --steps 100 --seed 7 2> /dev/null | med)
    pd=$(sim t2.mlir host-mpi.json "data-parallel=2")
  fi
  echo "$r: $a / $(sim t4.mlir host.json "") | $b / $(sim t2.mlir host.json "") | $c / $pc | $d / $pd"
done
