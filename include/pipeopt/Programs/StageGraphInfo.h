//===- StageGraphInfo.h - Stage graph of an outlined function ---*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Used by pipe-schedule, pipe-verify-schedule and pipe-materialize-backward:
/// reads the stage graph form (docs/Rationale.md, "IR at each step"): a
/// func.func whose body is `pipe.stage_call` ops in stage order followed by
/// `func.return`. The SSA edges between the calls become a
/// schedule::StageGraph, and every value crossing a stage boundary gets its tag
/// value index (order of first use among the values flowing from stage i to
/// stage j).
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_PROGRAMS_STAGEGRAPHINFO_H
#define PIPEOPT_PROGRAMS_STAGEGRAPHINFO_H

#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"
#include "pipeopt/Schedule/Schedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <map>
#include <utility>
#include <vector>

namespace pipeopt {

/// The stage graph of one outlined model function.
struct StageGraphInfo {
  /// Where one operand of a stage call comes from.
  struct Source {
    /// Model argument `argIndex` of the stage graph function (fromStage < 0),
    /// or value `valueIndex` of the edge fromStage -> this stage.
    int fromStage = -1;
    unsigned argIndex = 0;
    int valueIndex = 0;
  };
  /// One value crossing a stage boundary, as seen from one side.
  struct EdgeValue {
    int peerStage;     ///< Producer (incoming list) or consumer (outgoing).
    int valueIndex;    ///< Index among the values of that edge.
    mlir::Value value; ///< A result of the producer's stage call.
  };

  mlir::func::FuncOp func;
  /// The stage call of every stage; index = stage.
  llvm::SmallVector<pipe::StageCallOp> calls;
  /// (from, to) -> values flowing from stage `from` to stage `to`, in order
  /// of first use. The position in the vector is the tag's value index.
  std::map<std::pair<int, int>, llvm::SmallVector<mlir::Value>> edgeValues;
  /// Per stage: the source of every operand of its stage call.
  std::vector<std::vector<Source>> sources;
  /// Per stage: values flowing in (edges i -> stage, ascending i, then value
  /// index) and out (edges stage -> j, ascending j, then value index).
  std::vector<std::vector<EdgeValue>> incoming, outgoing;
  /// Per result of the function: (stage, result index of its stage call).
  std::vector<std::pair<int, unsigned>> outputs;
  /// The stage-level graph for the schedule library; bytes per microbatch.
  schedule::StageGraph graph;

  int numStages() const { return static_cast<int>(calls.size()); }
  /// Result number of `v` in the call of its producing stage.
  static unsigned resultNumber(mlir::Value v) {
    return llvm::cast<mlir::OpResult>(v).getResultNumber();
  }
  /// Position of (fromStage, valueIndex) in `incoming[stage]`; -1 if absent.
  int incomingPosition(int stage, int fromStage, int valueIndex) const;
};

/// True if `fn` has a body containing at least one pipe.stage_call.
bool isStageGraph(mlir::func::FuncOp fn);

/// Reads the stage graph of `fn`. Emits an error at the offending op and
/// fails if the body is not in stage graph form: only pipe.stage_call and
/// func.return, one call per stage in stage order 0..S-1, S equal to the
/// `pipe.num_stages` attribute when present, every model argument and value
/// crossing stages a ranked tensor, results produced by stage calls.
mlir::FailureOr<StageGraphInfo> analyzeStageGraph(mlir::func::FuncOp fn);

/// Size in bytes of a statically shaped tensor type (element bit width
/// rounded up to whole bytes, times the number of elements); 0 for dynamic
/// shapes and non-tensor types.
double tensorBytes(mlir::Type type);

} // namespace pipeopt

#endif // PIPEOPT_PROGRAMS_STAGEGRAPHINFO_H
