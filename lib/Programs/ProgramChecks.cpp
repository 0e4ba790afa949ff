//===- ProgramChecks.cpp - Checks of per-rank pipe.programs ---------------===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// See ProgramChecks.h: the structure of a program group, the model
/// signature, transfer matching, and the schedule library's validate() and
/// checkDeadlockFree() on the tables ProgramTable.h reads back.
///
//===----------------------------------------------------------------------===//

#include "pipeopt/Programs/ProgramChecks.h"
#include "pipeopt/Programs/ProgramTable.h"
#include "pipeopt/Support/Plural.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <tuple>

using namespace mlir;
using namespace pipeopt;
namespace sched = pipeopt::schedule;

char ProgramError::ID = 0;

namespace {
/// A ProgramError with its optional fields.
llvm::Error programError(ProgramErrorKind kind, Operation *op,
                         const Twine &text, int64_t rank = -1,
                         Operation *related = nullptr,
                         StringRef relatedNote = "") {
  auto e = std::make_unique<ProgramError>(kind, text.str(), op);
  e->rank = rank;
  e->related = related;
  e->relatedNote = relatedNote.str();
  return llvm::Error(std::move(e));
}

/// "pipe.send to 1 #pipe.tag<...>" / "pipe.recv from 0 #pipe.tag<...>".
std::string describeTransfer(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto send = dyn_cast<pipe::SendOp>(op))
    os << "pipe.send to " << send.getPeer() << " " << send.getTag();
  else if (auto recv = dyn_cast<pipe::RecvOp>(op))
    os << "pipe.recv from " << recv.getPeer() << " " << recv.getTag();
  return text;
}

/// `t` as the diagnostic prints a type ('tensor<4xf32>').
std::string quoted(Type t) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << t << "'";
  return text;
}

/// A transfer endpoint: (sender rank, receiver rank, tag).
using TransferKey = std::tuple<int64_t, int64_t, const void *>;
} // namespace

LogicalResult pipeopt::emitProgramError(llvm::Error error,
                                        Operation *fallback) {
  if (!error)
    return success();
  llvm::handleAllErrors(
      std::move(error),
      [&](const ProgramError &pe) {
        if (pe.kind == ProgramErrorKind::Unreadable)
          return;
        InFlightDiagnostic diag = pe.op->emitError() << pe.text;
        if (pe.related && !pe.relatedNote.empty())
          diag.attachNote(pe.related->getLoc()) << pe.relatedNote;
      },
      [&](const llvm::ErrorInfoBase &other) {
        fallback->emitError() << other.message();
      });
  return failure();
}

llvm::Expected<std::vector<pipe::ProgramOp>>
pipeopt::orderProgramsByRank(StringRef base,
                             ArrayRef<pipe::ProgramOp> programs) {
  pipe::ProgramOp first = programs.front();
  int64_t R = first.getNumRanks(), M = first.getNumMicrobatches();
  // Range checks before anything is sized by, or narrowed from, R and M.
  for (auto [name, value] :
       {std::pair<StringRef, int64_t>{"num_ranks", R}, {"num_microbatches", M}})
    if (value < 1 || value > sched::kMaxPipelineCount)
      return programError(
          ProgramErrorKind::Count, first,
          llvm::formatv("program @{0}: {1} must be between 1 and {2}, got {3}",
                        first.getSymName(), name, sched::kMaxPipelineCount,
                        value));
  std::vector<pipe::ProgramOp> byRank(R);
  for (pipe::ProgramOp p : programs) {
    if (static_cast<int64_t>(p.getNumRanks()) != R ||
        static_cast<int64_t>(p.getNumMicrobatches()) != M)
      return programError(
          ProgramErrorKind::Sizes, p,
          llvm::formatv(
              "program @{0} is rank {1} of {2} with {3}, but @{4} "
              "is one of {5} with {6}",
              p.getSymName(), p.getRank(), p.getNumRanks(),
              countOf(p.getNumMicrobatches(), "microbatch", "microbatches"),
              first.getSymName(), countOf(R, "rank"),
              countOf(M, "microbatch", "microbatches")),
          -1, first);
    pipe::ProgramOp &slot = byRank[p.getRank()];
    if (slot)
      return programError(ProgramErrorKind::TwoPrograms, p,
                          llvm::formatv("rank {0} has two programs: @{1} and "
                                        "@{2}",
                                        p.getRank(), slot.getSymName(),
                                        p.getSymName()),
                          p.getRank(), slot);
    slot = p;
  }
  for (int64_t r = 0; r < R; ++r)
    if (!byRank[r])
      return programError(ProgramErrorKind::MissingRank, first,
                          llvm::formatv("no program for rank {0} of {1} "
                                        "(programs of @{2})",
                                        r, R, base),
                          r);
  return byRank;
}

