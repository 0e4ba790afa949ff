//===- Simulator.cpp - Table and event simulation, staleness --------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Simulate/Simulator.h"

#include "TaskGraph.h"
#include "pipeopt/runtime/Placement.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>

using namespace pipeopt;
using namespace pipeopt::sim;
using namespace pipeopt::sim::detail;
using schedule::Phase;

static llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::StringRef sim::levelName(Level level) {
  switch (level) {
  case Level::Formula:
    return "formula";
  case Level::Table:
    return "table";
  case Level::Event:
    return "event";
  }
  return "?";
}

double Metrics::maxPeakActivationBytes() const {
  double m = 0;
  for (double v : peakActivationBytes)
    m = std::max(m, v);
  return m;
}

double Metrics::maxWeightBytes() const {
  double m = 0;
  for (double v : weightBytes)
    m = std::max(m, v);
  return m;
}

const Metrics &Evaluation::at(Level level) const {
  switch (level) {
  case Level::Formula:
    return formula;
  case Level::Table:
    return table;
  case Level::Event:
    return event;
  }
  return table;
}

namespace {
/// One optimizer step of a stage on a rank (Collectives.h).
struct OptimizerStep {
  int rank = 0, stage = 0;
  double durationSec = 0;
  std::vector<int> reductions; ///< Reductions it waits for.
};

/// The after-backward actions of one iteration and what they wait for.
struct PostBackward {
  std::vector<GradientReduction> reductions;
  std::vector<std::vector<int>> taskDeps;        ///< [red] -> tasks.
  std::vector<std::vector<int>> reductionDeps;   ///< [red] -> earlier reds.
  std::vector<std::vector<OptimizerStep>> steps; ///< [rank], in order.
  /// An asynchronous schedule with inputs for these actions (not modeled).
  bool skippedAsync = false;
};

/// Inputs prepared once per call, and the idealized run of the table (free
/// communication) that both the table and the event level start from.
struct Prepared {
  CostTable costs;
  schedule::StageGraph graph;
  TaskGraph tasks;
  IdealRun ideal;
  PostBackward post;
};

/// Times of the after-backward actions at one level.
struct PostTimes {
  std::vector<double> redReady, redStart, redEnd;      ///< [red]
  std::vector<std::vector<double>> stepStart, stepEnd; ///< [rank][i]
};
} // namespace

static llvm::Expected<PostBackward>
planPostBackward(const schedule::Schedule &s, const CostTable &costs,
                 const machine::Machine &sys, const TaskGraph &g) {
  PostBackward post;
  llvm::Expected<std::vector<GradientReduction>> plan =
      planGradientReductions(s, costs, sys);
  if (!plan)
    return plan.takeError();
  post.reductions = std::move(*plan);
  post.steps.resize(g.numRanks);
  if (s.async) {
    bool any = sys.simulation.dataParallel > 1 || !costs.tied.empty();
    for (const StageCost &c : costs.stages)
      any |= c.optimizerSec > 0;
    post.skippedAsync = any;
  }
  if (s.async || s.forwardOnly)
    return post;
  // (rank, stage) -> last W / BW task and its position on the rank.
  std::map<std::pair<int, int>, std::pair<int, int>> last;
  for (int r = 0; r < g.numRanks; ++r)
    for (size_t i = 0; i < g.rankTasks[r].size(); ++i) {
      int t = g.rankTasks[r][i];
      const schedule::Action &a = g.tasks[t].action;
      if (a.phase == Phase::W || a.phase == Phase::BW)
        last[{r, a.stage}] = {t, static_cast<int>(i)};
    }
  const int n = static_cast<int>(post.reductions.size());
  post.taskDeps.resize(n);
  post.reductionDeps.resize(n);
  for (int i = 0; i < n; ++i) {
    const GradientReduction &red = post.reductions[i];
    for (int r : red.ranks)
      for (int st : red.stages) {
        auto it = last.find({r, st});
        if (it != last.end())
          post.taskDeps[i].push_back(it->second.first);
      }
    // The last bucket (and ZeRO-1's reduce-scatter) starts when the rank's
    // schedule ends.
    if (red.atRankEnd)
      for (int r : red.ranks)
        if (r < g.numRanks && !g.rankTasks[r].empty())
          post.taskDeps[i].push_back(g.rankTasks[r].back());
    if (red.tied)
      for (int k = 0; k < i; ++k)
        if (!post.reductions[k].tied &&
            llvm::is_contained(red.stages, post.reductions[k].stages.front()))
          post.reductionDeps[i].push_back(k);
  }
  for (int r = 0; r < g.numRanks; ++r) {
    std::vector<std::pair<int, int>> stages; // (position, stage)
    for (auto &[key, v] : last)
      if (key.first == r)
        stages.push_back({v.second, key.second});
    std::sort(stages.begin(), stages.end());
    for (auto [pos, st] : stages) {
      double sec = costs.stages[st].optimizerSec / sys.simulation.computeSpeed;
      if (sec <= 0)
        continue;
      OptimizerStep step;
      step.rank = r;
      step.stage = st;
      bool inBucket = false, zero = false;
      for (int i = 0; i < n; ++i)
        if (llvm::is_contained(post.reductions[i].stages, st) &&
            llvm::is_contained(post.reductions[i].ranks, r)) {
          inBucket |= post.reductions[i].bucket;
          zero |= post.reductions[i].zero;
        }
      // ZeRO-1: this rank updates 1/D of the stage's elements.
      step.durationSec = zero ? sec / sys.simulation.dataParallel : sec;
      // Buckets: the rank waits for all its buckets, then updates.
      for (int i = 0; i < n; ++i)
        if (llvm::is_contained(post.reductions[i].ranks, r) &&
            ((inBucket && post.reductions[i].bucket) ||
             llvm::is_contained(post.reductions[i].stages, st)))
          step.reductions.push_back(i);
      post.steps[r].push_back(std::move(step));
    }
  }
  return post;
}

