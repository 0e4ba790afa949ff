#!/usr/bin/env bash
#===- scripts/fuzz.sh - long libFuzzer runs of pipeopt's readers ----------===#
#
#   scripts/fuzz.sh [target|all] [runs]
#
# Builds the fuzz targets of fuzz/ (docs/Fuzzing.md) with clang in
# $FUZZ_BUILD_DIR (default build-fuzz) and runs each named target (default:
# all that were built, one after another) for `runs` executions (default
# 1000000; 0: until stopped) over its seeds (fuzz/corpus/<name>) and the
# inputs earlier runs found ($FUZZ_BUILD_DIR/corpus/<name>). A crash or
# sanitizer report stops the run and leaves the input in
# $FUZZ_BUILD_DIR/artifacts/; the script then exits 1.
#
# Environment: CXX (default: the first of clang++-16, clang++ that links
# -fsanitize=fuzzer and compiles the runtime), PIPEOPT_BUILD_DIR (a g++
# pipeopt build for fuzz-profile-json / fuzz-ir; default: build when it has
# the libraries), FUZZ_JOBS (build jobs, default 1), FUZZ_ARGS (more
# libFuzzer flags, e.g. "-max_total_time=600" or "-jobs=2").
#
#===----------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET=${1:-all}
RUNS=${2:-1000000}
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${FUZZ_JOBS:-1}

if [ -z "${CXX:-}" ]; then
  for c in clang++-16 clang++; do
    command -v "$c" >/dev/null && { CXX=$c; break; }
  done
fi
[ -n "${CXX:-}" ] || { echo "fuzz.sh: no clang++ (Debian: clang-16 libclang-rt-16-dev)" >&2; exit 2; }
if [ -z "${PIPEOPT_BUILD_DIR:-}" ] && [ -f build/lib/libPipeoptInitAll.a ]; then
  PIPEOPT_BUILD_DIR=$ROOT/build
fi

if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -G Ninja -S fuzz -B "$BUILD" -DCMAKE_CXX_COMPILER="$CXX" \
    ${PIPEOPT_BUILD_DIR:+-DPIPEOPT_BUILD_DIR="$PIPEOPT_BUILD_DIR"}
fi
ninja -C "$BUILD" -j "$JOBS"

if [ "$TARGET" = all ]; then
  TARGETS=()
  for t in manifest npy checkpoint machine-json torch-csv profile-json ir; do
    [ -x "$BUILD/fuzz-$t" ] && TARGETS+=("$t")
  done
else
  TARGETS=("${TARGET#fuzz-}")
fi

status=0
for t in "${TARGETS[@]}"; do
  bin=$BUILD/fuzz-$t
  [ -x "$bin" ] || { echo "fuzz.sh: $bin was not built" >&2; exit 2; }
  mkdir -p "$BUILD/corpus/$t" "$BUILD/artifacts"
  echo "== fuzz-$t: -runs=$RUNS"
  # shellcheck disable=SC2086
  if ! ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
       UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
       "$bin" -runs="$RUNS" -timeout=25 -rss_limit_mb=2048 \
         -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$t-" \
         ${FUZZ_ARGS:-} "$BUILD/corpus/$t" "fuzz/corpus/$t" \
         2>&1 | tee "$BUILD/fuzz-$t.log" | grep -E --line-buffered \
           '^(#[0-9]+ +(INITED|DONE|pulse)|Done|stat::|==[0-9]+==ERROR|SUMMARY|.*runtime error)'; then
    :
  fi
  if grep -qE '==[0-9]+==ERROR|runtime error|^artifact_prefix|Test unit written' "$BUILD/fuzz-$t.log"; then
    echo "fuzz.sh: fuzz-$t FAILED (see $BUILD/fuzz-$t.log, $BUILD/artifacts/)" >&2
    status=1
  fi
done
exit $status
