//===- PartitionPass.cpp - pipe-partition: assign ops to stages -------*- C++
//-*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
//
// A thin adapter: IR -> partition::Graph (costs from the cost model) ->
// partition::partition() -> pipe.stage attributes and a report. The
// algorithm lives in lib/Partition (pure C++).
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Support/OptionRange.h"

#include "RealBackward.h"
#include "pipeopt/Analysis/CostModel.h"
#include "pipeopt/Analysis/PartitionGraph.h"
#include "pipeopt/Dialect/Pipe/IR/PipeAttributes.h"
#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"
#include "pipeopt/Partition/Partitioner.h"
#include "pipeopt/Schedule/Schedule.h"
#include "pipeopt/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"

#include <set>

namespace pipeopt {
#define GEN_PASS_DEF_PARTITIONPASS
#include "pipeopt/Transforms/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;
using namespace pipeopt;
namespace part = pipeopt::partition;

namespace {

/// In-flight microbatches per stage for `schedule` (Passes.td), by the
/// in-flight rule of its registry row: closed forms for GPipe (all M), the
/// 1F1B family (S - s, capped at M) and forward-only (one); any other
/// schedule is generated for (num-stages, num-microbatches) and its table
/// measured (maxInFlight).
llvm::Expected<std::vector<int>> inFlightFor(StringRef schedule, int numStages,
                                             int numMicrobatches) {
  namespace sched = pipeopt::schedule;
  llvm::Expected<const sched::ScheduleInfo &> row =
      sched::lookupSchedule(schedule);
  if (!row)
    return row.takeError();
  switch (row->inFlight) {
  case sched::InFlightRule::All:
    return part::gpipeInFlight(numStages, numMicrobatches);
  case sched::InFlightRule::OneFOneB:
    return part::oneFOneBInFlight(numStages, numMicrobatches);
  case sched::InFlightRule::One:
    return std::vector<int>(numStages, 1);
  case sched::InFlightRule::Measured:
    break;
  }
  sched::ScheduleParams params;
  params.numStages = numStages;
  params.numMicrobatches = numMicrobatches;
  llvm::Expected<sched::Schedule> table = row->generate(params);
  if (!table)
    return table.takeError();
  std::vector<int> inFlight(numStages);
  for (int s = 0; s < numStages; ++s)
    inFlight[s] = std::max(1, sched::maxInFlight(*table, s));
  return inFlight;
}

/// The `schedule` option's help with the registry's names (Passes.td has
/// the short form, which the generated pass documentation shows).
llvm::StringRef scheduleOptionHelp() {
  static const std::string help =
      "Schedule whose in-flight microbatches size activation memory (any "
      "pipe-schedule name: " +
      pipeopt::schedule::scheduleNames() +
      ", or an alias; by the in-flight rule of its registry row)";
  return help;
}

struct PartitionPass : pipeopt::impl::PartitionPassBase<PartitionPass> {
  PartitionPass() { schedule.setDescription(scheduleOptionHelp()); }
  PartitionPass(PartitionPassOptions options) : Base(std::move(options)) {
    schedule.setDescription(scheduleOptionHelp());
  }
  void runOnOperation() override;

private:
  struct FunctionResult {
    std::string name;
    part::Report report;
    int64_t functionOps = 0, placedOps = 0, rematOps = 0;
  };
  LogicalResult partitionFunction(func::FuncOp fn, const machine::Machine &hw,
                                  const std::optional<cost::Profile> &profile,
                                  double capacity,
                                  const std::vector<int> &inFlight,
                                  part::Strategy strat,
                                  std::vector<FunctionResult> &results);
};

} // namespace

void PartitionPass::runOnOperation() {
  ModuleOp module = getOperation();
  // Option errors point at the first model function (the module of a parsed
  // file often has no location of its own).
  Location loc = module.getLoc();
  for (auto fn : module.getOps<func::FuncOp>())
    if (!fn.isExternal()) {
      loc = fn.getLoc();
      break;
    }

  // --- Options ------------------------------------------------------------
  // Range checks before the values are narrowed to int below.
  if (failed(checkIntRange(loc, "pipe-partition", "num-stages", numStages, 1,
                           kMaxPipelineCount)) ||
      failed(checkIntRange(loc, "pipe-partition", "num-microbatches",
                           numMicrobatches, 1, kMaxPipelineCount)))
    return signalPassFailure();
  llvm::Expected<std::vector<int>> inFlight =
      inFlightFor(schedule, numStages, numMicrobatches);
  if (!inFlight) {
    // The schedule library's message names the schedule and the rule.
    emitError(loc) << "pipe-partition: "
                   << llvm::toString(inFlight.takeError());
    return signalPassFailure();
  }
  auto hw = machine::loadMachine(device, hardware);
  if (!hw) {
    emitError(loc) << "pipe-partition: " << llvm::toString(hw.takeError());
    return signalPassFailure();
  }
  double capacity = hw->device.memoryCapacityBytes;
  if (!memoryLimit.empty()) {
    auto bytes = machine::parseByteSize(memoryLimit);
    if (!bytes) {
      emitError(loc) << "pipe-partition: memory-limit: "
                     << llvm::toString(bytes.takeError());
      return signalPassFailure();
    }
    capacity = *bytes;
  }
  if (failed(checkOptimizerFactor(loc, "pipe-partition", optimizerFactor)))
    return signalPassFailure();
  std::optional<cost::Profile> prof;
  if (!profile.empty()) {
    auto p = cost::loadProfile(profile);
    if (!p) {
      emitError(loc) << "pipe-partition: " << llvm::toString(p.takeError());
      return signalPassFailure();
    }
    prof = std::move(*p);
  }

  // --- Flat functions only: pipe-prepare inlines helper calls -------------
  WalkResult calls = module.walk([&](func::CallOp call) {
    auto fn = call->getParentOfType<func::FuncOp>();
    if (fn && fn->hasAttr(pipe::PipeDialect::StageAttrHelper::getNameStr()))
      return WalkResult::advance();
    call.emitOpError() << "pipe-partition: @"
                       << (fn ? fn.getSymName() : StringRef("?")) << " calls @"
                       << call.getCallee()
                       << "; inline the calls first with pipe-prepare "
                          "(pipeopt-pipeline runs it)";
    return WalkResult::interrupt();
  });
  if (calls.wasInterrupted())
    return signalPassFailure();

  // --- Partition each model function -----------------------------------------
  std::vector<FunctionResult> results;
  SmallVector<func::FuncOp> fns;
  for (auto fn : module.getOps<func::FuncOp>())
    // Skip stage functions and stage graphs (already outlined).
    if (!fn.isExternal() &&
        !fn->hasAttr(pipe::PipeDialect::StageAttrHelper::getNameStr()) &&
        fn.getOps<pipe::StageCallOp>().empty())
      fns.push_back(fn);
  if (fns.empty()) {
    // An outlined or scheduled module has no model function left: an error,
    // so that re-running does not succeed silently without a report.
    Operation *at = module;
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.getOps<pipe::StageCallOp>().empty()) {
        at = fn;
        break;
      }
    at->emitError() << "pipe-partition: no model function to partition: "
                       "every function with a body is a stage function or "
                       "a stage graph (the module is already partitioned "
                       "and outlined; partition the original model)";
    return signalPassFailure();
  }
  for (func::FuncOp fn : fns)
    if (failed(partitionFunction(fn, *hw, prof, capacity, *inFlight, strategy,
                                 results)))
      return signalPassFailure();

