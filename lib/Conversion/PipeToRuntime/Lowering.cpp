//===- Lowering.cpp - convert-pipe-to-runtime: conversion patterns --------===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Part 2 of convert-pipe-to-runtime (PipeToRuntimeInternal.h): one
/// conversion pattern per pipe op under a ConversionTarget for which the
/// pipe dialect is illegal. The pipe.program pattern turns the program into
/// its entry point (the body moves into it, followed by an exit block that
/// returns the status); the patterns of the body ops, which the conversion
/// driver visits in program order, replace each op by its runtime calls
/// and thread the rank's status through them. Everything the manifest
/// needs is recorded in a LoweringResults. The input has been checked
/// (Checks.cpp); a pipe op no pattern handles is reported by the framework.
///
//===----------------------------------------------------------------------===//

#include "PipeToRuntimeInternal.h"

#include "pipeopt/Conversion/PipeToRuntime/PipeToRuntime.h"
#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;
namespace pipe = pipeopt::pipe;
using namespace pipeopt::pipe_to_runtime;

namespace {

/// The state of one entry point while its program's ops are converted.
struct EntryPoint {
  int64_t rank = 0;
  Location loc;
  /// The block returning its argument (the status); the last block.
  Block *exitBlock = nullptr;
  /// First nonzero status since the last check (null: none pending).
  Value pending;
  /// Shared (not microbatched) inputs already read: argument -> tensor.
  llvm::DenseMap<int64_t, Value> sharedInputs;
  /// Input views already taken: (argument, microbatch) -> tensor.
  llvm::DenseMap<std::pair<int64_t, int64_t>, Value> views;
};

/// What the patterns share: the runtime declarations, the policy, the
/// results and the entry point of every program converted so far.
struct LoweringState {
  LoweringState(ModuleOp module, const MicrobatchPolicy &policy,
                LoweringResults &results, bool inputViews)
      : module(module), symbols(module), decls(module, symbols), policy(policy),
        results(results) {
    if (results.optimizer)
      if (std::optional<int64_t> k = results.optimizer.getUpdateEvery())
        rereadWeights = *k > 0;
    // A view shows the runtime's copy as it is at the read; asynchronous
    // training updates weights within a call, so each read copies.
    this->inputViews = inputViews && !rereadWeights;
  }

  ModuleOp module;
  SymbolTable symbols;
  pipeopt::RuntimeDecls decls;
  const MicrobatchPolicy &policy;
  LoweringResults &results;
  /// The module's optimizer updates within a call (update_every): no
  /// input is read once and shared.
  bool rereadWeights = false;
  /// pipe.input reads the runtime's data in place (input views).
  bool inputViews = false;
  /// Entry point function -> its state; `order` lists them as created.
  llvm::DenseMap<Operation *, EntryPoint> entries;
  SmallVector<func::FuncOp> order;

  /// The entry point whose body holds `op` (a program body op); null when
  /// `op` is in none (its program has not been converted).
  EntryPoint *entryOf(Operation *op) {
    auto it = entries.find(op->getParentOfType<func::FuncOp>());
    return it == entries.end() ? nullptr : &it->second;
  }

  /// An i64 constant.
  static Value i64(OpBuilder &b, Location loc, int64_t v) {
    return arith::ConstantIntOp::create(b, loc, v, 64);
  }

