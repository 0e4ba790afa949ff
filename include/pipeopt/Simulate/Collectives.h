//===- Collectives.h - Gradient all-reduces after the backward pass -*- C++
//-*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// What a synchronous training iteration does after a stage's last
/// backward, as the table and event simulations cost it:
///
///  - stage gradient all-reduce: every rank that holds a copy of a stage's
///    weights (the two pipelines of Chimera, Li & Hoefler SC'21 §3.2, and
///    the machine::SimulationSettings::dataParallel replicas of the whole
///    pipeline) sums the stage's weight gradient
///    (StageCost::reducedGradientBytes()) in one ring all-reduce;
///  - tied-weight all-reduce: the ranks of one pipeline replica that hold a
///    stage of a TiedGroup sum the shared parameter's gradient (after the
///    stage all-reduces of those stages, the order of Megatron-LM's
///    embedding-group reduction);
///  - optimizer step: StageCost::optimizerSec per stage and rank, on the
///    rank's compute stream, after every reduction of that stage's
///    gradients on the rank.
///
/// Collective cost: a ring all-reduce of n bytes over p ranks is a
/// reduce-scatter and an all-gather of p - 1 steps each, every step sending
/// n / p bytes to the ring successor (Thakur, Rabenseifner & Gropp,
/// "Optimization of Collective Communication Operations in MPICH", IJHPCA
/// 2005, §4; Patarasuk & Yuan, JPDC 2009, bandwidth optimality):
///
///   T = 2 (p - 1) alpha + 2 (p - 1) / p * n / bandwidth.
///
/// With links of different classes in the ring (intra- and inter-node) all
/// ranks move in lock step, so each step lasts as long as its slowest
/// link: T = 2 (p - 1) * max over ring links l of (alpha_l + n / (p beta_l)),
/// which is the formula above on one link class. p = 2 is one exchange of
/// n / 2 bytes each way per phase: 2 alpha + n / bandwidth.
///
/// Not modeled: asynchronous schedules (PipeDream's per-microbatch updates
/// have no end-of-batch reduction; the simulators skip these actions for
/// them), tree or hierarchical all-reduce algorithms, bucketing gradients
/// to overlap the all-reduce with earlier backwards of the same stage, and
/// the traffic of data-parallel replicas other than replica 0 on NICs that
/// replica 0 shares with them (only when P is not a multiple of
/// gpusPerNode), and the bandwidth all-reduces share with point-to-point
/// transfers on a link or NIC (see simulateEvents(): all-reduces contend
/// with each other, not with the pipeline's transfers).
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_SIMULATE_COLLECTIVES_H
#define PIPEOPT_SIMULATE_COLLECTIVES_H

#include "pipeopt/Machine/Machine.h"
#include "pipeopt/Schedule/Schedule.h"
#include "pipeopt/Simulate/CostTable.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace pipeopt {
namespace sim {

/// Ring all-reduce time (s) of `bytes` bytes over `p` ranks on one link
/// class: 2 (p-1) alpha + 2 (p-1)/p * bytes / bandwidth (Thakur et al.
/// 2005, §4). 0 for p < 2.
double ringAllReduceSec(double bytes, int p, const machine::Link &link);

/// Ring all-reduce time (s) over the global ranks `ring` in ring order
/// (ring[i] sends to ring[i+1], the last to the first) on `sys`'s
/// topology: 2 (p-1) times the slowest step, a step over link l taking
/// alpha_l + bytes / (p beta_l). 0 for fewer than 2 ranks.
double ringAllReduceSec(double bytes, llvm::ArrayRef<int> ring,
                        const machine::Machine &sys);

/// Bytes one rank sends in a ring all-reduce: 2 (p-1)/p * bytes.
double ringAllReduceBytesPerRank(double bytes, int p);

/// One gradient all-reduce after the backward pass.
struct GradientReduction {
  bool tied = false;       ///< TiedGroup (true) or stage gradient (false).
  std::vector<int> stages; ///< The stage, or the tied group's stages.
  /// Ranks of the simulated pipeline replica (replica 0) taking part,
  /// ascending.
  std::vector<int> ranks;
  /// Global ranks of the ring in ring order (ascending; replica d's rank r
  /// is d * numRanks + r).
  std::vector<int> ring;
  double bytes = 0;       ///< Gradient bytes reduced.
  double durationSec = 0; ///< ringAllReduceSec(bytes, ring, sys).
};

/// The gradient all-reduces of one iteration of `s` (synchronous training
/// schedules; empty for forward-only and asynchronous schedules). `costs`
/// has s.numStages entries (CostTable::resample()). A stage is held by the
/// ranks that run its W or BW actions; a stage all-reduce exists when its
/// holders times sys.simulation.dataParallel are at least 2 and its gradient
/// bytes are > 0; a tied all-reduce when at least 2 distinct ranks hold the
/// group's stages. Order: stage all-reduces by stage, then tied groups in table
/// order. Errors: sys.simulation.dataParallel < 1, a tied group's stage out of
/// range.
llvm::Expected<std::vector<GradientReduction>>
planGradientReductions(const schedule::Schedule &s, const CostTable &costs,
                       const machine::Machine &sys);

} // namespace sim
} // namespace pipeopt

#endif // PIPEOPT_SIMULATE_COLLECTIVES_H
