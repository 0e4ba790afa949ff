//===- Machine.cpp - Devices, topologies, links and presets ---------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// Preset numbers come from vendor datasheets; docs/CostModel.md lists each
// number with its source. Values marked "assumption" are not datasheet
// figures (launch overheads, link latencies) and should be measured and
// overridden with a machine JSON file where it matters.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Machine/Machine.h"

#include "MachineInternal.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

using namespace pipeopt;
using namespace pipeopt::machine;
using llvm::StringRef;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Limits that keep every derived time finite (docs/CostModel.md, "Machine
/// JSON"). Times are bytes / bandwidth and FLOP / rate with sizes below
/// 2^63 bytes: any rate of at least 1 per second gives finite seconds, and
/// no overhead or latency of a real system is anywhere near an hour.
static constexpr double kMinRate = 1.0;       // bytes/s or FLOP/s
static constexpr double kMaxSeconds = 3600.0; // overhead, latency

std::string machine::detail::formatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}
using machine::detail::formatNumber;

/// "must be ..." for a rate: finite and at least kMinRate (or exactly 0 when
/// `zeroIsUnlimited`).
static std::optional<std::string> checkRate(double v, StringRef unit,
                                            bool zeroIsUnlimited = false) {
  if ((std::isfinite(v) && v >= kMinRate) || (zeroIsUnlimited && v == 0))
    return std::nullopt;
  return llvm::formatv("must be {0}a positive number of {1} (finite, at "
                       "least 1), got {2}",
                       zeroIsUnlimited ? "0 (unlimited) or " : "", unit,
                       formatNumber(v))
      .str();
}

/// "must be ..." for a duration: finite, in [0, kMaxSeconds].
static std::optional<std::string> checkSeconds(double v) {
  if (std::isfinite(v) && v >= 0 && v <= kMaxSeconds)
    return std::nullopt;
  return "must be a number of seconds between 0 and 3600 (1 hour), got " +
         formatNumber(v);
}

//===----------------------------------------------------------------------===//
// Link, Device, Topology, Machine
//===----------------------------------------------------------------------===//

double Link::messageSeconds(double bytes, bool idleReceiver) const {
  double latency = idleReceiver
                       ? std::max(latencySeconds, idleReceiverLatencySeconds)
                       : latencySeconds;
  return latency + (bytesPerSecond > 0 ? bytes / bytesPerSecond : 0.0);
}

double Link::senderSeconds(bool idleReceiver) const {
  return idleReceiver ? std::max(senderOverheadSeconds,
                                 idleReceiverSenderOverheadSeconds)
                      : senderOverheadSeconds;
}

double Link::seconds(double bytes) const {
  if (bytes <= 0)
    return 0;
  return messageSeconds(bytes);
}

double Device::peakFlops(StringRef key, bool matrix) const {
  const auto &primary = matrix ? matrixFlops : vectorFlops;
  const auto &secondary = matrix ? vectorFlops : matrixFlops;
  for (const auto *table : {&primary, &secondary})
    for (std::string k : {key.str(), std::string("f32")}) {
      auto it = table->find(k);
      if (it != table->end() && it->second > 0)
        return it->second;
    }
  return 0;
}

/// A device rate that may be 0 (`zeroMeans`, e.g. "no cache") or else must
/// be a finite number of bytes/s, at least 1. The error names the device
/// and the JSON key.
static llvm::Error checkOptionalRate(StringRef device, StringRef key,
                                     double value, StringRef zeroMeans) {
  if (value == 0 || !checkRate(value, "bytes/s"))
    return llvm::Error::success();
  return makeError(llvm::formatv(
      "device '{0}': {1} must be 0 ({2}) or a number of bytes/s (finite, at "
      "least 1), got {3}",
      device, key, zeroMeans, formatNumber(value)));
}