  /// Calls runtime function `base` (typed by `element` if non-null) and
  /// folds its status into `entry.pending` (the first nonzero status since
  /// the last check). With `check` (after every action's end), returns early
  /// with that status if it is nonzero: the rest of the block moves into a
  /// new block, where the rewriter continues.
  ///
  /// Checking once per action instead of after every call is enough: after
  /// the first error the rank's context is poisoned and every later runtime
  /// call returns at once without doing anything, so the calls up to the
  /// action's end are no-ops. It matters for compile time: every early exit
  /// frees all buffers live at that point, so checking after each of n calls
  /// with m live buffers (a model's weights) emitted O(n * m) frees (26,000
  /// in BERT-base's reference build, two thirds of its LLVM time).
  LogicalResult callAndCheck(ConversionPatternRewriter &rewriter,
                             EntryPoint &entry, Location loc, StringRef base,
                             Type element, ValueRange args,
                             bool check = false) {
    FailureOr<func::FuncOp> callee = decls.get(loc, base, element);
    if (failed(callee))
      return failure();
    auto call = func::CallOp::create(rewriter, loc, *callee, args);
    ++results.numCalls;
    Value status = call.getResult(0);
    Value zero = arith::ConstantIntOp::create(rewriter, loc, 0, 32);
    if (entry.pending) {
      Value earlier = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ne, entry.pending, zero);
      status = arith::SelectOp::create(rewriter, loc, earlier, entry.pending,
                                       status);
    }
    entry.pending = status;
    if (!check)
      return success();
    entry.pending = Value();
    Value failed = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ne, status, zero);
    Block *current = rewriter.getInsertionBlock();
    Block *cont = rewriter.splitBlock(current, rewriter.getInsertionPoint());
    rewriter.setInsertionPointToEnd(current);
    cf::CondBranchOp::create(rewriter, loc, failed, entry.exitBlock,
                             ValueRange{status}, cont, ValueRange{});
    rewriter.setInsertionPointToStart(cont);
    return success();
  }

  /// Allocates a buffer for `type`, lets runtime function `base` fill it and
  /// returns it as a tensor.
  FailureOr<Value> fill(ConversionPatternRewriter &rewriter, EntryPoint &entry,
                        Location loc, RankedTensorType type, StringRef base,
                        ArrayRef<int64_t> scalars) {
    auto bufType = MemRefType::get(type.getShape(), type.getElementType());
    Value buf = memref::AllocOp::create(rewriter, loc, bufType);
    Value unranked = memref::CastOp::create(
        rewriter, loc, UnrankedMemRefType::get(type.getElementType(), 0), buf);
    SmallVector<Value> args;
    for (int64_t s : scalars)
      args.push_back(i64(rewriter, loc, s));
    args.push_back(unranked);
    if (failed(callAndCheck(rewriter, entry, loc, base, type.getElementType(),
                            args)))
      return failure();
    return bufferization::ToTensorOp::create(rewriter, loc, type, buf,
                                             /*restrict=*/true,
                                             /*writable=*/true)
        .getResult();
  }

  /// A read-only tensor over the runtime's data of input `arg` for
  /// microbatch `mb`: `memref.get_global` of a placeholder declaration
  /// (pipeopt::kInputViewAttrName) that materializeInputViews() replaces
  /// by the view call once buffers are deallocated. The tensor is not
  /// writable: bufferization copies it before any in-place write, so the
  /// program never writes the runtime's memory. (A call here would return
  /// a buffer that ownership-based deallocation frees.)
  Value view(ConversionPatternRewriter &rewriter, EntryPoint &entry,
             Location loc, RankedTensorType type, int64_t arg, int64_t mb) {
    auto [it, isNew] = entry.views.try_emplace({arg, mb}, Value());
    if (!isNew)
      return it->second;
    auto bufType = MemRefType::get(type.getShape(), type.getElementType());
    // A new placeholder per (argument, microbatch, rank); SymbolTable
    // renames it if the module already has the symbol.
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToStart(module.getBody());
    auto global = memref::GlobalOp::create(
        b, loc,
        "pipeopt_input_view_a" + std::to_string(arg) + "_m" +
            std::to_string(mb) + "_r" + std::to_string(entry.rank),
        b.getStringAttr("private"), bufType, Attribute(),
        /*constant=*/false, /*alignment=*/nullptr);
    global->setAttr(pipeopt::kInputViewAttrName,
                    b.getDenseI64ArrayAttr({arg, mb}));
    StringAttr name = symbols.insert(global);
    Value buf =
        memref::GetGlobalOp::create(rewriter, loc, bufType, name.getValue());
    Value t = bufferization::ToTensorOp::create(rewriter, loc, type, buf,
                                                /*restrict=*/true,
                                                /*writable=*/false);
    it->second = t;
    return t;
  }

  /// Passes the buffer of tensor `value` to runtime function `base`.
  LogicalResult drain(ConversionPatternRewriter &rewriter, EntryPoint &entry,
                      Location loc, Value value, StringRef base,
                      ArrayRef<int64_t> scalars) {
    auto type = cast<RankedTensorType>(value.getType());
    // A fully dynamic layout accepts whatever buffer the producer bufferizes
    // to without a copy; the runtime honours strides.
    auto bufType = MemRefType::get(
        type.getShape(), type.getElementType(),
        StridedLayoutAttr::get(
            rewriter.getContext(), ShapedType::kDynamic,
            SmallVector<int64_t>(type.getRank(), ShapedType::kDynamic)));
    Value buf = bufferization::ToBufferOp::create(rewriter, loc, bufType, value,
                                                  /*read_only=*/true);
    Value unranked = memref::CastOp::create(
        rewriter, loc, UnrankedMemRefType::get(type.getElementType(), 0), buf);
    SmallVector<Value> args;
    for (int64_t s : scalars)
      args.push_back(i64(rewriter, loc, s));
    args.push_back(unranked);
    return callAndCheck(rewriter, entry, loc, base, type.getElementType(),
                        args);
  }

  /// After an action with `pipe.stash_bytes`: tells the runtime how many
  /// activation bytes the rank still holds for (stage, microbatch).
  LogicalResult reportStash(ConversionPatternRewriter &rewriter,
                            EntryPoint &entry, Operation *op, int64_t stage,
                            int64_t mb) {
    auto bytes = op->getAttrOfType<IntegerAttr>(
        pipe::PipeDialect::StashBytesAttrHelper::getNameStr());
    if (!bytes)
      return success();
    Location loc = op->getLoc();
    return callAndCheck(rewriter, entry, loc, "pipeopt_rt_stash", Type(),
                        {i64(rewriter, loc, stage), i64(rewriter, loc, mb),
                         i64(rewriter, loc, bytes.getInt())});
  }

  /// Records (stage, mb) as the forward of `rank` (the input is checked:
  /// one rank per forward).
  void recordForward(int64_t rank, int64_t stage, int64_t mb) {
    results.actions[rank].push_back({0, stage, mb});
    results.forwardRank.try_emplace({stage, mb}, rank);
    results.numStages = std::max(results.numStages, stage + 1);
  }
};

