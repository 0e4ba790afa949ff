//===- Pipelines.cpp - registered pipeopt pass pipelines -------*- C++ -*-===//
//
// Part of pipeopt. See Pipelines.h. New pipelines go into their own section
// below and are added to registerPipeoptPipelines().
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Pipelines/Pipelines.h"

#include "pipeopt/Backend/Passes.h"
#include "pipeopt/Conversion/Passes.h"
#include "pipeopt/Transforms/Passes.h"

#include "mlir/Conversion/ConvertToLLVM/ToLLVMPass.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/TosaToArith/TosaToArith.h"
#include "mlir/Conversion/TosaToLinalg/TosaToLinalg.h"
#include "mlir/Conversion/TosaToTensor/TosaToTensor.h"
#include "mlir/Dialect/Affine/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/AllInterfaces.h"
#include "mlir/Dialect/MLProgram/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/TensorTilingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;

//===----------------------------------------------------------------------===//
// pipeopt-pipeline
//===----------------------------------------------------------------------===//

void pipeopt::buildPipeoptPipeline(OpPassManager &pm,
                                   const PipeoptPipelineOptions &options) {
  // Inline func.call helpers: the partitioner sees one graph per function.
  pm.addPass(createPreparePass());

  if (options.schedule == "auto") {
    // The explorer's choice, then partition / outline / schedule with it.
    AutoSchedulePassOptions a;
    a.numRanks = options.numStages;
    a.numMicrobatches =
        options.numMicrobatches.hasValue() ? options.numMicrobatches : 0;
    a.microbatchCandidates.assign(options.autoMicrobatches.begin(),
                                  options.autoMicrobatches.end());
    a.schedules.assign(options.autoSchedules.begin(),
                       options.autoSchedules.end());
    if (options.virtualStages > 0)
      a.virtualStages = {options.virtualStages};
    a.device = options.device;
    a.hardware = options.hardware;
    a.memoryLimit = options.memoryLimit;
    a.strategy = options.strategy;
    a.training = options.training;
    a.profile = options.profile;
    a.report = options.report;
    pm.addPass(createAutoSchedulePass(a));
    if (options.verify)
      pm.addPass(createVerifySchedulePass());
    return;
  }

  // Cost model + optimal bottleneck split; writes pipe.stage on every op.
  PartitionPassOptions partition;
  partition.numStages = options.numStages;
  partition.numMicrobatches = options.numMicrobatches;
  // In-flight activation memory follows the schedule that will run.
  partition.schedule = options.schedule;
  partition.device = options.device;
  partition.hardware = options.hardware;
  partition.memoryLimit = options.memoryLimit;
  partition.strategy = options.strategy;
  partition.training = options.training;
  partition.profile = options.profile;
  partition.report = options.report;
  pm.addPass(createPartitionPass(partition));

  // One function per stage and the stage graph of pipe.stage_calls.
  pm.addPass(createOutlineStagesPass());

  // Schedule table -> per-rank programs with pipe.send / pipe.recv.
  SchedulePassOptions schedule;
  schedule.scheduleName = options.schedule;
  schedule.numMicrobatches = options.numMicrobatches;
  schedule.virtualStages = options.virtualStages;
  pm.addPass(createSchedulePass(schedule));

  // Matched transfers, complete and ordered actions, no deadlock.
  if (options.verify)
    pm.addPass(createVerifySchedulePass());
}

//===----------------------------------------------------------------------===//
// pipeopt-lower-to-llvm
//===----------------------------------------------------------------------===//

void pipeopt::addTosaToLinalgPasses(OpPassManager &pm) {
  // TOSA -> linalg/arith/tensor, per function (models' README recipe).
  // Linalg input passes through unchanged.
  OpPassManager &fpm = pm.nest<func::FuncOp>();
  fpm.addPass(tosa::createTosaToLinalgNamed());
  fpm.addPass(tosa::createTosaToLinalg());
  fpm.addPass(createTosaToArithPass());
  fpm.addPass(createTosaToTensorPass());
}

