//===- PipeOps.h - pipe dialect operations ------------------------*- C++ -*-===//
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

#define GET_OP_CLASSES
#include "pipeopt/Dialect/Pipe/IR/PipeOps.h.inc"

#endif // PIPEOPT_DIALECT_PIPE_IR_PIPEOPS_H
