//===- Pipelines.h - registered pipeopt pass pipelines -----------*- C++ -*-===//
//
// Part of pipeopt. Every registered pipeline is a build<Name>Pipeline
// function plus an options struct, so the pipeopt driver (--pass-pipeline),
// pipeopt-compile and tests all build exactly the same pass list
// (STYLE.md §4.2). registerPipeoptPipelines() registers them all.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_PIPELINES_PIPELINES_H
#define PIPEOPT_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir {
class DialectRegistry;
class OpPassManager;
} // namespace mlir

namespace pipeopt {

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
  Option<std::string> microbatchArgs{
      *this, "microbatch-args",
      llvm::cl::desc("Model arguments that differ per microbatch: auto, all, "
                     "none, or a comma-separated list of indices (see "
                     "convert-pipe-to-runtime)"),
      llvm::cl::init("auto")};
  Option<bool> tosaToLinalg{
      *this, "tosa-to-linalg",
      llvm::cl::desc("Lower TOSA ops to linalg/arith/tensor first"),
      llvm::cl::init(true)};
};

/// Adds the CPU lowering of a scheduled module (pipe.programs + stage
/// functions on tensors; TOSA or linalg) to LLVM dialect: TOSA -> linalg,
/// convert-pipe-to-runtime, one-shot bufferization with destination-passing
/// stage functions, buffer deallocation, loops, LLVM. `pm` must be anchored
/// on builtin.module. The result is translated with mlir-translate
/// --mlir-to-llvmir (or in-process) into one object per model, exporting
/// `pipeopt_rank_<r>` (docs/Runtime.md). Pipeline recipe: TOOLCHAIN.md Q2/Q3.
void buildLowerToLLVMPipeline(mlir::OpPassManager &pm,
                              const LowerToLLVMOptions &options);

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
