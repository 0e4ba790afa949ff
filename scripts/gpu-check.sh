#!/usr/bin/env bash
#===- scripts/gpu-check.sh - The CUDA backend's device check, in one call --===#
#
# Checks pipeopt's CUDA backend on a GPU machine (docs/CUDA.md "The device
# check") in two phases, so that the machine with the GPU, which has neither
# LLVM/MLIR nor network, needs nothing but a prepared kit and its own image:
#
#   scripts/gpu-check.sh prepare [KIT]   here, on the build machine: builds
#       (or reuses) build/, then writes into KIT (default ./gpu-check-kit,
#       git-ignored) for two models (default: the JAX MNIST MLP of
#       ../shared/models and the torch transformer block of test/Autodiff):
#       forward builds with 1 and 2 ranks and 1F1B and ZB-H1 training builds
#       with 1 and 2 ranks, all --target=cuda; their inputs and the CPU
#       builds' outputs / gradients / losses / weights for the same inputs
#       (the reference); the simulator's predicted iteration time on the h200
#       preset for every build; the runtime (pipeopt-run, pipeopt-npy-diff,
#       libpipeopt_rt.so, libpipeopt_rt_cuda.so, OpenBLAS, the NCCL gtests,
#       the fake model) built here without MPI, nlohmann/json for a rebuild
#       there, and tools/nccl-bandwidth. Prints the kit's size (< 60 MiB).
#   scripts/gpu-check.sh run [KIT]       on the device, from the repo root:
#       nvidia-smi -L; the CUDA libraries; the kit's runtime (rebuilt from
#       runtime/ if it does not load there); the NCCL gtests and the fake
#       model over NCCL (1 GPU: one rank sending to itself, a peer that never
#       joins; 2+ GPUs: 2 ranks, a stalled peer); NCCL send/recv bandwidth
#       (nccl-bandwidth) against the h200 preset's link; every build over
#       loopback (2 ranks share GPU 0 when there is one GPU) and over NCCL
#       where NCCL allows it (1-rank builds; 2-rank builds with 2 GPUs),
#       compared with the CPU reference (pipeopt-npy-diff --rtol 1e-4), and
#       its median iteration (training step) time against the prediction.
#       Prints ONE table and a final PASS or FAIL line; exit 0 iff PASS.
#       Every step runs under `timeout`; no step starts after
#       GPU_CHECK_DEADLINE_S (480) seconds, so the phase ends within 8 min.
#       Logs: KIT/logs/<step>.log; with $OUT set (the device tool), also
#       $OUT/gpu-check-summary.txt and $OUT/gpu-check-logs.tar.gz.
#   scripts/gpu-check.sh selftest [DIR]  both phases here on the CPU with
#       GPU_CHECK_TARGET=cpu (the same builds for the CPU target), then once
#       more with one reference value corrupted, which must FAIL: the
#       script's compile / run / compare / table logic without a GPU.
#
# THE ONE DEVICE CALL (the lead makes it, after `prepare` here):
#   run(command="bash scripts/gpu-check.sh run gpu-check-kit 2>&1 | tee $OUT/gpu-check.log",
#       carry=["gpu-check-kit"], timeout_s=540)
#
# Table columns: check, ranks, schedule, result (PASS / FAIL / SKIP), max rel
# error (max over the compared tensors of max|actual - ref| / max|ref|),
# measured (median iteration s, or bytes/s), predicted (pipe-simulate
# device=h200 event-level makespan, or the preset's bytes/s), ratio
# (measured / predicted; reported, not judged).
#
# Environment (both phases unless noted):
#   GPU_CHECK_TARGET      cuda (default) or cpu (selftest)
#   GPU_CHECK_MODELS      models (prepare): mnist transformer (default); also
#                         mlp (torch mlp_gelu) and cnn (torch cnn)
#   GPU_CHECK_RANKS       1 2        GPU_CHECK_MODES  forward 1f1b zb-h1
#   GPU_CHECK_MICROBATCHES 4         GPU_CHECK_STEPS  3 (compared steps)
#   GPU_CHECK_TIMED       20 (timed iterations / steps)
#   GPU_CHECK_RTOL        1e-4       GPU_CHECK_ONLY   regex of builds to run
#   GPU_CHECK_BUILD       build dir (default ./build); GPU_CHECK_NO_BUILD=1:
#                         use it as it is (no cmake / ninja)
#   GPU_CHECK_RT_BUILD    where prepare builds the kit's runtime (default
#                         ./build-gpu-check-rt); GPU_CHECK_RT_FROM_BUILD=1:
#                         copy the runtime of GPU_CHECK_BUILD instead (it
#                         needs MPI's libraries: only for the selftest here)
#   GPU_CHECK_DEADLINE_S  480 (run)  GPU_CHECK_RUN_FLAGS extra pipeopt-run
#                         flags of the target builds (run)
#   PIPEOPT_MODELS_DIR    ../shared/models
#
#===----------------------------------------------------------------------===#
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SELF="$ROOT/scripts/gpu-check.sh"

#===-- The CUDA interface (docs/CUDA.md "Compiling" and "Running") ------===#
# pipeopt-compile flags of a device build (docs/CUDA.md "Compiling").
CUDA_COMPILE_FLAGS=(--target=cuda --cuda-arch=sm_90)
# pipeopt-run flags of every device run (e.g. a device list); none: the
# runtime's default placement (2 ranks on one GPU share it).
read -r -a CUDA_RUN_FLAGS <<< "${GPU_CHECK_RUN_FLAGS:-}"
# What the device builds NEED besides the kit: looked up on the device.
CUDA_DEVICE_LIBS="libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libnccl.so.2"
# Found as a kit library (built with the runtime when CUDA is found).
CUDA_RT_LIB_GLOB="libpipeopt_rt_cuda*.so*"
# The h200 preset (lib/Machine/Machine.cpp makeH100 / makeH200): NVLink 4
# per direction and HBM3e bandwidth, bytes/s.
H200_LINK_BPS=450e9
H200_MEM_BPS=4.8e12
#===----------------------------------------------------------------------===#

