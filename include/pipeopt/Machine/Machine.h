//===- Machine.h - The machine model: device, topology, links ---*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The one machine model that the cost model, the partitioner, the
/// simulator and the explorer read: a device (peak FLOP/s, memory), a
/// topology (ranks per node, NICs, alpha-beta links) and the settings the
/// simulator applies on top of the hardware (compute speed relative to a
/// cost table's reference device, compute/communication overlap,
/// data-parallel degree, memory limit). The presets and the one JSON
/// schema (docs/CostModel.md "Machine JSON") are declared here too.
///
/// Pure C++ (LLVM Support only, no MLIR).
///
/// Units everywhere: seconds, bytes, FLOP, FLOP/s, bytes/s; every field
/// carries its unit in its name.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_MACHINE_MACHINE_H
#define PIPEOPT_MACHINE_MACHINE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pipeopt {
namespace machine {

//===----------------------------------------------------------------------===//
// Link, device, topology
//===----------------------------------------------------------------------===//

/// An alpha-beta link (Hockney, Parallel Computing 1994): a message of n
/// bytes takes latencySeconds + n / bytesPerSecond.
struct Link {
  /// alpha: seconds per message.
  double latencySeconds = 0;
  /// beta^-1: bytes/s per direction; 0 means unlimited.
  double bytesPerSecond = 0;
  /// The sender's processor time per message, in seconds: the send call
  /// (header, enqueueing, waking the receiver) that keeps the sending rank
  /// from its next action while the message itself travels for
  /// messageSeconds(bytes) (LogP's per-message overhead o; Culler et al.,
  /// PPoPP 1993). Only the event simulation charges it; 0 in every preset
  /// (accelerator sends are asynchronous). pipeopt-calibrate measures it
  /// through the runtime's send on this host.
  double senderOverheadSeconds = 0;
  /// A message to a rank whose core is idle when the message is sent (every
  /// rank pinned to that core waits, or the rank has a core of its own):
  /// the sleeping processor must be woken first (on a virtual machine a
  /// halted vCPU, through the hypervisor), which takes longer for the
  /// message and costs the sender more than waking a rank onto a busy
  /// core. The event simulation uses these in place of latencySeconds and
  /// senderOverheadSeconds for such messages, or the busy-core values when
  /// those are larger (0, every preset: the same as for a busy core).
  /// pipeopt-calibrate measures them with sender and receiver pinned to two
  /// cores (docs/Runtime.md, "Waking an idle core"). JSON
  /// "idle_receiver_latency_s" and "idle_receiver_sender_overhead_s".
  double idleReceiverLatencySeconds = 0;
  double idleReceiverSenderOverheadSeconds = 0;

