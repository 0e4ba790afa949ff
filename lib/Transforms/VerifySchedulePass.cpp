//===- VerifySchedulePass.cpp - pipe-verify-schedule ------------*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// pipe-verify-schedule: runs the program checks (ProgramChecks.h) on the
/// pipe.program ops of each scheduled function and reports the first
/// error at its op; with export-csv, the verified table is written as a
/// torch CSV. See Passes.td.
///
//===----------------------------------------------------------------------===//

#include "pipeopt/Programs/ProgramTable.h"

#include "pipeopt/Programs/ProgramChecks.h"
#include "pipeopt/Schedule/Schedule.h"
#include "pipeopt/Transforms/Passes.h"

namespace pipeopt {
#define GEN_PASS_DEF_VERIFYSCHEDULEPASS
#include "pipeopt/Transforms/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;
using namespace pipeopt;
namespace sched = pipeopt::schedule;

namespace {
struct VerifySchedulePass
    : pipeopt::impl::VerifySchedulePassBase<VerifySchedulePass> {
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult verifyGroup(StringRef base, ArrayRef<pipe::ProgramOp> programs);
};
} // namespace

LogicalResult
VerifySchedulePass::verifyGroup(StringRef base,
                                ArrayRef<pipe::ProgramOp> programs) {
  ModuleOp module = getOperation();
  pipe::ProgramOp first = programs.front();
  llvm::Expected<std::vector<pipe::ProgramOp>> byRank =
      orderProgramsByRank(base, programs);
  if (!byRank)
    return emitProgramError(byRank.takeError(), first);
  sched::Schedule verified;
  if (llvm::Error e = checkScheduledPrograms(module, base, *byRank, &verified))
    return emitProgramError(std::move(e), first);
  if (!exportCSVPath.empty())
    return writeScheduleCSV(first.getLoc(), "pipe-verify-schedule",
                            exportCSVPath, verified, exportCSVComputeOnly);
  return success();
}

void VerifySchedulePass::runOnOperation() {
  auto groups = groupPrograms(getOperation());
  if (groups.empty()) {
    // Nothing verified must not look like "verified": warn (at the first
    // function when there is one; a parsed module often has no location).
    Location loc = getOperation().getLoc();
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      loc = fn.getLoc();
      break;
    }
    if (!exportCSVPath.empty()) {
      emitError(loc) << "pipe-verify-schedule: export-csv: no pipe.program "
                        "in the module, no schedule to export (run "
                        "-pipe-schedule first)";
      return signalPassFailure();
    }
    emitWarning(loc) << "pipe-verify-schedule: no pipe.program in the module, "
                        "nothing to verify (run -pipe-schedule first)";
    return;
  }
  if (!exportCSVPath.empty() && groups.size() > 1) {
    auto second = std::next(groups.begin());
    second->second.front().emitError()
        << "pipe-verify-schedule: export-csv writes one schedule, but the "
           "module has programs of several functions (@"
        << groups.begin()->first << ", @" << second->first << ")";
    return signalPassFailure();
  }
  for (auto &[base, programs] : groups)
    if (failed(verifyGroup(base, programs)))
      return signalPassFailure();
}
