//===- PipeOps.cpp - pipe dialect operations ----------------------*- C++
//-*-===//
//
// Part of pipeopt. Verifiers of the pipe dialect. Every message here has a
// negative test in test/Dialect/Pipe/invalid.mlir.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"
#include "pipeopt/Support/Plural.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <set>

using namespace mlir;
using namespace pipeopt::pipe;

#include "pipeopt/Dialect/Pipe/IR/PipeInterfaces.cpp.inc"

/// Checks that `callee` names a func.func of stage `stage` whose type matches
/// `operands` -> `results`. Shared by pipe.stage_call and pipe.forward.
static LogicalResult verifyStageCallee(Operation *op,
                                       SymbolTableCollection &symbolTable,
                                       FlatSymbolRefAttr callee, int64_t stage,
                                       TypeRange operands, TypeRange results) {
  auto fn =
      symbolTable.lookupNearestSymbolFrom<func::FuncOp>(op, callee.getAttr());
  if (!fn)
    return op->emitOpError()
           << "callee " << callee << " does not name a func.func";
  auto stageAttr = fn->getAttrOfType<IntegerAttr>(
      PipeDialect::StageAttrHelper::getNameStr());
  if (!stageAttr)
    return op->emitOpError()
           << "callee " << callee << " is not a stage function (no '"
           << PipeDialect::StageAttrHelper::getNameStr() << "' attribute)";
  if (stageAttr.getInt() != stage)
    return op->emitOpError() << "calls " << callee << " of stage "
                             << stageAttr.getInt() << " as stage " << stage;
  FunctionType type = fn.getFunctionType();
  if (!llvm::equal(type.getInputs(), operands))
    return op->emitOpError() << "operand types do not match callee " << callee
                             << " of type " << type;
  if (!llvm::equal(type.getResults(), results))
    return op->emitOpError() << "result types do not match callee " << callee
                             << " of type " << type;
  return success();
}

/// The program enclosing a program-body op (guaranteed by HasParent).
static ProgramOp programOf(Operation *op) {
  return cast<ProgramOp>(op->getParentOp());
}

/// Checks that `microbatch` is in range for the enclosing program.
static LogicalResult verifyMicrobatch(Operation *op, ProgramOp program,
                                      int64_t microbatch) {
  if (microbatch >= static_cast<int64_t>(program.getNumMicrobatches()))
    return op->emitOpError()
           << "microbatch " << microbatch << " out of range for a program of "
           << pipeopt::countOf(program.getNumMicrobatches(), "microbatch",
                               "microbatches");
  return success();
}

std::optional<int64_t> pipeopt::pipe::getMicrobatch(Operation *op) {
  if (auto body = dyn_cast<MicrobatchOpInterface>(op))
    return body.getMicrobatchIndex();
  return std::nullopt;
}

int64_t SendOp::getMicrobatchIndex() {
  return static_cast<int64_t>(getTag().getMicrobatch());
}

int64_t RecvOp::getMicrobatchIndex() {
  return static_cast<int64_t>(getTag().getMicrobatch());
}

/// The microbatch an activation belongs to: that of the pipe.recv,
/// pipe.forward or pipe.backward defining it; none for anything else.
/// pipe.input values are not included: a weight is the same tensor for every
/// microbatch, so a program may read it once and use it for all of them;
/// only convert-pipe-to-runtime knows which arguments are per-microbatch
/// (its microbatch-args option) and checks those.
static std::optional<int64_t> microbatchOf(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def || isa<InputOp>(def))
    return std::nullopt;
  return getMicrobatch(def);
}

/// Checks that every activation operand of `op` belongs to `microbatch`: an
/// action for microbatch m computes only on microbatch m's received values
/// and intermediate results, and a send or output carries only values of the
/// microbatch its tag or attribute names.
static LogicalResult verifyOperandMicrobatches(Operation *op,
                                               int64_t microbatch) {
  for (OpOperand &operand : op->getOpOperands()) {
    std::optional<int64_t> mb = microbatchOf(operand.get());
    if (!mb || *mb == microbatch)
      continue;
    InFlightDiagnostic diag = op->emitOpError()
                              << "is for microbatch " << microbatch
                              << ", but operand #" << operand.getOperandNumber()
                              << " belongs to microbatch " << *mb;
    diag.attachNote(operand.get().getLoc())
        << "operand #" << operand.getOperandNumber() << " defined here";
    return diag;
  }
  return success();
}

