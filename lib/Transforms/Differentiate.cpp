//===- Differentiate.cpp - pipe-differentiate ---------------------*- C++ -*-===//
//
// Part of pipeopt. A thin adapter over pipeopt/Autodiff/Autodiff.h: picks the
// functions and their arguments, lowers TOSA in them, and records what was
// generated in `pipe.gradient`.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Transforms/Passes.h"

#include "pipeopt/Analysis/Parameters.h"
#include "pipeopt/Autodiff/Autodiff.h"
#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

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

FailureOr<IndexOption> parseIndexOption(Location loc, StringRef name,
                                        StringRef text) {
  IndexOption o;
  text = text.trim();
  if (text.empty() || text == "auto")
    return o;
  if (text == "all") {
    o.kind = IndexOption::All;
    return o;
  }
  if (text == "none") {
    o.kind = IndexOption::None;
    return o;
  }
  o.kind = IndexOption::List;
  SmallVector<StringRef> parts;
  text.split(parts, ',');
  for (StringRef p : parts) {
    unsigned v;
    if (p.trim().getAsInteger(10, v))
      return emitError(loc) << kPass << name
                            << ": expected 'auto', 'all', 'none' or a "
                               "comma-separated list of argument indices, "
                               "got '"
                            << text << "'";
    if (llvm::is_contained(o.indices, v))
      return emitError(loc) << kPass << name << ": argument " << v
                            << " is listed twice";
    o.indices.push_back(v);
  }
  llvm::sort(o.indices);
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

struct DifferentiatePass
    : pipeopt::impl::DifferentiatePassBase<DifferentiatePass> {
  using Base::Base;
  void runOnOperation() override;

  LogicalResult differentiateOne(func::FuncOp f, bool isLastStage,
                                 const IndexOption &trainableOpt,
                                 const IndexOption &dataOpt,
                                 autodiff::Recompute recomputeKind);
};

} // namespace

LogicalResult DifferentiatePass::differentiateOne(
    func::FuncOp f, bool isLastStage, const IndexOption &trainableOpt,
    const IndexOption &dataOpt, autodiff::Recompute recomputeKind) {
  Builder b(f->getContext());
  FunctionType type = f.getFunctionType();
  unsigned numArgs = type.getNumInputs();
  for (auto [o, name] : {std::pair{&trainableOpt, "trainable"},
                         std::pair{&dataOpt, "microbatch-args"}})
    for (unsigned i : o->indices)
      if (i >= numArgs)
        return f.emitError() << kPass << name << ": argument " << i
                             << " does not exist: @" << f.getSymName()
                             << " has " << numArgs << " arguments";

  // Data arguments and weights.
  SmallVector<unsigned> data;
  switch (dataOpt.kind) {
  case IndexOption::Auto:
    data = cost::dataArguments(f);
    break;
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
  if (auto lifted = f->getAttrOfType<DenseI64ArrayAttr>(pipe::PipeDialect::LiftedConstantsAttrHelper::getNameStr()))
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
        return f.emitError() << kPass << "trainable argument " << i
                             << " of type " << type.getInput(i)
                             << " is not a floating-point tensor";
    trainable = trainableOpt.indices;
    break;
  }

  // The loss: given, the model's own, or none.
  StringRef lossName = "none";
  std::optional<autodiff::Loss> lossKind;
  if (loss != "none") {
    lossKind = autodiff::parseLoss(loss);
    if (!lossKind)
      return f.emitError() << kPass << "loss: expected 'none', 'mse' or "
                                       "'cross-entropy', got '"
                           << loss << "'";
    lossName = loss;
  } else if (type.getNumResults() == 1) {
    Type r = type.getResult(0);
    auto rt = dyn_cast<RankedTensorType>(r);
    if ((rt && isa<FloatType>(rt.getElementType()) && rt.hasStaticShape() &&
         rt.getNumElements() == 1) ||
        isa<FloatType>(r)) {
      lossKind = autodiff::Loss::Self;
      lossName = "self";
    }
  }
  if (lossKind && !isLastStage)
    lossKind.reset(), lossName = "none";

  std::string name = f.getSymName().str();
  func::FuncOp target = f;
  func::FuncOp lossFn;
  if (lossKind) {
    FailureOr<func::FuncOp> l =
        autodiff::buildLossFunction(f, *lossKind, name + "_loss");
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

  auto cleanup = [&]() {
    if (lossFn)
      lossFn.erase();
  };
  FailureOr<autodiff::Gradient> grad = autodiff::differentiate(target, options);
  if (failed(grad)) {
    cleanup();
    return failure();
  }
  func::FuncOp gradFn;
  if (lossFn) {
    FailureOr<func::FuncOp> g =
        autodiff::buildGradientFunction(lossFn, options, name + "_grad");
    if (failed(g)) {
      for (func::FuncOp fn : {grad->fwd, grad->bwd, grad->b, grad->w})
        fn.erase();
      cleanup();
      return failure();
    }
    gradFn = *g;
  }

  // Clean up the generated functions: the library leaves no dead code, but
  // repeated constants, empties and zero fills.
  OpPassManager pm(func::FuncOp::getOperationName());
  pm.addPass(createCSEPass());
  for (func::FuncOp fn : {grad->fwd, grad->bwd, grad->b, grad->w, lossFn,
                          gradFn})
    if (fn && failed(runPipeline(pm, fn)))
      return failure();

  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("wrt", indexArray(b, options.wrt)),
      b.getNamedAttr("trainable", indexArray(b, trainable)),
      b.getNamedAttr("data", indexArray(b, data)),
      b.getNamedAttr("seeded", indexArray(b, grad->seeded)),
      b.getNamedAttr("loss", b.getStringAttr(lossName)),
      b.getNamedAttr("num_saved", b.getI64IntegerAttr(grad->numSaved)),
      b.getNamedAttr("saved_bytes", b.getI64IntegerAttr(grad->savedBytes)),
      b.getNamedAttr("num_stash", b.getI64IntegerAttr(grad->numStash)),
      b.getNamedAttr("stash_bytes", b.getI64IntegerAttr(grad->stashBytes)),
      b.getNamedAttr("fwd", FlatSymbolRefAttr::get(grad->fwd)),
      b.getNamedAttr("bwd", FlatSymbolRefAttr::get(grad->bwd)),
      b.getNamedAttr("b", FlatSymbolRefAttr::get(grad->b)),
      b.getNamedAttr("w", FlatSymbolRefAttr::get(grad->w))};
  if (lossFn) {
    attrs.push_back(b.getNamedAttr("loss_fn", FlatSymbolRefAttr::get(lossFn)));
    attrs.push_back(b.getNamedAttr("grad", FlatSymbolRefAttr::get(gradFn)));
  }
  f->setAttr(pipe::PipeDialect::GradientAttrHelper::getNameStr(), b.getDictionaryAttr(attrs));
  return success();
}

