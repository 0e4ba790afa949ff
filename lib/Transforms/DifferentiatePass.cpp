//===- DifferentiatePass.cpp - pipe-differentiate ---------------*- C++ -*-===//
//
// Part of pipeopt. A thin adapter over pipeopt/Autodiff/Autodiff.h: picks the
// functions and their arguments, lowers TOSA in them, and records what was
// generated in `pipe.gradient`.
//
// Stage functions are independent, so they are prepared and differentiated
// in parallel on the context's thread pool: each one's generated functions
// are built in a module of their own and moved next to it afterwards, in
// order, so that the output and the diagnostics do not depend on the
// threads (an error is reported as a sequential run would report it: that
// of the first failing function).
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Support/Plural.h"
#include "pipeopt/Transforms/Passes.h"

#include "pipeopt/Analysis/ArgumentSelection.h"
#include "pipeopt/Analysis/Parameters.h"
#include "pipeopt/Autodiff/Autodiff.h"
#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/CSE.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Mutex.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"

#include <atomic>
#include <limits>
#include <memory>

namespace pipeopt {
#define GEN_PASS_DEF_DIFFERENTIATEPASS
#include "pipeopt/Transforms/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;
using namespace pipeopt;

namespace {

constexpr const char *kPass = "pipe-differentiate: ";

/// "auto" | "all" | "none" | "I,J,...", checked against the arguments.
struct IndexOption {
  enum Kind { Auto, All, None, List } kind = Auto;
  SmallVector<unsigned> indices;
};

/// Parses list option `name` (pipeopt/Analysis/ArgumentSelection.h).
FailureOr<IndexOption> parseIndexOption(Location loc, StringRef name,
                                        ArrayRef<std::string> entries) {
  llvm::Expected<ArgumentSelection> sel =
      ArgumentSelection::parse(entries, name);
  if (!sel)
    return emitError(loc) << kPass << llvm::toString(sel.takeError());
  IndexOption o;
  switch (sel->kind) {
  case ArgumentSelection::Kind::Auto:
    o.kind = IndexOption::Auto;
    break;
  case ArgumentSelection::Kind::All:
    o.kind = IndexOption::All;
    break;
  case ArgumentSelection::Kind::None:
    o.kind = IndexOption::None;
    break;
  case ArgumentSelection::Kind::List:
    o.kind = IndexOption::List;
    for (int64_t i : sel->indices) {
      if (i > std::numeric_limits<unsigned>::max())
        return emitError(loc)
               << kPass << name << ": argument index " << i << " is too large";
      o.indices.push_back(unsigned(i));
    }
    break;
  }
  return o;
}

bool isFloatTensor(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt && isa<FloatType>(rt.getElementType());
}

DenseI64ArrayAttr indexArray(Builder &b, ArrayRef<unsigned> v) {
  SmallVector<int64_t> w(v.begin(), v.end());
  return b.getDenseI64ArrayAttr(w);
}

/// `work(0)`, ..., `work(n - 1)` on the context's thread pool (one after
/// the other in index order when multithreading is disabled). Fails if one
/// fails. The diagnostics are those a sequential loop stopping at the first
/// failure would emit, in its order: each item's are held back, then those
/// of the items up to the first failing one are emitted. Items after a
/// failed one are not started.
LogicalResult forEachInOrder(MLIRContext *ctx, unsigned n,
                             llvm::function_ref<LogicalResult(unsigned)> work) {
  if (!ctx->isMultithreadingEnabled() || n <= 1) {
    for (unsigned i = 0; i < n; ++i)
      if (failed(work(i)))
        return failure();
    return success();
  }
  std::vector<std::vector<Diagnostic>> held(n);
  llvm::sys::SmartMutex<true> mutex;
  DenseMap<uint64_t, unsigned> itemOfThread;
  std::atomic<unsigned> next(0), firstFailure(n);
  {
    ScopedDiagnosticHandler hold(ctx, [&](Diagnostic &d) -> LogicalResult {
      llvm::sys::SmartScopedLock<true> lock(mutex);
      auto it = itemOfThread.find(llvm::get_threadid());
      if (it == itemOfThread.end())
        return failure(); // not from an item: the next handler's
      held[it->second].push_back(std::move(d));
      return success();
    });
    auto worker = [&] {
      for (;;) {
        unsigned i = next++;
        if (i >= n || i > firstFailure)
          return;
        {
          llvm::sys::SmartScopedLock<true> lock(mutex);
          itemOfThread[llvm::get_threadid()] = i;
        }
        bool ok = succeeded(work(i));
        {
          llvm::sys::SmartScopedLock<true> lock(mutex);
          itemOfThread.erase(llvm::get_threadid());
        }
        if (!ok) {
          unsigned f = firstFailure;
          while (i < f && !firstFailure.compare_exchange_weak(f, i))
            ;
        }
      }
    };
    llvm::ThreadPoolInterface &pool = ctx->getThreadPool();
    llvm::ThreadPoolTaskGroup group(pool);
    unsigned workers = std::min<unsigned>(n, pool.getMaxConcurrency());
    for (unsigned t = 0; t < workers; ++t)
      group.async(worker);
    group.wait();
  }
  unsigned last = std::min<unsigned>(firstFailure, n - 1);
  for (unsigned i = 0; i <= last; ++i)
    for (Diagnostic &d : held[i])
      ctx->getDiagEngine().emit(std::move(d));
  return failure(firstFailure < n);
}

/// One copy of a func.func pass pipeline per thread that may run it (a
/// pipeline must not run on two functions at once). The copies are
/// pass managers of their own, without verification: the pass manager
/// running pipe-differentiate verifies its result, which includes the
/// lowered functions.
class PipelineCopies {
public:
  PipelineCopies(MLIRContext *ctx,
                 llvm::function_ref<void(OpPassManager &)> build) {
    unsigned n = ctx->isMultithreadingEnabled()
                     ? ctx->getThreadPool().getMaxConcurrency()
                     : 1;
    for (unsigned i = 0; i < n; ++i) {
      copies.push_back(
          std::make_unique<PassManager>(ctx, func::FuncOp::getOperationName()));
      copies.back()->enableVerifier(false);
      build(*copies.back());
    }
    busy = std::make_unique<std::atomic<bool>[]>(n);
    for (unsigned i = 0; i < n; ++i)
      busy[i] = false;
  }

