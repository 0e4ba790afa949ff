//===- Explore.cpp - Sweeps, rankings, flips and rows of the explorer -----===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// See Explore.h.
///
//===----------------------------------------------------------------------===//

#include "pipeopt/Simulate/Explore.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>

using namespace pipeopt;
using namespace pipeopt::sim;

const Level sim::kExploreLevels[3] = {Level::Formula, Level::Table,
                                      Level::Event};

static std::string num(double v, const char *fmt = "%.6g") {
  char buf[48];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

double sim::peakRankMemoryBytes(const Metrics &m) {
  double peak = 0;
  size_t n = std::max(m.peakActivationBytes.size(), m.weightBytes.size());
  for (size_t r = 0; r < n; ++r) {
    double act =
        r < m.peakActivationBytes.size() ? m.peakActivationBytes[r] : 0;
    double w = r < m.weightBytes.size() ? m.weightBytes[r] : 0;
    peak = std::max(peak, act + w);
  }
  return peak;
}

double ExplorePoint::secondsPerMicrobatch() const {
  return microbatches > 0 ? eval.event.makespanSec / microbatches : 0;
}

bool ExploreGroup::operator<(const ExploreGroup &o) const {
  return std::tie(stages, microbatches, system) <
         std::tie(o.stages, o.microbatches, o.system);
}

//===----------------------------------------------------------------------===//
// Sweep
//===----------------------------------------------------------------------===//

namespace {

/// Shape of a schedule family, measured on a small instance of the
/// generator (2 ranks, 8 microbatches) so that the size of a large
/// configuration is known before it is built: chunks (model stages) per
/// rank, compute actions per (model stage, microbatch) and transfer
/// directions per stage boundary and microbatch (2 for training: the
/// activation forward and its gradient back).
struct ScheduleShape {
  double chunksPerRank = 1;
  double computePerStageMicrobatch = 1;
  double directions = 1;

  /// Upper estimate of the schedule's actions for S ranks and M
  /// microbatches: compute actions plus a send and a recv per transfer
  /// (every stage boundary counted as crossing ranks).
  double actions(int S, int M) const {
    double stages = S * chunksPerRank;
    return stages * M * computePerStageMicrobatch +
           2 * directions * std::max(stages - 1, 0.0) * M;
  }
};

/// Measures the shape of `name` on one small instance (2 ranks, 8
/// microbatches, the virtual stages and waves of `p`); nullopt when the
/// generator refuses it.
std::optional<ScheduleShape> measureShape(llvm::StringRef name,
                                          schedule::ScheduleParams p) {
  p.numStages = 0;
  p.numRanks = 2;
  p.numMicrobatches = 8;
  llvm::Expected<schedule::Schedule> s = schedule::makeSchedule(name, p);
  if (!s) {
    llvm::consumeError(s.takeError());
    return std::nullopt;
  }
  size_t compute = 0;
  for (const std::vector<schedule::Action> &row : s->actions)
    compute += llvm::count_if(
        row, [](const schedule::Action &a) { return a.isCompute(); });
  ScheduleShape shape;
  shape.chunksPerRank = double(s->numStages) / s->numRanks;
  shape.computePerStageMicrobatch =
      double(compute) / (double(s->numStages) * s->numMicrobatches);
  shape.directions = s->forwardOnly ? 1 : 2;
  return shape;
}

/// The shape of `name` with the virtual stages and waves of `like`. The
/// generators are only ever run on tiny instances: with at most 2 virtual
/// stages and 2 waves the measurement is exact; larger values are
/// extrapolated linearly (chunks per rank are linear in the virtual stages
/// and in the waves: v, or 2 x waves for Hanayo) from probes at the small
/// value and one more, so the estimate costs the same for 65536 virtual
/// stages as for 2.
ScheduleShape probeShape(llvm::StringRef name,
                         const schedule::ScheduleParams &like) {
  schedule::ScheduleParams base = like;
  base.virtualStages = std::min(like.virtualStages, 2);
  base.waves = std::min(like.waves, 2);
  std::optional<ScheduleShape> shape = measureShape(name, base);
  auto slope = [&](bool waves) -> std::optional<double> {
    schedule::ScheduleParams next = base;
    (waves ? next.waves : next.virtualStages) += 1;
    std::optional<ScheduleShape> s = measureShape(name, next);
    if (!s)
      return std::nullopt;
    return s->chunksPerRank - shape->chunksPerRank;
  };
  if (shape && like.virtualStages > base.virtualStages) {
    std::optional<double> d = slope(/*waves=*/false);
    if (d)
      shape->chunksPerRank += *d * (like.virtualStages - base.virtualStages);
    else
      shape.reset();
  }
  if (shape && like.waves > base.waves) {
    std::optional<double> d = slope(/*waves=*/true);
    if (d)
      shape->chunksPerRank += *d * (like.waves - base.waves);
    else
      shape.reset();
  }
  if (shape)
    return *shape;
  // Conservative: the most chunks and phases any generator uses.
  ScheduleShape conservative;
  conservative.chunksPerRank =
      std::max({2, 2 * like.waves, like.virtualStages});
  conservative.computePerStageMicrobatch = 3;
  conservative.directions = 2;
  return conservative;
}

} // namespace

llvm::Expected<SweepResult> sim::sweep(const SweepOptions &opts,
                                       const CostTableFor &tableFor,
                                       const PointHook &hook) {
  SweepResult res;
  for (const std::string &name : opts.schedules) {
    schedule::ScheduleParams like;
    like.waves = opts.waves;
    // The virtual stages apply to the schedules whose chunks per rank are
    // configurable (their registry row's ChunkRule).
    const schedule::ScheduleInfo *row = schedule::findSchedule(name);
    if (opts.virtualStages > 0 && row &&
        row->chunks.kind == schedule::ChunkRule::Configurable)
      like.virtualStages = opts.virtualStages;
    const ScheduleShape shape = probeShape(name, like);
    for (int S : opts.stages)
      for (int M : opts.microbatches) {
        schedule::ScheduleParams params = like;
        params.numRanks = S;
        params.numMicrobatches = M;
        // The schedule table and the simulator's graphs grow with the
        // number of actions: a configuration too large for memory is
        // refused before anything is allocated for it.
        double actions = shape.actions(S, M);
        if (actions > double(opts.maxActions)) {
          std::string note =
              llvm::formatv("{0} S={1} M={2}: too large to simulate: about "
                            "{3} schedule actions, over the limit "
                            "--max-actions={4}",
                            name, S, M, num(actions, "%.3g"), opts.maxActions)
                  .str();
          res.tooLarge.push_back(note);
          res.skipped.push_back(std::move(note));
          continue;
        }
        llvm::Expected<schedule::Schedule> sched =
            schedule::makeSchedule(name, params);
        if (!sched) {
          res.skipped.push_back(llvm::formatv("{0} S={1} M={2}: {3}", name, S,
                                              M,
                                              llvm::toString(sched.takeError()))
                                    .str());
          continue;
        }
        llvm::Expected<CostTable> table = tableFor(*sched);
        if (!table) {
          res.skipped.push_back(llvm::formatv("{0} S={1} M={2}: {3}", name, S,
                                              M,
                                              llvm::toString(table.takeError()))
                                    .str());
          continue;
        }
        for (const machine::Machine &sys : opts.systems) {
          llvm::Expected<Evaluation> ev = evaluate(*sched, *table, sys);
          if (!ev) {
            res.skipped.push_back(llvm::formatv("{0} S={1} M={2} {3}: {4}",
                                                name, S, M, sys.name,
                                                llvm::toString(ev.takeError()))
                                      .str());
            continue;
          }
          ExplorePoint p;
          p.schedule = name;
          p.stages = S;
          p.microbatches = M;
          p.modelStages = sched->numStages;
          p.system = sys.name;
          p.eval = std::move(*ev);
          p.peakMemoryBytes = peakRankMemoryBytes(p.eval.event);
          p.memoryLimitBytes = opts.memoryLimitBytes > 0
                                   ? opts.memoryLimitBytes
                                   : sys.memoryLimitBytes();
          res.points.push_back(std::move(p));
          if (hook)
            if (llvm::Error e = hook(res.points.back(), *sched, *table, sys))
              return std::move(e);
        }
      }
  }
  return res;
}

//===----------------------------------------------------------------------===//
// Rankings and flips
//===----------------------------------------------------------------------===//

std::vector<int> sim::rankAt(llvm::ArrayRef<const ExplorePoint *> pts,
                             Level level, double tol) {
  std::vector<int> idx;
  for (size_t i = 0; i < pts.size(); ++i)
    if (pts[i]->eval.at(level).available)
      idx.push_back(static_cast<int>(i));
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) {
    return pts[a]->eval.at(level).makespanSec <
           pts[b]->eval.at(level).makespanSec;
  });
  std::vector<int> rank(pts.size(), 0);
  double anchor = -1;
  int current = 0;
  for (size_t k = 0; k < idx.size(); ++k) {
    double ms = pts[idx[k]]->eval.at(level).makespanSec;
    if (anchor < 0 || ms > anchor * (1 + tol)) {
      current = static_cast<int>(k) + 1;
      anchor = ms;
    }
    rank[idx[k]] = current;
  }
  return rank;
}

