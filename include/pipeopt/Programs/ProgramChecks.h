//===- ProgramChecks.h - Checks of per-rank pipe.programs -------*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The one checker of a group of per-rank `pipe.program` ops (the programs
/// of one scheduled function, one per rank). pipe-verify-schedule runs all
/// of it (checkScheduledPrograms()); convert-pipe-to-runtime runs the
/// structural part (orderProgramsByRank()), because it must also lower
/// deliberately broken schedules that test the runtime's own checks
/// (pipeopt-compile --verify-schedule=false).
///
/// The checks return a ProgramError that says where the problem is (the
/// rank, the index of the action in that rank's schedule table, the op);
/// emitProgramError() turns it into a diagnostic at that op. The schedule
/// library does the schedule-level checks (schedule::validate) and the
/// deadlock check (schedule::checkDeadlockFree, the only one), on tables
/// read back from the programs.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_PROGRAMS_PROGRAMCHECKS_H
#define PIPEOPT_PROGRAMS_PROGRAMCHECKS_H

#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"
#include "pipeopt/Schedule/Schedule.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace pipeopt {

/// Name of a program without its trailing "_rank<digits>" (the scheduled
/// function's name); `name` itself when there is no such suffix.
llvm::StringRef programBaseName(llvm::StringRef name);

/// What a failed program check is about (ProgramError::kind).
enum class ProgramErrorKind : uint8_t {
  /// A program's rank or microbatch count is outside 1..kMaxPipelineCount.
  Count,
  /// Two programs of the group disagree on the rank or microbatch count;
  /// `related` is the first program.
  Sizes,
  /// Two programs for one rank; `related` is the first.
  TwoPrograms,
  /// No program for a rank in 0..R-1; `rank` is that rank, `op` the first
  /// program.
  MissingRank,
  /// A pipe.input / pipe.output names an argument / result the model
  /// function does not have, or reads / writes it with another type.
  ModelSignature,
  /// A pipe.send (pipe.recv) repeats the tag of an earlier one to (from)
  /// the same rank.
  RepeatedTransfer,
  /// A pipe.send without a pipe.recv of the same tag on its peer, or the
  /// other way round.
  UnmatchedTransfer,
  /// A pipe.recv whose matching pipe.send sends another tensor type;
  /// `related` is the pipe.send.
  TransferType,
  /// A schedule::ScheduleError of schedule::validate() or
  /// schedule::checkDeadlockFree() on the table read back from the programs
  /// (`schedule` is its kind).
  Schedule,
  /// The stage graph function or a stage index could not be read
  /// (readProgramTable); its diagnostic has been emitted already.
  Unreadable,
};

/// The error of the checks in this header. `op` is where the diagnostic
/// belongs; `related` (with `relatedNote`) is a second op a note points at.
/// Read it with llvm::handleErrors, or let emitProgramError() report it.
class ProgramError : public llvm::ErrorInfo<ProgramError> {
public:
  static char ID;

  ProgramError(ProgramErrorKind kind, std::string text, mlir::Operation *op)
      : kind(kind), text(std::move(text)), op(op) {}

  ProgramErrorKind kind;
  /// The message (also what log() gives).
  std::string text;
  /// The op the error is at (a pipe.program, or an op in one).
  mlir::Operation *op;
  /// The rank of the program the error is in; -1 when not one rank's.
  int64_t rank = -1;
  /// Schedule errors: the index of the action in that rank's list of the
  /// table it was found in (schedule::ActionRef::index); -1 otherwise.
  int64_t index = -1;
  /// A second op the error is about (the first of two programs, the
  /// matching pipe.send); may be null. With a non-empty `relatedNote`, the
  /// diagnostic has a note saying it there.
  mlir::Operation *related = nullptr;
  std::string relatedNote;
  /// Schedule errors: the kind the schedule library gave.
  std::optional<schedule::ScheduleErrorKind> schedule;