/// Step 1 of checkScheduledPrograms(): pipe.input / pipe.output against the
/// signature of the model function `fn`.
static llvm::Error checkModelSignature(func::FuncOp fn,
                                       ArrayRef<pipe::ProgramOp> byRank) {
  FunctionType type = fn.getFunctionType();
  for (int64_t r = 0, e = byRank.size(); r < e; ++r)
    for (Operation &op : pipe::ProgramOp(byRank[r]).getBody().front()) {
      auto fail = [&](const Twine &text) {
        return programError(ProgramErrorKind::ModelSignature, &op, text, r);
      };
      if (auto in = dyn_cast<pipe::InputOp>(op)) {
        uint64_t i = in.getArgument();
        if (i >= type.getNumInputs())
          return fail(llvm::formatv("pipe.input reads argument {0}, but @{1} "
                                    "has {2} argument(s)",
                                    i, fn.getSymName(), type.getNumInputs()));
        if (in.getType() != type.getInput(i))
          return fail(llvm::formatv("pipe.input reads argument {0} as {1}, "
                                    "but argument {0} of @{2} is {3}",
                                    i, quoted(in.getType()), fn.getSymName(),
                                    quoted(type.getInput(i))));
      } else if (auto out = dyn_cast<pipe::OutputOp>(op)) {
        uint64_t i = out.getResult();
        if (i >= type.getNumResults())
          return fail(llvm::formatv("pipe.output writes result {0}, but @{1} "
                                    "has {2} result(s)",
                                    i, fn.getSymName(), type.getNumResults()));
        if (out.getValue().getType() != type.getResult(i))
          return fail(llvm::formatv(
              "pipe.output writes result {0} as {1}, but result {0} of @{2} "
              "is {3}",
              i, quoted(out.getValue().getType()), fn.getSymName(),
              quoted(type.getResult(i))));
      }
    }
  return llvm::Error::success();
}

