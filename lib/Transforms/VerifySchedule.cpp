//===- VerifySchedule.cpp - pipe-verify-schedule ----------------*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// pipe-verify-schedule: reads the pipe.program ops of each scheduled
/// function back into a schedule::Schedule and checks it with the schedule
/// library (validate, checkDeadlockFree), plus send/recv matching by tag and
/// tensor type and a tag-level rendezvous simulation; with export-csv, the
/// verified table is written as a torch CSV. See Passes.td.
///
//===----------------------------------------------------------------------===//

#include "ProgramTable.h"

#include "pipeopt/Schedule/Schedule.h"
#include "pipeopt/Transforms/Passes.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"

#include <map>
#include <set>
#include <tuple>

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

/// A transfer endpoint: (sender rank, receiver rank, tag).
using TransferKey = std::tuple<int64_t, int64_t, const void *>;
} // namespace

/// "pipe.send to 1 #pipe.tag<...>" / "pipe.recv from 0 #pipe.tag<...>".
static std::string describeTransfer(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto send = dyn_cast<pipe::SendOp>(op))
    os << "pipe.send to " << send.getPeer() << " " << send.getTag();
  else if (auto recv = dyn_cast<pipe::RecvOp>(op))
    os << "pipe.recv from " << recv.getPeer() << " " << recv.getTag();
  return text;
}

/// Checks every pipe.input / pipe.output of `programs` against the
/// signature of the model function `fn`: the argument / result index exists
/// and the tensor type is that argument's / result's type. Errors at the op.
static LogicalResult verifyModelIO(func::FuncOp fn,
                                   ArrayRef<pipe::ProgramOp> programs) {
  FunctionType type = fn.getFunctionType();
  for (pipe::ProgramOp p : programs)
    for (Operation &op : p.getBody().front()) {
      if (auto in = dyn_cast<pipe::InputOp>(op)) {
        uint64_t i = in.getArgument();
        if (i >= type.getNumInputs())
          return in.emitError()
                 << "pipe.input reads argument " << i << ", but @"
                 << fn.getSymName() << " has " << type.getNumInputs()
                 << " argument(s)";
        if (in.getType() != type.getInput(i))
          return in.emitError()
                 << "pipe.input reads argument " << i << " as "
                 << in.getType() << ", but argument " << i << " of @"
                 << fn.getSymName() << " is " << type.getInput(i);
      } else if (auto out = dyn_cast<pipe::OutputOp>(op)) {
        uint64_t i = out.getResult();
        if (i >= type.getNumResults())
          return out.emitError()
                 << "pipe.output writes result " << i << ", but @"
                 << fn.getSymName() << " has " << type.getNumResults()
                 << " result(s)";
        if (out.getValue().getType() != type.getResult(i))
          return out.emitError()
                 << "pipe.output writes result " << i << " as "
                 << out.getValue().getType() << ", but result " << i
                 << " of @" << fn.getSymName() << " is " << type.getResult(i);
      }
    }
  return success();
}