  void log(llvm::raw_ostream &os) const override { os << text; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
};

/// Reports `error` as a diagnostic: a ProgramError at its op (with its
/// note; nothing for Unreadable, which is reported already), any
/// other error at `fallback`. Always returns failure(); success() for a
/// success value.
mlir::LogicalResult emitProgramError(llvm::Error error,
                                     mlir::Operation *fallback);

/// The structural check: `programs` (one group, non-empty) form one
/// pipeline: every rank and microbatch count in 1..kMaxPipelineCount (Count,
/// at the first program), all equal (Sizes, at the program that differs),
/// one program per rank (TwoPrograms, at the second one) and one for every
/// rank 0..R-1 (MissingRank, at the first program; the message names
/// `base`, the scheduled function). Returns the programs ordered by rank.
llvm::Expected<std::vector<pipe::ProgramOp>>
orderProgramsByRank(llvm::StringRef base,
                    llvm::ArrayRef<pipe::ProgramOp> programs);

/// Everything pipe-verify-schedule checks, on programs `byRank` (from
/// orderProgramsByRank()) of the function `base` of `module`, in this
/// order; the first violation is returned:
///  1. pipe.input / pipe.output against the signature of @<base> when the
///     module has it (ModelSignature, at the op);
///  2. transfers: no tag repeated between two ranks (RepeatedTransfer),
///     every pipe.send with a pipe.recv of an equal tag on its peer and vice
///     versa (UnmatchedTransfer), of the same tensor type (TransferType, at
///     the pipe.recv);
///  3. schedule::validate() of the table read back from the programs
///     (readProgramTable(); one action per transfer), against the stage
///     graph of @<base> when it is one; the message is "invalid schedule: "
///     and the library's;
///  4. schedule::checkDeadlockFree() of the table with one action per
///     pipe.send / pipe.recv (schedule::Action::value = the tag's value
///     index), so that two values of one transfer received in another order
///     than they are sent are found too; the library's message.
/// Schedule errors are at the op of the action they name first, else at the
/// program of the rank they name, else at the first program; a Mismatched
/// one has a note "rank <r> waits here" at the pipe.recv the peer posts.
/// With `verified`, the table of step 3 is stored there on success.
llvm::Error checkScheduledPrograms(mlir::ModuleOp module, llvm::StringRef base,
                                   llvm::ArrayRef<pipe::ProgramOp> byRank,
                                   schedule::Schedule *verified = nullptr);

/// What a module's pipe.programs were built with.
struct BuiltPrograms {
  /// The schedule their `schedule` attribute names (empty if none does).
  std::string schedule;
  /// Their microbatch count (0 without programs).
  int64_t microbatches = 0;
  /// The number of stages their forward actions run (1 without programs).
  int64_t stages = 1;
};

/// Reads BuiltPrograms from the pipe.programs of `module`. Programs that
/// disagree on the schedule or the microbatch count are an error, emitted
/// at the second program with a note at the first.
mlir::FailureOr<BuiltPrograms> inspectPrograms(mlir::ModuleOp module);

/// The rules of asynchronous weight updates that every training build of
/// `module` must follow (pipe-materialize-backward and pipe-set-optimizer
/// check them, whatever entry point built the programs):
///  - PipeDream-2BW (schedule::WeightVersions::PerRound) updates the weights
///    once per S backwards (S stages); an update may not straddle two steps,
///    so S must divide the microbatch count;
///  - an asynchronous schedule updates each weight on the one rank that
///    holds it as its gradients arrive: a model argument whose pipe.gradient
///    ops are on two ranks (a tied weight) is an error.
/// Errors are emitted at the first program (the tied weight's: at its
/// pipe.gradient on the second rank). Programs without a known schedule
/// pass.
mlir::LogicalResult checkAsynchronousUpdates(mlir::ModuleOp module,
                                             const BuiltPrograms &built);

} // namespace pipeopt

#endif // PIPEOPT_PROGRAMS_PROGRAMCHECKS_H
