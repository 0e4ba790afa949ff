//===- Partitioner.cpp - Pipeline stage partitioner (pure C++) -*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// Implementation notes.
//
// The balanced strategy solves
//   f[s][j] = min_{i<j} max(f[s-1][i], cost(s, i, j))
// exactly (cost as defined in Partitioner.h). Segment costs are not monotone
// in the segment (absorbing a producer removes a receive), so the usual
// two-pointer/greedy shortcuts do not apply. Instead:
//  * For a fixed end j, the sweep i = j-1, j-2, ... maintains compute,
//    received/sent bytes and messages and remat copies incrementally: adding
//    position i touches only the values produced/used at i (each use entry
//    stores the next use of the same value), so the cost of every segment
//    [i, j) is available in amortized O(1 + degree).
//  * The DP is run under a threshold T: segments whose cost exceeds T are
//    dropped. Since placed compute and memory are monotone, the sweep stops
//    as soon as the placed compute of [i, j) exceeds T, and greedy reach
//    bounds (forward and backward) restrict which ends j each stage may
//    take. Any split with bottleneck <= T survives the pruning, so if the DP
//    finds one its value is the exact optimum. T starts slightly above the
//    lower bound and grows geometrically up to a known feasible bottleneck
//    (best of the uniform, params and memory-greedy splits) and finally +inf.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Partition/Partitioner.h"
#include "pipeopt/Support/Plural.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <numeric>

using namespace pipeopt;
using namespace pipeopt::partition;

char PartitionError::ID = 0;

