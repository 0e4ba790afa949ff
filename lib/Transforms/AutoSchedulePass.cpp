//===- AutoSchedulePass.cpp - pipe-auto-schedule: the explorer's choice ---===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// pipe-auto-schedule (schedule=auto): evaluates candidate (schedule,
/// microbatches, chunks per rank) configurations of the model with the
/// explorer library (include/pipeopt/Simulate/Explore.h) on the cost tables
/// of its balanced partitions (ModelCostTables.h), picks the fastest one that
/// fits the memory limit, says why in one remark, and runs pipe-partition,
/// pipe-outline-stages and pipe-schedule with it. See Passes.td.
///
//===----------------------------------------------------------------------===//

#include "pipeopt/Support/OptionRange.h"

#include "pipeopt/Analysis/CostModel.h"
#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"
#include "pipeopt/Schedule/Schedule.h"
#include "pipeopt/Simulate/Explore.h"
#include "pipeopt/Support/Plural.h"
#include "pipeopt/Transforms/ModelCostTables.h"
#include "pipeopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdio>
#include <set>

namespace pipeopt {
#define GEN_PASS_DEF_AUTOSCHEDULEPASS
#include "pipeopt/Transforms/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;
using namespace pipeopt;
namespace sched = pipeopt::schedule;

namespace {

struct AutoSchedulePass
    : pipeopt::impl::AutoSchedulePassBase<AutoSchedulePass> {
  using AutoSchedulePassBase::AutoSchedulePassBase;
  void runOnOperation() override;
};

std::string seconds(double s) {
  char buf[48];
  if (s >= 1)
    std::snprintf(buf, sizeof(buf), "%.4g s", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof(buf), "%.4g ms", s * 1e3);
  else
    std::snprintf(buf, sizeof(buf), "%.4g us", s * 1e6);
  return buf;
}

/// "80 GiB" from 1 GiB up, "5.37 MiB" from 1 MiB up, "977 KiB" from 1 KiB
/// up, else "512 B".
std::string bytes(double b) {
  char buf[48];
  if (b >= 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof(buf), "%.3g GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024)
    std::snprintf(buf, sizeof(buf), "%.3g MiB", b / (1024.0 * 1024));
  else if (b >= 1024.0)
    std::snprintf(buf, sizeof(buf), "%.3g KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof(buf), "%.0f B", b);
  return buf;
}

} // namespace

void AutoSchedulePass::runOnOperation() {
  ModuleOp module = getOperation();
  Location loc = module.getLoc();
  if (!module.getBody()->empty())
    loc = module.getBody()->front().getLoc();
  auto error = [&]() { return emitError(loc) << "pipe-auto-schedule: "; };

  // --- Options --------------------------------------------------------------
  if (failed(checkOptimizerFactor(loc, "pipe-auto-schedule", optimizerFactor)))
    return signalPassFailure();
  if (numRanks < 1 || numRanks > 1024) {
    error() << "num-ranks (num-stages= of pipeopt-pipeline) must be between 1 "
               "and 1024, got "
            << static_cast<int64_t>(numRanks);
    return signalPassFailure();
  }
  if (numMicrobatches < 0 || numMicrobatches > 100000) {
    error() << "num-microbatches must be between 0 (choose) and 100000, got "
            << static_cast<int64_t>(numMicrobatches);
    return signalPassFailure();
  }
  const int R = static_cast<int>(numRanks);
  std::vector<int> microbatches;
  if (numMicrobatches > 0) {
    if (!microbatchCandidates.empty()) {
      error() << "microbatch-candidates (auto-microbatches= of "
                 "pipeopt-pipeline) applies only with "
                 "num-microbatches=0 (num-microbatches="
              << static_cast<int64_t>(numMicrobatches) << " fixes M)";
      return signalPassFailure();
    }
    microbatches.push_back(static_cast<int>(numMicrobatches));
  } else if (microbatchCandidates.empty()) {
    microbatches = {R, 2 * R, 4 * R, 8 * R};
  } else {
    std::set<int64_t> seen;
    for (int64_t m : microbatchCandidates) {
      if (m < 1 || m > 100000) {
        error() << "microbatch-candidates (auto-microbatches= of "
                   "pipeopt-pipeline): every value must be between 1 "
                   "and 100000, got "
                << m;
        return signalPassFailure();
      }
      if (seen.insert(m).second)
        microbatches.push_back(static_cast<int>(m));
    }
  }
  std::vector<int> chunkCandidates = {0};
  for (int64_t v : virtualStages) {
    if (v < 1 || v > sched::kMaxPipelineCount) {
      error() << "virtual-stages: every value must be between 1 and "
              << sched::kMaxPipelineCount << ", got " << v;
      return signalPassFailure();
    }
    if (!llvm::is_contained(chunkCandidates, static_cast<int>(v)))
      chunkCandidates.push_back(static_cast<int>(v));
  }
  std::vector<std::string> candidates;
  if (schedules.empty()) {
    for (const sched::ScheduleInfo &i : sched::listSchedules())
      if (training ? (i.exploreByDefault && !i.forwardOnly && !i.async())
                   : i.forwardOnly)
        candidates.push_back(i.name.str());
  } else {
    for (const std::string &name : schedules) {
      llvm::Expected<const sched::ScheduleInfo &> row =
          sched::lookupSchedule(name);
      if (!row) {
        error() << "schedules (auto-schedules= of pipeopt-pipeline): "
                << llvm::toString(row.takeError());
        return signalPassFailure();
      }
      // A candidate must fit the build kind: a training schedule would put
      // pipe.backward into an inference pipeline, a forward-only one has
      // no backward pass to train with.
      if (row->forwardOnly == training) {
        error() << "schedules (auto-schedules= of pipeopt-pipeline): '" << name
                << "' is "
                << (training ? "a forward-only (inference) schedule"
                             : "a training schedule (it runs backward)")
                << ", but the build is "
                << (training ? "training (training=true)"
                             : "inference (training=false)");
        return signalPassFailure();
      }
      if (!llvm::is_contained(candidates, row->name.str()))
        candidates.push_back(row->name.str());
    }
  }

  auto hw = machine::loadMachine(device, hardware);
  if (!hw) {
    error() << llvm::toString(hw.takeError());
    return signalPassFailure();
  }
  double limit = hw->device.memoryCapacityBytes;
  if (!memoryLimit.empty()) {
    auto bytes = machine::parseByteSize(memoryLimit);
    if (!bytes) {
      error() << "memory-limit: " << llvm::toString(bytes.takeError());
      return signalPassFailure();
    }
    limit = *bytes;
  }
  const double optFactor =
      optimizerFactor >= 0 ? optimizerFactor : (training ? 3.0 : 0.0);

  // --- The model ------------------------------------------------------------
  func::FuncOp model;
  size_t modelOps = 0;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal() ||
        fn->hasAttr(pipe::PipeDialect::StageAttrHelper::getNameStr()))
      continue;
    if (!fn.getOps<pipe::StageCallOp>().empty()) {
      fn.emitError() << "pipe-auto-schedule: the module is already "
                        "partitioned and outlined (@"
                     << fn.getSymName()
                     << " is a stage graph); give the original model";
      return signalPassFailure();
    }
    size_t n = fn.getBody().front().getOperations().size();
    if (!model || n > modelOps) {
      model = fn;
      modelOps = n;
    }
  }
  if (!model) {
    error() << "no model function with a body";
    return signalPassFailure();
  }
  llvm::Expected<ModelCostTables> tables = ModelCostTables::fromFunction(
      model, *hw, optFactor, training,
      llvm::formatv("@{0} on {1}", model.getSymName(), hw->name).str());
  if (!tables) {
    model.emitError() << "pipe-auto-schedule: "
                      << llvm::toString(tables.takeError());
    return signalPassFailure();
  }

