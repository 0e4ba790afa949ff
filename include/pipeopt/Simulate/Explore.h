//===- Explore.h - Sweeps, rankings, flips and rows of the explorer -*- C++
//-*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The design-space sweep of pipeopt-explore as a library: evaluate
/// schedules x ranks S x microbatches M x systems at the three simulator
/// levels (Simulator.h), rank the schedules of every (S, M, system) per
/// level, find the configurations where the best schedule differs between
/// levels ("ranking flips"), drop configurations over a per-device memory
/// limit and recommend one configuration per system; and the split of N
/// devices into D data-parallel replicas x P pipeline ranks with each
/// rank's training memory (searchSplits(), recommendSplits()). pipeopt-explore
/// and the `schedule=auto` choice of pipeopt-pipeline (pipe-auto-schedule) are
/// adapters over it; pipe-simulate writes its rows with rowJSON().
///
/// No MLIR here: the cost table of each configuration comes from a caller
/// callback (a fixed table, the uniform table, or the partitioned model of
/// include/pipeopt/Transforms/ModelCostTables.h).
///
/// Units: seconds, bytes.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_SIMULATE_EXPLORE_H
#define PIPEOPT_SIMULATE_EXPLORE_H

#include "pipeopt/Machine/Machine.h"
#include "pipeopt/Schedule/Schedule.h"
#include "pipeopt/Simulate/CostTable.h"
#include "pipeopt/Simulate/Simulator.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pipeopt {
namespace sim {

/// The three levels in report order (formula, table, event).
extern const Level kExploreLevels[3];

/// One evaluated configuration of a sweep.
struct ExplorePoint {
  std::string schedule; ///< Canonical registry name.
  int stages = 0;       ///< Pipeline ranks S.
  int microbatches = 0; ///< M.
  int modelStages = 0;  ///< Stages of the schedule (S x chunks per rank).
  std::string system;
  Evaluation eval;
  /// Peak per-rank memory (bytes): the largest, over ranks, of the event
  /// level's peak activation bytes plus weight bytes of that rank (the
  /// weights as the cost table counts them, e.g. x (1 + optimizer factor)).
  double peakMemoryBytes = 0;
  /// The per-device limit it was checked against (bytes; 0: none).
  double memoryLimitBytes = 0;

