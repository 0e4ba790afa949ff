//===- TaskGraph.cpp - Compute tasks and their dependencies ---------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "TaskGraph.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <map>
#include <set>

using namespace pipeopt;
using namespace pipeopt::sim;
using namespace pipeopt::sim::detail;
using schedule::Action;
using schedule::Phase;

static llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static std::string describeTask(Phase p, int stage, int mb) {
  return schedule::describe(schedule::Action::compute(p, stage, mb));
}

schedule::StageGraph detail::defaultGraph(const schedule::Schedule &s,
                                          const CostTable &costs) {
  schedule::StageGraph g;
  g.numStages = s.numStages;
  for (int i = 0; i + 1 < s.numStages; ++i) {
    double bytes = i < costs.size() ? costs.stages[i].boundaryBytes : 0.0;
    g.edges.push_back({i, i + 1, bytes});
  }
  return g;
}

static int pipelineOf(const schedule::Schedule &s, int mb) {
  if (mb >= 0 && mb < static_cast<int>(s.microbatchPipeline.size()))
    return s.microbatchPipeline[mb];
  return 0;
}

static int rankOf(const schedule::Schedule &s, int stage, int mb) {
  int p = pipelineOf(s, mb);
  if (p < 0 || p >= static_cast<int>(s.stageRank.size()))
    return -1;
  if (stage < 0 || stage >= static_cast<int>(s.stageRank[p].size()))
    return -1;
  return s.stageRank[p][stage];
}