TARGET="${GPU_CHECK_TARGET:-cuda}"
# Lists: separated by spaces or commas.
MODELS="${GPU_CHECK_MODELS:-mnist transformer}"; MODELS="${MODELS//,/ }"
RANKS="${GPU_CHECK_RANKS:-1 2}"; RANKS="${RANKS//,/ }"
MODES="${GPU_CHECK_MODES:-forward 1f1b zb-h1}"; MODES="${MODES//,/ }"
MB="${GPU_CHECK_MICROBATCHES:-4}"
STEPS="${GPU_CHECK_STEPS:-3}"
TIMED="${GPU_CHECK_TIMED:-20}"
RTOL="${GPU_CHECK_RTOL:-1e-4}"
ONLY="${GPU_CHECK_ONLY:-}"
MODELS_DIR="${PIPEOPT_MODELS_DIR:-$ROOT/../shared/models}"
KIT_LIMIT_BYTES=$((60 * 1024 * 1024))

usage() {
  sed -n '3,/^#===-.*-===#$/p' "$SELF" | sed 's/^# \{0,1\}//' | sed '$d' >&2
  exit 2
}
die() { echo "gpu-check: error: $*" >&2; exit 1; }
note() { echo "gpu-check: $*"; }
abspath() { mkdir -p "$1" && (cd "$1" && pwd); }

case "$TARGET" in cuda|cpu) ;; *) die "GPU_CHECK_TARGET must be cuda or cpu, not '$TARGET'";; esac

# model_info NAME: sets M_PATH and M_LOSS.
model_info() {
  local t="$ROOT/test/Autodiff/Inputs/torch"
  case "$1" in
    mnist) M_PATH="$MODELS_DIR/heir_mnist_mlp.linalg.mlir"; M_LOSS=mse ;;
    mlp) M_PATH="$t/mlp_gelu/model.mb2.mlir"; M_LOSS=mse ;;
    transformer) M_PATH="$t/transformer_block/model.mb2.mlir"; M_LOSS=mse ;;
    cnn) M_PATH="$t/cnn/model.mb2.mlir"; M_LOSS=cross-entropy ;;
    *) return 1 ;;
  esac
}

# build_flags MODE RANKS LOSS: pipeopt-compile flags of one build.
build_flags() {
  if [ "$1" = forward ]; then
    echo "--num-stages $2 --num-microbatches $MB"
  else
    echo "--train --loss $3 --schedule $1 --num-stages $2 --num-microbatches $MB"
  fi
}

# input_flags DIR: --input i=DIR/input_i.npy for every input file.
input_flags() {
  local f i
  IN_FLAGS=()
  for f in "$1"/input_*.npy; do
    [ -e "$f" ] || continue
    i=${f##*input_}
    IN_FLAGS+=(--input "${i%.npy}=$f")
  done
}

# NEEDED entries of an ELF file.
needed() { readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

# Libraries every Linux image has (never bundled).
is_base_lib() {
  case "$1" in
    linux-vdso.so*|ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|\
    libstdc++.so*|libgcc_s.so*|libutil.so*|libresolv.so*) return 0 ;;
  esac
  return 1
}
is_cuda_lib() {
  case "$1" in
    libcuda.so*|libcudart.so*|libcublas*.so*|libcudnn*.so*|libnccl.so*|libnvidia*|\
    libnvrtc*.so*|libnvJitLink*.so*) return 0 ;;
  esac
  return 1
}

# bundle_deps FILE: copies FILE's resolved non-base, non-CUDA dependencies
# (ldd) into $KIT/lib.
bundle_deps() {
  local name path
  while read -r name path; do
    [ -n "$path" ] && [ -f "$path" ] || continue
    is_base_lib "$name" && continue
    is_cuda_lib "$name" && continue
    case "$name" in libpipeopt_rt*) continue ;; esac
    [ -e "$KIT/lib/$name" ] || cp -L "$path" "$KIT/lib/$name"
  done < <(ldd "$1" 2>/dev/null | awk '$2 == "=>" { print $1, $3 }')
}

#===----------------------------------------------------------------------===#
# prepare
#===----------------------------------------------------------------------===#

prepare_tools() {
  BUILD="${GPU_CHECK_BUILD:-$ROOT/build}"
  if [ "${GPU_CHECK_NO_BUILD:-0}" != 1 ]; then
    local launcher=()
    command -v ccache >/dev/null &&
      launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
    if [ ! -f "$BUILD/build.ninja" ]; then
      note "configuring $BUILD"
      cmake -G Ninja -S "$ROOT" -B "$BUILD" "${launcher[@]}" > "$WORK/configure.log" 2>&1 ||
        { tail -20 "$WORK/configure.log"; die "cmake failed (log: $WORK/configure.log)"; }
    fi
    note "building pipeopt, pipeopt-compile, pipeopt-run, pipeopt-npy-diff in $BUILD"
    nice ninja -C "$BUILD" pipeopt pipeopt-compile pipeopt-run pipeopt-npy-diff \
      > "$WORK/build.log" 2>&1 ||
      { tail -30 "$WORK/build.log"; die "build failed (log: $WORK/build.log)"; }
  fi
  BIN="$BUILD/bin"
  local t
  for t in pipeopt pipeopt-compile pipeopt-run pipeopt-npy-diff; do
    [ -x "$BIN/$t" ] || die "$BIN/$t missing (build it, or set GPU_CHECK_BUILD)"
  done
}

