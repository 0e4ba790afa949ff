//===- Pipelines.h - registered pipeopt pass pipelines ----------*- C++ -*-===//
//
// Part of pipeopt. Every registered pipeline is a build<Name>Pipeline
// function plus an options struct, so the pipeopt driver (--pass-pipeline),
// pipeopt-compile and tests all build exactly the same pass list
// (docs/Design.md §4, "Pipelines are functions").
// registerPipeoptPipelines() registers them all.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_PIPELINES_PIPELINES_H
#define PIPEOPT_PIPELINES_PIPELINES_H

#include "pipeopt/Schedule/Schedule.h"
#include "pipeopt/Transforms/Passes.h" // partitionStrategyValues

#include "mlir/Pass/PassOptions.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
class OpPassManager;
} // namespace mlir

namespace pipeopt {

//===----------------------------------------------------------------------===//
// pipeopt-pipeline (the front half: model -> verified per-rank programs)
//===----------------------------------------------------------------------===//

/// Options of `pipeopt-pipeline`; each is forwarded to the pass of the same
/// option name (see the passes' documentation for units and defaults).
struct PipeoptPipelineOptions
    : public mlir::PassPipelineOptions<PipeoptPipelineOptions> {
  Option<int64_t> numStages{
      *this, "num-stages",
      llvm::cl::desc("Model stages (pipe-partition). Ranks = num-stages for "
                     "one-chunk schedules; two-chunk schedules (zb-v, "
                     "dualpipev, hanayo, interleaved-1f1b with 2 chunks) "
                     "run 2 stages per rank, so S ranks need num-stages=2S"),
      llvm::cl::init(2)};
  Option<int64_t> numMicrobatches{
      *this, "num-microbatches",
      llvm::cl::desc("Microbatches per iteration (pipe-partition for "
                     "in-flight memory, pipe-schedule)"),
      llvm::cl::init(8)};
  Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("Schedule for pipe-schedule and pipe-partition's "
                     "memory rule (a name or alias of the schedule registry; "
                     "`pipeopt --help` lists them under pipe-schedule), or "
                     "'auto': pipe-auto-schedule chooses schedule, "
                     "microbatches and chunks per rank with the explorer "
                     "(num-stages then counts ranks; num-microbatches, when "
                     "given, is kept)"),
      llvm::cl::init(std::string(schedule::kDefaultSchedule))};
  ListOption<std::string> autoSchedules{
      *this, "auto-schedules",
      llvm::cl::desc("schedule=auto only: candidate schedules (default: "
                     "pipe-auto-schedule's)")};
  ListOption<int64_t> autoMicrobatches{
      *this, "auto-microbatches",
      llvm::cl::desc("schedule=auto without num-microbatches: candidate "
                     "microbatch counts (default: 1, 2, 4, 8 x ranks)")};
  Option<int64_t> virtualStages{
      *this, "virtual-stages",
      llvm::cl::desc("Chunks per rank for interleaved schedules (0: the "
                     "schedule's default); num-stages counts model stages"),
      llvm::cl::init(0)};
  Option<std::string> device{
      *this, "device",
      llvm::cl::desc("Device preset for the cost model: h100, h200, a100, cpu"),
      llvm::cl::init("h100")};
  Option<std::string> hardware{
      *this, "hardware",
      llvm::cl::desc("Hardware JSON (device and topology; overrides device)"),
      llvm::cl::init("")};
  Option<std::string> memoryLimit{
      *this, "memory-limit",
      llvm::cl::desc("Per-stage memory limit (80GB, 16GiB; empty: the "
                     "device's capacity; 0: unlimited)"),
      llvm::cl::init("")};
  Option<partition::Strategy> strategy{
      *this, "strategy", llvm::cl::desc("Partitioning strategy"),
      llvm::cl::init(partition::Strategy::Balanced), partitionStrategyValues()};
  Option<bool> training{
      *this, "training",
      llvm::cl::desc("Partition for training (stage time includes B and W)"),
      llvm::cl::init(false)};
  Option<std::string> profile{
      *this, "profile",
      llvm::cl::desc("Measured profile JSON (pipeopt-run --profile)"),
      llvm::cl::init("")};
  Option<std::string> report{
      *this, "report",
      llvm::cl::desc("Partition report: '-' prints the table, a path writes "
                     "JSON"),
      llvm::cl::init("")};
  Option<bool> verify{
      *this, "verify",
      llvm::cl::desc("Run pipe-verify-schedule on the programs"),
      llvm::cl::init(true)};
};

