//===- Passes.h - pipeopt back-end passes -------------------------*- C++
//-*-===//
//
// Part of pipeopt. Declarations generated from Backend/Passes.td: one
// create<Name>() per pass and registerPipeoptBackendPasses().
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_BACKEND_PASSES_H
#define PIPEOPT_BACKEND_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace pipeopt {

#define GEN_PASS_DECL
#include "pipeopt/Backend/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "pipeopt/Backend/Passes.h.inc"

} // namespace pipeopt

#endif // PIPEOPT_BACKEND_PASSES_H