/// "reduce mean, name \"grad_0\"", "no reduction, no name", ... for messages.
static std::string describeOutput(OutputOp out) {
  std::string text = out.getReduce() ? "reduce mean" : "no reduction";
  text += out.getNameAttr()
              ? ", name \"" + out.getNameAttr().getValue().str() + "\""
              : std::string(", no name");
  return text;
}

/// Checks a send/recv peer and tag against the enclosing program.
static LogicalResult verifyTransfer(Operation *op, ProgramOp program,
                                    int64_t peer, TagAttr tag) {
  if (peer >= static_cast<int64_t>(program.getNumRanks()))
    return op->emitOpError() << "peer rank " << peer << " out of range for "
                             << pipeopt::countOf(program.getNumRanks(), "rank");
  if (peer == static_cast<int64_t>(program.getRank()))
    return op->emitOpError()
           << "peer rank " << peer << " is the program's own rank";
  return verifyMicrobatch(op, program, tag.getMicrobatch());
}

//===----------------------------------------------------------------------===//
// StageCallOp
//===----------------------------------------------------------------------===//

LogicalResult
StageCallOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyStageCallee(*this, symbolTable, getCalleeAttr(), getStage(),
                           getArgs().getTypes(), getResultTypes());
}

//===----------------------------------------------------------------------===//
// ProgramOp
//===----------------------------------------------------------------------===//

void ProgramOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                      int64_t rank, int64_t numRanks, int64_t numMicrobatches) {
  state.addAttribute(getSymNameAttrName(state.name),
                     builder.getStringAttr(name));
  state.addAttribute(getRankAttrName(state.name),
                     builder.getI64IntegerAttr(rank));
  state.addAttribute(getNumRanksAttrName(state.name),
                     builder.getI64IntegerAttr(numRanks));
  state.addAttribute(getNumMicrobatchesAttrName(state.name),
                     builder.getI64IntegerAttr(numMicrobatches));
  Region *body = state.addRegion();
  body->push_back(new Block());
}