# The kit's runtime: built standalone here without MPI (its libraries are
# not on the device), or copied from the build (selftest).
prepare_runtime() {
  local rtb lib
  if [ "${GPU_CHECK_RT_FROM_BUILD:-0}" = 1 ]; then
    note "runtime: copied from $BUILD"
    cp "$BIN/pipeopt-run" "$BIN/pipeopt-npy-diff" "$KIT/bin/"
    cp -P "$BUILD"/runtime/lib/libpipeopt_rt*.so* "$KIT/lib/"
    rtb="$BUILD/runtime"
  else
    rtb="${GPU_CHECK_RT_BUILD:-$ROOT/build-gpu-check-rt}"
    note "runtime: building runtime/ standalone (no MPI) in $rtb"
    local launcher=()
    command -v ccache >/dev/null &&
      launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
    cmake -G Ninja -S "$ROOT/runtime" -B "$rtb" -DCMAKE_BUILD_TYPE=Release \
      -DPIPEOPT_RT_ENABLE_MPI=OFF "${launcher[@]}" > "$WORK/rt-configure.log" 2>&1 ||
      { tail -20 "$WORK/rt-configure.log"; die "runtime cmake failed"; }
    local targets=(pipeopt-run pipeopt-npy-diff pipeopt_rt)
    local all
    all=$(ninja -C "$rtb" -t targets all 2>/dev/null | sed -n 's/^\([A-Za-z0-9_.+-]*\): .*/\1/p')
    for t in PipeoptRtNcclTests pipeopt_rt_fake_model; do
      grep -qx "$t" <<< "$all" && targets+=("$t")
    done
    # The CUDA runtime library and its gtests, whatever they are called.
    targets+=($(grep -x -E 'pipeopt_rt_cuda[A-Za-z0-9_]*|PipeoptRtCuda[A-Za-z0-9_]*' <<< "$all"))
    nice ninja -C "$rtb" "${targets[@]}" > "$WORK/rt-build.log" 2>&1 ||
      { tail -30 "$WORK/rt-build.log"; die "runtime build failed (log: $WORK/rt-build.log)"; }
    cp "$rtb/bin/pipeopt-run" "$rtb/bin/pipeopt-npy-diff" "$KIT/bin/"
    cp -P "$rtb"/lib/libpipeopt_rt*.so* "$KIT/lib/"
  fi
  [ -f "$rtb/test/PipeoptRtNcclTests" ] && cp "$rtb/test/PipeoptRtNcclTests" "$KIT/bin/"
  find "$rtb/test" -maxdepth 2 -type f -name 'PipeoptRtCuda*' -perm -u+x \
    -exec cp {} "$KIT/bin/" \; 2>/dev/null
  if [ -f "$rtb/test/fake_model.so" ]; then
    cp "$rtb/test/fake_model.so" "$KIT/test/"
    cp "$ROOT"/runtime/test/fake_model.manifest.json \
       "$ROOT"/runtime/test/fake_model_single.manifest.json "$KIT/test/"
  fi
  # Libraries they need that a bare image lacks (OpenBLAS is dlopen'ed by
  # the CPU kernels: bundled too, with its Fortran runtime).
  for f in "$KIT"/bin/* "$KIT"/lib/*.so*; do bundle_deps "$f"; done
  if [ "${GPU_CHECK_BUNDLE_BLAS:-1}" = 1 ]; then
    lib=$(ldconfig -p 2>/dev/null | awk '$1 == "libopenblas.so.0" { print $NF; exit }')
    if [ -n "$lib" ] && [ -f "$lib" ]; then
      # gzip'ed (36 -> 11 MB); the run phase unpacks it.
      gzip -6 -c "$lib" > "$KIT/lib/libopenblas.so.0.gz"
      bundle_deps "$lib"
    else
      note "warning: libopenblas.so.0 not found; CPU kernels will not load on the device"
    fi
  fi
  if [ -d /usr/include/nlohmann ]; then
    mkdir -p "$KIT/include" && cp -r /usr/include/nlohmann "$KIT/include/"
  fi
  # NCCL bandwidth: needs the CUDA toolkit's headers and NCCL here.
  local cuda="${CUDA_HOME:-/usr/local/cuda}"
  if [ -f "$cuda/include/nccl.h" ] && [ -f "$cuda/include/cuda_runtime_api.h" ]; then
    if c++ -O2 -std=c++17 -I"$cuda/include" "$ROOT/scripts/gpu-check/nccl-bandwidth.cpp" \
         -o "$KIT/bin/nccl-bandwidth" -L"$cuda/lib64" -Wl,--as-needed -lnccl \
         -lcudart_static -ldl -lpthread -lrt > "$WORK/nccl-bandwidth.log" 2>&1; then
      note "nccl-bandwidth: built"
    else
      cat "$WORK/nccl-bandwidth.log"; die "nccl-bandwidth failed to compile"
    fi
  else
    note "warning: no CUDA toolkit headers in $cuda: nccl-bandwidth not built"
  fi
  if [ "$TARGET" = cuda ] && ! ls "$KIT"/lib/$CUDA_RT_LIB_GLOB >/dev/null 2>&1; then
    note "warning: no $CUDA_RT_LIB_GLOB was built (CUDA toolkit not found by runtime/CMakeLists.txt?)"
  fi
}

# prepare_build MODEL MODE RANKS: one build, its reference and prediction.
# Appends a line to builds.tsv.
prepare_build() {
  local model=$1 mode=$2 r=$3 name kind sched flags pred="-" status=ok
  model_info "$model"
  name="$model-$mode-r$r"
  if [ "$mode" = forward ]; then kind=forward; sched=forward-only; else kind=train; sched=$mode; fi
  read -r -a flags <<< "$(build_flags "$mode" "$r" "$M_LOSS")"
  local log="$WORK/$name.log" w="$WORK/$name"
  : > "$log"
  mkdir -p "$w"
  c() { echo "+ $*" >> "$log"; "$@" >> "$log" 2>&1; }
  # 1. The CPU build (the reference: same schedule, ranks and inputs).
  if ! c "$BIN/pipeopt-compile" "$M_PATH" "${flags[@]}" $OPT_FLAGS "${CPU_FLAGS[@]}" -o "$w/cpu.so"; then
    note "FAILED $name: CPU compile (log: $log)"; tail -5 "$log"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$model" "$mode" "$r" "$sched" "$kind" "-" "-" "cpu-compile-failed" >> "$KIT/builds.tsv"
    return 1
  fi
  # 2. Inputs: one set per model and kind, unless a manifest differs.
  local shared="$KIT/inputs/$model-$kind" ind
  c "$BIN/pipeopt-npy-diff" --make-inputs "$w/cpu.manifest.json" "$w/in" --seed 7 || status=inputs-failed
  if [ ! -d "$shared" ]; then
    mv "$w/in" "$shared"; ind="inputs/$model-$kind"
  elif diff -rq "$w/in" "$shared" >/dev/null 2>&1; then
    ind="inputs/$model-$kind"
  else
    mv "$w/in" "$KIT/inputs/$name"; ind="inputs/$name"
  fi
  input_flags "$KIT/$ind"
  # 3. The reference outputs.
  local ref="$KIT/ref/$name" run=()
  if [ "$kind" = train ]; then run=(--steps "$STEPS" --save-grads); fi
  c "$BIN/pipeopt-run" "$w/cpu.so" "${IN_FLAGS[@]}" "${run[@]}" --quiet --output-dir "$ref" ||
    status=reference-failed
  rm -f "$ref/optimizer.json"
  # 4. The prediction: pipe-simulate on the h200 preset, event level.
  local sim="device=h200"
  [ "$kind" = train ] && sim="$sim optimizer-step=true"
  if c "$BIN/pipeopt-compile" "$M_PATH" "${flags[@]}" --emit=scheduled -o "$w/scheduled.mlir" &&
     "$BIN/pipeopt" "$w/scheduled.mlir" -pipe-simulate="$sim" -o /dev/null > "$KIT/pred/$name.txt" 2>> "$log"; then
    pred=$(sed -n 's/^level event: makespan \([^ ]*\) s.*/\1/p' "$KIT/pred/$name.txt")
    [ -n "$pred" ] || pred="-"
  else
    note "warning: $name: no prediction (log: $log)"
  fi
  # 5. The target build.
  if ! c "$BIN/pipeopt-compile" "$M_PATH" "${flags[@]}" $OPT_FLAGS "${TARGET_FLAGS[@]}" -o "$KIT/models/$name.so"; then
    status=compile-failed
    note "FAILED $name: $TARGET compile (log: $log)"; tail -5 "$log"
  elif [ "$TARGET" = cuda ]; then
    grep -q '"target": *"cuda"' "$KIT/models/$name.manifest.json" ||
      note "warning: $name: the manifest does not say \"target\": \"cuda\""
    local n
    for n in $(needed "$KIT/models/$name.so"); do
      is_base_lib "$n" || is_cuda_lib "$n" || [ -e "$KIT/lib/$n" ] ||
        note "warning: $name.so needs $n, which the kit does not carry"
    done
  fi
  [ "$status" = ok ] || note "FAILED $name: $status (log: $log)"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$model" "$mode" "$r" "$sched" "$kind" "$ind" "$pred" "$status" >> "$KIT/builds.tsv"
  [ "$status" = ok ] && note "ok $name (predicted ${pred} s)"
  [ "$status" = ok ]
}

