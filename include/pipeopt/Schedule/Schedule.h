//===- Schedule.h - Pipeline schedule tables and checks ---------*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Pure-C++ pipeline schedules (no MLIR IR types). A schedule is a table:
/// for every rank (device) an ordered list of actions. Compute actions are
/// F (forward), B (input gradient; or full backward when the schedule does
/// not split backward, see Phase::BW), W (weight gradient). After
/// insertCommunication() the table also holds Send / Recv actions.
///
/// Terms (docs/Design.md §5): a *stage* is a model stage (a virtual stage /
/// chunk when a rank holds several); stages are numbered in model order
/// 0..numStages-1. A *pipeline* maps every stage to a rank; bidirectional
/// schedules (Chimera) have two pipelines and every microbatch is assigned
/// to exactly one of them.
///
/// Time in this header is *unit time*: every compute action takes one slot,
/// communication is free. Real durations belong to the simulator.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_SCHEDULE_SCHEDULE_H
#define PIPEOPT_SCHEDULE_SCHEDULE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipeopt {
namespace schedule {

/// Largest number of pipeline stages, ranks, virtual stages, waves or
/// microbatches that the passes, the CSV import and pipeopt-explore accept
/// (far above any real pipeline, far below INT_MAX, so counts and products
/// of two of them stay representable).
constexpr int kMaxPipelineCount = 65536;

//===----------------------------------------------------------------------===//
// Core types
//===----------------------------------------------------------------------===//

/// Kind of an action. BW is a full backward (B + W fused); schedules with
/// splitBackward use B (input gradient) and W (weight gradient) instead.
enum class Phase : uint8_t { F, B, W, BW /*full backward = B+W*/, Send, Recv };

/// One entry of a rank's ordered action list.
struct Action {
  Phase phase = Phase::F;
  /// Compute: the stage computed. Send/Recv: the *local* stage (the stage
  /// on this rank that produces the sent value / consumes the received one).
  int stage = 0;
  int microbatch = 0;
  int peerRank = -1; ///< Send/Recv: the other rank.
  /// Send/Recv: stage on the other side (receiver's stage for a Send,
  /// sender's stage for a Recv).
  int peerStage = -1;
  bool backward = false; ///< Send/Recv: carries a gradient (true) or an
                         ///< activation (false).
  /// Send/Recv: which value of a transfer that carries several values of
  /// one (stage pair, microbatch) this action moves (pipe.tag's value
  /// index). 0 in every table the generators, insertCommunication() and
  /// importCSV() build, which move one value per transfer; tables read back
  /// from per-rank programs with one action per pipe.send / pipe.recv set it.
  int value = 0;
  /// Async PipeDream schedules: the weight version used by this F / B / BW
  /// (version k = weights after k optimizer updates of that stage); -1 when
  /// the schedule is synchronous.
  int weightVersion = -1;

  /// A compute action (F, B, W or BW).
  static Action compute(Phase phase, int stage, int microbatch,
                        int weightVersion = -1);
  /// A Send of the value of `stage` (local) for `microbatch` to `peerStage`
  /// on `peerRank`; `backward` selects gradient vs activation.
  static Action send(int stage, int microbatch, int peerRank, int peerStage,
                     bool backward);
  /// A Recv into `stage` (local) from `peerStage` on `peerRank`.
  static Action recv(int stage, int microbatch, int peerRank, int peerStage,
                     bool backward);

  bool isCompute() const {
    return phase != Phase::Send && phase != Phase::Recv;
  }
  bool isComm() const { return !isCompute(); }
  bool operator==(const Action &o) const;
  bool operator!=(const Action &o) const { return !(*this == o); }
};

/// A schedule table.
struct Schedule {
  std::string name;
  int numRanks = 0;
  int numStages = 0; ///< Model (virtual) stages per pipeline.
  int numMicrobatches = 0;
  /// [pipeline][stage] -> rank. One pipeline for all unidirectional
  /// schedules; two for Chimera.
  std::vector<std::vector<int>> stageRank;
  /// [microbatch] -> pipeline index into stageRank.
  std::vector<int> microbatchPipeline;
  /// [rank] -> ordered actions.
  std::vector<std::vector<Action>> actions;
  bool splitBackward = false; ///< B and W separate (zero-bubble family).
  bool async = false;         ///< PipeDream async: no flush.
  bool forwardOnly = false;   ///< Inference: only F actions.

