//===- ModelCostTables.cpp - Cost tables of a partitioned model -----------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// See ModelCostTables.h.
///
//===----------------------------------------------------------------------===//

#include "pipeopt/Transforms/ModelCostTables.h"
#include "pipeopt/Support/Plural.h"

#include "pipeopt/Analysis/PartitionGraph.h"
#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"
#include "pipeopt/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <algorithm>

using namespace pipeopt;

llvm::Expected<ModelCostTables>
ModelCostTables::fromFunction(mlir::func::FuncOp fn, const machine::Machine &hw,
                              double optimizerFactor, bool training,
                              llvm::StringRef name) {
  ModelCostTables t;
  t.machine = hw;
  t.optimizerFactor_ = optimizerFactor;
  t.training_ = training;
  cost::CostAnalysis analysis(fn, t.machine);
  analysis.emitRemarks = false;
  llvm::Expected<FunctionGraph> built = buildPartitionGraph(fn, analysis);
  if (!built)
    return llvm::createStringError("@" + fn.getSymName().str() + ": " +
                                   llvm::toString(built.takeError()));
  t.graph_ = std::move(built->graph);
  t.functionName = fn.getSymName().str();
  t.numOps = static_cast<int>(built->ops.size());
  t.name = name.str();
  return t;
}

llvm::Expected<ModelCostTables>
ModelCostTables::load(llvm::StringRef path, llvm::StringRef device,
                      llvm::StringRef hardwarePath, double optimizerFactor,
                      const mlir::DialectRegistry &registry) {
  llvm::Expected<machine::Machine> hw =
      machine::loadMachine(device, hardwarePath);
  if (!hw)
    return hw.takeError();
  mlir::MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(path, sourceMgr, &context);
  if (!module)
    return llvm::createStringError("cannot parse model '" + path.str() +
                                   "' (diagnostics above)");
  bool hasCalls = false;
  module->walk([&](mlir::func::CallOp) {
    hasCalls = true;
    return mlir::WalkResult::interrupt();
  });
  if (hasCalls) {
    mlir::PassManager pm(&context);
    pm.addPass(createPreparePass());
    if (mlir::failed(pm.run(*module)))
      return llvm::createStringError("pipe-prepare failed on model '" +
                                     path.str() + "' (diagnostics above)");
  }
  // The explorer partitions the model itself: an outlined or scheduled
  // module would be explored as a graph of a few stage calls.
  bool staged = false;
  module->walk([&](mlir::Operation *op) {
    staged = llvm::isa<pipe::StageCallOp, pipe::ProgramOp>(op);
    return staged ? mlir::WalkResult::interrupt() : mlir::WalkResult::advance();
  });
  if (staged)
    return llvm::createStringError(
        "model '" + path.str() +
        "' is already outlined or scheduled (it has pipe.stage_call or "
        "pipe.program ops): give the original model; the explorer "
        "partitions it for every stage count itself");
  mlir::func::FuncOp best;
  size_t bestOps = 0;
  for (auto fn : module->getOps<mlir::func::FuncOp>()) {
    if (fn.isExternal() ||
        fn->hasAttr(pipe::PipeDialect::StageAttrHelper::getNameStr()))
      continue;
    size_t n = fn.getBody().front().getOperations().size();
    if (!best || n > bestOps) {
      best = fn;
      bestOps = n;
    }
  }
  if (!best)
    return llvm::createStringError("model '" + path.str() +
                                   "' has no function with a body");
  llvm::Expected<ModelCostTables> t =
      fromFunction(best, *hw, optimizerFactor, /*training=*/true, /*name=*/"");
  if (!t)
    return llvm::createStringError("model '" + path.str() + "', " +
                                   llvm::toString(t.takeError()));
  t->name = llvm::formatv("{0} (@{1}, {2} ops) on {3}, balanced partition",
                          llvm::sys::path::filename(path), t->functionName,
                          t->numOps, t->machine.name)
                .str();
  return t;
}

llvm::Expected<const sim::CostTable *> ModelCostTables::get(int n) {
  auto it = tables_.find(n);
  if (it != tables_.end())
    return &it->second;
  partition::Options o;
  o.numStages = n;
  o.strategy = partition::Strategy::Balanced;
  o.training = training_;
  o.computeBaselines = false;
  o.links = linkModelFor(machine.topology);
  o.memory.optimizerFactor = optimizerFactor_;
  llvm::Expected<partition::Result> r = partition::partition(graph_, o);
  if (!r)
    return llvm::createStringError("partitioning the model into " +
                                   countOf(n, "stage") + ": " +
                                   llvm::toString(r.takeError()));
  sim::CostTable t;
  t.name = name;
  t.stages.resize(n);
  const partition::Partition &p = r->partition;
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    const partition::Node &node = graph_.nodes[i];
    auto add = [&](int k) {
      if (k < 0 || k >= n)
        return;
      t.stages[k].forwardSec += node.forwardSeconds;
      t.stages[k].backwardInputSec += node.backwardInputSeconds;
      t.stages[k].backwardWeightSec += node.backwardWeightSeconds;
    };
    if (p.stageOf[i] >= 0)
      add(p.stageOf[i]);
    else if (i < p.rematStages.size())
      for (int k : p.rematStages[i])
        add(k);
  }
  for (int k = 0; k < n; ++k) {
    const partition::StageReport &sr = r->report.stages[k];
    t.stages[k].activationBytes = sr.activationBytes;
    t.stages[k].weightBytes = sr.paramBytes * (1 + optimizerFactor_);
    // All-reduces move the gradient: the parameter bytes.
    t.stages[k].gradientBytes = sr.paramBytes;
    t.stages[k].boundaryBytes = k + 1 < n ? sr.sendBytes : 0;
  }
  reports_[n] = r->report;
  return &tables_.emplace(n, std::move(t)).first->second;
}