/// Table-level times of the after-backward actions: no contention between
/// reductions (but a rank's data-parallel buckets one after another),
/// reductions after their gradients, optimizer steps after the rank's
/// table actions and their reductions. `taskEnd` and `rankEnd` (the end of
/// each rank's last table action) come from the run the actions follow.
static PostTimes timePostTable(const PostBackward &post,
                               const std::vector<double> &taskEnd,
                               const std::vector<double> &rankEnd) {
  PostTimes pt;
  const size_t n = post.reductions.size();
  pt.redReady.assign(n, 0);
  pt.redStart.assign(n, 0);
  pt.redEnd.assign(n, 0);
  // A rank's data-parallel buckets share its ring: one after another.
  std::map<int, double> bucketChannelFree;
  for (size_t i = 0; i < n; ++i) {
    const GradientReduction &red = post.reductions[i];
    double ready = 0;
    for (int t : post.taskDeps[i])
      ready = std::max(ready, taskEnd[t]);
    for (int k : post.reductionDeps[i])
      ready = std::max(ready, pt.redEnd[k]);
    pt.redReady[i] = ready;
    double start = ready;
    if (red.bucket && !red.ranks.empty())
      start = std::max(start, bucketChannelFree[red.ranks.front()]);
    pt.redStart[i] = start;
    pt.redEnd[i] = start + red.durationSec;
    if (red.bucket && !red.ranks.empty())
      bucketChannelFree[red.ranks.front()] = pt.redEnd[i];
  }
  pt.stepStart.resize(post.steps.size());
  pt.stepEnd.resize(post.steps.size());
  for (size_t r = 0; r < post.steps.size(); ++r) {
    double free = rankEnd[r];
    for (const OptimizerStep &step : post.steps[r]) {
      double start = free;
      for (int k : step.reductions)
        start = std::max(start, pt.redEnd[k]);
      pt.stepStart[r].push_back(start);
      pt.stepEnd[r].push_back(start + step.durationSec);
      free = start + step.durationSec;
    }
  }
  return pt;
}

/// End of each rank's last table action in a run.
static std::vector<double> rankEnds(const TaskGraph &g,
                                    const std::vector<double> &taskEnd) {
  std::vector<double> out(g.numRanks, 0);
  for (int r = 0; r < g.numRanks; ++r)
    for (int t : g.rankTasks[r])
      out[r] = std::max(out[r], taskEnd[t]);
  return out;
}

/// Makespan including the after-backward actions.
static double postMakespan(double tableEnd, const PostTimes &pt) {
  double m = tableEnd;
  for (double e : pt.redEnd)
    m = std::max(m, e);
  for (const std::vector<double> &v : pt.stepEnd)
    for (double e : v)
      m = std::max(m, e);
  return m;
}

static llvm::Expected<Prepared> prepare(const schedule::Schedule &s,
                                        const CostTable &costsIn,
                                        const machine::Machine &sys,
                                        const schedule::StageGraph *graph) {
  Prepared p;
  if (costsIn.size() == 0)
    return makeError("cost table is empty");
  p.costs = costsIn.resample(s.numStages);
  p.graph = graph ? *graph : defaultGraph(s, p.costs);
  if (p.graph.numStages != s.numStages)
    return makeError(llvm::formatv("stage graph has {0} stages, schedule "
                                   "'{1}' has {2}",
                                   p.graph.numStages, s.name, s.numStages));
  llvm::Expected<TaskGraph> tg = buildTaskGraph(
      s, p.costs, sys.simulation.computeSpeed, p.graph, Durations::Costs);
  if (!tg)
    return tg.takeError();
  p.tasks = std::move(*tg);
  // The runtime's per-iteration copy of a stage's weights, at the stage's
  // first action on each rank (machine::Device::inputCopyBytesPerSecond).
  if (double rate = sys.device.inputCopyBytesPerSecond; rate > 0)
    for (const std::vector<int> &tasks : p.tasks.rankTasks) {
      llvm::SmallDenseSet<int, 8> copied;
      for (int t : tasks) {
        int stage = p.tasks.tasks[t].action.stage;
        if (copied.insert(stage).second)
          p.tasks.tasks[t].durationSec +=
              2 * p.costs.stages[stage].parameterBytes() / rate;
      }
    }
  llvm::Expected<IdealRun> run = runIdeal(p.tasks);
  if (!run)
    return makeError("schedule '" + s.name +
                     "': " + llvm::toString(run.takeError()));
  p.ideal = std::move(*run);
  llvm::Expected<PostBackward> post =
      planPostBackward(s, p.costs, sys, p.tasks);
  if (!post)
    return makeError("schedule '" + s.name +
                     "': " + llvm::toString(post.takeError()));
  p.post = std::move(*post);
  return p;
}

/// Metrics that depend only on the table order and the costs.
static void fillStaticMetrics(const schedule::Schedule &s, const Prepared &p,
                              Metrics &m) {
  m.peakActivationBytes = peakActivation(s, p.costs);
  m.weightBytes = weightMemory(s, p.costs);
  m.commBytes = 0;
  for (const Dep &d : p.tasks.deps)
    if (d.crossRank)
      m.commBytes += d.bytes;
}

static void fillBubbles(const TaskGraph &g, double makespan, Metrics &m,
                        const PostBackward *post = nullptr) {
  m.makespanSec = makespan;
  m.bubblePerRank.assign(g.numRanks, 0);
  double busyTotal = 0;
  for (int r = 0; r < g.numRanks; ++r) {
    double busy = 0;
    for (int t : g.rankTasks[r])
      busy += g.tasks[t].durationSec;
    if (post)
      for (const OptimizerStep &step : post->steps[r])
        busy += step.durationSec;
    busyTotal += busy;
    m.bubblePerRank[r] = makespan > 0 ? std::max(0.0, 1 - busy / makespan) : 0;
  }
  m.bubbleRatio = makespan > 0 && g.numRanks > 0
                      ? std::max(0.0, 1 - busyTotal / (g.numRanks * makespan))
                      : 0;
}

