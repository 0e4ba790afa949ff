//===- PartitionerTest.cpp - Tests of the pipeline partitioner -*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Partition/Partitioner.h"

#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>

using namespace pipeopt::partition;
using pipeopt::machine::Link;

namespace {

/// Consumes an Expected that must be an error and returns its message.
template <typename T>
std::string errorOf(llvm::Expected<T> e) {
  if (e)
    return "<no error>";
  return llvm::toString(e.takeError());
}

Node op(const std::string &name, double t, double params = 0, double acts = 0) {
  Node n;
  n.name = name;
  n.forwardSeconds = t;
  n.paramBytes = params;
  n.outputBytes = acts;
  n.flops = t * 1e12;
  return n;
}

Node remat(const std::string &name, double t) {
  Node n = op(name, t);
  n.rematerializable = true;
  return n;
}

bool near(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)});
}

//===----------------------------------------------------------------------===//
// Independent reference implementation of the cost (Partitioner.h)
//===----------------------------------------------------------------------===//

/// Stage times of `stageOf` (placed nodes; remat ignored) computed naively
/// from the definition, pricing each value with Link::seconds.
std::vector<double> referenceStageTimes(const Graph &g, const Options &o,
                                        const std::vector<int> &stageOf) {
  int numStages = o.numStages;
  std::vector<double> time(numStages, 0);
  auto t = [&](int id) {
    const Node &n = g.nodes[id];
    return n.forwardSeconds +
           (o.training ? n.backwardInputSeconds + n.backwardWeightSeconds : 0);
  };
  int nn = g.nodes.size();
  // Stages using each remat node (through remat chains).
  std::vector<std::set<int>> usedBy(nn);
  for (int id = nn - 1; id >= 0; --id) {
    if (!g.nodes[id].rematerializable)
      continue;
    for (const Edge &e : g.edges) {
      if (e.from != id)
        continue;
      if (g.nodes[e.to].rematerializable)
        usedBy[id].insert(usedBy[e.to].begin(), usedBy[e.to].end());
      else
        usedBy[id].insert(stageOf[e.to]);
    }
  }
  for (int id = 0; id < nn; ++id) {
    if (g.nodes[id].rematerializable) {
      for (int s : usedBy[id])
        time[s] += t(id);
    } else {
      time[stageOf[id]] += t(id);
    }
  }
  std::map<std::pair<int, int>, double> bytes;
  std::map<std::pair<int, int>, std::set<int>> dests;
  for (const Edge &e : g.edges) {
    if (g.nodes[e.from].rematerializable)
      continue;
    auto key = std::make_pair(e.from, e.result);
    bytes[key] = std::max(bytes[key], e.bytes);
    if (stageOf[e.to] != stageOf[e.from])
      dests[key].insert(stageOf[e.to]);
  }
  for (auto &it : dests) {
    double b = bytes[it.first];
    int p = stageOf[it.first.first];
    if (it.second.empty())
      continue;
    time[p] += o.links.link(p, p + 1).seconds(b);
    if (o.training)
      time[p] += o.links.link(p + 1, p).seconds(b);
    for (int d : it.second) {
      time[d] += o.links.link(d - 1, d).seconds(b);
      if (o.training)
        time[d] += o.links.link(d, d - 1).seconds(b);
    }
  }
  return time;
}

bool referenceFitsMemory(const Graph &g, const Options &o,
                         const std::vector<int> &stageOf) {
  std::vector<double> params(o.numStages, 0), acts(o.numStages, 0);
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    if (g.nodes[id].rematerializable)
      continue;
    params[stageOf[id]] += g.nodes[id].paramBytes;
    acts[stageOf[id]] += g.nodes[id].outputBytes;
  }
  // A weight read in several stages: one copy per stage. Its first reader
  // carries its bytes in paramBytes; the other stages reading it pay again.
  for (size_t w = 0; w < g.weightBytes.size(); ++w) {
    std::set<int> stages;
    int firstStage = -1;
    for (size_t id = 0; id < g.nodes.size(); ++id) {
      const Node &n = g.nodes[id];
      if (n.rematerializable || std::find(n.weights.begin(), n.weights.end(),
                                          int(w)) == n.weights.end())
        continue;
      if (firstStage < 0)
        firstStage = stageOf[id];
      stages.insert(stageOf[id]);
    }
    for (int s : stages)
      if (s != firstStage)
        params[s] += g.weightBytes[w];
  }
  for (int s = 0; s < o.numStages; ++s) {
    double cap = o.memory.capacityOf(s);
    double mem = params[s] * (1 + o.memory.optimizerFactor) +
                 acts[s] * o.memory.inFlightOf(s);
    if (cap > 0 && mem > cap)
      return false;
  }
  return true;
}

/// Exhaustive optimum over all contiguous splits of the given order
/// (respecting memory and pins); +inf if none.
double exhaustiveOptimum(const Graph &g, const Options &o) {
  std::vector<int> placed;
  for (size_t id = 0; id < g.nodes.size(); ++id)
    if (!g.nodes[id].rematerializable)
      placed.push_back(id);
  int n = placed.size(), numStages = o.numStages;
  double best = INFINITY;
  std::vector<int> cuts(numStages + 1);
  // Recursive enumeration of cut positions.
  std::function<void(int, int)> rec = [&](int s, int start) {
    if (s == numStages - 1) {
      cuts[s] = start;
      cuts[numStages] = n;
      if (start >= n)
        return;
      std::vector<int> st(g.nodes.size(), -1);
      for (int k = 0; k < numStages; ++k)
        for (int p = cuts[k]; p < cuts[k + 1]; ++p)
          st[placed[p]] = k;
      for (int id : placed)
        if (g.nodes[id].fixedStage >= 0 && g.nodes[id].fixedStage != st[id])
          return;
      if (!referenceFitsMemory(g, o, st))
        return;
      std::vector<double> times = referenceStageTimes(g, o, st);
      best = std::min(best, *std::max_element(times.begin(), times.end()));
      return;
    }
    cuts[s] = start;
    for (int end = start + 1; end <= n - (numStages - 1 - s); ++end)
      rec(s + 1, end);
  };
  rec(0, 0);
  return best;
}