LogicalResult
VerifySchedulePass::verifyGroup(StringRef base,
                                ArrayRef<pipe::ProgramOp> programs) {
  ModuleOp module = getOperation();
  pipe::ProgramOp first = programs.front();
  int64_t R = first.getNumRanks();

  // 1. One program per rank, consistent sizes.
  FailureOr<std::vector<pipe::ProgramOp>> ordered =
      programsByRank(base, programs);
  if (failed(ordered))
    return failure();
  std::vector<pipe::ProgramOp> &byRank = *ordered;

  // 1b. pipe.input / pipe.output against the model function @<base> (the
  //     stage graph function): argument and result indices in range, and
  //     the tensor types of those arguments and results.
  if (auto fn = module.lookupSymbol<func::FuncOp>(base))
    if (failed(verifyModelIO(fn, byRank)))
      return failure();

  // 2. Send/recv matching by (sender, receiver, tag) and tensor type.
  std::map<TransferKey, Operation *> sends, recvs;
  for (int64_t r = 0; r < R; ++r)
    for (Operation &op : byRank[r].getBody().front()) {
      if (auto send = dyn_cast<pipe::SendOp>(op)) {
        TransferKey key{r, static_cast<int64_t>(send.getPeer()),
                        send.getTag().getAsOpaquePointer()};
        if (!sends.emplace(key, &op).second)
          return op.emitError() << "rank " << r << ": " << describeTransfer(&op)
                                << " repeats an earlier pipe.send with the "
                                   "same tag to the same rank";
      } else if (auto recv = dyn_cast<pipe::RecvOp>(op)) {
        TransferKey key{static_cast<int64_t>(recv.getPeer()), r,
                        recv.getTag().getAsOpaquePointer()};
        if (!recvs.emplace(key, &op).second)
          return op.emitError() << "rank " << r << ": " << describeTransfer(&op)
                                << " repeats an earlier pipe.recv with the "
                                   "same tag from the same rank";
      }
    }
  for (int64_t r = 0; r < R; ++r)
    for (Operation &op : byRank[r].getBody().front()) {
      if (auto send = dyn_cast<pipe::SendOp>(op)) {
        int64_t q = send.getPeer();
        if (!recvs.count({r, q, send.getTag().getAsOpaquePointer()}))
          return op.emitError() << "rank " << r << ": " << describeTransfer(&op)
                                << " has no matching pipe.recv on rank " << q;
      } else if (auto recv = dyn_cast<pipe::RecvOp>(op)) {
        int64_t q = recv.getPeer();
        auto it = sends.find({q, r, recv.getTag().getAsOpaquePointer()});
        if (it == sends.end())
          return op.emitError() << "rank " << r << ": " << describeTransfer(&op)
                                << " has no matching pipe.send on rank " << q;
        Type sent = cast<pipe::SendOp>(it->second).getValue().getType();
        if (sent != recv.getType()) {
          InFlightDiagnostic diag =
              op.emitError()
              << "rank " << r << ": " << describeTransfer(&op) << " receives "
              << recv.getType() << ", but the matching pipe.send on rank " << q
              << " sends " << sent;
          diag.attachNote(it->second->getLoc()) << "the pipe.send is here";
          return diag;
        }
      }
    }

  // 3-4. The stage graph (from @<base> when it is one, else the chain plus
  //      the edges named by forward tags) and the programs as a schedule
  //      table.
  FailureOr<ProgramTable> table = readProgramTable(module, base, byRank);
  if (failed(table))
    return failure();
  const sched::StageGraph &graph = table->graph;
  const sched::Schedule &s = table->schedule;
  const std::vector<std::vector<Operation *>> &opOf = table->opOf;

  // Report a library error (a schedule::ScheduleError) at the op of the
  // action it names, else at the program of the rank it names (an action
  // that is missing), else at the first program.
  auto opAt = [&](const sched::ActionRef &ref) -> Operation * {
    if (ref.rank < 0 || ref.rank >= R)
      return first;
    if (ref.index >= 0 &&
        ref.index < static_cast<int>(opOf[ref.rank].size()))
      return opOf[ref.rank][ref.index];
    return byRank[ref.rank];
  };
  auto reportAt = [&](const Twine &prefix, llvm::Error e) -> LogicalResult {
    llvm::handleAllErrors(
        std::move(e),
        [&](const sched::ScheduleError &se) {
          opAt(se.at)->emitError() << prefix << se.text;
        },
        [&](const llvm::ErrorInfoBase &other) {
          first->emitError() << prefix << other.message();
        });
    return failure();
  };

  // 5. The library's checks.
  if (llvm::Error e = sched::validate(s, graph))
    return reportAt("invalid schedule: ", std::move(e));

  // 6. Rendezvous simulation at tag level: locates the blocked ops.
  std::vector<SmallVector<Operation *>> comms(R);
  for (int64_t r = 0; r < R; ++r)
    for (Operation &op : byRank[r].getBody().front())
      if (isa<pipe::SendOp, pipe::RecvOp>(op))
        comms[r].push_back(&op);
  std::vector<size_t> pc(R, 0);
  auto peerOf = [](Operation *op) -> int64_t {
    if (auto send = dyn_cast<pipe::SendOp>(op))
      return send.getPeer();
    return cast<pipe::RecvOp>(op).getPeer();
  };
  auto tagOf = [](Operation *op) -> Attribute {
    if (auto send = dyn_cast<pipe::SendOp>(op))
      return send.getTag();
    return cast<pipe::RecvOp>(op).getTag();
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t r = 0; r < R; ++r) {
      if (pc[r] >= comms[r].size())
        continue;
      Operation *a = comms[r][pc[r]];
      int64_t q = peerOf(a);
      if (q < 0 || q >= R || pc[q] >= comms[q].size())
        continue;
      Operation *b = comms[q][pc[q]];
      if (peerOf(b) != r || isa<pipe::SendOp>(a) == isa<pipe::SendOp>(b) ||
          tagOf(a) != tagOf(b))
        continue;
      ++pc[r];
      ++pc[q];
      progress = true;
    }
  }
  int blocked = -1;
  for (int64_t r = 0; r < R && blocked < 0; ++r)
    if (pc[r] < comms[r].size())
      blocked = r;

  if (llvm::Error e = sched::checkDeadlockFree(s))
    return reportAt("", std::move(e));
  if (blocked >= 0) {
    Operation *a = comms[blocked][pc[blocked]];
    int64_t q = peerOf(a);
    InFlightDiagnostic diag = a->emitError()
                              << "deadlock: rank " << blocked << " waits in "
                              << describeTransfer(a) << ", but rank " << q;
    if (pc[q] < comms[q].size()) {
      Operation *b = comms[q][pc[q]];
      diag << " waits in " << describeTransfer(b);
      diag.attachNote(b->getLoc()) << "rank " << q << " waits here";
    } else {
      diag << " has finished";
    }
    return diag;
  }
  if (!exportCSVPath.empty())
    return writeScheduleCSV(first.getLoc(), "pipe-verify-schedule",
                            exportCSVPath, s, exportCSVComputeOnly);
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