/// Makespan, bubbles and the after-backward fields of `m`; `tableEnd` is
/// the end of the last schedule-table action.
static void fillTimes(const TaskGraph &g, const PostBackward &post,
                      const PostTimes &pt, double tableEnd, Metrics &m) {
  double makespan = postMakespan(tableEnd, pt);
  fillBubbles(g, makespan, m, &post);
  m.postBackwardSec = makespan - tableEnd;
  m.allReduceSecPerRank.assign(g.numRanks, 0);
  m.optimizerSecPerRank.assign(g.numRanks, 0);
  m.collectiveBytes = 0;
  for (size_t i = 0; i < post.reductions.size(); ++i) {
    const GradientReduction &red = post.reductions[i];
    for (int r : red.ranks)
      m.allReduceSecPerRank[r] += pt.redEnd[i] - pt.redStart[i];
    m.collectiveBytes += ringAllReduceBytesPerRank(
                             red.bytes, static_cast<int>(red.ring.size())) *
                         red.ranks.size();
  }
  for (int r = 0; r < g.numRanks; ++r)
    for (const OptimizerStep &step : post.steps[r])
      m.optimizerSecPerRank[r] += step.durationSec;
  m.allReduceSec = m.optimizerSec = 0;
  for (int r = 0; r < g.numRanks; ++r) {
    m.allReduceSec = std::max(m.allReduceSec, m.allReduceSecPerRank[r]);
    m.optimizerSec = std::max(m.optimizerSec, m.optimizerSecPerRank[r]);
  }
  if (post.skippedAsync)
    m.note += "; gradient all-reduces and optimizer steps are not modeled "
              "for asynchronous schedules";
}

/// The after-backward actions of a timeline.
static void addPostToTimeline(const PostBackward &post, const PostTimes &pt,
                              Timeline &t) {
  for (size_t i = 0; i < post.reductions.size(); ++i) {
    const GradientReduction &red = post.reductions[i];
    t.collectives.push_back({red.tied, red.stages, red.ranks,
                             static_cast<int>(red.ring.size()), red.bytes,
                             pt.redReady[i], pt.redStart[i], pt.redEnd[i]});
  }
  for (size_t r = 0; r < post.steps.size(); ++r)
    for (size_t i = 0; i < post.steps[r].size(); ++i)
      t.optimizerSteps.push_back({static_cast<int>(r), post.steps[r][i].stage,
                                  pt.stepStart[r][i], pt.stepEnd[r][i]});
}

