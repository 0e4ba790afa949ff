//===- ZeroBubbleAuto.h - zb-auto: automatic zero-bubble scheduling -*- C++
//-*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// zb-auto: the heuristic automatic scheduler of Qi et al., "Zero Bubble
/// Pipeline Parallelism", ICLR'24, §3.1 ("Heuristic algorithm"), and the
/// timed evaluator it measures its candidates with. Pure C++; lib/Schedule
/// does not depend on lib/Simulate, so the evaluator here is the library's
/// own (it agrees with sim::simulateTable for compute-only tables with free
/// communication; here a fixed point-to-point time is added instead).
///
/// Inputs are AutoScheduleInputs (Schedule.h): per-stage F / B / W seconds,
/// the communication time and a memory limit in activation units or bytes.
/// One stage per rank (S stages on S ranks, stage s on rank s), B/W split.
///
/// The algorithm (ZeroBubbleAuto.cpp has the details) is a list scheduler in
/// simulated time with the given durations: whenever a rank is free it
/// picks, by the paper's rules,
///  1. the next B when its gradient has arrived (B frees memory and is on
///     the critical path);
///  2. else the next F when its input has arrived and the rank's memory
///     after it stays within the limit ("as many F as memory allows" in
///     the warm-up, then one F per B in the steady state); in the *patient*
///     variant, not when the next B arrives before that F would end (the
///     paper's binary hyper-parameter: an extra warm-up F may delay B);
///  3. else a W: when the idle gap until the next F / B is at least T_W,
///     when the gap would make this rank's cumulative bubble the largest of
///     all ranks (the paper's rule for gaps shorter than T_W; not in the
///     *lazy-W* variant), when the memory limit blocks the next F (W
///     recycles the W-held part), or when no F / B is left;
///  4. else it waits.
/// Variants (the paper tries a few and keeps the best): an in-flight cap
/// per rank min(limit, S - r + extra) for extra = 0, 1, ... up to the
/// limit, eager or patient warm-up, paper or lazy W placement. Each is
/// executed with timedMakespan(); the shortest makespan wins (ties: lower
/// peak memory, then the earlier variant), so the result is deterministic.
/// The paper's ILP (§3.2) and its optimizer post-validation (§4) are not
/// implemented.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_SCHEDULE_ZEROBUBBLEAUTO_H
#define PIPEOPT_SCHEDULE_ZEROBUBBLEAUTO_H

#include "pipeopt/Schedule/Schedule.h"

#include <string>
#include <vector>

namespace pipeopt {
namespace schedule {

/// What autoSchedule() chose.
struct AutoScheduleResult {
  Schedule schedule;                ///< Compute-only table, name "zb-auto".
  double makespanSec = 0;           ///< timedMakespan() of `schedule`, seconds.
  std::string variant;              ///< The winning variant, for people.
  int variantsTried = 0;            ///< Number of variants executed.
  std::vector<double> limitPerRank; ///< Activation units per rank.
  std::vector<double> peakMemoryPerRank; ///< peakMemoryPerRank() of it.
};

/// Run zb-auto for `p` (p.autoInputs unset: unit times, free
/// communication, limit S activations). Errors name the violated
/// constraint: num-microbatches < 1, no stages, virtual-stages other than
/// 0 / 1, a time vector whose size is not the number of stages, a time
/// that is not finite and > 0 (communication: >= 0), a memory limit < 1
/// activation (or bytes for less than one activation of some rank), both a
/// unit and a byte limit, a weightHeldFraction outside [0, 1].
llvm::Expected<AutoScheduleResult> autoSchedule(const ScheduleParams &p);

/// Makespan in seconds of `s` executed as soon as possible in each rank's
/// order: an action starts when its rank is free and its compute
/// dependencies (on `g`, default the chain) have finished, plus
/// `t.commSec` when the dependency ran on another rank. Durations from `t`
/// by stage (empty vectors: 1 s each; BW = B + W); Send / Recv actions are
/// skipped (communication is the fixed commSec). Errors: a time vector
/// whose size is not s.numStages, a non-finite or negative time, or a table
/// without a consistent order.
llvm::Expected<double> timedMakespan(const Schedule &s,
                                     const AutoScheduleInputs &t,
                                     const StageGraph *g = nullptr);

/// Per rank: the peak, over its action order, of the activation units it
/// holds: +1 at an F, -1 + weightHeldFraction at a B, -weightHeldFraction
/// at a W, -1 at a BW (units summed over the rank's stages). With fraction
/// 0 this is peakInFlightPerRank().
std::vector<double> peakMemoryPerRank(const Schedule &s,
                                      double weightHeldFraction);

} // namespace schedule
} // namespace pipeopt

#endif // PIPEOPT_SCHEDULE_ZEROBUBBLEAUTO_H