llvm::Error Device::validate(StringRef name) const {
  if (auto bad = checkRate(memoryBytesPerSecond, "bytes/s"))
    return makeError(
        llvm::formatv("device '{0}': memory_bandwidth {1}", name, *bad));
  // A fraction of a byte would be shown (and compared) as "1 B".
  if (!(std::isfinite(memoryCapacityBytes) && memoryCapacityBytes >= 1))
    return makeError(llvm::formatv(
        "device '{0}': memory_capacity must be a number of bytes, at least "
        "1, got {1}",
        name, formatNumber(memoryCapacityBytes)));
  if (auto bad = checkSeconds(opOverheadSeconds))
    return makeError(
        llvm::formatv("device '{0}': op_overhead_s {1}", name, *bad));
  for (auto [key, table] : {std::make_pair("peak_flops", &matrixFlops),
                            std::make_pair("vector_flops", &vectorFlops)})
    for (const auto &[dtype, value] : *table)
      if (!std::isfinite(value) || value < kMinRate)
        return makeError(llvm::formatv(
            "device '{0}': {1}.{2} must be positive (a finite number of "
            "FLOP/s, at least 1), got {3}",
            name, key, dtype, formatNumber(value)));
  if (peakFlops("f32", true) <= 0 || peakFlops("f32", false) <= 0)
    return makeError(llvm::formatv(
        "device '{0}': needs an \"f32\" entry in peak_flops", name));
  if (!std::isfinite(cacheBytes) || cacheBytes < 0)
    return makeError(llvm::formatv(
        "device '{0}': cache_bytes must be a number of bytes >= 0 (0: no "
        "cache), got {1}",
        name, formatNumber(cacheBytes)));
  if (llvm::Error e = checkOptionalRate(name, "cache_bandwidth",
                                        cacheBytesPerSecond, "no cache"))
    return e;
  if ((cacheBytes > 0) != (cacheBytesPerSecond > 0))
    return makeError(llvm::formatv(
        "device '{0}': cache_bytes and cache_bandwidth go together (an op "
        "whose bytes fit cache_bytes moves them at cache_bandwidth): give "
        "both or neither, got cache_bytes {1} and cache_bandwidth {2}",
        name, formatNumber(cacheBytes), formatNumber(cacheBytesPerSecond)));
  if (llvm::Error e =
          checkOptionalRate(name, "contraction_operand_bandwidth",
                            contractionOperandBytesPerSecond, "not modeled"))
    return e;
  if (llvm::Error e =
          checkOptionalRate(name, "input_copy_bandwidth",
                            inputCopyBytesPerSecond, "inputs are not copied"))
    return e;
  auto perElement = [&](llvm::StringRef key, double v) -> llvm::Error {
    if (v >= 0 && v < 1)
      return llvm::Error::success();
    return makeError(llvm::formatv(
        "device '{0}': {1} must be seconds per element in [0, 1) (0: not "
        "charged), got {2}",
        name, key, formatNumber(v)));
  };
  if (llvm::Error e = perElement("gradient_accumulate_s_per_element",
                                 gradientAccumulateSecondsPerElement))
    return e;
  for (const auto &[kind, v] : optimizerSecondsPerElement)
    if (llvm::Error e = perElement("optimizer_s_per_element." + kind, v))
      return e;
  if (cores < 0)
    return makeError(llvm::formatv(
        "device '{0}': cores must be >= 0 (0: not given), got {1}", name,
        cores));
  return llvm::Error::success();
}

double Device::bytesPerSecondFor(double bytes) const {
  if (cacheBytesPerSecond > 0 && cacheBytes > 0 && bytes <= cacheBytes)
    return cacheBytesPerSecond;
  return memoryBytesPerSecond;
}

/// The smallest non-zero cores per node: 1% of a core (a slowdown of 100x
/// per busy rank) keeps every simulated time finite.
static constexpr double kMinCoresPerNode = 0.01;
static constexpr double kMaxCoresPerNode = 1 << 20;

bool Topology::sharesCores(int numRanks) const {
  if (coresPerNode <= 0 || numRanks <= 0)
    return false;
  int perNode = std::min(std::max(ranksPerNode, 1), numRanks);
  return perNode > coresPerNode;
}