/// Checks the structural guarantees of a partition.
void expectValidPartition(const Graph &g, const Partition &p) {
  std::vector<int> count(p.numStages, 0);
  ASSERT_EQ(p.stageOf.size(), g.nodes.size());
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    if (g.nodes[id].rematerializable) {
      EXPECT_EQ(p.stageOf[id], -1);
      continue;
    }
    ASSERT_GE(p.stageOf[id], 0);
    ASSERT_LT(p.stageOf[id], p.numStages);
    ++count[p.stageOf[id]];
  }
  for (int s = 0; s < p.numStages; ++s)
    EXPECT_GT(count[s], 0) << "stage " << s << " is empty";
  for (const Edge &e : g.edges) {
    if (!g.nodes[e.from].rematerializable) {
      EXPECT_LE(p.stageOf[e.from], p.stageOf[e.to]);
    }
  }
}

struct RandomCase {
  Graph graph;
  Options options;
  std::vector<std::vector<Link>> links;
};

RandomCase randomCase(unsigned seed) {
  std::mt19937 rng(seed);
  auto uni = [&](double a, double b) {
    return std::uniform_real_distribution<double>(a, b)(rng);
  };
  auto chance = [&](double p) { return uni(0, 1) < p; };
  RandomCase c;
  int numRemat = std::uniform_int_distribution<int>(0, 2)(rng);
  int numStages = std::uniform_int_distribution<int>(2, 4)(rng);
  int numPlaced =
      std::uniform_int_distribution<int>(numStages, 12 - numRemat)(rng);
  Graph &g = c.graph;
  for (int r = 0; r < numRemat; ++r)
    g.addNode(remat("c" + std::to_string(r), uni(0, 0.5)));
  for (int k = 0; k < numPlaced; ++k) {
    Node n = op("n" + std::to_string(k), uni(0.1, 3), std::round(uni(0, 100)),
                std::round(uni(0, 50)));
    n.backwardInputSeconds = uni(0, 2);
    n.backwardWeightSeconds = uni(0, 2);
    if (chance(0.3))
      n.weights.push_back(std::uniform_int_distribution<int>(0, 2)(rng));
    g.addNode(n);
  }
  int total = numRemat + numPlaced;
  if (numRemat == 2 && chance(0.5))
    g.addEdge(0, 1, 8);
  for (int r = 0; r < numRemat; ++r)
    for (int k = numRemat; k < total; ++k)
      if (chance(0.3))
        g.addEdge(r, k, std::round(uni(1, 100)));
  for (int a = numRemat; a < total; ++a)
    for (int b = a + 1; b < total; ++b) {
      double p = b == a + 1 ? 0.85 : 0.2; // chain plus skip connections
      if (!chance(p))
        continue;
      int result = chance(0.2) ? 1 : 0;
      g.addEdge(a, b, std::round(uni(0, 200)), result);
      if (chance(0.1)) // duplicate use of the same value
        g.addEdge(a, b, std::round(uni(0, 200)), result);
    }
  Options &o = c.options;
  o.numStages = numStages;
  o.training = chance(0.4);
  c.links.assign(numStages, std::vector<Link>(numStages));
  for (auto &row : c.links)
    for (Link &l : row) {
      l.latencySeconds = chance(0.5) ? uni(0, 0.5) : 0;
      l.bytesPerSecond = chance(0.1) ? 0 : uni(20, 400);
    }
  std::vector<std::vector<Link>> links = c.links;
  o.links.between = [links](int a, int b) { return links[a][b]; };
  if (chance(0.3)) {
    int m = std::uniform_int_distribution<int>(1, 6)(rng);
    o.memory.inFlight = chance(0.5) ? gpipeInFlight(numStages, m)
                                    : oneFOneBInFlight(numStages, m);
    o.memory.optimizerFactor = chance(0.5) ? 3 : 0;
    o.memory.capacityBytes = {std::round(uni(200, 1500))};
  }
  if (chance(0.2)) {
    // Pin a node to the stage it has in a random valid contiguous split.
    std::vector<int> placedIds;
    for (int k = numRemat; k < total; ++k)
      placedIds.push_back(k);
    std::vector<int> cutPos;
    for (int k = 1; k < numPlaced; ++k)
      cutPos.push_back(k);
    std::shuffle(cutPos.begin(), cutPos.end(), rng);
    cutPos.resize(numStages - 1);
    std::sort(cutPos.begin(), cutPos.end());
    int pick = std::uniform_int_distribution<int>(0, numPlaced - 1)(rng);
    int stage =
        std::upper_bound(cutPos.begin(), cutPos.end(), pick) - cutPos.begin();
    g.nodes[placedIds[pick]].fixedStage = stage;
  }
  // Sizes for the three weight ids, attributed to each one's first reader.
  g.weightBytes = {std::round(uni(0, 300)), std::round(uni(0, 300)),
                   std::round(uni(0, 300))};
  for (int w = 0; w < 3; ++w)
    for (int k = numRemat; k < total; ++k)
      if (std::find(g.nodes[k].weights.begin(), g.nodes[k].weights.end(), w) !=
          g.nodes[k].weights.end()) {
        g.nodes[k].paramBytes += g.weightBytes[w];
        break;
      }
  return c;
}

//===----------------------------------------------------------------------===//
// Tests
//===----------------------------------------------------------------------===//