void pipeopt::addBufferizedLoweringPasses(
    OpPassManager &pm, const BufferizedLoweringOptions &options) {
  if (options.tosaToLinalg)
    addTosaToLinalgPasses(pm);

  // Elementwise arith/math on tensors (e.g. arith.maximumf in the JAX
  // ResNet's relu helpers) -> linalg.generic, which bufferizes.
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());

  // pipe.program -> pipeopt_rank_<r>() entry points calling the runtime ABI;
  // writes the manifest; stage functions become private.
  ConvertPipeToRuntimePassOptions toRuntime;
  toRuntime.manifestPath = options.manifest;
  toRuntime.microbatchArgs.assign(options.microbatchArgs.begin(),
                                  options.microbatchArgs.end());
  toRuntime.target = options.target;
  toRuntime.inputViews = options.inputViews && options.target == "cpu";
  pm.addPass(createConvertPipeToRuntimePass(toRuntime));

  // Drop functions and globals (e.g. an unused ml_program.global seed) that
  // no entry point reaches.
  pm.addPass(createSymbolDCEPass());

  // Clean up after TOSA lowering before bufferizing.
  pm.addPass(createCanonicalizerPass());

  // One loop nest per element-wise chain instead of one per op
  // (contractions and convolutions are left for the library kernels).
  if (options.fuse) {
    pm.addPass(createFuseElementwisePass());
    pm.addPass(createCanonicalizerPass());
  }

  // Out-of-range gather indices are run-time errors, not wild reads.
  CheckGatherIndicesPassOptions gather;
  gather.target = options.target;
  pm.addPass(createCheckGatherIndicesPass(gather));

  // On the CPU, math.erf / erfc have no LLVM lowering: pipeopt-expand-math.
  // On the GPU, convert-gpu-to-nvvm lowers every math function (erf
  // included, on every float type) to CUDA's libdevice (__nv_*), which
  // gpu-module-to-binary links: no expansion, and no libm call that device
  // code could not make.
  if (options.target != "cuda") {
    ExpandMathPassOptions math;
    math.approximateAll = options.approximateMath;
    pm.addPass(createExpandMathPass(math));
  }

  // buffer-results-to-out-params needs one allocation per result.
  pm.addPass(createCopyAliasedResultsPass());

  // Pads as fill + insert_slice, and the padded value's producer writing
  // into the padded buffer (no strided copy per convolution input).
  pm.addPass(createDecomposePadsPass());

  // Tensors -> memrefs across function boundaries; every function argument
  // and result gets an identity layout so the calls line up.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // scf.for with loop-carried tensors (a recurrent model, a loop over
  // layers): each iteration may yield a new buffer; the ownership-based
  // deallocation below frees the previous one.
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));

  // Destination-passing stage functions: results become caller-allocated
  // out-params (static allocations hoisted into the caller). Entry points
  // return only an i32 status, so they keep their signature.
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));

  // Ownership-based deallocation, so that repeated iterations (one call of
  // an entry point each) do not leak, also on the early-return error paths.
  bufferization::buildBufferDeallocationPipeline(pm);

  // Model inputs read in place (convert-pipe-to-runtime's input views): the
  // view calls come after deallocation, which would free their buffers.
  pm.addPass(createMaterializeInputViewsPass());
}

/// The front part's options of a lowering pipeline's options (both have
/// manifest, microbatch-args, tosa-to-linalg and fuse).
template <typename Options>
static pipeopt::BufferizedLoweringOptions frontOptions(const Options &options,
                                                       llvm::StringRef target) {
  pipeopt::BufferizedLoweringOptions front;
  front.manifest = options.manifest;
  front.microbatchArgs.assign(options.microbatchArgs.begin(),
                              options.microbatchArgs.end());
  front.tosaToLinalg = options.tosaToLinalg;
  front.fuse = options.fuse;
  front.target = target.str();
  return front;
}

void pipeopt::buildLowerToLLVMPipeline(OpPassManager &pm,
                                       const LowerToLLVMOptions &options) {
  BufferizedLoweringOptions front = frontOptions(options, "cpu");
  front.approximateMath = options.approximateMath;
  front.inputViews = options.inputViews;
  addBufferizedLoweringPasses(pm, front);

  // Temporaries are freed after their last use, not when the step returns.
  pm.addPass(createFreeBuffersEarlyPass());

  // Contractions and convolutions -> calls of the runtime's BLAS kernels.
  if (options.kernels)
    pm.addPass(createConvertLinalgToRuntimeKernelsPass());

  // Each distinct loop nest that is left becomes one function, called
  // wherever it occurs: LLVM compiles a repeated transformer block's loop
  // nests once.
  if (options.outlineLoopNests)
    pm.addPass(createOutlineLoopNestsPass());

  // Each distinct repeated op sequence (a layer's forward or backward glue
  // code) becomes one function too: LLVM's time stops growing with depth.
  if (options.outlineRepeats)
    pm.addPass(createOutlineRepeatsPass());

  // Linalg -> loops (everything the kernels do not take).
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());

  // scf -> cf (convert-to-llvm does not lower scf).
  pm.addPass(createSCFToControlFlowPass());

  // Subviews / reshapes -> plain descriptors before LLVM lowering.
  pm.addPass(memref::createExpandStridedMetadataPass());

  // affine.apply left by expand-strided-metadata -> arith.
  pm.addPass(createLowerAffinePass());

  // Buffers are allocated and freed through _mlir_memref_to_llvm_alloc /
  // _mlir_memref_to_llvm_free, which the runtime's buffer cache defines
  // (runtime/include/pipeopt/runtime/BufferCache.h): a step's buffers are
  // reused at the next step instead of being mapped afresh.
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));

  // Everything -> LLVM dialect; functions with llvm.emit_c_interface (the
  // runtime ABI) are called through their _mlir_ciface_ wrappers.
  pm.addPass(createConvertToLLVMPass());

  // Remove the casts the partial conversions left behind.
  pm.addPass(createReconcileUnrealizedCastsPass());
}