namespace {

constexpr int kNoUse = std::numeric_limits<int>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// What a PartitionError names (-1: nothing).
struct ErrorAt {
  int node = -1, otherNode = -1, stage = -1, weight = -1;
};

llvm::Error makeError(const llvm::Twine &msg, ErrorAt at = {}) {
  auto e = std::make_unique<PartitionError>(msg.str());
  e->node = at.node;
  e->otherNode = at.otherNode;
  e->stage = at.stage;
  e->weight = at.weight;
  return llvm::Error(std::move(e));
}

/// A value (one result of a placed node) and its placed consumers.
struct ValueInfo {
  int producer = 0;           ///< node id
  double bytes = 0;           ///< max over its edges
  std::vector<int> consumers; ///< placed consumer node ids, unique
};

/// A weight (Graph::weightBytes) read by more than one placed node. Its bytes
/// sit in the paramBytes of its first reader; every other stage that reads
/// it holds one more copy.
struct SharedWeight {
  double bytes = 0;
  std::vector<int> readers; ///< placed node ids, ascending; size >= 2
};

/// Order-independent facts about the graph.
struct GraphInfo {
  const Graph *graph = nullptr;
  int numStages = 0;
  bool training = false;
  std::vector<double> nodeTime; ///< per node: t(n) in seconds
  std::vector<int> placed;      ///< placed node ids, in the given order
  std::vector<int> remat;       ///< remat node ids
  std::vector<ValueInfo> values;
  /// Per node id (remat nodes only): placed nodes using it, transitively.
  std::vector<std::vector<int>> rematUsers;
  /// Weights read by placed nodes at two or more places (tied weights).
  std::vector<SharedWeight> shared;
};

/// Per-stage raw quantities, before pricing.
struct Raw {
  double compute = 0, flops = 0, params = 0, acts = 0;
  double forward = 0, backwardInput = 0, backwardWeight = 0;
  double backwardInputFlops = 0, backwardWeightFlops = 0;
  double recvBytes = 0, sendBytes = 0, fanoutBytes = 0;
  long long recvMsgs = 0, sendMsgs = 0;
  int numOps = 0, numRemat = 0;
};

/// α (seconds per message) and 1/β (seconds per byte) for the receive side
/// (In(s)) and the send side (Out(s)) of each stage, training included.
struct StageLinkCoeffs {
  double inA = 0, inB = 0, outA = 0, outB = 0;
};

double invBandwidth(const machine::Link &l) {
  return l.bytesPerSecond > 0 ? 1.0 / l.bytesPerSecond : 0.0;
}

std::vector<StageLinkCoeffs> linkCoeffs(const Options &opts) {
  int numStages = opts.numStages;
  std::vector<StageLinkCoeffs> c(numStages);
  for (int s = 0; s < numStages; ++s) {
    if (s > 0) {
      machine::Link in = opts.links.link(s - 1, s);
      c[s].inA += in.latencySeconds;
      c[s].inB += invBandwidth(in);
      if (opts.training) { // gradient of In(s) goes back to s-1
        machine::Link back = opts.links.link(s, s - 1);
        c[s].inA += back.latencySeconds;
        c[s].inB += invBandwidth(back);
      }
    }
    if (s + 1 < numStages) {
      machine::Link out = opts.links.link(s, s + 1);
      c[s].outA += out.latencySeconds;
      c[s].outB += invBandwidth(out);
      if (opts.training) { // gradient of Out(s) comes from s+1
        machine::Link back = opts.links.link(s + 1, s);
        c[s].outA += back.latencySeconds;
        c[s].outB += invBandwidth(back);
      }
    }
  }
  return c;
}

double commOf(const StageLinkCoeffs &c, double recvMsgs, double recvBytes,
              double sendMsgs, double sendBytes) {
  return c.inA * recvMsgs + c.inB * recvBytes + c.outA * sendMsgs +
         c.outB * sendBytes;
}

double memoryOf(const Options &opts, int s, double params, double acts) {
  return params * (1.0 + opts.memory.optimizerFactor) +
         acts * opts.memory.inFlightOf(s);
}

//===----------------------------------------------------------------------===//
// Graph checks and preprocessing
//===----------------------------------------------------------------------===//

std::string nodeName(const Graph &g, int id) {
  const std::string &n = g.nodes[id].name;
  return n.empty() ? ("#" + std::to_string(id)) : n;
}

llvm::Expected<GraphInfo> analyze(const Graph &g, const Options &opts) {
  GraphInfo info;
  info.graph = &g;
  info.numStages = opts.numStages;
  info.training = opts.training;
  if (opts.numStages < 1)
    return makeError(llvm::formatv("the number of stages must be at least 1, "
                                   "got {0}",
                                   opts.numStages));
  int numNodes = static_cast<int>(g.nodes.size());
  info.nodeTime.resize(numNodes);
  for (int id = 0; id < numNodes; ++id) {
    const Node &n = g.nodes[id];
    double vals[] = {
        n.forwardSeconds, n.backwardInputSeconds, n.backwardWeightSeconds,
        n.flops,          n.paramBytes,           n.outputBytes};
    for (double v : vals)
      if (!(v >= 0) || !std::isfinite(v))
        return makeError(
            llvm::formatv("op '{0}' has a negative or non-finite time/size",
                          nodeName(g, id)),
            ErrorAt{id});
    info.nodeTime[id] = n.forwardSeconds;
    if (opts.training)
      info.nodeTime[id] += n.backwardInputSeconds + n.backwardWeightSeconds;
    (n.rematerializable ? info.remat : info.placed).push_back(id);
    for (int w : n.weights)
      if (w < 0)
        return makeError(llvm::formatv("op '{0}' uses a negative weight id {1}",
                                       nodeName(g, id), w),
                         ErrorAt{id});
  }
  // Edges: values and remat uses.
  std::map<std::pair<int, int>, int> valueIds;
  std::vector<std::vector<int>> rematDirectPlaced(numNodes),
      rematDirectRemat(numNodes);
  for (const Edge &e : g.edges) {
    if (e.from < 0 || e.from >= numNodes || e.to < 0 || e.to >= numNodes)
      return makeError(
          llvm::formatv("edge {0} -> {1} refers to a node outside 0..{2}",
                        e.from, e.to, numNodes - 1));
    if (e.from >= e.to)
      return makeError(llvm::formatv("edge '{0}' -> '{1}' does not go forward: "
                                     "nodes must be given in a "
                                     "topological order",
                                     nodeName(g, e.from), nodeName(g, e.to)),
                       ErrorAt{e.from, e.to});
    if (!(e.bytes >= 0) || !std::isfinite(e.bytes))
      return makeError(llvm::formatv("edge '{0}' -> '{1}' has invalid bytes",
                                     nodeName(g, e.from), nodeName(g, e.to)),
                       ErrorAt{e.from, e.to});
    bool fromRemat = g.nodes[e.from].rematerializable;
    bool toRemat = g.nodes[e.to].rematerializable;
    if (fromRemat) {
      (toRemat ? rematDirectRemat : rematDirectPlaced)[e.from].push_back(e.to);
      continue;
    }
    if (toRemat)
      return makeError(
          llvm::formatv(
              "rematerializable op '{0}' uses the result of op '{1}', which is "
              "not rematerializable",
              nodeName(g, e.to), nodeName(g, e.from)),
          ErrorAt{e.to, e.from});
    auto key = std::make_pair(e.from, e.result);
    auto it = valueIds.find(key);
    int vid;
    if (it == valueIds.end()) {
      vid = static_cast<int>(info.values.size());
      valueIds.emplace(key, vid);
      info.values.push_back(ValueInfo{e.from, e.bytes, {}});
    } else {
      vid = it->second;
    }
    ValueInfo &v = info.values[vid];
    v.bytes = std::max(v.bytes, e.bytes);
    v.consumers.push_back(e.to);
  }
  for (ValueInfo &v : info.values) {
    llvm::sort(v.consumers);
    v.consumers.erase(std::unique(v.consumers.begin(), v.consumers.end()),
                      v.consumers.end());
  }
  for (size_t w = 0; w < g.weightBytes.size(); ++w)
    if (!(g.weightBytes[w] >= 0) || !std::isfinite(g.weightBytes[w]))
      return makeError(
          llvm::formatv("weight {0} has a negative or non-finite size",
                        w < g.weightNames.size() ? "'" + g.weightNames[w] + "'"
                                                 : std::to_string(w)),
          ErrorAt{-1, -1, -1, static_cast<int>(w)});
  // Weights read by several placed nodes.
  {
    std::map<int, std::vector<int>> readers;
    for (int id : info.placed)
      for (int w : g.nodes[id].weights)
        if (w < static_cast<int>(g.weightBytes.size()) && g.weightBytes[w] > 0)
          readers[w].push_back(id);
    for (auto &it : readers) {
      std::vector<int> &r = it.second;
      llvm::sort(r);
      r.erase(std::unique(r.begin(), r.end()), r.end());
      if (r.size() >= 2)
        info.shared.push_back(SharedWeight{g.weightBytes[it.first], r});
    }
  }
  // Transitive placed users of remat nodes (reverse topological order).
  info.rematUsers.resize(numNodes);
  for (auto it = info.remat.rbegin(); it != info.remat.rend(); ++it) {
    int r = *it;
    std::vector<int> users = rematDirectPlaced[r];
    for (int r2 : rematDirectRemat[r])
      users.insert(users.end(), info.rematUsers[r2].begin(),
                   info.rematUsers[r2].end());
    llvm::sort(users);
    users.erase(std::unique(users.begin(), users.end()), users.end());
    info.rematUsers[r] = std::move(users);
  }
  return info;
}

//===----------------------------------------------------------------------===//
// Direct pricing of a stage assignment (definition, used for all reports)
//===----------------------------------------------------------------------===//

struct Priced {
  std::vector<Raw> raw;
  std::vector<StageReport> stages;
  std::vector<std::vector<int>> rematStages; // per node id
  double bottleneck = 0;
  int worstMemoryStage = -1; // largest mem/cap ratio above 1, or -1
};

/// Adds a node's F (and, when training, B and W) times to a stage's.
void addPhases(Raw &r, const Node &n, bool training) {
  r.forward += n.forwardSeconds;
  if (training) {
    r.backwardInput += n.backwardInputSeconds;
    r.backwardWeight += n.backwardWeightSeconds;
    r.backwardInputFlops += n.backwardInputFlops;
    r.backwardWeightFlops += n.backwardWeightFlops;
  }
}

/// Prices `stageOf` (per node; remat entries ignored). Assumes validity.
Priced price(const GraphInfo &info, const Options &opts,
             llvm::ArrayRef<int> stageOf) {
  const Graph &g = *info.graph;
  int numStages = info.numStages;
  Priced p;
  p.raw.resize(numStages);
  for (int id : info.placed) {
    Raw &r = p.raw[stageOf[id]];
    const Node &n = g.nodes[id];
    r.compute += info.nodeTime[id];
    addPhases(r, n, opts.training);
    r.flops += n.flops;
    r.params += n.paramBytes;
    r.acts += n.outputBytes;
    r.numOps += 1;
  }
  // One more copy of a shared weight in every stage that reads it, other than
  // the stage of its first reader (which carries it in paramBytes).
  std::vector<int> readerStages;
  for (const SharedWeight &w : info.shared) {
    readerStages.clear();
    for (int id : w.readers)
      if (stageOf[id] != stageOf[w.readers.front()])
        readerStages.push_back(stageOf[id]);
    llvm::sort(readerStages);
    readerStages.erase(std::unique(readerStages.begin(), readerStages.end()),
                       readerStages.end());
    for (int s : readerStages)
      p.raw[s].params += w.bytes;
  }
  std::vector<int> dests;
  for (const ValueInfo &v : info.values) {
    int ps = stageOf[v.producer];
    dests.clear();
    for (int c : v.consumers)
      if (stageOf[c] != ps)
        dests.push_back(stageOf[c]);
    llvm::sort(dests);
    dests.erase(std::unique(dests.begin(), dests.end()), dests.end());
    if (dests.empty())
      continue;
    int msg = v.bytes > 0 ? 1 : 0;
    for (int d : dests) {
      p.raw[d].recvBytes += v.bytes;
      p.raw[d].recvMsgs += msg;
    }
    p.raw[ps].sendBytes += v.bytes;
    p.raw[ps].sendMsgs += msg;
    p.raw[ps].fanoutBytes += v.bytes * dests.size();
  }
  p.rematStages.assign(g.nodes.size(), {});
  for (int r : info.remat) {
    std::vector<int> &st = p.rematStages[r];
    for (int u : info.rematUsers[r])
      st.push_back(stageOf[u]);
    llvm::sort(st);
    st.erase(std::unique(st.begin(), st.end()), st.end());
    for (int s : st) {
      p.raw[s].compute += info.nodeTime[r];
      addPhases(p.raw[s], g.nodes[r], opts.training);
      p.raw[s].flops += g.nodes[r].flops;
      p.raw[s].numRemat += 1;
    }
  }
  std::vector<StageLinkCoeffs> coeffs = linkCoeffs(opts);
  double worstRatio = 1.0;
  for (int s = 0; s < numStages; ++s) {
    const Raw &r = p.raw[s];
    StageReport sr;
    sr.computeSeconds = r.compute;
    sr.forwardSeconds = r.forward;
    sr.backwardInputSeconds = r.backwardInput;
    sr.backwardWeightSeconds = r.backwardWeight;
    sr.backwardInputFlops = r.backwardInputFlops;
    sr.backwardWeightFlops = r.backwardWeightFlops;
    sr.commSeconds =
        commOf(coeffs[s], r.recvMsgs, r.recvBytes, r.sendMsgs, r.sendBytes);
    sr.timeSeconds = sr.computeSeconds + sr.commSeconds;
    sr.flops = r.flops;
    sr.paramBytes = r.params;
    sr.activationBytes = r.acts;
    sr.sendBytes = r.sendBytes;
    sr.fanoutSendBytes = r.fanoutBytes;
    sr.recvBytes = r.recvBytes;
    sr.numOps = r.numOps;
    sr.numRematOps = r.numRemat;
    sr.memoryBytes = memoryOf(opts, s, r.params, r.acts);
    sr.capacityBytes = opts.memory.capacityOf(s);
    sr.inFlight = opts.memory.inFlightOf(s);
    if (sr.capacityBytes > 0 && sr.memoryBytes > sr.capacityBytes) {
      double ratio = sr.memoryBytes / sr.capacityBytes;
      if (ratio > worstRatio) {
        worstRatio = ratio;
        p.worstMemoryStage = s;
      }
    }
    p.bottleneck = std::max(p.bottleneck, sr.timeSeconds);
    p.stages.push_back(sr);
  }
  return p;
}

std::string memoryMessage(const Options &opts, int s, double params,
                          double acts) {
  double mem = memoryOf(opts, s, params, acts);
  return llvm::formatv("stage {0} needs {1} (params {2} + activations {3} x "
                       "{4} in flight) but the limit is {5}",
                       s, formatBytes(mem),
                       formatBytes(params * (1 + opts.memory.optimizerFactor)),
                       formatBytes(acts), opts.memory.inFlightOf(s),
                       formatBytes(opts.memory.capacityOf(s)))
      .str();
}

/// Checks `stageOf` (placed nodes): range, monotone along edges, non-empty.
llvm::Error checkAssignment(const GraphInfo &info, llvm::ArrayRef<int> stageOf,
                            llvm::StringRef what) {
  const Graph &g = *info.graph;
  int numStages = info.numStages;
  if (stageOf.size() != g.nodes.size())
    return makeError(llvm::formatv("{0}: {1} stages given for {2} ops", what,
                                   stageOf.size(), g.nodes.size()));
  std::vector<int> count(numStages, 0);
  for (int id : info.placed) {
    int s = stageOf[id];
    if (s < 0)
      return makeError(
          llvm::formatv("{0}: op '{1}' has no stage", what, nodeName(g, id)),
          ErrorAt{id});
    if (s >= numStages)
      return makeError(
          llvm::formatv(
              "{0}: op '{1}' is assigned to stage {2} but there are only {3}",
              what, nodeName(g, id), s, pipeopt::countOf(numStages, "stage")),
          ErrorAt{id, -1, s});
    ++count[s];
  }
  for (const ValueInfo &v : info.values)
    for (int c : v.consumers)
      if (stageOf[c] < stageOf[v.producer])
        return makeError(
            llvm::formatv(
                "{0}: op '{1}' (stage {2}) feeds op '{3}' (stage {4}): stages "
                "must not decrease along dependencies",
                what, nodeName(g, v.producer), stageOf[v.producer],
                nodeName(g, c), stageOf[c]),
            ErrorAt{v.producer, c});
  for (int s = 0; s < numStages; ++s)
    if (count[s] == 0)
      return makeError(llvm::formatv("{0}: stage {1} has no ops", what, s),
                       ErrorAt{-1, -1, s});
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Order index: positional data for the DP and greedy splits
//===----------------------------------------------------------------------===//

struct OrderIndex {
  int n = 0;
  std::vector<int> order; // pos -> node id
  std::vector<double> tPos, prefT, prefParams, prefActs;
  std::vector<int> pinPos;
  // CSR per position.
  std::vector<int> prodBegin, prodVal;
  std::vector<int> useBegin, useVal, useNext;
  std::vector<int> remBegin, remId, remNext;
  // Per value.
  std::vector<int> firstUse, lastUse;
  std::vector<double> vBytes;
  std::vector<double> remT; // per remat index
  int numRematEntries = 0;
  // Shared weights: per position, (bytes, next reader position or kNoUse)
  // of each shared weight read there; prefix of the bytes at first readers;
  // and per weight its sorted reader positions.
  std::vector<int> wBegin, wNext;
  std::vector<double> wBytes, prefFirstW;
  std::vector<std::vector<int>> sharedPos;
  std::vector<double> sharedBytes;
};

/// Bytes of the shared weights read anywhere in [i, j).
double sharedReadBytes(const OrderIndex &x, int i, int j) {
  double sum = 0;
  for (size_t w = 0; w < x.sharedPos.size(); ++w) {
    const std::vector<int> &pos = x.sharedPos[w];
    if (pos.back() < i || pos.front() >= j)
      continue;
    auto it = std::lower_bound(pos.begin(), pos.end(), i);
    if (it != pos.end() && *it < j)
      sum += x.sharedBytes[w];
  }
  return sum;
}

/// Parameter bytes a stage covering positions [i, j) holds: each node's own
/// paramBytes plus a copy of every shared weight it reads whose first reader
/// lies before i. Monotone under inclusion of segments.
double segmentParams(const OrderIndex &x, int i, int j) {
  double params = x.prefParams[j] - x.prefParams[i];
  if (x.sharedPos.empty())
    return params;
  return params + sharedReadBytes(x, i, j) -
         (x.prefFirstW[j] - x.prefFirstW[i]);
}

OrderIndex buildIndex(const GraphInfo &info) {
  const Graph &g = *info.graph;
  OrderIndex x;
  x.n = static_cast<int>(info.placed.size());
  x.order = info.placed;
  int n = x.n;
  std::vector<int> posOf(g.nodes.size(), -1);
  for (int p = 0; p < n; ++p)
    posOf[x.order[p]] = p;
  x.tPos.resize(n);
  x.pinPos.resize(n);
  x.prefT.assign(n + 1, 0);
  x.prefParams.assign(n + 1, 0);
  x.prefActs.assign(n + 1, 0);
  for (int p = 0; p < n; ++p) {
    const Node &nd = g.nodes[x.order[p]];
    x.tPos[p] = info.nodeTime[x.order[p]];
    x.pinPos[p] = nd.fixedStage;
    x.prefT[p + 1] = x.prefT[p] + x.tPos[p];
    x.prefParams[p + 1] = x.prefParams[p] + nd.paramBytes;
    x.prefActs[p + 1] = x.prefActs[p] + nd.outputBytes;
  }
  int numValues = static_cast<int>(info.values.size());
  x.firstUse.resize(numValues);
  x.lastUse.resize(numValues);
  x.vBytes.resize(numValues);
  std::vector<std::vector<int>> prod(n);
  std::vector<std::vector<std::pair<int, int>>> uses(n), rems(n);
  for (int v = 0; v < numValues; ++v) {
    const ValueInfo &vi = info.values[v];
    x.vBytes[v] = vi.bytes;
    std::vector<int> cp;
    for (int c : vi.consumers)
      cp.push_back(posOf[c]);
    llvm::sort(cp);
    x.firstUse[v] = cp.front();
    x.lastUse[v] = cp.back();
    prod[posOf[vi.producer]].push_back(v);
    for (size_t k = 0; k < cp.size(); ++k)
      uses[cp[k]].push_back({v, k + 1 < cp.size() ? cp[k + 1] : kNoUse});
  }
  x.remT.resize(info.remat.size());
  for (size_t ri = 0; ri < info.remat.size(); ++ri) {
    int r = info.remat[ri];
    x.remT[ri] = info.nodeTime[r];
    std::vector<int> up;
    for (int u : info.rematUsers[r])
      up.push_back(posOf[u]);
    llvm::sort(up);
    for (size_t k = 0; k < up.size(); ++k)
      rems[up[k]].push_back(
          {static_cast<int>(ri), k + 1 < up.size() ? up[k + 1] : kNoUse});
  }
  x.prefFirstW.assign(n + 1, 0);
  std::vector<std::vector<std::pair<double, int>>> wAt(n);
  for (const SharedWeight &w : info.shared) {
    std::vector<int> pos;
    for (int id : w.readers)
      pos.push_back(posOf[id]);
    llvm::sort(pos);
    x.prefFirstW[pos.front() + 1] += w.bytes; // turned into a prefix below
    for (size_t k = 0; k < pos.size(); ++k)
      wAt[pos[k]].push_back(
          {w.bytes, k + 1 < pos.size() ? pos[k + 1] : kNoUse});
    x.sharedPos.push_back(std::move(pos));
    x.sharedBytes.push_back(w.bytes);
  }
  for (int p = 0; p < n; ++p)
    x.prefFirstW[p + 1] += x.prefFirstW[p];
  x.wBegin.assign(n + 1, 0);
  for (int p = 0; p < n; ++p) {
    x.wBegin[p + 1] = x.wBegin[p] + wAt[p].size();
    for (auto &e : wAt[p]) {
      x.wBytes.push_back(e.first);
      x.wNext.push_back(e.second);
    }
  }
  x.prodBegin.assign(n + 1, 0);
  x.useBegin.assign(n + 1, 0);
  x.remBegin.assign(n + 1, 0);
  for (int p = 0; p < n; ++p) {
    x.prodBegin[p + 1] = x.prodBegin[p] + prod[p].size();
    x.useBegin[p + 1] = x.useBegin[p] + uses[p].size();
    x.remBegin[p + 1] = x.remBegin[p] + rems[p].size();
    x.prodVal.insert(x.prodVal.end(), prod[p].begin(), prod[p].end());
    for (auto &u : uses[p]) {
      x.useVal.push_back(u.first);
      x.useNext.push_back(u.second);
    }
    for (auto &r : rems[p]) {
      x.remId.push_back(r.first);
      x.remNext.push_back(r.second);
    }
  }
  return x;
}

/// Stage per node from cut positions (`cuts[s]` = first position of stage s,
/// cuts[S] = n) over `order`; remat nodes get -1.
std::vector<int> stagesFromCuts(const GraphInfo &info,
                                llvm::ArrayRef<int> order,
                                llvm::ArrayRef<int> cuts) {
  std::vector<int> stageOf(info.graph->nodes.size(), -1);
  for (size_t s = 0; s + 1 < cuts.size(); ++s)
    for (int p = cuts[s]; p < cuts[s + 1]; ++p)
      stageOf[order[p]] = static_cast<int>(s);
  return stageOf;
}

//===----------------------------------------------------------------------===//
// Pin bounds and greedy splits under monotone constraints
//===----------------------------------------------------------------------===//

/// For each stage s: [minEnd, maxEnd] for its end and [minStart, maxStart]
/// for its start implied by the pinned positions of the order.
struct PinBounds {
  std::vector<int> minEnd, maxEnd, minStart, maxStart;
};

PinBounds pinBounds(const OrderIndex &x, int numStages) {
  int n = x.n;
  PinBounds b;
  // lastAtMost[s]: last pos pinned <= s; firstAbove[s]: first pos pinned > s.
  std::vector<int> lastPinned(numStages, -1), firstPinned(numStages, n);
  for (int p = 0; p < n; ++p) {
    int s = x.pinPos[p];
    if (s < 0 || s >= numStages)
      continue;
    lastPinned[s] = std::max(lastPinned[s], p);
    firstPinned[s] = std::min(firstPinned[s], p);
  }
  b.minEnd.resize(numStages);
  b.maxEnd.resize(numStages);
  b.minStart.resize(numStages);
  b.maxStart.resize(numStages);
  // Stages between a pinned op and stage s need one op each:
  // end(s) >= lastPinned[t] + 1 + (s - t) for t <= s, and
  // start(s) <= firstPinned[t] - (t - s) for t >= s.
  const int kFar = 1 << 29;
  int run = -kFar;
  for (int s = 0; s < numStages; ++s) {
    run = std::max(run + 1, lastPinned[s] >= 0 ? lastPinned[s] + 1 : -kFar);
    b.minEnd[s] = std::max(run, 0);
  }
  run = kFar;
  for (int s = numStages - 1; s >= 0; --s) {
    run = std::min(run - 1, firstPinned[s] < n ? firstPinned[s] : kFar);
    b.maxStart[s] = std::min(run, n);
  }
  for (int s = 0; s < numStages; ++s) {
    b.maxEnd[s] = s + 1 < numStages ? b.maxStart[s + 1] : n;
    b.minStart[s] = s > 0 ? b.minEnd[s - 1] : 0;
  }
  return b;
}

/// A monotone per-stage limit on segments [i, j): placed compute <= maxT,
/// params <= maxParams, and memory within `memScale` × capacity.
struct Limits {
  double maxT = kInf;
  double maxParams = kInf;
  double memScale = kInf; // kInf: memory ignored
  bool usePins = true;
};

bool segmentFits(const OrderIndex &x, const Options &opts, const Limits &lim,
                 int s, int i, int j) {
  if (x.prefT[j] - x.prefT[i] > lim.maxT)
    return false;
  double params = segmentParams(x, i, j);
  if (params > lim.maxParams)
    return false;
  if (lim.memScale != kInf) {
    double cap = opts.memory.capacityOf(s);
    if (cap > 0 && memoryOf(opts, s, params, x.prefActs[j] - x.prefActs[i]) >
                       lim.memScale * cap)
      return false;
  }
  return true;
}

/// Forward greedy: reach[s+1] = the largest end of stage s over all splits
/// of a prefix into s+1 stages satisfying `lim`; -1 if none. Exact because
/// every constraint is monotone in the segment.
std::vector<int> forwardReach(const OrderIndex &x, const Options &opts,
                              const Limits &lim, const PinBounds &pins,
                              int numStages) {
  int n = x.n;
  std::vector<int> reach(numStages + 1, -1);
  reach[0] = 0;
  for (int s = 0; s < numStages; ++s) {
    int i = reach[s];
    int lo = std::max(i + 1, lim.usePins ? pins.minEnd[s] : 0);
    int hi =
        std::min(n - (numStages - 1 - s), lim.usePins ? pins.maxEnd[s] : n);
    if (lo > hi || !segmentFits(x, opts, lim, s, i, lo))
      return reach;
    // Largest j in [lo, hi] with segmentFits (monotone in j).
    int a = lo, b = hi;
    while (a < b) {
      int m = a + (b - a + 1) / 2;
      if (segmentFits(x, opts, lim, s, i, m))
        a = m;
      else
        b = m - 1;
    }
    reach[s + 1] = a;
  }
  return reach;
}

/// Backward greedy: start[s] = the smallest start of stage s over all splits
/// of a suffix into stages s..S-1 satisfying `lim`; -1 if none.
std::vector<int> backwardStart(const OrderIndex &x, const Options &opts,
                               const Limits &lim, const PinBounds &pins,
                               int numStages) {
  int n = x.n;
  std::vector<int> start(numStages + 1, -1);
  start[numStages] = n;
  for (int s = numStages - 1; s >= 0; --s) {
    int j = start[s + 1];
    int hi = std::min(j - 1, lim.usePins ? pins.maxStart[s] : n);
    int lo = std::max(s, lim.usePins ? pins.minStart[s] : 0);
    if (s == 0)
      lo = hi = 0 <= hi ? 0 : -1;
    if (lo > hi || hi < 0 || !segmentFits(x, opts, lim, s, hi, j))
      return start;
    int a = lo, b = hi; // smallest i in [lo, hi] that fits
    while (a < b) {
      int m = a + (b - a) / 2;
      if (segmentFits(x, opts, lim, s, m, j))
        b = m;
      else
        a = m + 1;
    }
    start[s] = a;
  }
  return start;
}

/// Greedy cuts (forward, maximal stages) or empty if infeasible.
std::vector<int> greedyCuts(const OrderIndex &x, const Options &opts,
                            const Limits &lim, const PinBounds &pins,
                            int numStages) {
  std::vector<int> reach = forwardReach(x, opts, lim, pins, numStages);
  if (reach[numStages] != x.n)
    return {};
  return reach;
}

std::vector<int> uniformCuts(int n, int numStages) {
  std::vector<int> cuts(numStages + 1, 0);
  int base = n / numStages, extra = n % numStages;
  for (int s = 0; s < numStages; ++s)
    cuts[s + 1] = cuts[s] + base + (s < extra ? 1 : 0);
  return cuts;
}

/// DeepSpeed-style parameter balancing: the smallest max-params bound whose
/// greedy split succeeds (bisection on the bound), then that greedy split.
std::vector<int> paramsCuts(const OrderIndex &x, const Options &opts,
                            const PinBounds &pins, int numStages) {
  Limits lim;
  lim.usePins = false;
  double lo = 0, hi = x.prefParams[x.n];
  for (double b : x.sharedBytes) // copies of shared weights
    hi += b;
  lim.maxParams = hi;
  std::vector<int> best = greedyCuts(x, opts, lim, pins, numStages);
  lim.maxParams = lo;
  std::vector<int> atLo = greedyCuts(x, opts, lim, pins, numStages);
  if (!atLo.empty())
    return atLo;
  for (int it = 0; it < 200 && hi - lo > 1e-9 * std::max(1.0, hi); ++it) {
    double mid = 0.5 * (lo + hi);
    lim.maxParams = mid;
    std::vector<int> c = greedyCuts(x, opts, lim, pins, numStages);
    if (c.empty()) {
      lo = mid;
    } else {
      hi = mid;
      best = std::move(c);
    }
  }
  return best;
}

//===----------------------------------------------------------------------===//
// Exact DP under a threshold
//===----------------------------------------------------------------------===//

struct DPResult {
  bool found = false;
  double bottleneck = kInf;
  std::vector<int> cuts;
};

/// Points for the offline initialisation of segment quantities: each is
/// (x = position, y = threshold position, channel weights). A segment
/// [i, j) counts the points with x in [i, j) and y >= j.
enum Channel { UseB, UseM, FirstB, FirstM, LastB, LastM, RemT, NumChannels };

struct Point {
  int x, y, channel;
  double w;
};

std::vector<Point> segmentPoints(const OrderIndex &x) {
  std::vector<Point> pts;
  for (int p = 0; p < x.n; ++p) {
    for (int k = x.useBegin[p]; k < x.useBegin[p + 1]; ++k) {
      double b = x.vBytes[x.useVal[k]];
      pts.push_back({p, x.useNext[k], UseB, b});
      pts.push_back({p, x.useNext[k], UseM, b > 0 ? 1.0 : 0.0});
    }
    for (int k = x.prodBegin[p]; k < x.prodBegin[p + 1]; ++k) {
      int v = x.prodVal[k];
      double b = x.vBytes[v];
      pts.push_back({p, x.firstUse[v], FirstB, b});
      pts.push_back({p, x.firstUse[v], FirstM, b > 0 ? 1.0 : 0.0});
      pts.push_back({p, x.lastUse[v], LastB, b});
      pts.push_back({p, x.lastUse[v], LastM, b > 0 ? 1.0 : 0.0});
    }
    for (int k = x.remBegin[p]; k < x.remBegin[p + 1]; ++k)
      pts.push_back({p, x.remNext[k], RemT, x.remT[x.remId[k]]});
  }
  llvm::sort(pts, [](const Point &a, const Point &b) { return a.y > b.y; });
  return pts;
}

/// Communication and remat quantities of a segment [i, j).
struct SegComm {
  double recvB = 0, recvM = 0, sendB = 0, sendM = 0, remT = 0;
};

/// For each j with top[j] >= 0: the quantities of segment [top[j], j),
/// computed offline with a Fenwick tree over x while j decreases.
std::vector<SegComm> initialSegments(const OrderIndex &x,
                                     llvm::ArrayRef<Point> pts,
                                     llvm::ArrayRef<int> top) {
  int n = x.n;
  std::vector<SegComm> out(n + 1);
  std::vector<double> tree((n + 1) * NumChannels, 0.0);
  auto add = [&](int pos, int ch, double w) {
    for (int k = pos + 1; k <= n; k += k & -k)
      tree[k * NumChannels + ch] += w;
  };
  auto prefix = [&](int pos, double *acc) { // sums over x < pos
    for (int c = 0; c < NumChannels; ++c)
      acc[c] = 0;
    for (int k = pos; k > 0; k -= k & -k)
      for (int c = 0; c < NumChannels; ++c)
        acc[c] += tree[k * NumChannels + c];
  };
  // Prefix sums of all produced bytes/messages (y ignored).
  std::vector<double> prodB(n + 1, 0), prodM(n + 1, 0);
  for (int p = 0; p < n; ++p) {
    prodB[p + 1] = prodB[p];
    prodM[p + 1] = prodM[p];
    for (int k = x.prodBegin[p]; k < x.prodBegin[p + 1]; ++k) {
      double b = x.vBytes[x.prodVal[k]];
      prodB[p + 1] += b;
      prodM[p + 1] += b > 0;
    }
  }
  size_t next = 0;
  double hi[NumChannels], lo[NumChannels];
  for (int j = n; j >= 1; --j) {
    while (next < pts.size() && pts[next].y >= j) {
      add(pts[next].x, pts[next].channel, pts[next].w);
      ++next;
    }
    int i = top[j];
    if (i < 0)
      continue;
    prefix(j, hi);
    prefix(i, lo);
    double h[NumChannels];
    for (int c = 0; c < NumChannels; ++c)
      h[c] = hi[c] - lo[c];
    SegComm &s = out[j];
    // Received: uses whose next use is past the segment, minus values
    // produced inside the segment and first used before j.
    s.recvB = h[UseB] - ((prodB[j] - prodB[i]) - h[FirstB]);
    s.recvM = h[UseM] - ((prodM[j] - prodM[i]) - h[FirstM]);
    s.sendB = h[LastB];
    s.sendM = h[LastM];
    s.remT = h[RemT];
  }
  return out;
}

DPResult solveUnderThreshold(const OrderIndex &x, llvm::ArrayRef<Point> pts,
                             const Options &opts, const PinBounds &pins,
                             double threshold) {
  int n = x.n, numStages = opts.numStages;
  DPResult res;
  double slackT = threshold == kInf ? kInf : threshold * (1 + 1e-9) + 1e-300;
  Limits lim;
  lim.maxT = slackT;
  lim.memScale = 1.0;
  std::vector<int> reach = forwardReach(x, opts, lim, pins, numStages);
  std::vector<int> bstart = backwardStart(x, opts, lim, pins, numStages);
  if (reach[numStages] != n || bstart[0] != 0)
    return res;
  // J_s = allowed ends of stage s; both bounds are non-decreasing in s.
  std::vector<int> jLo(numStages), jHi(numStages);
  for (int s = 0; s < numStages; ++s) {
    jLo[s] = std::max({s + 1, pins.minEnd[s], bstart[s + 1]});
    jHi[s] = std::min({n - (numStages - 1 - s), pins.maxEnd[s], reach[s + 1]});
    if (jLo[s] > jHi[s])
      return res;
  }
  // For each end j: the stages that may end there and the starts to try.
  std::vector<int> sFirst(n + 1, 0), sLast(n + 1, -1), top(n + 1, -1),
      bottom(n + 1, 0);
  {
    int sLo = 0, sHi = -1;
    for (int j = 1; j <= n; ++j) {
      while (sHi + 1 < numStages && jLo[sHi + 1] <= j)
        ++sHi;
      while (sLo <= sHi && jHi[sLo] < j)
        ++sLo;
      if (sLo > sHi)
        continue;
      sFirst[j] = sLo;
      sLast[j] = sHi;
      int iTop = sLo == 0 ? 0 : -1, iBot = j;
      for (int s = sLo; s <= sHi; ++s) {
        iTop = std::max(iTop, s == 0 ? 0 : jHi[s - 1]);
        iBot = std::min(iBot, s == 0 ? 0 : jLo[s - 1]);
      }
      iTop = std::min(iTop, j - 1);
      if (slackT != kInf) { // placed compute of [i, j) must fit
        double need = x.prefT[j] - slackT;
        int iComp = static_cast<int>(
            std::lower_bound(x.prefT.begin(), x.prefT.begin() + j + 1, need) -
            x.prefT.begin());
        iBot = std::max(iBot, iComp);
      }
      if (iTop >= iBot) {
        top[j] = iTop;
        bottom[j] = iBot;
      }
    }
  }
  std::vector<SegComm> init = initialSegments(x, pts, top);
  // Pinned positions around a segment (pins are non-decreasing in the order).
  std::vector<int> nextPin(n + 1, n), prevPin(n + 1, -1);
  for (int p = n - 1; p >= 0; --p)
    nextPin[p] = x.pinPos[p] >= 0 ? p : nextPin[p + 1];
  for (int p = 1; p <= n; ++p)
    prevPin[p] = x.pinPos[p - 1] >= 0 ? p - 1 : prevPin[p - 1];

  std::vector<std::vector<double>> f(numStages);
  std::vector<std::vector<int>> arg(numStages);
  for (int s = 0; s < numStages; ++s) {
    f[s].assign(jHi[s] - jLo[s] + 1, kInf);
    arg[s].assign(jHi[s] - jLo[s] + 1, -1);
  }
  std::vector<StageLinkCoeffs> coeffs = linkCoeffs(opts);
  std::vector<double> cap(numStages), inFl(numStages);
  for (int s = 0; s < numStages; ++s) {
    cap[s] = opts.memory.capacityOf(s);
    inFl[s] = opts.memory.inFlightOf(s);
  }
  double optMul = 1.0 + opts.memory.optimizerFactor;

  for (int j = 1; j <= n; ++j) {
    if (top[j] < 0)
      continue;
    int sLo = sFirst[j], sHi = sLast[j];
    double capMax = 0, inFlMin = kInf;
    bool anyUncapped = false;
    for (int s = sLo; s <= sHi; ++s) {
      if (cap[s] <= 0)
        anyUncapped = true;
      capMax = std::max(capMax, cap[s]);
      inFlMin = std::min(inFlMin, inFl[s]);
    }
    int pinHi = prevPin[j] >= 0 ? x.pinPos[prevPin[j]] : -1;
    const SegComm &c0 = init[j];
    double recvB = c0.recvB, recvM = c0.recvM, sendB = c0.sendB,
           sendM = c0.sendM, remT = c0.remT;
    // Shared weights read in [i, j); maintained like the remat copies.
    double sharedB = x.sharedPos.empty() ? 0 : sharedReadBytes(x, top[j], j);
    for (int i = top[j]; i >= bottom[j]; --i) {
      if (i < top[j]) { // extend the segment [i+1, j) by position i
        for (int k = x.prodBegin[i]; k < x.prodBegin[i + 1]; ++k) {
          int v = x.prodVal[k];
          double b = x.vBytes[v];
          double msg = b > 0;
          if (x.firstUse[v] < j) {
            recvB -= b;
            recvM -= msg;
          }
          if (x.lastUse[v] >= j) {
            sendB += b;
            sendM += msg;
          }
        }
        for (int k = x.useBegin[i]; k < x.useBegin[i + 1]; ++k) {
          if (x.useNext[k] >= j) {
            double b = x.vBytes[x.useVal[k]];
            recvB += b;
            recvM += b > 0;
          }
        }
        for (int k = x.remBegin[i]; k < x.remBegin[i + 1]; ++k)
          if (x.remNext[k] >= j)
            remT += x.remT[x.remId[k]];
        for (int k = x.wBegin[i]; k < x.wBegin[i + 1]; ++k)
          if (x.wNext[k] >= j)
            sharedB += x.wBytes[k];
      }
      double params = x.prefParams[j] - x.prefParams[i] + sharedB -
                      (x.prefFirstW[j] - x.prefFirstW[i]);
      double acts = x.prefActs[j] - x.prefActs[i];
      if (!anyUncapped && params * optMul + acts * inFlMin > capMax)
        break;
      int pinLo = -1;
      if (nextPin[i] < j) {
        pinLo = x.pinPos[nextPin[i]];
        if (pinLo != pinHi)
          break;
      }
      double comp = x.prefT[j] - x.prefT[i] + remT;
      for (int s = sLo; s <= sHi; ++s) {
        double prev;
        if (s == 0) {
          if (i != 0)
            continue;
          prev = 0;
        } else {
          if (i < jLo[s - 1] || i > jHi[s - 1])
            continue;
          prev = f[s - 1][i - jLo[s - 1]];
          if (prev == kInf)
            continue;
        }
        if (pinLo >= 0 && pinLo != s)
          continue;
        double &best = f[s][j - jLo[s]];
        if (prev >= best)
          continue;
        double cost = comp + commOf(coeffs[s], recvM, recvB, sendM, sendB);
        if (cost > slackT)
          continue;
        if (cap[s] > 0 && params * optMul + acts * inFl[s] > cap[s])
          continue;
        double cand = std::max(prev, cost);
        if (cand < best) {
          best = cand;
          arg[s][j - jLo[s]] = i;
        }
      }
    }
  }
  int last = numStages - 1;
  if (jHi[last] != n || f[last][n - jLo[last]] == kInf)
    return res;
  res.found = true;
  res.bottleneck = f[last][n - jLo[last]];
  res.cuts.assign(numStages + 1, 0);
  res.cuts[numStages] = n;
  int j = n;
  for (int s = last; s >= 0; --s) {
    int i = arg[s][j - jLo[s]];
    res.cuts[s] = i;
    j = i;
  }
  return res;
}

//===----------------------------------------------------------------------===//
// Errors about pins and memory
//===----------------------------------------------------------------------===//

llvm::Error checkPins(const GraphInfo &info, const OrderIndex &x,
                      bool needContiguous) {
  const Graph &g = *info.graph;
  int numStages = info.numStages;
  for (int p = 0; p < x.n; ++p) {
    int s = x.pinPos[p];
    if (s < -1 || s >= numStages)
      return makeError(
          llvm::formatv("op '{0}' is fixed to stage {1} but there are only {2}",
                        nodeName(g, x.order[p]), s,
                        pipeopt::countOf(numStages, "stage")),
          ErrorAt{x.order[p], -1, s});
  }
  for (const ValueInfo &v : info.values) {
    int a = g.nodes[v.producer].fixedStage;
    for (int c : v.consumers) {
      int b = g.nodes[c].fixedStage;
      if (a >= 0 && b >= 0 && b < a)
        return makeError(
            llvm::formatv(
                "op '{0}' (fixed to stage {1}) feeds op '{2}' (fixed to stage "
                "{3}): stages must not decrease along dependencies",
                nodeName(g, v.producer), a, nodeName(g, c), b),
            ErrorAt{v.producer, c});
    }
  }
  if (!needContiguous)
    return llvm::Error::success();
  int prevPos = -1;
  for (int p = 0; p < x.n; ++p) {
    int s = x.pinPos[p];
    if (s < 0)
      continue;
    if (prevPos < 0) {
      if (p < s)
        return makeError(llvm::formatv("op '{0}' is fixed to stage {1} but "
                                       "only {2} ops come before it, "
                                       "too few for stages 0..{3}",
                                       nodeName(g, x.order[p]), s, p, s - 1),
                         ErrorAt{x.order[p]});
    } else {
      int a = x.pinPos[prevPos];
      if (s < a)
        return makeError(
            llvm::formatv(
                "op '{0}' (fixed to stage {1}) comes after op '{2}' (fixed to "
                "stage {3}) in the order, so the stages cannot be contiguous",
                nodeName(g, x.order[p]), s, nodeName(g, x.order[prevPos]), a),
            ErrorAt{x.order[p], x.order[prevPos]});
      if (s - a > p - prevPos)
        return makeError(
            llvm::formatv(
                "ops '{0}' (stage {1}) and '{2}' (stage {3}) are only {4} "
                "positions apart, too few for stages {5}..{6} in between",
                nodeName(g, x.order[prevPos]), a, nodeName(g, x.order[p]), s,
                p - prevPos, a + 1, s - 1),
            ErrorAt{x.order[prevPos], x.order[p]});
    }
    prevPos = p;
  }
  if (prevPos >= 0) {
    int s = x.pinPos[prevPos];
    int after = x.n - 1 - prevPos;
    if (after < numStages - 1 - s)
      return makeError(llvm::formatv("op '{0}' is fixed to stage {1} but only "
                                     "{2} ops come after it, too "
                                     "few for stages {3}..{4}",
                                     nodeName(g, x.order[prevPos]), s, after,
                                     s + 1, numStages - 1),
                       ErrorAt{x.order[prevPos]});
  }
  return llvm::Error::success();
}

/// If no contiguous split of `x` fits memory (with pins), an error naming
/// the stage of the split that exceeds its capacity the least (the smallest
/// achievable worst memory/capacity ratio, by bisection over greedy splits).
llvm::Error checkMemoryFeasible(const OrderIndex &x, const Options &opts,
                                const PinBounds &pins, bool usePins) {
  int numStages = opts.numStages;
  Limits lim;
  lim.usePins = usePins;
  lim.memScale = 1.0;
  if (!greedyCuts(x, opts, lim, pins, numStages).empty())
    return llvm::Error::success();
  double lo = 1.0, hi = 2.0;
  std::vector<int> cuts;
  for (int it = 0; it < 200; ++it) {
    lim.memScale = hi;
    cuts = greedyCuts(x, opts, lim, pins, numStages);
    if (!cuts.empty())
      break;
    lo = hi;
    hi *= 2;
  }
  if (cuts.empty())
    return makeError("no split into stages fits in memory");
  for (int it = 0; it < 100 && hi - lo > 1e-6 * hi; ++it) {
    double mid = 0.5 * (lo + hi);
    lim.memScale = mid;
    std::vector<int> c = greedyCuts(x, opts, lim, pins, numStages);
    if (c.empty()) {
      lo = mid;
    } else {
      hi = mid;
      cuts = std::move(c);
    }
  }
  int worst = 0;
  double worstRatio = -1;
  for (int s = 0; s < numStages; ++s) {
    double cap = opts.memory.capacityOf(s);
    if (cap <= 0)
      continue;
    double mem = memoryOf(opts, s, segmentParams(x, cuts[s], cuts[s + 1]),
                          x.prefActs[cuts[s + 1]] - x.prefActs[cuts[s]]);
    if (mem / cap > worstRatio) {
      worstRatio = mem / cap;
      worst = s;
    }
  }
  return makeError(
      llvm::formatv(
          "no split into {0} stages fits in memory; at best, {1}", numStages,
          memoryMessage(opts, worst,
                        segmentParams(x, cuts[worst], cuts[worst + 1]),
                        x.prefActs[cuts[worst + 1]] - x.prefActs[cuts[worst]])),
      ErrorAt{-1, -1, worst});
}

//===----------------------------------------------------------------------===//
// Reports
//===----------------------------------------------------------------------===//

Report makeReport(const GraphInfo &info, const Options &opts, const Priced &p,
                  llvm::ArrayRef<int> stageOf) {
  const Graph &g = *info.graph;
  Report r;
  r.strategy = opts.strategy;
  r.numStages = info.numStages;
  r.stages = p.stages;
  r.bottleneckSeconds = p.bottleneck;
  double total = 0, slowest = 0;
  for (int id : info.placed) {
    total += info.nodeTime[id];
    slowest = std::max(slowest, info.nodeTime[id]);
  }
  for (int id : info.remat)
    if (!info.rematUsers[id].empty())
      total += info.nodeTime[id];
  r.lowerBoundSeconds = std::max(total / info.numStages, slowest);
  double sum = 0;
  for (const StageReport &s : r.stages)
    sum += s.timeSeconds;
  double mean = sum / info.numStages;
  r.imbalance = mean > 0 ? p.bottleneck / mean : 1.0;
  // Tied weights.
  std::map<int, std::vector<int>> users;
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    const Node &n = g.nodes[id];
    if (n.weights.empty())
      continue;
    if (n.rematerializable) {
      for (int w : n.weights)
        for (int s : p.rematStages[id])
          users[w].push_back(s);
    } else {
      for (int w : n.weights)
        users[w].push_back(stageOf[id]);
    }
  }
  for (auto &it : users) {
    std::vector<int> st = it.second;
    llvm::sort(st);
    st.erase(std::unique(st.begin(), st.end()), st.end());
    if (st.size() < 2)
      continue;
    TiedWeight t;
    t.weight = it.first;
    if (it.first < static_cast<int>(g.weightNames.size()))
      t.name = g.weightNames[it.first];
    if (it.first < static_cast<int>(g.weightBytes.size()))
      t.bytes = g.weightBytes[it.first];
    t.stages = std::move(st);
    r.tiedWeights.push_back(std::move(t));
  }
  return r;
}

Result makeResult(const GraphInfo &info, const Options &opts,
                  std::vector<int> stageOf) {
  Priced p = price(info, opts, stageOf);
  Result res;
  res.report = makeReport(info, opts, p, stageOf);
  res.partition.numStages = info.numStages;
  res.partition.rematStages = std::move(p.rematStages);
  res.partition.stageOf = std::move(stageOf);
  return res;
}

Baseline baselineOf(const GraphInfo &info, const Options &opts,
                    const OrderIndex &x, llvm::ArrayRef<int> cuts) {
  Baseline b;
  if (cuts.empty())
    return b;
  Priced p = price(info, opts, stagesFromCuts(info, x.order, cuts));
  b.computed = true;
  b.bottleneckSeconds = p.bottleneck;
  b.fitsMemory = p.worstMemoryStage < 0;
  return b;
}

llvm::Error memoryErrorIfAny(const Options &opts, const Priced &p) {
  if (p.worstMemoryStage < 0)
    return llvm::Error::success();
  int s = p.worstMemoryStage;
  return makeError(
      llvm::formatv("the {0} split does not fit in memory: {1}",
                    toString(opts.strategy),
                    memoryMessage(opts, s, p.raw[s].params, p.raw[s].acts)),
      ErrorAt{-1, -1, s});
}

} // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

