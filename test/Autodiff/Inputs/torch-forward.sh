#!/usr/bin/env bash
#===- torch-forward.sh - an exported torch case's forward vs torch --------===#
#
# Compiles CASE/model.mlir unpartitioned (pipeopt-compile --reference, one
# microbatch), runs it with pipeopt-run on the committed arguments
# CASE/arg_<i>.npy and compares its output with torch's, CASE/output.npy
# (pipeopt-npy-diff: max abs error <= 1e-5 * max abs torch output).
#
# usage: torch-forward.sh COMPILE RUN DIFF PYTHON CASE OUTDIR [ARGS...]
#   COMPILE, RUN, DIFF  paths of pipeopt-compile, pipeopt-run, pipeopt-npy-diff
#   PYTHON              a python3 (no numpy needed)
#   CASE                a case directory of test/Autodiff/Inputs/torch
#   ARGS                extra pipeopt-compile options
#
# Prints pipeopt-npy-diff's line; exits nonzero on the first failure.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
if [ $# -lt 6 ]; then
  sed -n '2,/^#====/p' "$0" >&2
  exit 2
fi
COMPILE=$1 RUN=$2 DIFF=$3 PYTHON=$4 CASE=$5 OUT=$6
shift 6
HERE=$(cd "$(dirname "$0")" && pwd)

rm -rf "$OUT" && mkdir -p "$OUT"
"$COMPILE" "$CASE/model.mlir" --reference --num-microbatches 1 "$@" \
  -o "$OUT/model.so"
inputs=()
for f in "$CASE"/arg_*.npy; do
  i=${f##*/arg_}
  inputs+=(--input "${i%.npy}=$f")
done
[ ${#inputs[@]} -gt 0 ] || { echo "torch-forward.sh: no arg_*.npy in $CASE" >&2; exit 1; }
"$RUN" "$OUT/model.so" "${inputs[@]}" --output-dir "$OUT/run" --quiet
"$PYTHON" "$HERE/npy-drop-microbatch.py" "$OUT/run/output_0.npy" "$OUT/output.npy"
"$DIFF" "$OUT/output.npy" "$CASE/output.npy"