llvm::Expected<TaskGraph> detail::buildTaskGraph(const schedule::Schedule &s,
                                                 const CostTable &costs,
                                                 double computeSpeed,
                                                 const schedule::StageGraph &g,
                                                 Durations durations) {
  const int S = s.numStages, M = s.numMicrobatches, R = s.numRanks;
  if (S <= 0 || M <= 0 || R <= 0)
    return makeError(llvm::formatv("schedule '{0}': needs stages, microbatches "
                                   "and ranks > 0 (got {1}, {2}, {3})",
                                   s.name, S, M, R));
  if (static_cast<int>(s.actions.size()) != R)
    return makeError(llvm::formatv("schedule '{0}': {1} action lists for {2} "
                                   "ranks",
                                   s.name, s.actions.size(), R));
  if (durations == Durations::Costs && costs.size() != S)
    return makeError(llvm::formatv("cost table has {0} entries, schedule has "
                                   "{1} stages",
                                   costs.size(), S));
  if (computeSpeed <= 0)
    return makeError("compute speed must be > 0");
  for (const schedule::StageEdge &e : g.edges)
    if (e.from < 0 || e.to >= S || e.from >= e.to)
      return makeError(llvm::formatv("stage graph edge {0} -> {1} is not a "
                                     "forward edge among {2} stages",
                                     e.from, e.to, S));

  TaskGraph tg;
  tg.numRanks = R;
  tg.rankTasks.resize(R);
  // [stage * M + mb] -> task id, per kind: F, "B done" (B or BW),
  // "W done" (W or BW).
  const size_t n = static_cast<size_t>(S) * M;
  std::vector<int> fTask(n, -1), bTask(n, -1), wTask(n, -1);
  for (int r = 0; r < R; ++r) {
    for (const Action &a : s.actions[r]) {
      if (!a.isCompute())
        continue;
      if (a.stage < 0 || a.stage >= S || a.microbatch < 0 || a.microbatch >= M)
        return makeError(llvm::formatv(
            "rank {0}: {1} is out of range ({2} "
            "stages, {3} microbatches)",
            r, describeTask(a.phase, a.stage, a.microbatch), S, M));
      Task t;
      t.rank = r;
      t.action = a;
      const StageCost *c =
          durations == Durations::Costs ? &costs.stages[a.stage] : nullptr;
      switch (a.phase) {
      case Phase::F:
        t.durationSec = c ? c->forwardSec / computeSpeed : 1.0;
        break;
      case Phase::B:
        t.durationSec = c ? c->backwardInputSec / computeSpeed : 1.0;
        break;
      case Phase::W:
        t.durationSec =
            c ? (c->backwardWeightSec + c->gradientAccumulateSec) / computeSpeed
              : 1.0;
        break;
      case Phase::BW:
        t.durationSec =
            c ? (c->backwardSec() + c->gradientAccumulateSec) / computeSpeed
              : 1.0;
        break;
      default:
        break;
      }
      int id = static_cast<int>(tg.tasks.size());
      size_t key = static_cast<size_t>(a.stage) * M + a.microbatch;
      auto claim = [&](std::vector<int> &slot) -> llvm::Error {
        if (slot[key] >= 0)
          return makeError(
              llvm::formatv("rank {0}: {1} appears twice", r,
                            describeTask(a.phase, a.stage, a.microbatch)));
        slot[key] = id;
        return llvm::Error::success();
      };
      llvm::Error err = llvm::Error::success();
      if (a.phase == Phase::F)
        err = claim(fTask);
      else if (a.phase == Phase::B)
        err = claim(bTask);
      else if (a.phase == Phase::W)
        err = claim(wTask);
      else {
        err = claim(bTask);
        if (!err)
          err = claim(wTask);
      }
      if (err)
        return std::move(err);
      tg.tasks.push_back(t);
      tg.rankTasks[r].push_back(id);
    }
  }

  std::vector<std::vector<const schedule::StageEdge *>> in(S), out(S);
  for (const schedule::StageEdge &e : g.edges) {
    in[e.to].push_back(&e);
    out[e.from].push_back(&e);
  }

  tg.inDeps.resize(tg.tasks.size());
  tg.outDeps.resize(tg.tasks.size());
  auto addDep = [&](int producer, int consumer, double bytes, bool backward) {
    Dep d;
    d.producer = producer;
    d.consumer = consumer;
    d.bytes = bytes;
    d.backward = backward;
    d.crossRank = tg.tasks[producer].rank != tg.tasks[consumer].rank;
    int id = static_cast<int>(tg.deps.size());
    tg.deps.push_back(d);
    tg.inDeps[consumer].push_back(id);
    tg.outDeps[producer].push_back(id);
  };
  auto need = [&](const std::vector<int> &slot, Phase p, int stage, int mb,
                  int consumer) -> llvm::Expected<int> {
    int id = slot[static_cast<size_t>(stage) * M + mb];
    if (id < 0) {
      const Action &c = tg.tasks[consumer].action;
      return makeError(llvm::formatv(
          "schedule '{0}': {1} needs {2}, which the table does not contain",
          s.name, describeTask(c.phase, c.stage, c.microbatch),
          describeTask(p, stage, mb)));
    }
    return id;
  };

  for (int id = 0, e = static_cast<int>(tg.tasks.size()); id < e; ++id) {
    const Task &t = tg.tasks[id];
    const Action &a = t.action;
    int r = rankOf(s, a.stage, a.microbatch);
    if (r >= 0 && r != t.rank)
      return makeError(llvm::formatv(
          "schedule '{0}': {1} is on rank {2} but its pipeline places stage "
          "{3} on rank {4}",
          s.name, describeTask(a.phase, a.stage, a.microbatch), t.rank, a.stage,
          r));
    switch (a.phase) {
    case Phase::F:
      for (const schedule::StageEdge *edge : in[a.stage]) {
        llvm::Expected<int> p =
            need(fTask, Phase::F, edge->from, a.microbatch, id);
        if (!p)
          return p.takeError();
        addDep(*p, id, edge->bytes, /*backward=*/false);
      }
      break;
    case Phase::B:
    case Phase::BW: {
      llvm::Expected<int> f = need(fTask, Phase::F, a.stage, a.microbatch, id);
      if (!f)
        return f.takeError();
      addDep(*f, id, 0, false);
      for (const schedule::StageEdge *edge : out[a.stage]) {
        llvm::Expected<int> p =
            need(bTask, s.splitBackward ? Phase::B : Phase::BW, edge->to,
                 a.microbatch, id);
        if (!p)
          return p.takeError();
        addDep(*p, id, edge->bytes, /*backward=*/true);
      }
      break;
    }
    case Phase::W: {
      llvm::Expected<int> b = need(bTask, Phase::B, a.stage, a.microbatch, id);
      if (!b)
        return b.takeError();
      addDep(*b, id, 0, false);
      break;
    }
    default:
      break;
    }
  }
  // A local dependency never crosses ranks even with odd placements: the
  // activation of F is where F ran.
  for (Dep &d : tg.deps)
    if (d.bytes == 0 && d.crossRank &&
        tg.tasks[d.producer].action.stage == tg.tasks[d.consumer].action.stage)
      d.crossRank = false;
  return tg;
}

llvm::Expected<IdealRun> detail::runIdeal(const TaskGraph &g) {
  const size_t n = g.tasks.size();
  IdealRun run;
  run.start.assign(n, 0);
  run.end.assign(n, 0);
  run.ordinal.assign(n, -1);
  std::vector<char> done(n, 0);
  std::vector<size_t> pos(g.numRanks, 0);
  std::vector<double> rankFree(g.numRanks, 0);
  int next = 0;
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < g.numRanks; ++r) {
      const std::vector<int> &list = g.rankTasks[r];
      while (pos[r] < list.size()) {
        int t = list[pos[r]];
        double ready = rankFree[r];
        bool ok = true;
        for (int d : g.inDeps[t]) {
          int p = g.deps[d].producer;
          if (!done[p]) {
            ok = false;
            break;
          }
          ready = std::max(ready, run.end[p]);
        }
        if (!ok)
          break;
        run.start[t] = ready;
        run.end[t] = ready + g.tasks[t].durationSec;
        rankFree[r] = run.end[t];
        run.makespan = std::max(run.makespan, run.end[t]);
        done[t] = 1;
        run.ordinal[t] = next++;
        ++pos[r];
        progress = true;
      }
    }
  }
  if (static_cast<size_t>(next) != n) {
    // Name the first stuck action per rank.
    std::string msg = "the table has no consistent execution order:";
    for (int r = 0; r < g.numRanks; ++r) {
      if (pos[r] >= g.rankTasks[r].size())
        continue;
      const Action &a = g.tasks[g.rankTasks[r][pos[r]]].action;
      msg += llvm::formatv(" rank {0} waits at {1};", r,
                           describeTask(a.phase, a.stage, a.microbatch))
                 .str();
    }
    return makeError(msg);
  }
  return run;
}

