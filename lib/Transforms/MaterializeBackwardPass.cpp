//===- MaterializeBackwardPass.cpp - executable backward actions -*- C++
//-*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// pipe-materialize-backward (Passes.td): differentiates every stage
/// function of a scheduled training pipeline and rewrites the programs so
/// that their F, B and W actions call the generated functions, with the
/// saved values flowing from each forward to the backward actions of the
/// same (stage, microbatch) and every weight gradient handed to the runtime
/// with pipe.gradient. The differentiation itself is lib/Autodiff; this file
/// only wires its functions into the schedule (docs/Training.md,
/// "Pipelined training").
///
//===----------------------------------------------------------------------===//

#include "pipeopt/Programs/StageGraphInfo.h"

#include "pipeopt/Autodiff/Autodiff.h"
#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"
#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"
#include "pipeopt/Programs/ProgramChecks.h"
#include "pipeopt/Transforms/Passes.h"

#include "pipeopt/Analysis/ArgumentSelection.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/STLExtras.h"

#include <limits>
#include <map>
#include <set>

namespace pipeopt {
#define GEN_PASS_DEF_MATERIALIZEBACKWARDPASS
#include "pipeopt/Transforms/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;
using namespace pipeopt;

namespace {

constexpr llvm::StringLiteral kPass = "pipe-materialize-backward: ";
constexpr llvm::StringLiteral kStashBytesAttr =
    pipe::PipeDialect::StashBytesAttrHelper::getNameStr();
constexpr llvm::StringLiteral kTrainableAttr =
    pipe::PipeDialect::TrainableAttrHelper::getNameStr();

/// What one operand of a generated backward wrapper is, relative to the
/// (stage, microbatch) it runs for.
struct Piece {
  enum Kind { Arg, Saved, Grad, Stash } kind;
  /// Stage argument position, saved value index, incoming gradient index
  /// (position in StageGraphInfo::outgoing) or stash index.
  unsigned index;
  bool operator==(const Piece &o) const {
    return kind == o.kind && index == o.index;
  }
};

/// A generated wrapper and the pieces it takes, in argument order.
struct Wrapper {
  func::FuncOp fn;
  SmallVector<Piece> ins;
};

/// Everything known about the backward of one stage.
struct StageBackward {
  int stage = 0;
  func::FuncOp stageFn;
  /// Differentiated stage argument positions (ascending) and the subset
  /// that are trainable model arguments (W).
  SmallVector<unsigned> wrt, weights;
  /// Model argument of each entry of `weights`.
  SmallVector<unsigned> weightArgs;
  std::optional<autodiff::Gradient> grad;
  /// The forward the programs call (stageFn itself without a gradient).
  func::FuncOp fwd;
  unsigned numResults = 0;
  unsigned numSaved = 0;
  Wrapper full, input, weight;
};

/// Marks the arguments of `fn` (a forward of stage k) that receive
/// per-microbatch data (pipe.microbatched on the stage graph function's
/// argument) as such, and passes on class-index targets (pipe.class_count);
/// convert-pipe-to-runtime reads the marks.
void markData(const StageGraphInfo &info, int k, func::FuncOp fn) {
  auto microbatched = pipe::PipeDialect::getMicrobatchedAttrName();
  Builder b(fn.getContext());
  func::FuncOp graph = info.func;
  for (auto [p, src] : llvm::enumerate(info.sources[k])) {
    if (src.fromStage >= 0)
      continue;
    if (graph.getArgAttr(src.argIndex, microbatched))
      fn.setArgAttr(p, microbatched, b.getUnitAttr());
    if (Attribute c = graph.getArgAttr(src.argIndex, autodiff::kClassCountAttr))
      fn.setArgAttr(p, autodiff::kClassCountAttr, c);
  }
}

bool isFloatTensor(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt && isa<FloatType>(rt.getElementType());
}

struct MaterializeBackwardPass
    : pipeopt::impl::MaterializeBackwardPassBase<MaterializeBackwardPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult prepareStage(const StageGraphInfo &info, int k,
                             const std::set<unsigned> &trainableArgs,
                             autodiff::Recompute recomputeKind,
                             StageBackward &sb);
  /// Builds the wrapper of `kind` for stage `sb` (see Passes.td).
  Wrapper buildWrapper(const StageGraphInfo &info, StageBackward &sb,
                       pipe::BackwardKind kind);
  LogicalResult rewriteProgram(pipe::ProgramOp program,
                               const StageGraphInfo &info,
                               std::vector<StageBackward> &stages);
};

} // namespace

