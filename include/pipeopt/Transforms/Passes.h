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
#include "llvm/Support/CommandLine.h"

#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"
#include "pipeopt/Partition/Partitioner.h" // Strategy (pipe-partition's option)
#include "pipeopt/Schedule/Schedule.h" // kDefaultSchedule (option defaults)
#include "pipeopt/Simulate/Simulator.h" // Level (pipe-simulate's trace-level)

#include <memory>

namespace pipeopt {

/// Where pipe-partition and pipe-simulate take B and W times from
/// (`backward-cost=`).
enum class BackwardCost {
  /// Cost the ops of each op's generated backward (lib/Autodiff).
  Generated,
  /// Per op class (docs/CostModel.md "Training: B and W").
  Rule,
};

/// The values of every `strategy=` option (pipe-partition,
/// pipe-auto-schedule, pipeopt-pipeline): partition::Strategy by name.
inline llvm::cl::ValuesClass partitionStrategyValues() {
  return llvm::cl::values(
      clEnumValN(partition::Strategy::Balanced, "balanced",
                 "optimal bottleneck"),
      clEnumValN(partition::Strategy::Uniform, "uniform", "equal op counts"),
      clEnumValN(partition::Strategy::Params, "params",
                 "balanced parameter bytes"),
      clEnumValN(partition::Strategy::Manual, "manual",
                 "keep and check the existing pipe.stage attributes"));
}

#define GEN_PASS_DECL
#include "pipeopt/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "pipeopt/Transforms/Passes.h.inc"

} // namespace pipeopt

#endif // PIPEOPT_TRANSFORMS_PASSES_H
