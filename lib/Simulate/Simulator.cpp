//===- Simulator.cpp - Table and event simulation, staleness --------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Simulate/Simulator.h"

#include "TaskGraph.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
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
  case Level::Formula: return "formula";
  case Level::Table: return "table";
  case Level::Event: return "event";
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
  case Level::Formula: return formula;
  case Level::Table: return table;
  case Level::Event: return event;
  }
  return table;
}

namespace {
/// Inputs prepared once per call, and the idealized run of the table (free
/// communication) that both the table and the event level start from.
struct Prepared {
  CostTable costs;
  schedule::StageGraph graph;
  TaskGraph tasks;
  IdealRun ideal;
};
} // namespace

static llvm::Expected<Prepared> prepare(const schedule::Schedule &s,
                                        const CostTable &costsIn,
                                        const SystemConfig &sys,
                                        const schedule::StageGraph *graph) {
  Prepared p;
  if (costsIn.size() == 0)
    return makeError("cost table is empty");
  p.costs = costsIn.resample(s.numStages);
  p.graph = graph ? *graph : defaultGraph(s, p.costs);
  if (p.graph.numStages != s.numStages)
    return makeError(llvm::formatv("stage graph has {0} stages, schedule "
                                   "'{1}' has {2}", p.graph.numStages, s.name,
                                   s.numStages));
  llvm::Expected<TaskGraph> tg =
      buildTaskGraph(s, p.costs, sys.computeSpeed, p.graph, Durations::Costs);
  if (!tg)
    return tg.takeError();
  p.tasks = std::move(*tg);
  llvm::Expected<IdealRun> run = runIdeal(p.tasks);
  if (!run)
    return makeError("schedule '" + s.name + "': " +
                     llvm::toString(run.takeError()));
  p.ideal = std::move(*run);
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

static void fillBubbles(const TaskGraph &g, double makespan, Metrics &m) {
  m.makespanSec = makespan;
  m.bubblePerRank.assign(g.numRanks, 0);
  double busyTotal = 0;
  for (int r = 0; r < g.numRanks; ++r) {
    double busy = 0;
    for (int t : g.rankTasks[r])
      busy += g.tasks[t].durationSec;
    busyTotal += busy;
    m.bubblePerRank[r] = makespan > 0 ? std::max(0.0, 1 - busy / makespan) : 0;
  }
  m.bubbleRatio =
      makespan > 0 && g.numRanks > 0
          ? std::max(0.0, 1 - busyTotal / (g.numRanks * makespan))
          : 0;
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
                                           const SystemConfig &sys,
                                           Timeline *timeline,
                                           const schedule::StageGraph *graph) {
  llvm::Expected<Prepared> p = prepare(s, costs, sys, graph);
  if (!p)
    return p.takeError();
  const IdealRun *run = &p->ideal;
  Metrics m;
  m.level = Level::Table;
  m.note = "schedule table, cost-model compute times, free communication";
  fillBubbles(p->tasks, run->makespan, m);
  fillStaticMetrics(s, *p, m);
  if (llvm::Error e = attachStaleness(s, p->graph, m))
    return std::move(e);

  if (timeline) {
    Timeline &t = *timeline;
    t = Timeline();
    t.level = Level::Table;
    t.numRanks = s.numRanks;
    t.makespanSec = run->makespan;
    for (int r = 0; r < s.numRanks; ++r)
      for (int id : p->tasks.rankTasks[r])
        t.compute.push_back({r, p->tasks.tasks[id].action, run->start[id],
                             run->end[id]});
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
  }
  return m;
}

//===----------------------------------------------------------------------===//
// Level 3: communication-aware event simulation
//===----------------------------------------------------------------------===//

llvm::Expected<Metrics> sim::simulateEvents(const schedule::Schedule &s,
                                            const CostTable &costs,
                                            const SystemConfig &sys,
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
  std::vector<int> xferDep;  // transfer -> dep index
  for (int d = 0, e = static_cast<int>(g.deps.size()); d < e; ++d)
    if (g.deps[d].crossRank)
      xferDep.push_back(d);
  const int T = static_cast<int>(xferDep.size());

  // Global service order of transfers.
  std::vector<int> order(T);
  std::iota(order.begin(), order.end(), 0);
  auto key = [&](int x) {
    const Dep &d = g.deps[xferDep[x]];
    return std::make_tuple(ideal->end[d.producer], ideal->ordinal[d.producer],
                           ideal->ordinal[d.consumer], xferDep[x]);
  };
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return key(a) < key(b); });

  // DAG over tasks [0, N) and transfers [N, N + T).
  const int V = N + T;
  std::vector<std::vector<int>> succ(V);
  std::vector<int> indeg(V, 0);
  std::vector<double> dur(V, 0);
  auto edge = [&](int a, int b) {
    succ[a].push_back(b);
    ++indeg[b];
  };
  for (int t = 0; t < N; ++t)
    dur[t] = g.tasks[t].durationSec;
  std::vector<int> nextOnRank(N, -1);
  for (int r = 0; r < R; ++r)
    for (size_t i = 1; i < g.rankTasks[r].size(); ++i) {
      edge(g.rankTasks[r][i - 1], g.rankTasks[r][i]);
      nextOnRank[g.rankTasks[r][i - 1]] = g.rankTasks[r][i];
    }
  for (const Dep &d : g.deps)
    if (!d.crossRank)
      edge(d.producer, d.consumer);

  int numNodes = 1;
  for (int r = 0; r < R; ++r)
    numNodes = std::max(numNodes, sys.nodeOf(r) + 1);
  const int nics = numNodes * std::max(sys.nicsPerNode, 1);
  std::vector<int> lastOnResource(2 * R + 2 * nics, -1);
  for (int x : order) {
    const Dep &d = g.deps[xferDep[x]];
    int src = g.tasks[d.producer].rank, dst = g.tasks[d.consumer].rank;
    int node = N + x;
    edge(d.producer, node);
    edge(node, d.consumer);
    dur[node] = sys.link(src, dst).time(d.bytes);
    if (!sys.overlap && nextOnRank[d.producer] >= 0)
      edge(node, nextOnRank[d.producer]);
    llvm::SmallVector<int, 4> res{src, R + dst};
    if (sys.nodeOf(src) != sys.nodeOf(dst)) {
      res.push_back(2 * R + sys.nicOf(src));
      res.push_back(2 * R + nics + sys.nicOf(dst));
    }
    for (int rs : res) {
      if (lastOnResource[rs] >= 0)
        edge(lastOnResource[rs], node);
      lastOnResource[rs] = node;
    }
  }

  // Longest path in topological order (Kahn).
  std::vector<double> start(V, 0), end(V, 0), ready(V, 0);
  std::vector<int> queue;
  queue.reserve(V);
  for (int v = 0; v < V; ++v)
    if (indeg[v] == 0)
      queue.push_back(v);
  size_t head = 0;
  std::vector<double> producerEnd(T, 0);
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
  if (static_cast<int>(queue.size()) != V)
    return makeError(llvm::formatv(
        "schedule '{0}': event simulation found a cyclic wait ({1} of {2} "
        "actions and transfers could not run)", s.name,
        V - static_cast<int>(queue.size()), V));

  double makespan = 0;
  for (int v = 0; v < V; ++v)
    makespan = std::max(makespan, end[v]);

  Metrics m;
  m.level = Level::Event;
  m.note = llvm::formatv("event simulation on '{0}' (overlap {1})", sys.name,
                         sys.overlap ? "on" : "off")
               .str();
  fillBubbles(g, makespan, m);
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
      const Dep &d = g.deps[xferDep[x]];
      const Task &prod = g.tasks[d.producer];
      const Task &cons = g.tasks[d.consumer];
      tl.transfers.push_back({prod.rank, cons.rank, prod.action.stage,
                              cons.action.stage, prod.action.microbatch,
                              d.backward, d.bytes, end[d.producer],
                              start[N + x], end[N + x]});
    }
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
    return makeError("schedule '" + s.name + "': " +
                     llvm::toString(run.takeError()));

  const int S = s.numStages, M = s.numMicrobatches;
  // Backwards per weight update (1: PipeDream; S: PipeDream-2BW, whose
  // gradients are accumulated and applied as one block update).
  const int every = inferUpdateInterval(s);
  using Key = std::pair<long, int>;  // (slot, stage)
  std::vector<long> readSlot(static_cast<size_t>(S) * M, -1);
  std::vector<std::vector<std::pair<long, int>>> backwards(S);  // (slot, mb)
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

  Staleness st;
  st.steadyState = M >= 2 * S + 1;
  st.firstMicrobatch = st.steadyState ? S : 0;
  st.endMicrobatch = st.steadyState ? M - S : M;
  long sum = 0, count = 0;
  for (int mb = st.firstMicrobatch; mb < st.endMicrobatch; ++mb) {
    bool complete = true;
    for (int i = 0; i < S; ++i)
      if (readSlot[static_cast<size_t>(i) * M + mb] < 0 ||
          writeSlot[static_cast<size_t>(i) * M + mb] < 0)
        complete = false;
    if (!complete)
      continue;  // not applied within the table (tail of 2BW batches)
    for (int i = 0; i < S; ++i) {
      Key readKey{readSlot[static_cast<size_t>(i) * M + mb], i};
      auto lo = std::upper_bound(updates.begin(), updates.end(), readKey);
      for (int j = 0; j < S; ++j) {
        Key writeKey{writeSlot[static_cast<size_t>(j) * M + mb], j};
        auto hi = std::lower_bound(updates.begin(), updates.end(), writeKey);
        long d = std::max<long>(0, hi - lo);
        st.maxDelay = std::max<int>(st.maxDelay, static_cast<int>(d));
        sum += d;
        ++count;
      }
    }
  }
  if (count == 0)
    return makeError("schedule '" + s.name +
                     "': no microbatch has all its weight updates in the "
                     "table; staleness is undefined");
  st.meanDelay = count ? static_cast<double>(sum) / count : 0;
  return st;
}

//===----------------------------------------------------------------------===//
// All levels
//===----------------------------------------------------------------------===//

llvm::Expected<Evaluation> sim::evaluate(const schedule::Schedule &s,
                                         const CostTable &costs,
                                         const SystemConfig &sys,
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
  if (m.staleness) {
    row["staleness_max_delay"] = m.staleness->maxDelay;
    row["staleness_mean_delay"] = m.staleness->meanDelay;
    row["staleness_steady_state"] = m.staleness->steadyState;
  }
}
