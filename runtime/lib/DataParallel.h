//===- DataParallel.h - one rank's part in data parallelism ----*- C++ -*-===//
//
// D replicas of a P-rank pipeline run on D x P ranks (pipeopt-run
// --data-parallel D; global rank g = d * P + r is replica d's rank r).
// Every rank belongs to two communicators split from the run's: its
// replica's pipeline (P ranks, which the schedule's sends, receives and
// the launcher's control messages use, exactly as in a run of one
// pipeline) and its data-parallel group (the D ranks that hold pipeline
// rank r in every replica). This file is the data-parallel group's side:
// the all-reduce of the gradient sums in buckets that start while the
// replica's backward goes on, and the ZeRO-1 update. Private to the
// runtime library.
//
// Buckets. A parameter's gradient sum on a rank is complete once the
// action that reports its last microbatch's contribution
// (pipeopt_rt_gradient, called right after the action's end) is done.
// Which action that is follows from the schedule, which is the same every
// step: the first step learns it (and all-reduces every sum at the step's
// end); from the second step on, the sums that an action completes are
// packed into buckets (at most --bucket-mb MiB of f64 sums each) whose
// all-reduce starts before the rank's next action begins
// (Communicator::startAllReduceSum: MPI_Iallreduce, a thread rendezvous on
// loopback), in the order the gradients complete, as PyTorch DDP does
// (Li et al., "PyTorch Distributed", VLDB 2020, section 3.2.3). Nonblocking
// collectives are progressed at every action boundary. A contribution
// that arrives after its bucket started is an error (the schedule changed
// between steps), never a silently wrong sum. At the step's end the rank
// starts what is left, waits for every bucket and writes the sums back;
// the caller divides by D x M.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_LIB_DATAPARALLEL_H
#define PIPEOPT_RUNTIME_LIB_DATAPARALLEL_H

#include "pipeopt/runtime/Communicator.h"
#include "pipeopt/runtime/Context.h"

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace pipeopt {
namespace rt {

class ShardedOptimizer;

/// Trace event kinds of the data-parallel group (TraceEvent::kind, beside
/// the actions and TraceCallKind): a bucket's all-reduce from its start to
/// the first moment the rank saw it complete (peer: the bucket's number
/// in the step, bytes: its f64 bytes), and the rank's wait for the
/// buckets at the step's end.
enum DataParallelTraceKind : int {
  TraceAllReduce = 24,
  TraceAllReduceWait = 25,
  /// Not drawn: the run's totals of the rank's data-parallel group
  /// (groupTotals), which replica 0's ranks report for the summary:
  /// beginS = seconds in flight, endS = seconds waited, peer = the steps
  /// they cover (summed over the group's D ranks).
  TraceDataParallelTotals = 26,
  /// ZeRO-1's update at the step's end: reduce-scatter, the shard's
  /// optimizer step, all-gather (bytes: the f64 sums reduce-scattered).
  TraceZeroUpdate = 27,
};

/// Appends a data-parallel event of `kind` (DataParallelTraceKind) to
/// ctx.events, unless the rank is in a warm-up iteration.
void recordEvent(RankContext &ctx, int kind, double beginS, double endS,
                 int peer, int64_t bytes);

/// One rank's data-parallel state (RankContext::dataParallel).
struct DataParallelRank {
  /// The data-parallel group: D ranks, this one's rank in it = `replica`.
  Communicator *group = nullptr;
  int replicas = 1;
  int replica = 0;
  /// 1: ZeRO-1 (`sharded` holds this rank's shard of the optimizer state).
  int zeroStage = 0;
  std::shared_ptr<ShardedOptimizer> sharded;
  /// The largest bucket, bytes of f64 sums.
  size_t bucketBytes = size_t(25) << 20;

  /// Learned in the first step: parameter index -> the index (in this
  /// rank's actions of a step) of the action that reports its last
  /// gradient contribution.
  std::map<int, size_t> lastAction;
  bool learned = false;

  /// Called by pipeopt_rt_gradient after adding a contribution to
  /// parameter `index`'s sum. Throws RuntimeError when its bucket has
  /// already started.
  void onGradient(RankContext &ctx, int index, int microbatch);
  /// Called when the rank begins its next action, `completed` actions of
  /// the step being done (a program reports an action's gradients after
  /// its end): starts the buckets of the sums those actions completed and
  /// progresses the others.
  void onActionsCompleted(RankContext &ctx, size_t completed);
  /// Progresses the started all-reduces (MPI makes progress only inside
  /// its calls); records when each completed.
  void progress(RankContext &ctx);
  /// The step's end: starts the sums not yet started, waits for every
  /// bucket (`timeoutS` per wait) and writes the replicas' totals back
  /// into the parameters' gradSum. Throws on communication errors.
  void finishStep(RankContext &ctx, int step, double timeoutS);
  /// Forgets the step's buckets (RankContext::beginCall).
  void beginStep();

  /// This run, per step after the one that learned the buckets: seconds
  /// the all-reduces were in flight (the union of the buckets' intervals)
  /// and seconds the rank waited for them at the step's end.
  std::vector<double> inFlightS, waitS;
  /// A collective of the group at the end of a run: appends to ctx.events
  /// a TraceDataParallelTotals event with the sums of inFlightS and waitS
  /// and their count over the group's D ranks.
  void groupTotals(RankContext &ctx, double timeoutS);

private:
  struct Bucket {
    std::vector<int> params;
    std::vector<double> sums;
    std::unique_ptr<CollectiveRequest> request;
    double beginS = 0, endS = -1;
  };
  /// This step: the action of each parameter's last contribution so far,
  /// the parameters whose bucket started, the buckets in start order.
  std::map<int, size_t> seen;
  std::set<int> started;
  std::vector<Bucket> buckets;
  void start(RankContext &ctx, const std::vector<int> &params);
};

/// Collective over `group`: every rank contributes `mine` (the same
/// count on every rank) and gets every rank's values, rank k's at
/// [k * mine.size(), (k + 1) * mine.size()). Throws as
/// CollectiveRequest::wait after `timeoutS` seconds.
std::vector<double> allGatherValues(Communicator &group,
                                    const std::vector<double> &mine,
                                    double timeoutS);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_LIB_DATAPARALLEL_H
