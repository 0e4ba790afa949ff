//===- Partitioner.h - Pipeline stage partitioner (pure C++) ---*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The partitioner core: a weighted DAG given in a topological order is split
/// into `numStages` contiguous pipeline stages, minimizing the bottleneck
/// stage time subject to per-stage memory. Plain data in, plain data out: no
/// MLIR IR types. The `pipe-partition` pass builds a `Graph` from IR (with the
/// cost model) and writes `Partition::stageOf` back as `pipe.stage`.
///
/// Terminology. A *node* is one op. Nodes flagged `rematerializable` (cheap
/// values computed only from constants, arguments and other rematerializable
/// nodes: constants, `tensor.empty`, fills, masks, RoPE tables) are not placed
/// in the order; every stage that uses one (directly or through a chain of
/// rematerializable nodes) gets its own copy and the value is never sent. All
/// other nodes are *placed*: they form the order that is cut into stages.
///
/// Stage cost (the objective; the DP is exact for it). Stage `s` holds the
/// placed positions `[i, j)` of the order. With `link(a, b)` the α-β link
/// between the ranks of stages `a` and `b` (seconds = latency + bytes /
/// bandwidth, Hockney's model):
///
///   time(s)    = compute(s) + comm(s)
///   compute(s) = Σ_{placed n in s} t(n) + Σ_{remat r used by s} t(r)
///                t(n) = forward seconds, + B + W seconds when training.
///   comm(s)    = Σ_{v ∈ In(s)}  link(s-1, s).seconds(bytes(v))
///              + Σ_{v ∈ Out(s)} link(s, s+1).seconds(bytes(v))
///              (training adds the gradients of the same values in the
///               opposite direction: Out(s) from link(s+1, s), In(s) to
///               link(s, s-1).)
///   In(s)      = distinct values produced by a placed node before `i` and
///                consumed by a node of `s` (received once per stage, however
///                many of its nodes use it).
///   Out(s)     = distinct values produced in `s` and consumed after `j`.
///
/// A *value* is one result of a node: edges with equal `(from, result)` carry
/// the same value (its bytes are the maximum over those edges). Values of
/// rematerializable nodes and graph arguments are never communicated.
///
/// Skip connections are routed directly from the producer's stage to each
/// consumer's stage: a value that only passes by a stage (produced before it,
/// consumed after it) costs that stage nothing.
///
/// Decomposable definition (documented approximations, needed so that the
/// cost of a stage depends only on `(s, i, j)` and the DP is exact):
///  1. The sender is charged ONCE per value leaving it (`Out(s)`), even when
///     the value has consumers in several later stages. The traffic actually
///     moved (one send per distinct destination stage) is reported separately
///     as `StageReport::fanoutSendBytes`; Σ fanoutSendBytes == Σ recvBytes.
///  2. Every transfer of stage `s` is priced on its adjacent links
///     (`s-1 -> s` for what it receives, `s -> s+1` for what it sends), also
///     for skip connections that physically use link(producer, consumer).
///     With uniform links (the usual intra-node case) this is exact.
///
/// Memory of stage `s` (bytes):
///   params(s) × (1 + optimizerFactor) + activations(s) × inFlight[s]
/// params(s) = Σ paramBytes of placed nodes of `s`; activations(s) = Σ
/// outputBytes of placed nodes of `s` (activations stashed for backward).
/// Rematerializable nodes hold no memory in this model.
///
/// The optimum is the minimum over all splits of the order into exactly
/// `numStages` non-empty contiguous stages that respect memory and fixed
/// stages of max_s time(s). Among optimal splits, the one returned is
/// deterministic but otherwise unspecified.
///
/// Cost of the balanced strategy (n placed ops, S stages, E edges): the DP
/// runs under thresholds T = lb(1 + ε), ε = 1e-3, 2e-3, ... (lb = the
/// report's lower bound), capped by the best uniform/params/greedy split;
/// a round costs O((n + E) log n) plus, per stage end j, a sweep over the
/// starts allowed by T (O(min(n/S, ε n)) typically). Measured: 100,000 ops
/// into 64 stages in about 0.1 s (benchmarks/PartitionBench.cpp).
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_PARTITION_PARTITIONER_H
#define PIPEOPT_PARTITION_PARTITIONER_H