std::vector<double> detail::peakActivation(const schedule::Schedule &s,
                                           const CostTable &costs) {
  std::vector<double> peak(s.numRanks, 0);
  for (int r = 0; r < s.numRanks && r < static_cast<int>(s.actions.size());
       ++r) {
    double live = 0;
    for (const Action &a : s.actions[r]) {
      if (!a.isCompute() || a.stage < 0 || a.stage >= costs.size())
        continue;
      const StageCost &c = costs.stages[a.stage];
      switch (a.phase) {
      case Phase::F:
        live += c.activationBytes;
        peak[r] = std::max(peak[r], live);
        if (s.forwardOnly)
          live -= c.activationBytes;
        break;
      case Phase::B:
        // What W still needs may exceed what B frees (B's stash for W).
        live -= c.activationBytes - c.weightGradHoldBytes;
        peak[r] = std::max(peak[r], live);
        break;
      case Phase::W:
        live -= c.weightGradHoldBytes;
        break;
      case Phase::BW:
        live -= c.activationBytes;
        break;
      default:
        break;
      }
    }
  }
  return peak;
}

std::vector<double> detail::weightMemory(const schedule::Schedule &s,
                                         const CostTable &costs) {
  std::vector<double> w(s.numRanks, 0);
  // Replicas: distinct (pipeline, stage) placements.
  std::set<std::pair<int, int>> seen; // (rank, stage) per pipeline
  for (size_t p = 0; p < s.stageRank.size(); ++p)
    for (size_t st = 0; st < s.stageRank[p].size(); ++st) {
      int r = s.stageRank[p][st];
      if (r < 0 || r >= s.numRanks || static_cast<int>(st) >= costs.size())
        continue;
      // Two pipelines that put the same stage on the same rank share it.
      if (!seen.insert({r, static_cast<int>(st)}).second)
        continue;
      w[r] += costs.stages[st].weightBytes;
    }
  if (!s.async)
    return w;

  // Weight stashing (PipeDream, Harlap et al. 2018, §3.3): a forward pins
  // the stage's current weight version until its backward. The rank holds
  // every pinned version plus the current one. A stage's current version is
  // (backwards done) / (backwards per update).
  const int every = inferUpdateInterval(s);
  std::fill(w.begin(), w.end(), 0.0);
  for (int r = 0; r < s.numRanks && r < static_cast<int>(s.actions.size());
       ++r) {
    std::set<int> stagesHere;
    for (size_t p = 0; p < s.stageRank.size(); ++p)
      for (size_t st = 0; st < s.stageRank[p].size(); ++st)
        if (s.stageRank[p][st] == r && static_cast<int>(st) < costs.size())
          stagesHere.insert(static_cast<int>(st));
    std::map<int, int> backwards;             // stage -> backwards done
    std::map<int, std::map<int, int>> pinned; // stage -> mb -> version
    auto current = [&]() {
      double bytes = 0;
      for (int st : stagesHere) {
        std::set<int> versions{backwards[st] / every};
        for (auto &kv : pinned[st])
          versions.insert(kv.second);
        bytes += costs.stages[st].weightBytes * versions.size();
      }
      return bytes;
    };
    double peak = current();
    for (const Action &a : s.actions[r]) {
      if (!a.isCompute() || !stagesHere.count(a.stage))
        continue;
      if (a.phase == Phase::F) {
        pinned[a.stage][a.microbatch] = backwards[a.stage] / every;
      } else if (a.phase == Phase::B || a.phase == Phase::BW) {
        pinned[a.stage].erase(a.microbatch);
        if (a.phase == Phase::BW || !s.splitBackward)
          ++backwards[a.stage];
      } else if (a.phase == Phase::W) {
        ++backwards[a.stage];
      }
      peak = std::max(peak, current());
    }
    w[r] = peak;
  }
  return w;
}

int detail::inferUpdateInterval(const schedule::Schedule &s) {
  // (backwards done on the stage before the F, version of the F)
  std::vector<std::pair<int, int>> obs;
  for (const auto &row : s.actions) {
    std::map<int, int> backwards;
    for (const Action &a : row) {
      if (!a.isCompute())
        continue;
      if (a.phase == Phase::F && a.weightVersion >= 0)
        obs.push_back({backwards[a.stage], a.weightVersion});
      else if (a.phase == Phase::BW || a.phase == Phase::W)
        ++backwards[a.stage];
    }
  }
  if (obs.empty())
    return 1;
  for (int every = 1; every <= std::max(1, s.numMicrobatches); ++every) {
    bool ok = true;
    for (auto [done, version] : obs)
      if (done / every != version) {
        ok = false;
        break;
      }
    if (ok)
      return every;
  }
  return 1;
}