void DifferentiatePass::runOnOperation() {
  ModuleOp module = getOperation();
  Location loc = module.getLoc();

  // Options.
  std::optional<autodiff::Recompute> recomputeKind =
      autodiff::parseRecompute(recompute);
  if (!recomputeKind) {
    emitError(loc) << kPass << "recompute: expected 'none', 'elementwise' or "
                               "'all', got '"
                   << recompute << "'";
    return signalPassFailure();
  }
  if (loss != "none" && !autodiff::parseLoss(loss)) {
    emitError(loc) << kPass << "loss: expected 'none', 'mse' or "
                               "'cross-entropy', got '"
                   << loss << "'";
    return signalPassFailure();
  }
  FailureOr<IndexOption> trainableOpt =
      parseIndexOption(loc, "trainable", trainable);
  FailureOr<IndexOption> dataOpt =
      parseIndexOption(loc, "microbatch-args", microbatchArgs);
  if (failed(trainableOpt) || failed(dataOpt))
    return signalPassFailure();

  // Functions.
  SmallVector<func::FuncOp> targets;
  if (!functions.empty()) {
    SmallVector<StringRef> names;
    StringRef(functions).split(names, ',', -1, false);
    for (StringRef n : names) {
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
      if (!fn.isExternal() && fn->hasAttr(pipe::PipeDialect::StageAttrHelper::getNameStr()))
        targets.push_back(fn);
    if (targets.empty()) {
      // Functions an earlier run generated are not candidates, so that a
      // second run names the differentiated model.
      llvm::StringSet<> generated;
      for (auto fn : module.getOps<func::FuncOp>())
        if (auto info = fn->getAttrOfType<DictionaryAttr>(pipe::PipeDialect::GradientAttrHelper::getNameStr()))
          for (NamedAttribute a : info)
            if (auto ref = dyn_cast<FlatSymbolRefAttr>(a.getValue()))
              generated.insert(ref.getValue());
      SmallVector<func::FuncOp> candidates;
      for (auto fn : module.getOps<func::FuncOp>())
        if (fn.isPublic() && !fn.isExternal() &&
            !generated.contains(fn.getSymName()))
          candidates.push_back(fn);
      if (candidates.size() != 1) {
        InFlightDiagnostic diag =
            emitError(loc) << kPass << "expected one public function with a "
                                       "body to differentiate, found "
                           << candidates.size() << "; name them with "
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
    if (auto s = fn->getAttrOfType<IntegerAttr>(pipe::PipeDialect::StageAttrHelper::getNameStr()))
      lastStage = std::max(lastStage, s.getInt());

  for (func::FuncOp fn : targets) {
    if (fn->hasAttr(pipe::PipeDialect::GradientAttrHelper::getNameStr())) {
      fn.emitError() << kPass << "@" << fn.getSymName()
                     << " is already differentiated (it has pipe.gradient)";
      return signalPassFailure();
    }
    OpPassManager pm(func::FuncOp::getOperationName());
    autodiff::buildPrepareForDifferentiation(pm);
    if (failed(runPipeline(pm, fn)))
      return signalPassFailure();
    auto s = fn->getAttrOfType<IntegerAttr>(pipe::PipeDialect::StageAttrHelper::getNameStr());
    bool isLast = !s || s.getInt() == lastStage;
    if (failed(differentiateOne(fn, isLast, *trainableOpt, *dataOpt,
                                *recomputeKind)))
      return signalPassFailure();
  }
}
