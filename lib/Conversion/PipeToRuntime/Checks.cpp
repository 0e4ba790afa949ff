//===- Checks.cpp - convert-pipe-to-runtime: checks before lowering -------===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Part 1 of convert-pipe-to-runtime (PipeToRuntimeInternal.h): every check
/// that can reject the input, run before the IR is changed, so that the
/// lowering itself cannot fail on valid input. The structure of the program
/// group comes from the shared program checker (ProgramChecks.h, which
/// pipe-verify-schedule runs in full); the rest is what executing the
/// programs on the runtime needs: types the runtime carries, one type per
/// model input and output, agreeing outputs, callees for backward actions,
/// no reserved names, and readable, unwritten ml_program globals.
///
//===----------------------------------------------------------------------===//

#include "PipeToRuntimeInternal.h"

#include "pipeopt/Conversion/PipeToRuntime/PipeToRuntime.h"
#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"
#include "pipeopt/Programs/ProgramChecks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"

#include <map>
#include <set>

using namespace mlir;
namespace pipe = pipeopt::pipe;
using namespace pipeopt::pipe_to_runtime;

namespace {

/// Checks that `type` is a static tensor of a runtime dtype.
LogicalResult checkTensor(Operation *op, Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return op->emitOpError()
           << "cannot be executed: " << type << " is not a ranked tensor";
  if (!tensor.hasStaticShape())
    return op->emitOpError() << "cannot be executed: " << type
                             << " has a dynamic shape; the runtime needs "
                                "static shapes (export the model for one "
                                "concrete input shape)";
  if (tensor.getEncoding())
    return op->emitOpError()
           << "cannot be executed: " << type << " has an encoding";
  if (!pipeopt::runtimeDTypeName(tensor.getElementType()))
    return op->emitOpError()
           << "cannot be executed: element type " << tensor.getElementType()
           << " is not supported by the runtime (supported: "
           << pipeopt::runtimeDTypeList() << ")";
  return success();
}

/// A model input or output as first seen.
struct SeenTensor {
  RankedTensorType type;
  Location loc;
};

/// A model result as the first pipe.output writing it has it.
struct SeenOutput {
  SeenTensor tensor;
  bool mean = false;
  std::string name;
  /// For a mean: the microbatches written, over all programs.
  std::set<int64_t> microbatches;
};

/// Records a boundary tensor; two different types for one index is an error.
LogicalResult recordBoundary(std::map<int64_t, SeenTensor> &table,
                             int64_t index, RankedTensorType type, Location loc,
                             StringRef what) {
  auto [it, inserted] = table.try_emplace(index, SeenTensor{type, loc});
  if (inserted || it->second.type == type)
    return success();
  InFlightDiagnostic diag = emitError(loc) << "model " << what << " " << index
                                           << " is " << type << " here but "
                                           << it->second.type << " elsewhere";
  diag.attachNote(it->second.loc) << "first seen here";
  return failure();
}

/// Records the pipe.output `out`: its type (as recordBoundary), and its
/// reduction and name, which every pipe.output of the result, in every
/// program, must share; a mean result is written at most once per
/// microbatch over all programs.
LogicalResult recordOutput(std::map<int64_t, SeenOutput> &table,
                           pipe::OutputOp out) {
  auto type = cast<RankedTensorType>(out.getValue().getType());
  int64_t index = out.getResult();
  SeenOutput entry{SeenTensor{type, out.getLoc()},
                   out.getReduce().has_value(),
                   out.getNameAttr() ? out.getName()->str() : "",
                   {}};
  auto [it, inserted] = table.try_emplace(index, entry);
  SeenOutput &first = it->second;
  if (!inserted) {
    if (first.tensor.type != type) {
      InFlightDiagnostic diag = emitError(out.getLoc())
                                << "model result " << index << " is " << type
                                << " here but " << first.tensor.type
                                << " elsewhere";
      diag.attachNote(first.tensor.loc) << "first seen here";
      return failure();
    }
    if (first.mean != entry.mean || first.name != entry.name) {
      auto describe = [](const SeenOutput &o) {
        return std::string(o.mean ? "reduce mean" : "no reduction") +
               (o.name.empty() ? ", no name" : ", name \"" + o.name + "\"");
      };
      InFlightDiagnostic diag =
          out.emitOpError() << "writes model result " << index << " with "
                            << describe(entry) << ", but another program "
                            << "writes it with " << describe(first)
                            << "; every pipe.output of one result must agree";
      diag.attachNote(first.tensor.loc) << "first seen here";
      return failure();
    }
  }
  if (!entry.name.empty())
    for (const auto &[other, o] : table)
      if (other != index && o.name == entry.name) {
        InFlightDiagnostic diag = out.emitOpError()
                                  << "names model result " << index << " \""
                                  << entry.name << "\", but result " << other
                                  << " has that name already; result names "
                                     "must be unique";
        diag.attachNote(o.tensor.loc) << "result " << other;
        return failure();
      }
  if (first.mean &&
      !first.microbatches.insert(int64_t(out.getMicrobatch())).second)
    return out.emitOpError()
           << "writes model result " << index << " (reduce mean) for "
           << "microbatch " << out.getMicrobatch()
           << ", which another program writes too; a mean counts every "
              "microbatch once";
  return success();
}

/// What the checks of the programs' ops have seen so far.
struct Seen {
  std::map<int64_t, SeenTensor> inputs;
  std::map<int64_t, SeenOutput> outputs;
  /// (stage, microbatch) -> rank of its forward.
  std::map<std::pair<int64_t, int64_t>, int64_t> forwardRank;
};

/// The checks of one op of the program of `rank`.
LogicalResult checkProgramOp(Operation *op, int64_t rank, Seen &seen) {
  if (auto input = dyn_cast<pipe::InputOp>(op)) {
    if (failed(checkTensor(op, input.getType())))
      return failure();
    return recordBoundary(seen.inputs, input.getArgument(),
                          cast<RankedTensorType>(input.getType()), op->getLoc(),
                          "argument");
  }
  if (auto recv = dyn_cast<pipe::RecvOp>(op))
    return checkTensor(op, recv.getType());
  if (auto send = dyn_cast<pipe::SendOp>(op))
    return checkTensor(op, send.getValue().getType());
  if (auto output = dyn_cast<pipe::OutputOp>(op)) {
    if (failed(checkTensor(op, output.getValue().getType())))
      return failure();
    return recordOutput(seen.outputs, output);
  }
  if (auto forward = dyn_cast<pipe::ForwardOp>(op)) {
    int64_t stage = forward.getStage();
    int64_t mb = forward.getMicrobatch();
    auto [it, inserted] = seen.forwardRank.try_emplace({stage, mb}, rank);
    if (!inserted && it->second != rank)
      return op->emitOpError()
             << "forward of stage " << stage << " microbatch " << mb
             << " is scheduled on ranks " << it->second << " and " << rank;
    return success();
  }
  if (auto backward = dyn_cast<pipe::BackwardOp>(op)) {
    if (!backward.getCallee())
      return op->emitOpError()
             << "has no callee: run pipe-materialize-backward first (it "
                "generates the functions backward actions call; "
                "pipeopt-compile --train does)";
    return success();
  }
  if (auto gradient = dyn_cast<pipe::GradientOp>(op)) {
    if (failed(checkTensor(op, gradient.getValue().getType())))
      return failure();
    return recordBoundary(seen.inputs, gradient.getArgument(),
                          cast<RankedTensorType>(gradient.getValue().getType()),
                          op->getLoc(), "argument");
  }
  return success();
}

/// ml_program globals: stores would be state private to one rank of the
/// pipeline; a constant load needs a dense initial value of its type (it
/// becomes an arith.constant). Stage graphs are skipped: the pass removes
/// them.
LogicalResult checkGlobals(ModuleOp module) {
  WalkResult walk = module.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto fn = dyn_cast<func::FuncOp>(op))
      if (fn->getParentOp() == module && isStageGraphFunction(fn))
        return WalkResult::skip();
    if (isa<ml_program::GlobalStoreOp>(op)) {
      op->emitOpError() << "writes model state, which cannot be split across "
                           "pipeline ranks; only reading ml_program globals "
                           "is supported";
      return WalkResult::interrupt();
    }
    auto load = dyn_cast<ml_program::GlobalLoadConstOp>(op);
    if (!load)
      return WalkResult::advance();
    auto global = SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(
        load, load.getGlobalAttr());
    auto value =
        global ? dyn_cast_or_null<DenseElementsAttr>(global.getValueAttr())
               : DenseElementsAttr();
    if (!value || value.getType() != load.getType()) {
      load.emitOpError() << "reads a global without a dense initial value of "
                            "its type; it cannot be turned into a constant";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

} // namespace

LogicalResult pipeopt::pipe_to_runtime::checkConversion(
    ModuleOp module, ArrayRef<pipe::ProgramOp> programs,
    const MicrobatchPolicy &policy, StringRef microbatchArgs,
    std::vector<pipe::ProgramOp> &byRank) {
  pipe::ProgramOp first = programs.front();
  // pipe.rank marks the entry points this pass generates (and is removed
  // at its end); one already in the input would keep a function from being
  // treated as what it is (a stage graph is kept and its pipe.stage_call
  // left over).
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn->hasAttr(pipe::PipeDialect::RankAttrHelper::getNameStr()))
      return fn.emitError()
             << "'" << pipe::PipeDialect::RankAttrHelper::getNameStr()
             << "' is set by convert-pipe-to-runtime on the per-rank "
                "entry points it generates; remove it from @"
             << fn.getSymName();

