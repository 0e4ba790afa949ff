#!/usr/bin/env bash
#===- scripts/sanitize.sh - pipeopt under AddressSanitizer + UBSan --------===#
#
#   scripts/sanitize.sh [runtime|full]      (default: full)
#
# runtime: builds the MLIR-free runtime standalone (cmake -S runtime) with
#   -fsanitize=address,undefined in $SAN_BUILD_DIR (default build-asan-rt)
#   and runs its tests (ctest: the pipeopt-rt.* unit tests: manifest, .npy,
#   optimizer, runner and checkpoints, communicators, kernels).
# full: builds all of pipeopt the same way in $SAN_BUILD_DIR (default
#   build-asan; LLVM/MLIR themselves are the uninstrumented system
#   libraries) and runs the runtime unit tests plus the lit tests of
#   test/Runtime, test/Training and test/Conversion, whose pipeopt-run and
#   pipeopt-compile are the instrumented builds (the model .so files that
#   pipeopt-compile links are not instrumented).
#
# Any sanitizer report fails the test that printed it (halt_on_error, and
# UBSan does not recover). LeakSanitizer is on for the runtime tests; in the
# full mode it is off for the compiler's lit tests (LLVM/MLIR keep global
# state alive until exit by design). Environment: JOBS (default: nproc).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-full}
JOBS=${JOBS:-$(nproc)}
SAN_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g1"
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

bash scripts/setup.sh

# run_ctest <build> <regex>: the tests matching <regex>; those over MPI
# (names with Mpi/mpi) run with OpenMPI's own leaks suppressed
# (scripts/lsan.supp) and the slow unwinder, so that the suppressions see
# the whole stack.
run_ctest() {
  local b=$1 re=$2 rc=0 supp=$PWD/scripts/lsan.supp
  (cd "$b" && ctest --output-on-failure -j "$JOBS" -R "$re" -E 'Mpi|mpi') || rc=1
  (cd "$b" && ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0" \
     LSAN_OPTIONS="suppressions=$supp:print_suppressions=0" \
     ctest --output-on-failure -j "$JOBS" -R "$re.*(Mpi|mpi)") || rc=1
  return $rc
}

case "$MODE" in
  runtime)
    B=${SAN_BUILD_DIR:-build-asan-rt}
    if [ ! -f "$B/build.ninja" ]; then
      cmake -G Ninja -S runtime -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_FLAGS="$SAN_FLAGS" -DCMAKE_C_FLAGS="$SAN_FLAGS" \
        -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
        -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
    fi
    cmake --build "$B" -j "$JOBS"
    run_ctest "$B" '.'
    ;;
  full)
    B=${SAN_BUILD_DIR:-build-asan}
    if [ ! -f "$B/build.ninja" ]; then
      cmake -G Ninja -S . -B "$B" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CXX_FLAGS="$SAN_FLAGS" -DCMAKE_C_FLAGS="$SAN_FLAGS" \
        -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
        -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
        -DPIPEOPT_BUILD_BENCHMARKS=OFF -DPIPEOPT_BUILD_FUZZERS=OFF
    fi
    cmake --build "$B" -j "$JOBS"
    run_ctest "$B" '^pipeopt-rt\.'

    # The lit subsets; the .so files that pipeopt-compile links load the
    # instrumented libpipeopt_rt.so into an instrumented pipeopt-run.
    LIT=$(sed -n 's/^LLVM_EXTERNAL_LIT:FILEPATH=//p' "$B/CMakeCache.txt")
    ASAN_OPTIONS=${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0} \
      "${LIT:-/usr/lib/llvm-22/bin/lit}" -sv "$B/test" \
        --filter ':: (Runtime|Training|Conversion)/'
    ;;
  *)
    echo "usage: scripts/sanitize.sh [runtime|full]" >&2
    exit 2
    ;;
esac
