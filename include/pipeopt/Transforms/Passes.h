//===- Passes.h - pipeopt transformation passes -------------------*- C++ -*-===//
//
// Part of pipeopt. Declarations generated from Passes.td: one
// create<Name>() per pass and registerPipeoptPasses().
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_TRANSFORMS_PASSES_H
#define PIPEOPT_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"
#include "pipeopt/Schedule/Schedule.h" // kDefaultSchedule (option defaults)

#include <memory>

namespace pipeopt {

#define GEN_PASS_DECL
#include "pipeopt/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "pipeopt/Transforms/Passes.h.inc"

} // namespace pipeopt

#endif // PIPEOPT_TRANSFORMS_PASSES_H
