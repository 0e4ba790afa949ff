//===- Hardware.cpp - Device presets, hardware and profile JSON -*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
//
// Preset numbers come from vendor datasheets; docs/CostModel.md lists each
// number with its source. Values marked "assumption" are not datasheet
// figures (launch overheads, link latencies) and should be measured and
// overridden with a hardware JSON file where it matters.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Analysis/CostModel.h"
#include "pipeopt/Support/JSONKeys.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>

using namespace pipeopt;
using namespace pipeopt::cost;
using llvm::StringRef;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static bool isPositiveFinite(double v) { return std::isfinite(v) && v > 0; }

/// Limits that keep every derived time finite (docs/CostModel.md, "Hardware
/// JSON"). Times are bytes / bandwidth and FLOP / rate with sizes below
/// 2^63 bytes: any rate of at least 1 per second gives finite seconds, and
/// no overhead or latency of a real system is anywhere near an hour.
static constexpr double kMinRate = 1.0;          // bytes/s or FLOP/s
static constexpr double kMaxSeconds = 3600.0;    // overhead, latency

/// `v` for messages ("1e+308", "-1", "inf").
static std::string formatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

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
// DeviceSpec / LinkSpec / Topology
//===----------------------------------------------------------------------===//

double DeviceSpec::peakFlops(StringRef key, bool matrix) const {
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

double DeviceSpec::bandwidthFor(double bytes) const {
  if (cacheBandwidth > 0 && cacheBytes > 0 && bytes <= cacheBytes)
    return cacheBandwidth;
  return memoryBandwidth;
}

llvm::Error DeviceSpec::validate() const {
  if (auto bad = checkRate(memoryBandwidth, "bytes/s"))
    return makeError(
        llvm::formatv("device '{0}': memory_bandwidth {1}", name, *bad));
  if (!isPositiveFinite(memoryCapacity))
    return makeError(llvm::formatv(
        "device '{0}': memory_capacity must be a positive number of bytes, "
        "got {1}",
        name, formatNumber(memoryCapacity)));
  if (!std::isfinite(cacheBytes) || cacheBytes < 0)
    return makeError(llvm::formatv(
        "device '{0}': cache_bytes must be a number of bytes >= 0 (0: no "
        "cache), got {1}",
        name, formatNumber(cacheBytes)));
  if (cacheBandwidth != 0 && checkRate(cacheBandwidth, "bytes/s"))
    return makeError(llvm::formatv(
        "device '{0}': cache_bandwidth must be 0 (no cache) or a number of "
        "bytes/s (finite, at least 1), got {1}",
        name, formatNumber(cacheBandwidth)));
  if (contractionOperandBandwidth != 0 &&
      checkRate(contractionOperandBandwidth, "bytes/s"))
    return makeError(llvm::formatv(
        "device '{0}': contraction_operand_bandwidth must be 0 (not "
        "modeled) or a number of bytes/s (finite, at least 1), got {1}",
        name, formatNumber(contractionOperandBandwidth)));
  if (auto bad = checkSeconds(opOverhead))
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
  return llvm::Error::success();
}

double LinkSpec::seconds(double bytes) const {
  if (bytes <= 0)
    return 0;
  return latency + (bandwidth > 0 ? bytes / bandwidth : 0);
}

LinkSpec Topology::between(int a, int b) const {
  int perNode = std::max(ranksPerNode, 1);
  return a / perNode == b / perNode ? intraNode : interNode;
}

llvm::Error Topology::validate() const {
  if (ranksPerNode < 1)
    return makeError(llvm::formatv(
        "topology.ranks_per_node must be >= 1, got {0}", ranksPerNode));
  if (coresPerNode != 0 &&
      !(std::isfinite(coresPerNode) && coresPerNode >= 0.01 &&
        coresPerNode <= 1048576))
    return makeError(
        "topology.cores_per_node must be 0 (a processor per rank) or a "
        "number of cores between 0.01 and 1048576, got " +
        formatNumber(coresPerNode));
  for (auto [key, l] : {std::make_pair("intra_node", &intraNode),
                        std::make_pair("inter_node", &interNode)}) {
    if (auto bad = checkSeconds(l->latency))
      return makeError(
          llvm::formatv("topology.{0}.latency_s {1}", key, *bad));
    if (auto bad = checkRate(l->bandwidth, "bytes/s",
                             /*zeroIsUnlimited=*/true))
      return makeError(
          llvm::formatv("topology.{0}.bandwidth {1}", key, *bad));
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Presets (sources: docs/CostModel.md)
//===----------------------------------------------------------------------===//

llvm::ArrayRef<StringRef> cost::presetNames() {
  static const StringRef names[] = {"h100", "h200", "a100", "cpu"};
  return names;
}

static Hardware makeH100() {
  // NVIDIA H100 Tensor Core GPU datasheet, SXM5 column. Tensor-core figures
  // are listed "with sparsity"; dense = half.
  Hardware hw;
  DeviceSpec &d = hw.device;
  d.name = "h100";
  d.matrixFlops = {{"f64", 67e12},     // FP64 Tensor Core
                   {"f32", 67e12},     // FP32 (no TF32: PyTorch's default)
                   {"tf32", 494.5e12}, // TF32 Tensor Core 989 / 2
                   {"bf16", 989.5e12}, // BF16 Tensor Core 1,979 / 2
                   {"f16", 989.5e12},  // FP16 Tensor Core 1,979 / 2
                   {"f8", 1979e12},    // FP8 Tensor Core 3,958 / 2
                   {"i8", 1979e12}};   // INT8 Tensor Core 3,958 TOPS / 2
  d.vectorFlops = {{"f64", 34e12}, {"f32", 67e12}};
  d.memoryBandwidth = 3.35e12; // HBM3 3.35 TB/s
  d.memoryCapacity = 80e9;     // 80 GB
  d.opOverhead = 2e-6;         // assumption: kernel launch
  // DGX H100: 8 GPUs, NVLink 4 900 GB/s total = 450 GB/s per direction;
  // 8x ConnectX-7 400 Gb/s InfiniBand = 50 GB/s per GPU.
  hw.topology.ranksPerNode = 8;
  hw.topology.intraNode = {3e-6, 450e9};
  hw.topology.interNode = {5e-6, 50e9};
  return hw;
}

static Hardware makeH200() {
  // NVIDIA H200 Tensor Core GPU datasheet, SXM column (compute as H100 SXM).
  Hardware hw = makeH100();
  hw.device.name = "h200";
  hw.device.memoryBandwidth = 4.8e12; // HBM3e 4.8 TB/s
  hw.device.memoryCapacity = 141e9;   // 141 GB
  return hw;
}

static Hardware makeA100() {
  // NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column.
  Hardware hw;
  DeviceSpec &d = hw.device;
  d.name = "a100";
  d.matrixFlops = {{"f64", 19.5e12}, // FP64 Tensor Core
                   {"f32", 19.5e12}, // FP32
                   {"tf32", 156e12}, // TF32 Tensor Core (dense)
                   {"bf16", 312e12}, // BF16 Tensor Core (dense)
                   {"f16", 312e12},  // FP16 Tensor Core (dense)
                   {"i8", 624e12}};  // INT8 Tensor Core (dense)
  d.vectorFlops = {{"f64", 9.7e12}, {"f32", 19.5e12}};
  d.memoryBandwidth = 2.039e12; // HBM2e 2,039 GB/s
  d.memoryCapacity = 80e9;      // 80 GB
  d.opOverhead = 2e-6;          // assumption
  // DGX A100: NVLink 3 600 GB/s total = 300 GB/s per direction; 8x
  // ConnectX-6 200 Gb/s HDR InfiniBand = 25 GB/s per GPU.
  hw.topology.ranksPerNode = 8;
  hw.topology.intraNode = {3e-6, 300e9};
  hw.topology.interNode = {5e-6, 25e9};
  return hw;
}

static Hardware makeCpu() {
  // One AMD EPYC 9654 socket (AMD product page): 96 cores, 2.4 GHz base,
  // 12 channels DDR5-4800 = 460.8 GB/s. Peak = cores x base clock x FLOP
  // per cycle (Zen 4: two 256-bit FMA pipes = 32 f32 / 16 f64 FLOP/cycle).
  Hardware hw;
  DeviceSpec &d = hw.device;
  d.name = "cpu";
  d.matrixFlops = {{"f64", 96 * 2.4e9 * 16}, {"f32", 96 * 2.4e9 * 32}};
  d.vectorFlops = d.matrixFlops;
  d.memoryBandwidth = 460.8e9;
  d.memoryCapacity = 384e9; // assumption: 12 x 32 GB DIMMs
  d.opOverhead = 1e-6;      // assumption: parallel-region fork/join
  // Two sockets per node; assumptions: shared-memory copy between sockets
  // and 100 Gb Ethernet between nodes.
  hw.topology.ranksPerNode = 2;
  hw.topology.intraNode = {1e-6, 50e9};
  hw.topology.interNode = {10e-6, 12.5e9};
  return hw;
}

llvm::Expected<Hardware> cost::getPreset(StringRef name) {
  std::string lower = name.lower();
  StringRef n(lower);
  if (n == "h100" || n == "h100-sxm" || n == "h100-sxm5")
    return makeH100();
  if (n == "h200" || n == "h200-sxm")
    return makeH200();
  if (n == "a100" || n == "a100-sxm" || n == "a100-80gb")
    return makeA100();
  if (n == "cpu" || n == "epyc-9654")
    return makeCpu();
  return makeError(llvm::formatv(
      "unknown device '{0}' (expected one of {1}, or a JSON file via "
      "hardware=<path>)",
      name, llvm::join(presetNames(), ", ")));
}

//===----------------------------------------------------------------------===//
// Byte sizes
//===----------------------------------------------------------------------===//

llvm::Expected<double> cost::parseByteSize(StringRef text) {
  StringRef t = text.trim();
  size_t numEnd = 0;
  while (numEnd < t.size() &&
         (llvm::isDigit(t[numEnd]) || t[numEnd] == '.' || t[numEnd] == 'e' ||
          t[numEnd] == 'E' || t[numEnd] == '+' || t[numEnd] == '-')) {
    // 'e' only as an exponent: must be followed by a digit or sign.
    if ((t[numEnd] == 'e' || t[numEnd] == 'E') &&
        (numEnd + 1 >= t.size() ||
         !(llvm::isDigit(t[numEnd + 1]) || t[numEnd + 1] == '+' ||
           t[numEnd + 1] == '-')))
      break;
    ++numEnd;
  }
  StringRef num = t.take_front(numEnd);
  StringRef suffix = t.drop_front(numEnd).trim();
  double value;
  if (num.empty() || num.getAsDouble(value))
    return makeError(llvm::formatv("invalid byte size '{0}' (expected e.g. "
                                   "80GB, 512MiB or a number of bytes)",
                                   text));
  std::string s = suffix.lower();
  double scale = 1;
  if (s.empty() || s == "b")
    scale = 1;
  else if (s == "k" || s == "kb")
    scale = 1e3;
  else if (s == "m" || s == "mb")
    scale = 1e6;
  else if (s == "g" || s == "gb")
    scale = 1e9;
  else if (s == "t" || s == "tb")
    scale = 1e12;
  else if (s == "kib")
    scale = 1024.0;
  else if (s == "mib")
    scale = 1024.0 * 1024;
  else if (s == "gib")
    scale = 1024.0 * 1024 * 1024;
  else if (s == "tib")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    return makeError(llvm::formatv("invalid byte size '{0}': unknown suffix "
                                   "'{1}' (use B, kB, MB, GB, TB, KiB, MiB, "
                                   "GiB or TiB)",
                                   text, suffix));
  double bytes = value * scale;
  if (!std::isfinite(bytes))
    return makeError(
        llvm::formatv("invalid byte size '{0}': must be finite", text));
  if (bytes < 0)
    return makeError(
        llvm::formatv("invalid byte size '{0}': must be >= 0", text));
  // Byte counts are used as (and compared with) 64-bit integers: a size of
  // 2^63 bytes (8 EiB) or more is an overflow, not a generous limit.
  if (bytes >= 0x1p63)
    return makeError(llvm::formatv(
        "invalid byte size '{0}': too large (the limit is 2^63 bytes)", text));
  return bytes;
}

//===----------------------------------------------------------------------===//
// Hardware JSON
//===----------------------------------------------------------------------===//

/// "a number", "a string", ... for the "got ..." part of type errors.
static StringRef kindOf(const llvm::json::Value &v) {
  switch (v.kind()) {
  case llvm::json::Value::Null:
    return "null";
  case llvm::json::Value::Boolean:
    return "a boolean";
  case llvm::json::Value::Number:
    return "a number";
  case llvm::json::Value::String:
    return "a string";
  case llvm::json::Value::Array:
    return "an array";
  case llvm::json::Value::Object:
    return "an object";
  }
  return "a value";
}

namespace {
/// Small helper that reads typed keys of one JSON object and remembers the
/// first error with its key path.
struct ObjectReader {
  const llvm::json::Object &obj;
  std::string path;
  std::string error;

  bool ok() const { return error.empty(); }
  void fail(const llvm::Twine &msg) {
    if (error.empty())
      error = msg.str();
  }

  /// Reads a number (or a byte-size string when `bytes`); returns false when
  /// absent.
  bool number(StringRef key, double &out, bool bytes = false) {
    const llvm::json::Value *v = obj.get(key);
    if (!v)
      return false;
    if (auto d = v->getAsNumber()) {
      if (bytes && *d >= 0x1p63) {
        fail(path + key + ": too large (the limit is 2^63 bytes)");
        return false;
      }
      out = *d;
      return true;
    }
    if (bytes) {
      if (auto s = v->getAsString()) {
        auto parsed = parseByteSize(*s);
        if (!parsed) {
          fail(path + key + ": " + llvm::toString(parsed.takeError()));
          return false;
        }
        out = *parsed;
        return true;
      }
    }
    fail(path + key +
         (bytes ? ": expected a number or a size string (e.g. \"80GB\")"
                : ": expected a number") +
         ", got " + kindOf(*v));
    return false;
  }

  bool integer(StringRef key, int &out) {
    const llvm::json::Value *v = obj.get(key);
    if (!v)
      return false;
    if (auto i = v->getAsInteger()) {
      // Checked before narrowing (no silent truncation to 32 bits).
      if (*i < std::numeric_limits<int>::min() ||
          *i > std::numeric_limits<int>::max()) {
        fail(path + key + ": integer out of range, got " + std::to_string(*i));
        return false;
      }
      out = static_cast<int>(*i);
      return true;
    }
    fail(path + key + ": expected an integer, got " +
         (v->getAsNumber() ? "a non-integral number" : kindOf(*v)));
    return false;
  }

  void table(StringRef key, std::map<std::string, double> &out) {
    const llvm::json::Value *v = obj.get(key);
    if (!v)
      return;
    const llvm::json::Object *t = v->getAsObject();
    if (!t) {
      fail(path + key + ": expected an object {\"f32\": FLOP/s, ...}, got " +
           kindOf(*v));
      return;
    }
    // The element-type keys the cost model looks up (CostModel.cpp).
    if (auto bad = unknownKey(*t, {"f64", "f32", "tf32", "bf16", "f16", "f8",
                                   "i32", "i8"},
                              path + key.str())) {
      fail(*bad);
      return;
    }
    for (const auto &[k, val] : *t) {
      auto d = val.getAsNumber();
      if (!d) {
        fail(path + key + "." + k.str() + ": expected a number (FLOP/s), got " +
             kindOf(val));
        return;
      }
      out[k.str()] = *d;
    }
  }

  void link(StringRef key, LinkSpec &out) {
    const llvm::json::Value *v = obj.get(key);
    if (!v)
      return;
    const llvm::json::Object *o = v->getAsObject();
    if (!o) {
      fail(path + key +
           ": expected an object {\"latency_s\", \"bandwidth\"}, got " +
           kindOf(*v));
      return;
    }
    if (auto bad = unknownKey(*o, {"latency_s", "bandwidth"}, path + key.str())) {
      fail(*bad);
      return;
    }
    ObjectReader r{*o, path + key.str() + "."};
    r.number("latency_s", out.latency);
    r.number("bandwidth", out.bandwidth);
    if (!r.ok())
      fail(r.error);
  }
};
} // namespace

llvm::Expected<Hardware> cost::parseHardware(const llvm::json::Value &value,
                                             const Hardware *base) {
  const llvm::json::Object *obj = value.getAsObject();
  if (!obj)
    return makeError("hardware JSON: expected an object at the top level");
  // The string keys are type-checked before anything is read: a "base" that
  // is not a string would otherwise be skipped and the caller's preset used.
  for (StringRef key : {"base", "name", "description"}) {
    const llvm::json::Value *v = obj->get(key);
    if (!v)
      continue;
    std::optional<StringRef> str = v->getAsString();
    if (!str)
      return makeError("hardware JSON: " + key + ": expected a string" +
                       (key == "base" ? " (a preset name: " +
                                            llvm::join(presetNames(), ", ") +
                                            ")"
                                      : std::string()) +
                       ", got " + kindOf(*v));
    if (key == "name" && str->trim().empty())
      return makeError("hardware JSON: name: expected a non-empty string");
  }
  Hardware hw;
  if (auto baseName = obj->getString("base")) {
    auto preset = getPreset(*baseName);
    if (!preset)
      return makeError("hardware JSON: base: " +
                       llvm::toString(preset.takeError()));
    hw = *preset;
  } else if (base) {
    hw = *base;
  } else {
    hw.device.name = "custom";
  }
  if (auto name = obj->getString("name"))
    hw.device.name = name->str();

  ObjectReader r{*obj, ""};
  // "peak_flops" is the matrix table; "vector_flops" defaults to it when the
  // file gives no base.
  bool hadVector = obj->get("vector_flops") != nullptr;
  if (obj->get("peak_flops") && !obj->getString("base") && !base)
    hw.device.matrixFlops.clear();
  r.table("peak_flops", hw.device.matrixFlops);
  r.table("vector_flops", hw.device.vectorFlops);
  if (!hadVector && hw.device.vectorFlops.empty())
    hw.device.vectorFlops = hw.device.matrixFlops;
  r.number("memory_bandwidth", hw.device.memoryBandwidth, /*bytes=*/true);
  r.number("memory_capacity", hw.device.memoryCapacity, /*bytes=*/true);
  r.number("op_overhead_s", hw.device.opOverhead);
  r.number("cache_bytes", hw.device.cacheBytes, /*bytes=*/true);
  r.number("cache_bandwidth", hw.device.cacheBandwidth, /*bytes=*/true);
  r.number("contraction_operand_bandwidth",
           hw.device.contractionOperandBandwidth, /*bytes=*/true);
  if (const llvm::json::Value *t = obj->get("topology")) {
    const llvm::json::Object *to = t->getAsObject();
    if (!to) {
      r.fail(("topology: expected an object, got " + kindOf(*t)).str());
    } else {
      if (auto bad = unknownKey(*to, {"ranks_per_node", "gpus_per_node",
                                      "cores_per_node", "intra_node",
                                      "inter_node"},
                                "topology"))
        r.fail(*bad);
      if (to->get("ranks_per_node") && to->get("gpus_per_node"))
        r.fail("topology: give 'ranks_per_node' or its synonym "
               "'gpus_per_node', not both");
      ObjectReader tr{*to, "topology."};
      tr.integer("ranks_per_node", hw.topology.ranksPerNode);
      tr.integer("gpus_per_node", hw.topology.ranksPerNode);
      tr.number("cores_per_node", hw.topology.coresPerNode);
      tr.link("intra_node", hw.topology.intraNode);
      tr.link("inter_node", hw.topology.interNode);
      if (!tr.ok())
        r.fail(tr.error);
    }
  }
  if (!r.ok())
    return makeError("hardware JSON: " + r.error);
  // Unknown top-level keys are most likely typos: reject them.
  static const char *known[] = {"base",
                                "name",
                                "peak_flops",
                                "vector_flops",
                                "memory_bandwidth",
                                "memory_capacity",
                                "op_overhead_s",
                                "cache_bytes",
                                "cache_bandwidth",
                                "contraction_operand_bandwidth",
                                "topology",
                                "description"};
  for (const auto &kv : *obj)
    if (!llvm::is_contained(known, kv.first.str()))
      return makeError("hardware JSON: unknown key '" + kv.first.str() + "'");
  // A hardware file must define a device: name a preset ("base") or set at
  // least one device key. Otherwise (e.g. `{}`) it would silently mean the
  // caller's preset, which is almost certainly the wrong or an unfinished
  // file.
  static const char *deviceKeys[] = {"base", "peak_flops", "vector_flops",
                                     "memory_bandwidth", "memory_capacity",
                                     "op_overhead_s"};
  if (llvm::none_of(deviceKeys,
                    [&](const char *key) { return obj->get(key); }))
    return makeError("hardware JSON: the file defines no device: give 'base' "
                     "(a preset) or device keys ('peak_flops', "
                     "'memory_bandwidth', 'memory_capacity', ...)");
  if (auto err = hw.device.validate())
    return makeError("hardware JSON: " + llvm::toString(std::move(err)));
  if (auto err = hw.topology.validate())
    return makeError("hardware JSON: " + llvm::toString(std::move(err)));
  return hw;
}

static llvm::Expected<llvm::json::Value> readJSONFile(StringRef path,
                                                      StringRef what) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError(llvm::formatv("cannot read {0} file '{1}': {2}", what,
                                   path, buffer.getError().message()));
  auto parsed = parseJSONRejectingDuplicates((*buffer)->getBuffer());
  if (!parsed)
    return makeError(llvm::formatv("invalid JSON in {0} file '{1}': {2}", what,
                                   path, llvm::toString(parsed.takeError())));
  return std::move(*parsed);
}

llvm::Expected<Hardware> cost::loadHardware(StringRef path,
                                            const Hardware *base) {
  auto json = readJSONFile(path, "hardware");
  if (!json)
    return json.takeError();
  auto hw = parseHardware(*json, base);
  if (!hw)
    return makeError(
        llvm::formatv("{0}: {1}", path, llvm::toString(hw.takeError())));
  return hw;
}

//===----------------------------------------------------------------------===//
// Profile JSON
//===----------------------------------------------------------------------===//

llvm::Expected<Profile> cost::parseProfile(const llvm::json::Value &value) {
  const llvm::json::Object *obj = value.getAsObject();
  if (!obj)
    return makeError("profile JSON: expected an object at the top level");
  Profile profile;
  auto readTimes = [](const llvm::json::Object &e, Profile::Times &t,
                      std::string &err, const std::string &where) {
    auto get = [&](StringRef key, double &out) {
      const llvm::json::Value *v = e.get(key);
      if (!v || v->kind() == llvm::json::Value::Null || !err.empty())
        return;
      auto d = v->getAsNumber();
      if (!d || !std::isfinite(*d) || *d < 0) {
        err = where + "." + key.str() + ": expected a number of seconds >= 0";
        return;
      }
      out = *d;
    };
    get("forward_s", t.forward);
    get("backward_input_s", t.backwardInput);
    get("backward_weight_s", t.backwardWeight);
    get("backward_full_s", t.backwardFull);
    if (t.backwardFull < 0)
      get("backward_s", t.backwardFull);
    if (err.empty() && t.forward < 0 && t.backwardInput < 0 &&
        t.backwardWeight < 0 && t.backwardFull < 0)
      err = where + ": no time given (\"forward_s\", \"backward_s\", ...)";
  };
  for (StringRef section : {"stages", "ops"}) {
    const llvm::json::Value *v = obj->get(section);
    if (!v)
      continue;
    const llvm::json::Array *arr = v->getAsArray();
    if (!arr)
      return makeError("profile JSON: '" + section + "' must be an array");
    StringRef idKey = section == "stages" ? "stage" : "index";
    for (size_t i = 0; i < arr->size(); ++i) {
      std::string where = llvm::formatv("{0}[{1}]", section, i).str();
      const llvm::json::Object *e = (*arr)[i].getAsObject();
      if (!e)
        return makeError("profile JSON: " + where + ": expected an object");
      auto id = e->getInteger(idKey);
      if (!id || *id < 0)
        return makeError("profile JSON: " + where + ": '" + idKey +
                         "' must be a whole number >= 0" +
                         (e->get(idKey) ? "" : " (it is missing)"));
      Profile::Times t;
      std::string err;
      readTimes(*e, t, err, where);
      if (!err.empty())
        return makeError("profile JSON: " + err);
      auto &table = section == "stages" ? profile.stages : profile.ops;
      if (!table.try_emplace(*id, t).second)
        return makeError("profile JSON: " + where + ": " + idKey + " " +
                         std::to_string(*id) + " is listed twice");
    }
  }
  if (profile.empty())
    return makeError("profile JSON: no \"stages\" or \"ops\" entries");
  return profile;
}

llvm::Expected<Profile> cost::loadProfile(StringRef path) {
  auto json = readJSONFile(path, "profile");
  if (!json)
    return json.takeError();
  auto p = parseProfile(*json);
  if (!p)
    return makeError(
        llvm::formatv("{0}: {1}", path, llvm::toString(p.takeError())));
  return p;
}