  /// Rank that runs `stage` for `microbatch` (through its pipeline);
  /// -1 when out of range.
  int rankOf(int stage, int microbatch) const;
  /// Pipeline of `microbatch` (0 when microbatchPipeline is empty).
  int pipelineOf(int microbatch) const;
  int numPipelines() const { return static_cast<int>(stageRank.size()); }
  /// True if any Send / Recv action is present.
  bool hasCommunication() const;
  /// Number of stages a rank holds in pipeline 0 (chunks per rank, "v").
  int stagesOnRank(int rank) const;
};

/// Value(s) flowing from stage `from` to stage `to` (from < to), `bytes`
/// bytes per microbatch. Gradients flow the reverse way in backward.
struct StageEdge {
  int from = 0, to = 0;
  double bytes = 0;
};

/// The stage-level dataflow graph: a chain plus any skip connections.
struct StageGraph {
  int numStages = 0;
  std::vector<StageEdge> edges;
  /// n stages, edges s -> s+1 of `bytes` bytes each.
  static StageGraph chain(int n, double bytes = 0);
  /// Predecessor stages of `stage` (sources of edges into it), ascending.
  std::vector<int> preds(int stage) const;
  /// Successor stages of `stage`, ascending.
  std::vector<int> succs(int stage) const;
};

//===----------------------------------------------------------------------===//
// Generators
//===----------------------------------------------------------------------===//

/// Inputs only zb-auto (makeZBAuto(), AutoSchedule.h) reads: the zero-bubble
/// paper's automatic scheduler (Qi et al., "Zero Bubble Pipeline
/// Parallelism", ICLR'24, §3) needs per-stage times and a memory limit.
/// Every other generator ignores them.
struct AutoScheduleInputs {
  /// Per-stage durations in seconds of F (forward), B (input gradient) and
  /// W (weight gradient): empty = 1 each (unit time), else one entry per
  /// stage, every entry finite and > 0.
  std::vector<double> forwardSec, backwardInputSec, backwardWeightSec;
  /// Point-to-point communication time in seconds (finite, >= 0) added to
  /// every dependency between two ranks (the paper's T_comm).
  double commSec = 0;
  /// Memory limit of every rank in activation units: how many microbatches'
  /// activations (one unit = what one F of the rank's stage keeps) a rank
  /// may hold at once. Unset: S, what 1F1B holds on rank 0. A set value
  /// must be finite and >= 1.
  std::optional<double> memoryLimit;
  /// Alternatively a limit in bytes per rank (> 0 when used, not together
  /// with memoryLimit), with `activationBytes` (bytes one F of stage s
  /// keeps, one entry per stage, > 0): rank r may hold
  /// memoryLimitBytes / activationBytes[r] activation units (>= 1).
  double memoryLimitBytes = 0;
  std::vector<double> activationBytes;
  /// Part of an activation unit that stays held from B until W (what W still
  /// reads: the paper's M_W / M_B, Table 1), in [0, 1]. 0 (default): an
  /// activation counts from its F until its B, as maxInFlight() counts; a
  /// rank's memory is then (in flight) + fraction x (B done, W pending).
  double weightHeldFraction = 0;
};

/// Parameters of a generator. Give either `numStages` (model stages; for
/// single-chunk schedules this is also the number of ranks) or `numRanks`
/// plus `virtualStages` (chunks per rank; numStages = numRanks * chunks).
/// When both are given they must agree. ZB-V and DualPipeV always use two
/// chunks per rank; Hanayo uses 2 * waves chunks per rank; Chimera uses one
/// stage per rank and two pipelines.
struct ScheduleParams {
  int numStages = 0;
  int numRanks = 0;
  int virtualStages = 0; ///< Chunks per rank (0: schedule default).
  int numMicrobatches = 0;
  int waves = 1; ///< Hanayo waves.
  /// zb-auto's times and memory limit (unset: unit times, limit S).
  std::optional<AutoScheduleInputs> autoInputs;
};

/// Build the schedule called `name` (a registry name or alias, see
/// findSchedule()). Impossible parameters give an llvm::Error that names
/// the constraint, e.g. "1f1b needs num-microbatches >= num-stages (4), got
/// 2"; an unknown name gives "unknown schedule 'x' (known: gpipe, ...)".
llvm::Expected<Schedule> makeSchedule(llvm::StringRef name,
                                      const ScheduleParams &p);

//===----------------------------------------------------------------------===//
// Schedule registry
//===----------------------------------------------------------------------===//
//
// One row per schedule (lib/Schedule/Registry.cpp): the only place that knows
// a schedule by name. The passes, the partitioner's memory rule, the
// simulator's formula level and pipeopt-explore read the rows; adding a
// schedule is one generator plus one row.
//

/// A schedule generator (see makeSchedule()).
using Generator = llvm::Expected<Schedule> (*)(const ScheduleParams &);

/// Chunks (virtual stages) a rank holds.
struct ChunkRule {
  enum Kind : uint8_t {
    Fixed,        ///< Always `count`; virtual-stages must be 0 or `count`.
    Configurable, ///< virtual-stages; `count` when it is 0.
    PerWave,      ///< `count` x waves (Hanayo).
  };
  Kind kind = Fixed;
  int count = 1;
};

/// Microbatches whose activations a stage keeps at its peak, as
/// pipe-partition's memory model counts them (stage s of S, M microbatches).
enum class InFlightRule : uint8_t {
  All,      ///< M (GPipe: everything until the flush).
  OneFOneB, ///< min(S - s, M) (PipeDream-Flush bound; partition::
            ///< oneFOneBInFlight).
  One,      ///< 1 (forward-only: nothing is kept for a backward).
  Measured, ///< Generate the table for (S, M) and take maxInFlight().
};

/// Weight versions of an asynchronous schedule (Action::weightVersion).
enum class WeightVersions : uint8_t {
  None,        ///< Synchronous: a flush ends the batch, no versions.
  PerBackward, ///< A stage's version advances after every backward
               ///< (PipeDream weight stashing).
  PerRound,    ///< ... after every S backwards (PipeDream-2BW, double
               ///< buffered).
};

/// The closed-form family the simulator's level 1 (sim::evaluateFormula)
/// uses; each member's formulas and their sources are in Simulator.h
/// (namespace sim::formula) and Formula.cpp.
enum class ClosedForm : uint8_t {
  None,        ///< No closed form: level 1 reports n/a.
  GPipe,       ///< (S-1)/(M+S-1), M in flight.
  OneFOneB,    ///< (S-1)/(M+S-1), min(S-s, M) in flight.
  Interleaved, ///< (S-1)/(v*M+S-1), Megatron's warm-up in flight.
  ZBH1,        ///< bubble time (S-1)(F+B-W), 1F1B's in-flight peak.
  Chimera,     ///< (S-2)/(2M+S-2), two pipelines.
  PipeDream,   ///< 1F1B's fill/drain, S-s stashed weight versions.
  ForwardOnly, ///< GPipe's forward half, 1 in flight.
};

/// One registry row.
struct ScheduleInfo {
  llvm::StringRef name;                 ///< Canonical name ("1f1b").
  std::vector<llvm::StringRef> aliases; ///< Other accepted names ("dapple").
  llvm::StringRef summary;              ///< One line, including the source.
  Generator generate = nullptr;
  ChunkRule chunks;
  bool splitBackward = false; ///< B and W separate (Schedule::splitBackward).
  bool forwardOnly = false;   ///< Inference (Schedule::forwardOnly).
  WeightVersions weightVersions = WeightVersions::None;
  InFlightRule inFlight = InFlightRule::Measured;
  ClosedForm closedForm = ClosedForm::None;
  /// Paper and section of the closed form ("" when closedForm is None).
  llvm::StringRef closedFormSource;
  /// Parameter constraints the generator enforces, for people ("M >= S").
  llvm::StringRef constraints;
  /// In pipeopt-explore's default --schedules list.
  bool exploreByDefault = false;