//===----------------------------------------------------------------------===//
// pipeopt-lower-to-cuda
//===----------------------------------------------------------------------===//

std::string pipeopt::defaultCUDAToolkitPath() {
#ifdef PIPEOPT_CUDA_TOOLKIT_DIR
  return PIPEOPT_CUDA_TOOLKIT_DIR;
#else
  return "";
#endif
}

bool pipeopt::haveCUDA() {
#ifdef PIPEOPT_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

// LLVM's NVPTX target (linked through MLIR's NVVM target); initializing it
// twice is harmless.
extern "C" void LLVMInitializeNVPTXTargetInfo();
extern "C" void LLVMInitializeNVPTXTargetMC();

/// The number of an "sm_<digits>[suffix]" architecture (90 for sm_90a).
static std::optional<unsigned> smVersion(llvm::StringRef chip) {
  unsigned sm = 0;
  if (!chip.consume_front("sm_") ||
      chip.take_while(llvm::isDigit).getAsInteger(10, sm))
    return std::nullopt;
  return sm;
}

llvm::Error pipeopt::checkCUDAChip(llvm::StringRef chip) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTargetMC();
  llvm::Triple triple("nvptx64-nvidia-cuda");
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("cannot check the GPU architecture '" +
                                   chip + "': " + error);
  // Created for the generic processor: created for `chip`, it would warn
  // about an unknown one.
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      target->createMCSubtargetInfo(triple, "", ""));
  if (!sti || !sti->isCPUStringValid(chip))
    return llvm::createStringError(
        "'" + chip +
        "' is not a GPU architecture LLVM's NVPTX backend knows (expected "
        "sm_<major><minor>, e.g. sm_80, sm_90, sm_90a)");
  if (std::optional<unsigned> sm = smVersion(chip); sm && *sm < 75)
    return llvm::createStringError(
        "'" + chip +
        "' is older than the CUDA 13 toolkit's ptxas supports (sm_75 and "
        "newer: Turing, Ampere, Ada, Hopper, Blackwell)");
  return llvm::Error::success();
}

std::string pipeopt::defaultPTXFeatures(llvm::StringRef chip) {
  std::optional<unsigned> version = smVersion(chip);
  if (!version)
    return "+ptx80";
  unsigned sm = *version;
  // The PTX ISA version that introduced each target (PTX ISA reference,
  // "Release Notes"; LLVM's NVPTX.td has the same minimums): 8.0 covers
  // everything up to sm_90a, 8.6 added sm_100 / sm_101, 8.7 sm_120, 8.8
  // sm_103 / sm_121.
  if (sm == 103 || sm >= 121)
    return "+ptx88";
  if (sm >= 120)
    return "+ptx87";
  if (sm >= 100)
    return "+ptx86";
  return "+ptx80";
}