/// Step 2 of checkScheduledPrograms(): transfers matched by (sender,
/// receiver, tag) and tensor type.
static llvm::Error checkTransfers(ArrayRef<pipe::ProgramOp> byRank) {
  int64_t R = byRank.size();
  std::map<TransferKey, Operation *> sends, recvs;
  for (int64_t r = 0; r < R; ++r)
    for (Operation &op : pipe::ProgramOp(byRank[r]).getBody().front()) {
      if (auto send = dyn_cast<pipe::SendOp>(op)) {
        TransferKey key{r, static_cast<int64_t>(send.getPeer()),
                        send.getTag().getAsOpaquePointer()};
        if (!sends.emplace(key, &op).second)
          return programError(ProgramErrorKind::RepeatedTransfer, &op,
                              llvm::formatv("rank {0}: {1} repeats an earlier "
                                            "pipe.send with the same tag to "
                                            "the same rank",
                                            r, describeTransfer(&op)),
                              r);
      } else if (auto recv = dyn_cast<pipe::RecvOp>(op)) {
        TransferKey key{static_cast<int64_t>(recv.getPeer()), r,
                        recv.getTag().getAsOpaquePointer()};
        if (!recvs.emplace(key, &op).second)
          return programError(ProgramErrorKind::RepeatedTransfer, &op,
                              llvm::formatv("rank {0}: {1} repeats an earlier "
                                            "pipe.recv with the same tag from "
                                            "the same rank",
                                            r, describeTransfer(&op)),
                              r);
      }
    }
  for (int64_t r = 0; r < R; ++r)
    for (Operation &op : pipe::ProgramOp(byRank[r]).getBody().front()) {
      if (auto send = dyn_cast<pipe::SendOp>(op)) {
        int64_t q = send.getPeer();
        if (!recvs.count({r, q, send.getTag().getAsOpaquePointer()}))
          return programError(ProgramErrorKind::UnmatchedTransfer, &op,
                              llvm::formatv("rank {0}: {1} has no matching "
                                            "pipe.recv on rank {2}",
                                            r, describeTransfer(&op), q),
                              r);
      } else if (auto recv = dyn_cast<pipe::RecvOp>(op)) {
        int64_t q = recv.getPeer();
        auto it = sends.find({q, r, recv.getTag().getAsOpaquePointer()});
        if (it == sends.end())
          return programError(ProgramErrorKind::UnmatchedTransfer, &op,
                              llvm::formatv("rank {0}: {1} has no matching "
                                            "pipe.send on rank {2}",
                                            r, describeTransfer(&op), q),
                              r);
        Type sent = cast<pipe::SendOp>(it->second).getValue().getType();
        if (sent != recv.getType())
          return programError(
              ProgramErrorKind::TransferType, &op,
              llvm::formatv("rank {0}: {1} receives {2}, but the matching "
                            "pipe.send on rank {3} sends {4}",
                            r, describeTransfer(&op), quoted(recv.getType()), q,
                            quoted(sent)),
              r, it->second, "the pipe.send is here");
      }
    }
  return llvm::Error::success();
}

/// A schedule library error on a table whose actions were read from the ops
/// `opOf` of `byRank`, as a ProgramError at the op of the action it names
/// (else at the program of its rank, else at the first program).
static llvm::Error
locateScheduleError(llvm::Error e, StringRef prefix,
                    ArrayRef<pipe::ProgramOp> byRank,
                    const std::vector<std::vector<Operation *>> &opOf) {
  int64_t R = byRank.size();
  auto opAt = [&](const sched::ActionRef &ref) -> Operation * {
    if (ref.rank < 0 || ref.rank >= R)
      return byRank.front();
    if (ref.index >= 0 && ref.index < static_cast<int>(opOf[ref.rank].size()))
      return opOf[ref.rank][ref.index];
    return byRank[ref.rank];
  };
  return llvm::handleErrors(
      std::move(e),
      [&](const sched::ScheduleError &se) -> llvm::Error {
        auto pe = std::make_unique<ProgramError>(
            ProgramErrorKind::Schedule, (prefix + se.text).str(), opAt(se.at));
        pe->rank = se.at.rank;
        pe->index = se.at.index;
        pe->schedule = se.kind;
        if (se.kind == sched::ScheduleErrorKind::Mismatched) {
          pe->related = opAt(se.related);
          pe->relatedNote =
              llvm::formatv("rank {0} waits here", se.related.rank).str();
        }
        return llvm::Error(std::move(pe));
      },
      [&](const llvm::ErrorInfoBase &other) -> llvm::Error {
        return programError(ProgramErrorKind::Schedule, byRank.front(),
                            prefix + other.message());
      });
}