  // --- Report --------------------------------------------------------------
  if (report.empty() || results.empty())
    return;
  if (report == "-") {
    llvm::raw_ostream &os = llvm::outs();
    for (const FunctionResult &r : results) {
      const part::Report &rep = r.report;
      os << llvm::formatv("pipe-partition @{0}: {1} stage{2} on {3}, {4} "
                          "microbatch{5}, schedule {6}\n",
                          r.name, rep.numStages, rep.numStages == 1 ? "" : "s",
                          hw->name, numMicrobatches,
                          numMicrobatches == 1 ? "" : "es", schedule);
      part::printTable(os, rep);
      // Relative change of the bottleneck against a reference, e.g.
      // "vs uniform: -23.4%" (negative = faster than the reference).
      auto rel = [&](StringRef what, double other) {
        double pct =
            other > 0 ? (rep.bottleneckSeconds / other - 1) * 100 : 0.0;
        os << llvm::formatv("vs {0}: {1}{2:F1}%\n", what, pct >= 0 ? "+" : "",
                            pct);
      };
      if (rep.uniform.computed)
        rel("uniform", rep.uniform.bottleneckSeconds);
      if (rep.params.computed)
        rel("params", rep.params.bottleneckSeconds);
      rel("lower bound", rep.lowerBoundSeconds);
    }
    os.flush();
    return;
  }
  llvm::json::Array all;
  for (const FunctionResult &r : results) {
    llvm::json::Value v = part::toJSON(r.report);
    if (auto *obj = v.getAsObject()) {
      (*obj)["function"] = r.name;
      (*obj)["device"] = hw->name;
      (*obj)["schedule"] = std::string(schedule);
      (*obj)["num_microbatches"] = static_cast<int64_t>(numMicrobatches);
      (*obj)["training"] = static_cast<bool>(training);
      // Op counts of the function: every top-level op is either placed in
      // one stage or rematerialized (function_ops = placed_ops + remat_ops).
      (*obj)["function_ops"] = r.functionOps;
      (*obj)["placed_ops"] = r.placedOps;
      (*obj)["remat_ops"] = r.rematOps;
    }
    all.push_back(std::move(v));
  }
  std::string errorMessage;
  auto file = openOutputFile(report, &errorMessage);
  if (!file) {
    emitError(loc) << "pipe-partition: cannot write report '"
                   << std::string(report) << "': " << errorMessage;
    return signalPassFailure();
  }
  llvm::json::Value out =
      all.size() == 1 ? std::move(all[0]) : llvm::json::Value(std::move(all));
  file->os() << llvm::formatv("{0:2}", out) << "\n";
  file->keep();
}