  /// Seconds to move `bytes` between two ranks: 0 when there is nothing to
  /// move (bytes <= 0: no message, so no latency either), else
  /// messageSeconds(bytes). The partitioner's and the cost model's rule.
  double seconds(double bytes) const;
  /// Seconds of one message of `bytes`, an empty one included (it still
  /// pays the latency): the simulator's transfers and ring steps. With
  /// `idleReceiver`, the latency of a message to an idle core
  /// (max(latencySeconds, idleReceiverLatencySeconds)).
  double messageSeconds(double bytes, bool idleReceiver = false) const;
  /// The sender's processor time of one message (senderOverheadSeconds;
  /// with `idleReceiver`, max(senderOverheadSeconds,
  /// idleReceiverSenderOverheadSeconds)).
  double senderSeconds(bool idleReceiver = false) const;
};

/// Peak throughput and memory system of one accelerator (or CPU socket).
struct Device {
  /// Matrix (tensor-core) peak in FLOP/s per element type key ("f64",
  /// "f32", "tf32", "bf16", "f16", "f8", "i8", "i32"); used by contractions
  /// (matmul, convolution). Dense, without structured sparsity.
  std::map<std::string, double> matrixFlops;
  /// Vector (SIMT / SIMD) peak in FLOP/s per element type key; used by
  /// every other op.
  std::map<std::string, double> vectorFlops;
  /// Main-memory (HBM / DRAM) bandwidth in bytes/s.
  double memoryBytesPerSecond = 0;
  /// Main-memory capacity in bytes.
  double memoryCapacityBytes = 0;
  /// Fixed cost added to every op that launches work (kernel launch /
  /// dispatch), in seconds.
  double opOverheadSeconds = 0;
  /// An op whose bytes (read + written) are at most `cacheBytes` moves them
  /// at `cacheBytesPerSecond` instead of memoryBytesPerSecond: its working
  /// set fits a cache, as a small activation and the op producing it do.
  /// 0 for either (every preset): all bytes at memoryBytesPerSecond.
  /// pipeopt-calibrate measures both (the L2 size of a core, memcpy within
  /// it). JSON "cache_bytes" (bytes) and "cache_bandwidth" (bytes/s).
  double cacheBytes = 0;
  double cacheBytesPerSecond = 0;
  /// Bytes/s at which a contraction's library kernel copies (packs) the
  /// operands it reads before computing (GotoBLAS-style GEMM, Goto & van de
  /// Geijn, ACM TOMS 34(3), 2008): when > 0 a contraction takes at least
  /// flops / peak + bytesRead / contractionOperandBytesPerSecond, which is
  /// what makes a GEMM with few rows (a small microbatch) slower per FLOP
  /// than a square one. 0 (every preset): the plain roofline.
  /// pipeopt-calibrate fits it by least squares over 16 and 32 x 256^2 and
  /// 512^2 GEMMs whose weights are out of the core's L2, as a pipeline
  /// rank's are after a wait (rt::fitOperandBandwidth; docs/CostModel.md).
  /// JSON "contraction_operand_bandwidth".
  double contractionOperandBytesPerSecond = 0;
  /// Bytes/s (read + written, as memoryBytesPerSecond) at which pipeopt's
  /// runtime copies a rank's shared inputs (a stage's weights) into the
  /// program's buffers: it does so once per iteration, at the stage's first
  /// action on the rank (docs/Runtime.md, "Predicted vs measured"). When
  /// > 0 the table and event levels add 2 x StageCost::parameterBytes() /
  /// this rate to that action (the parameters, not their gradients or
  /// optimizer state). 0 (every preset): inputs are not copied.
  /// pipeopt-calibrate measures it through pipeopt_rt_input_f32 (8 shared
  /// 1 MiB inputs into fresh buffers, caches evicted before each round).
  /// JSON "input_copy_bandwidth".
  double inputCopyBytesPerSecond = 0;
  /// Seconds per parameter element that pipeopt's runtime spends
  /// accumulating one microbatch's weight gradient on the host
  /// (pipeopt_rt_gradient: the gradient copied into a host buffer, then
  /// added in double to the parameter's per-step sum; runtime/lib/Abi.cpp,
  /// rt::addToSum). When > 0 the table and event levels add (the stage's
  /// parameter elements) x this to every W and BW action of the stage
  /// (StageCost::gradientAccumulateSec, set by pipe-simulate). 0 (every
  /// preset): not charged. pipeopt-calibrate measures it by running that
  /// copy and rt::addToSum on a 256 x 256 f32 gradient (median
  /// repetition). JSON "gradient_accumulate_s_per_element" (s, [0, 1)).
  double gradientAccumulateSecondsPerElement = 0;
  /// Seconds per parameter element of the runtime's host update at the end
  /// of a synchronous training step, per optimizer ("none", "sgd",
  /// "momentum", "adamw"; runtime/lib/TrainingStep.cpp reduceAndUpdate):
  /// the per-step gradient sum copied into the exchange buffer, summed
  /// over the parameter's ranks into a fresh vector and divided by the
  /// microbatch count, the weight widened to double (rt::tensorToDoubles),
  /// the optimizer's loop in double (rt::optimizerStep) and the weight
  /// rounded back (rt::doublesToTensor). pipe-simulate optimizer-step=true
  /// charges (parameter elements updated) x this per stage when the
  /// build's optimizer has an entry, else the memory-bound formula of its
  /// `optimizer-step` option. Empty (every preset): the formula.
  /// pipeopt-calibrate measures each optimizer on a 256 x 256 f32
  /// parameter (median repetition). JSON "optimizer_s_per_element":
  /// {"sgd": s, ...} (each in [0, 1)).
  std::map<std::string, double> optimizerSecondsPerElement;
  /// Cores (CPU threads) of the device; 0 = not given. Informational: no
  /// cost formula reads it.
  int cores = 0;