  /// Over the limit: removed from rankings and recommendations.
  bool overMemory() const {
    return memoryLimitBytes > 0 && peakMemoryBytes > memoryLimitBytes;
  }
  /// Chunks (model stages) per rank, v.
  int virtualStages() const { return stages > 0 ? modelStages / stages : 0; }
  /// Event-level makespan divided by M (seconds per microbatch).
  double secondsPerMicrobatch() const;
};

/// Peak per-rank memory of `m` (see ExplorePoint::peakMemoryBytes).
double peakRankMemoryBytes(const Metrics &m);

/// What to sweep.
struct SweepOptions {
  std::vector<std::string> schedules; ///< Canonical registry names.
  std::vector<int> stages;            ///< Ranks S.
  std::vector<int> microbatches;      ///< M.
  std::vector<machine::Machine> systems;
  /// Chunks per rank for schedules whose registry row has a configurable
  /// chunk count (ChunkRule::Configurable); 0: the row's default.
  int virtualStages = 0;
  int waves = 1; ///< Hanayo waves.
  /// Configurations whose estimated schedule size (compute actions plus a
  /// send and a recv per transfer) exceeds this are skipped unbuilt.
  uint64_t maxActions = 20000000;
  /// Per-device memory limit (bytes) for every system; 0: each system's
  /// machine::Machine::memoryLimitBytes() (0 there too: no limit).
  double memoryLimitBytes = 0;
};

/// The cost table of one configuration's schedule (e.g. the model
/// partitioned into `s.numStages` stages). An error skips the
/// configuration (its message is listed under "skipped").
using CostTableFor =
    std::function<llvm::Expected<CostTable>(const schedule::Schedule &s)>;

/// Called for every evaluated point with the schedule, table and system it
/// was evaluated with (the explorer's --trace hook). An error aborts the
/// sweep.
using PointHook =
    std::function<llvm::Error(const ExplorePoint &, const schedule::Schedule &,
                              const CostTable &, const machine::Machine &)>;

/// Result of sweep().
struct SweepResult {
  std::vector<ExplorePoint>
      points; ///< In sweep order (schedule, S, M, system).
  /// Why a configuration was not evaluated ("gpipe S=4 M=8: ..."), in order.
  std::vector<std::string> skipped;
  /// The subset of `skipped` over SweepOptions::maxActions.
  std::vector<std::string> tooLarge;
};

/// Evaluates every configuration of `opts` (loop order: schedule, S, M,
/// system). A configuration is skipped, with its reason, when it is over
/// maxActions (estimated from the schedule family's shape on a small
/// instance before anything is built), when the generator refuses it, when
/// `tableFor` fails or when the simulator fails. Errors: only those of
/// `hook`.
llvm::Expected<SweepResult> sweep(const SweepOptions &opts,
                                  const CostTableFor &tableFor,
                                  const PointHook &hook = nullptr);

/// Key of a comparison group: the schedules of one (S, M, system).
struct ExploreGroup {
  int stages = 0, microbatches = 0;
  std::string system;
  bool operator<(const ExploreGroup &o) const;
};

/// Ranks (1 = best) of `pts` at `level` by makespan; 0 where the level is
/// not available. Makespans within a relative `tol` of the best of a run of
/// ties share its rank (standard competition ranking: 1, 1, 3).
std::vector<int> rankAt(llvm::ArrayRef<const ExplorePoint *> pts, Level level,
                        double tol);

/// A ranking flip: within one group, the sets of best schedules (within
/// `tol` of the best) at two levels, over the schedules both levels
/// evaluate, are disjoint.
struct Flip {
  ExploreGroup group;
  Level a = Level::Formula, b = Level::Table;
  std::vector<std::string> bestA, bestB;
  /// Makespans (s) of the first best schedule of each level at each level.
  double bestAAtA = 0, bestAAtB = 0, bestBAtA = 0, bestBAtB = 0;
  /// Schedule pairs ordered the other way round at the two levels (both
  /// orders strict beyond `tol`), of all pairs compared.
  int discordantPairs = 0, comparablePairs = 0;
};

/// Rankings and flips of a sweep.
struct Ranking {
  /// Points that fit the memory limit, per group, in sweep order.
  std::map<ExploreGroup, std::vector<const ExplorePoint *>> groups;
  /// Rank per level (kExploreLevels order); 0: n/a or over the limit.
  std::map<const ExplorePoint *, std::array<int, 3>> rankOf;
  /// Best schedules per group and level (rank 1).
  std::map<ExploreGroup, std::array<std::vector<std::string>, 3>> bestOf;
  /// Flips, per group in group order, level pairs (formula, table),
  /// (table, event), (formula, event).
  std::vector<Flip> flips;
  /// Points over their memory limit, in sweep order.
  std::vector<const ExplorePoint *> overMemory;
};

/// Ranks every group of `points` at every level and finds the flips (see
/// Flip), leaving out points over their memory limit. The returned pointers
/// point into `points`, which must outlive the result.
Ranking rankPoints(const std::vector<ExplorePoint> &points, double tol);

/// The recommendation for one system.
struct Recommendation {
  std::string system;
  /// Best fitting configuration at the event level by seconds per
  /// microbatch (event makespan / M: for equal M the makespan order; across
  /// M the throughput of a fixed microbatch size); null when none fits.
  const ExplorePoint *best = nullptr;
  /// Best fitting configuration of another schedule; null when none.
  const ExplorePoint *runnerUp = nullptr;
  /// Time saved against the runner-up, in percent of the runner-up's
  /// seconds per microbatch: 100 x (t_runner - t_best) / t_runner.
  double marginPercent = 0;
  /// Points of this system removed by the memory limit.
  int removed = 0;
  /// With best == null: the point of this system with the smallest peak
  /// memory (null when the system has no point at all).
  const ExplorePoint *smallest = nullptr;
};

/// One recommendation per system of `points`, in order of first
/// appearance. Ties in seconds per microbatch keep sweep order.
std::vector<Recommendation> recommend(const std::vector<ExplorePoint> &points);

/// "gpipe S=4 M=16 v=1" (plus " on <system>" with `withSystem`).
std::string describePoint(const ExplorePoint &p, bool withSystem = false);
/// Bytes as GiB with 3 significant digits: "93.1 GiB".
std::string formatGiB(double bytes);
/// The one-line recommendation: "recommended: zb-v S=8 M=32 v=2 on
/// compute-medium/net-fast: 1.234 s per batch (38.56 ms per microbatch), 3.2%
/// faster per microbatch than interleaved-1f1b S=8 M=32 v=2 (1.275 s per
/// batch, 39.84 ms per microbatch)"; or "no
/// configuration fits the 80 GiB memory limit on <system>; the smallest
/// needs 93.1 GiB (gpipe S=4 M=16 v=1)". A runner-up within `tol` (relative,
/// the rule of rankPoints: t_runner <= t_best x (1 + tol)) "ties with" the
/// best instead of a "0.0% faster" claim.
std::string recommendationLine(const Recommendation &r, double tol = 1e-3);
/// "removed: 3 configurations over the 80 GiB limit; e.g. gpipe S=4 M=16 v=1
/// on <system> needs 93.1 GiB" (the largest requirement among them); empty
/// when none was removed.
std::string memoryRemovedLine(const Ranking &r);

/// The JSON object of a recommendation (the explorer's and pipe-auto-
/// schedule's "recommendation" entries): `system`, `fits`, and with a best
/// configuration `schedule`, `stages`, `microbatches`, `virtual_stages`,
/// `model_stages`, `makespan_s`, `seconds_per_microbatch`,
/// `peak_memory_bytes`, `runner_up` (the same keys, or null) and
/// `margin_percent`; without one `smallest_memory_bytes` and
/// `smallest` (schedule, stages, microbatches). Always `removed`.
llvm::json::Object recommendationJSON(const Recommendation &r);

//===----------------------------------------------------------------------===//
// Rows: the one schema of pipeopt-explore and pipe-simulate
//===----------------------------------------------------------------------===//

/// What identifies a row besides its level.
struct RowKey {
  std::string schedule;
  int stages = 0; ///< Ranks.
  int modelStages = 0;
  int microbatches = 0;
  std::string system;
};

/// One JSON row: `schedule`, `stages`, `model_stages`, `microbatches`,
/// `system`, `level`, `available`, `note` and the metric fields of
/// addMetricsJSON(). pipeopt-explore adds `rank`, pipe-simulate `function`.
llvm::json::Object rowJSON(const RowKey &key, Level level, const Metrics &m);

/// The CSV report of a sweep: a header and one row per point and level
/// (kExploreLevels order): schedule, stages, model_stages, microbatches,
/// system, level, available, makespan_s, bubble_ratio,
/// peak_activation_bytes, weight_bytes, comm_bytes, staleness_max_delay,
/// staleness_mean_delay, rank (0: n/a or over the memory limit).
void writeRowsCSV(llvm::raw_ostream &os,
                  const std::vector<ExplorePoint> &points,
                  const Ranking &ranking);

/// A cost table entry as JSON (`forward_s`, `backward_input_s`,
/// `backward_weight_s`, `activation_bytes`, `weight_bytes`,
/// `boundary_bytes`), as the explorer's model partitions and pipe-simulate's
/// report list them.
llvm::json::Object stageCostJSON(const StageCost &c);

//===----------------------------------------------------------------------===//
// Device split: data parallelism D x pipeline parallelism P on N devices
//===----------------------------------------------------------------------===//

/// The optimizers of the runtime (runtime/, docs/Training.md), for the
/// memory of their state.
enum class OptimizerKind { SGD, Momentum, AdamW };

/// "sgd", "momentum", "adamw".
llvm::StringRef optimizerKindName(OptimizerKind k);
/// Parses "sgd", "momentum" (or "sgd-momentum") and "adamw"
/// (case-insensitive); an error naming the accepted values otherwise.
llvm::Expected<OptimizerKind> parseOptimizerKind(llvm::StringRef name);
/// Bytes of optimizer state per parameter element as the runtime keeps it
/// in f64 (cuda builds, and parameters that are not f32): SGD 0, SGD with
/// momentum 8 (the velocity), AdamW 16 (the first and second moments). The
/// f32 parameters of cpu builds keep f32 state, half of this
/// (rt::optimizerStateDType); the explorer's memory model does not tell
/// the two apart and counts f64, an upper bound.
double optimizerStateBytesPerElement(OptimizerKind k);

/// Byte sizes per parameter element of a training step's persistent memory.
struct TrainingMemoryModel {
  /// Bytes per element of the parameters in their dtype (f32: 4, bf16 and
  /// f16: 2, f64: 8).
  double weightElementBytes = 4;
  /// Bytes per element of the gradient sums (the runtime accumulates
  /// gradients over the microbatches in double: 8; a one-microbatch step
  /// on a cpu build keeps its f32 gradient instead, 4, which this model
  /// does not tell apart: an upper bound).
  double gradientElementBytes = 8;
  /// Bytes per element of the optimizer state, unsharded (see
  /// optimizerStateBytesPerElement(); AdamW by default).
  double optimizerStateElementBytes = 16;
};

/// Parameter elements of a cost table entry: its parameter_elements when
/// given (> 0), else parameterBytes() / mm.weightElementBytes.
double parameterElementsOf(const StageCost &c, const TrainingMemoryModel &mm);

/// Memory of one pipeline rank during a training step (bytes).
struct RankMemory {
  int rank = 0;
  double weightBytes = 0;         ///< Parameters in their dtype.
  double gradientBytes = 0;       ///< Gradient sums.
  double optimizerStateBytes = 0; ///< This rank's share of the state.
  double activationBytes = 0;     ///< Peak of the in-flight microbatches.
  double total() const {
    return weightBytes + gradientBytes + optimizerStateBytes + activationBytes;
  }
};

/// Memory of every rank of one replica of `s` (table `table`, event-level
/// metrics `event` of the same schedule and table) when D = `dataParallel`
/// replicas train it with ZeRO stage `zeroStage` (0: none; 1: optimizer
/// state sharded over the D replicas of each stage). The table is mapped
/// onto the schedule's stages as the simulator maps it
/// (CostTable::resample()). Per distinct stage st that rank r holds (a
/// stage two pipelines put on one rank counts once):
///
///   P_st = table.stages[st].parameterBytes()       (bytes)
///   E_st = parameterElementsOf(table.stages[st])   (elements: the
///          entry's parameter_elements, else P_st / weightElementBytes)
///   weights          += P_st
///   gradients        += E_st * gradientElementBytes
///   optimizer state  += E_st * optimizerStateElementBytes / Z,
///                       Z = dataParallel with zeroStage >= 1, else 1
///   activations       = event.peakActivationBytes[r] (the event level's
///                       peak over time of the activations its in-flight
///                       microbatches keep, from activation_bytes).
///
/// Not counted: transient buffers (a send/recv in flight, the all-reduce
/// or all-gather staging buffers) and the runtime's own allocations.
/// Errors: a weightElementBytes <= 0, dataParallel < 1, zeroStage not 0 or
/// 1, or metrics whose rank count differs from the schedule's.
llvm::Expected<std::vector<RankMemory>>
trainingRankMemory(const schedule::Schedule &s, const CostTable &table,
                   const Metrics &event, const TrainingMemoryModel &mm,
                   int dataParallel, int zeroStage);

/// What searchSplits() searches.
struct SplitOptions {
  int devices = 1;                    ///< N = D x P.
  std::vector<std::string> schedules; ///< Canonical registry names.
  /// Global microbatch counts: each is the number of microbatches of the
  /// cost table's (fixed) microbatch size in one step over all replicas;
  /// every replica runs M / D of them.
  std::vector<int> globalMicrobatches;
  /// ZeRO stages to consider (each of 0 and 1); ZeRO-1 only with D > 1
  /// (with D = 1 it is ZeRO-0).
  std::vector<int> zeroStages = {0, 1};
  std::vector<machine::Machine> systems;
  int virtualStages = 0; ///< As SweepOptions::virtualStages.
  int waves = 1;         ///< As SweepOptions::waves.
  uint64_t maxActions = 20000000;
  /// As SweepOptions::memoryLimitBytes.
  double memoryLimitBytes = 0;
  TrainingMemoryModel memory;
};

/// One evaluated (D, P, schedule, M, ZeRO, system).
struct SplitPoint {
  /// The replica's evaluation: `stages` = P, `microbatches` = M / D, the
  /// system's data_parallel set to D. Its peakMemoryBytes is
  /// peak.total() (not the cost table's weight_bytes rule of sweep()).
  ExplorePoint point;
  int dataParallel = 1;       ///< D.
  int globalMicrobatches = 0; ///< M of the whole step.
  int zeroStage = 0;
  RankMemory peak; ///< The rank with the largest total.