prepare_phase() {
  KIT="${1:-$ROOT/gpu-check-kit}"
  case "$(cd "$(dirname "$KIT")" 2>/dev/null && pwd)/$(basename "$KIT")" in
    /|"$ROOT"|"$ROOT/"|"$HOME") die "refusing to use $KIT as the kit directory" ;;
  esac
  local model mode r failed=0 n=0
  for model in $MODELS; do
    model_info "$model" || die "unknown model '$model' (mnist, mlp, transformer, cnn)"
    [ -f "$M_PATH" ] || die "model $model: $M_PATH not found"
  done
  rm -rf "$KIT"
  KIT=$(abspath "$KIT")
  WORK="${GPU_CHECK_WORK:-$(dirname "$KIT")/$(basename "$KIT").work}"
  rm -rf "$WORK"; WORK=$(abspath "$WORK")
  mkdir -p "$KIT"/{bin,lib,test,models,inputs,ref,pred}
  note "prepare: target $TARGET, kit $KIT (scratch $WORK)"
  prepare_tools
  CPU_FLAGS=()
  if "$BIN/pipeopt-compile" --help 2>&1 | grep -q -- '--target[= ]'; then CPU_FLAGS=(--target=cpu); fi
  if [ "$TARGET" = cuda ]; then TARGET_FLAGS=("${CUDA_COMPILE_FLAGS[@]}"); else TARGET_FLAGS=("${CPU_FLAGS[@]}"); fi
  OPT_FLAGS="${GPU_CHECK_OPT:-}"
  prepare_runtime
  : > "$KIT/builds.tsv"
  for model in $MODELS; do
    for mode in $MODES; do
      for r in $RANKS; do
        n=$((n + 1))
        prepare_build "$model" "$mode" "$r" || failed=$((failed + 1))
      done
    done
  done
  {
    printf 'KIT_TARGET=%q\n' "$TARGET"
    printf 'KIT_STEPS=%q\nKIT_MB=%q\n' "$STEPS" "$MB"
    printf 'KIT_CREATED=%q\n' "$(date -u +%FT%TZ)"
    printf 'KIT_REVISION=%q\n' "$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)"
    printf 'KIT_TARGET_FLAGS=%q\n' "${TARGET_FLAGS[*]:-}"
  } > "$KIT/kit.env"
  local bytes
  bytes=$(du -sb "$KIT" | cut -f1)
  note "kit: $n builds ($failed failed), $(awk -v b="$bytes" 'BEGIN { printf "%.1f MiB", b / 1048576 }') in $KIT"
  [ "$bytes" -lt "$KIT_LIMIT_BYTES" ] || die "the kit is over 60 MiB"
  if [ "$failed" -gt 0 ]; then
    note "prepare: $failed build(s) failed; the run phase reports them as FAIL"
    return 1
  fi
  note "prepare: done. Device call: run(command=\"bash scripts/gpu-check.sh run $(basename "$KIT") 2>&1 | tee \$OUT/gpu-check.log\", carry=[\"$(basename "$KIT")\"], timeout_s=540)"
}

#===----------------------------------------------------------------------===#
# run
#===----------------------------------------------------------------------===#

ROWS=()
FAILS=0
add_row() { # check ranks schedule result maxrel measured predicted ratio
  ROWS+=("$(printf '%s\t' "$@")")
  [ "$4" = FAIL ] && FAILS=$((FAILS + 1))
  printf '[%4ss] %-4s %s (ranks %s, %s)\n' "$(elapsed)" "$4" "$1" "$2" "$3"
}
elapsed() { echo $(( $(date +%s) - START )); }
# tlimit T: T capped by the time left before the deadline (0: none left).
tlimit() {
  local left=$((DEADLINE - $(elapsed)))
  if [ "$left" -lt 10 ]; then echo 0; elif [ "$1" -lt "$left" ]; then echo "$1"; else echo "$left"; fi
}
# step LOG T cmd...: runs cmd under timeout, output appended to LOGS/LOG.log.
step() {
  local log="$LOGS/$1.log" t
  t=$(tlimit "$2"); shift 2
  echo "+ $*" >> "$log"
  if [ "$t" -eq 0 ]; then echo "(not run: deadline)" >> "$log"; return 124; fi
  timeout --kill-after=10 "$t" "$@" >> "$log" 2>&1
}
fmt() { awk -v x="$1" 'BEGIN { if (x == "-" || x == "") print "-"; else printf "%.3g", x }'; }
ratio() { awk -v m="$1" -v p="$2" 'BEGIN { if (m == "-" || p == "-" || m == "" || p == "" || p + 0 == 0) print "-"; else printf "%.3g", m / p }'; }
why() { grep -m1 -i -E 'error|fail|not found|timed out' "$LOGS/$1.log" | cut -c1-160; }