void pipeopt::buildLowerToCUDAPipeline(OpPassManager &pm,
                                       const LowerToCUDAOptions &options) {
  addBufferizedLoweringPasses(pm, frontOptions(options, "cuda"));

  // Contractions and convolutions -> cuBLAS / cuDNN through
  // pipeopt_rt_gpu_matmul / conv2d (libpipeopt_rt_cuda.so).
  if (options.kernels) {
    ConvertLinalgToRuntimeKernelsPassOptions kernels;
    kernels.target = "cuda";
    pm.addPass(createConvertLinalgToRuntimeKernelsPass(kernels));
  }

  // Every buffer in device memory; reductions to scalars get a parallel
  // loop of one iteration (a one-thread kernel).
  pm.addPass(createBuffersToGpuPass());

  // Linalg -> scf.parallel (reductions inside as scf.for) -> tiles -> GPU
  // blocks x threads (tile first, docs/Toolchain.md GPU trap 6). The intra-tile
  // loops get the tile size as their bound and an scf.if guard
  // (no-min-max-bounds): convert-parallel-loops-to-gpu needs a bound it can
  // read as a constant, and the affine.min bounds that tiling makes by
  // default (of an arith.muli it does not fold) are not, so it left every
  // loop nest on the host.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  SmallVector<int64_t> tileSizes(options.tileSizes.begin(),
                                 options.tileSizes.end());
  if (tileSizes.empty())
    tileSizes = {8, 32};
  pm.addNestedPass<func::FuncOp>(
      createParallelLoopTilingPass(tileSizes, /*noMinMaxBounds=*/true));
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  pm.addPass(createGpuKernelOutliningPass());
  // One kernel module: ptxas and fatbinary run once, not once per kernel.
  pm.addPass(createMergeGpuModulesPass());

  // The host side may only allocate, copy, launch and call the runtime.
  pm.addPass(createCheckGpuHostPass());

  // Trap 2: synchronous gpu.alloc / memcpy / dealloc are only lowered in
  // async form. All of them end up on the rank's one compute stream
  // (mgpuStreamCreate of libpipeopt_rt_cuda.so).
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());

  // Host and device: structured control flow, views, affine (trap 4).
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());

  // Kernels -> NVVM -> fatbin (cubin for `chip` + PTX), embedded as a
  // gpu.binary; trap 1: PTX >= 7.8 for sm_90.
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features.empty() ? defaultPTXFeatures(options.chip)
                                             : std::string(options.features);
  target.optLevel = options.ptxOptLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &gpm = pm.nest<gpu::GPUModuleOp>();
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  gpm.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  gpm.addPass(createCanonicalizerPass());
  gpm.addPass(createCSEPass());
  gpm.addPass(createReconcileUnrealizedCastsPass());

  // Host: gpu.* -> mgpu* calls, then the fatbin.
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "fatbin";
  binary.toolkitPath = options.toolkit;
  pm.addPass(createGpuModuleToBinaryPass(binary));

  // Everything else on the host -> LLVM (runtime ABI through the
  // _mlir_ciface_ wrappers, as on the CPU).
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void pipeopt::registerLoweringInterfaces(DialectRegistry &registry) {
  affine::registerValueBoundsOpInterfaceExternalModels(registry);
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  arith::registerBufferViewFlowOpInterfaceExternalModels(registry);
  arith::registerValueBoundsOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  cf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  cf::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerAllDialectInterfaceImplementations(registry);
  memref::registerAllocationOpInterfaceExternalModels(registry);
  memref::registerBufferViewFlowOpInterfaceExternalModels(registry);
  memref::registerValueBoundsOpInterfaceExternalModels(registry);
  ml_program::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerValueBoundsOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerInferTypeOpInterfaceExternalModels(registry);
  tensor::registerSubsetOpInterfaceExternalModels(registry);
  tensor::registerTilingInterfaceExternalModels(registry);
  tensor::registerValueBoundsOpInterfaceExternalModels(registry);
}

void pipeopt::registerPipeoptPipelines() {
  PassPipelineRegistration<PipeoptPipelineOptions>(
      "pipeopt-pipeline",
      "Model -> verified per-rank programs: pipe-prepare, pipe-partition, "
      "pipe-outline-stages, pipe-schedule, pipe-verify-schedule",
      buildPipeoptPipeline);
  PassPipelineRegistration<LowerToLLVMOptions>(
      "pipeopt-lower-to-llvm",
      "Lower a scheduled module (pipe.programs + stage functions) to LLVM "
      "dialect for the CPU: TOSA -> linalg, convert-pipe-to-runtime, "
      "bufferization (destination-passing), deallocation, loops, LLVM",
      buildLowerToLLVMPipeline);
  PassPipelineRegistration<LowerToCUDAOptions>(
      "pipeopt-lower-to-cuda",
      "Lower a scheduled module to LLVM dialect for --target=cuda: the front "
      "part of pipeopt-lower-to-llvm, contractions and convolutions as "
      "cuBLAS/cuDNN calls, every buffer in device memory, the rest as GPU "
      "kernels (NVVM, fatbin embedded in the host module)",
      buildLowerToCUDAPipeline);
}