Ranking sim::rankPoints(const std::vector<ExplorePoint> &points, double tol) {
  Ranking out;
  for (const ExplorePoint &p : points) {
    out.rankOf[&p] = {0, 0, 0};
    if (p.overMemory()) {
      out.overMemory.push_back(&p);
      continue;
    }
    out.groups[{p.stages, p.microbatches, p.system}].push_back(&p);
  }
  for (auto &[g, pts] : out.groups) {
    std::array<std::vector<int>, 3> ranks;
    for (int l = 0; l < 3; ++l) {
      ranks[l] = rankAt(pts, kExploreLevels[l], tol);
      for (size_t i = 0; i < pts.size(); ++i) {
        out.rankOf[pts[i]][l] = ranks[l][i];
        if (ranks[l][i] == 1)
          out.bestOf[g][l].push_back(pts[i]->schedule);
      }
    }
    const std::pair<int, int> pairs[] = {{0, 1}, {1, 2}, {0, 2}};
    for (auto [a, b] : pairs) {
      // Schedules both levels evaluate.
      std::vector<int> common;
      for (size_t i = 0; i < pts.size(); ++i)
        if (ranks[a][i] > 0 && ranks[b][i] > 0)
          common.push_back(static_cast<int>(i));
      if (common.size() < 2)
        continue;
      auto bestAt = [&](int level) {
        double best = -1;
        for (int i : common) {
          double ms = pts[i]->eval.at(kExploreLevels[level]).makespanSec;
          if (best < 0 || ms < best)
            best = ms;
        }
        std::vector<int> sel;
        for (int i : common)
          if (pts[i]->eval.at(kExploreLevels[level]).makespanSec <=
              best * (1 + tol))
            sel.push_back(i);
        return sel;
      };
      std::vector<int> ba = bestAt(a), bb = bestAt(b);
      bool disjoint =
          llvm::none_of(ba, [&](int i) { return llvm::is_contained(bb, i); });
      if (!disjoint)
        continue;
      Flip f;
      f.group = g;
      f.a = kExploreLevels[a];
      f.b = kExploreLevels[b];
      for (size_t x = 0; x < common.size(); ++x)
        for (size_t y = x + 1; y < common.size(); ++y) {
          const Evaluation &ex = pts[common[x]]->eval,
                           &ey = pts[common[y]]->eval;
          auto cmp = [&](Level l) {
            double u = ex.at(l).makespanSec, v = ey.at(l).makespanSec;
            if (u < v / (1 + tol))
              return -1;
            if (v < u / (1 + tol))
              return 1;
            return 0;
          };
          int ca = cmp(f.a), cb = cmp(f.b);
          ++f.comparablePairs;
          if (ca != 0 && cb != 0 && ca != cb)
            ++f.discordantPairs;
        }
      for (int i : ba)
        f.bestA.push_back(pts[i]->schedule);
      for (int i : bb)
        f.bestB.push_back(pts[i]->schedule);
      f.bestAAtA = pts[ba[0]]->eval.at(f.a).makespanSec;
      f.bestAAtB = pts[ba[0]]->eval.at(f.b).makespanSec;
      f.bestBAtA = pts[bb[0]]->eval.at(f.a).makespanSec;
      f.bestBAtB = pts[bb[0]]->eval.at(f.b).makespanSec;
      out.flips.push_back(std::move(f));
    }
  }
  return out;
}
/// How much less time per microbatch `best` takes than `runnerUp`, in
/// percent of the runner-up's (0 without a runner-up or with a zero time).
template <typename Point>
static double marginPercent(const Point &best, const Point *runnerUp) {
  if (!runnerUp || runnerUp->secondsPerMicrobatch() <= 0)
    return 0;
  return 100.0 *
         (runnerUp->secondsPerMicrobatch() - best.secondsPerMicrobatch()) /
         runnerUp->secondsPerMicrobatch();
}