int Graph::addNode(Node node) {
  nodes.push_back(std::move(node));
  return static_cast<int>(nodes.size()) - 1;
}

void Graph::addEdge(int from, int to, double bytes, int result) {
  edges.push_back(Edge{from, to, bytes, result});
}

int LinkModel::rankOf(int stage) const {
  if (stage >= 0 && stage < static_cast<int>(stageRank.size()))
    return stageRank[stage];
  return stage;
}

machine::Link LinkModel::link(int fromStage, int toStage) const {
  if (between)
    return between(rankOf(fromStage), rankOf(toStage));
  return uniform;
}

double MemoryModel::capacityOf(int stage) const {
  if (capacityBytes.empty())
    return 0;
  if (capacityBytes.size() == 1)
    return capacityBytes[0];
  return stage < static_cast<int>(capacityBytes.size()) ? capacityBytes[stage]
                                                        : 0;
}

int MemoryModel::inFlightOf(int stage) const {
  if (stage >= 0 && stage < static_cast<int>(inFlight.size()))
    return inFlight[stage];
  return 1;
}

std::vector<int> pipeopt::partition::gpipeInFlight(int numStages,
                                                   int numMicrobatches) {
  return std::vector<int>(std::max(numStages, 0), numMicrobatches);
}

std::vector<int> pipeopt::partition::oneFOneBInFlight(int numStages,
                                                      int numMicrobatches) {
  std::vector<int> v(std::max(numStages, 0));
  for (int s = 0; s < numStages; ++s)
    v[s] = std::min(numStages - s, numMicrobatches);
  return v;
}