LogicalResult MaterializeBackwardPass::prepareStage(
    const StageGraphInfo &info, int k, const std::set<unsigned> &trainableArgs,
    autodiff::Recompute recomputeKind, StageBackward &sb) {
  sb.stage = k;
  pipe::StageCallOp call = info.calls[k];
  auto fn = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      call, call.getCalleeAttr());
  if (!fn || fn.isExternal())
    return call.emitOpError()
           << kPass << "stage " << k << " has no stage function with a body";
  sb.stageFn = fn;
  sb.numResults = fn.getNumResults();
  for (auto [p, src] : llvm::enumerate(info.sources[k])) {
    if (!isFloatTensor(fn.getArgumentTypes()[p]))
      continue;
    if (src.fromStage >= 0) {
      sb.wrt.push_back(p);
    } else if (trainableArgs.count(src.argIndex)) {
      sb.wrt.push_back(p);
      sb.weights.push_back(p);
      sb.weightArgs.push_back(src.argIndex);
    }
  }
  if (sb.wrt.empty()) {
    // Nothing to differentiate (e.g. a first stage whose only inputs are
    // token ids and frozen weights): its backward actions only pass zeros.
    sb.fwd = fn;
    markData(info, k, fn);
    return success();
  }
  OpPassManager pm(func::FuncOp::getOperationName());
  autodiff::buildPrepareForDifferentiation(pm);
  if (failed(runPipeline(pm, fn)))
    return failure();
  autodiff::Options options;
  options.wrt = sb.wrt;
  options.weights = sb.weights;
  options.recompute = recomputeKind;
  options.prefix = fn.getSymName().str();
  FailureOr<autodiff::Gradient> grad = autodiff::differentiate(fn, options);
  if (failed(grad))
    return fn.emitError() << kPass << "cannot build the backward of stage " << k
                          << " (@" << fn.getSymName() << ")";
  OpPassManager cse(func::FuncOp::getOperationName());
  cse.addPass(createCSEPass());
  for (func::FuncOp g : {grad->fwd, grad->bwd, grad->b, grad->w})
    if (failed(runPipeline(cse, g)))
      return failure();
  sb.grad = *grad;
  sb.fwd = grad->fwd;
  sb.numSaved = grad->numSaved;
  // The programs call these as stage functions of stage k; data arguments
  // stay marked per microbatch (convert-pipe-to-runtime reads the marks on
  // the forward's callee).
  Builder b(fn.getContext());
  sb.fwd->setAttr(pipe::PipeDialect::StageAttrHelper::getNameStr(),
                  b.getI64IntegerAttr(k));
  markData(info, k, sb.fwd);
  return success();
}

