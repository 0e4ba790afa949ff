//===- Simulator.h - Formula, table and event simulation ---------*- C++
//-*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Three abstraction levels for one schedule, with the same outputs at every
/// level (after the tabular-abstraction paper, Barley et al., arXiv
/// 2605.24006):
///
///  1. Formula  - closed forms per schedule family (GPipe, 1F1B,
///                interleaved 1F1B, ZB-H1, Chimera, PipeDream). Schedules
///                without a closed form report `available = false` ("n/a").
///  2. Table    - the schedule table executed with per-stage F/B/W times and
///                free communication: an action starts when its rank is
///                free and its dependencies are done.
///  3. Event    - communication-aware: per rank a compute stream and
///                separate send / recv engines, alpha-beta links from the
///                machine::Machine topology, NIC contention, optional
///                compute/communication overlap, and ranks sharing a
///                node's CPU cores (machine::Topology::coresPerNode).
///
/// Outputs (Metrics): makespan (s), bubble ratio per rank and overall,
/// peak activation memory per rank (bytes), weight memory per rank (bytes),
/// communication volume (bytes), the gradient all-reduces and optimizer
/// steps after the backward pass (Collectives.h; table and event levels)
/// and, for asynchronous schedules, weight staleness (delay in block
/// updates, Ilin & Richtarik, arXiv 2606.03498).
///
/// Conventions:
///  - Bubble ratio of a rank = 1 - busy / makespan, busy = its compute time
///    (optimizer steps included);
///    overall = 1 - sum(busy) / (ranks * makespan). Communication waits are
///    idle time.
///  - A split-backward schedule's B frees the activation (minus
///    StageCost::weightGradHoldBytes, freed by W); BW frees all of it.
///  - Communication: a value crossing ranks (every stage-graph edge whose
///    stages sit on different ranks; activations forward, gradients
///    backward, `bytes` of the edge each way) is one transfer. Send / Recv
///    actions already in the table are ignored (the transfers are derived
///    from dependencies).
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_SIMULATE_SIMULATOR_H
#define PIPEOPT_SIMULATE_SIMULATOR_H

#include "pipeopt/Machine/Machine.h"
#include "pipeopt/Schedule/Schedule.h"
#include "pipeopt/Simulate/Collectives.h"
#include "pipeopt/Simulate/CostTable.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <vector>