llvm::StringRef pipeopt::partition::toString(Strategy strategy) {
  switch (strategy) {
  case Strategy::Balanced:
    return "balanced";
  case Strategy::Uniform:
    return "uniform";
  case Strategy::Params:
    return "params";
  case Strategy::Manual:
    return "manual";
  }
  return "unknown";
}

llvm::Expected<Strategy>
pipeopt::partition::parseStrategy(llvm::StringRef name) {
  for (Strategy s : {Strategy::Balanced, Strategy::Uniform, Strategy::Params,
                     Strategy::Manual})
    if (name == toString(s))
      return s;
  return makeError(llvm::formatv("unknown partition strategy '{0}' (expected "
                                 "balanced, uniform, params or manual)",
                                 name));
}

std::string pipeopt::partition::formatBytes(double bytes) {
  const char *units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  int u = 0;
  double v = bytes;
  while (std::fabs(v) >= 1000 && u < 5) {
    v /= 1000;
    ++u;
  }
  if (u == 0)
    return llvm::formatv("{0} B", static_cast<long long>(std::llround(v)));
  return llvm::formatv("{0:F1} {1}", v, units[u]).str();
}

llvm::Expected<Result>
pipeopt::partition::evaluate(const Graph &graph, const Options &options,
                             llvm::ArrayRef<int> stageOf) {
  llvm::Expected<GraphInfo> info = analyze(graph, options);
  if (!info)
    return info.takeError();
  if (llvm::Error e = checkAssignment(*info, stageOf, "evaluate"))
    return e;
  std::vector<int> st(stageOf.begin(), stageOf.end());
  for (int r : info->remat)
    st[r] = -1;
  return makeResult(*info, options, std::move(st));
}