TEST(Partitioner, MatchesExhaustiveSearchOnRandomDAGs) {
  int feasible = 0, infeasible = 0;
  for (unsigned seed = 1; seed <= 600; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    RandomCase c = randomCase(seed);
    double expected = exhaustiveOptimum(c.graph, c.options);
    llvm::Expected<Result> r = partition(c.graph, c.options);
    if (std::isinf(expected)) {
      ++infeasible;
      EXPECT_FALSE(static_cast<bool>(r));
      if (!r)
        llvm::consumeError(r.takeError());
      continue;
    }
    ++feasible;
    ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
    EXPECT_TRUE(near(r->report.bottleneckSeconds, expected))
        << r->report.bottleneckSeconds << " vs exhaustive " << expected;
    expectValidPartition(c.graph, r->partition);
    std::vector<double> times =
        referenceStageTimes(c.graph, c.options, r->partition.stageOf);
    for (int s = 0; s < c.options.numStages; ++s)
      EXPECT_TRUE(near(times[s], r->report.stages[s].timeSeconds))
          << "stage " << s;
    EXPECT_TRUE(referenceFitsMemory(c.graph, c.options, r->partition.stageOf));
    // The baselines use the same cost function and cannot beat the optimum
    // when they fit (they ignore pins).
    ASSERT_TRUE(r->report.uniform.computed);
    bool pinned = false;
    for (const Node &nd : c.graph.nodes)
      pinned |= nd.fixedStage >= 0;
    if (pinned)
      continue;
    if (r->report.uniform.fitsMemory) {
      EXPECT_GE(r->report.uniform.bottleneckSeconds * (1 + 1e-9), expected);
    }
    if (r->report.params.fitsMemory) {
      EXPECT_GE(r->report.params.bottleneckSeconds * (1 + 1e-9), expected);
    }
    EXPECT_LE(r->report.lowerBoundSeconds, expected * (1 + 1e-9));
  }
  // The generator must exercise both outcomes.
  EXPECT_GT(feasible, 400);
  EXPECT_GT(infeasible, 5);
}

/// Reference O(S n^2) DP without any pruning: the cost of stage s on the
/// placed positions [i, j) is read off referenceStageTimes with everything
/// before the segment on stage s-1 and everything after it on stage s+1
/// (the objective prices stage s on its adjacent links only).
double referenceDP(const Graph &g, const Options &o) {
  std::vector<int> placed;
  for (size_t id = 0; id < g.nodes.size(); ++id)
    if (!g.nodes[id].rematerializable)
      placed.push_back(id);
  int n = placed.size(), numStages = o.numStages;
  const double inf = std::numeric_limits<double>::infinity();
  // Only called with i == 0 for s == 0 and j == n for the last stage, so
  // the placeholder stages s-1 and s+1 exist whenever they are used.
  auto segCost = [&](int s, int i, int j) -> double {
    std::vector<int> st(g.nodes.size(), -1);
    for (int p = 0; p < n; ++p)
      st[placed[p]] = p < i ? s - 1 : p < j ? s : s + 1;
    for (int p = i; p < j; ++p) {
      int pin = g.nodes[placed[p]].fixedStage;
      if (pin >= 0 && pin != s)
        return inf;
    }
    double t = referenceStageTimes(g, o, st)[s];
    double params = 0, acts = 0;
    for (int p = i; p < j; ++p) {
      params += g.nodes[placed[p]].paramBytes;
      acts += g.nodes[placed[p]].outputBytes;
    }
    double cap = o.memory.capacityOf(s);
    if (cap > 0 && params * (1 + o.memory.optimizerFactor) +
                           acts * o.memory.inFlightOf(s) >
                       cap)
      return inf;
    return t;
  };
  std::vector<std::vector<double>> f(numStages,
                                     std::vector<double>(n + 1, inf));
  for (int j = 1; j <= n - (numStages - 1); ++j)
    f[0][j] = segCost(0, 0, j);
  for (int s = 1; s < numStages; ++s)
    for (int j = s + 1; j <= n; ++j) {
      if (s == numStages - 1 && j != n)
        continue;
      for (int i = s; i < j; ++i)
        if (f[s - 1][i] < inf)
          f[s][j] = std::min(f[s][j], std::max(f[s - 1][i], segCost(s, i, j)));
    }
  return f[numStages - 1][n];
}

TEST(Partitioner, MatchesUnprunedDPOnMediumDAGs) {
  int feasible = 0;
  for (unsigned seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed * 7919);
    auto uni = [&](double a, double b) {
      return std::uniform_real_distribution<double>(a, b)(rng);
    };
    Graph g;
    int numRemat = 2, n = std::uniform_int_distribution<int>(20, 45)(rng);
    for (int r = 0; r < numRemat; ++r)
      g.addNode(remat("c" + std::to_string(r), uni(0, 0.3)));
    for (int k = 0; k < n; ++k)
      g.addNode(op("n" + std::to_string(k), uni(0.1, 2), std::round(uni(0, 50)),
                   std::round(uni(0, 20))));
    int total = numRemat + n;
    for (int r = 0; r < numRemat; ++r)
      for (int k = numRemat; k < total; ++k)
        if (uni(0, 1) < 0.15)
          g.addEdge(r, k, 10);
    for (int a = numRemat; a < total; ++a)
      for (int b = a + 1; b < std::min(total, a + 8); ++b)
        if (b == a + 1 || uni(0, 1) < 0.2)
          g.addEdge(a, b, std::round(uni(0, 100)), uni(0, 1) < 0.2);
    Options o;
    o.numStages = std::uniform_int_distribution<int>(3, 8)(rng);
    o.training = seed % 3 == 0;
    std::vector<std::vector<Link>> links(o.numStages,
                                         std::vector<Link>(o.numStages));
    for (auto &row : links)
      for (Link &l : row)
        l = Link{uni(0, 0.2), uni(50, 500)};
    o.links.between = [links](int a, int b) { return links[a][b]; };
    if (seed % 4 == 0) {
      o.memory.capacityBytes = {std::round(uni(150, 400))};
      o.memory.inFlight = oneFOneBInFlight(o.numStages, 4);
    }
    if (seed % 5 == 0)
      g.nodes[numRemat + n / 2].fixedStage = o.numStages / 2;
    double expected = referenceDP(g, o);
    llvm::Expected<Result> r = partition(g, o);
    if (std::isinf(expected)) {
      EXPECT_FALSE(static_cast<bool>(r));
      if (!r)
        llvm::consumeError(r.takeError());
      continue;
    }
    ++feasible;
    ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
    EXPECT_TRUE(near(r->report.bottleneckSeconds, expected))
        << r->report.bottleneckSeconds << " vs " << expected;
    expectValidPartition(g, r->partition);
  }
  EXPECT_GE(feasible, 30);
}

