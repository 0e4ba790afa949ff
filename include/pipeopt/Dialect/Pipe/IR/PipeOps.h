//===- PipeOps.h - pipe dialect operations ------------------------*- C++
//-*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_DIALECT_PIPE_IR_PIPEOPS_H
#define PIPEOPT_DIALECT_PIPE_IR_PIPEOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "pipeopt/Dialect/Pipe/IR/PipeAttributes.h"
#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"

/// MicrobatchOpInterface (PipeInterfaces.td).
#include "pipeopt/Dialect/Pipe/IR/PipeInterfaces.h.inc"

#include <cstdint>
#include <optional>

#define GET_OP_CLASSES
#include "pipeopt/Dialect/Pipe/IR/PipeOps.h.inc"

namespace pipeopt::pipe {

/// The microbatch a program-body op belongs to (MicrobatchOpInterface): its
/// `microbatch` attribute (pipe.input, pipe.output, pipe.forward,
/// pipe.backward, pipe.gradient) or its tag's (pipe.send, pipe.recv);
/// std::nullopt for any other op.
std::optional<int64_t> getMicrobatch(mlir::Operation *op);

} // namespace pipeopt::pipe

#endif // PIPEOPT_DIALECT_PIPE_IR_PIPEOPS_H