llvm::Expected<Result> pipeopt::partition::partition(const Graph &graph,
                                                     const Options &options) {
  llvm::Expected<GraphInfo> infoOr = analyze(graph, options);
  if (!infoOr)
    return infoOr.takeError();
  GraphInfo &info = *infoOr;
  int numStages = options.numStages;
  int n = static_cast<int>(info.placed.size());
  if (n < numStages) {
    std::string msg =
        llvm::formatv("cannot split {0} into {1}", pipeopt::countOf(n, "op"),
                      pipeopt::countOf(numStages, "stage"));
    if (!info.remat.empty())
      msg += llvm::formatv(" ({0} more {1} {2} rematerializable: cheap ops "
                           "without weights, duplicated into the stages "
                           "that use them rather than placed)",
                           info.remat.size(),
                           info.remat.size() == 1 ? "op" : "ops",
                           info.remat.size() == 1 ? "is" : "are")
                 .str();
    // Every stage needs at least one placed op.
    if (n > 0)
      msg += llvm::formatv(": use at most {0} (num-stages={1})",
                           pipeopt::countOf(n, "stage"), n)
                 .str();
    return makeError(msg);
  }
  for (int s = 0; s < numStages; ++s)
    if (options.memory.inFlightOf(s) < 0)
      return makeError(
          llvm::formatv(
              "stage {0} has a negative number of in-flight microbatches", s),
          ErrorAt{-1, -1, s});

  OrderIndex x = buildIndex(info);
  PinBounds pins = pinBounds(x, numStages);
  std::vector<int> uCuts = uniformCuts(n, numStages);
  std::vector<int> pCuts = paramsCuts(x, options, pins, numStages);

  std::vector<int> stageOf;
  switch (options.strategy) {
  case Strategy::Manual: {
    std::vector<int> st(graph.nodes.size(), -1);
    for (int id : info.placed)
      st[id] = graph.nodes[id].fixedStage;
    if (llvm::Error e = checkAssignment(info, st, "manual strategy"))
      return e;
    stageOf = std::move(st);
    break;
  }
  case Strategy::Uniform:
    stageOf = stagesFromCuts(info, x.order, uCuts);
    break;
  case Strategy::Params:
    stageOf = stagesFromCuts(info, x.order, pCuts);
    break;
  case Strategy::Balanced: {
    if (llvm::Error e = checkPins(info, x, /*needContiguous=*/true))
      return e;
    if (llvm::Error e = checkMemoryFeasible(x, options, pins, true))
      return e;
    // A feasible upper bound: best valid split among simple candidates.
    double ub = kInf;
    auto consider = [&](llvm::ArrayRef<int> cuts) {
      if (cuts.empty())
        return;
      for (int s = 0; s < numStages; ++s)
        for (int p = cuts[s]; p < cuts[s + 1]; ++p)
          if (x.pinPos[p] >= 0 && x.pinPos[p] != s)
            return;
      Priced p = price(info, options, stagesFromCuts(info, x.order, cuts));
      if (p.worstMemoryStage < 0)
        ub = std::min(ub, p.bottleneck);
    };
    consider(uCuts);
    consider(pCuts);
    Limits memLim;
    memLim.memScale = 1.0;
    consider(greedyCuts(x, options, memLim, pins, numStages));
    double lb = 0, total = x.prefT[n];
    for (int p = 0; p < n; ++p)
      lb = std::max(lb, x.tPos[p]);
    lb = std::max(lb, total / numStages);
    // Thresholds lb(1 + eps) with eps doubling from 1e-3: the work of a
    // round grows with its slack, so the total is about twice the last round.
    std::vector<Point> pts = segmentPoints(x);
    DPResult dp;
    double eps = 1e-3;
    double t = lb > 0 ? lb * (1 + eps) : ub;
    while (true) {
      if (!(t < ub))
        t = ub; // also handles ub == inf
      dp = solveUnderThreshold(x, pts, options, pins, t);
      if (dp.found || t == kInf)
        break;
      if (t >= ub) {
        t = kInf; // not expected: the ub split is valid
        continue;
      }
      eps *= 2;
      t = eps > 1e12 ? kInf : lb * (1 + eps);
    }
    if (!dp.found)
      return makeError(llvm::formatv(
          "no split into {0} stages satisfies the fixed stages and memory "
          "limits",
          numStages));
    stageOf = stagesFromCuts(info, x.order, dp.cuts);
    break;
  }
  }

  Result res = makeResult(info, options, std::move(stageOf));
  if (options.strategy != Strategy::Balanced) {
    Priced p = price(info, options, res.partition.stageOf);
    if (llvm::Error e = memoryErrorIfAny(options, p))
      return e;
  }
  if (options.computeBaselines) {
    res.report.uniform = baselineOf(info, options, x, uCuts);
    res.report.params = baselineOf(info, options, x, pCuts);
  }
  return res;
}