# Directories of the CUDA libraries on this machine: ldconfig, the toolkit,
# then the Python wheels (nvidia-*).
find_cuda_libs() {
  local lib d dirs=() roots=() found missing=()
  roots=(/usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib
         /usr/lib/x86_64-linux-gnu /usr/local/lib)
  local site
  site=$(timeout 20 python3 -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null || true)
  for lib in $CUDA_DEVICE_LIBS; do
    found=""
    for d in "${roots[@]}"; do [ -e "$d/$lib" ] && { found=$d; break; }; done
    if [ -z "$found" ]; then
      found=$(ldconfig -p 2>/dev/null | awk -v l="$lib" '$1 == l { print $NF; exit }')
      [ -n "$found" ] && found=$(dirname "$found")
    fi
    if [ -z "$found" ] && [ -n "$site" ]; then
      while read -r d; do
        [ -d "$d/nvidia" ] || continue
        found=$(find "$d/nvidia" -maxdepth 4 -name "$lib" 2>/dev/null | head -1)
        [ -n "$found" ] && { found=$(dirname "$found"); break; }
      done <<< "$site"
    fi
    if [ -n "$found" ]; then
      echo "$lib: $found" >> "$LOGS/cuda-libs.log"
      case " ${dirs[*]:-} " in *" $found "*) ;; *) dirs+=("$found") ;; esac
    else
      echo "$lib: NOT FOUND" >> "$LOGS/cuda-libs.log"; missing+=("$lib")
    fi
  done
  CUDA_LIB_PATH=$(IFS=:; echo "${dirs[*]:-}")
  CUDA_LIBS_MISSING="${missing[*]:-}"
}

# The kit's runtime loads here, or is rebuilt from runtime/ (with the kit's
# nlohmann/json; MPI off).
check_runtime() {
  local bad
  bad=$( (ldd "$KIT/bin/pipeopt-run"; ldd "$KIT/bin/pipeopt-npy-diff") 2>&1 | grep 'not found' )
  echo "$bad" >> "$LOGS/runtime.log"
  if [ -z "$bad" ] && step runtime 30 "$KIT/bin/pipeopt-run" --help; then
    add_row "runtime loads (kit binaries)" - - PASS - - - -
    return 0
  fi
  note "the kit's runtime does not load here; rebuilding runtime/"
  local rtb="$KIT/rt-rebuild" gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  if step runtime 120 cmake "${gen[@]}" -S "$ROOT/runtime" -B "$rtb" -DCMAKE_BUILD_TYPE=Release \
        -DPIPEOPT_RT_ENABLE_MPI=OFF -DPIPEOPT_RT_NLOHMANN_INCLUDE="$KIT/include" &&
     step runtime 240 cmake --build "$rtb" -j "$(nproc 2>/dev/null || echo 8)"; then
    cp "$rtb/bin/pipeopt-run" "$rtb/bin/pipeopt-npy-diff" "$KIT/bin/"
    cp -P "$rtb"/lib/libpipeopt_rt*.so* "$KIT/lib/"
    [ -f "$rtb/test/PipeoptRtNcclTests" ] && cp "$rtb/test/PipeoptRtNcclTests" "$KIT/bin/"
    [ -f "$rtb/test/fake_model.so" ] && cp "$rtb/test/fake_model.so" "$KIT/test/"
    if step runtime 30 "$KIT/bin/pipeopt-run" --help; then
      add_row "runtime loads (rebuilt here)" - - PASS - - - -
      return 0
    fi
  fi
  add_row "runtime loads" - - FAIL - - - -
  return 1
}

check_nccl_gtests() {
  local t="$KIT/bin/PipeoptRtNcclTests" log="$LOGS/nccl-gtests.log"
  if [ ! -x "$t" ]; then add_row "nccl gtests" 1 - SKIP - - - -; return; fi
  step nccl-gtests 120 "$t"; local rc=$?
  local ok skipped
  ok=$(grep -c '^\[       OK \]' "$log"); skipped=$(grep -c '^\[  SKIPPED \] Nccl\.' "$log")
  if [ $rc -ne 0 ]; then
    add_row "nccl gtests" 1 - FAIL - "$ok ok" - -
  elif [ "$NGPU" -ge 1 ] && grep -q 'SKIPPED \] Nccl.SelfSendRecvOneRank' "$log"; then
    add_row "nccl gtests (skipped with a GPU)" 1 - FAIL - "$ok ok" - -
  elif [ "$NGPU" -lt 1 ]; then
    add_row "nccl gtests (no GPU: $skipped skipped)" 1 - SKIP - "$ok ok" - -
  else
    add_row "nccl gtests ($skipped skipped)" "$NGPU" - PASS - "$ok ok" - -
  fi
}

# The CUDA runtime library's gtests (PipeoptRtCuda*), if the kit has any.
check_cuda_gtests() {
  local t name log ok skipped
  for t in "$KIT"/bin/PipeoptRtCuda*; do
    [ -x "$t" ] || continue
    name=$(basename "$t"); log="$LOGS/$name.log"
    step "$name" 180 "$t"; local rc=$?
    ok=$(grep -c '^\[       OK \]' "$log"); skipped=$(grep -c '^\[  SKIPPED \]' "$log")
    if [ $rc -ne 0 ]; then add_row "$name" - - FAIL - "$ok ok" - -
    elif [ "$NGPU" -ge 1 ] && [ "$ok" -eq 0 ]; then
      add_row "$name (all skipped with a GPU)" - - FAIL - "$ok ok" - -
    elif [ "$NGPU" -lt 1 ]; then add_row "$name (no GPU: $skipped skipped)" - - SKIP - "$ok ok" - -
    else add_row "$name ($skipped skipped)" - - PASS - "$ok ok" - -; fi
  done
}