llvm::Error pipeopt::checkScheduledPrograms(ModuleOp module, StringRef base,
                                            ArrayRef<pipe::ProgramOp> byRank,
                                            sched::Schedule *verified) {
  if (auto fn = module.lookupSymbol<func::FuncOp>(base))
    if (llvm::Error e = checkModelSignature(fn, byRank))
      return e;
  if (llvm::Error e = checkTransfers(byRank))
    return e;
  FailureOr<ProgramTable> table = readProgramTable(module, base, byRank);
  if (failed(table))
    return programError(ProgramErrorKind::Unreadable, byRank.front(),
                        "the programs could not be read as a schedule");
  if (llvm::Error e = sched::validate(table->schedule, table->graph))
    return locateScheduleError(std::move(e), "invalid schedule: ", byRank,
                               table->opOf);
  if (llvm::Error e = sched::checkDeadlockFree(table->perValue))
    return locateScheduleError(std::move(e), "", byRank, table->perValueOpOf);
  if (verified)
    *verified = std::move(table->schedule);
  return llvm::Error::success();
}

FailureOr<BuiltPrograms> pipeopt::inspectPrograms(ModuleOp module) {
  BuiltPrograms info;
  pipe::ProgramOp first;
  for (auto p : module.getOps<pipe::ProgramOp>()) {
    std::string name = p.getSchedule() ? p.getSchedule()->str() : "";
    if (!first) {
      first = p;
      info.schedule = name;
      info.microbatches = p.getNumMicrobatches();
    } else if (name != info.schedule) {
      InFlightDiagnostic d =
          p.emitOpError() << "names the schedule '" << name << "', but @"
                          << first.getSymName() << " names '" << info.schedule
                          << "'; the pipe.programs must name one schedule";
      d.attachNote(first.getLoc()) << "@" << first.getSymName() << " is here";
      return failure();
    } else if (int64_t(p.getNumMicrobatches()) != info.microbatches) {
      InFlightDiagnostic d = p.emitOpError()
                             << "runs " << p.getNumMicrobatches()
                             << " microbatches, but @" << first.getSymName()
                             << " runs " << info.microbatches
                             << "; the pipe.programs must run one count";
      d.attachNote(first.getLoc()) << "@" << first.getSymName() << " is here";
      return failure();
    }
    p.walk([&](pipe::ForwardOp f) {
      info.stages = std::max<int64_t>(info.stages, f.getStage() + 1);
    });
  }
  return info;
}

LogicalResult pipeopt::checkAsynchronousUpdates(ModuleOp module,
                                                const BuiltPrograms &built) {
  const sched::ScheduleInfo *info = sched::findScheduleByKey(built.schedule);
  if (!info)
    return success();
  auto programs = module.getOps<pipe::ProgramOp>();
  if (programs.empty())
    return success();
  pipe::ProgramOp first = *programs.begin();
  // PipeDream-2BW updates every S backwards; an update may not straddle two
  // steps (the runtime's rule).
  if (info->weightVersions == sched::WeightVersions::PerRound &&
      built.microbatches % built.stages != 0)
    return first.emitOpError()
           << "the schedule " << built.schedule << " updates the weights every "
           << countOf(built.stages, "microbatch", "microbatches")
           << " (one per stage), which must divide the number of microbatches ("
           << built.microbatches << ")";
  // Asynchronous updates happen on the one rank that holds a weight.
  if (info->async()) {
    std::map<uint64_t, std::map<uint64_t, pipe::GradientOp>> ranksOf;
    module.walk([&](pipe::GradientOp g) {
      ranksOf[g.getArgument()].try_emplace(
          g->getParentOfType<pipe::ProgramOp>().getRank(), g);
    });
    for (auto &[arg, ranks] : ranksOf)
      if (ranks.size() > 1)
        return std::next(ranks.begin())->second.emitOpError()
               << "the schedule " << built.schedule
               << " updates each weight on its own rank as its gradients "
                  "arrive, but argument "
               << arg << " is read by stages on " << ranks.size()
               << " ranks (a tied weight); use a synchronous schedule such "
                  "as 1f1b";
  }
  return success();
}