  /// Runs the pipeline on `fn` with a copy no other thread is using.
  LogicalResult run(func::FuncOp fn) {
    for (;;)
      for (unsigned i = 0; i < copies.size(); ++i) {
        bool expected = false;
        if (!busy[i].compare_exchange_strong(expected, true))
          continue;
        LogicalResult result = copies[i]->run(fn);
        busy[i] = false;
        return result;
      }
  }

private:
  SmallVector<std::unique_ptr<PassManager>> copies;
  std::unique_ptr<std::atomic<bool>[]> busy;
};

/// What differentiating one function produced: the generated functions
/// (after a clone of the function, which is not kept) and the function's
/// pipe.gradient.
struct Generated {
  OwningOpRef<ModuleOp> module;
  pipe::GradientAttr info;
};

struct DifferentiatePass
    : pipeopt::impl::DifferentiatePassBase<DifferentiatePass> {
  using Base::Base;
  void runOnOperation() override;

  /// The pass's dialects and those of the TOSA lowering it runs (all must
  /// be loaded before functions are lowered in parallel).
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    OpPassManager pm(func::FuncOp::getOperationName());
    autodiff::buildPrepareForDifferentiation(pm);
    pm.getDependentDialects(registry);
  }

  /// Differentiates `f` into `out` (f itself is only read); `taken` are the
  /// module's symbol names.
  LogicalResult differentiateOne(func::FuncOp f, bool isLastStage,
                                 const IndexOption &trainableOpt,
                                 const IndexOption &dataOpt,
                                 autodiff::Recompute recomputeKind,
                                 const llvm::StringSet<> &taken,
                                 Generated &out);
};

/// The error the library gives for a generated name that exists.
LogicalResult checkFree(func::FuncOp f, const llvm::StringSet<> &taken,
                        ArrayRef<std::string> names) {
  for (const std::string &n : names)
    if (taken.contains(n))
      return f.emitError() << kPass << "cannot create @" << n
                           << ": the symbol already exists";
  return success();
}

} // namespace

