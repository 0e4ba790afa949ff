//===- CostModel.h - Cost tables and system configs for simulation -*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Plain data the simulator consumes: a per-stage cost table (compute times,
/// memory, boundary sizes) and a system configuration (compute speed and an
/// alpha-beta network topology). Both can be read from JSON; the formats are
/// documented on parseCostTable() and parseSystems() and in
/// tools/pipeopt-explore/README.md.
///
/// Units everywhere: seconds, bytes, bytes per second.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_SIMULATE_COSTMODEL_H
#define PIPEOPT_SIMULATE_COSTMODEL_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace pipeopt {
namespace sim {

//===----------------------------------------------------------------------===//
// Cost table
//===----------------------------------------------------------------------===//

/// Costs of one entry of a cost table (a stage, or a layer that the
/// simulator groups into stages, see CostTable::resample()).
struct StageCost {
  double forwardSec = 0;        ///< F time on the reference device (s).
  double backwardInputSec = 0;  ///< B (input gradient) time (s).
  double backwardWeightSec = 0; ///< W (weight gradient) time (s).
  /// Activation memory kept from F until the backward of the same
  /// microbatch (bytes per microbatch).
  double activationBytes = 0;
  /// Split-backward schedules only: bytes of the activation that stay live
  /// after B until W (bytes per microbatch). 0 by default, i.e. B frees the
  /// activation, which matches schedule::maxInFlight().
  double weightGradHoldBytes = 0;
  /// Parameters (and whatever the table author counts with them, e.g.
  /// gradients and optimizer state) of this entry (bytes).
  double weightBytes = 0;
  /// Bytes sent to the next entry per microbatch (activation forward; the
  /// gradient sent back has the same size). Ignored for the last entry.
  double boundaryBytes = 0;
  /// Optimizer step of this entry once per batch, after its weight
  /// gradients are reduced (s on the reference device; 0 = not modeled).
  double optimizerSec = 0;
  /// Bytes of this entry's weight gradient that the gradient all-reduces
  /// move (Chimera replicas, data parallelism). Negative (the default):
  /// weightBytes, i.e. the table counts parameters only.
  double gradientBytes = -1;

  /// Full backward (BW = B + W) time (s).
  double backwardSec() const { return backwardInputSec + backwardWeightSec; }
  /// Bytes a gradient all-reduce of this entry moves (bytes).
  double reducedGradientBytes() const {
    return gradientBytes >= 0 ? gradientBytes : weightBytes;
  }
};

/// A parameter shared by several entries (tied weights, e.g. a language
/// model's token embedding and LM head): every rank that holds one of the
/// entries computes a partial gradient, and those partial gradients are
/// summed by an all-reduce among these ranks after the backward pass.
struct TiedGroup {
  std::vector<int> stages;  ///< Entry indices (>= 2 distinct).
  double bytes = 0;         ///< Bytes of the shared parameter's gradient.
};

/// A cost table: one StageCost per entry in model order.
struct CostTable {
  std::string name;
  std::vector<StageCost> stages;
  /// Tied parameters (empty: none).
  std::vector<TiedGroup> tied;

  int size() const { return static_cast<int>(stages.size()); }

  /// `n` identical entries: F = `stageSec`, B = `stageSec`, W = `stageSec`
  /// (so a full backward is 2F, the usual assumption; Qi et al. ICLR'24 use
  /// T_F = T_B = T_W for their hand-crafted schedules).
  static CostTable uniform(int n, double stageSec, double activationBytes = 0,
                           double weightBytes = 0, double boundaryBytes = 0);