# The fake model (runtime/test/FakeModel.cpp) over NCCL against loopback.
check_nccl_fake_model() {
  local m="$KIT/test/fake_model.so" m1="$KIT/test/fake_model_single.manifest.json"
  local m2="$KIT/test/fake_model.manifest.json" w="$WORKR/fake" run="$KIT/bin/pipeopt-run"
  if [ ! -f "$m" ]; then add_row "nccl fake model" 1 - SKIP - - - -; return; fi
  if [ "$NGPU" -lt 1 ]; then
    add_row "nccl fake model (needs a GPU)" 1 single-rank SKIP - - - -; return
  fi
  same() { cmp -s "$1/output_0.npy" "$2/output_0.npy" && cmp -s "$1/output_1.npy" "$2/output_1.npy"; }
  if step fake-nccl 60 "$run" "$m" --manifest "$m1" --seed 3 --output-dir "$w/lb1" &&
     step fake-nccl 60 "$run" "$m" --manifest "$m1" --comm nccl --seed 3 --iterations 3 \
       --timeout-s 30 --output-dir "$w/nccl1" && same "$w/lb1" "$w/nccl1"; then
    add_row "nccl fake model = loopback (self send/recv)" 1 single-rank PASS 0 - - -
  else
    add_row "nccl fake model = loopback (self send/recv)" 1 single-rank FAIL - - - -
  fi
  # One process per rank, bootstrapped through the environment (torchrun
  # style: RANK, WORLD_SIZE and a file for the NCCL id).
  if RANK=0 WORLD_SIZE=1 PIPEOPT_NCCL_ID_FILE="$w/nccl-id-env1" \
       step fake-nccl-env 60 "$run" "$m" --manifest "$m1" --comm nccl --seed 3 \
       --timeout-s 30 --output-dir "$w/env1" && same "$w/lb1" "$w/env1"; then
    add_row "nccl fake model, env rendezvous = loopback" 1 single-rank PASS 0 - - -
  else
    add_row "nccl fake model, env rendezvous = loopback" 1 single-rank FAIL - - - -
  fi
  local t0 rc
  t0=$(date +%s)
  RANK=0 WORLD_SIZE=2 PIPEOPT_NCCL_ID_FILE="$w/nccl-id-missing-peer" \
    step fake-nccl-timeout 60 "$run" "$m" --manifest "$m2" --comm nccl --timeout-s 3; rc=$?
  if [ $rc -eq 1 ] && grep -q "rank 0: NCCL communicator setup (ncclCommInitRank) timed out after 3 s" \
       "$LOGS/fake-nccl-timeout.log"; then
    add_row "nccl peer never joins -> timeout error" 2 - PASS - "$(( $(date +%s) - t0 )) s" "3 s" -
  else
    add_row "nccl peer never joins -> timeout error (rc $rc)" 2 - FAIL - - - -
  fi
  if [ "$NGPU" -ge 2 ]; then
    if step fake-nccl2 60 "$run" "$m" --manifest "$m2" --seed 3 --output-dir "$w/lb2" &&
       step fake-nccl2 90 "$run" "$m" --manifest "$m2" --comm nccl --seed 3 --timeout-s 30 \
         --output-dir "$w/nccl2" && same "$w/lb2" "$w/nccl2"; then
      add_row "nccl fake model = loopback (2 GPUs)" 2 gpipe PASS 0 - - -
    else
      add_row "nccl fake model = loopback (2 GPUs)" 2 gpipe FAIL - - - -
    fi
    # Two processes, one per GPU.
    local id="$w/nccl-id-env2" p0 rc0 rc1
    (RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 PIPEOPT_NCCL_ID_FILE="$id" step fake-nccl-env2-r0 90 \
       "$run" "$m" --manifest "$m2" --comm nccl --seed 3 --timeout-s 30 --output-dir "$w/env2") &
    p0=$!
    RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 PIPEOPT_NCCL_ID_FILE="$id" step fake-nccl-env2-r1 90 \
      "$run" "$m" --manifest "$m2" --comm nccl --seed 3 --timeout-s 30 --output-dir "$w/env2"
    rc1=$?; wait "$p0"; rc0=$?
    if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && same "$w/lb2" "$w/env2"; then
      add_row "nccl fake model, 2 processes = loopback" 2 gpipe PASS 0 - - -
    else
      add_row "nccl fake model, 2 processes (rc $rc0/$rc1)" 2 gpipe FAIL - - - -
    fi
    PIPEOPT_FAKE_MODEL_BUG=stall step fake-nccl-stall 60 "$run" "$m" --manifest "$m2" \
      --comm nccl --timeout-s 2; rc=$?
    if [ $rc -eq 1 ] && grep -q "timed out after 2 s" "$LOGS/fake-nccl-stall.log"; then
      add_row "nccl stalled peer -> timeout error" 2 gpipe PASS - - - -
    else
      add_row "nccl stalled peer -> timeout error (rc $rc)" 2 gpipe FAIL - - - -
    fi
  else
    add_row "nccl fake model, 2 ranks (needs 2 GPUs)" 2 gpipe SKIP - - - -
  fi
}

