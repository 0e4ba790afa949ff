//===- PipeAttributes.h - pipe dialect attributes -----------------*- C++
//-*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_DIALECT_PIPE_IR_PIPEATTRIBUTES_H
#define PIPEOPT_DIALECT_PIPE_IR_PIPEATTRIBUTES_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "pipeopt/Dialect/Pipe/IR/PipeEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "pipeopt/Dialect/Pipe/IR/PipeAttributes.h.inc"

#endif // PIPEOPT_DIALECT_PIPE_IR_PIPEATTRIBUTES_H