  /// Map this table onto `n` stages. When size() == n the table is returned
  /// as is. Otherwise entry costs are spread evenly: stage s covers the
  /// fractional entry range [s*L/n, (s+1)*L/n) (L = size()), times, memory
  /// and weights are summed with fractional weights, and the boundary of a
  /// stage is the boundary of the entry that contains its right cut (for
  /// L a multiple of n: plain grouping of L/n consecutive layers). A
  /// balanced partition is the partitioner's job; this keeps the explorer
  /// usable with a per-layer table for any stage count. Optimizer times
  /// and gradient bytes are summed like the other costs (an entry without
  /// gradient_bytes counts its weight bytes); a tied group's entry e maps
  /// to the stage that holds e's first part, duplicates merged.
  CostTable resample(int n) const;
};

/// Parse a cost table from JSON text. Format:
/// \code
///   { "name": "llama2-7b-synthetic",            // optional
///     "stages": [                               // one object per entry
///       { "forward_s": 3.3e-3,                  // F time (s), required
///         "backward_input_s": 3.3e-3,           // B time (s)
///         "backward_weight_s": 3.3e-3,          // W time (s)
///         "backward_s": 6.6e-3,                 // alternative: full BW (s),
///                                               //  split as B = W = BW/2
///         "activation_bytes": 5.7e8,            // per microbatch
///         "weight_grad_hold_bytes": 0,          // optional, see StageCost
///         "weight_bytes": 3.2e9,
///         "gradient_bytes": 8.0e8,              // optional, see StageCost
///         "optimizer_s": 1.0e-3,                // optional, see StageCost
///         "boundary_bytes": 3.4e7 } ],          // to the next entry
///     "tied": [                                 // optional, see TiedGroup
///       { "stages": [0, 31], "bytes": 5.2e8 } ] }
/// \endcode
/// A top-level array of stage objects is accepted too. Negative or
/// non-finite numbers, missing forward times and tied groups with fewer
/// than two distinct entries or an entry index out of range are errors.
llvm::Expected<CostTable> parseCostTable(llvm::StringRef json);
/// Read and parse a cost table file.
llvm::Expected<CostTable> loadCostTable(llvm::StringRef path);
/// The JSON form parseCostTable() reads (round-trips).
std::string costTableToJSON(const CostTable &t);

//===----------------------------------------------------------------------===//
// System config
//===----------------------------------------------------------------------===//

/// One link class of the alpha-beta model: a message of n bytes takes
/// latencySec + n / bandwidthBytesPerSec.
struct LinkParams {
  double latencySec = 0;            ///< alpha (s).
  double bandwidthBytesPerSec = 0;  ///< beta^-1 (B/s); 0 means infinite.
  /// Time for `bytes` bytes (s).
  double time(double bytes) const {
    return latencySec +
           (bandwidthBytesPerSec > 0 ? bytes / bandwidthBytesPerSec : 0.0);
  }
};

/// A modeled machine: compute speed relative to the cost table's reference
/// device and the network that connects pipeline ranks.
///
/// Topology: ranks are placed consecutively, `gpusPerNode` ranks per node.
/// Ranks on one node talk over `intraNode` (every rank has its own link,
/// NVSwitch-like, so only the ranks' own send / recv engines are shared).
/// Ranks on different nodes go through NICs over `interNode`: a node has
/// `nicsPerNode` NICs, rank with local index i uses NIC i % nicsPerNode,
/// and each NIC direction (out, in) carries one transfer at a time, so
/// inter-node transfers that share a NIC serialize (contention).
struct SystemConfig {
  std::string name;
  /// Speed relative to the cost table's reference device: a stage time t
  /// becomes t / computeSpeed.
  double computeSpeed = 1.0;
  int gpusPerNode = 8;  ///< Pipeline ranks per node.
  int nicsPerNode = 1;  ///< NICs per node shared by inter-node transfers.
  LinkParams intraNode;
  LinkParams interNode;
  /// True: a rank computes while its send / recv engines move data.
  /// False: after a compute action the rank's next compute waits until
  /// every send of that action's results has finished.
  bool overlap = true;
  /// Data-parallel degree D >= 1: D replicas of the whole pipeline, each on
  /// its own P = numRanks ranks, all-reduce their weight gradients after
  /// the backward pass. Placement: pipeline rank r of replica d is global
  /// rank d * P + r (replicas after one another), so with `gpusPerNode`
  /// the data-parallel peers of a rank may sit on other nodes and use
  /// `interNode` links. Only replica 0 is simulated; the others run the
  /// same timeline.
  int dataParallel = 1;
  /// Memory of one device (bytes) that a rank's peak activations plus
  /// weights must fit in (pipeopt-explore drops configurations over it;
  /// --memory-limit overrides it); 0: no limit.
  double memoryBytes = 0;
  /// CPU cores that the ranks of one node share (event level only; may be
  /// fractional: the effective cores a calibration measured). 0, the
  /// default: every rank has a processor of its own (accelerators, or a
  /// CPU with a core per rank). When k > coresPerNode ranks of a node
  /// compute at once, each advances at coresPerNode / k of its speed:
  /// processor sharing (Kleinrock, "Queueing Systems" vol. 2, 1976, §4.4),
  /// the fair share the Linux scheduler (CFS) gives equal runnable threads.
  double coresPerNode = 0;