//===----------------------------------------------------------------------===//
// Recommendation
//===----------------------------------------------------------------------===//

std::vector<Recommendation>
sim::recommend(const std::vector<ExplorePoint> &points) {
  std::vector<Recommendation> out;
  std::map<std::string, size_t> index;
  for (const ExplorePoint &p : points) {
    auto [it, inserted] = index.emplace(p.system, out.size());
    if (inserted) {
      out.emplace_back();
      out.back().system = p.system;
    }
    Recommendation &r = out[it->second];
    if (!r.smallest || p.peakMemoryBytes < r.smallest->peakMemoryBytes)
      r.smallest = &p;
    if (p.overMemory()) {
      ++r.removed;
      continue;
    }
    if (!p.eval.event.available)
      continue;
    if (!r.best || p.secondsPerMicrobatch() < r.best->secondsPerMicrobatch())
      r.best = &p;
  }
  for (Recommendation &r : out) {
    if (!r.best)
      continue;
    for (const ExplorePoint &p : points)
      if (p.system == r.system && !p.overMemory() && p.eval.event.available &&
          p.schedule != r.best->schedule &&
          (!r.runnerUp ||
           p.secondsPerMicrobatch() < r.runnerUp->secondsPerMicrobatch()))
        r.runnerUp = &p;
    r.marginPercent = marginPercent(*r.best, r.runnerUp);
  }
  return out;
}

std::string sim::describePoint(const ExplorePoint &p, bool withSystem) {
  std::string s = llvm::formatv("{0} S={1} M={2} v={3}", p.schedule, p.stages,
                                p.microbatches, p.virtualStages())
                      .str();
  if (withSystem)
    s += " on " + p.system;
  return s;
}

