//===- ScheduleInternal.h - Shared helpers of the schedule library -*- C++
//-*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Private helpers shared by the Schedule library's .cpp files: indexing of
/// (stage, microbatch, phase) triples and compute dependencies.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_LIB_SCHEDULE_SCHEDULEINTERNAL_H
#define PIPEOPT_LIB_SCHEDULE_SCHEDULEINTERNAL_H

#include "pipeopt/Schedule/Schedule.h"

#include "llvm/Support/FormatVariadic.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pipeopt {
namespace schedule {
namespace detail {

/// Index of a compute phase (F, B, W, BW) in 0..3; -1 for comm phases.
inline int computeIndex(Phase p) {
  switch (p) {
  case Phase::F:
    return 0;
  case Phase::B:
    return 1;
  case Phase::W:
    return 2;
  case Phase::BW:
    return 3;
  default:
    return -1;
  }
}

/// Dense index of compute (stage, microbatch, phase) triples.
struct ComputeIndex {
  int numStages = 0, numMicrobatches = 0;
  ComputeIndex(int s, int m) : numStages(s), numMicrobatches(m) {}
  int size() const { return numStages * numMicrobatches * 4; }
  bool inRange(int stage, int mb) const {
    return stage >= 0 && stage < numStages && mb >= 0 && mb < numMicrobatches;
  }
  int key(Phase p, int stage, int mb) const {
    return (stage * numMicrobatches + mb) * 4 + computeIndex(p);
  }
};

/// The registry row of generator `g` (Registry.cpp); every generator has
/// one, so that it takes its name and kind from there.
const ScheduleInfo &infoOf(Generator g);

/// Error helper: llvm::createStringError with formatv.
template <typename... Ts>
llvm::Error err(const char *fmt, Ts &&...vals) {
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      llvm::formatv(fmt, std::forward<Ts>(vals)...).str());
}

/// Where a ScheduleError points (see ScheduleError for the fields).
struct ErrorSite {
  ScheduleErrorKind kind = ScheduleErrorKind::Table;
  ActionRef at;
  std::optional<Action> action;
  ActionRef related;
  std::vector<ActionRef> cycle;
};

/// A ScheduleError at `site` whose message is formatv(fmt, vals...).
template <typename... Ts>
llvm::Error scheduleErr(ErrorSite site, const char *fmt, Ts &&...vals) {
  auto e = std::make_unique<ScheduleError>(
      site.kind, llvm::formatv(fmt, std::forward<Ts>(vals)...).str());
  e->at = site.at;
  e->action = std::move(site.action);
  e->related = site.related;
  e->cycle = std::move(site.cycle);
  return llvm::Error(std::move(e));
}

/// A ScheduleErrorKind::Table error (no rank, no action).
template <typename... Ts>
llvm::Error tableErr(const char *fmt, Ts &&...vals) {
  return scheduleErr(ErrorSite{}, fmt, std::forward<Ts>(vals)...);
}

/// Compute dependencies of the compute action (phase, stage, mb), given
/// which backward kind each (stage, mb) uses (`hasSplitB(stage, mb)` true when
/// the schedule holds a B for it, else BW). Returns (phase, stage) pairs; the
/// microbatch is always `mb`.
template <typename HasSplitB>
std::vector<std::pair<Phase, int>> computeDeps(const StageGraph &g, Phase phase,
                                               int stage, int mb,
                                               HasSplitB hasSplitB) {
  std::vector<std::pair<Phase, int>> deps;
  switch (phase) {
  case Phase::F:
    for (int p : g.preds(stage))
      deps.push_back({Phase::F, p});
    break;
  case Phase::B:
  case Phase::BW:
    deps.push_back({Phase::F, stage});
    for (int t : g.succs(stage))
      deps.push_back({hasSplitB(t, mb) ? Phase::B : Phase::BW, t});
    break;
  case Phase::W:
    deps.push_back({Phase::B, stage});
    break;
  default:
    break;
  }
  return deps;
}

/// unitTimeSlots() for an arbitrary stage graph.
llvm::Expected<std::vector<std::vector<int>>>
slotsWithGraph(const Schedule &s, const StageGraph &g);

} // namespace detail
} // namespace schedule
} // namespace pipeopt

#endif // PIPEOPT_LIB_SCHEDULE_SCHEDULEINTERNAL_H