/// A pattern of this conversion: an OpConversionPattern with the state.
template <typename Op>
struct StatefulPattern : OpConversionPattern<Op> {
  StatefulPattern(MLIRContext *ctx, LoweringState &state)
      : OpConversionPattern<Op>(ctx), state(state) {}
  LoweringState &state;
};

/// pipe.program -> `func.func @pipeopt_rank_<r>() -> i32`: the body becomes
/// the entry block, an exit block returns the status. The final branch to
/// the exit is added once the body is converted (finishEntryPoints()).
struct ProgramPattern : StatefulPattern<pipe::ProgramOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(pipe::ProgramOp program, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = program.getLoc();
    MLIRContext *ctx = program.getContext();
    auto i32 = IntegerType::get(ctx, 32);
    auto fn = func::FuncOp::create(
        rewriter, loc, pipeopt::runtimeEntryPointName(program.getRank()),
        FunctionType::get(ctx, {}, {i32}));
    fn.setPublic();
    rewriter.inlineRegionBefore(program.getBody(), fn.getBody(),
                                fn.getBody().end());
    Block *exitBlock =
        rewriter.createBlock(&fn.getBody(), fn.getBody().end(), {i32}, {loc});
    func::ReturnOp::create(rewriter, loc, exitBlock->getArgument(0));
    EntryPoint entry{int64_t(program.getRank()), loc, exitBlock, Value(), {}};
    state.entries.try_emplace(fn, std::move(entry));
    state.order.push_back(fn);
    rewriter.eraseOp(program);
    return success();
  }
};