  /// True when some node has more of the `numRanks` ranks than
  /// coresPerNode cores, so that core sharing can slow compute.
  bool sharesCores(int numRanks) const;

  int nodeOf(int rank) const { return gpusPerNode > 0 ? rank / gpusPerNode : 0; }
  /// Global NIC index used by `rank` for inter-node traffic.
  int nicOf(int rank) const;
  /// Link class between two ranks.
  const LinkParams &link(int srcRank, int dstRank) const {
    return nodeOf(srcRank) == nodeOf(dstRank) ? intraNode : interNode;
  }
};

/// A system with free communication and speed 1 ("ideal").
SystemConfig idealSystem();

/// The 3 x 3 preset grid around an H100-class node, named
/// "compute-{slow,medium,fast}/net-{slow,medium,fast}" (row-major: compute
/// outer). Numbers (documented in tools/pipeopt-explore/README.md):
///  - compute speed: slow 0.5, medium 1.0 (H100 SXM, the reference of the
///    cost tables), fast 2.0 (a next-generation part);
///  - all presets: 2 pipeline ranks per node (an 8-GPU node running two
///    tensor-parallel groups of 4), overlap on;
///  - net-slow:   intra 64 GB/s, 10 us (PCIe 5 x16); inter 12.5 GB/s,
///                30 us (100 Gb/s Ethernet/RoCE), 1 NIC per node;
///  - net-medium: intra 300 GB/s, 5 us (NVLink, achieved p2p); inter
///                25 GB/s, 10 us (200 Gb/s InfiniBand), 1 NIC per node;
///  - net-fast:   intra 450 GB/s, 2 us (NVLink 4, one direction); inter
///                50 GB/s, 5 us (400 Gb/s NDR InfiniBand), one NIC per rank.
std::vector<SystemConfig> presetGrid();
/// A preset by name: one of presetGrid() or "ideal".
llvm::Expected<SystemConfig> presetByName(llvm::StringRef name);

/// Parse system configs from JSON: one object, an array of objects, or
/// {"systems": [...]}. Object fields (all optional except "name"):
/// \code
///   { "name": "my-cluster", "compute_speed": 1.0, "gpus_per_node": 2,
///     "nics_per_node": 1, "overlap": true, "data_parallel": 1,
///     "memory_bytes": 8.6e10, "cores_per_node": 2,
///     "intra_node": { "latency_s": 2e-6, "bandwidth_Bps": 4.5e11 },
///     "inter_node": { "latency_s": 5e-6, "bandwidth_Bps": 5e10 } }
/// \endcode
/// An object may instead say {"preset": "compute-fast/net-slow", ...} and
/// override single fields.
llvm::Expected<std::vector<SystemConfig>> parseSystems(llvm::StringRef json);
/// Read and parse a system config file.
llvm::Expected<std::vector<SystemConfig>> loadSystems(llvm::StringRef path);

} // namespace sim
} // namespace pipeopt

#endif // PIPEOPT_SIMULATE_COSTMODEL_H