static llvm::Error attachStaleness(const schedule::Schedule &s,
                                   const schedule::StageGraph &g, Metrics &m) {
  if (!s.async)
    return llvm::Error::success();
  llvm::Expected<Staleness> st = computeStaleness(s, &g);
  if (!st)
    return st.takeError();
  m.staleness = *st;
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Level 2: idealized table
//===----------------------------------------------------------------------===//

llvm::Expected<Metrics> sim::simulateTable(const schedule::Schedule &s,
                                           const CostTable &costs,
                                           const machine::Machine &sys,
                                           Timeline *timeline,
                                           const schedule::StageGraph *graph) {
  llvm::Expected<Prepared> p = prepare(s, costs, sys, graph);
  if (!p)
    return p.takeError();
  const IdealRun *run = &p->ideal;
  Metrics m;
  m.level = Level::Table;
  m.note = "schedule table, cost-model compute times, free communication";
  PostTimes pt = timePostTable(p->post, run->end, rankEnds(p->tasks, run->end));
  if (!p->post.reductions.empty())
    m.note = "schedule table, cost-model compute times, free point-to-point "
             "communication, gradient all-reduces without contention";
  fillTimes(p->tasks, p->post, pt, run->makespan, m);
  fillStaticMetrics(s, *p, m);
  if (llvm::Error e = attachStaleness(s, p->graph, m))
    return std::move(e);

  if (timeline) {
    Timeline &t = *timeline;
    t = Timeline();
    t.level = Level::Table;
    t.numRanks = s.numRanks;
    t.makespanSec = m.makespanSec;
    for (int r = 0; r < s.numRanks; ++r)
      for (int id : p->tasks.rankTasks[r])
        t.compute.push_back(
            {r, p->tasks.tasks[id].action, run->start[id], run->end[id]});
    for (const Dep &d : p->tasks.deps) {
      if (!d.crossRank)
        continue;
      const Task &prod = p->tasks.tasks[d.producer];
      const Task &cons = p->tasks.tasks[d.consumer];
      double at = run->end[d.producer];
      t.transfers.push_back({prod.rank, cons.rank, prod.action.stage,
                             cons.action.stage, prod.action.microbatch,
                             d.backward, d.bytes, at, at, at});
    }
    addPostToTimeline(p->post, pt, t);
  }
  return m;
}

//===----------------------------------------------------------------------===//
// Level 3: communication-aware event simulation
//===----------------------------------------------------------------------===//

/// Runs the DAG (`succ`, `indeg`, durations `dur`) with every vertex
/// starting when its last predecessor ends, except that the compute
/// vertices (cpuNode[v] >= 0, the group of cores they use: a node, or one
/// core of it for pinned ranks) share their group's cores[group] cores:
/// while k of a group's compute vertices run, each advances at
/// min(1, cores / k) of its speed (processor sharing; machine::
/// Topology::coresPerNode). A vertex v with wakeGroup[v] >= 0 (a message
/// or its send call) takes idleDur[v] instead of dur[v] when that group,
/// the receiver's cores, has no compute vertex running as it starts and is
/// not senderGroup[v], the sender's (a receiver woken on its sender's core
/// finds it awake): the receiver's core is idle
/// (Link::idleReceiverLatencySeconds); `dur` is updated to the time each
/// such vertex took. Of the vertices starting at one moment, the compute
/// vertices that are not send calls start first, then the send calls, then
/// the messages, so that each of those sees what runs at that moment. Fills
/// start / end / ready like the longest-path pass and returns the number of
/// vertices that ran (fewer than all: a cycle).
static int runProcessorSharing(
    const std::vector<std::vector<int>> &succ, std::vector<int> indeg,
    std::vector<double> &dur, const std::vector<int> &cpuNode,
    const std::vector<double> &cores, const std::vector<int> &wakeGroup,
    const std::vector<int> &senderGroup, const std::vector<double> &idleDur,
    std::vector<double> &start, std::vector<double> &end,
    std::vector<double> &ready) {
  const int V = static_cast<int>(dur.size());
  int numNodes = 1;
  for (int n : cpuNode)
    numNodes = std::max(numNodes, n + 1);
  std::vector<int> busy(numNodes, 0);  // running compute vertices per node
  std::vector<double> remaining(V, 0); // compute work left (s at speed 1)
  std::vector<double> finishAt(V, 0);
  std::vector<int> running, startNow;
  for (int v = 0; v < V; ++v)
    if (indeg[v] == 0)
      startNow.push_back(v);
  int ran = 0;
  double now = 0;
  auto rate = [&](int v) {
    return std::min(1.0, cores[size_t(cpuNode[v])] / busy[cpuNode[v]]);
  };
  auto finish = [&](int v) {
    end[v] = now;
    ++ran;
    for (int w : succ[v]) {
      ready[w] = std::max(ready[w], now);
      if (--indeg[w] == 0)
        startNow.push_back(w);
    }
  };
  auto takesIdleTime = [&](int v) {
    int g = wakeGroup[v];
    return g >= 0 && g != senderGroup[v] && busy[g] == 0;
  };
  // 0: compute, 1: a send call, 2: a message or another fixed vertex.
  auto startOrder = [&](int v) {
    return cpuNode[v] < 0 ? 2 : wakeGroup[v] >= 0 ? 1 : 0;
  };
  while (true) {
    // Start what became ready at `now` in startOrder; empty vertices end at
    // once (and may make more ready).
    while (!startNow.empty()) {
      std::vector<int> batch;
      batch.swap(startNow);
      std::stable_sort(batch.begin(), batch.end(), [&](int a, int b) {
        return startOrder(a) < startOrder(b);
      });
      for (int v : batch) {
        start[v] = now;
        if (takesIdleTime(v))
          dur[v] = idleDur[v];
        if (dur[v] <= 0) {
          finish(v);
          continue;
        }
        if (cpuNode[v] >= 0) {
          remaining[v] = dur[v];
          ++busy[cpuNode[v]];
        }
        running.push_back(v);
      }
    }
    if (running.empty())
      break;
    // The next end: a fixed vertex's start + duration, or a compute
    // vertex's remaining work at the node's current rate.
    double next = std::numeric_limits<double>::infinity();
    for (int v : running) {
      finishAt[v] =
          cpuNode[v] >= 0 ? now + remaining[v] / rate(v) : start[v] + dur[v];
      next = std::min(next, finishAt[v]);
    }
    for (int v : running)
      if (cpuNode[v] >= 0)
        remaining[v] -= rate(v) * (next - now);
    now = next;
    std::vector<int> still;
    std::vector<int> ended;
    for (int v : running)
      (finishAt[v] <= next ? ended : still).push_back(v);
    for (int v : ended)
      if (cpuNode[v] >= 0)
        --busy[cpuNode[v]];
    for (int v : ended) {
      // A fixed vertex ends exactly at start + duration, as in the
      // longest-path pass.
      finish(v);
      if (cpuNode[v] < 0)
        end[v] = start[v] + dur[v];
    }
    running = std::move(still);
  }
  return ran;
}

llvm::Expected<Metrics> sim::simulateEvents(const schedule::Schedule &s,
                                            const CostTable &costs,
                                            const machine::Machine &sys,
                                            Timeline *timeline,
                                            const schedule::StageGraph *graph) {
  llvm::Expected<Prepared> p = prepare(s, costs, sys, graph);
  if (!p)
    return p.takeError();
  const TaskGraph &g = p->tasks;
  // The idealized run fixes the order in which shared resources serve
  // transfers (see Simulator.h).
  const IdealRun *ideal = &p->ideal;

  const int R = g.numRanks;
  const int N = static_cast<int>(g.tasks.size());
  std::vector<int> xferDep; // transfer -> dep index
  for (int d = 0, e = static_cast<int>(g.deps.size()); d < e; ++d)
    if (g.deps[d].crossRank)
      xferDep.push_back(d);
  const int T = static_cast<int>(xferDep.size());

  const PostBackward &post = p->post;
  const int Rd = static_cast<int>(post.reductions.size());
  // Ready time of each reduction in the idealized table (its gradients; a
  // tied reduction after the stage reductions it waits for).
  std::vector<double> redIdealReady(Rd, 0);
  for (int i = 0; i < Rd; ++i) {
    for (int t : post.taskDeps[i])
      redIdealReady[i] = std::max(redIdealReady[i], ideal->end[t]);
    for (int k : post.reductionDeps[i])
      redIdealReady[i] = std::max(redIdealReady[i], redIdealReady[k]);
  }

  // Global service order of transfers [0, T) and reductions [T, T + Rd):
  // by ready time in the idealized table, transfers first at equal times.
  std::vector<int> order(T + Rd);
  std::iota(order.begin(), order.end(), 0);
  auto key = [&](int x) {
    if (x >= T)
      return std::make_tuple(redIdealReady[x - T], 1, x - T, 0, 0);
    const Dep &d = g.deps[xferDep[x]];
    return std::make_tuple(ideal->end[d.producer], 0,
                           ideal->ordinal[d.producer],
                           ideal->ordinal[d.consumer], xferDep[x]);
  };
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return key(a) < key(b); });

  // DAG over tasks [0, N), transfers [N, N + T), reductions
  // [N + T, N + T + Rd), optimizer steps after them, then the sender
  // overheads of the transfers whose link has one.
  const int redBase = N + T, stepBase = N + T + Rd;
  std::vector<std::vector<int>> stepNode(R);
  int V = stepBase;
  for (int r = 0; r < R; ++r)
    for (size_t i = 0; i < post.steps[r].size(); ++i)
      stepNode[r].push_back(V++);
  auto linkOf = [&](int x) -> const machine::Link & {
    const Dep &d = g.deps[xferDep[x]];
    return sys.topology.between(g.tasks[d.producer].rank,
                                g.tasks[d.consumer].rank);
  };
  std::vector<int> overheadNode(T, -1);
  for (int x = 0; x < T; ++x)
    if (linkOf(x).senderSeconds(false) > 0 || linkOf(x).senderSeconds(true) > 0)
      overheadNode[x] = V++;
  std::vector<std::vector<int>> succ(V);
  std::vector<int> indeg(V, 0);
  std::vector<double> dur(V, 0);
  // Messages (and their send calls) to an idle core take idleDur; the
  // receiving rank of each (-1: not a message).
  std::vector<double> idleDur(V, 0);
  std::vector<int> wakeRank(V, -1), sendRank(V, -1);
  auto edge = [&](int a, int b) {
    succ[a].push_back(b);
    ++indeg[b];
  };
  for (int t = 0; t < N; ++t)
    dur[t] = g.tasks[t].durationSec;
  std::vector<int> nextOnRank(N, -1);
  for (int r = 0; r < R; ++r)
    for (size_t i = 1; i < g.rankTasks[r].size(); ++i)
      nextOnRank[g.rankTasks[r][i - 1]] = g.rankTasks[r][i];
  // The send calls after each action, in service order: each one is
  // processor time on the sender (after the action or the previous send
  // call), its message leaves when the call starts, and the rank's next
  // action waits for the last call (Link::senderOverheadSeconds).
  // lastOnRank[t]: the vertex after which the rank is free again.
  std::vector<int> lastOnRank(N);
  std::iota(lastOnRank.begin(), lastOnRank.end(), 0);
  std::vector<int> sendAfter(T, -1); // a transfer's predecessor on its rank
  for (int x : order) {
    if (x >= T)
      continue;
    const int prod = g.deps[xferDep[x]].producer;
    sendAfter[x] = lastOnRank[prod];
    if (overheadNode[x] >= 0) {
      dur[overheadNode[x]] = linkOf(x).senderSeconds(false);
      idleDur[overheadNode[x]] = linkOf(x).senderSeconds(true);
      wakeRank[overheadNode[x]] = g.tasks[g.deps[xferDep[x]].consumer].rank;
      sendRank[overheadNode[x]] = g.tasks[prod].rank;
      edge(lastOnRank[prod], overheadNode[x]);
      lastOnRank[prod] = overheadNode[x];
    }
  }
  for (int t = 0; t < N; ++t)
    if (nextOnRank[t] >= 0)
      edge(lastOnRank[t], nextOnRank[t]);
  for (const Dep &d : g.deps)
    if (!d.crossRank)
      edge(d.producer, d.consumer);
  for (int i = 0; i < Rd; ++i) {
    dur[redBase + i] = post.reductions[i].durationSec;
    for (int t : post.taskDeps[i])
      edge(t, redBase + i);
    for (int k : post.reductionDeps[i])
      edge(redBase + k, redBase + i);
  }
  for (int r = 0; r < R; ++r) {
    int prev = g.rankTasks[r].empty() ? -1 : lastOnRank[g.rankTasks[r].back()];
    for (size_t i = 0; i < post.steps[r].size(); ++i) {
      int v = stepNode[r][i];
      dur[v] = post.steps[r][i].durationSec;
      if (prev >= 0)
        edge(prev, v);
      for (int k : post.steps[r][i].reductions)
        edge(redBase + k, v);
      prev = v;
    }
  }

  int numNodes = 1;
  for (int r = 0; r < R; ++r)
    numNodes = std::max(numNodes, sys.topology.nodeOf(r) + 1);
  const int nics = numNodes * sys.topology.nicsInEffect();
  // Resources: send engines [0, R), recv engines [R, 2R), NICs out / in;
  // then the collective channels: one per rank and one per NIC direction.
  const int collBase = 2 * R + 2 * nics;
  std::vector<int> lastOnResource(2 * collBase, -1);
  auto use = [&](llvm::ArrayRef<int> res, int node) {
    for (int rs : res) {
      if (lastOnResource[rs] >= 0)
        edge(lastOnResource[rs], node);
      lastOnResource[rs] = node;
    }
  };
  for (int x : order) {
    if (x >= T) {
      // A ring all-reduce: every participant sends to its successor and
      // receives from its predecessor for the whole ring time, on its
      // collective channel and, off-node, its NIC's collective lanes.
      const GradientReduction &red = post.reductions[x - T];
      const int ringSize = static_cast<int>(red.ring.size());
      llvm::SmallVector<int, 8> res;
      for (int r : red.ranks) {
        int k = static_cast<int>(llvm::find(red.ring, r) - red.ring.begin());
        int next = red.ring[(k + 1) % ringSize];
        int prev = red.ring[(k + ringSize - 1) % ringSize];
        res.push_back(collBase + r);
        if (sys.topology.nodeOf(next) != sys.topology.nodeOf(r))
          res.push_back(collBase + 2 * R + sys.topology.nicOf(r));
        if (sys.topology.nodeOf(prev) != sys.topology.nodeOf(r))
          res.push_back(collBase + 2 * R + nics + sys.topology.nicOf(r));
      }
      use(res, redBase + (x - T));
      continue;
    }
    const Dep &d = g.deps[xferDep[x]];
    int src = g.tasks[d.producer].rank, dst = g.tasks[d.consumer].rank;
    int node = N + x;
    edge(sendAfter[x], node);
    edge(node, d.consumer);
    dur[node] = sys.topology.between(src, dst).messageSeconds(d.bytes);
    idleDur[node] =
        sys.topology.between(src, dst).messageSeconds(d.bytes, true);
    wakeRank[node] = dst;
    sendRank[node] = src;
    if (!sys.simulation.overlap && nextOnRank[d.producer] >= 0)
      edge(node, nextOnRank[d.producer]);
    llvm::SmallVector<int, 4> res{src, R + dst};
    if (sys.topology.nodeOf(src) != sys.topology.nodeOf(dst)) {
      res.push_back(2 * R + sys.topology.nicOf(src));
      res.push_back(2 * R + nics + sys.topology.nicOf(dst));
    }
    use(res, node);
  }

  std::vector<double> start(V, 0), end(V, 0), ready(V, 0);
  int ran = 0;
  // Data-parallel replicas on the simulated replica's nodes run the same
  // timeline and take the same share of the node's cores: replica 0's
  // ranks on node n get coresPerNode x (its ranks on n) / (all D x R
  // global ranks on n) (replicaCoreShare).
  const int D = std::max(sys.simulation.dataParallel, 1);
  const bool shared = sys.topology.sharesCores(R * D);
  auto replicaCoreShare = [&](int node) {
    int mine = 0, all = 0;
    for (int r = 0; r < R * D; ++r)
      if (sys.topology.nodeOf(r) == node) {
        ++all;
        mine += r < R;
      }
    return all > 0 ? double(mine) / all : 1.0;
  };
  // Messages to an idle core cost more (Link::idleReceiver*): the run
  // has to know which cores are busy, so it runs with processor sharing
  // even when nothing shares a core (each rank then a group of its own
  // with unlimited cores: no slowdown, the longest-path times).
  bool wakeCosts = false;
  for (const machine::Link *l :
       {&sys.topology.intraNode, &sys.topology.interNode})
    wakeCosts |= l->idleReceiverLatencySeconds > 0 ||
                 l->idleReceiverSenderOverheadSeconds > 0;
  if (shared || wakeCosts) {
    // Compute vertices share their rank's group of cores: its node's, or,
    // with pinned ranks, its one core (rankOfVertex: the rank whose
    // processor runs the vertex; -1: a transfer).
    std::vector<int> rankOfVertex(V, -1);
    for (int t = 0; t < N; ++t)
      rankOfVertex[t] = g.tasks[t].rank;
    for (int r = 0; r < R; ++r)
      for (int v : stepNode[r])
        rankOfVertex[v] = r;
    for (int x = 0; x < T; ++x)
      if (overheadNode[x] >= 0)
        rankOfVertex[overheadNode[x]] =
            g.tasks[g.deps[xferDep[x]].producer].rank;
    const machine::Topology &topo = sys.topology;
    const int numNodes = topo.nodeOf(R - 1) + 1;
    std::vector<int> groupOf(size_t(R), 0);
    std::vector<double> cores;
    if (!shared) {
      for (int r = 0; r < R; ++r)
        groupOf[size_t(r)] = r;
      cores.assign(size_t(R), std::numeric_limits<double>::infinity());
    } else if (topo.pinRanks) {
      // Each node's ceil(c) cores of c / ceil(c) each; the node's ranks go
      // to them as pipeopt-run --pin-ranks places them (rt::
      // assignRanksToCores), by their compute instead of measured CPU time.
      std::vector<double> load(size_t(R), 0.0);
      for (int v = 0; v < V; ++v)
        if (rankOfVertex[v] >= 0)
          load[size_t(rankOfVertex[v])] += dur[v];
      const int perNode = int(std::ceil(topo.coresPerNode - 1e-9));
      cores.assign(size_t(numNodes * perNode), topo.coresPerNode / perNode);
      for (int node = 0; node < numNodes; ++node)
        for (int c = 0; c < perNode; ++c)
          cores[size_t(node * perNode + c)] *= replicaCoreShare(node);
      for (int node = 0; node < numNodes; ++node) {
        std::vector<int> ranks;
        std::vector<double> loads;
        for (int r = 0; r < R; ++r)
          if (topo.nodeOf(r) == node) {
            ranks.push_back(r);
            loads.push_back(load[size_t(r)]);
          }
        std::vector<int> core = rt::assignRanksToCores(loads, perNode);
        for (size_t i = 0; i < ranks.size(); ++i)
          groupOf[size_t(ranks[i])] = node * perNode + core[i];
      }
    } else {
      for (int r = 0; r < R; ++r)
        groupOf[size_t(r)] = topo.nodeOf(r);
      cores.assign(size_t(numNodes), topo.coresPerNode);
      for (int node = 0; node < numNodes; ++node)
        cores[size_t(node)] *= replicaCoreShare(node);
    }
    std::vector<int> cpuNode(V, -1);
    for (int v = 0; v < V; ++v)
      if (rankOfVertex[v] >= 0)
        cpuNode[v] = groupOf[size_t(rankOfVertex[v])];
    std::vector<int> wakeGroup(V, -1), senderGroup(V, -1);
    for (int v = 0; v < V; ++v)
      if (wakeRank[v] >= 0) {
        wakeGroup[v] = groupOf[size_t(wakeRank[v])];
        senderGroup[v] = groupOf[size_t(sendRank[v])];
      }
    ran = runProcessorSharing(succ, indeg, dur, cpuNode, cores, wakeGroup,
                              senderGroup, idleDur, start, end, ready);
  } else {
    // Longest path in topological order (Kahn).
    std::vector<int> queue;
    queue.reserve(V);
    for (int v = 0; v < V; ++v)
      if (indeg[v] == 0)
        queue.push_back(v);
    size_t head = 0;
    while (head < queue.size()) {
      int v = queue[head++];
      start[v] = ready[v];
      end[v] = start[v] + dur[v];
      for (int w : succ[v]) {
        ready[w] = std::max(ready[w], end[v]);
        if (--indeg[w] == 0)
          queue.push_back(w);
      }
    }
    ran = static_cast<int>(queue.size());
  }
  if (ran != V)
    return makeError(llvm::formatv(
        "schedule '{0}': event simulation found a cyclic wait ({1} of {2} "
        "actions and transfers could not run)",
        s.name, V - ran, V));

  double tableEnd = 0;
  for (int v = 0; v < N + T; ++v)
    tableEnd = std::max(tableEnd, end[v]);
  bool sendCalls = false;
  for (int v : overheadNode)
    if (v >= 0) {
      tableEnd = std::max(tableEnd, end[v]);
      sendCalls = true;
    }
  PostTimes pt;
  for (int i = 0; i < Rd; ++i) {
    pt.redReady.push_back(ready[redBase + i]);
    pt.redStart.push_back(start[redBase + i]);
    pt.redEnd.push_back(end[redBase + i]);
  }
  // The ready time of a reduction is its data dependencies' end, without
  // the resource waits.
  for (int i = 0; i < Rd; ++i) {
    double r = 0;
    for (int t : post.taskDeps[i])
      r = std::max(r, end[t]);
    for (int k : post.reductionDeps[i])
      r = std::max(r, end[redBase + k]);
    pt.redReady[i] = r;
  }
  pt.stepStart.resize(R);
  pt.stepEnd.resize(R);
  for (int r = 0; r < R; ++r)
    for (int v : stepNode[r]) {
      pt.stepStart[r].push_back(start[v]);
      pt.stepEnd[r].push_back(end[v]);
    }

  Metrics m;
  m.level = Level::Event;
  m.note = llvm::formatv("event simulation on '{0}' (overlap {1})", sys.name,
                         sys.simulation.overlap ? "on" : "off")
               .str();
  if (shared) {
    char cores[32];
    std::snprintf(cores, sizeof(cores), "%g", sys.topology.coresPerNode);
    m.note += std::string("; the ranks of a node share ") + cores +
              (sys.topology.pinRanks
                   ? " core(s), each rank pinned to one (longest compute "
                     "first onto the least loaded core; processor sharing "
                     "per core)"
                   : " core(s) (processor sharing)") +
              (D > 1 ? " with the other data-parallel replicas' ranks on the "
                       "node"
                     : "");
  }
  if (sendCalls)
    m.note += "; senders pay a per-message overhead";
  if (wakeCosts)
    m.note += "; a message to an idle core waits for its wake-up";
  if (shared || sendCalls) {
    // A rank is busy while its action and the send calls after it run,
    // slowed or not: the bubbles come from those simulated spans.
    TaskGraph spans = g;
    for (int t = 0; t < N; ++t)
      spans.tasks[t].durationSec = end[lastOnRank[t]] - start[t];
    PostBackward postSpans = post;
    for (int r = 0; r < R; ++r)
      for (size_t i = 0; i < stepNode[r].size(); ++i)
        postSpans.steps[r][i].durationSec =
            end[stepNode[r][i]] - start[stepNode[r][i]];
    fillTimes(spans, postSpans, pt, tableEnd, m);
  } else {
    fillTimes(g, post, pt, tableEnd, m);
  }
  const double makespan = m.makespanSec;
  fillStaticMetrics(s, *p, m);
  if (llvm::Error e = attachStaleness(s, p->graph, m))
    return std::move(e);

  if (timeline) {
    Timeline &tl = *timeline;
    tl = Timeline();
    tl.level = Level::Event;
    tl.numRanks = R;
    tl.makespanSec = makespan;
    for (int r = 0; r < R; ++r)
      for (int id : g.rankTasks[r])
        tl.compute.push_back({r, g.tasks[id].action, start[id], end[id]});
    for (int x : order) {
      if (x >= T)
        continue;
      const Dep &d = g.deps[xferDep[x]];
      const Task &prod = g.tasks[d.producer];
      const Task &cons = g.tasks[d.consumer];
      tl.transfers.push_back({prod.rank, cons.rank, prod.action.stage,
                              cons.action.stage, prod.action.microbatch,
                              d.backward, d.bytes, end[d.producer],
                              start[N + x], end[N + x]});
    }
    addPostToTimeline(post, pt, tl);
  }
  return m;
}

