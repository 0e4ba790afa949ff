//===- InitAll.cpp - register pipeopt dialects and passes ---------*- C++
//-*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/InitAll.h"

#include "pipeopt/Backend/Passes.h"
#include "pipeopt/Conversion/Passes.h"
#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"
#include "pipeopt/Pipelines/Pipelines.h"
#include "pipeopt/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

namespace pipeopt::test {
// Test-only passes (test/lib), declared here as upstream MLIR does.
void registerTestConvertToF64Pass();
void registerTestCostModelPass();
} // namespace pipeopt::test

void pipeopt::registerAllDialects(mlir::DialectRegistry &registry) {
  // Only what pipeopt must parse: its own dialect and the upstream input and
  // lowering dialects (docs/Design.md §4 "Inputs").
  registry.insert<pipe::PipeDialect, mlir::func::FuncDialect,
                  mlir::tosa::TosaDialect, mlir::linalg::LinalgDialect,
                  mlir::tensor::TensorDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect, mlir::scf::SCFDialect,
                  mlir::cf::ControlFlowDialect, mlir::memref::MemRefDialect,
                  mlir::bufferization::BufferizationDialect,
                  mlir::ml_program::MLProgramDialect, mlir::LLVM::LLVMDialect,
                  mlir::gpu::GPUDialect, mlir::NVVM::NVVMDialect>();
  // pipeopt-lower-to-cuda: the NVVM target of gpu-module-to-binary, which
  // translates kernels to LLVM IR, and the translation of gpu.binary /
  // gpu.launch_func in the host module.
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  mlir::registerAllGPUToLLVMIRTranslations(registry);
  // Bufferization, tiling and convert-to-llvm interfaces used by lowering.
  mlir::registerAllExtensions(registry);
  // Bufferization / deallocation models used by pipeopt-lower-to-llvm.
  registerLoweringInterfaces(registry);
}

void pipeopt::registerAllPasses() {
  // Upstream passes, so the lowering pipelines can be replayed step by step.
  mlir::registerAllPasses();
  registerPipeoptPasses();
  test::registerTestConvertToF64Pass();
  test::registerTestCostModelPass();
  registerPipeoptConversionPasses();
  registerPipeoptBackendPasses();
  registerPipeoptPipelines();
}
