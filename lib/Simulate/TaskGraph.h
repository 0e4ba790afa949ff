//===- TaskGraph.h - Compute tasks and their dependencies -------*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Private to lib/Simulate. The compute actions of a schedule table as tasks
/// with durations and data dependencies (local or crossing ranks), shared by
/// the table and event simulations and the staleness computation.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_LIB_SIMULATE_TASKGRAPH_H
#define PIPEOPT_LIB_SIMULATE_TASKGRAPH_H

#include "pipeopt/Schedule/Schedule.h"
#include "pipeopt/Simulate/Simulator.h"

#include "llvm/Support/Error.h"

#include <vector>

namespace pipeopt {
namespace sim {
namespace detail {

/// A compute action of the table.
struct Task {
  int rank = 0;
  schedule::Action action;
  double durationSec = 0;
};

/// `consumer` needs the result of `producer`. Crossing ranks: a transfer
/// of `bytes` bytes.
struct Dep {
  int producer = 0, consumer = 0;
  double bytes = 0;
  bool backward = false; ///< Gradient (true) or activation (false).
  bool crossRank = false;
};

struct TaskGraph {
  int numRanks = 0;
  std::vector<Task> tasks;
  std::vector<std::vector<int>> rankTasks; ///< [rank] -> tasks in order.
  std::vector<Dep> deps;
  std::vector<std::vector<int>> inDeps;  ///< [task] -> dep indices.
  std::vector<std::vector<int>> outDeps; ///< [task] -> dep indices.
};

/// How task durations are chosen.
enum class Durations {
  Costs, ///< From the cost table (divided by compute speed).
  Unit,  ///< Every compute action one unit (staleness slots).
};

/// Stage graph used when the caller gives none: a chain over the cost
/// table's boundary bytes (`costs` already has s.numStages entries).
schedule::StageGraph defaultGraph(const schedule::Schedule &s,
                                  const CostTable &costs);

/// Build the task graph. `costs` must have s.numStages entries.
llvm::Expected<TaskGraph> buildTaskGraph(const schedule::Schedule &s,
                                         const CostTable &costs,
                                         double computeSpeed,
                                         const schedule::StageGraph &g,
                                         Durations durations);

/// Result of the idealized (communication-free) ASAP execution.
struct IdealRun {
  std::vector<double> start, end; ///< [task]
  std::vector<int> ordinal;       ///< [task] -> position in a topological
                                  ///< order consistent with the run.
  double makespan = 0;
};
llvm::Expected<IdealRun> runIdeal(const TaskGraph &g);

/// Backward passes per weight update of an asynchronous schedule, inferred
/// from the weight versions its forwards carry (version = updates before
/// the F): 1 for PipeDream, S for PipeDream-2BW. 1 when unknown.
int inferUpdateInterval(const schedule::Schedule &s);

/// Peak activation bytes per rank (walking each rank's actions in order).
std::vector<double> peakActivation(const schedule::Schedule &s,
                                   const CostTable &costs);
/// Weight bytes per rank (distinct (pipeline, stage) replicas on a rank;
/// asynchronous schedules multiply by the live stashed versions).
std::vector<double> weightMemory(const schedule::Schedule &s,
                                 const CostTable &costs);

} // namespace detail
} // namespace sim
} // namespace pipeopt

#endif // PIPEOPT_LIB_SIMULATE_TASKGRAPH_H