//===----------------------------------------------------------------------===//
// Staleness
//===----------------------------------------------------------------------===//

llvm::Expected<Staleness>
sim::computeStaleness(const schedule::Schedule &s,
                      const schedule::StageGraph *graph) {
  if (!s.async)
    return makeError("schedule '" + s.name +
                     "' is synchronous: staleness is defined for "
                     "asynchronous schedules only");
  CostTable none;
  schedule::StageGraph g = graph ? *graph : defaultGraph(s, none);
  llvm::Expected<TaskGraph> tg =
      buildTaskGraph(s, none, 1.0, g, Durations::Unit);
  if (!tg)
    return tg.takeError();
  llvm::Expected<IdealRun> run = runIdeal(*tg);
  if (!run)
    return makeError("schedule '" + s.name +
                     "': " + llvm::toString(run.takeError()));

  const int S = s.numStages, M = s.numMicrobatches;
  // Backwards per weight update (1: PipeDream; S: PipeDream-2BW, whose
  // gradients are accumulated and applied as one block update).
  const int every = inferUpdateInterval(s);
  using Key = std::pair<long, int>; // (slot, stage)
  std::vector<long> readSlot(static_cast<size_t>(S) * M, -1);
  std::vector<std::vector<std::pair<long, int>>> backwards(S); // (slot, mb)
  for (int t = 0, e = static_cast<int>(tg->tasks.size()); t < e; ++t) {
    const schedule::Action &a = tg->tasks[t].action;
    long slot = static_cast<long>(run->start[t] + 0.5);
    if (a.phase == Phase::F)
      readSlot[static_cast<size_t>(a.stage) * M + a.microbatch] = slot;
    else if (a.phase == Phase::BW || a.phase == Phase::W)
      backwards[a.stage].push_back({slot, a.microbatch});
  }
  // Block updates and, per (stage, mb), the slot of the update that applies
  // the microbatch's gradient (-1: not applied within the table).
  std::vector<Key> updates;
  std::vector<long> writeSlot(static_cast<size_t>(S) * M, -1);
  for (int j = 0; j < S; ++j) {
    std::vector<std::pair<long, int>> &list = backwards[j];
    std::sort(list.begin(), list.end());
    const int n = static_cast<int>(list.size());
    for (int k = 1; k <= n; ++k) {
      if (k % every == 0)
        updates.push_back({list[k - 1].first, j});
      int u = (k + every - 1) / every * every;
      if (u <= n)
        writeSlot[static_cast<size_t>(j) * M + list[k - 1].second] =
            list[u - 1].first;
    }
  }
  std::sort(updates.begin(), updates.end());

  // Delay of the pair (read block i, written block j) for microbatch mb;
  // -1 when the microbatch's updates are not all in the table (tail of
  // 2BW batches).
  auto complete = [&](int mb) {
    for (int i = 0; i < S; ++i)
      if (readSlot[static_cast<size_t>(i) * M + mb] < 0 ||
          writeSlot[static_cast<size_t>(i) * M + mb] < 0)
        return false;
    return true;
  };
  auto delay = [&](int mb, int i, int j) -> long {
    Key readKey{readSlot[static_cast<size_t>(i) * M + mb], i};
    auto lo = std::upper_bound(updates.begin(), updates.end(), readKey);
    Key writeKey{writeSlot[static_cast<size_t>(j) * M + mb], j};
    auto hi = std::lower_bound(updates.begin(), updates.end(), writeKey);
    return std::max<long>(0, hi - lo);
  };

  Staleness st;
  st.steadyState = M >= 2 * S + 1;
  st.firstMicrobatch = st.steadyState ? S : 0;
  st.endMicrobatch = st.steadyState ? M - S : M;
  st.maxDelayMatrix.assign(S, std::vector<int>(S, 0));
  std::vector<std::vector<long>> pairSum(S, std::vector<long>(S, 0));
  long sum = 0, count = 0, microbatches = 0;
  for (int mb = st.firstMicrobatch; mb < st.endMicrobatch; ++mb) {
    if (!complete(mb))
      continue;
    ++microbatches;
    for (int i = 0; i < S; ++i)
      for (int j = 0; j < S; ++j) {
        long d = delay(mb, i, j);
        st.maxDelay = std::max<int>(st.maxDelay, static_cast<int>(d));
        st.maxDelayMatrix[j][i] =
            std::max<int>(st.maxDelayMatrix[j][i], static_cast<int>(d));
        pairSum[j][i] += d;
        sum += d;
        ++count;
      }
  }
  if (count == 0)
    return makeError("schedule '" + s.name +
                     "': no microbatch has all its weight updates in the "
                     "table; staleness is undefined");
  st.meanDelayMatrix.assign(S, std::vector<double>(S, 0));
  for (int j = 0; j < S; ++j)
    for (int i = 0; i < S; ++i)
      st.meanDelayMatrix[j][i] =
          static_cast<double>(pairSum[j][i]) / microbatches;
  for (int mb = 0; mb < std::min(S, M); ++mb) {
    if (!complete(mb))
      continue;
    for (int i = 0; i < S; ++i)
      for (int j = 0; j < S; ++j)
        st.startupMaxDelay = std::max<int>(st.startupMaxDelay,
                                           static_cast<int>(delay(mb, i, j)));
  }
  st.meanDelay = count ? static_cast<double>(sum) / count : 0;
  return st;
}