int Topology::nicsInEffect() const {
  return nicsPerNode > 0 ? nicsPerNode : std::max(ranksPerNode, 1);
}

int Topology::nicOf(int rank) const {
  int perNode = std::max(ranksPerNode, 1);
  int nics = nicsInEffect();
  return nodeOf(rank) * nics + (rank % perNode) % nics;
}

llvm::Error Topology::validate() const {
  if (ranksPerNode < 1)
    return makeError(llvm::formatv(
        "topology.ranks_per_node must be >= 1, got {0}", ranksPerNode));
  if (nodes < 0)
    return makeError(llvm::formatv(
        "topology.nodes must be >= 0 (0: as many as needed), got {0}", nodes));
  if (nicsPerNode < 0)
    return makeError(llvm::formatv(
        "topology.nics_per_node must be >= 0 (0: one per rank), got {0}",
        nicsPerNode));
  if (coresPerNode != 0 &&
      !(std::isfinite(coresPerNode) && coresPerNode >= kMinCoresPerNode &&
        coresPerNode <= kMaxCoresPerNode))
    return makeError(
        "topology.cores_per_node must be 0 (a processor per rank) or a "
        "number of cores between 0.01 and 1048576, got " +
        formatNumber(coresPerNode));
  if (pinRanks && coresPerNode == 0)
    return makeError("topology.pin_ranks needs topology.cores_per_node (the "
                     "cores the ranks are pinned to)");
  for (auto [key, l] : {std::make_pair("intra_node", &intraNode),
                        std::make_pair("inter_node", &interNode)}) {
    if (auto bad = checkSeconds(l->latencySeconds))
      return makeError(llvm::formatv("topology.{0}.latency_s {1}", key, *bad));
    if (auto bad = checkSeconds(l->senderOverheadSeconds))
      return makeError(
          llvm::formatv("topology.{0}.sender_overhead_s {1}", key, *bad));
    if (auto bad = checkSeconds(l->idleReceiverLatencySeconds))
      return makeError(
          llvm::formatv("topology.{0}.idle_receiver_latency_s {1}", key, *bad));
    if (auto bad = checkSeconds(l->idleReceiverSenderOverheadSeconds))
      return makeError(llvm::formatv(
          "topology.{0}.idle_receiver_sender_overhead_s {1}", key, *bad));
    if (auto bad = checkRate(l->bytesPerSecond, "bytes/s",
                             /*zeroIsUnlimited=*/true))
      return makeError(llvm::formatv("topology.{0}.bandwidth {1}", key, *bad));
  }
  return llvm::Error::success();
}

double Machine::memoryLimitBytes() const {
  return simulation.memoryLimitBytes ? *simulation.memoryLimitBytes
                                     : device.memoryCapacityBytes;
}

llvm::Error Machine::validate() const {
  if (llvm::Error err = device.validate(name))
    return err;
  return topology.validate();
}

//===----------------------------------------------------------------------===//
// Device presets (sources: docs/CostModel.md)
//===----------------------------------------------------------------------===//

static Machine makeH100() {
  // NVIDIA H100 Tensor Core GPU datasheet, SXM5 column. Tensor-core figures
  // are listed "with sparsity"; dense = half.
  Machine m;
  m.name = "h100";
  Device &d = m.device;
  d.matrixFlops = {{"f64", 67e12},     // FP64 Tensor Core
                   {"f32", 67e12},     // FP32 (no TF32: PyTorch's default)
                   {"tf32", 494.5e12}, // TF32 Tensor Core 989 / 2
                   {"bf16", 989.5e12}, // BF16 Tensor Core 1,979 / 2
                   {"f16", 989.5e12},  // FP16 Tensor Core 1,979 / 2
                   {"f8", 1979e12},    // FP8 Tensor Core 3,958 / 2
                   {"i8", 1979e12}};   // INT8 Tensor Core 3,958 TOPS / 2
  d.vectorFlops = {{"f64", 34e12}, {"f32", 67e12}};
  d.memoryBytesPerSecond = 3.35e12; // HBM3 3.35 TB/s
  d.memoryCapacityBytes = 80e9;     // 80 GB
  d.opOverheadSeconds = 2e-6;       // assumption: kernel launch
  // DGX H100: 8 GPUs, NVLink 4 900 GB/s total = 450 GB/s per direction;
  // 8x ConnectX-7 400 Gb/s InfiniBand = 50 GB/s per GPU, one NIC per GPU.
  m.topology.ranksPerNode = 8;
  m.topology.nicsPerNode = 0;
  m.topology.intraNode = {3e-6, 450e9};
  m.topology.interNode = {5e-6, 50e9};
  return m;
}