  /// Peak FLOP/s for `typeKey`: the matrix table when `matrix`, else the
  /// vector table; missing keys fall back to the same table's "f32", then
  /// to the other table's entry. Never 0 for a valid device.
  double peakFlops(llvm::StringRef typeKey, bool matrix) const;
  /// Bytes/s at which an op moving `bytes` bytes moves them:
  /// cacheBytesPerSecond when both cache fields are > 0 and bytes <=
  /// cacheBytes, else memoryBytesPerSecond.
  double bytesPerSecondFor(double bytes) const;

  /// Checks the numbers so that every derived time is finite: memory
  /// bandwidth and every FLOP/s entry finite and >= 1, capacity finite and
  /// positive, an "f32" peak present, overhead in [0, 3600] s, cache bytes
  /// finite and >= 0, cache and contraction operand bandwidths 0 or finite
  /// and >= 1 bytes/s. The error
  /// ("device '<name>': <json key> ...") names the machine and the JSON key.
  llvm::Error validate(llvm::StringRef name) const;
};

/// Ranks placed consecutively onto nodes of `ranksPerNode` ranks. Ranks on
/// one node talk over `intraNode` (every rank has its own link,
/// NVSwitch-like). Ranks on different nodes go through NICs over
/// `interNode`: rank with local index i uses NIC i % nics() of its node,
/// and the simulator serializes inter-node transfers that share a NIC
/// direction (contention). The cost model and the partitioner read only
/// the links.
struct Topology {
  /// Ranks (devices running one pipeline rank each) per node, >= 1.
  int ranksPerNode = 8;
  /// Nodes of the machine; 0 = as many as the ranks need. Informational
  /// (no formula reads it): the placement above never runs out of nodes.
  int nodes = 0;
  /// NICs per node shared by inter-node transfers; 0 = one per rank.
  int nicsPerNode = 1;
  /// CPU cores the ranks of one node share, in ranks' worth of full speed
  /// (may be fractional: pipeopt-calibrate measures what R ranks busy at
  /// once achieve). 0 (every preset): a processor per rank. The
  /// simulator's event level runs k busy ranks of a node at
  /// min(1, coresPerNode / k) of their speed (processor sharing). Not
  /// Device::cores: that counts the threads of one device and no formula
  /// reads it. JSON "topology.cores_per_node" (flat "cores_per_node").
  double coresPerNode = 0;
  /// The ranks of a node are pinned to its cores (pipeopt-run --pin-ranks,
  /// its default when loopback ranks outnumber the cores): with
  /// coresPerNode c, the node has ceil(c) cores of c / ceil(c) ranks'
  /// worth each, and the event level assigns the node's ranks to them
  /// longest processing time first by their compute (as pipeopt-run does
  /// by measured CPU time; Graham 1969), then shares each core only among
  /// its own ranks. False: any busy rank may use any core. JSON
  /// "topology.pin_ranks" (bool; needs cores_per_node).
  bool pinRanks = false;
  Link intraNode;
  Link interNode;