llvm::json::Value pipeopt::partition::toJSON(const Report &r) {
  llvm::json::Array stages;
  for (const StageReport &s : r.stages)
    stages.push_back(llvm::json::Object{
        {"time_s", s.timeSeconds},
        {"compute_s", s.computeSeconds},
        {"forward_s", s.forwardSeconds},
        {"backward_input_s", s.backwardInputSeconds},
        {"backward_weight_s", s.backwardWeightSeconds},
        {"backward_input_flops", s.backwardInputFlops},
        {"backward_weight_flops", s.backwardWeightFlops},
        {"comm_s", s.commSeconds},
        {"flops", s.flops},
        {"param_bytes", s.paramBytes},
        {"activation_bytes", s.activationBytes},
        {"send_bytes", s.sendBytes},
        {"fanout_send_bytes", s.fanoutSendBytes},
        {"recv_bytes", s.recvBytes},
        {"num_ops", s.numOps},
        {"num_remat_ops", s.numRematOps},
        {"memory_bytes", s.memoryBytes},
        {"capacity_bytes", s.capacityBytes},
        {"in_flight", s.inFlight},
    });
  llvm::json::Array tied;
  for (const TiedWeight &t : r.tiedWeights) {
    llvm::json::Array st;
    for (int s : t.stages)
      st.push_back(s);
    tied.push_back(llvm::json::Object{{"weight", t.weight},
                                      {"name", t.name},
                                      {"bytes", t.bytes},
                                      {"stages", std::move(st)}});
  }
  auto baseline = [](const Baseline &b) -> llvm::json::Value {
    if (!b.computed)
      return nullptr;
    return llvm::json::Object{{"bottleneck_s", b.bottleneckSeconds},
                              {"fits_memory", b.fitsMemory}};
  };
  return llvm::json::Object{
      {"strategy", toString(r.strategy)},
      {"num_stages", r.numStages},
      {"stages", std::move(stages)},
      {"bottleneck_s", r.bottleneckSeconds},
      {"lower_bound_s", r.lowerBoundSeconds},
      {"imbalance", r.imbalance},
      {"tied_weights", std::move(tied)},
      {"baselines", llvm::json::Object{{"uniform", baseline(r.uniform)},
                                       {"params", baseline(r.params)}}},
  };
}

