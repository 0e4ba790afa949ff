//===- SimulatePass.cpp - pipe-simulate: simulate the programs -*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// pipe-simulate: reads the per-rank pipe.program ops of every scheduled
/// function back into a schedule table (ProgramTable.h), derives a per-stage
/// cost table from the stage functions with the MLIR cost model
/// (include/pipeopt/Analysis/CostModel.h) and runs the simulator's three
/// levels (include/pipeopt/Simulate/Simulator.h). `profile=` replaces the
/// estimated per-stage times by measured ones (cost::loadProfile,
/// cost::applyMeasuredTimes). See Passes.td.
///
//===----------------------------------------------------------------------===//

#include "pipeopt/Programs/ProgramTable.h"
#include "pipeopt/Support/OptionRange.h"

#include "pipeopt/Analysis/CostModel.h"
#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"
#include "pipeopt/Schedule/Schedule.h"
#include "pipeopt/Simulate/CostTable.h"
#include "pipeopt/Simulate/Explore.h"
#include "pipeopt/Simulate/Simulator.h"
#include "pipeopt/Simulate/Trace.h"
#include "pipeopt/Transforms/ModelCostTables.h"
#include "pipeopt/Transforms/Passes.h"

#include "RealBackward.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pipeopt {
#define GEN_PASS_DEF_SIMULATEPASS
#include "pipeopt/Transforms/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;
using namespace pipeopt;
namespace sched = pipeopt::schedule;

namespace {

/// Everything the pass computed for one scheduled function.
struct SimResult {
  std::string function;
  sched::Schedule schedule;
  sim::CostTable costs;
  sim::Evaluation eval;
  sim::Timeline timeline; ///< At `trace-level`.
  bool measured = false;  ///< F/B/W come from `profile=`.
  /// Extra bytes per weight byte in weightBytes (optimizer-factor, resolved).
  double optimizerFactor = 0;
};

struct SimulatePass : pipeopt::impl::SimulatePassBase<SimulatePass> {
  using SimulatePassBase::SimulatePassBase;
  void runOnOperation() override;

private:
  FailureOr<SimResult>
  simulateGroup(StringRef base, ArrayRef<pipe::ProgramOp> programs,
                const machine::Machine &hw, const machine::Machine &sys,
                double optFactor, const cost::Profile *prof);
  /// The build's optimizer ("sgd", ...): the module's pipe.optimizer, else
  /// "sgd" (pipeopt-compile --train's default).
  std::string optimizer = "sgd";
};

} // namespace