check_nccl_bandwidth() {
  local t="$KIT/bin/nccl-bandwidth" log="$LOGS/nccl-bandwidth.log"
  if [ ! -x "$t" ]; then add_row "nccl send/recv bandwidth (not built)" 1 - SKIP - - - -; return; fi
  if [ "$NGPU" -lt 1 ]; then add_row "nccl send/recv bandwidth (needs a GPU)" 1 - SKIP - - - -; return; fi
  step nccl-bandwidth 120 "$t" --bytes $((256 << 20)) --iters 20 --warmup 3; local rc=$?
  bw() { sed -n "s/^RESULT $1 .*bytes_per_s=\([^ ]*\).*/\1/p" "$log"; }
  local self d2d p2p
  self=$(bw self-sendrecv); d2d=$(bw d2d-copy); p2p=$(bw p2p-sendrecv)
  if [ -n "$self" ]; then
    add_row "nccl self send/recv B/s (1 GPU; vs link)" 1 - PASS - "$(fmt "$self")" "$(fmt $H200_LINK_BPS)" "$(ratio "$self" $H200_LINK_BPS)"
  else
    add_row "nccl self send/recv B/s (rc $rc)" 1 - FAIL - - - -
  fi
  if [ -n "$d2d" ]; then
    add_row "cuda d2d copy B/s (vs HBM / 2)" 1 - PASS - "$(fmt "$d2d")" "$(fmt "$(awk -v m=$H200_MEM_BPS 'BEGIN { print m / 2 }')")" \
      "$(ratio "$d2d" "$(awk -v m=$H200_MEM_BPS 'BEGIN { print m / 2 }')")"
  fi
  if [ "$NGPU" -ge 2 ]; then
    if [ -n "$p2p" ]; then
      add_row "nccl send/recv B/s gpu0->gpu1 (vs link)" 2 - PASS - "$(fmt "$p2p")" "$(fmt $H200_LINK_BPS)" "$(ratio "$p2p" $H200_LINK_BPS)"
    else
      add_row "nccl send/recv B/s gpu0->gpu1 (rc $rc)" 2 - FAIL - - - -
    fi
  else
    add_row "nccl send/recv B/s gpu0->gpu1 (needs 2 GPUs)" 2 - SKIP - - - -
  fi
}

# Largest relative error in a pipeopt-npy-diff report: max abs error / max
# abs reference, per tensor.
max_rel() {
  sed -n 's/.*max abs error \([^ ]*\) .*max abs reference \([^)]*\)).*/\1 \2/p' "$1" |
    awk 'BEGIN { m = -1 } { r = ($2 + 0 > 0) ? $1 / $2 : $1; if (r > m) m = r }
         END { if (m < 0) print "-"; else printf "%.3g", m }'
}

# check_build LINE COMM: one build over one communicator, compared and timed.
check_build() {
  local name model mode r sched kind ind pred status comm=$2
  IFS=$'\t' read -r name model mode r sched kind ind pred status <<< "$1"
  local label="$model $mode ($comm)"
  [ "$mode" = forward ] || label="$model train $mode ($comm)"
  if [ "$status" != ok ]; then
    add_row "$label: $status in prepare" "$r" "$sched" FAIL - - "$(fmt "$pred")" -; return
  fi
  if [ "$comm" = nccl ]; then
    if [ "$NGPU" -lt 1 ]; then add_row "$label (needs a GPU)" "$r" "$sched" SKIP - - "$(fmt "$pred")" -; return; fi
    if [ "$NGPU" -lt "$r" ]; then
      add_row "$label (needs $r GPUs)" "$r" "$sched" SKIP - - "$(fmt "$pred")" -; return
    fi
  fi
  if [ "$(tlimit 60)" -eq 0 ]; then add_row "$label (deadline)" "$r" "$sched" SKIP - - "$(fmt "$pred")" -; return; fi
  local so="$KIT/models/$name.so" out="$WORKR/$name-$comm" log="$name-$comm"
  rm -rf "$out"
  input_flags "$KIT/$ind"
  local args=("$so" "${TARGET_RUN_FLAGS[@]}" --comm "$comm" --timeout-s 60 "${IN_FLAGS[@]}")
  local cmp=() timed=()
  if [ "$kind" = train ]; then
    cmp=(--steps "$KIT_STEPS" --save-grads); timed=(--steps "$TIMED")
  else
    timed=(--iterations "$TIMED" --warmup 3)
  fi
  if ! step "$log" 120 "$KIT/bin/pipeopt-run" "${args[@]}" "${cmp[@]}" --output-dir "$out"; then
    add_row "$label: run failed" "$r" "$sched" FAIL - - "$(fmt "$pred")" -
    echo "        $(why "$log")"; return
  fi
  step "$log" 60 "$KIT/bin/pipeopt-npy-diff" --rtol "$RTOL" "$out" "$KIT/ref/$name"; local rc=$?
  local err res=PASS
  err=$(max_rel "$LOGS/$log.log")
  [ $rc -eq 0 ] || res=FAIL
  local meas="-"
  if step "$log" 120 "$KIT/bin/pipeopt-run" "${args[@]}" "${timed[@]}" --quiet --profile "$out.profile.json"; then
    meas=$(sed -n 's/.*"iteration_median_s": *\([0-9.eE+-]*\).*/\1/p' "$out.profile.json")
  else
    res=FAIL; label="$label: timed run failed"
  fi
  add_row "$label" "$r" "$sched" "$res" "$err" "$(fmt "$meas")" "$(fmt "$pred")" "$(ratio "$meas" "$pred")"
  [ "$res" = PASS ] || echo "        $(grep -m2 -E 'FAIL|error' "$LOGS/$log.log" | cut -c1-200)"
}

print_table() {
  local fmtline='%-46s %5s %-12s %-6s %10s %10s %10s %8s\n'
  printf "$fmtline" check ranks schedule result max_rel measured predicted ratio
  printf "$fmtline" "$(printf '%.0s-' {1..46})" ----- ------------ ------ ---------- ---------- ---------- --------
  local row
  for row in "${ROWS[@]}"; do
    IFS=$'\t' read -r -a f <<< "$row"
    printf "$fmtline" "${f[0]:0:46}" "${f[1]}" "${f[2]}" "${f[3]}" "${f[4]}" "${f[5]}" "${f[6]}" "${f[7]}"
  done
}