namespace pipeopt {
namespace sim {

/// Abstraction level.
enum class Level : uint8_t { Formula, Table, Event };
/// "formula", "table", "event".
llvm::StringRef levelName(Level level);

/// Weight staleness of an asynchronous (PipeDream) schedule, as defined in
/// Ilin & Richtarik, arXiv 2606.03498: every backward of stage j for
/// microbatch m writes block j (one *block update*); all block updates are
/// put in one global order by (time slot, stage). The delay of the pair
/// (i, j) for microbatch m is the number of block updates strictly between
/// the read of block i (the forward of microbatch m on stage i, placed at
/// (its slot, i)) and the write of block j by microbatch m. Time slots are
/// unit-time slots of the table (every compute action one slot, free
/// communication), so the value is a property of the table, not of the
/// cost model. Steady state: microbatches m with S <= m < M - S (S stages,
/// M microbatches), away from fill and drain.
///
/// Delay matrices: entry [j][i] is the delay of the pair (read block i,
/// written block j), i.e. row = the updating stage j, column = the block i
/// its gradient read, the layout of the paper's tau(s, s') tables (row s
/// updating, column s' read). Steady-state PipeDream (1F1B) matrices are
/// the same for every microbatch; e.g. S = 2: {{3, 1}, {2, 0}}.
/// Start-up: the fill microbatches m < min(S, M), which read the initial
/// weights and are applied late (arXiv 2606.03498 notes that their delays
/// exceed the steady state's, up to about (5/4) S^2 - S).
struct Staleness {
  int maxDelay = 0;     ///< Max over pairs and steady-state microbatches.
  double meanDelay = 0; ///< Mean over the S*S stage pairs (and microbatches).
  bool steadyState = false; ///< False: M < 2S + 1, all microbatches used.
  int firstMicrobatch = 0;  ///< Window [first, end) the values cover.
  int endMicrobatch = 0;
  /// [j][i]: max delay of the pair over the window's microbatches.
  std::vector<std::vector<int>> maxDelayMatrix;
  /// [j][i]: mean delay of the pair over the window's microbatches.
  std::vector<std::vector<double>> meanDelayMatrix;
  /// Max delay over all pairs of the fill microbatches m < min(S, M) whose
  /// updates are all in the table; -1 when there is none.
  int startupMaxDelay = -1;
};

/// Results of one level for one schedule.
struct Metrics {
  Level level = Level::Table;
  /// False when the level has no value for this schedule (formula level
  /// for schedules without a closed form); all numbers are then 0.
  bool available = true;
  std::string note; ///< Source of the formula, or why it is n/a.
  double makespanSec = 0;
  double bubbleRatio = 0;                  ///< Overall, in [0, 1].
  std::vector<double> bubblePerRank;       ///< Per rank, in [0, 1].
  std::vector<double> peakActivationBytes; ///< Per rank (bytes).
  std::vector<double> weightBytes;         ///< Per rank (bytes).
  double commBytes = 0; ///< Total point-to-point bytes between ranks.
  /// After-backward actions (Collectives.h; table and event levels, 0 at
  /// the formula level). Per rank: seconds from start to end of each
  /// gradient all-reduce the rank takes part in, summed (s).
  std::vector<double> allReduceSecPerRank;
  /// Per rank: seconds of optimizer steps (s; counted as compute in the
  /// bubble ratio; all-reduce time is idle time).
  std::vector<double> optimizerSecPerRank;
  double allReduceSec = 0; ///< Largest rank's all-reduce seconds (s).
  double optimizerSec = 0; ///< Largest rank's optimizer seconds (s).
  /// Makespan minus the end of the last schedule-table action: how much the
  /// all-reduces and optimizer steps lengthen the iteration (s).
  double postBackwardSec = 0;
  /// Bytes the simulated replica's ranks send in all-reduces, summed:
  /// 2 (p-1)/p * n per rank and all-reduce (bytes).
  double collectiveBytes = 0;
  std::optional<Staleness> staleness; ///< Async schedules only.

