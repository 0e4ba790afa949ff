//===- PrepareTrainingPass.cpp - the function a training build compiles ---===//
//
// Part of pipeopt. pipe-prepare-training (Passes.td): differentiates the
// model function with pipe-differentiate and prepares either its loss
// function (pipelined builds: the front half partitions and schedules it)
// or its one-microbatch training step (the unpartitioned reference).
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Analysis/ArgumentSelection.h"
#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"
#include "pipeopt/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"

namespace pipeopt {
#define GEN_PASS_DEF_PREPARETRAININGPASS
#include "pipeopt/Transforms/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;
using namespace pipeopt;

namespace {

constexpr llvm::StringLiteral kGradientAttr =
    pipe::PipeDialect::GradientAttrHelper::getNameStr();

struct PrepareTrainingPass
    : pipeopt::impl::PrepareTrainingPassBase<PrepareTrainingPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  /// Runs pipe-prepare (pipelined builds) and pipe-differentiate on @f with
  /// this pass's options.
  LogicalResult differentiate(ModuleOp module);
  /// The trainable arguments pipe-differentiate chose (`info` = the
  /// pipe.gradient of `model`): none is an error (training would change
  /// nothing), and so is data among them (its value differs per
  /// microbatch).
  LogicalResult checkTrainable(func::FuncOp model, pipe::GradientAttr info);
  LogicalResult buildLossFunction(ModuleOp module, func::FuncOp model,
                                  pipe::GradientAttr info);
  LogicalResult buildTrainingStep(ModuleOp module, func::FuncOp model,
                                  pipe::GradientAttr info);
};

} // namespace

LogicalResult PrepareTrainingPass::differentiate(ModuleOp module) {
  DifferentiatePassOptions options;
  options.functions = {function};
  options.loss = loss;
  options.trainable.assign(trainable.begin(), trainable.end());
  options.microbatchArgs.assign(microbatchArgs.begin(), microbatchArgs.end());
  options.recompute = recompute;
  OpPassManager pm(ModuleOp::getOperationName());
  if (!reference)
    pm.addPass(createPreparePass());
  pm.addPass(createDifferentiatePass(options));
  return runPipeline(pm, module);
}

LogicalResult PrepareTrainingPass::checkTrainable(func::FuncOp model,
                                                  pipe::GradientAttr info) {
  DenseI64ArrayAttr t = info.getTrainable();
  DenseI64ArrayAttr data = info.getData();
  if (!t || t.empty())
    return model.emitError()
           << "@" << model.getSymName()
           << " has no trainable argument (trainable "
           << formatArgumentList(trainable)
           << "): training would change nothing. Its weights may be "
              "constants: make them arguments with pipeopt "
              "-pipe-lift-constants";
  if (data)
    for (int64_t i : t.asArrayRef())
      if (llvm::is_contained(data.asArrayRef(), i))
        return model.emitError()
               << "trainable argument " << i << " of @" << model.getSymName()
               << " is per-microbatch data (microbatch-args "
               << formatArgumentList(microbatchArgs) << "), not a parameter";
  return success();
}

/// Pipelined builds: the loss function `@f_loss(args..., [target]) ->
/// tensor<f32>` is what the front half partitions and schedules. Its data
/// arguments and target are marked pipe.microbatched and its trainable
/// arguments recorded as pipe.trainable (pipe-materialize-backward reads
/// both).
LogicalResult PrepareTrainingPass::buildLossFunction(ModuleOp module,
                                                     func::FuncOp model,
                                                     pipe::GradientAttr info) {
  FlatSymbolRefAttr lossRef = info.getLossFn();
  auto lossFn = lossRef ? module.lookupSymbol<func::FuncOp>(lossRef.getAttr())
                        : func::FuncOp();
  if (!lossFn)
    return model.emitError()
           << "@" << model.getSymName()
           << " has no loss to train: give loss=mse or loss=cross-entropy, "
              "or let the model return its loss as one f32 scalar "
              "(tensor<f32>)";
  Builder b(module.getContext());
  auto microbatched = pipe::PipeDialect::getMicrobatchedAttrName();
  if (lossFn.getNumArguments() > model.getNumArguments())
    lossFn.setArgAttr(lossFn.getNumArguments() - 1, microbatched,
                      b.getUnitAttr());
  if (DenseI64ArrayAttr data = info.getData())
    for (int64_t i : data.asArrayRef())
      lossFn.setArgAttr(i, microbatched, b.getUnitAttr());
  if (failed(checkTrainable(model, info)))
    return failure();
  if (DenseI64ArrayAttr t = info.getTrainable())
    lossFn->setAttr(pipe::PipeDialect::TrainableAttrHelper::getNameStr(), t);
  lossFn.setPublic();
  return success();
}

