//===- MachineJSON.cpp - The machine JSON schema and its one loader -------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// One schema (docs/CostModel.md "Machine JSON") read for two uses: the cost
// model's hardware files and the simulator's systems. The keys of the
// explorer's older system format are accepted as aliases.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Machine/Machine.h"

#include "MachineInternal.h"
#include "pipeopt/Support/JSONKeys.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>

using namespace pipeopt;
using namespace pipeopt::machine;
using llvm::StringRef;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

//===----------------------------------------------------------------------===//
// Byte sizes
//===----------------------------------------------------------------------===//

llvm::Expected<double> machine::parseByteSize(StringRef text) {
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
// Readers
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
/// Reads typed keys of one JSON object and remembers the first error with
/// its key path (the hardware keys' messages: "<path>key: expected ...").
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
        // Rates (bandwidths) take byte sizes too: name their unit.
        fail(path + key + ": too large (the limit is 2^63 bytes" +
             (key.ends_with("bandwidth") ? "/s)" : ")"));
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
    // An integral number beyond int64 (1e30, 99999999999999999999) is out
    // of range, not "non-integral".
    if (auto d = v->getAsNumber();
        d && std::isfinite(*d) && *d == std::floor(*d)) {
      fail(path + key + ": integer out of range, got " +
           machine::detail::formatNumber(*d));
      return false;
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
    if (auto bad = unknownKey(
            *t, {"f64", "f32", "tf32", "bf16", "f16", "f8", "i32", "i8"},
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

  /// A link of the nested "topology" object: {"latency_s", "bandwidth",
  /// "sender_overhead_s", "idle_receiver_latency_s",
  /// "idle_receiver_sender_overhead_s"}.
  void link(StringRef key, Link &out) {
    const llvm::json::Value *v = obj.get(key);
    if (!v)
      return;
    const llvm::json::Object *o = v->getAsObject();
    if (!o) {
      fail(path + key +
           ": expected an object {\"latency_s\", \"bandwidth\", "
           "\"sender_overhead_s\"}, got " +
           kindOf(*v));
      return;
    }
    if (auto bad = unknownKey(*o,
                              {"latency_s", "bandwidth", "sender_overhead_s",
                               "idle_receiver_latency_s",
                               "idle_receiver_sender_overhead_s"},
                              path + key.str())) {
      fail(*bad);
      return;
    }
    ObjectReader r{*o, path + key.str() + "."};
    r.number("latency_s", out.latencySeconds);
    r.number("bandwidth", out.bytesPerSecond);
    r.number("sender_overhead_s", out.senderOverheadSeconds);
    r.number("idle_receiver_latency_s", out.idleReceiverLatencySeconds);
    r.number("idle_receiver_sender_overhead_s",
             out.idleReceiverSenderOverheadSeconds);
    if (!r.ok())
      fail(r.error);
  }
};
} // namespace

/// The simulator keys' and the flat topology keys' messages ("\"key\" must
/// be ..."): a finite number >= 0.
static std::optional<std::string> flatNumber(const llvm::json::Object &o,
                                             StringRef key, double &out) {
  const llvm::json::Value *v = o.get(key);
  if (!v)
    return std::nullopt;
  std::optional<double> d = v->getAsNumber();
  if (!d)
    return llvm::formatv("\"{0}\" must be a number", key).str();
  if (!std::isfinite(*d) || *d < 0)
    return llvm::formatv("\"{0}\" must be finite and >= 0, got {1}", key,
                         machine::detail::formatNumber(*d))
        .str();
  out = *d;
  return std::nullopt;
}

/// An integer in [1, 2^20] ("\"key\" must be an integer >= 1").
static std::optional<std::string> flatCount(const llvm::json::Object &o,
                                            StringRef key, int &out) {
  const llvm::json::Value *v = o.get(key);
  if (!v)
    return std::nullopt;
  std::optional<int64_t> i = v->getAsInteger();
  if (!i || *i < 1 || *i > (1 << 20))
    return llvm::formatv("\"{0}\" must be an integer >= 1", key).str();
  out = static_cast<int>(*i);
  return std::nullopt;
}

/// A flat link (the explorer's system format): {"latency_s",
/// "bandwidth_Bps", "sender_overhead_s", "idle_receiver_latency_s",
/// "idle_receiver_sender_overhead_s"}. Errors start with `where`.
static llvm::Error flatLink(const llvm::json::Object &o, StringRef key,
                            Link &link, StringRef where) {
  const llvm::json::Value *v = o.get(key);
  if (!v)
    return llvm::Error::success();
  const llvm::json::Object *lo = v->getAsObject();
  if (!lo)
    return makeError(
        llvm::formatv("{0}: \"{1}\" must be an object", where, key));
  std::string w = (where + "." + key).str();
  if (auto bad = unknownKey(*lo,
                            {"latency_s", "bandwidth_Bps", "sender_overhead_s",
                             "idle_receiver_latency_s",
                             "idle_receiver_sender_overhead_s"},
                            w))
    return makeError(*bad);
  if (auto bad = flatNumber(*lo, "latency_s", link.latencySeconds))
    return makeError(w + ": " + *bad);
  if (auto bad = flatNumber(*lo, "bandwidth_Bps", link.bytesPerSecond))
    return makeError(w + ": " + *bad);
  if (auto bad =
          flatNumber(*lo, "sender_overhead_s", link.senderOverheadSeconds))
    return makeError(w + ": " + *bad);
  if (auto bad = flatNumber(*lo, "idle_receiver_latency_s",
                            link.idleReceiverLatencySeconds))
    return makeError(w + ": " + *bad);
  if (auto bad = flatNumber(*lo, "idle_receiver_sender_overhead_s",
                            link.idleReceiverSenderOverheadSeconds))
    return makeError(w + ": " + *bad);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// parseMachine
//===----------------------------------------------------------------------===//

/// The base of a hardware file without "base" and without a caller's base.
static Machine customHardware() {
  Machine m;
  m.name = "custom";
  m.topology.nicsPerNode = 0;
  return m;
}

llvm::Expected<Machine> machine::parseMachine(const llvm::json::Value &value,
                                              MachineUse use,
                                              const Machine *base,
                                              StringRef where) {
  const bool hardware = use == MachineUse::Hardware;
  std::string prefix = !where.empty()
                           ? where.str()
                           : (hardware ? "hardware JSON" : "system config");
  auto error = [&](const llvm::Twine &msg) {
    return makeError(prefix + ": " + msg);
  };
  const llvm::json::Object *obj = value.getAsObject();
  if (!obj)
    return error("expected an object at the top level");

  // Unknown keys are most likely typos: reject them.
  static const StringRef known[] = {
      // Identity.
      "base", "preset", "name", "description",
      // Device.
      "peak_flops", "vector_flops", "memory_bandwidth", "memory_capacity",
      "op_overhead_s", "cores", "cache_bytes", "cache_bandwidth",
      "contraction_operand_bandwidth", "input_copy_bandwidth",
      "gradient_accumulate_s_per_element", "optimizer_s_per_element",
      // Topology: nested, and the explorer's flat form.
      "topology", "ranks_per_node", "gpus_per_node", "nodes", "nics_per_node",
      "cores_per_node", "intra_node", "inter_node",
      // Simulator settings.
      "compute_speed", "overlap", "data_parallel", "zero_stage", "bucket_bytes",
      "memory_bytes"};
  for (const auto &kv : *obj)
    if (!llvm::is_contained(known, StringRef(kv.first)))
      return hardware ? error("unknown key '" + StringRef(kv.first) + "'")
                      : makeError(*unknownKey(*obj, known, prefix));

  // The string keys are type-checked before anything is read: a "base" that
  // is not a string would otherwise be skipped and the caller's base used.
  if (obj->get("base") && obj->get("preset"))
    return error("give 'base' or its synonym 'preset', not both");
  for (StringRef key : {"base", "preset", "name", "description"}) {
    const llvm::json::Value *v = obj->get(key);
    if (!v)
      continue;
    std::optional<StringRef> str = v->getAsString();
    if (!str) {
      std::string names = llvm::join(presetNames(PresetKind::Device), ", ");
      if (!hardware)
        names =
            llvm::join(presetNames(PresetKind::System), ", ") + ", " + names;
      return error(key + ": expected a string" +
                   (key == "base" || key == "preset"
                        ? " (a preset name: " + names + ")"
                        : std::string()) +
                   ", got " + kindOf(*v));
    }
    if (key == "name" && str->trim().empty())
      return error("name: expected a non-empty string");
  }

  Machine m;
  std::optional<StringRef> presetName = obj->getString("base");
  if (!presetName)
    presetName = obj->getString("preset");
  if (presetName) {
    llvm::Expected<Machine> preset =
        hardware ? getDevicePreset(*presetName) : getPreset(*presetName);
    if (!preset)
      return hardware ? error("base: " + llvm::toString(preset.takeError()))
                      : error(llvm::toString(preset.takeError()));
    m = std::move(*preset);
  } else if (base) {
    m = *base;
  } else {
    m = hardware ? customHardware() : gridBase();
  }
  if (auto name = obj->getString("name"))
    m.name = name->str();
  else if (!hardware && !presetName)
    return error("missing \"name\"");

  // --- Device ---------------------------------------------------------------
  ObjectReader r{*obj, ""};
  // "peak_flops" is the matrix table; "vector_flops" defaults to it when
  // the base has none.
  bool hadVector = obj->get("vector_flops") != nullptr;
  r.table("peak_flops", m.device.matrixFlops);
  r.table("vector_flops", m.device.vectorFlops);
  if (!hadVector && m.device.vectorFlops.empty())
    m.device.vectorFlops = m.device.matrixFlops;
  r.number("memory_bandwidth", m.device.memoryBytesPerSecond, /*bytes=*/true);
  r.number("memory_capacity", m.device.memoryCapacityBytes, /*bytes=*/true);
  r.number("op_overhead_s", m.device.opOverheadSeconds);
  r.integer("cores", m.device.cores);
  r.number("cache_bytes", m.device.cacheBytes, /*bytes=*/true);
  r.number("cache_bandwidth", m.device.cacheBytesPerSecond, /*bytes=*/true);
  r.number("contraction_operand_bandwidth",
           m.device.contractionOperandBytesPerSecond, /*bytes=*/true);
  r.number("input_copy_bandwidth", m.device.inputCopyBytesPerSecond,
           /*bytes=*/true);
  r.number("gradient_accumulate_s_per_element",
           m.device.gradientAccumulateSecondsPerElement);
  if (const llvm::json::Value *v = obj->get("optimizer_s_per_element")) {
    const llvm::json::Object *t = v->getAsObject();
    if (!t) {
      r.fail(("optimizer_s_per_element: expected an object {\"sgd\": s, "
              "...}, got " +
              kindOf(*v))
                 .str());
    } else if (auto bad = unknownKey(*t, {"none", "sgd", "momentum", "adamw"},
                                     "optimizer_s_per_element")) {
      r.fail(*bad);
    } else {
      for (const auto &[k, val] : *t) {
        std::optional<double> d = val.getAsNumber();
        if (!d) {
          r.fail(("optimizer_s_per_element." + k.str() +
                  ": expected a number (seconds per element), got " +
                  kindOf(val))
                     .str());
          break;
        }
        m.device.optimizerSecondsPerElement[k.str()] = *d;
      }
    }
  }

  // --- Topology: the nested object ------------------------------------------
  const llvm::json::Object *to = nullptr;
  if (const llvm::json::Value *t = obj->get("topology")) {
    to = t->getAsObject();
    if (!to) {
      r.fail(("topology: expected an object, got " + kindOf(*t)).str());
    } else {
      if (auto bad = unknownKey(*to,
                                {"ranks_per_node", "gpus_per_node", "nodes",
                                 "nics_per_node", "cores_per_node", "pin_ranks",
                                 "intra_node", "inter_node"},
                                "topology"))
        r.fail(*bad);
      if (to->get("ranks_per_node") && to->get("gpus_per_node"))
        r.fail("topology: give 'ranks_per_node' or its synonym "
               "'gpus_per_node', not both");
      ObjectReader tr{*to, "topology."};
      tr.integer("ranks_per_node", m.topology.ranksPerNode);
      tr.integer("gpus_per_node", m.topology.ranksPerNode);
      tr.integer("nodes", m.topology.nodes);
      tr.integer("nics_per_node", m.topology.nicsPerNode);
      tr.number("cores_per_node", m.topology.coresPerNode);
      if (const llvm::json::Value *v = to->get("pin_ranks")) {
        std::optional<bool> b = v->getAsBoolean();
        if (!b)
          r.fail("topology.pin_ranks: expected true or false, got " +
                 kindOf(*v).str());
        else
          m.topology.pinRanks = *b;
      }
      tr.link("intra_node", m.topology.intraNode);
      tr.link("inter_node", m.topology.interNode);
      if (!tr.ok())
        r.fail(tr.error);
    }
  }
  if (!r.ok())
    return error(r.error);

  // --- Topology: the flat form ----------------------------------------------
  // A flat key and its nested spelling are one setting: give one.
  static const std::pair<StringRef, StringRef> flatAndNested[] = {
      {"ranks_per_node", "ranks_per_node"},
      {"gpus_per_node", "ranks_per_node"},
      {"ranks_per_node", "gpus_per_node"},
      {"gpus_per_node", "gpus_per_node"},
      {"nodes", "nodes"},
      {"nics_per_node", "nics_per_node"},
      {"cores_per_node", "cores_per_node"},
      {"intra_node", "intra_node"},
      {"inter_node", "inter_node"}};
  for (auto [flat, nested] : flatAndNested)
    if (obj->get(flat) && to && to->get(nested))
      return error("give '" + flat + "' or 'topology." + nested +
                   "', not both");
  if (obj->get("ranks_per_node") && obj->get("gpus_per_node"))
    return error("give 'ranks_per_node' or its synonym 'gpus_per_node', not "
                 "both");
  auto flat = [&](std::optional<std::string> bad) -> llvm::Error {
    return bad ? error(*bad) : llvm::Error::success();
  };
  if (llvm::Error e =
          flat(flatCount(*obj, "ranks_per_node", m.topology.ranksPerNode)))
    return std::move(e);
  if (llvm::Error e =
          flat(flatCount(*obj, "gpus_per_node", m.topology.ranksPerNode)))
    return std::move(e);
  if (llvm::Error e = flat(flatCount(*obj, "nodes", m.topology.nodes)))
    return std::move(e);
  if (llvm::Error e =
          flat(flatCount(*obj, "nics_per_node", m.topology.nicsPerNode)))
    return std::move(e);
  if (llvm::Error e =
          flat(flatNumber(*obj, "cores_per_node", m.topology.coresPerNode)))
    return std::move(e);
  if (llvm::Error e =
          flatLink(*obj, "intra_node", m.topology.intraNode, prefix))
    return std::move(e);
  if (llvm::Error e =
          flatLink(*obj, "inter_node", m.topology.interNode, prefix))
    return std::move(e);

  // --- Simulator settings ---------------------------------------------------
  SimulationSettings &s = m.simulation;
  if (llvm::Error e = flat(flatNumber(*obj, "compute_speed", s.computeSpeed)))
    return std::move(e);
  // Bounded so that every stage time t / compute_speed stays finite.
  if (!(s.computeSpeed >= 1e-6 && s.computeSpeed <= 1e6))
    return error(llvm::formatv("\"compute_speed\" must be > 0 and between "
                               "1e-6 and 1e6 (speed relative to the cost "
                               "table's reference device), got {0}",
                               s.computeSpeed)
                     .str());
  double memory = 0;
  if (obj->get("memory_bytes")) {
    if (llvm::Error e = flat(flatNumber(*obj, "memory_bytes", memory)))
      return std::move(e);
    if (!(memory < 9223372036854775808.0))
      return error("\"memory_bytes\": too large (the limit is 2^63 bytes)");
    s.memoryLimitBytes = memory;
  }
  if (llvm::Error e = flat(flatCount(*obj, "data_parallel", s.dataParallel)))
    return std::move(e);
  if (const llvm::json::Value *v = obj->get("zero_stage")) {
    std::optional<int64_t> z = v->getAsInteger();
    if (!z || (*z != 0 && *z != 1))
      return error("\"zero_stage\" must be 0 (all-reduce, no sharding) or 1 "
                   "(ZeRO-1: reduce-scatter, sharded optimizer, all-gather)");
    s.zeroStage = static_cast<int>(*z);
  }
  if (obj->get("bucket_bytes")) {
    double bucket = 0;
    if (llvm::Error e = flat(flatNumber(*obj, "bucket_bytes", bucket)))
      return std::move(e);
    if (!(bucket >= 1 && bucket < 9223372036854775808.0))
      return error("\"bucket_bytes\" must be a number of bytes >= 1 (the "
                   "capacity of a data-parallel gradient bucket; pipeopt-run "
                   "--bucket-mb), got " +
                   machine::detail::formatNumber(bucket));
    s.gradientBucketBytes = bucket;
  }
  if (const llvm::json::Value *v = obj->get("overlap")) {
    std::optional<bool> b = v->getAsBoolean();
    if (!b)
      return error("\"overlap\" must be true or false");
    s.overlap = *b;
  }

  // A hardware file must define a device: name a preset ("base") or set at
  // least one device key. Otherwise (e.g. `{}`) it would silently mean the
  // caller's preset, which is almost certainly the wrong or an unfinished
  // file.
  static const char *deviceKeys[] = {"base",
                                     "preset",
                                     "peak_flops",
                                     "vector_flops",
                                     "memory_bandwidth",
                                     "memory_capacity",
                                     "op_overhead_s",
                                     "cache_bytes",
                                     "cache_bandwidth",
                                     "contraction_operand_bandwidth",
                                     "input_copy_bandwidth",
                                     "gradient_accumulate_s_per_element",
                                     "optimizer_s_per_element"};
  if (hardware &&
      llvm::none_of(deviceKeys, [&](const char *key) { return obj->get(key); }))
    return error("the file defines no device: give 'base' (a preset) or "
                 "device keys ('peak_flops', 'memory_bandwidth', "
                 "'memory_capacity', ...)");
  if (llvm::Error err = m.validate())
    return error(llvm::toString(std::move(err)));
  return m;
}

//===----------------------------------------------------------------------===//
// Systems and loaders
//===----------------------------------------------------------------------===//

llvm::Expected<std::vector<Machine>> machine::parseSystems(StringRef json) {
  llvm::Expected<llvm::json::Value> root = parseJSONRejectingDuplicates(json);
  if (!root)
    return makeError("system config: invalid JSON: " +
                     llvm::toString(root.takeError()));
  std::vector<Machine> out;
  const llvm::json::Array *arr = root->getAsArray();
  if (const llvm::json::Object *o = root->getAsObject()) {
    arr = o->getArray("systems");
    if (!arr) {
      llvm::Expected<Machine> m = parseMachine(*root, MachineUse::System);
      if (!m)
        return m.takeError();
      out.push_back(std::move(*m));
      return out;
    }
  }
  if (!arr)
    return makeError("system config: expected an object or an array");
  int idx = 0;
  for (const llvm::json::Value &v : *arr) {
    std::string where = llvm::formatv("system config [{0}]", idx++).str();
    if (!v.getAsObject())
      return makeError(where + ": expected an object");
    llvm::Expected<Machine> m =
        parseMachine(v, MachineUse::System, nullptr, where);
    if (!m)
      return m.takeError();
    out.push_back(std::move(*m));
  }
  if (out.empty())
    return makeError("system config: no systems");
  return out;
}

llvm::Expected<Machine> machine::loadMachine(StringRef preset, StringRef path) {
  llvm::Expected<Machine> base = getDevicePreset(preset);
  if (!base || path.empty())
    return base;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError(llvm::formatv("cannot read hardware file '{0}': {1}", path,
                                   buffer.getError().message()));
  auto json = parseJSONRejectingDuplicates((*buffer)->getBuffer());
  if (!json)
    return makeError(llvm::formatv("invalid JSON in hardware file '{0}': {1}",
                                   path, llvm::toString(json.takeError())));
  llvm::Expected<Machine> m = parseMachine(*json, MachineUse::Hardware, &*base);
  if (!m)
    return makeError(
        llvm::formatv("{0}: {1}", path, llvm::toString(m.takeError())));
  return m;
}

llvm::Expected<std::vector<Machine>> machine::loadSystems(StringRef spec) {
  if (spec == "grid")
    return presetGrid();
  if (!spec.ends_with(".json")) {
    llvm::Expected<Machine> m = getPreset(spec);
    if (!m)
      return m.takeError();
    return std::vector<Machine>{std::move(*m)};
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buf =
      llvm::MemoryBuffer::getFileOrSTDIN(spec, /*IsText=*/true);
  if (!buf)
    return makeError(llvm::formatv("cannot read '{0}': {1}", spec,
                                   buf.getError().message()));
  llvm::Expected<std::vector<Machine>> systems =
      parseSystems((*buf)->getBuffer());
  if (!systems)
    return makeError(spec + ": " + llvm::toString(systems.takeError()));
  return systems;
}