FailureOr<SimResult>
SimulatePass::simulateGroup(StringRef base, ArrayRef<pipe::ProgramOp> programs,
                            const machine::Machine &hw,
                            const machine::Machine &sys, double optFactor,
                            const cost::Profile *prof) {
  ModuleOp module = getOperation();
  FailureOr<std::vector<pipe::ProgramOp>> byRank =
      programsByRank(base, programs);
  if (failed(byRank))
    return failure();
  FailureOr<ProgramTable> table = readProgramTable(module, base, *byRank);
  if (failed(table))
    return failure();
  pipe::ProgramOp first = byRank->front();
  SimResult res;
  res.function = base.str();
  res.schedule = std::move(table->schedule);
  sched::Schedule &s = res.schedule;
  const int S = s.numStages;

  if (llvm::Error e = sched::validate(s, table->graph))
    return first.emitError()
           << "pipe-simulate: the programs of @" << base
           << " are not a valid schedule (run pipe-verify-schedule for the "
              "offending op): "
           << llvm::toString(std::move(e));

  // The programs do not carry weight versions: an asynchronous schedule's
  // registry row says how its generator assigned them.
  if (const sched::ScheduleInfo *row = sched::findScheduleByKey(s.name))
    if (row->async()) {
      s.async = true;
      sched::assignWeightVersions(s, row->weightVersions);
    }
  if (optFactor < 0)
    optFactor = s.forwardOnly ? 0.0 : 3.0;
  res.optimizerFactor = optFactor;

  // Stage functions: from the stage graph when there is one, else the
  // callee of the stage's forwards.
  std::vector<func::FuncOp> stageFns(S);
  std::vector<std::vector<bool>> argIsModelArg(S);
  if (table->stageGraph) {
    const StageGraphInfo &info = *table->stageGraph;
    for (int k = 0; k < S; ++k) {
      stageFns[k] = module.lookupSymbol<func::FuncOp>(
          pipe::StageCallOp(info.calls[k]).getCallee());
      for (const StageGraphInfo::Source &src : info.sources[k])
        argIsModelArg[k].push_back(src.fromStage < 0);
    }
  }
  for (pipe::ProgramOp p : *byRank)
    p.walk([&](pipe::ForwardOp f) {
      int k = f.getStage();
      if (k < S && !stageFns[k])
        stageFns[k] = module.lookupSymbol<func::FuncOp>(f.getCallee());
    });
  for (int k = 0; k < S; ++k)
    if (!stageFns[k] || stageFns[k].isExternal())
      return first.emitError()
             << "pipe-simulate: stage " << k << " of @" << base
             << " has no stage function with a body to take its costs from";

  // Cost table: one entry per stage.
  res.costs.name = llvm::formatv("@{0} on {1}", base, hw.name).str();
  res.costs.stages.resize(S);
  for (int k = 0; k < S; ++k) {
    func::FuncOp fn = stageFns[k];
    sim::StageCost &c = res.costs.stages[k];
    cost::CostAnalysis analysis(fn, hw);
    analysis.emitRemarks = false;
    // Training schedules: B and W from the generated backward of each op
    // (RealBackward.h) instead of the per-op-class rule.
    if (!s.forwardOnly && backwardCost == BackwardCost::Generated &&
        fn.getBody().hasOneBlock()) {
      SmallVector<Operation *> ops;
      for (Operation &op : fn.getBody().front().without_terminator())
        ops.push_back(&op);
      costRealBackward(analysis, ops, hw);
    }
    llvm::DenseSet<Value> weights;
    for (Block &block : fn.getBody())
      for (Operation &op : block.without_terminator()) {
        const cost::OpCost &oc = analysis.get(&op);
        c.forwardSec += oc.forwardSeconds;
        c.backwardInputSec += oc.backwardInputSeconds;
        c.backwardWeightSec += oc.backwardWeightSeconds;
        c.activationBytes += oc.savedActivationBytes;
        for (const cost::ParameterUse &use : cost::parameterUses(&op)) {
          Value root = use.root;
          // A stage function argument is a weight only when it is a model
          // argument (not an activation received from an earlier stage).
          if (auto arg = dyn_cast<BlockArgument>(root)) {
            unsigned n = arg.getArgNumber();
            if (arg.getOwner()->getParentOp() != fn.getOperation() ||
                (n < argIsModelArg[k].size() && !argIsModelArg[k][n]))
              continue;
          }
          weights.insert(root);
        }
      }
    bool allStatic = true;
    for (Value w : weights) {
      c.weightBytes += cost::typeBytes(w.getType());
      auto shaped = dyn_cast<ShapedType>(w.getType());
      if (shaped && shaped.hasStaticShape())
        c.parameterElements += static_cast<double>(shaped.getNumElements());
      else if (w.getType().isIntOrIndexOrFloat())
        c.parameterElements += 1;
      else
        allStatic = false;
    }
    // All-reduces move the gradient: the parameter bytes; the runtime
    // exchanges its per-step sums, in double (8 bytes per element).
    c.gradientBytes = c.weightBytes;
    if (allStatic)
      c.exchangedGradientBytes = 8 * c.parameterElements;
    // The runtime's pipeopt_rt_gradient at every W / BW of the stage.
    if (!s.forwardOnly)
      c.gradientAccumulateSec =
          c.parameterElements * hw.device.gradientAccumulateSecondsPerElement;
    if (optimizerStep && !s.forwardOnly) {
      auto perElement = hw.device.optimizerSecondsPerElement.find(optimizer);
      if (perElement != hw.device.optimizerSecondsPerElement.end() && allStatic)
        c.optimizerSec = c.parameterElements * perElement->second;
      else if (hw.device.memoryBytesPerSecond > 0)
        c.optimizerSec = (2 * (1 + optFactor) - 1) * c.weightBytes /
                         hw.device.memoryBytesPerSecond;
    }
    c.weightBytes *= 1 + optFactor;
  }
  // Tied weights: a model argument whose gradient several stages
  // contribute (pipe.gradient of materialized training programs).
  std::map<uint64_t, std::pair<std::set<int>, double>> contributions;
  for (pipe::ProgramOp p : *byRank)
    p.walk([&](pipe::GradientOp g) {
      auto &entry = contributions[g.getArgument()];
      if (static_cast<int>(g.getStage()) < S)
        entry.first.insert(static_cast<int>(g.getStage()));
      // The runtime exchanges the tied parameter's double sums.
      auto shaped = dyn_cast<ShapedType>(g.getValue().getType());
      entry.second = shaped && shaped.hasStaticShape()
                         ? 8.0 * static_cast<double>(shaped.getNumElements())
                         : cost::typeBytes(g.getValue().getType());
    });
  for (auto &[arg, entry] : contributions)
    if (entry.first.size() >= 2)
      res.costs.tied.push_back(
          {std::vector<int>(entry.first.begin(), entry.first.end()),
           entry.second});
  // Materialized training programs (pipe-materialize-backward) record the
  // bytes each action leaves held for its (stage, microbatch): after F the
  // activation, after a split B what W still reads. They replace the cost
  // model's per-op estimate, so the simulated peak is that of the program
  // the runtime executes (and measures).
  for (pipe::ProgramOp p : *byRank)
    for (Operation &op : p.getBody().front()) {
      auto bytes = op.getAttrOfType<IntegerAttr>(
          pipe::PipeDialect::StashBytesAttrHelper::getNameStr());
      if (!bytes)
        continue;
      if (auto f = dyn_cast<pipe::ForwardOp>(op); f && f.getStage() < S)
        res.costs.stages[f.getStage()].activationBytes =
            static_cast<double>(bytes.getInt());
      else if (auto b = dyn_cast<pipe::BackwardOp>(op);
               b && b.getKind() == pipe::BackwardKind::Input &&
               b.getStage() < S)
        res.costs.stages[b.getStage()].weightGradHoldBytes =
            static_cast<double>(bytes.getInt());
    }
  for (const sched::StageEdge &e : table->graph.edges)
    if (e.to == e.from + 1 && e.from < S)
      res.costs.stages[e.from].boundaryBytes += e.bytes;

  // Measured times: the profile must describe exactly these stages.
  if (prof) {
    for (const auto &entry : prof->stages)
      if (entry.first >= S)
        return first.emitError()
               << "pipe-simulate: profile '" << profile << "' has stage "
               << entry.first << ", but the programs of @" << base << " have "
               << S << " stage" << (S == 1 ? "" : "s");
    for (int k = 0; k < S; ++k) {
      auto it = prof->stages.find(k);
      if (it == prof->stages.end())
        return first.emitError()
               << "pipe-simulate: profile '" << profile
               << "' has no times for stage " << k << " of @" << base << " ("
               << S << " stage" << (S == 1 ? "" : "s") << ")";
      // The rule of pipe-partition profile= (CostModel.h), on the stage sums.
      sim::StageCost &c = res.costs.stages[k];
      cost::OpCost oc;
      oc.forwardSeconds = c.forwardSec;
      oc.backwardInputSeconds = c.backwardInputSec;
      oc.backwardWeightSeconds = c.backwardWeightSec;
      cost::applyMeasuredTimes(oc, it->second);
      c.forwardSec = oc.forwardSeconds;
      c.backwardInputSec = oc.backwardInputSeconds;
      c.backwardWeightSec = oc.backwardWeightSeconds;
    }
    res.measured = true;
    res.costs.name += llvm::formatv(", measured ({0})", profile).str();
  }

  llvm::Expected<sim::Evaluation> ev =
      sim::evaluate(s, res.costs, sys, &table->graph);
  if (!ev)
    return first.emitError() << "pipe-simulate: @" << base << ": "
                             << llvm::toString(ev.takeError());
  res.eval = std::move(*ev);
  if (!trace.empty() || !svg.empty()) {
    llvm::Expected<sim::Metrics> m =
        traceLevel == sim::Level::Table
            ? sim::simulateTable(s, res.costs, sys, &res.timeline,
                                 &table->graph)
            : sim::simulateEvents(s, res.costs, sys, &res.timeline,
                                  &table->graph);
    if (!m)
      return first.emitError() << "pipe-simulate: @" << base << ": "
                               << llvm::toString(m.takeError());
  }
  return res;
}

