#!/usr/bin/env bash
#===- scripts/sanitize.sh - pipeopt under AddressSanitizer + UBSan --------===#
#
#   scripts/sanitize.sh [runtime|runtime-lit|full]      (default: full)
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
# runtime-lit: the runtime mode, then the lit tests of test/Runtime,
#   test/Training and test/Conversion with the instrumented runtime
#   (pipeopt-run, pipeopt-npy-diff, libpipeopt_rt.so of build-asan-rt) and
#   the uninstrumented compiler of an existing build of this tree,
#   $PIPEOPT_BUILD_DIR (default build): a quick check of the runtime on real
#   models where the full mode's build takes too long. It writes only into
#   $SAN_LIT_DIR (default build-asan-lit), an overlay of that build.
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
  runtime-lit)
    BASE=$(cd "${PIPEOPT_BUILD_DIR:-build}" && pwd)
    [ -x "$BASE/bin/pipeopt-compile" ] && [ -f "$BASE/test/lit.site.cfg.py" ] || {
      echo "sanitize.sh: $BASE is not a pipeopt build (set PIPEOPT_BUILD_DIR)" >&2
      exit 2; }
    rc=0
    SAN_BUILD_DIR=${SAN_BUILD_DIR:-build-asan-rt} bash "$PWD/scripts/sanitize.sh" runtime || rc=1
    A=$(cd "${SAN_BUILD_DIR:-build-asan-rt}" && pwd)
    O=${SAN_LIT_DIR:-build-asan-lit}
    rm -rf "$O" && mkdir -p "$O/bin" "$O/lib" "$O/runtime/lib" "$O/test"
    O=$(cd "$O" && pwd)
    for f in "$BASE"/bin/* "$BASE"/lib/* "$BASE"/runtime/lib/*; do
      [ -f "$f" ] || continue
      d=$O/${f#"$BASE"/}; d=$(dirname "$d")
      ln -sf "$f" "$d/"
    done
    for t in pipeopt-run pipeopt-npy-diff pipeopt-calibrate; do
      [ -x "$A/bin/$t" ] && ln -sf "$A/bin/$t" "$O/bin/$t"
    done
    for f in "$A"/lib/libpipeopt_rt*.so*; do
      ln -sf "$f" "$O/lib/"; ln -sf "$f" "$O/runtime/lib/"
    done
    SRC=$(sed -n 's/^config.pipeopt_src_root = "\(.*\)"$/\1/p' "$BASE/test/lit.site.cfg.py")
    (cd "$BASE" && find test -name lit.site.cfg.py) | while read -r cfg; do
      mkdir -p "$O/$(dirname "$cfg")"
      sed -e "s|$BASE|$O|g" -e "s|\"$SRC|\"$PWD|g" "$BASE/$cfg" > "$O/$cfg"
    done
    LIT=$(sed -n 's/^LLVM_EXTERNAL_LIT:FILEPATH=//p' "$BASE/CMakeCache.txt")
    ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0" \
    LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0" \
      "${LIT:-/usr/lib/llvm-22/bin/lit}" -sv "$O/test" \
        --filter ':: (Runtime|Training|Conversion)/' || rc=1
    exit $rc
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
    echo "usage: scripts/sanitize.sh [runtime|runtime-lit|full]" >&2
    exit 2
    ;;
esac