Wrapper MaterializeBackwardPass::buildWrapper(const StageGraphInfo &info,
                                              StageBackward &sb,
                                              pipe::BackwardKind kind) {
  int k = sb.stage;
  func::FuncOp stageFn = sb.stageFn;
  MLIRContext *ctx = stageFn.getContext();
  Location loc = stageFn.getLoc();
  unsigned numArgs = stageFn.getNumArguments();
  const auto &outgoing = info.outgoing[k];
  const auto &incoming = info.incoming[k];

  // The generated function this wrapper calls, with its unused arguments
  // removed so that the program keeps alive only what is read.
  func::FuncOp callee;
  if (sb.grad)
    callee = kind == pipe::BackwardKind::Full    ? sb.grad->bwd
             : kind == pipe::BackwardKind::Input ? sb.grad->b
                                                 : sb.grad->w;
  if (kind == pipe::BackwardKind::Weight && sb.weights.empty())
    callee = func::FuncOp();
  unsigned numSeeded = sb.grad ? sb.grad->seeded.size() : 0;
  // Callee argument layout: args, saved, d_results, [stash].
  struct CalleeArg {
    Piece::Kind kind; // Arg, Saved, Stash, or Grad meaning d_result j
    unsigned index;
  };
  SmallVector<CalleeArg> layout;
  if (callee) {
    for (unsigned p = 0; p < numArgs; ++p)
      layout.push_back({Piece::Arg, p});
    for (unsigned i = 0; i < sb.numSaved; ++i)
      layout.push_back({Piece::Saved, i});
    for (unsigned j = 0; j < numSeeded; ++j)
      layout.push_back({Piece::Grad, j});
    if (kind == pipe::BackwardKind::Weight)
      for (unsigned i = 0; i < sb.grad->numStash; ++i)
        layout.push_back({Piece::Stash, i});
    llvm::BitVector unused(callee.getNumArguments());
    for (unsigned i = 0; i < callee.getNumArguments(); ++i)
      if (callee.getArgument(i).use_empty())
        unused.set(i);
    SmallVector<CalleeArg> kept;
    for (unsigned i = 0; i < layout.size(); ++i)
      if (!unused.test(i))
        kept.push_back(layout[i]);
    (void)callee.eraseArguments(unused);
    layout = std::move(kept);
  }

  // d_result j comes from the incoming gradients of result seeded[j] (and
  // 1 for the loss).
  int lossStage = info.outputs.front().first;
  unsigned lossResult = info.outputs.front().second;
  auto gradsOfResult = [&](unsigned result) {
    SmallVector<unsigned> gs;
    for (auto [i, ev] : llvm::enumerate(outgoing))
      if (StageGraphInfo::resultNumber(ev.value) == result)
        gs.push_back(i);
    return gs;
  };

  Wrapper w;
  for (const CalleeArg &a : layout) {
    if (a.kind != Piece::Grad) {
      w.ins.push_back({a.kind, a.index});
      continue;
    }
    for (unsigned g : gradsOfResult(sb.grad->seeded[a.index]))
      if (!llvm::is_contained(w.ins, Piece{Piece::Grad, g}))
        w.ins.push_back({Piece::Grad, g});
  }
  auto pieceType = [&](const Piece &p) -> Type {
    switch (p.kind) {
    case Piece::Arg:
      return stageFn.getArgumentTypes()[p.index];
    case Piece::Saved:
      return sb.fwd.getResultTypes()[sb.numResults + p.index];
    case Piece::Grad:
      return outgoing[p.index].value.getType();
    case Piece::Stash:
      return sb.grad->b.getResultTypes()[sb.grad->b.getNumResults() -
                                         sb.grad->numStash + p.index];
    }
    llvm_unreachable("piece kind");
  };

  // Result types: outgoing gradients (one per incoming value), then weight
  // gradients (full, weight) or the stash (input).
  SmallVector<Type> resultTypes;
  if (kind != pipe::BackwardKind::Weight)
    for (const auto &ev : incoming)
      resultTypes.push_back(ev.value.getType());
  if (kind != pipe::BackwardKind::Input)
    for (unsigned p : sb.weights)
      resultTypes.push_back(stageFn.getArgumentTypes()[p]);
  else if (sb.grad)
    for (unsigned i = 0; i < sb.grad->numStash; ++i)
      resultTypes.push_back(pieceType({Piece::Stash, i}));

  SmallVector<Type> argTypes;
  for (const Piece &p : w.ins)
    argTypes.push_back(pieceType(p));
  std::string suffix = kind == pipe::BackwardKind::Full    ? "_train_bw"
                       : kind == pipe::BackwardKind::Input ? "_train_b"
                                                           : "_train_w";
  OpBuilder b(ctx);
  b.setInsertionPointAfter(stageFn);
  ModuleOp module = getOperation();
  std::string name = (stageFn.getSymName() + suffix).str();
  w.fn = func::FuncOp::create(b, loc, name,
                              FunctionType::get(ctx, argTypes, resultTypes));
  w.fn.setPrivate();
  SymbolTable(module).insert(w.fn); // uniquifies the name if taken
  w.fn->setAttr(pipe::PipeDialect::StageAttrHelper::getNameStr(),
                b.getI64IntegerAttr(k));
  Block *body = w.fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  auto argOf = [&](const Piece &p) -> Value {
    auto it = llvm::find(w.ins, p);
    return it == w.ins.end() ? Value() : body->getArgument(it - w.ins.begin());
  };
  auto zeros = [&](Type t) -> Value {
    return arith::ConstantOp::create(b, loc, cast<TypedAttr>(b.getZeroAttr(t)))
        .getResult();
  };
  auto add = [&](Value x, Value y) -> Value {
    auto t = cast<RankedTensorType>(x.getType());
    Value init =
        tensor::EmptyOp::create(b, loc, t.getShape(), t.getElementType());
    return linalg::AddOp::create(b, loc, ValueRange{x, y}, ValueRange{init})
        .getResult(0);
  };

  SmallVector<Value> calleeResults;
  if (callee) {
    SmallVector<Value> operands;
    for (const CalleeArg &a : layout) {
      if (a.kind != Piece::Grad) {
        operands.push_back(argOf({a.kind, a.index}));
        continue;
      }
      unsigned result = sb.grad->seeded[a.index];
      Type t = stageFn.getResultTypes()[result];
      Value sum;
      for (unsigned g : gradsOfResult(result)) {
        Value v = argOf({Piece::Grad, g});
        sum = sum ? add(sum, v) : v;
      }
      if (k == lossStage && result == lossResult) {
        auto rt = cast<RankedTensorType>(t);
        Value one = arith::ConstantOp::create(
            b, loc,
            DenseElementsAttr::get(rt,
                                   b.getFloatAttr(rt.getElementType(), 1.0)));
        sum = sum ? add(sum, one) : one;
      }
      operands.push_back(sum ? sum : zeros(t));
    }
    calleeResults = func::CallOp::create(b, loc, callee, operands).getResults();
  }

  SmallVector<Value> results;
  if (kind != pipe::BackwardKind::Weight) {
    // d_wrt position of stage argument p among the callee's results.
    SmallVector<unsigned> gradOrder;
    for (unsigned p : sb.wrt)
      if (kind == pipe::BackwardKind::Full ||
          !llvm::is_contained(sb.weights, p))
        gradOrder.push_back(p);
    for (const auto &ev : incoming) {
      Value sum;
      for (auto [p, src] : llvm::enumerate(info.sources[k])) {
        if (src.fromStage != ev.peerStage || src.valueIndex != ev.valueIndex)
          continue;
        auto it = llvm::find(gradOrder, unsigned(p));
        if (it == gradOrder.end() || calleeResults.empty())
          continue;
        Value v = calleeResults[it - gradOrder.begin()];
        sum = sum ? add(sum, v) : v;
      }
      results.push_back(sum ? sum : zeros(ev.value.getType()));
    }
    if (kind == pipe::BackwardKind::Full) {
      for (unsigned p : sb.weights)
        results.push_back(
            calleeResults[llvm::find(gradOrder, p) - gradOrder.begin()]);
    } else if (sb.grad) {
      for (unsigned i = 0; i < sb.grad->numStash; ++i)
        results.push_back(calleeResults[gradOrder.size() + i]);
    }
  } else {
    results.append(calleeResults.begin(), calleeResults.end());
  }
  func::ReturnOp::create(b, loc, results);
  return w;
}