void pipeopt::partition::printTable(llvm::raw_ostream &os, const Report &r) {
  os << llvm::formatv("{0,-5} {1,6} {2,5} {3,11} {4,11} {5,11} {6,10} "
                      "{7,10} {8,10} {9,10} {10,10}\n",
                      "stage", "ops", "remat", "time_s", "compute_s", "comm_s",
                      "params", "acts", "recv", "send", "memory");
  for (size_t s = 0; s < r.stages.size(); ++s) {
    const StageReport &st = r.stages[s];
    os << llvm::formatv("{0,-5} {1,6} {2,5} {3,11} {4,11} {5,11} {6,10} "
                        "{7,10} {8,10} {9,10} {10,10}\n",
                        s, st.numOps, st.numRematOps,
                        llvm::formatv("{0:E3}", st.timeSeconds).str(),
                        llvm::formatv("{0:E3}", st.computeSeconds).str(),
                        llvm::formatv("{0:E3}", st.commSeconds).str(),
                        formatBytes(st.paramBytes),
                        formatBytes(st.activationBytes),
                        formatBytes(st.recvBytes), formatBytes(st.sendBytes),
                        formatBytes(st.memoryBytes));
  }
  os << llvm::formatv("strategy {0}: bottleneck {1:E3} s, lower bound {2:E3} "
                      "s, imbalance {3:F3}\n",
                      toString(r.strategy), r.bottleneckSeconds,
                      r.lowerBoundSeconds, r.imbalance);
  if (r.uniform.computed)
    os << llvm::formatv("baseline uniform: bottleneck {0:E3} s{1}\n",
                        r.uniform.bottleneckSeconds,
                        r.uniform.fitsMemory ? "" : " (exceeds memory)");
  if (r.params.computed)
    os << llvm::formatv("baseline params:  bottleneck {0:E3} s{1}\n",
                        r.params.bottleneckSeconds,
                        r.params.fitsMemory ? "" : " (exceeds memory)");
  for (const TiedWeight &t : r.tiedWeights) {
    os << llvm::formatv("tied weight {0} '{1}' ({2}) used by stages", t.weight,
                        t.name, formatBytes(t.bytes));
    for (int s : t.stages)
      os << " " << s;
    os << "\n";
  }
}
