//===- PipeToRuntime.cpp - convert-pipe-to-runtime -----------------*- C++
//-*-===//
//
// Part of pipeopt. The pass: per-rank pipe.programs become entry points
// that call the runtime C ABI (runtime/include/pipeopt/runtime/
// pipeopt_runtime.h), in three parts (PipeToRuntimeInternal.h): the checks
// (Checks.cpp), the pattern-based lowering (Lowering.cpp) and the manifest
// pipeopt-run reads (Manifest.cpp). Also the helpers PipeToRuntime.h
// declares (the single-stage reference program).
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Conversion/PipeToRuntime/PipeToRuntime.h"
#include "PipeToRuntimeInternal.h"
#include "pipeopt/Analysis/ArgumentSelection.h"
#include "pipeopt/Conversion/Passes.h"
#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"
#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "pipeopt/runtime/ManifestKeys.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace pipeopt {
#define GEN_PASS_DEF_CONVERTPIPETORUNTIMEPASS
#include "pipeopt/Conversion/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;
namespace pipe = pipeopt::pipe;
using namespace pipeopt::pipe_to_runtime;

std::string pipeopt::runtimeEntryPointName(int64_t rank) {
  return "pipeopt_rank_" + std::to_string(rank);
}

namespace {

struct ConvertPipeToRuntimePass
    : pipeopt::impl::ConvertPipeToRuntimePassBase<ConvertPipeToRuntimePass> {
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

bool pipeopt::pipe_to_runtime::isStageGraphFunction(func::FuncOp fn) {
  return fn.walk([&](pipe::StageCallOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

void ConvertPipeToRuntimePass::runOnOperation() {
  ModuleOp module = getOperation();
  std::string err;
  FailureOr<MicrobatchPolicy> policy =
      MicrobatchPolicy::parse(microbatchArgs, err);
  SmallVector<pipe::ProgramOp> programs(module.getOps<pipe::ProgramOp>());
  if (failed(pipeopt::checkRuntimeTarget(module, target)))
    return signalPassFailure();
  if (failed(policy)) {
    // At the first program: a parsed module often has no location of its own.
    emitError(programs.empty() ? module.getLoc() : programs.front().getLoc())
        << err;
    return signalPassFailure();
  }
  if (programs.empty()) {
    module.emitError() << "no pipe.program to convert; run pipe-schedule "
                          "first (or pipeopt-compile --reference for an "
                          "unpartitioned model)";
    return signalPassFailure();
  }
  // `auto`: model arguments that some stage function reads as a weight.
  classifyArguments(programs, *policy);

  // Part 1: the checks, before anything is changed.
  std::vector<pipe::ProgramOp> byRank;
  if (failed(checkConversion(module, programs, *policy,
                             pipeopt::formatArgumentList(microbatchArgs),
                             byRank)))
    return signalPassFailure();

  // Stage-graph functions (pipe.stage_call) describe, they do not execute.
  // Every other function with a body becomes private: only the entry
  // points are exported.
  for (auto fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
    if (fn.isExternal())
      continue;
    if (isStageGraphFunction(fn))
      fn.erase();
    else
      fn.setPrivate();
  }

  // Part 2: the lowering.
  LoweringResults results;
  if (failed(lowerPrograms(module, byRank, *policy, results,
                           inputViews && target == "cpu")))
    return signalPassFailure();
  numPrograms = programs.size();
  numRuntimeCalls = results.numCalls;

  // pipe.microbatched has been read (the policy's `forced` arguments).
  auto microbatched = StringAttr::get(
      module.getContext(), pipe::PipeDialect::getMicrobatchedAttrName());
  for (auto fn : module.getOps<func::FuncOp>())
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      fn.removeArgAttr(i, microbatched);

  // Prefer the stage count the partitioner recorded, if any is larger.
  module.walk([&](Operation *op) {
    if (auto n = op->getAttrOfType<IntegerAttr>(
            pipe::PipeDialect::NumStagesAttrHelper::getNameStr()))
      results.numStages = std::max(results.numStages, n.getInt());
  });
  if (results.numStages == 0)
    results.numStages = 1;

  // Part 3: the manifest, tied to this module by a hash that the manifest
  // records and the module exports (pipeopt-run checks that they agree).
  llvm::json::Value manifest = manifestJson(results, *policy, target);
  uint64_t hash = moduleHash(module, manifest);
  addModuleHashFunction(module, hash);
  manifest.getAsObject()->try_emplace(pipeopt::manifest::kModuleHash,
                                      formatModuleHash(hash));
  addEmbeddedManifest(module, manifest);
  if (!manifestPath.empty() &&
      failed(writeManifest(module, manifestPath, manifest)))
    return signalPassFailure();
}

// Declared in PipeToRuntime.h.
std::optional<int64_t> pipeopt::gatherIndexBound(Value root) {
  std::optional<int64_t> bound;
  SmallVector<Value> work{root};
  llvm::DenseSet<Value> seen{root};
  auto push = [&](Value v) {
    if (seen.insert(v).second)
      work.push_back(v);
  };
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(user)) {
        if (linalgOp.isDpsInput(&use) && linalgOp.getBlock())
          push(linalgOp.getMatchingBlockArgument(&use));
      } else if (auto yield = dyn_cast<linalg::YieldOp>(user)) {
        push(yield->getParentOp()->getResult(use.getOperandNumber()));
      } else if (isa<arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp,
                     arith::IndexCastOp, arith::IndexCastUIOp,
                     tensor::CollapseShapeOp, tensor::ExpandShapeOp,
                     tensor::ReshapeOp, tensor::CastOp, tensor::ExtractSliceOp>(
                     user)) {
        if (use.getOperandNumber() == 0)
          push(user->getResult(0));
      } else if (auto extract = dyn_cast<tensor::ExtractOp>(user)) {
        unsigned first = extract.getIndices().getBeginOperandIndex();
        if (use.getOperandNumber() < first)
          continue;
        int64_t extent = extract.getTensor().getType().getDimSize(
            use.getOperandNumber() - first);
        if (!ShapedType::isDynamic(extent))
          bound = bound ? std::min(*bound, extent) : extent;
      }
    }
  }
  return bound;
}

//===----------------------------------------------------------------------===//
// Single-stage reference program
//===----------------------------------------------------------------------===//

void pipeopt::keepReachedFunctions(ModuleOp module,
                                   ArrayRef<func::FuncOp> roots) {
  llvm::DenseSet<Operation *> reached;
  SmallVector<func::FuncOp> work(roots.begin(), roots.end());
  for (func::FuncOp root : roots)
    reached.insert(root);
  while (!work.empty()) {
    func::FuncOp f = work.pop_back_val();
    if (auto uses = SymbolTable::getSymbolUses(f))
      for (const SymbolTable::SymbolUse &use : *uses)
        if (auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
                module, use.getSymbolRef()))
          if (reached.insert(callee).second)
            work.push_back(callee);
  }
  for (auto f : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
    if (llvm::is_contained(roots, f) || f.isExternal())
      continue;
    if (reached.contains(f))
      f.setPrivate();
    else
      f.erase();
  }
}

FailureOr<func::FuncOp> pipeopt::findModelFunction(ModuleOp module,
                                                   StringRef function,
                                                   StringRef hint) {
  if (!function.empty()) {
    auto fn = module.lookupSymbol<func::FuncOp>(function);
    if (!fn || fn.isExternal())
      return module.emitError()
             << "no function @" << function << " with a body in the module";
    return fn;
  }
  SmallVector<func::FuncOp> candidates;
  for (auto f : module.getOps<func::FuncOp>())
    if (f.isPublic() && !f.isExternal())
      candidates.push_back(f);
  if (candidates.size() == 1)
    return candidates.front();
  InFlightDiagnostic diag = module.emitError()
                            << "expected exactly one public function with a "
                               "body as the model, found "
                            << candidates.size() << "; " << hint;
  for (auto f : candidates)
    diag.attachNote(f.getLoc()) << "candidate @" << f.getSymName();
  return failure();
}

LogicalResult pipeopt::buildSingleStageProgram(ModuleOp module,
                                               StringRef function,
                                               int64_t numMicrobatches) {
  if (numMicrobatches < 1)
    return module.emitError() << "number of microbatches must be positive, got "
                              << numMicrobatches;
  FailureOr<func::FuncOp> found =
      findModelFunction(module, function, "name the model function");
  if (failed(found))
    return failure();
  func::FuncOp fn = *found;
  FunctionType type = fn.getFunctionType();
  for (auto [i, t] : llvm::enumerate(type.getInputs()))
    if (!isa<RankedTensorType>(t))
      return fn.emitOpError() << "argument " << i << " of type " << t
                              << " is not a ranked tensor";
  for (auto [i, t] : llvm::enumerate(type.getResults()))
    if (!isa<RankedTensorType>(t))
      return fn.emitOpError()
             << "result " << i << " of type " << t << " is not a ranked tensor";

  OpBuilder b(module.getContext());
  // How each model result is written (result attributes pipe.reduce and
  // pipe.output_name, e.g. set by pipeopt-compile --train on the loss and
  // the gradients): moved from the function onto its pipe.output ops.
  MLIRContext *ctx = module.getContext();
  StringRef reduceName = pipe::PipeDialect::getReduceAttrName();
  StringRef nameName = pipe::PipeDialect::getOutputNameAttrName();
  SmallVector<pipe::OutputReductionAttr> reduceOf(type.getNumResults());
  SmallVector<StringAttr> nameOf(type.getNumResults());
  SmallVector<std::optional<uint64_t>> gradientOf(type.getNumResults());
  StringRef gradientOfName = pipe::PipeDialect::getGradientOfAttrName();
  for (unsigned i = 0; i < type.getNumResults(); ++i) {
    if (auto a = fn.getResultAttrOfType<IntegerAttr>(i, gradientOfName)) {
      int64_t arg = a.getInt();
      if (arg < 0 || arg >= int64_t(type.getNumInputs()) ||
          type.getInput(arg) != type.getResult(i))
        return fn.emitOpError()
               << "result " << i << " is marked as the gradient of argument "
               << arg << ", which does not exist or has another type";
      gradientOf[i] = uint64_t(arg);
      fn.removeResultAttr(i,
                          StringAttr::get(module.getContext(), gradientOfName));
    }
    if (Attribute a = fn.getResultAttr(i, reduceName)) {
      auto text = dyn_cast<StringAttr>(a);
      std::optional<pipe::OutputReduction> kind =
          text ? pipe::symbolizeOutputReduction(text.getValue()) : std::nullopt;
      if (!kind)
        return fn.emitOpError()
               << "result " << i << ": attribute '" << reduceName
               << "' must be \"mean\", got " << a;
      reduceOf[i] = pipe::OutputReductionAttr::get(ctx, *kind);
    }
    if (Attribute a = fn.getResultAttr(i, nameName)) {
      nameOf[i] = dyn_cast<StringAttr>(a);
      if (!nameOf[i] || nameOf[i].getValue().empty())
        return fn.emitOpError() << "result " << i << ": attribute '" << nameName
                                << "' must be a non-empty string";
    }
    fn.removeResultAttr(i, StringAttr::get(ctx, reduceName));
    fn.removeResultAttr(i, StringAttr::get(ctx, nameName));
  }
  // A value returned twice (`return %0, %0`) becomes one result of the
  // stage function, written to both model outputs (buffer-results-to-out-
  // params crashes on a function returning one buffer twice).
  SmallVector<unsigned> resultOf; // model result -> stage function result
  if (fn.getBody().hasOneBlock()) {
    Operation *ret = fn.getBody().front().getTerminator();
    SmallVector<Value> unique;
    llvm::BitVector repeated(ret->getNumOperands());
    for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
      auto *it = llvm::find(unique, v);
      resultOf.push_back(static_cast<unsigned>(it - unique.begin()));
      if (it == unique.end())
        unique.push_back(v);
      else
        repeated.set(i);
    }
    if (repeated.any()) {
      ret->setOperands(unique);
      // Drops the repeated results' types and attributes.
      if (failed(fn.eraseResults(repeated)))
        return fn.emitOpError() << "cannot remove its repeated results";
    }
  }
  if (resultOf.empty())
    for (unsigned i = 0; i < type.getNumResults(); ++i)
      resultOf.push_back(i);
  fn->setAttr(pipe::PipeDialect::StageAttrHelper::getNameStr(),
              b.getI64IntegerAttr(0));
  b.setInsertionPointToEnd(module.getBody());
  Location loc = fn.getLoc();
  std::string name = (fn.getSymName() + "_rank0").str();
  if (module.lookupSymbol(name))
    return module.emitError() << "symbol @" << name << " already exists";
  auto program = pipe::ProgramOp::create(b, loc, name, 0, 1, numMicrobatches);
  program.setScheduleAttr(b.getStringAttr("unpartitioned"));
  b.setInsertionPointToStart(&program.getBody().front());
  for (int64_t mb = 0; mb < numMicrobatches; ++mb) {
    SmallVector<Value> args;
    for (auto [i, t] : llvm::enumerate(type.getInputs()))
      args.push_back(
          pipe::InputOp::create(b, loc, t, uint64_t(i), uint64_t(mb)));
    auto forward = pipe::ForwardOp::create(
        b, loc, fn.getFunctionType().getResults(), fn.getSymName(),
        /*stage=*/uint64_t(0), uint64_t(mb), args);
    for (auto [i, r] : llvm::enumerate(resultOf)) {
      if (gradientOf[i]) {
        pipe::GradientOp::create(b, loc, forward.getResult(r), *gradientOf[i],
                                 /*stage=*/0, uint64_t(mb));
        continue;
      }
      auto out = pipe::OutputOp::create(b, loc, forward.getResult(r),
                                        uint64_t(i), uint64_t(mb));
      if (reduceOf[i])
        out.setReduceAttr(reduceOf[i]);
      if (nameOf[i])
        out.setNameAttr(nameOf[i]);
    }
  }
  return success();
}