run_phase() {
  KIT="${1:-$ROOT/gpu-check-kit}"
  [ -f "$KIT/kit.env" ] && [ -f "$KIT/builds.tsv" ] ||
    die "$KIT is not a prepared kit (run 'scripts/gpu-check.sh prepare $KIT' first)"
  KIT=$(cd "$KIT" && pwd)
  # shellcheck disable=SC1091
  . "$KIT/kit.env"
  TARGET="$KIT_TARGET"
  START=$(date +%s)
  DEADLINE="${GPU_CHECK_DEADLINE_S:-480}"
  LOGS="$KIT/logs"; WORKR="$KIT/work"
  rm -rf "$LOGS" "$WORKR"; mkdir -p "$LOGS" "$WORKR"
  echo "== pipeopt CUDA device check ($(date -u +%FT%TZ)): target $TARGET, kit of $KIT_CREATED ($KIT_REVISION)"
  [ -n "$ONLY" ] && echo "   only builds matching: $ONLY"

  NGPU=0
  if [ "$TARGET" = cuda ]; then
    if command -v nvidia-smi >/dev/null && step gpu 30 nvidia-smi -L; then
      grep -v '^+' "$LOGS/gpu.log"
      NGPU=$(grep -c '^GPU ' "$LOGS/gpu.log")
      step gpu-query 30 nvidia-smi --format=csv \
        --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem &&
        grep -v '^+' "$LOGS/gpu-query.log"
    fi
    if [ "$NGPU" -ge 1 ]; then add_row "gpu (nvidia-smi -L)" - - PASS - "$NGPU GPU(s)" - -
    else add_row "gpu (nvidia-smi -L): none" - - FAIL - - - -; fi
    find_cuda_libs
    cat "$LOGS/cuda-libs.log"
    export LD_LIBRARY_PATH="$KIT/lib${CUDA_LIB_PATH:+:$CUDA_LIB_PATH}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if [ -z "$CUDA_LIBS_MISSING" ]; then add_row "cuda libraries ($CUDA_DEVICE_LIBS)" - - PASS - - - -
    else add_row "cuda libraries: missing $CUDA_LIBS_MISSING" - - FAIL - - - -; fi
    TARGET_RUN_FLAGS=("${CUDA_RUN_FLAGS[@]}")
  else
    add_row "gpu (target cpu)" - - SKIP - - - -
    export LD_LIBRARY_PATH="$KIT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    TARGET_RUN_FLAGS=()
  fi
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >> "$LOGS/runtime.log"
  if [ -f "$KIT/lib/libopenblas.so.0.gz" ] && [ ! -f "$KIT/lib/libopenblas.so.0" ]; then
    gzip -dc "$KIT/lib/libopenblas.so.0.gz" > "$KIT/lib/libopenblas.so.0" ||
      note "warning: could not unpack the kit's OpenBLAS"
  fi

  if check_runtime; then
    if [ -z "$ONLY" ]; then
      check_nccl_gtests
      check_cuda_gtests
      check_nccl_fake_model
      check_nccl_bandwidth
    fi
    local line name
    while IFS= read -r line; do
      [ -n "$line" ] || continue
      name=${line%%$'\t'*}
      if [ -n "$ONLY" ] && ! [[ "$name" =~ $ONLY ]]; then continue; fi
      # Models that cannot load (a missing library) are named in the log.
      ldd "$KIT/models/$name.so" 2>&1 | grep 'not found' >> "$LOGS/$name-loopback.log"
      check_build "$line" loopback
      check_build "$line" nccl
    done < "$KIT/builds.tsv"
  fi

  echo
  echo "== summary ($(elapsed) s; max_rel: max |actual - reference| / max |reference| over the tensors,"
  echo "   tolerance $RTOL; measured / predicted: median iteration s on the device / pipe-simulate h200,"
  echo "   or bytes/s / the h200 preset's link or memory; ratio = measured / predicted)"
  print_table | tee "$LOGS/summary.txt"
  local verdict
  if [ "$FAILS" -eq 0 ]; then verdict="PASS"; else verdict="FAIL ($FAILS check(s))"; fi
  echo "$verdict" | tee -a "$LOGS/summary.txt"
  if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then
    cp "$LOGS/summary.txt" "$OUT/gpu-check-summary.txt"
    tar czf "$OUT/gpu-check-logs.tar.gz" -C "$KIT" logs 2>/dev/null
  fi
  [ "$FAILS" -eq 0 ]
}

#===----------------------------------------------------------------------===#
# selftest
#===----------------------------------------------------------------------===#

selftest_phase() {
  local dir="${1:-$ROOT/build-gpu-check-selftest}"
  mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
  local kit="$dir/kit"
  export GPU_CHECK_TARGET=cpu
  echo "== selftest 1/3: prepare (target cpu) in $kit"
  bash "$SELF" prepare "$kit" > "$dir/prepare.txt" 2>&1 ||
    { cat "$dir/prepare.txt"; die "selftest: prepare failed"; }
  grep -E '^gpu-check: (ok|kit:)' "$dir/prepare.txt"
  echo "== selftest 2/3: run (every build must PASS)"
  bash "$SELF" run "$kit" > "$dir/run.txt" 2>&1; local rc=$?
  sed -n '/^== summary/,$p' "$dir/run.txt"
  [ $rc -eq 0 ] && [ "$(tail -1 "$dir/run.txt")" = PASS ] ||
    { cat "$dir/run.txt"; die "selftest: the run phase did not PASS (rc $rc)"; }
  # 3. A wrong reference value must be caught: the last f32 of a reference
  # tensor becomes 3.4e38 (bytes 7f 7f 7f 7f).
  local victim file size
  victim=$(awk -F'\t' '$6 == "train" && $9 == "ok" { print $1; exit }' "$kit/builds.tsv")
  [ -n "$victim" ] || victim=$(awk -F'\t' '$9 == "ok" { print $1; exit }' "$kit/builds.tsv")
  [ -n "$victim" ] || die "selftest: no build to corrupt"
  file=$(ls "$kit/ref/$victim"/*.npy | head -1)
  size=$(stat -c %s "$file")
  printf '\177\177\177\177' | dd of="$file" bs=1 seek=$((size - 4)) conv=notrunc status=none
  echo "== selftest 3/3: run $victim with a corrupted reference $(basename "$file") (must FAIL)"
  GPU_CHECK_ONLY="^$victim\$" bash "$SELF" run "$kit" > "$dir/run-bad.txt" 2>&1; rc=$?
  sed -n '/^== summary/,$p' "$dir/run-bad.txt"
  [ $rc -eq 1 ] && grep -q "^$(echo "${victim%%-*}") .* FAIL " "$dir/run-bad.txt" ||
    { cat "$dir/run-bad.txt"; die "selftest: a corrupted reference was not reported (rc $rc)"; }
  echo "selftest: PASS"
}

case "${1:-}" in
  prepare) shift; prepare_phase "$@" ;;
  run) shift; run_phase "$@" ;;
  selftest) shift; selftest_phase "$@" ;;
  -h|--help|help|"") usage ;;
  *) echo "gpu-check: unknown phase '$1'" >&2; usage ;;
esac
