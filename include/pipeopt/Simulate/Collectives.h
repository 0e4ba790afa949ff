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
/// Data parallelism as pipeopt's runtime runs it (D > 1, a stage held by
/// one rank of the replica; docs/Runtime.md "Data parallelism"): every
/// rank keeps its parameters' per-step gradient sums in double
/// (StageCost::exchangeBytes(), 8 bytes per element in pipe-simulate's
/// tables). When a stage's last W / BW action of the step on the rank
/// ends, the sums it completed form buckets of at most
/// SimulationSettings::gradientBucketBytes (pipeopt-run --bucket-mb) whose
/// all-reduces over the D replicas of the rank (ring {d * P + r}) start at
/// once and overlap the rest of the rank's backward (PyTorch DDP's
/// bucketing, Li et al., VLDB 2020, §3.2.3). A rank's buckets run one
/// after another (one collective channel per rank); its optimizer steps
/// wait for all of them. With SimulationSettings::zeroStage == 1 (ZeRO-1,
/// Rajbhandari et al., SC'20, §5.1) the rank instead reduce-scatters all
/// its sums at the end of its schedule, updates 1/D of the elements
/// (optimizer steps of StageCost::optimizerSec / D) and all-gathers the
/// updated weights (doubles); both collectives are one GradientReduction
/// whose duration is their sum, (p - 1) ring steps of bytes / p each
/// (ringReduceScatterSec): the rank runs the three one after another, so
/// charging the all-gather before the optimizer leaves the rank's end
/// time unchanged. The runtime's first step, which learns where each sum
/// completes and all-reduces everything at its end, is not modeled (the
/// prediction is of the steady steps).
///
/// Not modeled: asynchronous schedules (PipeDream's per-microbatch updates
/// have no end-of-batch reduction; the simulators skip these actions for
/// them), tree or hierarchical all-reduce algorithms, the runtime's
/// progress points of nonblocking collectives (a bucket is modeled as
/// progressing on its own), and the traffic of data-parallel
/// replicas other than replica 0 on NICs that replica 0 shares with them (only
/// when P is not a multiple of gpusPerNode), and the bandwidth all-reduces
/// share with point-to-point transfers on a link or NIC (see simulateEvents():
/// all-reduces contend with each other, not with the pipeline's transfers).
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

/// Ring reduce-scatter (or all-gather) time (s) of `bytes` bytes (the whole
/// vector) over the global ranks `ring`: p - 1 steps of bytes / p each,
/// every step as long as its slowest link (Thakur et al. 2005, §4: half of
/// the ring all-reduce). 0 for fewer than 2 ranks.
double ringReduceScatterSec(double bytes, llvm::ArrayRef<int> ring,
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
  /// A data-parallel bucket of one rank (ranks == {r}); its stages are
  /// the stages whose parameters it carries.
  bool bucket = false;
  /// Starts at the end of the rank's schedule (the last bucket, and the
  /// ZeRO-1 reduce-scatter), not at its stages' last weight gradient.
  bool atRankEnd = false;
  /// ZeRO-1: a reduce-scatter of the sums and an all-gather of the updated
  /// weights; durationSec is 2 x ringReduceScatterSec(bytes, ring, sys).
  bool zero = false;
};

/// The gradient all-reduces of one iteration of `s` (synchronous training
/// schedules; empty for forward-only and asynchronous schedules). `costs`
/// has s.numStages entries (CostTable::resample()). A stage is held by the
/// ranks that run its W or BW actions; a stage all-reduce exists when its
/// holders times sys.simulation.dataParallel are at least 2 and its gradient
/// bytes (StageCost::exchangeBytes()) are > 0; with D > 1 the stages held by
/// one rank go into that rank's buckets (or its ZeRO-1 reduction) instead,
/// see the file comment: per rank, in the order the stages' last weight
/// gradients end; a tied all-reduce when at least 2 distinct ranks
/// hold the group's stages. Order: stage all-reduces by stage, then each
/// rank's buckets in order (ranks ascending), then tied groups in table
/// order. Errors: sys.simulation.dataParallel < 1, zeroStage not 0 or 1,
/// gradientBucketBytes not > 0, a tied group's stage out of range.
llvm::Expected<std::vector<GradientReduction>>
planGradientReductions(const schedule::Schedule &s, const CostTable &costs,
                       const machine::Machine &sys);

} // namespace sim
} // namespace pipeopt

#endif // PIPEOPT_SIMULATE_COLLECTIVES_H