  // The optimizer's update period must be the schedule's (pipe-set-optimizer
  // derives it; a scheduled module edited by hand or compiled without
  // --train may carry another), and asynchronous updates follow their rules:
  // a wrong period would train wrongly or be refused by pipeopt-run.
  if (pipe::OptimizerAttr optimizer =
          pipe::PipeDialect::OptimizerAttrHelper(module.getContext())
              .getAttr(module)) {
    FailureOr<BuiltPrograms> built = inspectPrograms(module);
    if (failed(built) || failed(checkAsynchronousUpdates(module, *built)))
      return failure();
    std::optional<int64_t> expected;
    if (const auto *info = schedule::findScheduleByKey(built->schedule)) {
      if (info->weightVersions == schedule::WeightVersions::PerBackward)
        expected = 1;
      else if (info->weightVersions == schedule::WeightVersions::PerRound)
        expected = built->stages;
    }
    if (optimizer.getUpdateEvery() != expected) {
      InFlightDiagnostic d =
          emitError(first.getLoc())
          << "pipe.optimizer updates the weights "
          << (optimizer.getUpdateEvery()
                  ? "every " + std::to_string(*optimizer.getUpdateEvery()) +
                        " backwards"
                  : std::string("once per step"))
          << ", but the schedule '" << built->schedule
          << "' of the pipe.programs updates ";
      d << (expected ? "every " + std::to_string(*expected) + " backwards"
                     : std::string("once per step"))
        << " (pipe-set-optimizer sets update_every from the schedule)";
      return failure();
    }
  }

