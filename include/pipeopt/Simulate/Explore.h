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
/// limit and recommend one configuration per system. pipeopt-explore and
/// the `schedule=auto` choice of pipeopt-pipeline (pipe-auto-schedule) are
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

} // namespace sim
} // namespace pipeopt

#endif // PIPEOPT_SIMULATE_EXPLORE_H