TEST(Partitioner, EvaluateMatchesReference) {
  for (unsigned seed = 1000; seed < 1100; ++seed) {
    RandomCase c = randomCase(seed);
    // Uniform contiguous split of the placed nodes.
    std::vector<int> st(c.graph.nodes.size(), -1);
    int n = 0;
    for (const Node &nd : c.graph.nodes)
      n += !nd.rematerializable;
    int k = 0;
    for (size_t id = 0; id < c.graph.nodes.size(); ++id)
      if (!c.graph.nodes[id].rematerializable)
        st[id] = (k++) * c.options.numStages / n;
    llvm::Expected<Result> r = evaluate(c.graph, c.options, st);
    ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
    std::vector<double> ref = referenceStageTimes(c.graph, c.options, st);
    for (int s = 0; s < c.options.numStages; ++s)
      EXPECT_TRUE(near(ref[s], r->report.stages[s].timeSeconds));
  }
}

/// a(4) -> b(3) -> c(2) -> d(1), 100 bytes per edge, 100 B/s links (1 s per
/// message); params 30, 0, 0, 10.
Graph handChain() {
  Graph g;
  g.addNode(op("a", 4, 30));
  g.addNode(op("b", 3, 0));
  g.addNode(op("c", 2, 0));
  g.addNode(op("d", 1, 10));
  g.addEdge(0, 1, 100);
  g.addEdge(1, 2, 100);
  g.addEdge(2, 3, 100);
  return g;
}

Options handOptions(Strategy s) {
  Options o;
  o.numStages = 2;
  o.strategy = s;
  o.links.uniform = Link{0, 100};
  return o;
}