LogicalResult ProgramOp::verify() {
  if (getRank() >= getNumRanks())
    return emitOpError() << "rank " << getRank() << " out of range for "
                         << pipeopt::countOf(getNumRanks(), "rank");
  if (getBody().front().getNumArguments() != 0)
    return emitOpError() << "body must not have block arguments; read model "
                            "arguments with pipe.input";
  for (Operation &op : getBody().front())
    if (!isa<InputOp, OutputOp, ForwardOp, BackwardOp, SendOp, RecvOp,
             GradientOp>(op)) {
      InFlightDiagnostic diag = emitOpError()
                                << "holds only pipe.input, pipe.output, "
                                   "pipe.forward, pipe.backward, pipe.send, "
                                   "pipe.recv and pipe.gradient, but contains '"
                                << op.getName()
                                << "' (computation belongs in stage functions)";
      diag.attachNote(op.getLoc()) << "this op";
      return diag;
    }
  // The outputs of one result agree on how they are combined and named;
  // names identify results (they become file names), and a mean counts
  // every microbatch once.
  llvm::DenseMap<uint64_t, OutputOp> firstOutput;
  llvm::DenseMap<StringAttr, OutputOp> byName;
  std::set<std::pair<uint64_t, uint64_t>> meanWrites;
  for (auto out : getBody().front().getOps<OutputOp>()) {
    auto [it, first] = firstOutput.try_emplace(out.getResult(), out);
    OutputOp earlier = it->second;
    if (!first && (earlier.getReduceAttr() != out.getReduceAttr() ||
                   earlier.getNameAttr() != out.getNameAttr())) {
      InFlightDiagnostic diag =
          out.emitOpError()
          << "writes result " << out.getResult() << " with "
          << describeOutput(out) << ", but an earlier pipe.output of result "
          << out.getResult() << " has " << describeOutput(earlier)
          << "; every pipe.output of one result must agree";
      diag.attachNote(earlier.getLoc()) << "earlier pipe.output";
      return diag;
    }
    if (first && out.getNameAttr()) {
      auto [named, isNew] = byName.try_emplace(out.getNameAttr(), out);
      if (!isNew) {
        InFlightDiagnostic diag =
            out.emitOpError()
            << "names result " << out.getResult() << " " << out.getNameAttr()
            << ", but result " << named->second.getResult()
            << " has that name already; result names must be unique";
        diag.attachNote(named->second.getLoc())
            << "result " << named->second.getResult();
        return diag;
      }
    }
    if (out.getReduce() &&
        !meanWrites.insert({out.getResult(), out.getMicrobatch()}).second)
      return out.emitOpError()
             << "writes result " << out.getResult() << " (reduce mean) for "
             << "microbatch " << out.getMicrobatch()
             << " a second time; a mean counts every microbatch once";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Program body ops
//===----------------------------------------------------------------------===//

LogicalResult InputOp::verify() {
  return verifyMicrobatch(*this, programOf(*this), getMicrobatch());
}

LogicalResult OutputOp::verify() {
  if (getReduce()) {
    auto type = cast<RankedTensorType>(getValue().getType());
    if (!isa<FloatType>(type.getElementType()))
      return emitOpError() << "reduce mean needs a floating-point tensor, got "
                           << type;
  }
  if (getNameAttr() && getNameAttr().getValue().empty())
    return emitOpError() << "name must not be empty";
  if (failed(verifyMicrobatch(*this, programOf(*this), getMicrobatch())))
    return failure();
  return verifyOperandMicrobatches(*this, getMicrobatch());
}

LogicalResult ForwardOp::verify() {
  if (failed(verifyMicrobatch(*this, programOf(*this), getMicrobatch())))
    return failure();
  return verifyOperandMicrobatches(*this, getMicrobatch());
}

LogicalResult ForwardOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyStageCallee(*this, symbolTable, getCalleeAttr(), getStage(),
                           getArgs().getTypes(), getResultTypes());
}

LogicalResult BackwardOp::verify() {
  if (getKind() == BackwardKind::Weight && !getCallee() && getNumResults() != 0)
    return emitOpError() << "a weight-gradient (W) action produces no "
                            "gradients for other stages, but has "
                         << getNumResults() << " results";
  if (getKind() == BackwardKind::Weight)
    for (Value r : getResults())
      for (Operation *user : r.getUsers())
        if (!isa<GradientOp>(user)) {
          InFlightDiagnostic diag =
              emitOpError() << "is a weight-gradient (W) action: its results "
                               "are weight gradients, which only "
                               "pipe.gradient may use";
          diag.attachNote(user->getLoc()) << "used here";
          return diag;
        }
  if (failed(verifyMicrobatch(*this, programOf(*this), getMicrobatch())))
    return failure();
  return verifyOperandMicrobatches(*this, getMicrobatch());
}

LogicalResult BackwardOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  if (!getCallee())
    return success();
  return verifyStageCallee(*this, symbolTable, getCalleeAttr(), getStage(),
                           getArgs().getTypes(), getResultTypes());
}

LogicalResult GradientOp::verify() {
  auto type = cast<RankedTensorType>(getValue().getType());
  if (!isa<FloatType>(type.getElementType()))
    return emitOpError() << "contributes a gradient of type " << type
                         << ", but gradients are floating-point";
  if (failed(verifyMicrobatch(*this, programOf(*this), getMicrobatch())))
    return failure();
  return verifyOperandMicrobatches(*this, getMicrobatch());
}

LogicalResult SendOp::verify() {
  if (failed(verifyTransfer(*this, programOf(*this), getPeer(), getTag())))
    return failure();
  return verifyOperandMicrobatches(*this, getTag().getMicrobatch());
}

LogicalResult RecvOp::verify() {
  return verifyTransfer(*this, programOf(*this), getPeer(), getTag());
}

#define GET_OP_CLASSES
#include "pipeopt/Dialect/Pipe/IR/PipeOps.cpp.inc"