LogicalResult
MaterializeBackwardPass::rewriteProgram(pipe::ProgramOp program,
                                        const StageGraphInfo &info,
                                        std::vector<StageBackward> &stages) {
  // Values of one (stage, microbatch) the backward actions read.
  struct Live {
    SmallVector<Value> args, saved, grads, stash;
    bool backwardDone = false;
  };
  std::map<std::pair<int, int>, Live> live;
  auto microbatched = pipe::PipeDialect::getMicrobatchedAttrName();
  func::FuncOp graph = info.func;

  // Bytes of the non-weight values among `pieces` of (stage, microbatch).
  auto heldBytes = [&](const StageBackward &sb, ArrayRef<Piece> pieces,
                       const Live &l, bool afterForward) {
    std::set<Piece::Kind> kinds;
    double bytes = 0;
    llvm::SmallDenseSet<Value> seen;
    for (const Piece &p : pieces) {
      Value v;
      switch (p.kind) {
      case Piece::Arg: {
        const auto &src = info.sources[sb.stage][p.index];
        if (src.fromStage < 0 && !graph.getArgAttr(src.argIndex, microbatched))
          continue; // a weight: shared by every microbatch, not stashed
        v = l.args[p.index];
        break;
      }
      case Piece::Saved:
        v = l.saved[p.index];
        break;
      case Piece::Grad:
      case Piece::Stash:
        if (afterForward)
          continue; // does not exist yet
        v = p.kind == Piece::Grad ? l.grads[p.index] : l.stash[p.index];
        break;
      }
      if (v && seen.insert(v).second)
        bytes += tensorBytes(v.getType());
    }
    return static_cast<int64_t>(bytes);
  };

  OpBuilder b(program.getContext());
  auto setHeld = [&](Operation *op, int64_t bytes) {
    op->setAttr(kStashBytesAttr, b.getI64IntegerAttr(bytes));
  };
  // Whether the schedule splits the backward of stage k on this program.
  std::set<int> split;
  program.walk([&](pipe::BackwardOp op) {
    if (op.getKind() != pipe::BackwardKind::Full)
      split.insert(op.getStage());
  });

  for (Operation &op : llvm::make_early_inc_range(program.getBody().front())) {
    if (auto fwd = dyn_cast<pipe::ForwardOp>(&op)) {
      int k = fwd.getStage(), m = fwd.getMicrobatch();
      StageBackward &sb = stages[k];
      b.setInsertionPoint(fwd);
      auto newFwd = pipe::ForwardOp::create(
          b, fwd.getLoc(), sb.fwd.getResultTypes(), sb.fwd.getSymName(),
          fwd.getStage(), fwd.getMicrobatch(), fwd.getArgs());
      for (unsigned i = 0; i < sb.numResults; ++i)
        fwd.getResult(i).replaceAllUsesWith(newFwd.getResult(i));
      Live &l = live[{k, m}];
      l.args.assign(newFwd.getArgs().begin(), newFwd.getArgs().end());
      for (unsigned i = 0; i < sb.numSaved; ++i)
        l.saved.push_back(newFwd.getResult(sb.numResults + i));
      SmallVector<Piece> later;
      if (split.count(k)) {
        later.append(sb.input.ins);
        later.append(sb.weight.ins);
      } else {
        later.append(sb.full.ins);
      }
      setHeld(newFwd, heldBytes(sb, later, l, /*afterForward=*/true));
      fwd.erase();
      continue;
    }
    if (auto out = dyn_cast<pipe::OutputOp>(&op)) {
      // The stage graph's only result is the loss: averaged, named.
      out.setReduceAttr(pipe::OutputReductionAttr::get(
          b.getContext(), pipe::OutputReduction::Mean));
      out.setNameAttr(b.getStringAttr("loss"));
      continue;
    }
    auto bwd = dyn_cast<pipe::BackwardOp>(&op);
    if (!bwd)
      continue;
    int k = bwd.getStage(), m = bwd.getMicrobatch();
    StageBackward &sb = stages[k];
    auto it = live.find({k, m});
    if (it == live.end())
      return bwd.emitOpError()
             << kPass << "backward of stage " << k << " microbatch " << m
             << " comes before its forward on rank " << program.getRank();
    Live &l = it->second;
    pipe::BackwardKind kind = bwd.getKind();
    Wrapper &wrapper = kind == pipe::BackwardKind::Full    ? sb.full
                       : kind == pipe::BackwardKind::Input ? sb.input
                                                           : sb.weight;
    if (kind != pipe::BackwardKind::Weight)
      l.grads.assign(bwd.getArgs().begin(), bwd.getArgs().end());
    if (kind == pipe::BackwardKind::Weight && !l.backwardDone)
      return bwd.emitOpError()
             << kPass << "weight gradient (W) of stage " << k << " microbatch "
             << m << " comes before its input gradient (B)";
    SmallVector<Value> operands;
    for (const Piece &p : wrapper.ins) {
      switch (p.kind) {
      case Piece::Arg:
        operands.push_back(l.args[p.index]);
        break;
      case Piece::Saved:
        operands.push_back(l.saved[p.index]);
        break;
      case Piece::Grad:
        operands.push_back(l.grads[p.index]);
        break;
      case Piece::Stash:
        operands.push_back(l.stash[p.index]);
        break;
      }
    }
    b.setInsertionPoint(bwd);
    auto newBwd =
        pipe::BackwardOp::create(b, bwd.getLoc(), wrapper.fn.getResultTypes(),
                                 kind, FlatSymbolRefAttr::get(wrapper.fn),
                                 bwd.getStage(), bwd.getMicrobatch(), operands);
    unsigned numOut = bwd.getNumResults();
    for (unsigned i = 0; i < numOut; ++i)
      bwd.getResult(i).replaceAllUsesWith(newBwd.getResult(i));
    unsigned firstWeight = kind == pipe::BackwardKind::Weight ? 0 : numOut;
    if (kind == pipe::BackwardKind::Input) {
      for (unsigned i = numOut; i < newBwd.getNumResults(); ++i)
        l.stash.push_back(newBwd.getResult(i));
      l.backwardDone = true;
      setHeld(newBwd, heldBytes(sb, sb.weight.ins, l, /*afterForward=*/false));
    } else {
      setHeld(newBwd, 0);
      b.setInsertionPointAfter(newBwd);
      for (auto [i, arg] : llvm::enumerate(sb.weightArgs)) {
        pipe::GradientOp::create(b, bwd.getLoc(),
                                 newBwd.getResult(firstWeight + i), arg,
                                 uint64_t(k), uint64_t(m));
        ++numGradients;
      }
      live.erase(it);
    }
    bwd.erase();
  }
  return success();
}

