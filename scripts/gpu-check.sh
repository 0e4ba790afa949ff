#!/usr/bin/env bash
#===- scripts/gpu-check.sh - Runtime NCCL check on a GPU machine ----------===#
#
# Self-contained, quick (< 4 min) check of the pipeopt runtime's NCCL backend:
#   1. builds runtime/ standalone (CUDA/NCCL are dlopen'ed; no nvcc needed),
#   2. runs the NCCL gtests (must not skip when a GPU is visible),
#   3. runs the fake model end to end with --comm=nccl and compares the
#      outputs with a loopback run:
#        1 GPU : the 1-rank model (both stages on rank 0, NCCL self send/recv;
#                NCCL forbids two ranks of one communicator on one GPU),
#                also bootstrapped through MPI (mpirun -np 1) if available,
#                and a peer that never joins (setup watchdog);
#        2+ GPUs: also the 2-rank model (threads, and mpirun -np 2 if
#                available) and a stalled-peer timeout.
# Prints one PASS/FAIL line per step and a final PASS or FAIL; exit 0 = PASS.
#
# Usage: scripts/gpu-check.sh [build-dir]    (default: build-gpu-check)
#===----------------------------------------------------------------------===#
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build-gpu-check}"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
JOBS="$(nproc 2>/dev/null || echo 4)"
FAILS=0
LOG="$BUILD/gpu-check.log"
mkdir -p "$BUILD"
: > "$LOG"

pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
run() { # run <timeout-s> <cmd...>; output appended to the log
  local t="$1"; shift
  echo "+ $*" >> "$LOG"
  timeout --kill-after=10 "$t" "$@" >> "$LOG" 2>&1
}

echo "== pipeopt runtime GPU check ($(date -u +%FT%TZ))"
command -v nvidia-smi >/dev/null && nvidia-smi -L || echo "(no nvidia-smi)"

GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
if run 120 cmake "${GEN[@]}" -S "$ROOT/runtime" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release &&
   run 180 cmake --build "$BUILD" -j "$JOBS"; then
  pass "build"
else
  fail "build (see $LOG)"; tail -30 "$LOG"; echo "FAIL"; exit 1
fi

RUN="$BUILD/bin/pipeopt-run"
MODEL="$BUILD/test/fake_model.so"
M2="$ROOT/runtime/test/fake_model.manifest.json"
M1="$ROOT/runtime/test/fake_model_single.manifest.json"
NGPU="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
echo "visible GPUs: ${NGPU:-0}"

# 2. NCCL gtests.
if [ -x "$BUILD/test/PipeoptRtNcclTests" ]; then
  OUT="$(timeout 120 "$BUILD/test/PipeoptRtNcclTests" 2>&1)"; RC=$?
  echo "$OUT" >> "$LOG"
  if [ $RC -ne 0 ]; then
    fail "NCCL gtests"; echo "$OUT" | tail -30
  elif [ "${NGPU:-0}" -ge 1 ] && echo "$OUT" | grep -q "SKIPPED \] Nccl.SelfSendRecvOneRank"; then
    fail "NCCL gtests skipped although a GPU is visible:"; echo "$OUT" | grep -A2 Skipped
  else
    pass "NCCL gtests ($(echo "$OUT" | grep -c '^\[       OK \]') ok, $(echo "$OUT" | grep -c '^\[  SKIPPED \] Nccl\.') skipped)"
  fi
else
  fail "NCCL gtests not built (GoogleTest missing?)"
fi