  int pipelineRanks() const { return point.stages; }
  /// Event-level time of one training step (s): all replicas run the
  /// same timeline, so it is the simulated replica's makespan.
  double stepSec() const { return point.eval.event.makespanSec; }
  /// stepSec() / globalMicrobatches (s per microbatch of the fixed size).
  double secondsPerMicrobatch() const;
  bool overMemory() const { return point.overMemory(); }
};

/// Result of searchSplits().
struct SplitSearch {
  /// Order: P ascending, then M, ZeRO stage, schedule, system.
  std::vector<SplitPoint> points;
  /// The P (divisors of N) searched, ascending.
  std::vector<int> pipelineRanks;
  /// Why a configuration was not evaluated ("D=2 x P=4 gpipe S=4 M=8:
  /// ..."), in order.
  std::vector<std::string> skipped;
  std::vector<std::string> tooLarge; ///< The subset over maxActions.
};

/// Evaluates every split D x P = opts.devices (P every divisor of N, D =
/// N / P) with every schedule, global M, ZeRO stage and system at the
/// three levels (sweep() with S = P, M / D microbatches per replica and
/// the system's data_parallel = D and zero_stage = the ZeRO stage), then
/// the memory of every rank with trainingRankMemory(). The runtime
/// exchanges its gradient sums: an entry without exchanged_gradient_bytes
/// gets parameterElementsOf() x memory.gradientElementBytes (8: double).
/// Skipped, with the reason: a D that does not divide M, asynchronous schedules
/// (their updates have no global batch), and whatever sweep() skips. Errors:
/// devices < 1, an empty list, a ZeRO stage other than 0 and 1, or a failing
/// trainingRankMemory().
llvm::Expected<SplitSearch> searchSplits(const SplitOptions &opts,
                                         const CostTableFor &tableFor);

/// The state of one split (D, P) on one system.
struct SplitStatus {
  int dataParallel = 1, pipelineRanks = 1;
  int evaluated = 0, overMemory = 0;
  const SplitPoint *best = nullptr;     ///< Fastest fitting; null: none.
  const SplitPoint *smallest = nullptr; ///< Least peak memory; null: none.
};

/// The recommended split of one system.
struct SplitRecommendation {
  std::string system;
  double memoryLimitBytes = 0; ///< 0: none.
  /// Fastest fitting configuration by seconds per (global) microbatch;
  /// configurations within the tie tolerance of it keep search order (a
  /// smaller P first, ZeRO-0 before ZeRO-1). Null when none fits.
  const SplitPoint *best = nullptr;
  /// Fastest fitting configuration of another split (D, P); null: none.
  const SplitPoint *runnerUp = nullptr;
  /// 100 x (t_runner - t_best) / t_runner, per microbatch.
  double marginPercent = 0;
  /// Every split evaluated on this system, P ascending.
  std::vector<SplitStatus> splits;
  /// With best == null: the configuration with the least peak memory.
  const SplitPoint *closest = nullptr;
};

/// One recommendation per system of `points` (in order of first
/// appearance); `tol` as recommendationLine()'s.
std::vector<SplitRecommendation>
recommendSplits(const std::vector<SplitPoint> &points, double tol = 1e-3);

/// "D=4 x P=2 1f1b M=32 (8 per replica) v=1 ZeRO-1" (plus " on <system>").
std::string describeSplitPoint(const SplitPoint &p, bool withSystem = false);

/// The recommendation with its reasons: "recommended: D=4 x P=2 ... on
/// <system>: 1.234 s per step (38.56 ms per microbatch), peak memory 61.2
/// GiB of 80 GiB (rank 0); 12.3% faster than the best other split D=2 x
/// P=4 ... (1.407 s per step); over the memory limit: D=8 x P=1 (needs at
/// least 93.1 GiB, 13.1 GiB over)". Without a fitting configuration: "no
/// D x P split of N devices fits the 80 GiB memory limit on <system>; the
/// closest is ... needing 93.1 GiB (13.1 GiB over)".
std::string splitRecommendationLine(const SplitRecommendation &r,
                                    double tol = 1e-3);

/// The JSON of a split configuration: `data_parallel`, `pipeline_ranks`,
/// `schedule`, `virtual_stages`, `global_microbatches`,
/// `replica_microbatches`, `zero_stage`, `system`, `step_s`,
/// `seconds_per_microbatch`, `allreduce_s`, `peak_memory_bytes`,
/// `memory_limit_bytes` (null: none), `fits`, `peak_rank` and `memory`
/// (`weights_bytes`, `gradients_bytes`, `optimizer_state_bytes`,
/// `activations_bytes` of the peak rank).
llvm::json::Object splitPointJSON(const SplitPoint &p);
/// The JSON of a recommendation: `system`, `fits`, `line`, `best` and
/// `runner_up` (splitPointJSON() or null), `margin_percent`, `closest`
/// (without a fitting one, else null) and `splits` (per split:
/// `data_parallel`, `pipeline_ranks`, `evaluated`, `over_memory`, `best`,
/// `smallest_memory_bytes`).
llvm::json::Object splitRecommendationJSON(const SplitRecommendation &r,
                                           double tol = 1e-3);

} // namespace sim
} // namespace pipeopt

#endif // PIPEOPT_SIMULATE_EXPLORE_H