void MaterializeBackwardPass::runOnOperation() {
  ModuleOp module = getOperation();
  // recompute is an enum option: the option parser rejects other values.
  std::optional<autodiff::Recompute> recomputeKind = recompute.getValue();
  SmallVector<pipe::ProgramOp> programs(module.getOps<pipe::ProgramOp>());
  Location loc = programs.empty() ? module.getLoc() : programs.front().getLoc();
  llvm::Expected<ArgumentSelection> sel = ArgumentSelection::parse(
      trainable, "trainable", {ArgumentSelection::Kind::None});
  if (!sel) {
    emitError(loc) << kPass << llvm::toString(sel.takeError());
    return signalPassFailure();
  }
  if (programs.empty()) {
    emitError(loc) << kPass
                   << "no pipe.program to materialize; run pipe-schedule "
                      "with a training schedule first";
    return signalPassFailure();
  }
  bool hasBackward = false;
  for (pipe::ProgramOp p : programs) {
    WalkResult r = p.walk([&](pipe::BackwardOp op) {
      hasBackward = true;
      if (op.getCallee()) {
        op.emitOpError() << kPass << "is already materialized (it calls "
                         << op.getCalleeAttr() << ")";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return signalPassFailure();
  }
  if (!hasBackward) {
    programs.front().emitOpError()
        << kPass << "the schedule has no backward actions (schedule '"
        << programs.front().getSchedule().value_or("?")
        << "'); training needs a training schedule such as 1f1b";
    return signalPassFailure();
  }

  // The stage graph the programs were scheduled from.
  func::FuncOp graph;
  for (auto fn : module.getOps<func::FuncOp>())
    if (isStageGraph(fn)) {
      if (graph) {
        fn.emitError() << kPass << "a second stage graph function (@"
                       << graph.getSymName() << " is the first)";
        return signalPassFailure();
      }
      graph = fn;
    }
  if (!graph) {
    emitError(loc) << kPass
                   << "no stage graph function (pipe.stage_call) found; the "
                      "programs must come from pipe-schedule of this module";
    return signalPassFailure();
  }
  FailureOr<StageGraphInfo> info = analyzeStageGraph(graph);
  if (failed(info))
    return signalPassFailure();
  FunctionType graphType = graph.getFunctionType();
  auto lossType = graphType.getNumResults() == 1
                      ? dyn_cast<RankedTensorType>(graphType.getResult(0))
                      : RankedTensorType();
  if (!lossType || !isa<FloatType>(lossType.getElementType()) ||
      !lossType.hasStaticShape() || lossType.getNumElements() != 1) {
    graph.emitError() << kPass << "@" << graph.getSymName() << " has type "
                      << graphType
                      << ", but training needs a model whose only result is "
                         "its loss, one floating-point scalar (pipeopt-compile "
                         "--train --loss=mse|cross-entropy appends one)";
    return signalPassFailure();
  }

  // Trainable model arguments.
  std::set<unsigned> trainableArgs;
  auto microbatched = pipe::PipeDialect::getMicrobatchedAttrName();
  if (sel->kind == ArgumentSelection::Kind::Auto) {
    if (auto attr = graph->getAttrOfType<DenseI64ArrayAttr>(kTrainableAttr)) {
      for (int64_t i : attr.asArrayRef())
        trainableArgs.insert(unsigned(i));
    } else {
      for (unsigned i = 0; i < graph.getNumArguments(); ++i)
        if (isFloatTensor(graphType.getInput(i)) &&
            !graph.getArgAttr(i, microbatched))
          trainableArgs.insert(i);
    }
  } else if (sel->kind == ArgumentSelection::Kind::List) {
    for (int64_t i : sel->indices)
      trainableArgs.insert(
          unsigned(std::min<int64_t>(i, std::numeric_limits<unsigned>::max())));
  }
  for (unsigned i : trainableArgs)
    if (i >= graph.getNumArguments() || !isFloatTensor(graphType.getInput(i))) {
      graph.emitError() << kPass << "trainable argument " << i
                        << (i >= graph.getNumArguments()
                                ? " does not exist"
                                : " is not a floating-point tensor")
                        << " (@" << graph.getSymName() << " has type "
                        << graphType << ")";
      return signalPassFailure();
    }

  std::vector<StageBackward> stages(info->numStages());
  for (int k = 0; k < info->numStages(); ++k) {
    if (failed(
            prepareStage(*info, k, trainableArgs, *recomputeKind, stages[k])))
      return signalPassFailure();
    ++numStages;
  }
  // Wrappers of the actions the programs use.
  std::set<std::pair<int, pipe::BackwardKind>> used;
  for (pipe::ProgramOp p : programs)
    p.walk([&](pipe::BackwardOp op) {
      used.insert({int(op.getStage()), op.getKind()});
    });
  for (auto [k, kind] : used) {
    if (k >= info->numStages()) {
      emitError(loc) << kPass << "a backward action names stage " << k
                     << ", but the stage graph has " << info->numStages();
      return signalPassFailure();
    }
    Wrapper w = buildWrapper(*info, stages[k], kind);
    (kind == pipe::BackwardKind::Full    ? stages[k].full
     : kind == pipe::BackwardKind::Input ? stages[k].input
                                         : stages[k].weight) = std::move(w);
  }
  // A split backward's B is planned with its W's needs.
  for (auto [k, kind] : used)
    if (kind == pipe::BackwardKind::Input && !stages[k].weight.fn)
      stages[k].weight =
          buildWrapper(*info, stages[k], pipe::BackwardKind::Weight);
  for (pipe::ProgramOp p : programs)
    if (failed(rewriteProgram(p, *info, stages)))
      return signalPassFailure();
  // The rules of asynchronous updates (PipeDream, PipeDream-2BW), which
  // need the pipe.gradient ops just emitted.
  FailureOr<BuiltPrograms> built = inspectPrograms(module);
  if (failed(built) || failed(checkAsynchronousUpdates(module, *built)))
    return signalPassFailure();
}