  /// Node of `rank`.
  int nodeOf(int rank) const {
    return ranksPerNode > 0 ? rank / ranksPerNode : 0;
  }
  /// NICs per node in effect (nicsPerNode, or ranksPerNode for 0).
  int nicsInEffect() const;
  /// Global NIC index used by `rank` for inter-node traffic.
  int nicOf(int rank) const;
  /// Link from rank `a` to rank `b` (intraNode for a == b as well).
  const Link &between(int a, int b) const {
    return nodeOf(a) == nodeOf(b) ? intraNode : interNode;
  }
  /// True when some node holds more of `numRanks` ranks than coresPerNode
  /// (> 0) cores, so that core sharing can slow compute.
  bool sharesCores(int numRanks) const;
  /// Checks ranksPerNode >= 1, nodes and nicsPerNode >= 0, coresPerNode 0
  /// or in [0.01, 2^20], link latencies
  /// in [0, 3600] s and link bandwidths 0 (unlimited) or finite and >= 1
  /// bytes/s. Errors name the JSON key ("topology.intra_node.latency_s").
  llvm::Error validate() const;
};

/// What the simulator assumes on top of the hardware. The cost model and
/// the partitioner ignore these settings.
struct SimulationSettings {
  /// Speed relative to the cost table's reference device: a stage time t
  /// becomes t / computeSpeed (> 0). 1 when the cost table was computed for
  /// this machine's device (pipe-simulate, pipe-auto-schedule).
  double computeSpeed = 1.0;
  /// True: a rank computes while its send / recv engines move data.
  /// False: after a compute action the rank's next compute waits until
  /// every send of that action's results has finished.
  bool overlap = true;
  /// Data-parallel degree D >= 1: D replicas of the whole pipeline, each on
  /// its own P ranks, all-reduce their weight gradients after the backward
  /// pass. Pipeline rank r of replica d is global rank d * P + r, so the
  /// data-parallel peers of a rank may sit on other nodes. Only replica 0
  /// is simulated; the others run the same timeline, and those on the
  /// simulated ranks' nodes take their share of the node's cores
  /// (Topology::coresPerNode) at the event level.
  int dataParallel = 1;
  /// ZeRO stage of the data-parallel gradient exchange and optimizer
  /// (machine JSON "zero_stage", pipe-simulate `zero-stage=`): 0 = every
  /// rank all-reduces its gradient sums over the D replicas and runs the
  /// optimizer over all its parameters; 1 (ZeRO-1, optimizer-state
  /// sharding) = a reduce-scatter of the gradient sums, the optimizer over
  /// 1/D of the elements, then an all-gather of the updated weights. Only
  /// 0 and 1 are valid; with dataParallel == 1 both mean the same.
  int zeroStage = 0;
  /// Capacity of a data-parallel gradient bucket (bytes of the runtime's
  /// double gradient sums; pipeopt-run --bucket-mb, default 25 MiB): the
  /// sums a rank's action completes go into buckets of at most this many
  /// bytes, whose all-reduces over the D replicas start when the action
  /// ends (sim::planGradientReductions). > 0. Machine JSON "bucket_bytes",
  /// pipe-simulate `bucket-mb=`.
  double gradientBucketBytes = 25.0 * 1024 * 1024;
  /// Memory of one device (bytes) that a rank's peak activations plus
  /// weights must fit in; 0 = no limit; not set = the device's capacity.
  std::optional<double> memoryLimitBytes;
};

/// A machine: a named device kind, the topology connecting such devices
/// and the simulator's settings.
struct Machine {
  /// The preset's or the JSON file's name ("h100", "compute-fast/net-slow").
  std::string name;
  Device device;
  Topology topology;
  SimulationSettings simulation;