//===----------------------------------------------------------------------===//
// All levels
//===----------------------------------------------------------------------===//

llvm::Expected<Evaluation> sim::evaluate(const schedule::Schedule &s,
                                         const CostTable &costs,
                                         const machine::Machine &sys,
                                         const schedule::StageGraph *graph) {
  Evaluation ev;
  ev.formula = evaluateFormula(s, costs, sys);
  llvm::Expected<Metrics> table = simulateTable(s, costs, sys, nullptr, graph);
  if (!table)
    return table.takeError();
  ev.table = std::move(*table);
  llvm::Expected<Metrics> event = simulateEvents(s, costs, sys, nullptr, graph);
  if (!event)
    return event.takeError();
  ev.event = std::move(*event);
  return ev;
}

void pipeopt::sim::addMetricsJSON(llvm::json::Object &row, const Metrics &m) {
  auto toArray = [](const std::vector<double> &v) {
    llvm::json::Array a;
    for (double x : v)
      a.push_back(x);
    return a;
  };
  if (!m.available) {
    row["makespan_s"] = nullptr;
    row["bubble_ratio"] = nullptr;
    row["peak_activation_bytes"] = nullptr;
    return;
  }
  row["makespan_s"] = m.makespanSec;
  row["bubble_ratio"] = m.bubbleRatio;
  row["bubble_ratio_per_rank"] = toArray(m.bubblePerRank);
  row["peak_activation_bytes"] = m.maxPeakActivationBytes();
  row["peak_activation_bytes_per_rank"] = toArray(m.peakActivationBytes);
  row["weight_bytes"] = m.maxWeightBytes();
  row["weight_bytes_per_rank"] = toArray(m.weightBytes);
  row["comm_bytes"] = m.commBytes;
  row["allreduce_s"] = m.allReduceSec;
  row["allreduce_s_per_rank"] = toArray(m.allReduceSecPerRank);
  row["optimizer_s"] = m.optimizerSec;
  row["optimizer_s_per_rank"] = toArray(m.optimizerSecPerRank);
  row["post_backward_s"] = m.postBackwardSec;
  row["collective_bytes"] = m.collectiveBytes;
  if (m.staleness) {
    const Staleness &st = *m.staleness;
    row["staleness_max_delay"] = st.maxDelay;
    row["staleness_mean_delay"] = st.meanDelay;
    row["staleness_steady_state"] = st.steadyState;
    llvm::json::Array maxRows, meanRows;
    for (const std::vector<int> &r : st.maxDelayMatrix) {
      llvm::json::Array a;
      for (int v : r)
        a.push_back(v);
      maxRows.push_back(std::move(a));
    }
    for (const std::vector<double> &r : st.meanDelayMatrix)
      meanRows.push_back(toArray(r));
    // Computed from the table (not by the formula level).
    if (!st.maxDelayMatrix.empty()) {
      row["staleness_delay_matrix"] = std::move(maxRows);
      row["staleness_mean_delay_matrix"] = std::move(meanRows);
      if (st.startupMaxDelay >= 0)
        row["staleness_startup_max_delay"] = st.startupMaxDelay;
      else
        row["staleness_startup_max_delay"] = nullptr;
    }
  }
}