#include "pipeopt/Machine/Machine.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pipeopt {
namespace partition {

//===----------------------------------------------------------------------===//
// Input graph
//===----------------------------------------------------------------------===//

/// One op of the DAG. All times in seconds per microbatch, sizes in bytes.
struct Node {
  /// Display name (e.g. "linalg.matmul#12"); used in error messages.
  std::string name;
  /// Forward compute time (seconds per microbatch).
  double forwardSeconds = 0;
  /// Backward input-gradient time B (seconds), used when training.
  double backwardInputSeconds = 0;
  /// Backward weight-gradient time W (seconds), used when training.
  double backwardWeightSeconds = 0;
  /// Forward floating-point operations (FLOP); reported, not optimized.
  double flops = 0;
  /// B and W floating-point operations (FLOP), when training; reported.
  double backwardInputFlops = 0, backwardWeightFlops = 0;
  /// Parameter bytes owned by this node. A weight listed in the `weights` of
  /// several placed nodes must be attributed here to its first reader in the
  /// order only; every other stage that reads it is charged one more copy
  /// (Graph::weightBytes) in its parameter bytes and memory, because each
  /// rank holding such a stage keeps the weight (tied weights).
  double paramBytes = 0;
  /// Output (activation) bytes kept for backward per microbatch.
  double outputBytes = 0;
  /// Cheap value computed only from constants/arguments/other remat nodes:
  /// duplicated into every stage using it, never placed, never sent.
  bool rematerializable = false;
  /// Stage pinned by the user; -1 when free. Required on every placed node by
  /// the manual strategy; a constraint for the balanced strategy (pinned
  /// nodes must then be non-decreasing along the order); ignored by the
  /// uniform and params strategies; ignored on rematerializable nodes.
  int fixedStage = -1;
  /// Ids (indices into Graph::weightNames/weightBytes) of the weight
  /// arguments this node reads; used to charge and report tied weights.
  /// Ignored on rematerializable nodes for memory.
  std::vector<int> weights;
};

/// A data dependency `from -> to` carrying `bytes` (result `result` of
/// `from`). Edges from graph arguments are not represented.
struct Edge {
  int from = 0;
  int to = 0;
  double bytes = 0;
  int result = 0;
};

/// A weighted DAG. `nodes` MUST be in a topological order (every edge goes
/// from a lower to a higher index); the balanced strategy is exact for that
/// order.
struct Graph {
  std::vector<Node> nodes;
  std::vector<Edge> edges;
  /// Optional, indexed by weight id: names and sizes (bytes) of weight
  /// arguments, used for the copies of tied weights (see Node::paramBytes)
  /// and the tied-weights report. A weight id without a size costs nothing.
  std::vector<std::string> weightNames;
  std::vector<double> weightBytes;

  /// Appends `node` and returns its index.
  int addNode(Node node);
  /// Appends an edge carrying `bytes` from `from`'s result `result` to `to`.
  void addEdge(int from, int to, double bytes, int result = 0);
};

//===----------------------------------------------------------------------===//
// Machine model
//===----------------------------------------------------------------------===//

/// Links between the ranks that host the stages.
struct LinkModel {
  /// Link used for every pair when `between` is empty. Transfers of 0
  /// bytes cost nothing (machine::Link::seconds).
  machine::Link uniform;
  /// Optional per-pair link, by rank: between(fromRank, toRank).
  std::function<machine::Link(int fromRank, int toRank)> between;
  /// Optional stage -> rank map; default stage k runs on rank k.
  std::vector<int> stageRank;

