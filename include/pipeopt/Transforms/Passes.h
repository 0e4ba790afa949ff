//===- Passes.h - pipeopt transformation passes -------------------*- C++
//-*-===//
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

#include "pipeopt/Autodiff/Autodiff.h" // Recompute (recompute=)
#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"
#include "pipeopt/Partition/Partitioner.h" // Strategy (pipe-partition's option)
#include "pipeopt/Schedule/Schedule.h"     // kDefaultSchedule (option defaults)
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

/// The values of pipe-differentiate's `loss=` option: pipe::LossKind by its
/// attribute spelling (`self` is what the pass records for a model that
/// returns its own loss; it is not an option value).
inline llvm::cl::ValuesClass lossOptionValues() {
  return llvm::cl::values(
      clEnumValN(pipe::LossKind::None, "none",
                 "a model returning one float scalar is its own loss; "
                 "otherwise result gradients are inputs"),
      clEnumValN(pipe::LossKind::MSE, "mse",
                 "mean squared error against a target"),
      clEnumValN(pipe::LossKind::CrossEntropy, "cross-entropy",
                 "cross entropy of logits against i64 class indices"));
}

/// The values of the `recompute=` option of pipe-differentiate and
/// pipe-materialize-backward: autodiff::Recompute by name.
inline llvm::cl::ValuesClass recomputeOptionValues() {
  return llvm::cl::values(
      clEnumValN(autodiff::Recompute::None, "none",
                 "save every forward value the backward reads (except "
                 "constants and layout ops of weights: always recomputed)"),
      clEnumValN(autodiff::Recompute::Elementwise, "elementwise",
                 "recompute cheap element-wise and data-movement results"),
      clEnumValN(autodiff::Recompute::All, "all",
                 "recompute the whole forward"));
}

/// The values of the `optimizer=` option of pipe-set-optimizer:
/// pipe::OptimizerKind by name.
inline llvm::cl::ValuesClass optimizerOptionValues() {
  return llvm::cl::values(
      clEnumValN(pipe::OptimizerKind::None, "none",
                 "no update (the loss and gradients only)"),
      clEnumValN(pipe::OptimizerKind::SGD, "sgd", "torch.optim.SGD"),
      clEnumValN(pipe::OptimizerKind::Momentum, "momentum",
                 "torch.optim.SGD with momentum"),
      clEnumValN(pipe::OptimizerKind::AdamW, "adamw", "torch.optim.AdamW"));
}

#define GEN_PASS_DECL
#include "pipeopt/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "pipeopt/Transforms/Passes.h.inc"

} // namespace pipeopt

#endif // PIPEOPT_TRANSFORMS_PASSES_H
