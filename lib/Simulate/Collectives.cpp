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

double sim::ringReduceScatterSec(double bytes, llvm::ArrayRef<int> ring,
                                 const machine::Machine &sys) {
  // Half of the all-reduce: the same p - 1 steps once.
  return ringAllReduceSec(bytes, ring, sys) / 2;
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
  if (sys.simulation.zeroStage != 0 && sys.simulation.zeroStage != 1)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("ZeRO stage must be 0 or 1, got {0}",
                      sys.simulation.zeroStage));
  if (!(sys.simulation.gradientBucketBytes > 0))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("gradient bucket capacity must be > 0 bytes, got {0}",
                      sys.simulation.gradientBucketBytes));
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

  // Data parallelism: the stages one rank holds go into its buckets.
  auto bucketed = [&](int st) { return D > 1 && holders[st].size() == 1; };
  for (int st = 0; st < S && st < costs.size(); ++st) {
    const double bytes = costs.stages[st].exchangeBytes();
    const int p = static_cast<int>(holders[st].size()) * D;
    if (p < 2 || bytes <= 0 || bucketed(st))
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
  // Each rank's buckets: its bucketed stages in the order their last
  // weight gradient ends on the rank.
  for (int r = 0; r < P && D > 1 && r < static_cast<int>(s.actions.size());
       ++r) {
    std::vector<int> order; // stages, by their last W / BW on rank r
    for (const schedule::Action &a : s.actions[r])
      if (a.isCompute() && (a.phase == Phase::W || a.phase == Phase::BW) &&
          a.stage >= 0 && a.stage < S && a.stage < costs.size() &&
          bucketed(a.stage)) {
        order.erase(std::remove(order.begin(), order.end(), a.stage),
                    order.end());
        order.push_back(a.stage);
      }
    std::vector<int> ring;
    for (int d = 0; d < D; ++d)
      ring.push_back(d * P + r);
    auto add = [&](std::vector<int> stages, double bytes, bool atEnd) {
      GradientReduction b;
      b.bucket = true;
      b.atRankEnd = atEnd;
      b.stages = std::move(stages);
      b.ranks = {r};
      b.ring = ring;
      b.bytes = bytes;
      if (sys.simulation.zeroStage == 1) {
        b.zero = true;
        b.durationSec = 2 * ringReduceScatterSec(bytes, ring, sys);
      } else {
        b.durationSec = ringAllReduceSec(bytes, ring, sys);
      }
      out.push_back(std::move(b));
    };
    if (sys.simulation.zeroStage == 1) {
      // ZeRO-1 exchanges all the rank's sums at the end of its schedule.
      std::vector<int> stages;
      double bytes = 0;
      for (int st : order)
        if (costs.stages[st].exchangeBytes() > 0) {
          stages.push_back(st);
          bytes += costs.stages[st].exchangeBytes();
        }
      if (bytes > 0)
        add(stages, bytes, /*atEnd=*/true);
      continue;
    }
    // The sums a stage's last weight gradient completes: buckets of at most
    // the capacity, started as soon as that action ends.
    const double cap = sys.simulation.gradientBucketBytes;
    for (int st : order) {
      double left = costs.stages[st].exchangeBytes();
      while (left > 0) {
        double bytes = std::min(left, cap);
        add({st}, bytes, /*atEnd=*/false);
        left -= bytes;
      }
    }
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