  /// Rank hosting stage `stage`.
  int rankOf(int stage) const;
  /// The link from stage `fromStage` to stage `toStage`.
  machine::Link link(int fromStage, int toStage) const;
};

/// Per-stage memory budget.
struct MemoryModel {
  /// Capacity in bytes per stage; 0 = unlimited. Empty = all unlimited; a
  /// single entry applies to every stage.
  std::vector<double> capacityBytes;
  /// Extra bytes per parameter byte for gradients and optimizer state:
  /// 0 for inference; 3 for fp32 Adam (grad + m + v); 7 for mixed-precision
  /// Adam (fp16 weights: fp16 grad + fp32 master, m, v = 2+12 bytes per 2;
  /// ZeRO, Rajbhandari et al. 2020, §3.1).
  double optimizerFactor = 0;
  /// Microbatches whose activations a stage keeps at its peak, per stage
  /// (see gpipeInFlight / oneFOneBInFlight). Empty = 1 everywhere.
  std::vector<int> inFlight;

  /// Capacity of `stage` in bytes (0 = unlimited).
  double capacityOf(int stage) const;
  /// In-flight microbatches of `stage`.
  int inFlightOf(int stage) const;
};

/// GPipe (Huang et al. 2019): every stage keeps all `numMicrobatches`.
std::vector<int> gpipeInFlight(int numStages, int numMicrobatches);
/// 1F1B (PipeDream-Flush, Narayanan et al. 2021 §2.2): stage s keeps
/// min(numStages - s, numMicrobatches).
std::vector<int> oneFOneBInFlight(int numStages, int numMicrobatches);

//===----------------------------------------------------------------------===//
// Options and results
//===----------------------------------------------------------------------===//

/// How stages are chosen.
enum class Strategy {
  /// Optimal bottleneck (exact DP over the order). Default.
  Balanced,
  /// Equal number of placed ops per stage (first stages take the remainder).
  Uniform,
  /// Parameter-balanced cuts, as DeepSpeed's partition_method=parameters
  /// (its partition_balanced): the smallest bound B on per-stage parameter
  /// bytes for which greedy maximal stages (leaving one op for each later
  /// stage) cover the order, and those greedy stages. Ignores compute.
  Params,
  /// Node::fixedStage of every placed node, checked.
  Manual,
};

/// "balanced", "uniform", "params", "manual".
llvm::StringRef toString(Strategy strategy);
/// Parses the names above.
llvm::Expected<Strategy> parseStrategy(llvm::StringRef name);

/// Partitioning request.
struct Options {
  int numStages = 2;
  Strategy strategy = Strategy::Balanced;
  /// Training: stage time includes B and W, and gradient traffic.
  bool training = false;
  LinkModel links;
  MemoryModel memory;
  /// Compute the uniform and params baselines for the report.
  bool computeBaselines = true;
};

/// A split of the nodes into stages.
struct Partition {
  int numStages = 0;
  /// Per node: its stage, or -1 for rematerializable nodes.
  std::vector<int> stageOf;
  /// Per node: for rematerializable nodes, the sorted stages holding a copy
  /// (empty if unused); empty for placed nodes.
  std::vector<std::vector<int>> rematStages;
};

/// Per-stage figures, same definitions as the objective (file comment).
struct StageReport {
  double timeSeconds = 0;    ///< compute + comm (s)
  double computeSeconds = 0; ///< incl. remat copies (s)
  /// computeSeconds split into F, B and W (s; B = W = 0 unless training).
  double forwardSeconds = 0, backwardInputSeconds = 0,
         backwardWeightSeconds = 0;
  double commSeconds = 0; ///< priced transfers (s)
  double flops = 0;       ///< forward FLOP incl. remat copies
  /// B and W FLOP incl. remat copies (0 unless training).
  double backwardInputFlops = 0, backwardWeightFlops = 0;
  double paramBytes = 0;
  double activationBytes = 0; ///< per microbatch
  double sendBytes = 0;       ///< Out(s): once per value
  double fanoutSendBytes = 0; ///< once per (value, destination stage)
  double recvBytes = 0;       ///< In(s)
  int numOps = 0;             ///< placed ops
  int numRematOps = 0;        ///< rematerialized copies
  double memoryBytes = 0;     ///< params×(1+opt) + activations×inFlight
  double capacityBytes = 0;   ///< 0 = unlimited
  int inFlight = 1;
};

/// A weight argument read by ops of more than one stage.
struct TiedWeight {
  int weight = 0;
  std::string name;
  double bytes = 0;
  std::vector<int> stages;
};

/// The bottleneck of a baseline strategy under the same cost function.
struct Baseline {
  bool computed = false;
  double bottleneckSeconds = 0;
  bool fitsMemory = true;
};

/// Everything a user wants to see about a partition.
struct Report {
  Strategy strategy = Strategy::Balanced;
  int numStages = 0;
  std::vector<StageReport> stages;
  double bottleneckSeconds = 0;
  /// max(Σ compute / numStages, slowest single placed op) (s).
  double lowerBoundSeconds = 0;
  /// max / mean stage time.
  double imbalance = 1;
  std::vector<TiedWeight> tiedWeights;
  Baseline uniform, params;
};

/// A partition and its report.
struct Result {
  Partition partition;
  Report report;
};

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// The error partition() and evaluate() return: the message (message() is
/// the text documented on partition()) plus the node, stage or weight it is
/// about, so that a caller can place a diagnostic without reading the text.
/// Read it with llvm::handleErrors(e, [](const PartitionError &pe) {...}).
/// Fields a message does not name stay -1:
///  - `node`: the node (index into Graph::nodes) the message names first:
///    the op with a bad time/size or weight id; the source of an edge that
///    does not go forward or has bad bytes; the rematerializable consumer
///    of a placed node; the op without a stage, with a stage out of range or
///    feeding an earlier stage; the op whose fixed stage is inconsistent.
///  - `otherNode`: the second node the message names (the consumer of a
///    decreasing dependency, the other op of two inconsistent fixed stages).
///  - `stage`: the stage out of range, without ops, with a negative
///    in-flight count, or whose memory exceeds its limit.
///  - `weight`: the weight (index into Graph::weightBytes) with a negative
///    or non-finite size.
class PartitionError : public llvm::ErrorInfo<PartitionError> {
public:
  static char ID;
  explicit PartitionError(std::string text) : text(std::move(text)) {}