std::string sim::formatGiB(double bytes) {
  return num(bytes / (1024.0 * 1024 * 1024), "%.3g") + " GiB";
}

/// "1.234 s" / "38.6 ms" / "12.1 us": 4 significant digits.
static std::string seconds(double s) {
  if (s >= 1 || s == 0)
    return num(s, "%.4g") + " s";
  if (s >= 1e-3)
    return num(s * 1e3, "%.4g") + " ms";
  return num(s * 1e6, "%.4g") + " us";
}

std::string sim::recommendationLine(const Recommendation &r, double tol) {
  if (!r.best) {
    if (!r.smallest)
      return "no configuration was evaluated on " + r.system;
    return llvm::formatv("no configuration fits the {0} memory limit on {1}; "
                         "the smallest needs {2} ({3})",
                         formatGiB(r.smallest->memoryLimitBytes), r.system,
                         formatGiB(r.smallest->peakMemoryBytes),
                         describePoint(*r.smallest))
        .str();
  }
  const ExplorePoint &b = *r.best;
  std::string line =
      llvm::formatv("recommended: {0}: {1} per batch ({2} per "
                    "microbatch)",
                    describePoint(b, true), seconds(b.eval.event.makespanSec),
                    seconds(b.secondsPerMicrobatch()))
          .str();
  // Within the tie tolerance (rankPoints' rule: t_runner <= t_best x
  // (1 + tol)) the two tie: "0.0% faster" would claim an order.
  if (r.runnerUp && r.runnerUp->secondsPerMicrobatch() <=
                        b.secondsPerMicrobatch() * (1 + tol))
    line += llvm::formatv(", ties with {0} (within the tie tolerance; {1} per "
                          "batch, {2} per microbatch)",
                          describePoint(*r.runnerUp),
                          seconds(r.runnerUp->eval.event.makespanSec),
                          seconds(r.runnerUp->secondsPerMicrobatch()))
                .str();
  else if (r.runnerUp)
    line +=
        llvm::formatv(", {0}% faster per microbatch than {1} ({2} per "
                      "batch, {3} per microbatch)",
                      num(r.marginPercent, "%.1f"), describePoint(*r.runnerUp),
                      seconds(r.runnerUp->eval.event.makespanSec),
                      seconds(r.runnerUp->secondsPerMicrobatch()))
            .str();
  else
    line += "; no other schedule fits";
  if (r.removed)
    line += llvm::formatv("; {0} configuration{1} over the {2} memory limit "
                          "removed",
                          r.removed, r.removed == 1 ? "" : "s",
                          formatGiB(b.memoryLimitBytes))
                .str();
  return line;
}

std::string sim::memoryRemovedLine(const Ranking &r) {
  if (r.overMemory.empty())
    return "";
  const ExplorePoint *worst = r.overMemory.front();
  bool oneLimit = true;
  for (const ExplorePoint *p : r.overMemory) {
    if (p->peakMemoryBytes > worst->peakMemoryBytes)
      worst = p;
    oneLimit &= p->memoryLimitBytes == r.overMemory.front()->memoryLimitBytes;
  }
  size_t n = r.overMemory.size();
  return llvm::formatv("removed: {0} configuration{1} over the {2}; e.g. {3} "
                       "needs {4}",
                       n, n == 1 ? "" : "s",
                       oneLimit ? formatGiB(worst->memoryLimitBytes) + " limit"
                                : std::string("systems' memory limits"),
                       describePoint(*worst, true),
                       formatGiB(worst->peakMemoryBytes))
      .str();
}

static llvm::json::Object pointJSON(const ExplorePoint &p) {
  return llvm::json::Object{
      {"schedule", p.schedule},
      {"stages", p.stages},
      {"microbatches", p.microbatches},
      {"virtual_stages", p.virtualStages()},
      {"model_stages", p.modelStages},
      {"makespan_s", p.eval.event.makespanSec},
      {"seconds_per_microbatch", p.secondsPerMicrobatch()},
      {"peak_memory_bytes", p.peakMemoryBytes}};
}

llvm::json::Object sim::recommendationJSON(const Recommendation &r) {
  llvm::json::Object o{{"system", r.system},
                       {"fits", r.best != nullptr},
                       {"removed", r.removed}};
  if (r.best) {
    for (auto &kv : pointJSON(*r.best))
      o[kv.first] = kv.second;
    o["runner_up"] = r.runnerUp ? llvm::json::Value(pointJSON(*r.runnerUp))
                                : llvm::json::Value(nullptr);
    o["margin_percent"] = r.marginPercent;
  } else if (r.smallest) {
    o["smallest_memory_bytes"] = r.smallest->peakMemoryBytes;
    o["memory_limit_bytes"] = r.smallest->memoryLimitBytes;
    o["smallest"] = pointJSON(*r.smallest);
  }
  return o;
}

//===----------------------------------------------------------------------===//
// Rows
//===----------------------------------------------------------------------===//