LogicalResult DifferentiatePass::differentiateOne(
    func::FuncOp f, bool isLastStage, const IndexOption &trainableOpt,
    const IndexOption &dataOpt, autodiff::Recompute recomputeKind,
    const llvm::StringSet<> &taken, Generated &out) {
  Builder b(f->getContext());
  FunctionType type = f.getFunctionType();
  unsigned numArgs = type.getNumInputs();
  for (auto [o, name] : {std::pair{&trainableOpt, "trainable"},
                         std::pair{&dataOpt, "microbatch-args"}})
    for (unsigned i : o->indices)
      if (i >= numArgs)
        return f.emitError()
               << kPass << name << ": argument " << i << " does not exist: @"
               << f.getSymName() << " has " << countOf(numArgs, "argument");

  // Data arguments and weights.
  SmallVector<unsigned> data;
  switch (dataOpt.kind) {
  case IndexOption::Auto: {
    std::string undecided;
    data = cost::dataArguments(f, &undecided);
    if (!undecided.empty())
      return f.emitError() << kPass << "cannot tell the per-example data of @"
                           << f.getSymName() << ": " << undecided
                           << "; name the data arguments with microbatch-args "
                              "(pipeopt-compile --microbatch-args=I,J)";
    break;
  }
  case IndexOption::All:
    for (unsigned i = 0; i < numArgs; ++i)
      data.push_back(i);
    break;
  case IndexOption::None:
    break;
  case IndexOption::List:
    data = dataOpt.indices;
    break;
  }
  // Constants pipe-lift-constants made arguments are weights, never data.
  if (auto lifted = f->getAttrOfType<DenseI64ArrayAttr>(
          pipe::PipeDialect::LiftedConstantsAttrHelper::getNameStr()))
    llvm::erase_if(data, [&](unsigned i) {
      return llvm::is_contained(lifted.asArrayRef(), int64_t(i));
    });
  SmallVector<unsigned> trainable;
  switch (trainableOpt.kind) {
  case IndexOption::Auto:
    for (unsigned i = 0; i < numArgs; ++i)
      if (isFloatTensor(type.getInput(i)) && !llvm::is_contained(data, i))
        trainable.push_back(i);
    break;
  case IndexOption::All:
    for (unsigned i = 0; i < numArgs; ++i)
      if (isFloatTensor(type.getInput(i)))
        trainable.push_back(i);
    break;
  case IndexOption::None:
    break;
  case IndexOption::List:
    for (unsigned i : trainableOpt.indices)
      if (!isFloatTensor(type.getInput(i)))
        return f.emitError()
               << kPass << "trainable argument " << i << " of type "
               << type.getInput(i) << " is not a floating-point tensor";
    trainable = trainableOpt.indices;
    break;
  }

  // The loss: given, the model's own, or none.
  pipe::LossKind lossName = loss;
  std::optional<autodiff::Loss> lossKind;
  if (loss == pipe::LossKind::MSE) {
    lossKind = autodiff::Loss::MSE;
  } else if (loss == pipe::LossKind::CrossEntropy) {
    lossKind = autodiff::Loss::CrossEntropy;
  } else if (type.getNumResults() == 1) {
    Type r = type.getResult(0);
    auto rt = dyn_cast<RankedTensorType>(r);
    if ((rt && isa<FloatType>(rt.getElementType()) && rt.hasStaticShape() &&
         rt.getNumElements() == 1) ||
        isa<FloatType>(r)) {
      lossKind = autodiff::Loss::Self;
      lossName = pipe::LossKind::Self;
    }
  }
  if (lossKind && !isLastStage)
    lossKind.reset(), lossName = pipe::LossKind::None;

  // The library puts what it generates next to the function it is given:
  // a clone of f in a module of its own, so that functions are
  // differentiated in parallel. The names it checks there are checked
  // against f's module first, at the same points.
  bool oneBlock = !f.isExternal() && f.getBody().hasOneBlock();
  std::string name = f.getSymName().str();
  out.module = ModuleOp::create(f.getLoc());
  OpBuilder sb = OpBuilder::atBlockEnd(out.module->getBody());
  auto fc = cast<func::FuncOp>(sb.clone(*f));
  func::FuncOp target = fc;
  func::FuncOp lossFn;
  if (lossKind) {
    if (oneBlock && failed(checkFree(f, taken, {name + "_loss"})))
      return failure();
    FailureOr<func::FuncOp> l =
        autodiff::buildLossFunction(fc, *lossKind, name + "_loss");
    if (failed(l))
      return failure();
    lossFn = *l;
    target = lossFn;
  }
  // Every floating-point tensor argument of the target is differentiated
  // (the target of a loss is not).
  autodiff::Options options;
  options.prefix = name;
  options.recompute = recomputeKind;
  for (unsigned i = 0; i < numArgs; ++i)
    if (isFloatTensor(type.getInput(i)))
      options.wrt.push_back(i);
  options.weights = trainable;

  // On failure the partial functions go with out.module.
  if (oneBlock &&
      failed(checkFree(
          f, taken, {name + "_fwd", name + "_bwd", name + "_b", name + "_w"})))
    return failure();
  FailureOr<autodiff::Gradient> grad = autodiff::differentiate(target, options);
  if (failed(grad))
    return failure();
  func::FuncOp gradFn;
  if (lossFn) {
    if (failed(checkFree(f, taken, {name + "_grad"})))
      return failure();
    FailureOr<func::FuncOp> g =
        autodiff::buildGradientFunction(lossFn, options, name + "_grad");
    if (failed(g))
      return failure();
    gradFn = *g;
  }

  auto ref = [](func::FuncOp fn) {
    return fn ? FlatSymbolRefAttr::get(fn) : FlatSymbolRefAttr();
  };
  out.info = pipe::GradientAttr::get(
      f->getContext(), lossName, indexArray(b, options.wrt),
      indexArray(b, trainable), indexArray(b, data),
      indexArray(b, grad->seeded), int64_t(grad->numSaved), grad->savedBytes,
      int64_t(grad->numStash), grad->stashBytes, ref(grad->fwd), ref(grad->bwd),
      ref(grad->b), ref(grad->w), ref(lossFn), ref(gradFn));
  return success();
}

