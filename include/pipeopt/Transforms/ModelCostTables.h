//===- ModelCostTables.h - Cost tables of a partitioned model ----*- C++
//-*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The simulator's cost table (include/pipeopt/Simulate/CostTable.h) of a
/// model function partitioned into n stages, for any n: the function's
/// partitioner graph (PartitionGraph.h, the graph pipe-partition builds)
/// split by the balanced partitioner (include/pipeopt/Partition/
/// Partitioner.h). `pipeopt-explore --model` and pipe-auto-schedule
/// (`schedule=auto` of pipeopt-pipeline and pipeopt-compile) evaluate
/// schedules on these tables (pipe-simulate and pipe-auto-schedule simulate
/// them on the same machine, compute speed 1).
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_TRANSFORMS_MODELCOSTTABLES_H
#define PIPEOPT_TRANSFORMS_MODELCOSTTABLES_H

#include "pipeopt/Analysis/CostModel.h"
#include "pipeopt/Partition/Partitioner.h"
#include "pipeopt/Simulate/CostTable.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>

namespace pipeopt {

/// The balanced partitions of one model function and their cost tables.
class ModelCostTables {
public:
  /// Builds the partitioner graph of `fn` (a prepared model function: one
  /// block, helper calls inlined) with the cost model on `hw`.
  /// `optimizerFactor`: extra bytes per weight byte counted in the tables'
  /// weight bytes (gradients, optimizer state; 0 for inference).
  /// `training`: the partitioner balances F + B + W (else F). `name` names
  /// the tables. Errors: those of buildPartitionGraph().
  static llvm::Expected<ModelCostTables>
  fromFunction(mlir::func::FuncOp fn, const machine::Machine &hw,
               double optimizerFactor, bool training, llvm::StringRef name);

  /// Parses the model file `path` (dialects of `registry`), inlines helper
  /// calls (pipe-prepare), takes the function with the most ops and calls
  /// fromFunction() on machine::loadMachine(`device`, `hardwarePath`)
  /// (training). Errors: an unreadable or unparsable file, a module
  /// already outlined or scheduled, no function with a body, and those of
  /// fromFunction(); MLIR diagnostics go to stderr.
  static llvm::Expected<ModelCostTables>
  load(llvm::StringRef path, llvm::StringRef device,
       llvm::StringRef hardwarePath, double optimizerFactor,
       const mlir::DialectRegistry &registry);

  /// The cost table of the balanced partition into `n` stages (cached),
  /// per stage: F, B, W = sums over its ops and rematerialized copies (s
  /// per microbatch), activation bytes per microbatch (the partitioner's
  /// StageReport::activationBytes), weight bytes = parameter bytes x (1 +
  /// optimizer factor), boundary = bytes it sends to the next stage per
  /// microbatch. No memory limit: callers judge memory per schedule.
  /// Errors: the partitioner's (e.g. more stages than placeable ops).
  llvm::Expected<const sim::CostTable *> get(int n);

  /// The tables and partition reports built so far, by stage count.
  const std::map<int, sim::CostTable> &tables() const { return tables_; }
  const std::map<int, partition::Report> &reports() const { return reports_; }

  std::string name;         ///< "<file> (@f, N ops) on <device>, ..." or given.
  std::string functionName; ///< The model function.
  int numOps = 0;           ///< Nodes of its graph.
  machine::Machine machine; ///< The cost model's machine.

private:
  partition::Graph graph_;
  double optimizerFactor_ = 3;
  bool training_ = true;
  std::map<int, sim::CostTable> tables_;
  std::map<int, partition::Report> reports_;
};

} // namespace pipeopt

#endif // PIPEOPT_TRANSFORMS_MODELCOSTTABLES_H
