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

  /// Full backward (BW = B + W) time (s).
  double backwardSec() const { return backwardInputSec + backwardWeightSec; }
};

/// A cost table: one StageCost per entry in model order.
struct CostTable {
  std::string name;
  std::vector<StageCost> stages;

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
  /// usable with a per-layer table for any stage count.
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
///         "boundary_bytes": 3.4e7 } ] }         // to the next entry
/// \endcode
/// A top-level array of stage objects is accepted too. Negative or
/// non-finite numbers and missing forward times are errors.
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
  /// Memory of one device (bytes) that a rank's peak activations plus
  /// weights must fit in (pipeopt-explore drops configurations over it;
  /// --memory-limit overrides it); 0: no limit.
  double memoryBytes = 0;

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
///     "nics_per_node": 1, "overlap": true, "memory_bytes": 8.6e10,
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