/// The reference: `@f_grad(args..., [target]) -> (loss, grad_i...)`, the
/// training step of one microbatch, returns the loss and the gradients of
/// the trainable arguments, named and averaged over microbatches.
LogicalResult PrepareTrainingPass::buildTrainingStep(ModuleOp module,
                                                     func::FuncOp model,
                                                     pipe::GradientAttr info) {
  MLIRContext *ctx = module.getContext();
  FlatSymbolRefAttr gradRef = info.getGrad();
  DenseI64ArrayAttr wrt = info.getWrt();
  pipe::LossKind lossKind = info.getLoss();
  if (!gradRef)
    return model.emitError()
           << "the model has no loss to differentiate (" << kGradientAttr
           << " of @" << model.getSymName()
           << " names no 'grad' function): give loss=mse or "
              "loss=cross-entropy, or let the model return its loss as one "
              "f32 scalar (tensor<f32>)";
  auto grad = module.lookupSymbol<func::FuncOp>(gradRef.getAttr());
  FunctionType modelType = model.getFunctionType();
  bool hasTarget = lossKind == pipe::LossKind::MSE ||
                   lossKind == pipe::LossKind::CrossEntropy;
  unsigned wantArgs = modelType.getNumInputs() + (hasTarget ? 1 : 0);
  if (!grad || grad.isExternal())
    return model.emitError()
           << kGradientAttr << " of @" << model.getSymName() << " names "
           << gradRef
           << " as its gradient function, but the module has no function "
              "with a body of that name";
  if (grad.getNumArguments() != wantArgs ||
      grad.getNumResults() != 1 + wrt.size())
    return model.emitError()
           << "the gradient function " << gradRef << " has type "
           << grad.getFunctionType() << ", but " << wantArgs
           << " arguments (the model's" << (hasTarget ? " and a target" : "")
           << ") and " << 1 + wrt.size()
           << " results (the loss and one gradient per 'wrt' index of "
           << kGradientAttr << ") were expected";
  if (optimizer && failed(checkTrainable(model, info)))
    return failure();
  // The outputs are the loss and the gradients of the trainable arguments
  // (grad_<i>); the data's gradients pipe-differentiate also computes are
  // dropped (and their code with them, as dead code).
  SmallVector<int64_t> outputWrt(wrt.asArrayRef());
  if (DenseI64ArrayAttr trainableArgs = info.getTrainable()) {
    Operation *ret = grad.getBody().front().getTerminator();
    SmallVector<Value> keep{ret->getOperand(0)};
    outputWrt.clear();
    for (auto [k, i] : llvm::enumerate(wrt.asArrayRef()))
      if (llvm::is_contained(trainableArgs.asArrayRef(), i)) {
        keep.push_back(ret->getOperand(k + 1));
        outputWrt.push_back(i);
      }
    ret->setOperands(keep);
    grad.setFunctionType(FunctionType::get(ctx, grad.getArgumentTypes(),
                                           ValueRange(keep).getTypes()));
  }
  Builder b(ctx);
  auto mean = b.getStringAttr("mean");
  grad.setResultAttr(0, pipe::PipeDialect::getOutputNameAttrName(),
                     b.getStringAttr("loss"));
  grad.setResultAttr(0, pipe::PipeDialect::getReduceAttrName(), mean);
  for (auto [k, i] : llvm::enumerate(outputWrt)) {
    grad.setResultAttr(k + 1, pipe::PipeDialect::getOutputNameAttrName(),
                       b.getStringAttr("grad_" + std::to_string(i)));
    grad.setResultAttr(k + 1, pipe::PipeDialect::getReduceAttrName(), mean);
    // With an optimizer the runtime takes the gradients (pipe.gradient),
    // as in pipelined builds, and updates the weights after each step.
    if (optimizer)
      grad.setResultAttr(k + 1, pipe::PipeDialect::getGradientOfAttrName(),
                         b.getI64IntegerAttr(i));
  }
  auto microbatched = pipe::PipeDialect::getMicrobatchedAttrName();
  if (hasTarget) {
    grad.setArgAttr(wantArgs - 1, microbatched, b.getUnitAttr());
    // Class indices of a cross entropy are checked by the runtime.
    FlatSymbolRefAttr lossRef = info.getLossFn();
    if (auto lossFn = lossRef
                          ? module.lookupSymbol<func::FuncOp>(lossRef.getAttr())
                          : func::FuncOp())
      if (Attribute c =
              lossFn.getArgAttr(lossFn.getNumArguments() - 1,
                                pipe::PipeDialect::getClassCountAttrName()))
        grad.setArgAttr(wantArgs - 1,
                        pipe::PipeDialect::getClassCountAttrName(), c);
  }
  // The arguments pipe-differentiate took for per-microbatch data (its
  // batch-dimension analysis, or microbatch-args) are per microbatch in the
  // program too (convert-pipe-to-runtime's `auto` would classify the
  // arguments of @f_grad, whose results are gradients, not per-example
  // values).
  if (DenseI64ArrayAttr data = info.getData())
    for (int64_t i : data.asArrayRef())
      if (i >= 0 && i < int64_t(grad.getNumArguments()))
        grad.setArgAttr(i, microbatched, b.getUnitAttr());
  return success();
}

void PrepareTrainingPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (function.empty()) {
    emitError(module.getLoc())
        << "pipe-prepare-training: the option 'function' (the model "
           "function to train) is required";
    return signalPassFailure();
  }
  auto model = module.lookupSymbol<func::FuncOp>(function);
  if (!model || model.isExternal()) {
    emitError(module.getLoc()) << "pipe-prepare-training: no function @"
                               << function << " with a body to train";
    return signalPassFailure();
  }
  // The reference of a model differentiated before (it carries
  // pipe.gradient) uses its functions as they are.
  bool differentiated = reference && model->hasAttr(kGradientAttr);
  if (!differentiated && failed(differentiate(module)))
    return signalPassFailure();
  model = module.lookupSymbol<func::FuncOp>(function);
  auto info = model ? model->getAttrOfType<pipe::GradientAttr>(kGradientAttr)
                    : pipe::GradientAttr();
  if (!info) {
    emitError(module.getLoc())
        << "pipe-prepare-training: pipe-differentiate left no '"
        << kGradientAttr << "' attribute on @" << function;
    return signalPassFailure();
  }
  if (failed(reference ? buildTrainingStep(module, model, info)
                       : buildLossFunction(module, model, info)))
    return signalPassFailure();
}