static Machine makeH200() {
  // NVIDIA H200 Tensor Core GPU datasheet, SXM column (compute as H100 SXM).
  Machine m = makeH100();
  m.name = "h200";
  m.device.memoryBytesPerSecond = 4.8e12; // HBM3e 4.8 TB/s
  m.device.memoryCapacityBytes = 141e9;   // 141 GB
  return m;
}

static Machine makeA100() {
  // NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column.
  Machine m;
  m.name = "a100";
  Device &d = m.device;
  d.matrixFlops = {{"f64", 19.5e12}, // FP64 Tensor Core
                   {"f32", 19.5e12}, // FP32
                   {"tf32", 156e12}, // TF32 Tensor Core (dense)
                   {"bf16", 312e12}, // BF16 Tensor Core (dense)
                   {"f16", 312e12},  // FP16 Tensor Core (dense)
                   {"i8", 624e12}};  // INT8 Tensor Core (dense)
  d.vectorFlops = {{"f64", 9.7e12}, {"f32", 19.5e12}};
  d.memoryBytesPerSecond = 2.039e12; // HBM2e 2,039 GB/s
  d.memoryCapacityBytes = 80e9;      // 80 GB
  d.opOverheadSeconds = 2e-6;        // assumption
  // DGX A100: NVLink 3 600 GB/s total = 300 GB/s per direction; 8x
  // ConnectX-6 200 Gb/s HDR InfiniBand = 25 GB/s per GPU.
  m.topology.ranksPerNode = 8;
  m.topology.nicsPerNode = 0;
  m.topology.intraNode = {3e-6, 300e9};
  m.topology.interNode = {5e-6, 25e9};
  return m;
}

static Machine makeCpu() {
  // One AMD EPYC 9654 socket (AMD product page): 96 cores, 2.4 GHz base,
  // 12 channels DDR5-4800 = 460.8 GB/s. Peak = cores x base clock x FLOP
  // per cycle (Zen 4: two 256-bit FMA pipes = 32 f32 / 16 f64 FLOP/cycle).
  Machine m;
  m.name = "cpu";
  Device &d = m.device;
  d.matrixFlops = {{"f64", 96 * 2.4e9 * 16}, {"f32", 96 * 2.4e9 * 32}};
  d.vectorFlops = d.matrixFlops;
  d.memoryBytesPerSecond = 460.8e9;
  d.memoryCapacityBytes = 384e9; // assumption: 12 x 32 GB DIMMs
  d.opOverheadSeconds = 1e-6;    // assumption: parallel-region fork/join
  d.cores = 96;
  // Two sockets per node; assumptions: shared-memory copy between sockets
  // and 100 Gb Ethernet between nodes.
  m.topology.ranksPerNode = 2;
  m.topology.nicsPerNode = 0;
  m.topology.intraNode = {1e-6, 50e9};
  m.topology.interNode = {10e-6, 12.5e9};
  return m;
}

namespace {
/// One row of the device preset table.
struct DevicePreset {
  StringRef name;
  std::initializer_list<StringRef> aliases;
  Machine (*make)();
};
} // namespace