llvm::json::Object sim::rowJSON(const RowKey &key, Level level,
                                const Metrics &m) {
  llvm::json::Object row{{"schedule", key.schedule},
                         {"stages", key.stages},
                         {"model_stages", key.modelStages},
                         {"microbatches", key.microbatches},
                         {"system", key.system},
                         {"level", levelName(level).str()},
                         {"available", m.available},
                         {"note", m.note}};
  addMetricsJSON(row, m);
  return row;
}

void sim::writeRowsCSV(llvm::raw_ostream &os,
                       const std::vector<ExplorePoint> &points,
                       const Ranking &ranking) {
  os << "schedule,stages,model_stages,microbatches,system,level,available,"
        "makespan_s,bubble_ratio,peak_activation_bytes,weight_bytes,"
        "comm_bytes,staleness_max_delay,staleness_mean_delay,rank\n";
  for (const ExplorePoint &p : points) {
    auto rank = ranking.rankOf.find(&p);
    for (int l = 0; l < 3; ++l) {
      const Metrics &m = p.eval.at(kExploreLevels[l]);
      os << p.schedule << "," << p.stages << "," << p.modelStages << ","
         << p.microbatches << "," << p.system << ","
         << levelName(kExploreLevels[l]) << "," << (m.available ? "1" : "0")
         << ",";
      if (m.available)
        os << num(m.makespanSec, "%.9g") << "," << num(m.bubbleRatio, "%.6f")
           << "," << num(m.maxPeakActivationBytes(), "%.0f") << ","
           << num(m.maxWeightBytes(), "%.0f") << "," << num(m.commBytes, "%.0f")
           << ",";
      else
        os << ",,,,,";
      if (m.available && m.staleness)
        os << m.staleness->maxDelay << "," << num(m.staleness->meanDelay);
      else
        os << ",";
      os << "," << (rank != ranking.rankOf.end() ? rank->second[l] : 0) << "\n";
    }
  }
}

llvm::json::Object sim::stageCostJSON(const StageCost &c) {
  return llvm::json::Object{{"forward_s", c.forwardSec},
                            {"backward_input_s", c.backwardInputSec},
                            {"backward_weight_s", c.backwardWeightSec},
                            {"activation_bytes", c.activationBytes},
                            {"weight_bytes", c.weightBytes},
                            {"gradient_bytes", c.reducedGradientBytes()},
                            {"optimizer_s", c.optimizerSec},
                            {"boundary_bytes", c.boundaryBytes}};
}

//===----------------------------------------------------------------------===//
// Device split
//===----------------------------------------------------------------------===//

llvm::StringRef sim::optimizerKindName(OptimizerKind k) {
  switch (k) {
  case OptimizerKind::SGD:
    return "sgd";
  case OptimizerKind::Momentum:
    return "momentum";
  case OptimizerKind::AdamW:
    return "adamw";
  }
  return "sgd";
}

llvm::Expected<OptimizerKind> sim::parseOptimizerKind(llvm::StringRef name) {
  std::string n = name.lower();
  if (n == "sgd")
    return OptimizerKind::SGD;
  if (n == "momentum" || n == "sgd-momentum")
    return OptimizerKind::Momentum;
  if (n == "adamw")
    return OptimizerKind::AdamW;
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "unknown optimizer '%s' (expected sgd, momentum or adamw, the "
      "runtime's optimizers)",
      name.str().c_str());
}

double sim::optimizerStateBytesPerElement(OptimizerKind k) {
  // The runtime's f64 optimizer state (8 bytes per value; Explore.h: the
  // f32 state of cpu builds' f32 parameters is half of it).
  switch (k) {
  case OptimizerKind::SGD:
    return 0;
  case OptimizerKind::Momentum:
    return 8;
  case OptimizerKind::AdamW:
    return 16;
  }
  return 0;
}

double sim::parameterElementsOf(const StageCost &c,
                                const TrainingMemoryModel &mm) {
  if (c.parameterElements > 0)
    return c.parameterElements;
  return mm.weightElementBytes > 0 ? c.parameterBytes() / mm.weightElementBytes
                                   : 0;
}