/// pipe.input -> a read-only view of the runtime's data (input views), or
/// pipeopt_rt_input_<T> into a new buffer; a shared input (not per
/// microbatch) is read once per entry point.
struct InputPattern : StatefulPattern<pipe::InputOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(pipe::InputOp input, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    EntryPoint *entryPtr = state.entryOf(input);
    if (!entryPtr)
      return rewriter.notifyMatchFailure(input, "not in a converted program");
    EntryPoint &entry = *entryPtr;
    auto type = cast<RankedTensorType>(input.getType());
    int64_t arg = input.getArgument();
    state.results.inputs.try_emplace(arg, BoundaryTensor{type});
    // Asynchronous training updates weights within a call: every
    // microbatch reads them anew (and keeps its version for its backward).
    bool shared =
        !state.policy.isMicrobatched(arg, type) && !state.rereadWeights;
    if (shared) {
      if (Value v = entry.sharedInputs.lookup(arg)) {
        rewriter.replaceOp(input, v);
        return success();
      }
    }
    if (state.inputViews && pipeopt::runtimeDTypeName(type.getElementType())) {
      Value v = state.view(rewriter, entry, input.getLoc(), type, arg,
                           int64_t(input.getMicrobatch()));
      if (shared)
        entry.sharedInputs[arg] = v;
      rewriter.replaceOp(input, v);
      return success();
    }
    FailureOr<Value> t =
        state.fill(rewriter, entry, input.getLoc(), type, "pipeopt_rt_input",
                   {arg, int64_t(input.getMicrobatch())});
    if (failed(t))
      return failure();
    if (shared)
      entry.sharedInputs[arg] = *t;
    rewriter.replaceOp(input, *t);
    return success();
  }
};

/// The scalars naming a transfer: peer, src stage, dst stage, microbatch,
/// value, backward.
SmallVector<int64_t> transferScalars(int64_t peer, pipe::TagAttr tag) {
  return {peer,
          tag.getSrcStage(),
          tag.getDstStage(),
          tag.getMicrobatch(),
          tag.getValueIndex(),
          tag.getDirection() == pipe::Direction::Backward ? 1 : 0};
}

/// pipe.recv -> pipeopt_rt_recv_<T> into a new buffer.
struct RecvPattern : StatefulPattern<pipe::RecvOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(pipe::RecvOp recv, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    EntryPoint *entry = state.entryOf(recv);
    if (!entry)
      return rewriter.notifyMatchFailure(recv, "not in a converted program");
    FailureOr<Value> t = state.fill(
        rewriter, *entry, recv.getLoc(), cast<RankedTensorType>(recv.getType()),
        "pipeopt_rt_recv", transferScalars(recv.getPeer(), recv.getTag()));
    if (failed(t))
      return failure();
    rewriter.replaceOp(recv, *t);
    return success();
  }
};

/// pipe.send -> pipeopt_rt_send_<T> of the value's buffer.
struct SendPattern : StatefulPattern<pipe::SendOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(pipe::SendOp send, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    EntryPoint *entry = state.entryOf(send);
    if (!entry)
      return rewriter.notifyMatchFailure(send, "not in a converted program");
    if (failed(state.drain(rewriter, *entry, send.getLoc(), adaptor.getValue(),
                           "pipeopt_rt_send",
                           transferScalars(send.getPeer(), send.getTag()))))
      return failure();
    rewriter.eraseOp(send);
    return success();
  }
};