static const DevicePreset kDevicePresets[] = {
    {"h100", {"h100-sxm", "h100-sxm5"}, makeH100},
    {"h200", {"h200-sxm"}, makeH200},
    {"a100", {"a100-sxm", "a100-80gb"}, makeA100},
    {"cpu", {"epyc-9654"}, makeCpu},
};

//===----------------------------------------------------------------------===//
// System presets: variations of gridBase()
//===----------------------------------------------------------------------===//

Machine machine::gridBase() {
  Machine m = makeH100();
  m.name = "custom";
  m.topology.ranksPerNode = 2;
  m.topology.nicsPerNode = 1;
  m.topology.intraNode = {0, 0};
  m.topology.interNode = {0, 0};
  m.simulation = SimulationSettings();
  m.simulation.memoryLimitBytes = 0;
  return m;
}

Machine machine::idealSystem() {
  Machine m = gridBase();
  m.name = "ideal";
  m.topology.ranksPerNode = 1 << 20;
  return m;
}

namespace {
/// A compute variation of the grid: speed relative to the reference.
struct ComputeVariation {
  StringRef name;
  double computeSpeed;
};
/// A network variation of the grid: links and NICs per node.
struct NetworkVariation {
  StringRef name;
  Link intraNode, interNode;
  int nicsPerNode;
};
} // namespace

static const ComputeVariation kComputeVariations[] = {
    {"slow", 0.5}, {"medium", 1.0}, {"fast", 2.0}};
static const NetworkVariation kNetworkVariations[] = {
    {"slow", {10e-6, 64e9}, {30e-6, 12.5e9}, 1},
    {"medium", {5e-6, 300e9}, {10e-6, 25e9}, 1},
    {"fast", {2e-6, 450e9}, {5e-6, 50e9}, 2},
};

std::vector<Machine> machine::presetGrid() {
  std::vector<Machine> out;
  for (const ComputeVariation &c : kComputeVariations)
    for (const NetworkVariation &n : kNetworkVariations) {
      Machine m = gridBase();
      m.name = llvm::formatv("compute-{0}/net-{1}", c.name, n.name).str();
      m.simulation.computeSpeed = c.computeSpeed;
      m.topology.nicsPerNode = n.nicsPerNode;
      m.topology.intraNode = n.intraNode;
      m.topology.interNode = n.interNode;
      out.push_back(std::move(m));
    }
  return out;
}

//===----------------------------------------------------------------------===//
// Lookup
//===----------------------------------------------------------------------===//

llvm::ArrayRef<StringRef> machine::presetNames(PresetKind kind) {
  static const StringRef devices[] = {"h100", "h200", "a100", "cpu"};
  static const std::vector<std::string> systemStrings = [] {
    std::vector<std::string> names{"ideal"};
    for (const Machine &m : presetGrid())
      names.push_back(m.name);
    return names;
  }();
  static const std::vector<StringRef> systems(systemStrings.begin(),
                                              systemStrings.end());
  if (kind == PresetKind::Device)
    return devices;
  return systems;
}

llvm::Expected<Machine> machine::getDevicePreset(StringRef name) {
  std::string lower = name.lower();
  for (const DevicePreset &p : kDevicePresets)
    if (lower == p.name || llvm::is_contained(p.aliases, StringRef(lower)))
      return p.make();
  return makeError(llvm::formatv(
      "unknown device '{0}' (expected one of {1}, or a JSON file via "
      "hardware=<path>)",
      name, llvm::join(presetNames(PresetKind::Device), ", ")));
}

llvm::Expected<Machine> machine::getPreset(StringRef name) {
  if (name == "ideal")
    return idealSystem();
  for (Machine &m : presetGrid())
    if (m.name == name)
      return std::move(m);
  llvm::Expected<Machine> device = getDevicePreset(name);
  if (device)
    return device;
  llvm::consumeError(device.takeError());
  std::string known = llvm::join(presetNames(PresetKind::System), ", ");
  for (StringRef d : presetNames(PresetKind::Device))
    known += ", " + d.str();
  return makeError(
      llvm::formatv("unknown system preset '{0}' (known: {1})", name, known));
}