/// Adds the front half of docs/Design.md §2 to `pm` (on builtin.module):
/// pipe-prepare, pipe-partition, pipe-outline-stages, pipe-schedule and, with
/// `verify`, pipe-verify-schedule. With `schedule=auto`, pipe-prepare,
/// pipe-auto-schedule (which chooses the configuration and runs the three
/// middle passes with it; num-stages = ranks, virtual-stages = an extra
/// chunks-per-rank candidate) and pipe-verify-schedule. The result holds the
/// stage functions, the stage graph and one `pipe.program` per rank, ready for
/// `pipeopt-lower-to-llvm` (forward-only schedules) or `pipe-simulate`.
void buildPipeoptPipeline(mlir::OpPassManager &pm,
                          const PipeoptPipelineOptions &options);

//===----------------------------------------------------------------------===//
// pipeopt-lower-to-llvm
//===----------------------------------------------------------------------===//

/// Options of `pipeopt-lower-to-llvm`.
struct LowerToLLVMOptions
    : public mlir::PassPipelineOptions<LowerToLLVMOptions> {
  Option<std::string> manifest{
      *this, "manifest",
      llvm::cl::desc("Write the runtime manifest JSON to this file"),
      llvm::cl::init("")};
  ListOption<std::string> microbatchArgs{
      *this, "microbatch-args",
      llvm::cl::desc("Model arguments that differ per microbatch: auto (the "
                     "default), all, none, or a comma-separated list of "
                     "indices (see convert-pipe-to-runtime)")};
  Option<bool> tosaToLinalg{
      *this, "tosa-to-linalg",
      llvm::cl::desc("Lower TOSA ops to linalg/arith/tensor first"),
      llvm::cl::init(true)};
  Option<bool> kernels{
      *this, "kernels",
      llvm::cl::desc("Call the runtime's BLAS kernels for f32/f64 "
                     "contractions and convolutions "
                     "(convert-linalg-to-runtime-kernels); off: loops"),
      llvm::cl::init(true)};
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("Fuse element-wise linalg chains "
                                   "(pipeopt-fuse-elementwise)"),
                    llvm::cl::init(true)};
  Option<bool> approximateMath{
      *this, "approximate-math",
      llvm::cl::desc("Approximate every f32 math function upstream can "
                     "(exp, log, tanh, ...) with vectorizable polynomials "
                     "instead of libm calls (pipeopt-expand-math "
                     "approximate-all); erf/erfc are always expanded"),
      llvm::cl::init(false)};
  Option<bool> inputViews{
      *this, "input-views",
      llvm::cl::desc("Read model inputs in place (runtime views) instead of "
                     "copying them into new buffers at every call "
                     "(convert-pipe-to-runtime input-views)"),
      llvm::cl::init(true)};
  Option<bool> outlineLoopNests{
      *this, "outline-loop-nests",
      llvm::cl::desc("Compile each distinct loop nest once, as a function "
                     "called wherever it occurs "
                     "(pipeopt-outline-loop-nests); off: every loop nest "
                     "inline in its function"),
      llvm::cl::init(true)};
  Option<bool> outlineRepeats{
      *this, "outline-repeats",
      llvm::cl::desc("Compile each distinct repeated op sequence (a layer) "
                     "once, as a function called wherever it occurs "
                     "(pipeopt-outline-repeats); off: every layer inline in "
                     "its function"),
      llvm::cl::init(true)};
};

