//===- PipeDialect.h - pipe dialect -------------------------------*- C++
//-*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_DIALECT_PIPE_IR_PIPEDIALECT_H
#define PIPEOPT_DIALECT_PIPE_IR_PIPEDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "pipeopt/Dialect/Pipe/IR/PipeAttributes.h"

#include "pipeopt/Dialect/Pipe/IR/PipeOpsDialect.h.inc"

#endif // PIPEOPT_DIALECT_PIPE_IR_PIPEDIALECT_H