static std::string fmt(double v, const char *f = "%.6g") {
  char buf[48];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

static const sim::Level kLevels[] = {sim::Level::Formula, sim::Level::Table,
                                     sim::Level::Event};

/// The readable report of one function.
static void printReport(llvm::raw_ostream &os, const SimResult &r,
                        const machine::Machine &sys, StringRef device) {
  const sched::Schedule &s = r.schedule;
  os << llvm::formatv("pipe-simulate: @{0}: schedule {1}, {2} ranks, {3} "
                      "stages, {4} microbatches, device {5}, system {6}\n",
                      r.function, s.name, s.numRanks, s.numStages,
                      s.numMicrobatches, device, sys.name);
  os << "stage costs (per microbatch; "
     << (r.measured ? "F/B/W measured; " : "");
  if (r.optimizerFactor > 0)
    os << llvm::formatv("weights include gradients and optimizer state: x{0}",
                        fmt(1 + r.optimizerFactor));
  else
    os << "weights only: no gradients or optimizer state";
  os << "):\n";
  os << llvm::formatv("  {0,5} {1,12} {2,12} {3,12} {4,14} {5,14} {6,14}\n",
                      "stage", "F (s)", "B (s)", "W (s)", "activation (B)",
                      "weights (B)", "boundary (B)");
  for (auto [k, c] : llvm::enumerate(r.costs.stages))
    os << llvm::formatv("  {0,5} {1,12} {2,12} {3,12} {4,14} {5,14} {6,14}\n",
                        k, fmt(c.forwardSec), fmt(c.backwardInputSec),
                        fmt(c.backwardWeightSec), fmt(c.activationBytes),
                        fmt(c.weightBytes), fmt(c.boundaryBytes));
  for (sim::Level level : kLevels) {
    const sim::Metrics &m = r.eval.at(level);
    os << "level " << sim::levelName(level) << ":";
    if (!m.available) {
      os << " n/a (" << m.note << ")\n";
      continue;
    }
    os << " makespan " << fmt(m.makespanSec) << " s, bubble "
       << fmt(m.bubbleRatio, "%.6f") << ", peak activation "
       << fmt(m.maxPeakActivationBytes()) << " B, weights "
       << fmt(m.maxWeightBytes()) << " B, communication " << fmt(m.commBytes)
       << " B";
    if (m.staleness)
      os << ", staleness max " << m.staleness->maxDelay << " mean "
         << fmt(m.staleness->meanDelay, "%.3f")
         << (m.staleness->steadyState ? "" : " (no steady state)");
    if (m.staleness && m.staleness->startupMaxDelay >= 0)
      os << ", start-up max " << m.staleness->startupMaxDelay;
    os << "\n";
    if (!m.note.empty())
      os << "  note: " << m.note << "\n";
    if (m.allReduceSec > 0 || m.optimizerSec > 0 || m.postBackwardSec > 0)
      os << "  after backward: all-reduce " << fmt(m.allReduceSec)
         << " s, optimizer " << fmt(m.optimizerSec)
         << " s (largest rank), iteration lengthened by "
         << fmt(m.postBackwardSec) << " s, all-reduce bytes sent "
         << fmt(m.collectiveBytes) << " B\n";
    os << llvm::formatv("  {0,5} {1,10} {2,20} {3,14}\n", "rank", "bubble",
                        "peak activation (B)", "weights (B)");
    for (size_t q = 0; q < m.bubblePerRank.size(); ++q)
      os << llvm::formatv(
          "  {0,5} {1,10} {2,20} {3,14}\n", q, fmt(m.bubblePerRank[q], "%.6f"),
          fmt(q < m.peakActivationBytes.size() ? m.peakActivationBytes[q] : 0),
          fmt(q < m.weightBytes.size() ? m.weightBytes[q] : 0));
    if (m.staleness && !m.staleness->maxDelayMatrix.empty()) {
      os << "  delay matrix (max; row = updating stage, column = read "
            "block):\n";
      for (auto [j, row] : llvm::enumerate(m.staleness->maxDelayMatrix)) {
        os << llvm::formatv("  {0,5}", j);
        for (int v : row)
          os << llvm::formatv(" {0,6}", v);
        os << "\n";
      }
    }
  }
}

/// Explorer-compatible JSON rows (tools/pipeopt-explore/README.md) of one
/// function, one per level.
static void appendRows(llvm::json::Array &rows, const SimResult &r,
                       const machine::Machine &sys) {
  for (sim::Level level : kLevels) {
    const sim::Metrics &m = r.eval.at(level);
    llvm::json::Object row = sim::rowJSON(
        {r.schedule.name, r.schedule.numRanks, r.schedule.numStages,
         r.schedule.numMicrobatches, sys.name},
        level, m);
    row["function"] = r.function;
    rows.push_back(std::move(row));
  }
}

void SimulatePass::runOnOperation() {
  ModuleOp module = getOperation();
  // Errors point at the first program, else at the module's first op (the
  // module of a parsed file often has no location of its own).
  Location loc = module.getLoc();
  if (!module.getBody()->empty())
    loc = module.getBody()->front().getLoc();
  auto groups = groupPrograms(module);
  if (!groups.empty())
    loc = groups.front().second.front().getLoc();

  // --- Options (all checked before the programs are read) ----------------
  auto hw = machine::loadMachine(device, hardware);
  if (!hw) {
    emitError(loc) << "pipe-simulate: " << llvm::toString(hw.takeError());
    return signalPassFailure();
  }
  // The cost model's machine, or the system= preset / file; the cost
  // tables are in the device's seconds either way.
  machine::Machine sys = *hw;
  sys.name += " topology";
  if (!system.empty()) {
    auto loaded = machine::loadSystems(system);
    if (!loaded) {
      emitError(loc) << "pipe-simulate: system: "
                     << llvm::toString(loaded.takeError());
      return signalPassFailure();
    }
    if (loaded->size() != 1) {
      emitError(loc) << "pipe-simulate: system "
                     << (StringRef(system).ends_with(".json") ? "file " : "")
                     << "'" << system << "' defines " << loaded->size()
                     << " systems; give a file with exactly one";
      return signalPassFailure();
    }
    sys = loaded->front();
  }
  if (failed(checkOptimizerFactor(loc, "pipe-simulate", optimizerFactor)))
    return signalPassFailure();
  if (dataParallel < 1 || dataParallel > (1 << 20)) {
    emitError(loc) << "pipe-simulate: data-parallel must be an integer in "
                      "[1, 1048576], got "
                   << std::to_string(dataParallel);
    return signalPassFailure();
  }
  sys.simulation.dataParallel = static_cast<int>(dataParallel);
  if (zeroStage != -1 && zeroStage != 0 && zeroStage != 1) {
    emitError(loc) << "pipe-simulate: zero-stage must be 0 (all-reduce), 1 "
                      "(ZeRO-1: reduce-scatter, sharded optimizer, "
                      "all-gather) or -1 (the machine's zero_stage), got "
                   << std::to_string(zeroStage);
    return signalPassFailure();
  }
  if (zeroStage != -1)
    sys.simulation.zeroStage = static_cast<int>(zeroStage);
  if (bucketMb != -1) {
    if (!(bucketMb > 0 && bucketMb < 1e12)) {
      emitError(loc) << "pipe-simulate: bucket-mb must be a capacity in MiB "
                        "> 0 (pipeopt-run --bucket-mb; -1: the machine's "
                        "bucket_bytes, default 25), got "
                     << std::to_string(bucketMb);
      return signalPassFailure();
    }
    sys.simulation.gradientBucketBytes = bucketMb * 1024 * 1024;
  }
  if (pipe::OptimizerAttr o =
          pipe::PipeDialect::OptimizerAttrHelper(&getContext())
              .getAttr(getOperation()))
    optimizer = pipe::stringifyOptimizerKind(o.getKind()).str();
  if (groups.empty()) {
    emitError(loc) << "pipe-simulate: no pipe.program in the module (run "
                      "pipe-schedule on a stage graph first)";
    return signalPassFailure();
  }
  if ((!trace.empty() || !svg.empty()) && groups.size() != 1) {
    emitError(loc) << "pipe-simulate: trace= and svg= need exactly one "
                      "scheduled function, the module has "
                   << groups.size();
    return signalPassFailure();
  }

  std::optional<cost::Profile> prof;
  if (!profile.empty()) {
    auto p = cost::loadProfile(profile);
    if (!p) {
      emitError(loc) << "pipe-simulate: " << llvm::toString(p.takeError());
      return signalPassFailure();
    }
    if (!p->ops.empty()) {
      emitError(loc) << "pipe-simulate: profile '" << profile
                     << "' has per-op entries (\"ops\"); their indices name "
                        "ops of the model function before outlining: apply "
                        "them with pipe-partition profile=, or give per-stage "
                        "entries (\"stages\")";
      return signalPassFailure();
    }
    prof = std::move(*p);
  }

  // --- Simulation ---------------------------------------------------------
  std::vector<SimResult> results;
  for (auto &[base, programs] : groups) {
    FailureOr<SimResult> r = simulateGroup(
        base, programs, *hw, sys, optimizerFactor, prof ? &*prof : nullptr);
    if (failed(r))
      return signalPassFailure();
    results.push_back(std::move(*r));
  }

  // --- Output -------------------------------------------------------------
  auto write = [&](StringRef what, StringRef path,
                   StringRef content) -> LogicalResult {
    if (llvm::Error e = sim::writeTextFile(path, content)) {
      emitError(loc) << "pipe-simulate: " << what << ": "
                     << llvm::toString(std::move(e));
      return failure();
    }
    return success();
  };
  if (report.empty() || report == "-") {
    for (const SimResult &r : results)
      printReport(llvm::outs(), r, sys, hw->name);
    llvm::outs().flush();
  } else {
    llvm::json::Array rows, functions;
    for (const SimResult &r : results) {
      appendRows(rows, r, sys);
      llvm::json::Array stages;
      for (const sim::StageCost &c : r.costs.stages)
        stages.push_back(sim::stageCostJSON(c));
      llvm::json::Array tied;
      for (const sim::TiedGroup &g : r.costs.tied)
        tied.push_back(llvm::json::Object{
            {"stages", llvm::json::Array(g.stages)}, {"bytes", g.bytes}});
      functions.push_back(llvm::json::Object{
          {"function", r.function},
          {"schedule", r.schedule.name},
          {"measured", r.measured},
          {"optimizer_factor", r.optimizerFactor},
          {"data_parallel", sys.simulation.dataParallel},
          {"zero_stage", sys.simulation.zeroStage},
          {"bucket_bytes", sys.simulation.gradientBucketBytes},
          {"optimizer", optimizer},
          {"cost_table", llvm::json::Object{{"name", r.costs.name},
                                            {"stages", std::move(stages)},
                                            {"tied", std::move(tied)}}}});
    }
    llvm::json::Object root{{"device", hw->name},
                            {"system", sys.name},
                            {"functions", std::move(functions)},
                            {"rows", std::move(rows)}};
    std::string text =
        llvm::formatv("{0:2}", llvm::json::Value(std::move(root))).str() + "\n";
    if (failed(write("report", report, text)))
      return signalPassFailure();
  }
  if (!trace.empty() || !svg.empty()) {
    const SimResult &r = results.front();
    std::string title =
        llvm::formatv("@{0}: {1}, {2} ranks, {3} microbatches, {4}, {5} level",
                      r.function, r.schedule.name, r.schedule.numRanks,
                      r.schedule.numMicrobatches, sys.name,
                      sim::levelName(traceLevel))
            .str();
    if (!trace.empty() &&
        failed(write("trace", trace, sim::chromeTraceJSON(r.timeline, title))))
      return signalPassFailure();
    if (!svg.empty()) {
      sim::SvgOptions o;
      o.title = title;
      if (failed(write("svg", svg, sim::renderSvgGantt(r.timeline, o))))
        return signalPassFailure();
    }
  }
  markAllAnalysesPreserved();
}