TEST(Partitioner, HandExampleBalancedUniformParams) {
  Graph g = handChain();
  // Balanced: {a | b c d}: 4 + 1 send = 5, 6 + 1 recv = 7.
  llvm::Expected<Result> b = partition(g, handOptions(Strategy::Balanced));
  ASSERT_TRUE(static_cast<bool>(b));
  EXPECT_EQ(b->partition.stageOf, (std::vector<int>{0, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(b->report.bottleneckSeconds, 7);
  EXPECT_DOUBLE_EQ(b->report.stages[0].timeSeconds, 5);
  EXPECT_DOUBLE_EQ(b->report.stages[0].computeSeconds, 4);
  EXPECT_DOUBLE_EQ(b->report.stages[0].commSeconds, 1);
  EXPECT_DOUBLE_EQ(b->report.stages[0].sendBytes, 100);
  EXPECT_DOUBLE_EQ(b->report.stages[1].recvBytes, 100);
  EXPECT_DOUBLE_EQ(b->report.stages[1].sendBytes, 0);
  EXPECT_EQ(b->report.stages[1].numOps, 3);
  // Uniform: {a b | c d}: 7 + 1 = 8 and 3 + 1 = 4.
  EXPECT_DOUBLE_EQ(b->report.uniform.bottleneckSeconds, 8);
  // Params: max params 30 allows {a b c | d}: 9 + 1 = 10 and 1 + 1 = 2.
  EXPECT_DOUBLE_EQ(b->report.params.bottleneckSeconds, 10);
  // lower bound max(10 / 2, 4) = 5; imbalance 7 / ((5 + 7) / 2).
  EXPECT_DOUBLE_EQ(b->report.lowerBoundSeconds, 5);
  EXPECT_NEAR(b->report.imbalance, 7.0 / 6.0, 1e-12);

  llvm::Expected<Result> u = partition(g, handOptions(Strategy::Uniform));
  ASSERT_TRUE(static_cast<bool>(u));
  EXPECT_EQ(u->partition.stageOf, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_DOUBLE_EQ(u->report.bottleneckSeconds, 8);
  EXPECT_EQ(u->report.strategy, Strategy::Uniform);

  llvm::Expected<Result> p = partition(g, handOptions(Strategy::Params));
  ASSERT_TRUE(static_cast<bool>(p));
  EXPECT_EQ(p->partition.stageOf, (std::vector<int>{0, 0, 0, 1}));
  EXPECT_DOUBLE_EQ(p->report.bottleneckSeconds, 10);
  EXPECT_DOUBLE_EQ(p->report.stages[0].paramBytes, 30);
  EXPECT_DOUBLE_EQ(p->report.stages[1].paramBytes, 10);
}

TEST(Partitioner, UniformSplitsRemainderOntoFirstStages) {
  Graph g;
  for (int k = 0; k < 7; ++k)
    g.addNode(op("n" + std::to_string(k), 1));
  Options o;
  o.numStages = 3;
  o.strategy = Strategy::Uniform;
  llvm::Expected<Result> r = partition(g, o);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->partition.stageOf, (std::vector<int>{0, 0, 0, 1, 1, 2, 2}));
  EXPECT_DOUBLE_EQ(r->report.bottleneckSeconds, 3);
}

TEST(Partitioner, RematNodesAreDuplicatedNotSent) {
  Graph g;
  int mask = g.addNode(remat("mask", 0.5));
  int rope = g.addNode(remat("rope", 0.25)); // fed by mask
  int a = g.addNode(op("a", 2));
  int b = g.addNode(op("b", 2));
  g.addEdge(mask, rope, 1000);
  g.addEdge(mask, a, 1000);
  g.addEdge(rope, b, 1000);
  g.addEdge(a, b, 10);
  Options o;
  o.numStages = 2;
  o.links.uniform = Link{0, 10};
  llvm::Expected<Result> r = partition(g, o);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->partition.stageOf, (std::vector<int>{-1, -1, 0, 1}));
  // mask is used by stage 0 (a) and stage 1 (b via rope); rope only by 1.
  EXPECT_EQ(r->partition.rematStages[mask], (std::vector<int>{0, 1}));
  EXPECT_EQ(r->partition.rematStages[rope], (std::vector<int>{1}));
  EXPECT_DOUBLE_EQ(r->report.stages[0].computeSeconds, 2.5);
  EXPECT_DOUBLE_EQ(r->report.stages[1].computeSeconds, 2.75);
  EXPECT_EQ(r->report.stages[1].numRematOps, 2);
  // Only a -> b crosses: 10 bytes, 1 s.
  EXPECT_DOUBLE_EQ(r->report.stages[0].sendBytes, 10);
  EXPECT_DOUBLE_EQ(r->report.stages[1].recvBytes, 10);
  EXPECT_DOUBLE_EQ(r->report.stages[1].timeSeconds, 3.75);
  EXPECT_DOUBLE_EQ(r->report.bottleneckSeconds, 3.75);
}

TEST(Partitioner, RematFedByPlacedIsAnError) {
  Graph g;
  int a = g.addNode(op("a", 1));
  int c = g.addNode(remat("c", 1));
  int b = g.addNode(op("b", 1));
  g.addEdge(a, c, 4);
  g.addEdge(c, b, 4);
  Options o;
  EXPECT_EQ(errorOf(partition(g, o)),
            "rematerializable op 'c' uses the result of op 'a', which is not "
            "rematerializable");
}

TEST(Partitioner, SkipConnectionGoesDirectlyToConsumerStage) {
  // a -> b -> c -> d with a skip a -> d (100 bytes), one op per stage.
  Graph g;
  for (const char *n : {"a", "b", "c", "d"})
    g.addNode(op(n, 1));
  g.addEdge(0, 1, 100); // one value (a residual) used by b and d
  g.addEdge(1, 2, 20);
  g.addEdge(2, 3, 30);
  g.addEdge(0, 3, 100);
  Options o;
  o.numStages = 4;
  o.links.uniform = Link{0, 1000};
  llvm::Expected<Result> r = partition(g, o);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->partition.stageOf, (std::vector<int>{0, 1, 2, 3}));
  const auto &st = r->report.stages;
  EXPECT_DOUBLE_EQ(st[0].sendBytes, 100);       // charged once
  EXPECT_DOUBLE_EQ(st[0].fanoutSendBytes, 200); // to stages 1 and 3
  EXPECT_DOUBLE_EQ(st[1].recvBytes, 100); // the skip does not pass through
  EXPECT_DOUBLE_EQ(st[1].sendBytes, 20);
  EXPECT_DOUBLE_EQ(st[2].recvBytes, 20);
  EXPECT_DOUBLE_EQ(st[2].sendBytes, 30);
  EXPECT_DOUBLE_EQ(st[3].recvBytes, 130);
  EXPECT_DOUBLE_EQ(st[3].timeSeconds, 1 + 0.13);
  EXPECT_DOUBLE_EQ(st[1].timeSeconds, 1 + 0.1 + 0.02);
}

TEST(Partitioner, ValueSentOncePerDestinationStageInFanout) {
  // a feeds b, c (both stage 1) and d (stage 2): one value, two destinations.
  Graph g;
  for (const char *n : {"a", "b", "c", "d"}) {
    Node nd = op(n, 1);
    nd.fixedStage = n[0] == 'a' ? 0 : n[0] == 'd' ? 2 : 1;
    g.addNode(nd);
  }
  g.addEdge(0, 1, 64);
  g.addEdge(0, 2, 64);
  g.addEdge(0, 3, 64);
  Options o;
  o.numStages = 3;
  o.strategy = Strategy::Manual;
  llvm::Expected<Result> r = partition(g, o);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_DOUBLE_EQ(r->report.stages[0].sendBytes, 64);        // charged once
  EXPECT_DOUBLE_EQ(r->report.stages[0].fanoutSendBytes, 128); // moved twice
  EXPECT_DOUBLE_EQ(r->report.stages[1].recvBytes, 64);        // received once
  EXPECT_DOUBLE_EQ(r->report.stages[2].recvBytes, 64);
}

TEST(Partitioner, TooManyStages) {
  Graph g;
  for (int k = 0; k < 5; ++k)
    g.addNode(op("n" + std::to_string(k), 1));
  Options o;
  o.numStages = 8;
  EXPECT_EQ(errorOf(partition(g, o)),
            "cannot split 5 ops into 8 stages: use at most 5 stages "
            "(num-stages=5)");
  g.addNode(remat("zero", 0));
  EXPECT_EQ(errorOf(partition(g, o)),
            "cannot split 5 ops into 8 stages (1 more op is rematerializable: "
            "cheap ops without weights, duplicated into the stages that use "
            "them rather than placed): use at most 5 stages (num-stages=5)");
  o.numStages = 0;
  EXPECT_EQ(errorOf(partition(g, o)),
            "the number of stages must be at least 1, got 0");
}

TEST(Partitioner, MemoryLimitThatCannotBeMet) {
  // 4 ops of 3 GB params and 1.55 GB activations; 4 stages, 4 in flight
  // (GPipe): each stage needs 3 + 1.55 x 4 = 9.2 GB > 8 GB.
  Graph g;
  for (int k = 0; k < 4; ++k)
    g.addNode(op("layer" + std::to_string(k), 1, 3e9, 1.55e9));
  Options o;
  o.numStages = 4;
  o.memory.capacityBytes = {8e9};
  o.memory.inFlight = gpipeInFlight(4, 4);
  EXPECT_EQ(errorOf(partition(g, o)),
            "no split into 4 stages fits in memory; at best, stage 0 needs "
            "9.2 GB (params 3.0 GB + activations 1.6 GB x 4 in flight) but "
            "the limit is 8.0 GB");
  // Per-stage limits: only the last stage is short.
  o.memory.capacityBytes = {10e9, 10e9, 10e9, 9e9};
  EXPECT_EQ(errorOf(partition(g, o)),
            "no split into 4 stages fits in memory; at best, stage 3 needs "
            "9.2 GB (params 3.0 GB + activations 1.6 GB x 4 in flight) but "
            "the limit is 9.0 GB");
  // With a (fixed) uniform strategy the chosen split is reported.
  o.strategy = Strategy::Uniform;
  EXPECT_EQ(errorOf(partition(g, o)),
            "the uniform split does not fit in memory: stage 3 needs 9.2 GB "
            "(params 3.0 GB + activations 1.6 GB x 4 in flight) but the limit "
            "is 9.0 GB");
}

TEST(Partitioner, MemoryConstraintChangesTheAnswerWhenBinding) {
  // Compute favours {a b c | d}: a heavy-parameter last op.
  Graph g;
  g.addNode(op("a", 1, 10));
  g.addNode(op("b", 1, 10));
  g.addNode(op("c", 1, 10));
  g.addNode(op("d", 4, 10));
  g.addEdge(0, 1, 0);
  g.addEdge(1, 2, 0);
  g.addEdge(2, 3, 0);
  Options o;
  o.numStages = 2;
  llvm::Expected<Result> free = partition(g, o);
  ASSERT_TRUE(static_cast<bool>(free));
  EXPECT_EQ(free->partition.stageOf, (std::vector<int>{0, 0, 0, 1}));
  EXPECT_DOUBLE_EQ(free->report.bottleneckSeconds, 4);
  // Params x (1 + 1) must fit 40 bytes: at most 2 ops per stage.
  o.memory.capacityBytes = {40};
  o.memory.optimizerFactor = 1;
  llvm::Expected<Result> tight = partition(g, o);
  ASSERT_TRUE(static_cast<bool>(tight));
  EXPECT_EQ(tight->partition.stageOf, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_DOUBLE_EQ(tight->report.bottleneckSeconds, 5);
  EXPECT_DOUBLE_EQ(tight->report.stages[1].memoryBytes, 40);
  // The baselines are flagged when they do not fit.
  EXPECT_TRUE(tight->report.uniform.fitsMemory);
}

TEST(Partitioner, InFlightHelpers) {
  EXPECT_EQ(gpipeInFlight(4, 8), (std::vector<int>{8, 8, 8, 8}));
  EXPECT_EQ(oneFOneBInFlight(4, 8), (std::vector<int>{4, 3, 2, 1}));
  EXPECT_EQ(oneFOneBInFlight(4, 2), (std::vector<int>{2, 2, 2, 1}));
}

TEST(Partitioner, OneFOneBNeedsLessActivationMemoryThanGPipe) {
  // 4 equal ops, activations 10 bytes each, 4 microbatches, capacity 45.
  Graph g;
  for (int k = 0; k < 4; ++k)
    g.addNode(op("n" + std::to_string(k), 1, 0, 10));
  Options o;
  o.numStages = 2;
  o.memory.capacityBytes = {45};
  // GPipe: both stages keep 4 microbatches: 2 ops -> 80 > 45; 1 op -> 40,
  // but then the other stage has 3 ops -> 120: impossible. The least bad
  // split is {a b | c d}.
  o.memory.inFlight = gpipeInFlight(2, 4);
  std::string msg = errorOf(partition(g, o));
  EXPECT_EQ(msg, "no split into 2 stages fits in memory; at best, stage 0 "
                 "needs 80 B (params 0 B + activations 20 B x 4 in flight) "
                 "but the limit is 45 B");
  // 1F1B: stage 0 keeps 2, stage 1 keeps 1: {a b | c d} needs 40 and 20.
  o.memory.inFlight = oneFOneBInFlight(2, 4);
  llvm::Expected<Result> r = partition(g, o);
  ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
  EXPECT_EQ(r->partition.stageOf, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_DOUBLE_EQ(r->report.stages[0].memoryBytes, 40);
  EXPECT_DOUBLE_EQ(r->report.stages[1].memoryBytes, 20);
  EXPECT_EQ(r->report.stages[0].inFlight, 2);
  // Capacity 35: 1F1B forces {a | b c d}: 20 and 30.
  o.memory.capacityBytes = {35};
  r = partition(g, o);
  ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
  EXPECT_EQ(r->partition.stageOf, (std::vector<int>{0, 1, 1, 1}));
}

TEST(Partitioner, ManualStrategyIsChecked) {
  Graph g;
  for (const char *n : {"a", "b", "c"})
    g.addNode(op(n, 1));
  g.addEdge(0, 1, 1);
  g.addEdge(1, 2, 1);
  Options o;
  o.numStages = 2;
  o.strategy = Strategy::Manual;
  EXPECT_EQ(errorOf(partition(g, o)), "manual strategy: op 'a' has no stage");
  g.nodes[0].fixedStage = 0;
  g.nodes[1].fixedStage = 1;
  g.nodes[2].fixedStage = 0;
  EXPECT_EQ(errorOf(partition(g, o)),
            "manual strategy: op 'b' (stage 1) feeds op 'c' (stage 0): stages "
            "must not decrease along dependencies");
  g.nodes[1].fixedStage = 0;
  EXPECT_EQ(errorOf(partition(g, o)), "manual strategy: stage 1 has no ops");
  g.nodes[2].fixedStage = 5;
  EXPECT_EQ(errorOf(partition(g, o)),
            "manual strategy: op 'c' is assigned to stage 5 but there are only "
            "2 stages");
  g.nodes[2].fixedStage = 1;
  llvm::Expected<Result> r = partition(g, o);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->partition.stageOf, (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(r->report.strategy, Strategy::Manual);
}

TEST(Partitioner, ManualStrategyMayReorderIndependentOps) {
  // x and y are independent; x is given first but pinned after y.
  Graph g;
  Node x = op("x", 1), y = op("y", 2);
  x.fixedStage = 1;
  y.fixedStage = 0;
  g.addNode(x);
  g.addNode(y);
  Options o;
  o.numStages = 2;
  o.strategy = Strategy::Manual;
  llvm::Expected<Result> r = partition(g, o);
  ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
  EXPECT_EQ(r->partition.stageOf, (std::vector<int>{1, 0}));
  EXPECT_DOUBLE_EQ(r->report.stages[0].computeSeconds, 2);
}

TEST(Partitioner, BalancedHonoursPinsAndRejectsInconsistentOnes) {
  Graph g;
  for (int k = 0; k < 6; ++k)
    g.addNode(op("n" + std::to_string(k), k == 0 ? 10 : 1));
  for (int k = 0; k + 1 < 6; ++k)
    g.addEdge(k, k + 1, 0);
  Options o;
  o.numStages = 2;
  llvm::Expected<Result> free = partition(g, o);
  ASSERT_TRUE(static_cast<bool>(free));
  EXPECT_EQ(free->partition.stageOf, (std::vector<int>{0, 1, 1, 1, 1, 1}));
  g.nodes[1].fixedStage = 0;
  llvm::Expected<Result> pinned = partition(g, o);
  ASSERT_TRUE(static_cast<bool>(pinned));
  EXPECT_EQ(pinned->partition.stageOf, (std::vector<int>{0, 0, 1, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(pinned->report.bottleneckSeconds, 11);

  g.nodes[4].fixedStage = 0;
  g.nodes[3].fixedStage = 1;
  EXPECT_EQ(errorOf(partition(g, o)),
            "op 'n3' (fixed to stage 1) feeds op 'n4' (fixed to stage 0): "
            "stages must not decrease along dependencies");
  g.nodes[3].fixedStage = -1;
  g.nodes[4].fixedStage = 3;
  EXPECT_EQ(errorOf(partition(g, o)),
            "op 'n4' is fixed to stage 3 but there are only 2 stages");
  g.nodes[4].fixedStage = -1;
  g.nodes[5].fixedStage = 0;
  EXPECT_EQ(errorOf(partition(g, o)),
            "op 'n5' is fixed to stage 0 but only 0 ops come after it, too "
            "few for stages 1..1");
  g.nodes[5].fixedStage = -1;
  g.nodes[0].fixedStage = 1;
  g.nodes[1].fixedStage = -1;
  EXPECT_EQ(errorOf(partition(g, o)),
            "op 'n0' is fixed to stage 1 but only 0 ops come before it, too "
            "few for stages 0..0");
  // Independent ops pinned against the order (balanced keeps the order).
  Graph h;
  Node x = op("x", 1), y = op("y", 1);
  x.fixedStage = 1;
  y.fixedStage = 0;
  h.addNode(op("z", 1));
  h.addNode(x);
  h.addNode(y);
  EXPECT_EQ(errorOf(partition(h, o)),
            "op 'y' (fixed to stage 0) comes after op 'x' (fixed to stage 1) "
            "in the order, so the stages cannot be contiguous");
}

TEST(Partitioner, MalformedGraphs) {
  Graph g;
  g.addNode(op("a", 1));
  g.addNode(op("b", 1));
  g.addEdge(1, 0, 1);
  Options o;
  EXPECT_EQ(errorOf(partition(g, o)),
            "edge 'b' -> 'a' does not go forward: nodes must be given in a "
            "topological order");
  g.edges = {Edge{0, 7, 1, 0}};
  EXPECT_EQ(errorOf(partition(g, o)),
            "edge 0 -> 7 refers to a node outside 0..1");
  g.edges.clear();
  g.nodes[0].forwardSeconds = -1;
  EXPECT_EQ(errorOf(partition(g, o)),
            "op 'a' has a negative or non-finite time/size");
}

TEST(Partitioner, TiedWeightsAreReported) {
  Graph g;
  g.weightNames = {"embed", "w1"};
  g.weightBytes = {4e6, 1e6};
  Node e = op("embed", 1, 4e6);
  e.weights = {0};
  Node m = op("mlp", 1, 1e6);
  m.weights = {1};
  Node h = op("lm_head", 1);
  h.weights = {0};
  g.addNode(e);
  g.addNode(m);
  g.addNode(h);
  g.addEdge(0, 1, 8);
  g.addEdge(1, 2, 8);
  Options o;
  o.numStages = 2;
  llvm::Expected<Result> r = partition(g, o);
  ASSERT_TRUE(static_cast<bool>(r));
  ASSERT_EQ(r->report.tiedWeights.size(), 1u);
  EXPECT_EQ(r->report.tiedWeights[0].name, "embed");
  EXPECT_DOUBLE_EQ(r->report.tiedWeights[0].bytes, 4e6);
  EXPECT_EQ(r->report.tiedWeights[0].stages, (std::vector<int>{0, 1}));
}

/// embed (3 s, reads weight 0 of 4 MB) -> a (1 s, 1 MB) -> b (1 s, 1 MB) ->
/// head (1 s, reads weight 0 again): a tied embedding.
Graph tiedEmbeddingChain() {
  Graph g;
  g.weightNames = {"embed", "wa", "wb"};
  g.weightBytes = {4e6, 1e6, 1e6};
  Node e = op("embed", 3, 4e6), a = op("a", 1, 1e6), b = op("b", 1, 1e6),
       h = op("head", 1);
  e.weights = {0};
  a.weights = {1};
  b.weights = {2};
  h.weights = {0};
  for (const Node &n : {e, a, b, h})
    g.addNode(n);
  for (int k = 0; k < 3; ++k)
    g.addEdge(k, k + 1, 0);
  return g;
}

TEST(Partitioner, TiedWeightCopiesCountAgainstMemory) {
  // Without the copy, {embed | a b head} (bottleneck 3 s, stage 1 at 2 MB)
  // would be best. But stage 1 also holds the embedding (6 MB > 5.5 MB), so
  // the optimum is {embed a | b head}: 5 MB each, bottleneck 4 s.
  Graph g = tiedEmbeddingChain();
  Options o;
  o.numStages = 2;
  o.memory.capacityBytes = {5.5e6};
  llvm::Expected<Result> r = partition(g, o);
  ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
  EXPECT_EQ(r->partition.stageOf, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_DOUBLE_EQ(r->report.bottleneckSeconds, 4);
  EXPECT_DOUBLE_EQ(r->report.stages[0].paramBytes, 5e6);
  EXPECT_DOUBLE_EQ(r->report.stages[1].paramBytes, 5e6);
  // Unlimited memory: the better split, and its report charges the copy.
  o.memory.capacityBytes.clear();
  r = partition(g, o);
  ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
  EXPECT_EQ(r->partition.stageOf, (std::vector<int>{0, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(r->report.stages[0].paramBytes, 4e6);
  EXPECT_DOUBLE_EQ(r->report.stages[1].paramBytes, 6e6);
  Graph bad = g;
  bad.weightBytes[2] = -1;
  EXPECT_EQ(errorOf(partition(bad, o)),
            "weight 'wb' has a negative or non-finite size");
  // No split fits 4.5 MB; the best one, {embed a | b head}, needs 5 MB on
  // both stages (stage 1: 1 MB + the 4 MB copy).
  o.memory.capacityBytes = {4.5e6};
  EXPECT_EQ(errorOf(partition(g, o)),
            "no split into 2 stages fits in memory; at best, stage 0 needs 5.0 "
            "MB (params 5.0 MB + activations 0 B x 1 in flight) but the limit "
            "is 4.5 MB");
}

TEST(Partitioner, TrainingCountsBackwardAndGradients) {
  Graph g;
  Node a = op("a", 1), b = op("b", 1);
  a.backwardInputSeconds = b.backwardInputSeconds = 2;
  a.backwardWeightSeconds = b.backwardWeightSeconds = 0.5;
  g.addNode(a);
  g.addNode(b);
  g.addEdge(0, 1, 100);
  Options o;
  o.numStages = 2;
  o.training = true;
  o.links.uniform = Link{0.25, 100};
  llvm::Expected<Result> r = partition(g, o);
  ASSERT_TRUE(static_cast<bool>(r));
  // 3.5 compute + activation (1.25 s) + its gradient (1.25 s).
  EXPECT_DOUBLE_EQ(r->report.stages[0].timeSeconds, 6);
  EXPECT_DOUBLE_EQ(r->report.stages[1].timeSeconds, 6);
}

TEST(Partitioner, StrategyNamesAndJSON) {
  for (Strategy s : {Strategy::Balanced, Strategy::Uniform, Strategy::Params,
                     Strategy::Manual}) {
    llvm::Expected<Strategy> p = parseStrategy(toString(s));
    ASSERT_TRUE(static_cast<bool>(p));
    EXPECT_EQ(*p, s);
  }
  EXPECT_EQ(errorOf(parseStrategy("greedy")),
            "unknown partition strategy 'greedy' (expected balanced, uniform, "
            "params or manual)");

  Graph g = handChain();
  llvm::Expected<Result> r = partition(g, handOptions(Strategy::Balanced));
  ASSERT_TRUE(static_cast<bool>(r));
  llvm::json::Value v = toJSON(r->report);
  const llvm::json::Object *obj = v.getAsObject();
  ASSERT_TRUE(obj);
  EXPECT_EQ(obj->getString("strategy"), llvm::StringRef("balanced"));
  EXPECT_EQ(obj->getNumber("bottleneck_s"), 7.0);
  EXPECT_EQ(obj->getNumber("lower_bound_s"), 5.0);
  EXPECT_TRUE(obj->getNumber("imbalance"));
  EXPECT_TRUE(obj->getArray("tied_weights"));
  const llvm::json::Array *stages = obj->getArray("stages");
  ASSERT_TRUE(stages);
  ASSERT_EQ(stages->size(), 2u);
  const llvm::json::Object *s0 = (*stages)[0].getAsObject();
  for (const char *key : {"time_s", "compute_s", "comm_s", "flops",
                          "param_bytes", "activation_bytes", "send_bytes",
                          "recv_bytes", "num_ops", "memory_bytes"})
    EXPECT_TRUE(s0->get(key)) << key;
  EXPECT_EQ(s0->getNumber("flops"), 4e12);
  const llvm::json::Object *base = obj->getObject("baselines");
  ASSERT_TRUE(base);
  EXPECT_EQ(base->getObject("uniform")->getNumber("bottleneck_s"), 8.0);
  EXPECT_EQ(base->getObject("params")->getNumber("bottleneck_s"), 10.0);

  std::string table;
  llvm::raw_string_ostream os(table);
  printTable(os, r->report);
  EXPECT_NE(table.find("strategy balanced: bottleneck"), std::string::npos);
  EXPECT_NE(table.find("baseline uniform"), std::string::npos);
}

TEST(Partitioner, FormatBytes) {
  EXPECT_EQ(formatBytes(512), "512 B");
  EXPECT_EQ(formatBytes(18.2e9), "18.2 GB");
  EXPECT_EQ(formatBytes(16e9), "16.0 GB");
  EXPECT_EQ(formatBytes(1.5e6), "1.5 MB");
}

TEST(Partitioner, LargeChainWithSkipsIsOptimalAgainstThresholdFree) {
  // A 300-op chain with skips into 7 stages: the result must not be beaten
  // by any of many random contiguous splits (sanity at a larger size).
  std::mt19937 rng(7);
  Graph g;
  int n = 300;
  for (int k = 0; k < n; ++k)
    g.addNode(op("n" + std::to_string(k),
                 std::uniform_real_distribution<double>(0.5, 2)(rng)));
  for (int k = 0; k + 1 < n; ++k) {
    g.addEdge(k, k + 1, 100);
    if (k % 5 == 0 && k + 4 < n)
      g.addEdge(k, k + 4, 300);
  }
  Options o;
  o.numStages = 7;
  o.links.uniform = Link{0.01, 1000};
  llvm::Expected<Result> r = partition(g, o);
  ASSERT_TRUE(static_cast<bool>(r));
  expectValidPartition(g, r->partition);
  double best = r->report.bottleneckSeconds;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int> cuts;
    std::set<int> seen;
    while (static_cast<int>(seen.size()) < o.numStages - 1)
      seen.insert(std::uniform_int_distribution<int>(1, n - 1)(rng));
    std::vector<int> st(n);
    int s = 0;
    for (int k = 0; k < n; ++k) {
      if (seen.count(k))
        ++s;
      st[k] = s;
    }
    std::vector<double> t = referenceStageTimes(g, o, st);
    EXPECT_GE(*std::max_element(t.begin(), t.end()) * (1 + 1e-9), best);
  }
  EXPECT_LE(best, r->report.uniform.bottleneckSeconds * (1 + 1e-9));
}

} // namespace