  // A listed argument index must be one the programs read.
  std::set<int64_t> arguments;
  for (pipe::ProgramOp p : programs)
    p.walk([&](pipe::InputOp in) { arguments.insert(in.getArgument()); });
  std::string err;
  if (failed(policy.checkIndices(arguments, err)))
    return emitError(first.getLoc()) << err;

  // A per-microbatch argument read for microbatch m' must not feed an
  // action, send or output of another microbatch m (the pipe verifier checks
  // received and computed values; which arguments are per-microbatch is only
  // known here). Weights may be read once and shared.
  for (pipe::ProgramOp p : programs) {
    WalkResult walk = p.walk([&](pipe::InputOp in) -> WalkResult {
      auto type = dyn_cast<RankedTensorType>(in.getType());
      if (!type || !policy.isMicrobatched(in.getArgument(), type))
        return WalkResult::advance();
      for (OpOperand &use : in->getUses()) {
        Operation *user = use.getOwner();
        std::optional<int64_t> mb = pipe::getMicrobatch(user);
        if (!mb || *mb == static_cast<int64_t>(in.getMicrobatch()))
          continue;
        InFlightDiagnostic diag =
            user->emitOpError()
            << "is for microbatch " << *mb << ", but operand #"
            << use.getOperandNumber() << " is model argument "
            << in.getArgument() << " of microbatch " << in.getMicrobatch()
            << ", which differs per microbatch (microbatch-args="
            << microbatchArgs << ")";
        diag.attachNote(in.getLoc()) << "read here";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }

  // The programs describe one pipeline: the shared structural check.
  llvm::Expected<std::vector<pipe::ProgramOp>> ordered =
      orderProgramsByRank(programBaseName(first.getSymName()), programs);
  if (!ordered)
    return emitProgramError(ordered.takeError(), first);
  byRank = std::move(*ordered);

  for (int64_t r = 0, e = byRank.size(); r < e; ++r) {
    std::string name = pipeopt::runtimeEntryPointName(r);
    if (Operation *clash = SymbolTable::lookupSymbolIn(module, name))
      return clash->emitOpError() << "uses the name @" << name
                                  << ", which is reserved for the entry point "
                                     "of rank "
                                  << r;
  }
  for (const char *reserved : {kModuleHashSymbol, kEmbeddedManifestSymbol})
    if (Operation *clash = SymbolTable::lookupSymbolIn(module, reserved))
      return clash->emitOpError()
             << "uses the name @" << reserved
             << ", which is reserved for what ties the model to its manifest "
                "(docs/Runtime.md, \"Loading the model\")";

  Seen seen;
  for (int64_t rank = 0, e = byRank.size(); rank < e; ++rank)
    for (Operation &op : byRank[rank].getBody().front())
      if (failed(checkProgramOp(&op, rank, seen)))
        return failure();

  // A mean is over every microbatch: one missing would silently average
  // over fewer (the runtime checks this again against the manifest).
  int64_t numMicrobatches = byRank.front().getNumMicrobatches();
  for (const auto &[index, o] : seen.outputs) {
    if (!o.mean || int64_t(o.microbatches.size()) == numMicrobatches)
      continue;
    int64_t missing = 0;
    while (o.microbatches.count(missing))
      ++missing;
    return emitError(o.tensor.loc)
           << "model result " << index
           << (o.name.empty() ? "" : " (\"" + o.name + "\")")
           << " is averaged over microbatches (reduce mean), but no program "
              "writes it for microbatch "
           << missing << " of " << numMicrobatches;
  }
  return checkGlobals(module);
}