llvm::Expected<std::vector<RankMemory>>
sim::trainingRankMemory(const schedule::Schedule &s, const CostTable &tableIn,
                        const Metrics &event, const TrainingMemoryModel &mm,
                        int dataParallel, int zeroStage) {
  auto err = [](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
  };
  if (!(mm.weightElementBytes > 0) || !std::isfinite(mm.weightElementBytes))
    return err("bytes per weight element must be a finite number > 0");
  if (!(mm.gradientElementBytes >= 0) || !(mm.optimizerStateElementBytes >= 0))
    return err("bytes per gradient / optimizer-state element must be >= 0");
  if (dataParallel < 1)
    return err("data-parallel degree must be >= 1, got " +
               llvm::Twine(dataParallel));
  if (zeroStage != 0 && zeroStage != 1)
    return err("ZeRO stage must be 0 or 1, got " + llvm::Twine(zeroStage));
  if (static_cast<int>(event.peakActivationBytes.size()) != s.numRanks)
    return err(llvm::formatv("metrics have {0} ranks, the schedule {1}",
                             event.peakActivationBytes.size(), s.numRanks)
                   .str());
  const double shards = zeroStage >= 1 ? dataParallel : 1;
  // The simulator's mapping of the table onto the schedule's stages.
  const CostTable table = tableIn.resample(s.numStages);
  std::vector<RankMemory> out(s.numRanks);
  for (int r = 0; r < s.numRanks; ++r) {
    out[r].rank = r;
    out[r].activationBytes = event.peakActivationBytes[r];
  }
  std::set<std::pair<int, int>> seen; // (rank, stage)
  for (const std::vector<int> &pipeline : s.stageRank)
    for (size_t st = 0; st < pipeline.size(); ++st) {
      int r = pipeline[st];
      if (r < 0 || r >= s.numRanks || static_cast<int>(st) >= table.size() ||
          !seen.insert({r, static_cast<int>(st)}).second)
        continue;
      double params = table.stages[st].parameterBytes();
      double elements = parameterElementsOf(table.stages[st], mm);
      out[r].weightBytes += params;
      out[r].gradientBytes += elements * mm.gradientElementBytes;
      out[r].optimizerStateBytes +=
          elements * mm.optimizerStateElementBytes / shards;
    }
  return out;
}

double SplitPoint::secondsPerMicrobatch() const {
  return globalMicrobatches > 0 ? stepSec() / globalMicrobatches : 0;
}

std::string sim::describeSplitPoint(const SplitPoint &p, bool withSystem) {
  std::string s =
      llvm::formatv("D={0} x P={1} {2} M={3} ({4} per replica) v={5} ZeRO-{6}",
                    p.dataParallel, p.pipelineRanks(), p.point.schedule,
                    p.globalMicrobatches, p.point.microbatches,
                    p.point.virtualStages(), p.zeroStage)
          .str();
  if (withSystem)
    s += " on " + p.point.system;
  return s;
}

llvm::Expected<SplitSearch> sim::searchSplits(const SplitOptions &opts,
                                              const CostTableFor &tableFor) {
  auto err = [](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
  };
  if (opts.devices < 1)
    return err("the device count must be >= 1, got " +
               llvm::Twine(opts.devices));
  if (opts.schedules.empty() || opts.globalMicrobatches.empty() ||
      opts.systems.empty() || opts.zeroStages.empty())
    return err("the split search needs at least one schedule, microbatch "
               "count, system and ZeRO stage");
  for (int z : opts.zeroStages)
    if (z != 0 && z != 1)
      return err("ZeRO stage must be 0 or 1, got " + llvm::Twine(z));

  SplitSearch res;
  std::vector<std::string> synchronous;
  for (const std::string &name : opts.schedules) {
    const schedule::ScheduleInfo *row = schedule::findSchedule(name);
    if (row && row->async())
      res.skipped.push_back(
          name + ": asynchronous (weights updated per microbatch, no global "
                 "batch to split between replicas); not searched");
    else
      synchronous.push_back(name);
  }
  for (int P = 1; P <= opts.devices; ++P) {
    if (opts.devices % P)
      continue;
    res.pipelineRanks.push_back(P);
    const int D = opts.devices / P;
    const std::string split = llvm::formatv("D={0} x P={1}", D, P).str();
    if (synchronous.empty())
      continue;
    for (int M : opts.globalMicrobatches) {
      if (M % D) {
        res.skipped.push_back(
            llvm::formatv("{0} M={1}: {1} global microbatches do not split "
                          "evenly over {2} replicas",
                          split, M, D)
                .str());
        continue;
      }
      for (int z : opts.zeroStages) {
        // ZeRO-1 over one replica shards nothing: it is ZeRO-0.
        if (z == 1 && D == 1)
          continue;
        SweepOptions so;
        so.schedules = synchronous;
        so.stages = {P};
        so.microbatches = {M / D};
        so.systems = opts.systems;
        for (machine::Machine &m : so.systems) {
          m.simulation.dataParallel = D;
          m.simulation.zeroStage = z;
        }
        so.virtualStages = opts.virtualStages;
        so.waves = opts.waves;
        so.maxActions = opts.maxActions;
        so.memoryLimitBytes = opts.memoryLimitBytes;
        std::vector<RankMemory> peaks;
        std::optional<llvm::Error> memoryError;
        auto hook = [&](const ExplorePoint &p, const schedule::Schedule &s,
                        const CostTable &t,
                        const machine::Machine &) -> llvm::Error {
          llvm::Expected<std::vector<RankMemory>> mem =
              trainingRankMemory(s, t, p.eval.event, opts.memory, D, z);
          if (!mem)
            return llvm::createStringError(
                llvm::inconvertibleErrorCode(),
                llvm::formatv("{0} {1}: {2}", split, describePoint(p, true),
                              llvm::toString(mem.takeError()))
                    .str());
          RankMemory peak;
          for (const RankMemory &rm : *mem)
            if (rm.total() > peak.total())
              peak = rm;
          peaks.push_back(peak);
          return llvm::Error::success();
        };
        // The runtime exchanges its gradient sums (double): an entry that
        // does not say what its exchanges move moves those.
        auto runtimeTableFor =
            [&](const schedule::Schedule &s) -> llvm::Expected<CostTable> {
          llvm::Expected<CostTable> t = tableFor(s);
          if (!t)
            return t.takeError();
          for (StageCost &c : t->stages)
            if (c.exchangedGradientBytes < 0)
              c.exchangedGradientBytes = parameterElementsOf(c, opts.memory) *
                                         opts.memory.gradientElementBytes;
          return t;
        };
        llvm::Expected<SweepResult> sw = sweep(so, runtimeTableFor, hook);
        if (!sw)
          return sw.takeError();
        // The ZeRO stages of one split skip the same configurations for
        // the same reasons: each reason is listed once.
        auto addOnce = [](std::vector<std::string> &to, std::string s) {
          if (!llvm::is_contained(to, s))
            to.push_back(std::move(s));
        };
        for (const std::string &s : sw->skipped)
          addOnce(res.skipped, split + " " + s);
        for (const std::string &s : sw->tooLarge)
          addOnce(res.tooLarge, split + " " + s);
        for (size_t i = 0; i < sw->points.size(); ++i) {
          SplitPoint sp;
          sp.point = std::move(sw->points[i]);
          sp.dataParallel = D;
          sp.globalMicrobatches = M;
          sp.zeroStage = z;
          sp.peak = peaks[i];
          sp.point.peakMemoryBytes = sp.peak.total();
          res.points.push_back(std::move(sp));
        }
      }
    }
  }
  return res;
}