  /// Asynchronous (no flush; Schedule::async).
  bool async() const { return weightVersions != WeightVersions::None; }
  /// Chunks per rank this schedule uses for `p` (0 when p is invalid, e.g.
  /// Hanayo with waves < 1).
  int chunksPerRank(const ScheduleParams &p) const;
};

/// All registered schedules, in a stable order (the order of error messages
/// and of `pipeopt-explore --schedules=all`).
const std::vector<ScheduleInfo> &listSchedules();

/// The row whose name or one of whose aliases is exactly `name`; nullptr
/// when there is none.
const ScheduleInfo *findSchedule(llvm::StringRef name);
/// findSchedule(), or the error "unknown schedule '<name>' (known: <the
/// canonical names in registry order>)".
llvm::Expected<const ScheduleInfo &> lookupSchedule(llvm::StringRef name);
/// Like findSchedule(), but ignoring case, '-', '_' and ' ' ("ZB_H1" finds
/// zb-h1): for a Schedule::name read back from IR or set by hand, as the
/// simulator does. nullptr for a name of no row (e.g. "csv").
const ScheduleInfo *findScheduleByKey(llvm::StringRef name);
/// The canonical names, in registry order, joined by `separator`.
std::string scheduleNames(llvm::StringRef separator = ", ");

/// The default schedule of pipe-schedule, pipe-partition and
/// pipeopt-pipeline (a registry name).
constexpr llvm::StringLiteral kDefaultSchedule = "1f1b";
/// The inference schedule, pipeopt-compile's default (a registry name).
constexpr llvm::StringLiteral kInferenceSchedule = "forward-only";
/// Schedules the convergence simulator replays by name (registry names):
/// synchronous SGD runs GPipe (M < S) or 1F1B, the asynchronous methods
/// PipeDream and PipeDream-2BW.
constexpr llvm::StringLiteral kGPipeSchedule = "gpipe";
constexpr llvm::StringLiteral kOneFOneBSchedule = "1f1b";
constexpr llvm::StringLiteral kPipeDreamSchedule = "pipedream";
constexpr llvm::StringLiteral kPipeDream2BWSchedule = "pipedream-2bw";

/// Sets Action::weightVersion on every F / BW of `s` by `rule`: a stage's
/// version counts its weight updates before the F (one update per backward
/// for PerBackward, per s.numStages backwards for PerRound), a BW uses its
/// F's version (weight stashing). None leaves the table as it is.
void assignWeightVersions(Schedule &s, WeightVersions rule);

/// Individual generators (same semantics as makeSchedule(name, p)).
llvm::Expected<Schedule> makeGPipe(const ScheduleParams &p);
llvm::Expected<Schedule> make1F1B(const ScheduleParams &p);
llvm::Expected<Schedule> makeInterleaved1F1B(const ScheduleParams &p);
llvm::Expected<Schedule> makeLoopedBFS(const ScheduleParams &p);
llvm::Expected<Schedule> makeZBH1(const ScheduleParams &p);
llvm::Expected<Schedule> makeZBV(const ScheduleParams &p);
llvm::Expected<Schedule> makeInterleavedZB(const ScheduleParams &p);
llvm::Expected<Schedule> makeZBH2(const ScheduleParams &p);
llvm::Expected<Schedule>
makeZBAuto(const ScheduleParams &p); ///< AutoSchedule.h
llvm::Expected<Schedule> makeChimera(const ScheduleParams &p);
llvm::Expected<Schedule> makeHanayo(const ScheduleParams &p);
llvm::Expected<Schedule> makeDualPipeV(const ScheduleParams &p);
llvm::Expected<Schedule> makePipeDream(const ScheduleParams &p);
llvm::Expected<Schedule> makePipeDream2BW(const ScheduleParams &p);
llvm::Expected<Schedule> makeForwardOnly(const ScheduleParams &p);

//===----------------------------------------------------------------------===//
// Checks and lowering
//===----------------------------------------------------------------------===//

/// What a failed check is about (ScheduleError::kind).
enum class ScheduleErrorKind : uint8_t {
  /// The table as a whole: counts, placement (stageRank,
  /// microbatchPipeline), the stage graph, or a table that already has
  /// Send/Recv actions. No rank or action is set.
  Table,
  /// An action that may not stand where it is: out of range, a phase the
  /// schedule does not use, on the wrong rank, a Send/Recv with a bad peer
  /// or without a stage-graph edge, a BW next to a B of the same
  /// (stage, mb). `at` is the action.
  BadAction,
  /// An action that appears twice; `at` is the second occurrence,
  /// `related` the first.
  Duplicate,
  /// An action that is absent; `action` is it, `at.rank` the rank that
  /// should hold it, `at.index` -1.
  Missing,
  /// An action listed before one it depends on (same rank); `at` is the
  /// earlier action, `related` its dependency (or, for a Recv after its
  /// consumer, `at` is the consumer and `related` the Recv).
  Order,
  /// validate(): no consistent global execution order exists; `cycle`
  /// holds the action each waiting rank is stuck at, `at` its first entry.
  Cycle,
  /// A Send with no Recv (or a Recv with no Send) in the table, or
  /// checkDeadlockFree(): a rank waits on a peer that has finished
  /// (`related.rank` is that peer, `related.index` -1).
  Unmatched,
  /// checkDeadlockFree(): two ranks post a Send and a Recv to each other
  /// that do not carry the same value; `at` is the Send, `related` the Recv.
  Mismatched,
  /// checkDeadlockFree(): blocked ranks waiting on each other in a cycle;
  /// `cycle` lists (rank, index of the Send/Recv it waits at) in the order
  /// of the message, `at` is its first entry.
  Deadlock,
};

/// One action of a table: actions[rank][index]. index is -1 when the
/// action is not in the table (ScheduleErrorKind::Missing) or not known.
struct ActionRef {
  int rank = -1;
  int index = -1;
  bool operator==(const ActionRef &o) const {
    return rank == o.rank && index == o.index;
  }
};

/// The error validate(), checkDeadlockFree() and insertCommunication()
/// return: the message of each violation (message() is the text documented
/// on those functions) plus where it is, so that callers locate it without
/// reading the text. Read it with llvm::handleErrors(e, [](const
/// ScheduleError &se) { ... }). Fields not listed for a kind keep their
/// defaults (-1 / empty).
class ScheduleError : public llvm::ErrorInfo<ScheduleError> {
public:
  static char ID;

