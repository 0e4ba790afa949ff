#!/usr/bin/env bash
#===- model-e2e.sh - pipelined vs unpartitioned model, end to end ---------===#
#
# Compiles MODEL once unpartitioned (pipeopt-compile --reference) and once
# per stage count with the front half (forward-only schedule), runs every
# build with pipeopt-run on the same well-conditioned inputs and compares
# each pipelined output with the reference (pipeopt-npy-diff, max abs error
# <= 1e-5 * max abs reference output).
#
# usage: model-e2e.sh COMPILE RUN DIFF MODEL OUTDIR MPIRUN STAGES [ARGS...]
#   COMPILE, RUN, DIFF  paths of pipeopt-compile, pipeopt-run, pipeopt-npy-diff
#   MPIRUN              mpirun command line ("" or "none": loopback only)
#   STAGES              comma-separated stage counts, e.g. 1,2,4
#   ARGS                extra pipeopt-compile options for every build
#
# Environment: E2E_INPUTS="I=FILE.npy ..." replaces the random data of model
# input I by FILE (inputs whose random data is not meaningful, such as
# BERT's attention mask, which must be 0 or 1). E2E_DIFF_ARGS: extra
# pipeopt-npy-diff options (--allow-nan for a model whose outputs are NaN in
# every correct build).
#
# Prints one "<stages>-stage <comm>: ..." line per comparison and the
# elapsed seconds of every step ("time ..."). Exits nonzero on the first
# failure.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
if [ $# -lt 7 ]; then
  sed -n '2,/^#====/p' "$0" >&2
  exit 2
fi
COMPILE=$1 RUN=$2 DIFF=$3 MODEL=$4 OUT=$5 MPIRUN=$6 STAGES=$7
shift 7
EXTRA=("$@")
[ "$MPIRUN" = none ] && MPIRUN=""

rm -rf "$OUT" && mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

now() { date +%s.%N; }
step() { # step NAME COMMAND... : runs the command and prints its time
  local name=$1
  shift
  local t0
  t0=$(now)
  "$@"
  awk -v a="$t0" -v b="$(now)" -v n="$name" \
    'BEGIN { printf "time %s %.2f s\n", n, b - a }'
}

compare() { # compare LABEL DIR: DIR's outputs against the reference
  local r
  # shellcheck disable=SC2086
  if r=$("$DIFF" ${E2E_DIFF_ARGS:-} "$2" "$OUT/ref"); then
    echo "$1: $r"
  else
    echo "$1: $r"
    exit 1
  fi
}

inputs_of() { # inputs_of DIR: pipeopt-run --input flags for DIR/input_*.npy
  local f i
  for f in "$1"/input_*.npy; do
    i=${f##*/input_}
    i=${i%.npy}
    printf -- '--input %s=%s ' "$i" "$f"
  done
}

step "compile reference" "$COMPILE" "$MODEL" --reference "${EXTRA[@]}" \
  -o "$OUT/ref.so"
mkdir -p "$OUT/in"
"$DIFF" --make-inputs "$OUT/ref.manifest.json" "$OUT/in"
for spec in ${E2E_INPUTS:-}; do
  cp "${spec#*=}" "$OUT/in/input_${spec%%=*}.npy"
done
# shellcheck disable=SC2046
step "run reference" "$RUN" "$OUT/ref.so" $(inputs_of "$OUT/in") \
  --output-dir "$OUT/ref" --quiet

IFS=, read -r -a stage_list <<< "$STAGES"
for s in "${stage_list[@]}"; do
  step "compile $s-stage" "$COMPILE" "$MODEL" --num-stages "$s" \
    "${EXTRA[@]}" -o "$OUT/s$s.so"
  # shellcheck disable=SC2046
  step "run $s-stage loopback" "$RUN" "$OUT/s$s.so" $(inputs_of "$OUT/in") \
    --output-dir "$OUT/s$s-loopback" --quiet
  compare "$s-stage loopback" "$OUT/s$s-loopback"
  if [ -n "$MPIRUN" ]; then
    ranks=$(sed -n 's/.*"num_ranks": *\([0-9]*\).*/\1/p' "$OUT/s$s.manifest.json")
    # shellcheck disable=SC2046,SC2086
    step "run $s-stage mpi" $MPIRUN -np "$ranks" "$RUN" "$OUT/s$s.so" \
      --comm mpi --timeout-s 120 $(inputs_of "$OUT/in") \
      --output-dir "$OUT/s$s-mpi" --quiet
    compare "$s-stage mpi" "$OUT/s$s-mpi"
  fi
done