  double maxPeakActivationBytes() const;
  double maxWeightBytes() const;
};

/// One compute action with its simulated time.
struct TimedCompute {
  int rank = 0;
  schedule::Action action;
  double startSec = 0, endSec = 0;
};

/// One transfer between ranks with its simulated time.
struct TimedTransfer {
  int srcRank = 0, dstRank = 0;
  int srcStage = 0, dstStage = 0; ///< Producer / consumer stage.
  int microbatch = 0;
  bool backward = false; ///< Gradient (true) or activation (false).
  double bytes = 0;
  double readySec = 0; ///< Producer finished.
  double startSec = 0; ///< All resources free.
  double endSec = 0;   ///< Data at the receiver.
};

/// One gradient all-reduce with its simulated time.
struct TimedCollective {
  bool tied = false;       ///< Tied-weight (true) or stage gradient.
  std::vector<int> stages; ///< Stage, or the tied group's stages.
  std::vector<int> ranks;  ///< Ranks of the simulated replica taking part.
  int ringSize = 0;        ///< p: ranks in the ring, all replicas.
  double bytes = 0;
  double readySec = 0; ///< Every participant's gradient is ready.
  double startSec = 0; ///< All resources free.
  double endSec = 0;
};

/// One optimizer step of a stage on a rank.
struct TimedOptimizerStep {
  int rank = 0, stage = 0;
  double startSec = 0, endSec = 0;
};

/// A simulated timeline (Table or Event level).
struct Timeline {
  Level level = Level::Table;
  int numRanks = 0;
  double makespanSec = 0;
  std::vector<TimedCompute> compute;    ///< In per-rank table order.
  std::vector<TimedTransfer> transfers; ///< Transfers take 0 s at Table.
  std::vector<TimedCollective> collectives;
  std::vector<TimedOptimizerStep> optimizerSteps;
};

//===----------------------------------------------------------------------===//
// Closed forms (level 1)
//===----------------------------------------------------------------------===//

namespace formula {
/// GPipe bubble (S-1)/(M+S-1) (Huang et al., NeurIPS'19, "GPipe", §2.3).
double bubbleGPipe(int S, int M);
/// 1F1B bubble (S-1)/(M+S-1) (Narayanan et al., SC'21, §2.2.1; same bubble
/// as GPipe, fewer in-flight microbatches).
double bubble1F1B(int S, int M);
/// Interleaved 1F1B with v chunks per rank: bubble time (S-1)/v of a
/// microbatch's (F+B) per rank (Narayanan et al., SC'21, §2.2.2), i.e.
/// (S-1)/(v*M + S-1) of the makespan.
double bubbleInterleaved(int S, int M, int v);
/// ZB-H1 (Qi et al., ICLR'24, "Zero Bubble Pipeline Parallelism", §2.1):
/// bubble time (S-1)(T_F + T_B - T_W) per rank (1F1B: (S-1)(T_F+T_B+T_W));
/// returned as a fraction of the makespan M(T_F+T_B+T_W) + bubble time.
double bubbleZBH1(int S, int M, double tF, double tB, double tW);
/// Chimera bubble (S-2)/(2M+S-2) (Li & Hoefler, SC'21, Table 2; derived
/// with forward and backward taking one slot each).
double bubbleChimera(int S, int M);
/// PipeDream steady-state max delay floor(S^2 - S/2) (Ilin & Richtarik,
/// arXiv 2606.03498: S^2 - S/2 + O(1); exact for the 1F1B steady state
/// under the definition on Staleness).
int pipeDreamMaxDelay(int S);
/// PipeDream mean delay over stage pairs, (S^2 - 1)/2 (same source).
double pipeDreamMeanDelay(int S);
} // namespace formula

/// Level 1. Identifies the closed-form family from `s.name` through the
/// schedule registry (schedule::findScheduleByKey: a name or alias, case,
/// '-', '_' and ' ' insensitive; ScheduleInfo::closedForm) and evaluates its
/// closed forms with the bottleneck stage's times. Schedules whose row has
/// no closed form, and names of no row: `available = false`. Makespan = M * t /
/// (1 - bubble) with t the largest per-rank compute per microbatch (seconds
/// scaled by sys.simulation.computeSpeed); activation peaks: GPipe M, 1F1B /
/// ZB-H1 / PipeDream min(S-s, M), interleaved per Megatron's warm-up count,
/// Chimera two 1F1B pipelines of M/2 each; weights: stages on the rank,
/// PipeDream x (S-s) stashed versions. Communication volume: 2 * M * (sum
/// of boundary bytes of the cut edges).
Metrics evaluateFormula(const schedule::Schedule &s, const CostTable &costs,
                        const machine::Machine &sys);

/// Level 2: idealized table: point-to-point communication is free; the
/// after-backward actions (Collectives.h) are costed without contention:
/// an all-reduce starts when every participant's last W / BW of the
/// stage(s) ended and takes its ring time on `sys`'s links; optimizer
/// steps run on the rank's compute stream after its table actions.
/// `graph` defaults to a chain whose edge bytes
/// are the cost table's boundary bytes. `costs` is resample()d to
/// s.numStages if its size differs. Fails if the table has no consistent
/// execution order or misses an action a dependency needs.
llvm::Expected<Metrics>
simulateTable(const schedule::Schedule &s, const CostTable &costs,
              const machine::Machine &sys, Timeline *timeline = nullptr,
              const schedule::StageGraph *graph = nullptr);

/// Level 3: communication-aware event simulation on `sys`.
///
/// Model: every rank runs its compute actions in table order on one compute
/// stream. A value crossing ranks is a transfer that needs, for its whole
/// duration latency + bytes / bandwidth (link class from the topology), the
/// sender's send engine, the receiver's recv engine and, between nodes, the
/// sender node's NIC (out) and the receiver node's NIC (in). Each such
/// resource serves transfers one at a time in one fixed global order: the
/// order in which their data became ready in the idealized table (a runtime
/// posting communication in program order). Thus the simulation is a
/// longest-path computation over a DAG and is monotone in the links:
/// slowing a link never shortens the makespan. It is not monotone in the
/// stage times: those change the idealized table, hence the service
/// order, and a slower stage can shorten it (zb-h2, zb-v and hanayo on two
/// nodes do). Without overlap, a rank's next
/// compute waits for the sends of its previous compute.
///
/// Sender overhead (Link::senderOverheadSeconds > 0, LogP's o): each
/// transfer is also a send call of that many seconds on the sender's
/// compute stream, after the action that produced the value (and after
/// the send calls before it, in the order above). The message leaves when
/// its call starts; the rank's next action starts after its last call, and
/// the rank counts the calls as busy.
///
/// Idle receivers (Link::idleReceiverLatencySeconds /
/// idleReceiverSenderOverheadSeconds > 0): a message whose receiver's
/// cores (its pinned core, its node's cores, or its own processor when no
/// cores are shared) run no compute when the message leaves takes those
/// instead of the link's latency and sender overhead, as waking an idle
/// core does. The run then tracks busy cores even when none are shared.
///
/// Gradient all-reduces (Collectives.h) hold, for their ring time, the
/// collective channel of every participating rank of the simulated replica
/// and, where a ring neighbour is on another node, the collective lane of
/// that rank's NIC (out to the successor, in from the predecessor). Each
/// channel and lane serves all-reduces one at a time, in the order their
/// gradients are ready in the idealized table, so all-reduces of one rank
/// or of ranks sharing a NIC serialize. They are separate from the
/// point-to-point engines (NCCL runs collectives and p2p on separate
/// channels): an all-reduce never delays a pipeline transfer and the
/// bandwidth the two share on a link or NIC is not modeled. All-reduces
/// always overlap with later compute. Optimizer steps follow on each
/// rank's compute stream.
///
/// Shared cores (sys.topology.coresPerNode > 0 and fewer than the ranks of
/// a node): the same DAG runs as a processor-sharing simulation instead of
/// a longest path: while k compute actions (optimizer steps, send calls)
/// of a node run, each advances at min(1, coresPerNode / k) of its speed
/// (Kleinrock, "Queueing Systems" vol. 2, 1976, section 4.4: the fair
/// share the Linux scheduler gives equal runnable threads), and a rank's
/// bubble counts its actions' simulated spans as busy. The monotonicity
/// above then holds for links, not necessarily for stage times (a slower
/// stage can shift when ranks overlap).
llvm::Expected<Metrics>
simulateEvents(const schedule::Schedule &s, const CostTable &costs,
               const machine::Machine &sys, Timeline *timeline = nullptr,
               const schedule::StageGraph *graph = nullptr);

/// Staleness of an asynchronous schedule computed from its table (see
/// Staleness). Fails for synchronous schedules and inconsistent tables.
llvm::Expected<Staleness>
computeStaleness(const schedule::Schedule &s,
                 const schedule::StageGraph *graph = nullptr);

/// All three levels.
struct Evaluation {
  Metrics formula, table, event;
  const Metrics &at(Level level) const;
};
llvm::Expected<Evaluation>
evaluate(const schedule::Schedule &s, const CostTable &costs,
         const machine::Machine &sys,
         const schedule::StageGraph *graph = nullptr);

/// Writes the metric fields of one (schedule, level) result into `row`, the
/// same keys in pipeopt-explore's and pipe-simulate's JSON reports:
/// `makespan_s`, `bubble_ratio`, `bubble_ratio_per_rank`,
/// `peak_activation_bytes` (largest rank), `peak_activation_bytes_per_rank`,
/// `weight_bytes`, `weight_bytes_per_rank`, `comm_bytes`, `allreduce_s`,
/// `allreduce_s_per_rank`, `optimizer_s`, `optimizer_s_per_rank`,
/// `post_backward_s`, `collective_bytes` and, for asynchronous schedules,
/// `staleness_{max,mean}_delay`, `staleness_steady_state`,
/// `staleness_delay_matrix` / `staleness_mean_delay_matrix` (rows =
/// updating stage j, columns = read block i) and
/// `staleness_startup_max_delay` (null when undefined; these three at the
/// table and event levels, which compute them from the table). Unavailable
/// metrics (no closed form) are null.
void addMetricsJSON(llvm::json::Object &row, const Metrics &m);

} // namespace sim
} // namespace pipeopt

#endif // PIPEOPT_SIMULATE_SIMULATOR_H