std::vector<SplitRecommendation>
sim::recommendSplits(const std::vector<SplitPoint> &points, double tol) {
  std::vector<SplitRecommendation> out;
  std::map<std::string, size_t> index;
  auto fits = [](const SplitPoint &p) {
    return !p.overMemory() && p.point.eval.event.available;
  };
  // Among the fitting points of `sel`, the first (in search order) within
  // the tie tolerance of the fastest.
  auto fastest = [&](auto &&sel) -> const SplitPoint * {
    double best = -1;
    for (const SplitPoint &p : points)
      if (fits(p) && sel(p) && (best < 0 || p.secondsPerMicrobatch() < best))
        best = p.secondsPerMicrobatch();
    for (const SplitPoint &p : points)
      if (fits(p) && sel(p) && p.secondsPerMicrobatch() <= best * (1 + tol))
        return &p;
    return nullptr;
  };
  for (const SplitPoint &p : points) {
    auto [it, inserted] = index.emplace(p.point.system, out.size());
    if (inserted) {
      out.emplace_back();
      out.back().system = p.point.system;
      out.back().memoryLimitBytes = p.point.memoryLimitBytes;
    }
    SplitRecommendation &r = out[it->second];
    auto st = llvm::find_if(r.splits, [&](const SplitStatus &s) {
      return s.pipelineRanks == p.pipelineRanks();
    });
    if (st == r.splits.end()) {
      r.splits.push_back({});
      st = std::prev(r.splits.end());
      st->dataParallel = p.dataParallel;
      st->pipelineRanks = p.pipelineRanks();
    }
    ++st->evaluated;
    if (p.overMemory())
      ++st->overMemory;
    if (!st->smallest || p.peak.total() < st->smallest->peak.total())
      st->smallest = &p;
    if (!r.closest || p.peak.total() < r.closest->peak.total())
      r.closest = &p;
  }
  for (SplitRecommendation &r : out) {
    llvm::sort(r.splits, [](const SplitStatus &a, const SplitStatus &b) {
      return a.pipelineRanks < b.pipelineRanks;
    });
    for (SplitStatus &s : r.splits)
      s.best = fastest([&](const SplitPoint &p) {
        return p.point.system == r.system &&
               p.pipelineRanks() == s.pipelineRanks;
      });
    r.best = fastest(
        [&](const SplitPoint &p) { return p.point.system == r.system; });
    if (!r.best)
      continue;
    r.closest = nullptr;
    for (const SplitStatus &s : r.splits)
      if (s.best && s.pipelineRanks != r.best->pipelineRanks() &&
          (!r.runnerUp ||
           s.best->secondsPerMicrobatch() < r.runnerUp->secondsPerMicrobatch()))
        r.runnerUp = s.best;
    r.marginPercent = marginPercent(*r.best, r.runnerUp);
  }
  return out;
}