/// pipe.output -> pipeopt_rt_output_<T> of the value's buffer.
struct OutputPattern : StatefulPattern<pipe::OutputOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(pipe::OutputOp output, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    EntryPoint *entry = state.entryOf(output);
    if (!entry)
      return rewriter.notifyMatchFailure(output, "not in a converted program");
    auto type = cast<RankedTensorType>(output.getValue().getType());
    state.results.outputs.try_emplace(
        output.getResult(),
        BoundaryOutput{BoundaryTensor{type}, output.getReduce().has_value(),
                       output.getNameAttr() ? output.getName()->str() : ""});
    if (failed(state.drain(
            rewriter, *entry, output.getLoc(), adaptor.getValue(),
            "pipeopt_rt_output",
            {int64_t(output.getResult()), int64_t(output.getMicrobatch())})))
      return failure();
    rewriter.eraseOp(output);
    return success();
  }
};

/// pipe.forward -> action_begin(F), func.call of the stage, action_end(F)
/// (checked), then the stash report.
struct ForwardPattern : StatefulPattern<pipe::ForwardOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(pipe::ForwardOp forward, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    EntryPoint *entryPtr = state.entryOf(forward);
    if (!entryPtr)
      return rewriter.notifyMatchFailure(forward, "not in a converted program");
    EntryPoint &entry = *entryPtr;
    Location loc = forward.getLoc();
    int64_t stage = forward.getStage();
    int64_t mb = forward.getMicrobatch();
    Value kind = LoweringState::i64(rewriter, loc, /*PIPEOPT_RT_ACTION_F=*/0);
    if (failed(state.callAndCheck(
            rewriter, entry, loc, "pipeopt_rt_action_begin", Type(),
            {kind, LoweringState::i64(rewriter, loc, stage),
             LoweringState::i64(rewriter, loc, mb)})))
      return failure();
    auto call =
        func::CallOp::create(rewriter, loc, forward.getCalleeAttr(),
                             forward.getResultTypes(), adaptor.getArgs());
    kind = LoweringState::i64(rewriter, loc, 0);
    if (failed(state.callAndCheck(
            rewriter, entry, loc, "pipeopt_rt_action_end", Type(),
            {kind, LoweringState::i64(rewriter, loc, stage),
             LoweringState::i64(rewriter, loc, mb)},
            /*check=*/true)))
      return failure();
    state.recordForward(entry.rank, stage, mb);
    if (failed(state.reportStash(rewriter, entry, forward, stage, mb)))
      return failure();
    rewriter.replaceOp(forward, call.getResults());
    return success();
  }
};

/// pipe.backward -> action_begin(B | W | BW), func.call of its callee,
/// action_end (checked), then the stash report.
struct BackwardPattern : StatefulPattern<pipe::BackwardOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(pipe::BackwardOp backward, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    EntryPoint *entryPtr = state.entryOf(backward);
    if (!entryPtr)
      return rewriter.notifyMatchFailure(backward,
                                         "not in a converted program");
    EntryPoint &entry = *entryPtr;
    Location loc = backward.getLoc();
    int64_t stage = backward.getStage();
    int64_t mb = backward.getMicrobatch();
    int64_t kind = backward.getKind() == pipe::BackwardKind::Input    ? 1
                   : backward.getKind() == pipe::BackwardKind::Weight ? 2
                                                                      : 3;
    auto scalars = [&] {
      return SmallVector<Value>{LoweringState::i64(rewriter, loc, kind),
                                LoweringState::i64(rewriter, loc, stage),
                                LoweringState::i64(rewriter, loc, mb)};
    };
    if (failed(state.callAndCheck(rewriter, entry, loc,
                                  "pipeopt_rt_action_begin", Type(),
                                  scalars())))
      return failure();
    auto call =
        func::CallOp::create(rewriter, loc, *backward.getCallee(),
                             backward.getResultTypes(), adaptor.getArgs());
    if (failed(state.callAndCheck(rewriter, entry, loc, "pipeopt_rt_action_end",
                                  Type(), scalars(),
                                  /*check=*/true)))
      return failure();
    state.results.actions[entry.rank].push_back({kind, stage, mb});
    if (failed(state.reportStash(rewriter, entry, backward, stage, mb)))
      return failure();
    rewriter.replaceOp(backward, call.getResults());
    return success();
  }
};

