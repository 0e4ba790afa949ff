//===- ProgramTable.h - Programs read back as a schedule -----*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Used by pipe-verify-schedule, pipe-simulate and pipe-schedule: groups the
/// `pipe.program @<f>_rank<r>` ops of a module by scheduled function and
/// reads one group back into a schedule::Schedule (F from `pipe.forward`,
/// BW / B / W from `pipe.backward full|input|weight`, Send / Recv from
/// `pipe.send` / `pipe.recv` with their peers and tags; the stage -> rank
/// placement from where the forwards are) plus its stage graph. Also the
/// CSV writer behind the `export-csv` option of pipe-schedule and
/// pipe-verify-schedule.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_PROGRAMS_PROGRAMTABLE_H
#define PIPEOPT_PROGRAMS_PROGRAMTABLE_H

#include "pipeopt/Programs/StageGraphInfo.h"

#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"
#include "pipeopt/Programs/ProgramChecks.h"
#include "pipeopt/Schedule/Schedule.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <vector>

namespace pipeopt {

/// The pipe.program ops of `module` grouped by programBaseName()
/// (ProgramChecks.h), in order
/// of first appearance.
llvm::MapVector<llvm::StringRef, llvm::SmallVector<pipe::ProgramOp>>
groupPrograms(mlir::ModuleOp module);

/// Orders the programs of one group by rank: orderProgramsByRank()
/// (ProgramChecks.h) with its error emitted as a diagnostic.
mlir::FailureOr<std::vector<pipe::ProgramOp>>
programsByRank(llvm::StringRef base, llvm::ArrayRef<pipe::ProgramOp> programs);

/// A group of programs read back as a schedule table.
struct ProgramTable {
  /// The table. Multi-value transfers (several pipe.send of one stage pair
  /// and microbatch) are one Send / Recv action, the first op standing for
  /// it. `name` is the programs' `schedule` attribute (else the base name).
  schedule::Schedule schedule;
  /// The stage graph of @<base> when it is in stage graph form (bytes per
  /// microbatch on its edges), else the chain plus the edges named by the
  /// transfer tags (0 bytes).
  schedule::StageGraph graph;
  /// The analyzed stage graph function, when @<base> is one.
  std::optional<StageGraphInfo> stageGraph;
  /// Per rank: the op each action of schedule.actions[r] was read from.
  std::vector<std::vector<mlir::Operation *>> opOf;
  /// The same programs with one Send / Recv per pipe.send / pipe.recv
  /// (schedule::Action::value = the tag's value index): the table the
  /// deadlock check runs on, since the values of one transfer received in
  /// another order than they are sent block under rendezvous semantics.
  schedule::Schedule perValue;
  /// Per rank: the op each action of perValue.actions[r] was read from.
  std::vector<std::vector<mlir::Operation *>> perValueOpOf;
};

/// Reads the programs `byRank` (see programsByRank()) of the function
/// `base` into a ProgramTable. Emits an error and fails only when @<base>
/// is a stage graph function that analyzeStageGraph() rejects or, without
/// one, a forward / backward names a stage at or above kMaxPipelineCount;
/// the table itself is not validated (use schedule::validate()).
mlir::FailureOr<ProgramTable>
readProgramTable(mlir::ModuleOp module, llvm::StringRef base,
                 llvm::ArrayRef<pipe::ProgramOp> byRank);

/// Writes `s` to `path` as a torch.distributed.pipelining action CSV
/// (schedule::exportCSV; "-" is stdout): every action, or only the compute
/// actions (F, I, W, B) when `computeOnly`. The `export-csv` option of
/// pipe-schedule and pipe-verify-schedule. Emits "<pass>: export-csv:
/// cannot write '<path>': <reason>" at `loc` and fails when the file cannot
/// be opened.
mlir::LogicalResult writeScheduleCSV(mlir::Location loc, llvm::StringRef pass,
                                     llvm::StringRef path,
                                     const schedule::Schedule &s,
                                     bool computeOnly);

} // namespace pipeopt

#endif // PIPEOPT_PROGRAMS_PROGRAMTABLE_H