LogicalResult PartitionPass::partitionFunction(
    func::FuncOp fn, const machine::Machine &hw,
    const std::optional<cost::Profile> &profile, double capacity,
    const std::vector<int> &inFlight, part::Strategy strat,
    std::vector<FunctionResult> &results) {
  if (!fn.getBody().hasOneBlock())
    return fn.emitError() << "pipe-partition: expected a single-block "
                             "function body (structured control flow only)";
  Block &body = fn.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  if (ops.empty())
    return fn.emitError() << "pipe-partition: the function has no ops to "
                             "partition";

  cost::CostAnalysis analysis(fn, hw);
  if (profile)
    if (auto err = cost::applyProfile(analysis, body, *profile))
      return fn.emitError()
             << "pipe-partition: " << llvm::toString(std::move(err));

  if (training && backwardCost == BackwardCost::Generated)
    costRealBackward(analysis, ops, hw);

  // Graph (shared with pipeopt-explore --model).
  llvm::Expected<FunctionGraph> built = buildPartitionGraph(fn, analysis);
  if (!built)
    return fn.emitError() << "pipe-partition: "
                          << llvm::toString(built.takeError());
  // Too few placeable ops for the stages: place the ops computed from
  // function arguments too, rather than duplicating them (rematerialization
  // is an optimization; it must not make a request impossible).
  if (llvm::count(built->remat, false) < numStages) {
    llvm::Expected<FunctionGraph> placedMore =
        buildPartitionGraph(fn, analysis, /*rematFromArguments=*/false);
    if (!placedMore)
      return fn.emitError()
             << "pipe-partition: " << llvm::toString(placedMore.takeError());
    built = std::move(placedMore);
  }
  part::Graph &graph = built->graph;
  const std::vector<bool> &remat = built->remat;
  if (strat == part::Strategy::Manual) {
    for (auto [i, op] : llvm::enumerate(ops)) {
      if (remat[i])
        continue;
      auto attr = op->getAttrOfType<IntegerAttr>(
          pipe::PipeDialect::StageAttrHelper::getNameStr());
      if (!attr)
        return op->emitError()
               << "pipe-partition: strategy=manual needs a 'pipe.stage' "
                  "attribute on every op, and this op has none";
      if (attr.getInt() < 0 || attr.getInt() >= numStages)
        return op->emitError()
               << "pipe-partition: pipe.stage = " << attr.getInt()
               << " is out of range for num-stages="
               << static_cast<int64_t>(numStages);
      graph.nodes[i].fixedStage = static_cast<int>(attr.getInt());
    }
  }

  // Options.
  part::Options options;
  options.numStages = static_cast<int>(numStages);
  options.strategy = strat;
  options.training = training;
  options.links = linkModelFor(hw.topology);
  options.memory.capacityBytes = {capacity};
  options.memory.optimizerFactor =
      optimizerFactor >= 0 ? optimizerFactor : (training ? 3.0 : 0.0);
  options.memory.inFlight = inFlight;

  auto result = part::partition(graph, options);
  if (!result) {
    // At the op of the node the error names first (node i is ops[i]), else
    // at the function.
    Location where = fn.getLoc();
    std::string message;
    llvm::handleAllErrors(
        result.takeError(),
        [&](const part::PartitionError &e) {
          message = e.text;
          if (e.node >= 0 && e.node < static_cast<int>(built->ops.size()))
            where = built->ops[e.node]->getLoc();
        },
        [&](const llvm::ErrorInfoBase &e) { message = e.message(); });
    return emitError(where) << "pipe-partition: " << message;
  }

  // Write back.
  MLIRContext *ctx = fn.getContext();
  Builder b(ctx);
  const part::Partition &p = result->partition;
  int lastStage = static_cast<int>(numStages) - 1;
  for (auto [i, op] : llvm::enumerate(ops)) {
    int stage;
    if (remat[i]) {
      stage = p.rematStages[i].empty() ? lastStage : p.rematStages[i].front();
      op->setAttr(pipe::PipeDialect::RematAttrHelper::getNameStr(),
                  b.getUnitAttr());
      ++numRemat;
    } else {
      stage = p.stageOf[i];
      op->removeAttr(pipe::PipeDialect::RematAttrHelper::getNameStr());
      ++numPlaced;
    }
    op->setAttr(pipe::PipeDialect::StageAttrHelper::getNameStr(),
                b.getI64IntegerAttr(stage));
    if (annotateCosts) {
      const cost::OpCost &c = analysis.get(op);
      op->setAttr(
          pipe::PipeDialect::CostAttrHelper::getNameStr(),
          pipe::CostAttr::get(ctx, c.flops, c.bytes(), c.forwardSeconds));
    }
  }
  fn->setAttr(pipe::PipeDialect::NumStagesAttrHelper::getNameStr(),
              b.getI64IntegerAttr(numStages));

  for (const part::TiedWeight &t : result->report.tiedWeights) {
    std::string stages;
    for (auto [k, s] : llvm::enumerate(t.stages))
      stages += (k ? ", " : "") + std::to_string(s);
    fn.emitWarning() << "pipe-partition: weight '" << t.name << "' ("
                     << part::formatBytes(t.bytes) << ") is used by stages "
                     << stages
                     << " (tied weights): each of them holds a copy, and "
                        "training must sum its gradients across them";
  }
  FunctionResult fr{fn.getSymName().str(), result->report};
  fr.functionOps = static_cast<int64_t>(ops.size());
  fr.rematOps = llvm::count(remat, true);
  fr.placedOps = fr.functionOps - fr.rematOps;
  results.push_back(std::move(fr));
  return success();
}