void DifferentiatePass::runOnOperation() {
  ModuleOp module = getOperation();
  Location loc = module.getLoc();
  pipe::PipeDialect::GradientAttrHelper gradientAttr(&getContext());

  // Options.
  // loss and recompute are enum options: the option parser rejects other
  // values.
  std::optional<autodiff::Recompute> recomputeKind = recompute.getValue();
  FailureOr<IndexOption> trainableOpt =
      parseIndexOption(loc, "trainable", trainable);
  FailureOr<IndexOption> dataOpt =
      parseIndexOption(loc, "microbatch-args", microbatchArgs);
  if (failed(trainableOpt) || failed(dataOpt))
    return signalPassFailure();

  // Functions.
  SmallVector<func::FuncOp> targets;
  if (!functions.empty()) {
    for (StringRef n : functions) {
      if (n.trim().empty())
        continue;
      if (llvm::any_of(targets, [&](func::FuncOp t) {
            return t.getSymName() == n.trim();
          })) {
        emitError(loc) << kPass << "functions: @" << n.trim()
                       << " is listed twice";
        return signalPassFailure();
      }
      auto fn = module.lookupSymbol<func::FuncOp>(n.trim());
      if (!fn || fn.isExternal()) {
        emitError(loc) << kPass << "no function @" << n.trim()
                       << " with a body in the module";
        return signalPassFailure();
      }
      targets.push_back(fn);
    }
  } else {
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal() &&
          fn->hasAttr(pipe::PipeDialect::StageAttrHelper::getNameStr()))
        targets.push_back(fn);
    if (targets.empty()) {
      // Functions an earlier run generated are not candidates, so that a
      // second run names the differentiated model.
      llvm::StringSet<> generated;
      for (auto fn : module.getOps<func::FuncOp>())
        if (auto info = gradientAttr.getAttr(fn))
          for (FlatSymbolRefAttr ref :
               {info.getFwd(), info.getBwd(), info.getB(), info.getW(),
                info.getLossFn(), info.getGrad()})
            if (ref)
              generated.insert(ref.getValue());
      SmallVector<func::FuncOp> candidates;
      for (auto fn : module.getOps<func::FuncOp>())
        if (fn.isPublic() && !fn.isExternal() &&
            !generated.contains(fn.getSymName()))
          candidates.push_back(fn);
      if (candidates.size() != 1) {
        InFlightDiagnostic diag = emitError(loc)
                                  << kPass
                                  << "expected one public function with a "
                                     "body to differentiate, found "
                                  << candidates.size()
                                  << "; name them with "
                                     "functions=f,g";
        for (auto fn : candidates)
          diag.attachNote(fn.getLoc()) << "candidate @" << fn.getSymName();
        return signalPassFailure();
      }
      targets = candidates;
    }
  }
  // The last stage (largest pipe.stage) takes the loss.
  int64_t lastStage = -1;
  for (func::FuncOp fn : targets)
    if (auto s = fn->getAttrOfType<IntegerAttr>(
            pipe::PipeDialect::StageAttrHelper::getNameStr()))
      lastStage = std::max(lastStage, s.getInt());

  // Lower and differentiate every target, in parallel.
  MLIRContext *ctx = &getContext();
  llvm::StringSet<> taken;
  for (Operation &op : module.getBody()->getOperations())
    if (auto sym =
            op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName()))
      taken.insert(sym.getValue());
  PipelineCopies prepare(ctx, autodiff::buildPrepareForDifferentiation);
  std::vector<Generated> generated(targets.size());
  if (failed(forEachInOrder(ctx, targets.size(), [&](unsigned i) {
        func::FuncOp fn = targets[i];
        if (gradientAttr.isAttrPresent(fn))
          return LogicalResult(fn.emitError()
                               << kPass << "@" << fn.getSymName()
                               << " is already differentiated (it has "
                                  "pipe.gradient)");
        // The lowering's input was verified (by the parser or the previous
        // pass); the lowered function stays in the module, so the pass
        // manager's verification after this pass checks it, with the rest.
        if (failed(prepare.run(fn)))
          return failure();
        // Common subexpressions of the lowered function are removed once
        // here rather than in each function generated from it (F is a copy
        // of it, B+W recomputes it): the lowering leaves repeated
        // constants, empties and identical element-wise ops.
        IRRewriter rewriter(ctx);
        {
          DominanceInfo dominance(fn);
          eliminateCommonSubExpressions(rewriter, dominance, fn);
        }
        auto s = fn->getAttrOfType<IntegerAttr>(
            pipe::PipeDialect::StageAttrHelper::getNameStr());
        bool isLast = !s || s.getInt() == lastStage;
        Generated &gen = generated[i];
        if (failed(differentiateOne(fn, isLast, *trainableOpt, *dataOpt,
                                    *recomputeKind, taken, gen)))
          return failure();
        // Clean up the generated functions the library does not: it leaves
        // no dead code, and no common subexpressions in B+W, B and W, but
        // the loss and gradient functions may repeat constants of the
        // function. Without a loss, F is a copy of the function, which has
        // none (removed above).
        llvm::SmallDenseSet<StringRef, 4> clean;
        for (FlatSymbolRefAttr ref :
             {gen.info.getBwd(), gen.info.getB(), gen.info.getW()})
          clean.insert(ref.getValue());
        if (!gen.info.getLossFn())
          clean.insert(gen.info.getFwd().getValue());
        for (Operation &op : llvm::drop_begin(*gen.module->getBody())) {
          if (clean.contains(cast<func::FuncOp>(op).getSymName()))
            continue;
          DominanceInfo dominance(&op);
          eliminateCommonSubExpressions(rewriter, dominance, &op);
        }
        return success();
      })))
    return signalPassFailure();

  // Move the generated functions next to their function, in order.
  for (auto [fn, gen] : llvm::zip(targets, generated)) {
    Block::iterator pos = std::next(Block::iterator(fn));
    // The first op is the clone of fn.
    for (Operation &op :
         llvm::make_early_inc_range(llvm::drop_begin(*gen.module->getBody())))
      op.moveBefore(module.getBody(), pos);
    gradientAttr.setAttr(fn, gen.info);
  }
}
