//===- Passes.h - pipeopt conversion passes -----------------------*- C++
//-*-===//
//
// Part of pipeopt. Declarations generated from Conversion/Passes.td: one
// create<Name>() per pass and registerPipeoptConversionPasses().
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_CONVERSION_PASSES_H
#define PIPEOPT_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
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
#include "pipeopt/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "pipeopt/Conversion/Passes.h.inc"

} // namespace pipeopt

#endif // PIPEOPT_CONVERSION_PASSES_H
