//===- Collectives.cpp - Gradient all-reduces after the backward pass -----===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Simulate/Collectives.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <set>

using namespace pipeopt;
using namespace pipeopt::sim;
using schedule::Phase;

double sim::ringAllReduceSec(double bytes, int p, const machine::Link &link) {
  if (p < 2)
    return 0;
  return 2.0 * (p - 1) * link.messageSeconds(bytes / p);
}

double sim::ringAllReduceSec(double bytes, llvm::ArrayRef<int> ring,
                             const machine::Machine &sys) {
  const int p = static_cast<int>(ring.size());
  if (p < 2)
    return 0;
  double step = 0;
  for (int i = 0; i < p; ++i)
    step = std::max(step, sys.topology.between(ring[i], ring[(i + 1) % p])
                              .messageSeconds(bytes / p));
  return 2.0 * (p - 1) * step;
}

double sim::ringAllReduceBytesPerRank(double bytes, int p) {
  return p < 2 ? 0.0 : 2.0 * (p - 1) / p * bytes;
}

llvm::Expected<std::vector<GradientReduction>>
sim::planGradientReductions(const schedule::Schedule &s, const CostTable &costs,
                            const machine::Machine &sys) {
  if (sys.simulation.dataParallel < 1)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("data-parallel degree must be >= 1, got {0}",
                      sys.simulation.dataParallel));
  const int S = s.numStages, P = s.numRanks, D = sys.simulation.dataParallel;
  for (const TiedGroup &g : costs.tied)
    for (int st : g.stages)
      if (st < 0 || st >= S)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            llvm::formatv("tied group stage {0} is out of range ({1} stages)",
                          st, S));
  std::vector<GradientReduction> out;
  if (s.forwardOnly || s.async)
    return out;

  // Holders: ranks that compute a stage's weight gradient.
  std::vector<std::set<int>> holders(S);
  for (int r = 0; r < P && r < static_cast<int>(s.actions.size()); ++r)
    for (const schedule::Action &a : s.actions[r])
      if (a.isCompute() && (a.phase == Phase::W || a.phase == Phase::BW) &&
          a.stage >= 0 && a.stage < S)
        holders[a.stage].insert(r);

  for (int st = 0; st < S && st < costs.size(); ++st) {
    const double bytes = costs.stages[st].reducedGradientBytes();
    const int p = static_cast<int>(holders[st].size()) * D;
    if (p < 2 || bytes <= 0)
      continue;
    GradientReduction g;
    g.stages = {st};
    g.ranks.assign(holders[st].begin(), holders[st].end());
    for (int d = 0; d < D; ++d)
      for (int r : g.ranks)
        g.ring.push_back(d * P + r);
    std::sort(g.ring.begin(), g.ring.end());
    g.bytes = bytes;
    g.durationSec = ringAllReduceSec(bytes, g.ring, sys);
    out.push_back(std::move(g));
  }
  for (const TiedGroup &t : costs.tied) {
    std::set<int> ranks;
    for (int st : t.stages)
      ranks.insert(holders[st].begin(), holders[st].end());
    if (ranks.size() < 2 || t.bytes <= 0)
      continue;
    GradientReduction g;
    g.tied = true;
    g.stages = t.stages;
    g.ranks.assign(ranks.begin(), ranks.end());
    g.ring = g.ranks;
    g.bytes = t.bytes;
    g.durationSec = ringAllReduceSec(t.bytes, g.ring, sys);
    out.push_back(std::move(g));
  }
  return out;
}