/// pipe.gradient -> pipeopt_rt_gradient_<T> of the value's buffer.
struct GradientPattern : StatefulPattern<pipe::GradientOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(pipe::GradientOp gradient, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    EntryPoint *entryPtr = state.entryOf(gradient);
    if (!entryPtr)
      return rewriter.notifyMatchFailure(gradient,
                                         "not in a converted program");
    EntryPoint &entry = *entryPtr;
    int64_t arg = gradient.getArgument();
    auto type = cast<RankedTensorType>(gradient.getValue().getType());
    state.results.inputs.try_emplace(arg, BoundaryTensor{type});
    state.results.parameters[arg].insert(entry.rank);
    if (failed(state.drain(rewriter, entry, gradient.getLoc(),
                           adaptor.getValue(), "pipeopt_rt_gradient",
                           {arg, int64_t(gradient.getStage()),
                            int64_t(gradient.getMicrobatch())})))
      return failure();
    rewriter.eraseOp(gradient);
    return success();
  }
};

/// ml_program.global_load_const -> arith.constant of the global's initial
/// value (one-shot bufferization has no model for global_load_const; the
/// checks made sure the value is a dense attribute of the load's type).
struct GlobalLoadConstPattern
    : OpConversionPattern<ml_program::GlobalLoadConstOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ml_program::GlobalLoadConstOp load, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto global = SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(
        load, load.getGlobalAttr());
    auto value =
        global ? dyn_cast_or_null<DenseElementsAttr>(global.getValueAttr())
               : DenseElementsAttr();
    if (!value || value.getType() != load.getType())
      return rewriter.notifyMatchFailure(load, "no dense initial value");
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(load, value);
    return success();
  }
};

/// Ends every entry point's last body block with the branch to its exit
/// block, passing the pending status (0 when there is none).
void finishEntryPoints(LoweringState &state) {
  for (func::FuncOp fn : state.order) {
    EntryPoint &entry = state.entries.find(fn)->second;
    Block *last = entry.exitBlock->getPrevNode();
    OpBuilder b = OpBuilder::atBlockEnd(last);
    Value status = entry.pending
                       ? entry.pending
                       : arith::ConstantIntOp::create(b, entry.loc, 0, 32);
    cf::BranchOp::create(b, entry.loc, entry.exitBlock, ValueRange{status});
  }
}

} // namespace

LogicalResult pipeopt::pipe_to_runtime::lowerPrograms(
    ModuleOp module, ArrayRef<pipe::ProgramOp> byRank,
    const MicrobatchPolicy &policy, LoweringResults &results, bool inputViews) {
  MLIRContext *ctx = module.getContext();
  pipe::ProgramOp first = byRank.front();
  results.numRanks = first.getNumRanks();
  results.numMicrobatches = first.getNumMicrobatches();
  results.optimizer =
      pipe::PipeDialect::OptimizerAttrHelper(ctx).getAttr(module);
  for (pipe::ProgramOp p : module.getOps<pipe::ProgramOp>())
    if (p.getSchedule()) {
      results.schedule = p.getSchedule()->str();
      break;
    }

  LoweringState state(module, policy, results, inputViews);
  ConversionTarget target(*ctx);
  target.addIllegalDialect<pipe::PipeDialect>();
  target.addIllegalOp<ml_program::GlobalLoadConstOp>();
  target.addLegalDialect<
      arith::ArithDialect, bufferization::BufferizationDialect,
      cf::ControlFlowDialect, func::FuncDialect, memref::MemRefDialect>();
  // Everything else (the ops of stage functions and those between the
  // actions of a program) stays as it is.
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });

  RewritePatternSet patterns(ctx);
  patterns.add<ProgramPattern, InputPattern, RecvPattern, SendPattern,
               OutputPattern, ForwardPattern, BackwardPattern, GradientPattern>(
      ctx, state);
  patterns.add<GlobalLoadConstPattern>(ctx);
  if (failed(applyPartialConversion(module, target, std::move(patterns))))
    return failure();
  finishEntryPoints(state);
  return success();
}