std::string sim::splitRecommendationLine(const SplitRecommendation &r,
                                         double tol) {
  int devices = 0;
  if (!r.splits.empty())
    devices = r.splits.front().dataParallel * r.splits.front().pipelineRanks;
  if (!r.best) {
    if (!r.closest)
      return "no D x P split was evaluated on " + r.system;
    return llvm::formatv(
               "no D x P split of {0} devices fits the {1} memory "
               "limit on {2}; the closest is {3} needing {4} ({5} "
               "over)",
               devices, formatGiB(r.memoryLimitBytes), r.system,
               describeSplitPoint(*r.closest),
               formatGiB(r.closest->peak.total()),
               formatGiB(r.closest->peak.total() - r.memoryLimitBytes))
        .str();
  }
  const SplitPoint &b = *r.best;
  std::string line =
      llvm::formatv("recommended: {0}: {1} per step ({2} per microbatch), "
                    "peak memory {3}",
                    describeSplitPoint(b, true), seconds(b.stepSec()),
                    seconds(b.secondsPerMicrobatch()),
                    formatGiB(b.peak.total()))
          .str();
  if (r.memoryLimitBytes > 0)
    line += " of " + formatGiB(r.memoryLimitBytes);
  line += llvm::formatv(" (rank {0})", b.peak.rank).str();
  if (r.runnerUp && r.runnerUp->secondsPerMicrobatch() <=
                        b.secondsPerMicrobatch() * (1 + tol))
    line += llvm::formatv("; ties with the best other split {0} ({1} per "
                          "step, within the tie tolerance)",
                          describeSplitPoint(*r.runnerUp),
                          seconds(r.runnerUp->stepSec()))
                .str();
  else if (r.runnerUp)
    line += llvm::formatv("; {0}% faster per microbatch than the best other "
                          "split {1} ({2} per step)",
                          num(r.marginPercent, "%.1f"),
                          describeSplitPoint(*r.runnerUp),
                          seconds(r.runnerUp->stepSec()))
                .str();
  else
    line += "; no other split fits";
  std::vector<std::string> over;
  for (const SplitStatus &s : r.splits)
    if (!s.best && s.smallest && s.smallest->overMemory())
      over.push_back(
          llvm::formatv("D={0} x P={1} (needs at least {2}, {3} over)",
                        s.dataParallel, s.pipelineRanks,
                        formatGiB(s.smallest->peak.total()),
                        formatGiB(s.smallest->peak.total() -
                                  s.smallest->point.memoryLimitBytes))
              .str());
  if (!over.empty()) {
    line += "; over the memory limit: ";
    for (size_t i = 0; i < over.size(); ++i)
      line += (i ? ", " : "") + over[i];
  }
  return line;
}

llvm::json::Object sim::splitPointJSON(const SplitPoint &p) {
  const double limit = p.point.memoryLimitBytes;
  return llvm::json::Object{
      {"data_parallel", p.dataParallel},
      {"pipeline_ranks", p.pipelineRanks()},
      {"schedule", p.point.schedule},
      {"virtual_stages", p.point.virtualStages()},
      {"global_microbatches", p.globalMicrobatches},
      {"replica_microbatches", p.point.microbatches},
      {"zero_stage", p.zeroStage},
      {"system", p.point.system},
      {"step_s", p.stepSec()},
      {"seconds_per_microbatch", p.secondsPerMicrobatch()},
      {"allreduce_s", p.point.eval.event.allReduceSec},
      {"peak_memory_bytes", p.peak.total()},
      {"memory_limit_bytes",
       limit > 0 ? llvm::json::Value(limit) : llvm::json::Value(nullptr)},
      {"fits", !p.overMemory()},
      {"peak_rank", p.peak.rank},
      {"memory",
       llvm::json::Object{{"weights_bytes", p.peak.weightBytes},
                          {"gradients_bytes", p.peak.gradientBytes},
                          {"optimizer_state_bytes", p.peak.optimizerStateBytes},
                          {"activations_bytes", p.peak.activationBytes}}}};
}

llvm::json::Object sim::splitRecommendationJSON(const SplitRecommendation &r,
                                                double tol) {
  auto orNull = [](const SplitPoint *p) {
    return p ? llvm::json::Value(splitPointJSON(*p))
             : llvm::json::Value(nullptr);
  };
  llvm::json::Array splits;
  for (const SplitStatus &s : r.splits)
    splits.push_back(llvm::json::Object{
        {"data_parallel", s.dataParallel},
        {"pipeline_ranks", s.pipelineRanks},
        {"evaluated", s.evaluated},
        {"over_memory", s.overMemory},
        {"best", orNull(s.best)},
        {"smallest_memory_bytes",
         s.smallest ? llvm::json::Value(s.smallest->peak.total())
                    : llvm::json::Value(nullptr)}});
  return llvm::json::Object{
      {"system", r.system},
      {"fits", r.best != nullptr},
      {"line", splitRecommendationLine(r, tol)},
      {"memory_limit_bytes", r.memoryLimitBytes > 0
                                 ? llvm::json::Value(r.memoryLimitBytes)
                                 : llvm::json::Value(nullptr)},
      {"best", orNull(r.best)},
      {"runner_up", orNull(r.runnerUp)},
      {"margin_percent", r.marginPercent},
      {"closest", orNull(r.closest)},
      {"splits", std::move(splits)}};
}