  ScheduleError(ScheduleErrorKind kind, std::string text)
      : kind(kind), text(std::move(text)) {}

  ScheduleErrorKind kind;
  /// The message (also what log() / llvm::toString() give).
  std::string text;
  /// The action the message names first (see ScheduleErrorKind).
  ActionRef at;
  /// A copy of that action (also set for a Missing one); empty for Table
  /// errors.
  std::optional<Action> action;
  /// The second action the message names, when it has one.
  ActionRef related;
  /// Cycle and Deadlock: the waiting actions, one per rank in the cycle.
  std::vector<ActionRef> cycle;

  void log(llvm::raw_ostream &os) const override { os << text; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
};

/// Check a schedule against its stage graph: every (stage, microbatch,
/// phase) exactly once (F; for training either BW or B+W -- split schedules
/// may mix both, as DualPipeV does; F only for forward-only),
/// every compute action on the rank its pipeline assigns, F before B before
/// W of the same (stage, microbatch), cross-stage dependencies (F of s needs
/// F of every predecessor, B of s needs B of every successor), and that one
/// consistent global execution order exists. Send/Recv actions, if present,
/// are checked for matching peers. The error names the first violation,
/// e.g. "rank 2: B(stage 2, mb 3) appears before F(stage 2, mb 3)".
///
/// Every error is a ScheduleError: Table for the counts, placement and
/// graph; BadAction (`at`, `action`; `related` = the B for "BW and B both
/// present"); Duplicate (`at` = the second occurrence, `related` = the
/// first); Missing (`action`, `at.rank` = the rank that should hold it,
/// `at.index` = -1); Order (`at` = the action listed too early, `related` =
/// the one it must follow or precede); Cycle (`cycle` = per waiting rank
/// the action it is stuck at, `at` = the first of them); Unmatched (`at` =
/// the Send or Recv without a partner).
llvm::Error validate(const Schedule &s, const StageGraph &g);
/// validate() against StageGraph::chain(s.numStages).
llvm::Error validate(const Schedule &s);

/// Insert Send/Recv actions for every value crossing ranks (activations
/// forward along every graph edge, gradients backward), skipping edges whose
/// two stages share a rank. Sends are placed right after the producing
/// compute; Recvs right before the consuming compute. Where a rank both
/// sends and receives at one unit-time point, its sends come first unless
/// its peer does the same towards it (a middle rank of a chain forwards
/// microbatch m before it waits for m + 1). The result is checked with
/// checkDeadlockFree(); an error is returned if blocking execution would
/// deadlock (lib/Schedule/Communication.cpp explains why the placement is
/// safe for every valid schedule under unit-time, rendezvous semantics).
/// Errors are ScheduleErrors: Table when `s` already has Send/Recv actions,
/// else those of validate() (on `s`, then on the result) and
/// checkDeadlockFree().
llvm::Expected<Schedule> insertCommunication(const Schedule &s,
                                             const StageGraph &g);

/// Execute the table under blocking rendezvous semantics (a Send completes
/// only when the matching Recv is posted and vice versa; compute is
/// instantaneous once reached). A Send and a Recv match when they name
/// each other's rank and stage, the microbatch, the direction and the value
/// (Action::value). Fails with the cycle of waiting ranks
/// ("deadlock: rank 0 waits on send to rank 1 (F stage 0 mb 2) -> rank 1
/// waits on ...") or with an unmatched Send/Recv.
///
/// Errors are ScheduleErrors: BadAction for a peer rank outside 0..R-1
/// (`at` = that Send/Recv); Mismatched (`at` = the Send, `related` = the
/// Recv the peer posts instead); Unmatched (`at` = the waiting Send/Recv,
/// `related.rank` = the finished peer); Deadlock (`cycle` = per rank of the
/// cycle, in the message's order, the Send/Recv it waits at; `at` = its
/// first entry).
llvm::Error checkDeadlockFree(const Schedule &s);

//===----------------------------------------------------------------------===//
// torch.distributed.pipelining action / CSV format
//===----------------------------------------------------------------------===//

/// torch `_Action` string form (torch/distributed/pipelining/schedules.py,
/// `_Action.__repr__`): "<stage><type><microbatch>". Mapping (torch 2.15's
/// whole `_ComputationType`; docs/TorchCSV.md has the table):
///   F -> Phase::F, I (input gradient) -> Phase::B, W -> Phase::W,
///   B (full backward) -> Phase::BW, SEND_F / RECV_F / SEND_B / RECV_B ->
///   Phase::Send / Phase::Recv (backward = the _B forms);
///   WAIT_SEND_F / WAIT_SEND_B: completion of an earlier send; pipeopt's
///   sends are blocking, so importCSV checks that the send came first and
///   drops the wait (exportCSV writes one right after every send);
///   UNSHARD, RESHARD (FSDP), REDUCE_GRAD, WAIT_REDUCE_GRAD (data-parallel
///   gradient reduction): no pipeopt action; importCSV skips them and
///   counts them (CSVImportStats);
///   "(<a>;<b>;...)OVERLAP_F_B": importCSV runs the sub-actions one after
///   the other, in the order written.
/// The stage of a comm action is the local stage. Comm peers are implicit
/// in torch (the adjacent stage: s+1 for SEND_F / RECV_B, s-1 for RECV_F /
/// SEND_B); any other peer stage (skip connection) is written with the
/// pipeopt extension suffix "@<peerStage>", e.g. "0SEND_F1@3" (torch cannot
/// load those).
std::string formatAction(const Action &a);
/// Inverse of formatAction() for one pipeopt action (F, I, W, B, SEND_*,
/// RECV_*); peerRank is left -1 (resolved by importCSV). torch-only types
/// (WAIT_*, UNSHARD, RESHARD, REDUCE_GRAD, OVERLAP_F_B) are errors here that
/// say so; importCSV accepts them.
llvm::Expected<Action> parseAction(llvm::StringRef text);

/// Options of exportCSV.
struct CSVExportOptions {
  /// Only the compute actions (F, I, W, B): torch's "compute_only" format.
  bool computeOnly = false;
  /// With communication: a WAIT_SEND_F / WAIT_SEND_B right after every
  /// SEND_F / SEND_B, which torch 2.15's `_load_csv(format="compute_comms")`
  /// requires ("Pipeline sends at rank r have no matching wait"). The wait
  /// right after the send is pipeopt's blocking-send semantics.
  bool sendWaits = true;
};

/// One row per rank, comma-separated actions, '\n' after every row.
std::string exportCSV(const Schedule &s, const CSVExportOptions &opts = {});

/// What importCSV read that has no pipeopt action (see formatAction()).
struct CSVImportStats {
  int waitSend = 0;       ///< WAIT_SEND_F / WAIT_SEND_B (checked, dropped)
  int unshard = 0;        ///< UNSHARD (skipped)
  int reshard = 0;        ///< RESHARD (skipped)
  int reduceGrad = 0;     ///< REDUCE_GRAD (skipped)
  int waitReduceGrad = 0; ///< WAIT_REDUCE_GRAD (skipped)
  int overlapped = 0;     ///< OVERLAP_F_B cells (expanded in order)
};

/// Options for importCSV: everything the torch CSV does not carry.
struct CSVImportOptions {
  std::string name = "csv";
  /// Number of stages; 0: 1 + the largest stage index seen.
  int numStages = 0;
  /// Number of microbatches; 0: 1 + the largest microbatch index seen.
  int numMicrobatches = 0;
  /// When set, receives the counts of torch-only actions.
  CSVImportStats *stats = nullptr;
};

/// Parse a CSV written by exportCSV() or torch `_dump_csv` (either format,
/// any torch 2.15 action). Placement is inferred from where compute actions
/// appear (one pipeline per distinct stage->rank map); peers of comm actions
/// are resolved from the placement. Input handling: "\r\n", "\n" or "\r"
/// line ends; a UTF-8 byte-order mark is skipped; cells are trimmed of
/// spaces and tabs and of one pair of double quotes; empty cells are idle
/// slots; blank lines at the end are ignored, a blank line between rows is
/// an error (it would be a rank); a UTF-16 file is an error. Errors name
/// the line, rank and cell. The result is validated and, if it contains
/// comm actions, checked with checkDeadlockFree(); a deadlocking table is
/// rejected with the cycle. Messages from those checks name actions in
/// torch's terms ("1I3 (input gradient, stage 1, mb 3)").
llvm::Expected<Schedule> importCSV(llvm::StringRef csv,
                                   const CSVImportOptions &opts = {});

//===----------------------------------------------------------------------===//
// Views and helpers for people and the simulator
//===----------------------------------------------------------------------===//

/// Unit-time start slot of every action: result[rank][i] is the slot of
/// actions[rank][i] (compute takes 1 slot, comm 0 and waits for its
/// compute dependency). Fails if the table has no consistent order.
llvm::Expected<std::vector<std::vector<int>>> unitTimeSlots(const Schedule &s);

/// Text grid: one row per rank, one column per unit-time slot, cells like
/// "F3" / "B3" / "W3" / "BW3" (microbatch) with the stage shown as "s2:F3"
/// when a rank holds more than one stage; "." marks idle slots.
std::string renderGrid(const Schedule &s);

/// Warm-up forwards of `rank` in Megatron's sense: forwards before the
/// steady state, whose steps are "one F, then one backward". Computed as the
/// number of F before the first backward (B or BW) minus one (that F is the
/// first steady F), or all of them when no F follows the first backward
/// (GPipe-like; also when the warm-up is total-1, which looks the same).
int warmupCount(const Schedule &s, int rank);
std::vector<int> warmupCounts(const Schedule &s);

/// Max number of microbatches whose activations `stage` holds at once
/// (F done, backward not yet done: B for split schedules, BW otherwise;
/// walking the rank's list in order). Forward-only: F frees immediately.
int maxInFlight(const Schedule &s, int stage);
/// Per rank: max over time of the sum of in-flight microbatches over the
/// stages it holds.
std::vector<int> peakInFlightPerRank(const Schedule &s);

/// Number of compute actions on `rank`.
int numComputeActions(const Schedule &s, int rank);

/// Short name of a phase: "F", "B", "W", "BW", "SEND", "RECV".
llvm::StringRef phaseName(Phase p);

/// How messages name actions.
enum class ActionNaming : uint8_t {
  Pipeopt, ///< "B(stage 2, mb 3)", "BW(stage 2, mb 3)"
  Torch,   ///< "2I3 (input gradient, stage 2, mb 3)", "2B3 (full backward,
           ///< stage 2, mb 3)": torch's CSV token and what it means
};

/// Human-readable form "F(stage 2, mb 3)", "SEND_F(stage 0 -> 1, mb 2)";
/// in the current naming (ActionNaming::Pipeopt unless a
/// ScopedActionNaming is active on this thread, as during importCSV).
std::string describe(const Action &a);
std::string describe(const Action &a, ActionNaming naming);

/// Sets the naming describe() and the checks' messages use on this thread
/// while it lives.
class ScopedActionNaming {
public:
  explicit ScopedActionNaming(ActionNaming naming);
  ~ScopedActionNaming();
  ScopedActionNaming(const ScopedActionNaming &) = delete;
  ScopedActionNaming &operator=(const ScopedActionNaming &) = delete;
  static ActionNaming current();

private:
  ActionNaming previous;
};

} // namespace schedule
} // namespace pipeopt

#endif // PIPEOPT_SCHEDULE_SCHEDULE_H