# 3. End to end.
compare() { # compare <dirA> <dirB> <what>
  if cmp -s "$1/output_0.npy" "$2/output_0.npy" && cmp -s "$1/output_1.npy" "$2/output_1.npy"; then
    pass "$3: outputs match loopback"
  else
    fail "$3: outputs differ from loopback (or missing)"
  fi
}
E2E="$BUILD/e2e"; rm -rf "$E2E"; mkdir -p "$E2E"
if [ -x "$RUN" ] && [ -f "$MODEL" ]; then
  run 60 "$RUN" "$MODEL" --manifest "$M1" --seed 3 --output-dir "$E2E/lb1" || fail "loopback 1-rank run"
  if run 60 "$RUN" "$MODEL" --manifest "$M1" --comm=nccl --seed 3 --iterations 3 \
        --timeout-s 30 --output-dir "$E2E/nccl1" --profile "$E2E/nccl1.profile.json"; then
    compare "$E2E/lb1" "$E2E/nccl1" "nccl 1 rank (self send/recv)"
  else
    fail "nccl 1-rank run"; grep "pipeopt-run" "$LOG" | tail -5
  fi
  if command -v mpirun >/dev/null; then
    if run 90 mpirun --allow-run-as-root --oversubscribe -np 1 "$RUN" "$MODEL" --manifest "$M1" \
          --comm=nccl --seed 3 --timeout-s 30 --output-dir "$E2E/mpinccl1"; then
      compare "$E2E/lb1" "$E2E/mpinccl1" "nccl 1 rank bootstrapped over MPI"
    else
      fail "nccl 1-rank run under mpirun"; grep "pipeopt-run" "$LOG" | tail -5
    fi
  fi
  # A rank that never joins: only rank 0 of a 2-rank env rendezvous starts,
  # so ncclCommInitRank blocks; the watchdog must end it after --timeout-s.
  START=$(date +%s)
  IDF="$E2E/nccl-id-missing-peer"; rm -f "$IDF"
  OUT="$(RANK=0 WORLD_SIZE=2 PIPEOPT_NCCL_ID_FILE="$IDF" timeout 60 "$RUN" "$MODEL" --manifest "$M2" \
        --comm=nccl --timeout-s 3 2>&1)"; RC=$?
  echo "$OUT" >> "$LOG"
  if [ $RC -eq 1 ] && echo "$OUT" | grep -q "rank 0: NCCL communicator setup (ncclCommInitRank) timed out after 3 s"; then
    pass "nccl peer that never joins -> setup timeout error in $(( $(date +%s) - START )) s"
  else
    fail "nccl peer that never joins (rc=$RC)"; echo "$OUT" | tail -5
  fi
  if [ "${NGPU:-0}" -ge 2 ]; then
    run 60 "$RUN" "$MODEL" --manifest "$M2" --seed 3 --output-dir "$E2E/lb2" || fail "loopback 2-rank run"
    if run 90 "$RUN" "$MODEL" --manifest "$M2" --comm=nccl --seed 3 --timeout-s 30 --output-dir "$E2E/nccl2"; then
      compare "$E2E/lb2" "$E2E/nccl2" "nccl 2 ranks (threads)"
    else
      fail "nccl 2-rank run"; grep "pipeopt-run" "$LOG" | tail -5
    fi
    if command -v mpirun >/dev/null; then
      if run 90 mpirun --allow-run-as-root --oversubscribe -np 2 "$RUN" "$MODEL" --manifest "$M2" \
            --comm=nccl --seed 3 --timeout-s 30 --output-dir "$E2E/mpinccl2"; then
        compare "$E2E/lb2" "$E2E/mpinccl2" "nccl 2 ranks over MPI"
      else
        fail "nccl 2-rank run under mpirun"; grep "pipeopt-run" "$LOG" | tail -5
      fi
    fi
    START=$(date +%s)
    OUT="$(PIPEOPT_FAKE_MODEL_BUG=stall timeout 60 "$RUN" "$MODEL" --manifest "$M2" --comm=nccl --timeout-s 2 2>&1)"; RC=$?
    echo "$OUT" >> "$LOG"
    if [ $RC -eq 1 ] && echo "$OUT" | grep -q "timed out after 2 s"; then
      pass "nccl stalled peer -> timeout error in $(( $(date +%s) - START )) s"
    else
      fail "nccl stalled peer (rc=$RC)"; echo "$OUT" | tail -5
    fi
  else
    echo "SKIP: 2-rank NCCL runs need 2 GPUs (NCCL rejects two ranks on one GPU)"
  fi
else
  fail "pipeopt-run or the fake model was not built"
fi

echo "log: $LOG"
if [ $FAILS -eq 0 ]; then echo "PASS"; exit 0; else echo "FAIL ($FAILS step(s))"; exit 1; fi