  // --- Candidates -----------------------------------------------------------
  machine::Machine sys = *hw;
  sys.name += " topology";
  sys.simulation.memoryLimitBytes = limit;
  std::vector<sim::ExplorePoint> points;
  std::vector<std::string> skipped;
  for (int v : chunkCandidates) {
    sim::SweepOptions o;
    for (const std::string &name : candidates)
      if (v == 0 || sched::findSchedule(name)->chunks.kind ==
                        sched::ChunkRule::Configurable)
        o.schedules.push_back(name);
    if (o.schedules.empty())
      continue;
    o.stages = {R};
    o.microbatches = microbatches;
    o.systems = {sys};
    o.virtualStages = v;
    llvm::Expected<sim::SweepResult> r = sim::sweep(
        o, [&](const sched::Schedule &s) -> llvm::Expected<sim::CostTable> {
          llvm::Expected<const sim::CostTable *> t = tables->get(s.numStages);
          if (!t)
            return t.takeError();
          return **t;
        });
    if (!r) {
      error() << llvm::toString(r.takeError());
      return signalPassFailure();
    }
    for (sim::ExplorePoint &p : r->points) {
      // The row default may equal an explicit v: evaluate each once.
      bool dup = llvm::any_of(points, [&](const sim::ExplorePoint &q) {
        return q.schedule == p.schedule && q.microbatches == p.microbatches &&
               q.modelStages == p.modelStages;
      });
      if (!dup)
        points.push_back(std::move(p));
    }
    skipped.insert(skipped.end(), r->skipped.begin(), r->skipped.end());
  }
  if (points.empty()) {
    InFlightDiagnostic d = error();
    d << "no candidate configuration could be evaluated on " << R << " rank"
      << (R == 1 ? "" : "s") << ":";
    for (const std::string &s : skipped)
      d << "\n  " << s;
    return signalPassFailure();
  }
  std::vector<sim::Recommendation> rec = sim::recommend(points);
  const sim::Recommendation &r = rec.front();
  if (!r.best) {
    error() << "no candidate fits the memory limit of " << bytes(limit)
            << " per device (" << llvm::formatv("{0:F0}", limit)
            << " B); the smallest, " << sim::describePoint(*r.smallest)
            << ", needs " << bytes(r.smallest->peakMemoryBytes) << " ("
            << llvm::formatv("{0:F0}", r.smallest->peakMemoryBytes)
            << " B: peak activations plus weights of one rank)";
    return signalPassFailure();
  }
  const sim::ExplorePoint &best = *r.best;
  {
    InFlightDiagnostic d = emitRemark(loc);
    d << "pipe-auto-schedule: chose " << best.schedule << " with "
      << countOf(best.microbatches, "microbatch", "microbatches") << ", "
      << countOf(best.virtualStages(), "chunk")
      << " per rank (num-stages=" << best.modelStages << ") on " << R << " rank"
      << (R == 1 ? "" : "s") << ": " << seconds(best.eval.event.makespanSec)
      << " per iteration (" << seconds(best.secondsPerMicrobatch())
      << " per microbatch, event level, " << sys.name << ")";
    if (r.runnerUp)
      d << "; runner-up " << sim::describePoint(*r.runnerUp) << ": "
        << seconds(r.runnerUp->eval.event.makespanSec) << " per iteration, "
        << llvm::formatv("{0:F1}", r.marginPercent)
        << "% slower per microbatch";
    else
      d << (candidates.size() == 1 ? "; the only candidate schedule"
                                   : "; no other candidate schedule fits");
    if (limit > 0)
      d << "; " << r.removed << " of " << countOf(points.size(), "candidate")
        << " removed by the " << bytes(limit) << " memory limit";
    else
      d << "; " << countOf(points.size(), "candidate") << ", no memory limit";
  }
  pipe::PipeDialect::AutoScheduleAttrHelper(&getContext())
      .setAttr(module, pipe::AutoScheduleAttr::get(
                           &getContext(), best.schedule, best.microbatches,
                           best.virtualStages(), best.modelStages,
                           best.eval.event.makespanSec));

  // --- Partition, outline, schedule with the choice --------------------------
  OpPassManager pm(ModuleOp::getOperationName());
  PartitionPassOptions partition;
  partition.numStages = best.modelStages;
  partition.numMicrobatches = best.microbatches;
  partition.schedule = best.schedule;
  partition.device = device;
  partition.hardware = hardware;
  partition.memoryLimit = memoryLimit;
  partition.strategy = strategy;
  partition.training = training;
  partition.profile = profile;
  partition.report = report;
  partition.optimizerFactor = optimizerFactor;
  pm.addPass(createPartitionPass(partition));
  pm.addPass(createOutlineStagesPass());
  SchedulePassOptions schedule;
  schedule.scheduleName = best.schedule;
  schedule.numMicrobatches = best.microbatches;
  if (sched::findSchedule(best.schedule)->chunks.kind ==
      sched::ChunkRule::Configurable)
    schedule.virtualStages = best.virtualStages();
  pm.addPass(createSchedulePass(schedule));
  if (failed(runPipeline(pm, module)))
    return signalPassFailure();
}
