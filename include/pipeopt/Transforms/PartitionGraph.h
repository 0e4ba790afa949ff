//===- PartitionGraph.h - Partitioner graph of a function body --*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Builds the partitioner's weighted DAG (include/pipeopt/Partition/
/// Partitioner.h) from the body of a model function, with node costs from
/// the MLIR cost model (include/pipeopt/Analysis/CostModel.h). Used by
/// pipe-partition and by `pipeopt-explore --model`, so both see the same
/// graph. The rules (rematerializable values, weight attribution, edges)
/// are documented on pipe-partition in Passes.td and in docs/CostModel.md.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_TRANSFORMS_PARTITIONGRAPH_H
#define PIPEOPT_TRANSFORMS_PARTITIONGRAPH_H

#include "pipeopt/Analysis/CostModel.h"
#include "pipeopt/Partition/Partitioner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace pipeopt {

/// The partitioner graph of one function body.
struct FunctionGraph {
  /// Node i is `ops[i]`; edge bytes are bytes per microbatch (the
  /// function's tensor shapes); times in seconds on the analysis' device.
  partition::Graph graph;
  /// The top-level ops of the body (without the terminator), in program
  /// order.
  llvm::SmallVector<mlir::Operation *> ops;
  /// Per op: rematerializable (cheap, side-effect free, reads no weight,
  /// not a function result, every input a function argument or another
  /// rematerializable value).
  /// Such nodes carry no output or parameter bytes.
  std::vector<bool> remat;
};

/// Builds the graph of `fn`'s body: one node per top-level op with its
/// forward, input-gradient (B) and weight-gradient (W) times (seconds),
/// FLOPs, saved-activation bytes and the weights it reads (each weight
/// argument or constant attributed, in bytes, to its first non-remat
/// reader); one edge per (producer, consumer, result) carrying the value's
/// bytes, values captured by regions included. Costs are taken from
/// `analysis` (apply profiles before calling). Errors: a body with more
/// than one block, or without ops. With `rematFromArguments` false, only
/// values computed from constants alone are rematerialized (pipe-partition
/// falls back to that when rematerialization leaves fewer placeable ops than
/// stages, e.g. a model of element-wise ops on its inputs).
llvm::Expected<FunctionGraph>
buildPartitionGraph(mlir::func::FuncOp fn, cost::CostAnalysis &analysis,
                    bool rematFromArguments = true);

/// Every value `op` reads: its operands and the values its regions capture
/// from above (so a linalg.generic's body counts as part of the op).
llvm::SmallVector<mlir::Value> valuesReadBy(mlir::Operation *op);

/// The partitioner's link model for `topology`: stage k on rank k, per-pair
/// alpha-beta links from the topology (intra- or inter-node), the intra-node
/// link as the uniform default.
partition::LinkModel linkModelFor(const machine::Topology &topology);

} // namespace pipeopt

#endif // PIPEOPT_TRANSFORMS_PARTITIONGRAPH_H