  /// The simulator's memory limit in bytes (0: none):
  /// simulation.memoryLimitBytes when set, else device.memoryCapacityBytes.
  double memoryLimitBytes() const;
  /// device.validate(name), then topology.validate().
  llvm::Error validate() const;
};

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

/// The two kinds of presets.
enum class PresetKind {
  /// A datasheet device and its node (h100, h200, a100, cpu): what the cost
  /// model's `device=` and a file's "base" name.
  Device,
  /// A simulator system relative to a cost table's reference device
  /// ("ideal" and the 3 x 3 grid "compute-*/net-*"): variations of one
  /// base, gridBase().
  System,
};

/// Names of the presets of `kind`: Device: "h100", "h200", "a100", "cpu";
/// System: "ideal", then the grid in presetGrid() order.
llvm::ArrayRef<llvm::StringRef> presetNames(PresetKind kind);

/// The device preset `name` (case-insensitive; "h100-sxm" etc. aliases
/// accepted, see docs/CostModel.md). Error "unknown device '<name>'
/// (expected one of h100, h200, a100, cpu, or a JSON file via
/// hardware=<path>)" otherwise.
llvm::Expected<Machine> getDevicePreset(llvm::StringRef name);

/// Any preset by name: a system preset (exact name) or a device preset.
/// Error "unknown system preset '<name>' (known: ideal, compute-slow/
/// net-slow, ..., h100, h200, a100, cpu)" otherwise.
llvm::Expected<Machine> getPreset(llvm::StringRef name);

/// The base of the system presets and of a system JSON without a preset:
/// an H100-class node (device of the h100 preset) running 2 pipeline ranks
/// (an 8-GPU node running two tensor-parallel groups of 4), 1 NIC per
/// node, free links (latency 0, unlimited bandwidth), compute speed 1,
/// overlap on, no memory limit. Named "custom".
Machine gridBase();

/// gridBase() with 2^20 ranks per node: free communication, speed 1.
/// Named "ideal".
Machine idealSystem();

/// The 3 x 3 grid of variations of gridBase(), named
/// "compute-{slow,medium,fast}/net-{slow,medium,fast}" (row-major: compute
/// outer). Numbers (tools/pipeopt-explore/README.md):
///  - compute speed: slow 0.5, medium 1.0 (H100 SXM, the reference of the
///    cost tables), fast 2.0 (a next-generation part);
///  - net-slow:   intra 64 GB/s, 10 us (PCIe 5 x16); inter 12.5 GB/s,
///                30 us (100 Gb/s Ethernet/RoCE), 1 NIC per node;
///  - net-medium: intra 300 GB/s, 5 us (NVLink, achieved p2p); inter
///                25 GB/s, 10 us (200 Gb/s InfiniBand), 1 NIC per node;
///  - net-fast:   intra 450 GB/s, 2 us (NVLink 4, one direction); inter
///                50 GB/s, 5 us (400 Gb/s NDR InfiniBand), one NIC per rank.
std::vector<Machine> presetGrid();

//===----------------------------------------------------------------------===//
// Machine JSON (docs/CostModel.md "Machine JSON")
//===----------------------------------------------------------------------===//

/// What a machine JSON is read for; decides the defaults, the required
/// keys and the prefix of error messages.
enum class MachineUse {
  /// A hardware file of the cost model (`hardware=`): it must define a
  /// device ("base" or a device key); without "base" the caller's preset
  /// is the base. "base" / "preset" name a device preset. Errors start
  /// with "hardware JSON: ".
  Hardware,
  /// A system of the simulator (`system=`, `--systems`): it needs a
  /// "name" unless its preset gives one; without a preset gridBase() is
  /// the base. "base" / "preset" name any preset. Errors start with
  /// "system config: " (or "system config [i]: " in an array).
  System,
};

/// Parses one machine JSON object. Keys not given keep the values of the
/// preset named by "base" (synonym "preset"), else of `base`, else of the
/// default of `use` (Hardware: a device named "custom" with empty tables,
/// 8 ranks per node, one NIC per rank, free links; System: gridBase()).
/// Accepted keys: docs/CostModel.md "Machine JSON" (the hardware keys, the
/// nested "topology" object and the simulator keys; the explorer's flat
/// "gpus_per_node", "nics_per_node", "intra_node" / "inter_node" with
/// "bandwidth_Bps" are accepted as aliases). Errors name the key;
/// `where` replaces the default prefix of `use` when not empty.
llvm::Expected<Machine> parseMachine(const llvm::json::Value &value,
                                     MachineUse use,
                                     const Machine *base = nullptr,
                                     llvm::StringRef where = {});

/// Parses system JSON text: one object, an array of objects, or
/// {"systems": [...]}, each read by parseMachine(MachineUse::System).
/// Errors: invalid JSON (duplicate keys included), an empty list, and
/// those of parseMachine, naming the entry ("system config [1]: ...").
llvm::Expected<std::vector<Machine>> parseSystems(llvm::StringRef json);

/// The machine of the device preset `preset`, with the hardware JSON file
/// `path` on top when `path` is not empty (the `device=` and `hardware=`
/// options of every pass and tool). Errors name the preset or the file:
/// "cannot read hardware file '<path>': ...", "invalid JSON in hardware
/// file '<path>': ...", "<path>: hardware JSON: ...".
llvm::Expected<Machine> loadMachine(llvm::StringRef preset,
                                    llvm::StringRef path = {});

/// The systems that `spec` names (the simulator's `system=`, the
/// explorer's `--systems` items): "grid" (the 9 presets of presetGrid()),
/// any preset name (getPreset), or a system JSON file (a path ending in
/// ".json", see parseSystems; errors "<path>: system config: ...").
llvm::Expected<std::vector<Machine>> loadSystems(llvm::StringRef spec);

/// Parses "80GB", "80 GiB", "1.5e9", "512MB", "1024" (bytes). Decimal SI
/// suffixes (kB, MB, GB, TB = 1e3..1e12) and binary ones (KiB..TiB); a bare
/// number is bytes. Negative, non-finite, malformed or >= 2^63 byte
/// strings are errors.
llvm::Expected<double> parseByteSize(llvm::StringRef text);

} // namespace machine
} // namespace pipeopt

#endif // PIPEOPT_MACHINE_MACHINE_H