/// The options of the front part that pipeopt-lower-to-llvm and
/// pipeopt-lower-to-cuda share (addBufferizedLoweringPasses); each is the
/// option of the same name of those pipelines.
struct BufferizedLoweringOptions {
  std::string manifest;
  std::vector<std::string> microbatchArgs;
  bool tosaToLinalg = true;
  bool fuse = true;
  bool approximateMath = false;
  /// convert-pipe-to-runtime's input-views (cpu only; cuda builds copy).
  bool inputViews = true;
  /// "cpu" or "cuda": convert-pipe-to-runtime's manifest "target" and
  /// pipeopt-check-gather-indices' (cuda: clamp without reporting).
  std::string target = "cpu";
};

/// Adds the part of the lowering both targets share, up to bufferized,
/// deallocated memref code (anchored on builtin.module): TOSA -> linalg
/// (with `tosaToLinalg`), elementwise-to-linalg, convert-pipe-to-runtime
/// (writes the manifest), symbol-dce, canonicalize, element-wise fusion
/// (with `fuse`), gather index checks, math expansion, copies of aliased
/// results, one-shot bufferization with destination-passing stage
/// functions, and ownership-based buffer deallocation.
void addBufferizedLoweringPasses(mlir::OpPassManager &pm,
                                 const BufferizedLoweringOptions &options);

/// Adds the TOSA -> linalg / arith / tensor lowering of every func.func to
/// `pm` (anchored on builtin.module): tosa-to-linalg-named, tosa-to-linalg,
/// tosa-to-arith, tosa-to-tensor. Linalg input passes through unchanged.
/// The first step of buildLowerToLLVMPipeline (with `tosa-to-linalg`);
/// pipeopt-gradcheck runs it before differentiating.
void addTosaToLinalgPasses(mlir::OpPassManager &pm);

/// Adds the CPU lowering of a scheduled module (pipe.programs + stage
/// functions on tensors; TOSA or linalg) to LLVM dialect: TOSA -> linalg,
/// convert-pipe-to-runtime, element-wise fusion, gather index checks, math
/// expansion, one-shot bufferization with destination-passing stage
/// functions, buffer deallocation, contractions and convolutions as calls of
/// the runtime's BLAS kernels, loops for the rest, LLVM. `pm` must be anchored
/// on builtin.module. The result is translated with mlir-translate
/// --mlir-to-llvmir (or in-process) into one object per model, exporting
/// `pipeopt_rank_<r>` (docs/Runtime.md). Pipeline recipe: docs/Toolchain.md,
/// "CPU lowering".
void buildLowerToLLVMPipeline(mlir::OpPassManager &pm,
                              const LowerToLLVMOptions &options);

//===----------------------------------------------------------------------===//
// pipeopt-lower-to-cuda
//===----------------------------------------------------------------------===//

/// The CUDA toolkit directory found at configure time, or "" if pipeopt was
/// configured without one.
std::string defaultCUDAToolkitPath();

/// True if pipeopt was configured with a CUDA toolkit (PIPEOPT_HAVE_CUDA):
/// only then can pipeopt-compile link --target=cuda builds.
bool haveCUDA();

/// Checks that `chip` (e.g. "sm_90", the `chip` option of
/// pipeopt-lower-to-cuda and pipeopt-compile's --cuda-arch) is a GPU
/// architecture LLVM's NVPTX backend knows. Returns an error naming the
/// value otherwise: NVPTX itself only warns about an unknown processor and
/// the kernel serialization fails late, once per kernel module.
/// Also an error for architectures older than sm_75, which the CUDA 13
/// toolkit's ptxas no longer accepts.
llvm::Error checkCUDAChip(llvm::StringRef chip);

/// The PTX features pipeopt-lower-to-cuda uses for `chip` when its
/// `features` option is empty: the lowest PTX ISA version that supports the
/// architecture ("+ptx80" up to sm_90a, "+ptx86" for sm_100 / sm_101,
/// "+ptx87" for sm_120, "+ptx88" for sm_103 / sm_121; PTX ISA release
/// notes).
std::string defaultPTXFeatures(llvm::StringRef chip);

