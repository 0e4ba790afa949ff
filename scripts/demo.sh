#!/usr/bin/env bash
#===- scripts/demo.sh - pipeopt's main job on a bundled example -----------===#
#
# Usage: scripts/demo.sh [build-dir]
# Runs the end-to-end flow on examples/mlp4.tosa.mlir and prints each step.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$BUILD/bin"
MODEL="$ROOT/examples/mlp4.tosa.mlir"
OUT=${PIPEOPT_DEMO_OUT:-demo-out}
mkdir -p "$OUT"

echo "== pipeopt demo: $MODEL"
echo "-- 1. parse and prepare (inline helper calls)"
"$BIN/pipeopt" "$MODEL" -pipe-prepare -o "$OUT/prepared.mlir"
echo "   wrote $OUT/prepared.mlir ($(grep -c '=' "$OUT/prepared.mlir") ops)"