  std::string text;
  int node = -1;
  int otherNode = -1;
  int stage = -1;
  int weight = -1;

  void log(llvm::raw_ostream &os) const override { os << text; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
};

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

/// Partitions `graph` into `options.numStages` stages with
/// `options.strategy`. Errors (never asserts) on: malformed graphs (edge not
/// forward in the order, bad ids, remat node fed by a placed node), more
/// stages than placed ops ("cannot split 5 ops into 8 stages"), memory that
/// cannot be met (names the stage, its params/activations/in-flight and the
/// limit), and inconsistent fixed stages. Every error is a PartitionError.
llvm::Expected<Result> partition(const Graph &graph, const Options &options);

/// Prices an arbitrary assignment `stageOf` (per node; entries of
/// rematerializable nodes are ignored) under the objective's definition.
/// Stages must be non-decreasing along edges and non-empty; placed nodes
/// need not be contiguous in the given order (they are stably reordered by
/// stage). Memory limits are reported, not enforced. Errors are
/// PartitionErrors (a bad graph as in partition(), a bad assignment with
/// its node or stage).
llvm::Expected<Result> evaluate(const Graph &graph, const Options &options,
                                llvm::ArrayRef<int> stageOf);

/// The report as JSON: {"strategy", "num_stages", "stages": [{"time_s",
/// "compute_s", "comm_s", "flops", "param_bytes", "activation_bytes",
/// "send_bytes", "fanout_send_bytes", "recv_bytes", "num_ops",
/// "num_remat_ops", "memory_bytes", "capacity_bytes", "in_flight"}],
/// "bottleneck_s", "lower_bound_s", "imbalance", "tied_weights": [{"weight",
/// "name", "bytes", "stages"}], "baselines": {"uniform": {"bottleneck_s",
/// "fits_memory"}, "params": {...}}}.
llvm::json::Value toJSON(const Report &report);

/// A readable per-stage table followed by the summary lines.
void printTable(llvm::raw_ostream &os, const Report &report);

/// "18.2 GB"-style decimal byte formatting used in messages and tables.
std::string formatBytes(double bytes);

} // namespace partition
} // namespace pipeopt

#endif // PIPEOPT_PARTITION_PARTITIONER_H