/// Options of `pipeopt-lower-to-cuda`. `toolkit` defaults to the CUDA
/// toolkit found at configure time (PIPEOPT_CUDA_TOOLKIT_DIR; empty when
/// there was none: gpu-module-to-binary then looks at CUDA_HOME /
/// CUDA_PATH / PATH).
struct LowerToCUDAOptions
    : public mlir::PassPipelineOptions<LowerToCUDAOptions> {
  Option<std::string> manifest{
      *this, "manifest",
      llvm::cl::desc("Write the runtime manifest JSON to this file (with "
                     "\"target\": \"cuda\")"),
      llvm::cl::init("")};
  ListOption<std::string> microbatchArgs{
      *this, "microbatch-args",
      llvm::cl::desc("Model arguments that differ per microbatch (see "
                     "convert-pipe-to-runtime)")};
  Option<bool> tosaToLinalg{
      *this, "tosa-to-linalg",
      llvm::cl::desc("Lower TOSA ops to linalg/arith/tensor first"),
      llvm::cl::init(true)};
  Option<bool> kernels{
      *this, "kernels",
      llvm::cl::desc("f32/f64 contractions and 2-D convolutions as calls "
                     "of pipeopt_rt_gpu_matmul / conv2d (cuBLAS / cuDNN); "
                     "off: generated kernels"),
      llvm::cl::init(true)};
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("Fuse element-wise linalg chains "
                                   "(pipeopt-fuse-elementwise)"),
                    llvm::cl::init(true)};
  Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("GPU architecture of the cubin (nvvm-attach-target)"),
      llvm::cl::init("sm_90")};
  Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features (default: the lowest PTX version the chip "
                     "needs, +ptx80 up to sm_90a, +ptx86 for sm_100; sm_90 "
                     "needs PTX >= 7.8, docs/Toolchain.md, GPU trap 1)"),
      llvm::cl::init("")};
  Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit directory whose ptxas and fatbinary "
                     "build the kernels (gpu-module-to-binary)"),
      llvm::cl::init(defaultCUDAToolkitPath())};
  Option<unsigned> ptxOptLevel{
      *this, "ptx-opt-level",
      llvm::cl::desc("Optimization level of the kernels (0-3)"),
      llvm::cl::init(2)};
  ListOption<int64_t> tileSizes{
      *this, "tile-sizes",
      llvm::cl::desc("Tile sizes of the innermost parallel loops "
                     "(scf-parallel-loop-tiling) = threads per block in "
                     "each mapped dimension; default 8,32")};
};

/// Adds the --target=cuda lowering of a scheduled module to LLVM dialect:
/// the shared front part (addBufferizedLoweringPasses with target cuda),
/// contractions and convolutions as pipeopt_rt_gpu_* calls
/// (convert-linalg-to-runtime-kernels target=cuda, with `kernels`),
/// pipeopt-buffers-to-gpu, linalg -> parallel loops -> tiles -> GPU
/// launches -> outlined kernels, pipeopt-check-gpu-host, gpu-async-region,
/// scf -> cf, expand-strided-metadata, lower-affine, NVVM, gpu-to-llvm,
/// gpu-module-to-binary (fatbin of `chip` + PTX, with the toolkit's ptxas
/// and fatbinary) and convert-to-llvm. The host code calls the runtime ABI,
/// the pipeopt_rt_gpu_* kernels and the mgpu* functions of
/// libpipeopt_rt_cuda.so (docs/Toolchain.md, "The mgpu host ABI"); every
/// buffer it passes is device memory. `pm` must be anchored on builtin.module.
void buildLowerToCUDAPipeline(mlir::OpPassManager &pm,
                              const LowerToCUDAOptions &options);

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

/// Registers every pipeopt pipeline with the global pass registry.
void registerPipeoptPipelines();

/// Adds the external interface models the lowering pipelines need on the
/// dialects pipeopt parses: bufferization (arith, cf, func boundaries,
/// linalg, ml_program, scf, tensor), buffer deallocation (arith, cf, scf),
/// allocation / view-flow (memref) and value bounds. Without them
/// one-shot-bufferize fails with "op was not bufferized" (upstream registers
/// them in mlir::registerAllDialects, which pipeopt does not call).
void registerLoweringInterfaces(mlir::DialectRegistry &registry);

} // namespace pipeopt

#endif // PIPEOPT_PIPELINES_PIPELINES_H
