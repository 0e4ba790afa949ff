//===- MachineTest.cpp - Presets, the machine JSON and its loader ---------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Machine/Machine.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <string>

using namespace pipeopt;
using namespace pipeopt::machine;

namespace {

std::string errorOf(llvm::Error e) { return llvm::toString(std::move(e)); }

llvm::json::Value parseJSON(llvm::StringRef text) {
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(text);
  EXPECT_TRUE(static_cast<bool>(v));
  return v ? std::move(*v) : llvm::json::Value(nullptr);
}

/// A temporary file with `text`, removed at the end of the test.
struct TempFile {
  llvm::SmallString<128> path;
  explicit TempFile(llvm::StringRef text) {
    int fd;
    EXPECT_FALSE(
        llvm::sys::fs::createTemporaryFile("machine", "json", fd, path));
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << text;
  }
  ~TempFile() { llvm::sys::fs::remove(path); }
};

TEST(Link, AlphaBeta) {
  Link l{5e-6, 10e9};
  EXPECT_NEAR(l.seconds(1e6), 105e-6, 1e-12);
  EXPECT_EQ(l.seconds(0), 0.0);               // no message
  EXPECT_EQ(l.messageSeconds(0), 5e-6);       // an empty message pays alpha
  EXPECT_EQ(Link{}.messageSeconds(1e9), 0.0); // free link
}

TEST(Topology, NodesAndNics) {
  Topology t;
  t.ranksPerNode = 4;
  t.nicsPerNode = 2;
  t.intraNode = {1e-6, 100e9};
  t.interNode = {5e-6, 10e9};
  EXPECT_EQ(t.between(0, 3).bytesPerSecond, 100e9);
  EXPECT_EQ(t.between(3, 4).bytesPerSecond, 10e9);
  EXPECT_EQ(t.nodeOf(5), 1);
  EXPECT_EQ(t.nicOf(5), 1 * 2 + 1);
  t.nicsPerNode = 0; // one NIC per rank
  EXPECT_EQ(t.nicsInEffect(), 4);
  EXPECT_EQ(t.nicOf(6), 6);
}

TEST(Presets, DeviceNumbers) {
  llvm::Expected<Machine> h100 = getDevicePreset("H100-SXM");
  ASSERT_TRUE(static_cast<bool>(h100)) << errorOf(h100.takeError());
  EXPECT_EQ(h100->name, "h100");
  EXPECT_EQ(h100->device.peakFlops("bf16", true), 989.5e12);
  EXPECT_EQ(h100->device.memoryBytesPerSecond, 3.35e12);
  EXPECT_EQ(h100->topology.ranksPerNode, 8);
  EXPECT_EQ(h100->topology.nicsPerNode, 0);
  EXPECT_EQ(h100->topology.interNode.bytesPerSecond, 50e9);
  EXPECT_EQ(h100->memoryLimitBytes(), 80e9); // no limit set: the capacity
  for (llvm::StringRef name : presetNames(PresetKind::Device)) {
    llvm::Expected<Machine> m = getDevicePreset(name);
    ASSERT_TRUE(static_cast<bool>(m)) << name.str();
    EXPECT_FALSE(static_cast<bool>(m->validate())) << name.str();
  }
  llvm::Expected<Machine> bad = getDevicePreset("ideal");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(errorOf(bad.takeError()),
            "unknown device 'ideal' (expected one of h100, h200, a100, cpu, "
            "or a JSON file via hardware=<path>)");
}

TEST(Presets, GridIsVariationsOfOneBase) {
  std::vector<Machine> grid = presetGrid();
  ASSERT_EQ(grid.size(), 9u);
  const char *names[] = {"compute-slow/net-slow",     "compute-slow/net-medium",
                         "compute-slow/net-fast",     "compute-medium/net-slow",
                         "compute-medium/net-medium", "compute-medium/net-fast",
                         "compute-fast/net-slow",     "compute-fast/net-medium",
                         "compute-fast/net-fast"};
  const double speeds[] = {0.5, 1.0, 2.0};
  const Link intra[] = {{10e-6, 64e9}, {5e-6, 300e9}, {2e-6, 450e9}};
  const Link inter[] = {{30e-6, 12.5e9}, {10e-6, 25e9}, {5e-6, 50e9}};
  const int nics[] = {1, 1, 2};
  Machine base = gridBase();
  for (int c = 0; c < 3; ++c)
    for (int n = 0; n < 3; ++n) {
      const Machine &m = grid[c * 3 + n];
      EXPECT_EQ(m.name, names[c * 3 + n]);
      EXPECT_EQ(m.simulation.computeSpeed, speeds[c]);
      EXPECT_EQ(m.topology.intraNode.latencySeconds, intra[n].latencySeconds);
      EXPECT_EQ(m.topology.intraNode.bytesPerSecond, intra[n].bytesPerSecond);
      EXPECT_EQ(m.topology.interNode.latencySeconds, inter[n].latencySeconds);
      EXPECT_EQ(m.topology.interNode.bytesPerSecond, inter[n].bytesPerSecond);
      EXPECT_EQ(m.topology.nicsPerNode, nics[n]);
      // What the base fixes.
      EXPECT_EQ(m.topology.ranksPerNode, 2);
      EXPECT_TRUE(m.simulation.overlap);
      EXPECT_EQ(m.simulation.dataParallel, 1);
      EXPECT_EQ(m.memoryLimitBytes(), 0.0);
      EXPECT_EQ(m.device.memoryBytesPerSecond,
                base.device.memoryBytesPerSecond);
      llvm::Expected<Machine> byName = getPreset(m.name);
      ASSERT_TRUE(static_cast<bool>(byName));
      EXPECT_EQ(byName->simulation.computeSpeed, speeds[c]);
    }
  Machine ideal = idealSystem();
  EXPECT_EQ(ideal.topology.ranksPerNode, 1 << 20);
  EXPECT_EQ(ideal.topology.interNode.messageSeconds(1e9), 0.0);
  EXPECT_EQ(ideal.memoryLimitBytes(), 0.0);

  llvm::Expected<Machine> bad = getPreset("compute-huge/net-slow");
  ASSERT_FALSE(static_cast<bool>(bad));
  std::string msg = errorOf(bad.takeError());
  EXPECT_EQ(msg.find("unknown system preset 'compute-huge/net-slow' (known: "
                     "ideal, compute-slow/net-slow,"),
            0u)
      << msg;
  EXPECT_NE(msg.find("compute-fast/net-fast, h100, h200, a100, cpu)"),
            std::string::npos)
      << msg;
  // A device preset is a system too (its node, speed 1).
  llvm::Expected<Machine> a100 = getPreset("a100");
  ASSERT_TRUE(static_cast<bool>(a100));
  EXPECT_EQ(a100->simulation.computeSpeed, 1.0);
}

TEST(MachineJSON, HardwareFileOnTopOfAPreset) {
  TempFile f(R"({"name": "h100-tf32", "peak_flops": {"f32": 494.5e12},
                 "memory_capacity": "40GB", "cores": 132,
                 "topology": {"gpus_per_node": 4, "nics_per_node": 2,
                   "inter_node": {"latency_s": 1e-5, "bandwidth": 25e9}}})");
  llvm::Expected<Machine> m = loadMachine("h100", f.path);
  ASSERT_TRUE(static_cast<bool>(m)) << errorOf(m.takeError());
  EXPECT_EQ(m->name, "h100-tf32");
  EXPECT_EQ(m->device.peakFlops("f32", true), 494.5e12);
  EXPECT_EQ(m->device.peakFlops("bf16", true), 989.5e12); // kept
  EXPECT_EQ(m->device.memoryCapacityBytes, 40e9);
  EXPECT_EQ(m->device.cores, 132);
  EXPECT_EQ(m->topology.ranksPerNode, 4); // gpus_per_node: an alias
  EXPECT_EQ(m->topology.nicsPerNode, 2);
  EXPECT_EQ(m->topology.interNode.bytesPerSecond, 25e9);
  EXPECT_EQ(m->topology.intraNode.bytesPerSecond, 450e9); // kept
  EXPECT_EQ(m->memoryLimitBytes(), 40e9);

  // A "base" in the file replaces the caller's preset.
  TempFile cpu(R"({"base": "cpu", "memory_capacity": "1GB"})");
  llvm::Expected<Machine> c = loadMachine("h100", cpu.path);
  ASSERT_TRUE(static_cast<bool>(c)) << errorOf(c.takeError());
  EXPECT_EQ(c->name, "cpu");
  EXPECT_EQ(c->topology.ranksPerNode, 2);
  EXPECT_EQ(c->device.memoryCapacityBytes, 1e9);

  // No file: the preset itself.
  llvm::Expected<Machine> plain = loadMachine("a100");
  ASSERT_TRUE(static_cast<bool>(plain));
  EXPECT_EQ(plain->device.memoryBytesPerSecond, 2.039e12);
}

TEST(MachineJSON, ErrorsNameTheKeyAndTheFile) {
  TempFile f(R"({"base": "h100", "topology": {"intra_node": {"bw": 1}}})");
  llvm::Expected<Machine> m = loadMachine("h100", f.path);
  ASSERT_FALSE(static_cast<bool>(m));
  EXPECT_EQ(errorOf(m.takeError()),
            f.path.str().str() +
                ": hardware JSON: topology.intra_node: unknown key 'bw' "
                "(expected one of: latency_s, bandwidth, "
                "sender_overhead_s, idle_receiver_latency_s, "
                "idle_receiver_sender_overhead_s)");

  llvm::Expected<Machine> missing = loadMachine("h100", "/nonexistent.json");
  ASSERT_FALSE(static_cast<bool>(missing));
  EXPECT_EQ(errorOf(missing.takeError())
                .find("cannot read hardware file '/nonexistent.json'"),
            0u);
  llvm::Expected<Machine> preset = loadMachine("tpu");
  ASSERT_FALSE(static_cast<bool>(preset));
  EXPECT_NE(errorOf(preset.takeError()).find("unknown device 'tpu'"),
            std::string::npos);

  struct Case {
    const char *json, *message;
  } cases[] = {
      {R"({"base": "h100", "memory_bandwith": 1})",
       "hardware JSON: unknown key 'memory_bandwith'"},
      {R"({"base": 5})", "hardware JSON: base: expected a string (a preset "
                         "name: h100, h200, a100, cpu), got a number"},
      {R"({"base": "ideal"})", "hardware JSON: base: unknown device 'ideal'"},
      {R"({"base": "h100", "preset": "h100"})",
       "give 'base' or its synonym 'preset', not both"},
      {R"({"base": "h100", "cores": 1.5})",
       "hardware JSON: cores: expected an integer, got a non-integral number"},
      {R"({"base": "h100", "cores": 1e30})",
       "hardware JSON: cores: integer out of range, got 1e+30"},
      {R"({"base": "h100", "memory_capacity": 0.5})",
       "memory_capacity must be a number of bytes, at least 1, got 0.5"},
      {R"({"base": "h100", "memory_bandwidth": 1e300})",
       "memory_bandwidth: too large (the limit is 2^63 bytes/s)"},
      {R"({"base": "h100", "memory_capacity": 1e300})",
       "memory_capacity: too large (the limit is 2^63 bytes)"},
      {R"({"base": "h100", "compute_speed": 0})",
       "hardware JSON: \"compute_speed\" must be > 0"},
      {R"({"base": "h100", "compute_speed": 1e-300})",
       "\"compute_speed\" must be > 0 and between 1e-6 and 1e6"},
      {R"({"base": "h100", "memory_bytes": 1e300})",
       "\"memory_bytes\": too large (the limit is 2^63 bytes)"},
      {R"({"base": "h100", "cache_bytes": "1MiB"})",
       "cache_bytes and cache_bandwidth go together"},
      {R"({"base": "h100", "cache_bandwidth": 1e12})",
       "cache_bytes and cache_bandwidth go together"},
      {R"({"base": "h100", "gpus_per_node": 2,
           "topology": {"ranks_per_node": 4}})",
       "give 'gpus_per_node' or 'topology.ranks_per_node', not both"},
      {R"({"base": "h100", "topology": {"nics_per_node": -1}})",
       "topology.nics_per_node must be >= 0"},
      {R"({"name": "x", "topology": {"ranks_per_node": 4}})",
       "the file defines no device"},
  };
  for (const Case &c : cases) {
    llvm::Expected<Machine> r =
        parseMachine(parseJSON(c.json), MachineUse::Hardware);
    ASSERT_FALSE(static_cast<bool>(r)) << c.json;
    std::string msg = errorOf(r.takeError());
    EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
  }
}

TEST(MachineJSON, PinRanks) {
  llvm::Expected<Machine> m = parseMachine(
      parseJSON(R"({"base": "cpu", "topology": {"ranks_per_node": 4,
                    "cores_per_node": 2, "pin_ranks": true}})"),
      MachineUse::Hardware);
  ASSERT_TRUE(static_cast<bool>(m)) << errorOf(m.takeError());
  EXPECT_TRUE(m->topology.pinRanks);
  m = parseMachine(parseJSON(R"({"base": "cpu", "topology": {
                                 "cores_per_node": 2, "pin_ranks": "yes"}})"),
                   MachineUse::Hardware);
  ASSERT_FALSE(static_cast<bool>(m));
  EXPECT_NE(errorOf(m.takeError())
                .find("topology.pin_ranks: expected true or false, got a "
                      "string"),
            std::string::npos);
  m = parseMachine(parseJSON(R"({"base": "cpu", "topology": {
                                 "pin_ranks": true}})"),
                   MachineUse::Hardware);
  ASSERT_FALSE(static_cast<bool>(m));
  EXPECT_NE(errorOf(m.takeError())
                .find("topology.pin_ranks needs topology.cores_per_node"),
            std::string::npos);
}

TEST(MachineJSON, CalibratedKeys) {
  // Absent: 0 (off) in every preset, so nothing changes.
  for (llvm::StringRef name : presetNames(PresetKind::Device)) {
    llvm::Expected<Machine> p = getDevicePreset(name);
    ASSERT_TRUE(static_cast<bool>(p));
    EXPECT_EQ(p->device.cacheBytes, 0);
    EXPECT_EQ(p->device.contractionOperandBytesPerSecond, 0);
    EXPECT_EQ(p->topology.coresPerNode, 0);
    EXPECT_FALSE(p->topology.sharesCores(1 << 20));
    EXPECT_EQ(p->device.inputCopyBytesPerSecond, 0);
    EXPECT_EQ(p->topology.intraNode.senderOverheadSeconds, 0);
    EXPECT_EQ(p->topology.interNode.senderOverheadSeconds, 0);
  }
  llvm::Expected<Machine> m =
      parseMachine(parseJSON(R"({"base": "cpu", "memory_bandwidth": 10,
                    "cache_bytes": "1KiB", "cache_bandwidth": 100,
                    "contraction_operand_bandwidth": 5e9,
                    "input_copy_bandwidth": "30GB",
                    "topology": {"ranks_per_node": 4,
                                 "cores_per_node": 1.5,
                                 "intra_node": {"latency_s": 3e-6,
                                                "sender_overhead_s": 1e-5,
                                                "idle_receiver_latency_s": 5e-5,
                                                "idle_receiver_sender_overhead_s": 2e-5}}})"),
                   MachineUse::Hardware);
  ASSERT_TRUE(static_cast<bool>(m)) << errorOf(m.takeError());
  EXPECT_EQ(m->device.cacheBytes, 1024);
  EXPECT_EQ(m->device.bytesPerSecondFor(1024), 100);
  EXPECT_EQ(m->device.bytesPerSecondFor(1025), 10);
  EXPECT_EQ(m->device.contractionOperandBytesPerSecond, 5e9);
  EXPECT_EQ(m->device.inputCopyBytesPerSecond, 30e9);
  EXPECT_EQ(m->topology.coresPerNode, 1.5);
  EXPECT_EQ(m->topology.intraNode.latencySeconds, 3e-6);
  EXPECT_EQ(m->topology.intraNode.senderOverheadSeconds, 1e-5);
  EXPECT_EQ(m->topology.interNode.senderOverheadSeconds, 0);
  // A message to an idle core: its own latency and send call; the inter-node
  // link without them falls back to the busy-core values.
  EXPECT_EQ(m->topology.intraNode.idleReceiverLatencySeconds, 5e-5);
  EXPECT_EQ(m->topology.intraNode.messageSeconds(0, true), 5e-5);
  EXPECT_EQ(m->topology.intraNode.messageSeconds(0, false), 3e-6);
  EXPECT_EQ(m->topology.intraNode.senderSeconds(true), 2e-5);
  EXPECT_EQ(m->topology.intraNode.senderSeconds(false), 1e-5);
  EXPECT_EQ(m->topology.interNode.messageSeconds(0, true),
            m->topology.interNode.latencySeconds);
  EXPECT_EQ(m->topology.interNode.senderSeconds(true), 0);
  EXPECT_FALSE(m->topology.pinRanks);
  EXPECT_TRUE(m->topology.sharesCores(2));  // 2 ranks on 1.5 cores
  EXPECT_FALSE(m->topology.sharesCores(1)); // 1 rank: nothing to share
  // Flat in a system; given flat and nested it is an error.
  llvm::Expected<std::vector<Machine>> s =
      parseSystems(R"({"name": "s", "cores_per_node": 2})");
  ASSERT_TRUE(static_cast<bool>(s)) << errorOf(s.takeError());
  EXPECT_EQ(s->front().topology.coresPerNode, 2);
  // The flat link of a system takes it too.
  s = parseSystems(R"({"name": "s", "inter_node": {"latency_s": 1e-6,
                       "bandwidth_Bps": 1e9, "sender_overhead_s": 2e-6}})");
  ASSERT_TRUE(static_cast<bool>(s)) << errorOf(s.takeError());
  EXPECT_EQ(s->front().topology.interNode.senderOverheadSeconds, 2e-6);
  s = parseSystems(R"({"name": "s", "intra_node": {
                       "idle_receiver_latency_s": 4e-5,
                       "idle_receiver_sender_overhead_s": 1.5e-5}})");
  ASSERT_TRUE(static_cast<bool>(s)) << errorOf(s.takeError());
  EXPECT_EQ(s->front().topology.intraNode.idleReceiverLatencySeconds, 4e-5);
  EXPECT_EQ(s->front().topology.intraNode.idleReceiverSenderOverheadSeconds,
            1.5e-5);
  llvm::Expected<std::vector<Machine>> badIdle = parseSystems(
      R"({"name": "s", "intra_node": {"idle_receiver_latency_s": -1}})");
  ASSERT_FALSE(static_cast<bool>(badIdle));
  EXPECT_NE(errorOf(badIdle.takeError())
                .find("\"idle_receiver_latency_s\" must be finite and >= 0"),
            std::string::npos);
  llvm::Expected<std::vector<Machine>> bad = parseSystems(
      R"({"name": "s", "inter_node": {"sender_overhead_s": -1e-7}})");
  ASSERT_FALSE(static_cast<bool>(bad));
  // The number as given (%g), not rounded to "-0.00".
  EXPECT_NE(errorOf(bad.takeError())
                .find("\"sender_overhead_s\" must be finite and >= 0, got "
                      "-1e-07"),
            std::string::npos);

  struct Case {
    const char *json, *message;
  } cases[] = {
      {R"({"base": "cpu", "cache_bytes": -1})",
       "device 'cpu': cache_bytes must be a number of bytes >= 0"},
      {R"({"base": "cpu", "cache_bandwidth": 0.5})",
       "device 'cpu': cache_bandwidth must be 0 (no cache) or a number of "
       "bytes/s"},
      {R"({"base": "cpu", "contraction_operand_bandwidth": -3})",
       "device 'cpu': contraction_operand_bandwidth must be 0"},
      {R"({"base": "cpu", "input_copy_bandwidth": 0.5})",
       "device 'cpu': input_copy_bandwidth must be 0 (inputs are not copied) "
       "or a number of bytes/s"},
      {R"({"base": "cpu", "topology": {"cores_per_node": 2e6}})",
       "topology.cores_per_node must be 0 (a processor per rank) or a number "
       "of cores between 0.01 and 1048576, got 2e+06"},
      {R"({"base": "cpu", "topology": {"cores_per_node": true}})",
       "topology.cores_per_node: expected a number, got a boolean"},
      {R"({"base": "cpu",
           "topology": {"intra_node": {"sender_overhead_s": 7200}}})",
       "topology.intra_node.sender_overhead_s must be"},
      {R"({"base": "cpu",
           "topology": {"intra_node": {"idle_receiver_latency_s": 7200}}})",
       "topology.intra_node.idle_receiver_latency_s must be"},
      {R"({"base": "cpu", "topology": {"inter_node":
           {"idle_receiver_sender_overhead_s": 7200}}})",
       "topology.inter_node.idle_receiver_sender_overhead_s must be"},
      {R"({"base": "cpu",
           "topology": {"inter_node": {"sender_overhead_s": -1e-6}}})",
       "sender_overhead_s"},
      {R"({"base": "cpu",
           "topology": {"intra_node": {"sender_overhead": 1e-6}}})",
       "unknown key 'sender_overhead'"},
      {R"({"base": "cpu", "cores_per_node": 1,
           "topology": {"cores_per_node": 2}})",
       "give 'cores_per_node' or 'topology.cores_per_node', not both"},
      // A device key: the file defines a device (an incomplete one).
      {R"({"name": "x", "cache_bandwidth": 1e9})",
       "hardware JSON: device 'x': memory_bandwidth"},
  };
  for (const Case &c : cases) {
    llvm::Expected<Machine> r =
        parseMachine(parseJSON(c.json), MachineUse::Hardware);
    ASSERT_FALSE(static_cast<bool>(r)) << c.json;
    std::string msg = errorOf(r.takeError());
    EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
  }
}

TEST(MachineJSON, TrainingStepKeys) {
  // Absent in every preset: nothing charged, the optimizer formula.
  for (llvm::StringRef name : presetNames(PresetKind::Device)) {
    llvm::Expected<Machine> p = getDevicePreset(name);
    ASSERT_TRUE(static_cast<bool>(p));
    EXPECT_EQ(p->device.gradientAccumulateSecondsPerElement, 0);
    EXPECT_TRUE(p->device.optimizerSecondsPerElement.empty());
    EXPECT_EQ(p->simulation.gradientBucketBytes, 25.0 * 1024 * 1024);
  }
  llvm::Expected<Machine> m = parseMachine(
      parseJSON(R"({"base": "cpu", "gradient_accumulate_s_per_element": 2.5e-10,
                    "optimizer_s_per_element": {"sgd": 3e-9, "adamw": 7e-9},
                    "bucket_bytes": 1048576, "zero_stage": 1})"),
      MachineUse::Hardware);
  ASSERT_TRUE(static_cast<bool>(m)) << errorOf(m.takeError());
  EXPECT_EQ(m->device.gradientAccumulateSecondsPerElement, 2.5e-10);
  EXPECT_EQ(m->device.optimizerSecondsPerElement.size(), 2u);
  EXPECT_EQ(m->device.optimizerSecondsPerElement.at("sgd"), 3e-9);
  EXPECT_EQ(m->device.optimizerSecondsPerElement.at("adamw"), 7e-9);
  EXPECT_EQ(m->simulation.gradientBucketBytes, 1048576);
  EXPECT_EQ(m->simulation.zeroStage, 1);
  struct Case {
    const char *json, *message;
  } cases[] = {
      {R"({"base": "cpu", "gradient_accumulate_s_per_element": -1e-9})",
       "device 'cpu': gradient_accumulate_s_per_element must be seconds per "
       "element in [0, 1)"},
      {R"({"base": "cpu", "optimizer_s_per_element": {"adam": 1e-9}})",
       "optimizer_s_per_element: unknown key 'adam'"},
      {R"({"base": "cpu", "optimizer_s_per_element": {"sgd": "fast"}})",
       "optimizer_s_per_element.sgd: expected a number (seconds per "
       "element), got a string"},
      {R"({"base": "cpu", "optimizer_s_per_element": {"sgd": 2}})",
       "device 'cpu': optimizer_s_per_element.sgd must be seconds per "
       "element in [0, 1)"},
      {R"({"base": "cpu", "optimizer_s_per_element": [1]})",
       "optimizer_s_per_element: expected an object"},
      {R"({"base": "cpu", "bucket_bytes": 0})",
       "\"bucket_bytes\" must be a number of bytes >= 1"},
  };
  for (const Case &c : cases) {
    llvm::Expected<Machine> r =
        parseMachine(parseJSON(c.json), MachineUse::Hardware);
    ASSERT_FALSE(static_cast<bool>(r)) << c.json;
    std::string msg = errorOf(r.takeError());
    EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
  }
}

TEST(MachineJSON, SystemsAndTheirAliases) {
  llvm::Expected<std::vector<Machine>> s = parseSystems(R"({"systems": [
      {"name": "a", "compute_speed": 1.5, "gpus_per_node": 4,
       "nics_per_node": 2, "overlap": false, "memory_bytes": 8e9,
       "intra_node": {"latency_s": 1e-6, "bandwidth_Bps": 1e11},
       "inter_node": {"latency_s": 1e-5, "bandwidth_Bps": 1e10}},
      {"name": "b", "preset": "compute-slow/net-slow", "compute_speed": 0.25},
      {"base": "compute-fast/net-fast", "data_parallel": 2, "zero_stage": 1},
      {"name": "dgx", "preset": "h100"},
      {"name": "nested", "topology": {"ranks_per_node": 3,
        "inter_node": {"latency_s": 2e-6, "bandwidth": 4e9}}}]})");
  ASSERT_TRUE(static_cast<bool>(s)) << errorOf(s.takeError());
  ASSERT_EQ(s->size(), 5u);
  const Machine &a = (*s)[0];
  EXPECT_EQ(a.topology.ranksPerNode, 4);
  EXPECT_EQ(a.topology.nicsPerNode, 2);
  EXPECT_FALSE(a.simulation.overlap);
  EXPECT_EQ(a.simulation.computeSpeed, 1.5);
  EXPECT_EQ(a.topology.interNode.latencySeconds, 1e-5);
  EXPECT_EQ(a.topology.intraNode.bytesPerSecond, 1e11);
  EXPECT_EQ(a.memoryLimitBytes(), 8e9);
  const Machine &b = (*s)[1];
  EXPECT_EQ(b.simulation.computeSpeed, 0.25);
  EXPECT_EQ(b.topology.interNode.bytesPerSecond, 12.5e9);
  EXPECT_EQ((*s)[2].name, "compute-fast/net-fast");
  EXPECT_EQ((*s)[2].simulation.dataParallel, 2);
  EXPECT_EQ((*s)[2].simulation.zeroStage, 1);
  EXPECT_EQ(a.simulation.zeroStage, 0);
  EXPECT_EQ((*s)[3].memoryLimitBytes(), 80e9);
  EXPECT_EQ((*s)[3].topology.nicsInEffect(), 8);
  // Without a preset: gridBase() (2 ranks per node, free links, no limit).
  const Machine &nested = (*s)[4];
  EXPECT_EQ(nested.topology.ranksPerNode, 3);
  EXPECT_EQ(nested.topology.interNode.bytesPerSecond, 4e9);
  EXPECT_EQ(nested.topology.intraNode.messageSeconds(1e9), 0.0);
  EXPECT_EQ(nested.memoryLimitBytes(), 0.0);

  struct Case {
    const char *json, *message;
  } cases[] = {
      {R"({"name": "x", "inter_node": {"bandwidth_gbps": 0}})",
       "system config.inter_node: unknown key 'bandwidth_gbps'"},
      {R"({"name": "x", "compute": 2})",
       "system config: unknown key 'compute'"},
      {R"({"compute_speed": 2})", "system config: missing \"name\""},
      {R"({"name": "x", "memory_bytes": "80GiB"})",
       "system config: \"memory_bytes\" must be a number"},
      {R"({"name": "x", "data_parallel": 0})",
       "system config: \"data_parallel\" must be an integer >= 1"},
      {R"({"name": "x", "zero_stage": 2})",
       "system config: \"zero_stage\" must be 0 (all-reduce, no sharding) "
       "or 1"},
      {R"({"name": "x", "zero_stage": true})",
       "system config: \"zero_stage\" must be 0"},
      {R"({"name": "x", "preset": "nope"})",
       "system config: unknown system preset 'nope'"},
      {R"([{"name": "x"}, {"name": "y", "overlap": 1}])",
       "system config [1]: \"overlap\" must be true or false"},
      {R"({"name": "a", "name": "b"})", "duplicate key 'name'"},
      {R"([])", "system config: no systems"},
  };
  for (const Case &c : cases) {
    llvm::Expected<std::vector<Machine>> r = parseSystems(c.json);
    ASSERT_FALSE(static_cast<bool>(r)) << c.json;
    std::string msg = errorOf(r.takeError());
    EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
  }
}

TEST(MachineJSON, LoadSystems) {
  llvm::Expected<std::vector<Machine>> grid = loadSystems("grid");
  ASSERT_TRUE(static_cast<bool>(grid));
  EXPECT_EQ(grid->size(), 9u);
  llvm::Expected<std::vector<Machine>> one = loadSystems("ideal");
  ASSERT_TRUE(static_cast<bool>(one));
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(one->front().name, "ideal");
  TempFile f(R"([{"name": "x"}, {"name": "y", "overlap": "no"}])");
  llvm::Expected<std::vector<Machine>> bad = loadSystems(f.path);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(errorOf(bad.takeError()),
            f.path.str().str() +
                ": system config [1]: \"overlap\" must be true or false");
}

// The device presets, topology, byte sizes and hardware JSON as the cost
// model reads them.

TEST(DevicePresets, DatasheetNumbers) {
  auto h100 = getDevicePreset("h100");
  ASSERT_TRUE(static_cast<bool>(h100));
  EXPECT_DOUBLE_EQ(h100->device.memoryBytesPerSecond, 3.35e12);
  EXPECT_DOUBLE_EQ(h100->device.memoryCapacityBytes, 80e9);
  EXPECT_DOUBLE_EQ(h100->device.peakFlops("bf16", /*matrix=*/true), 989.5e12);
  EXPECT_DOUBLE_EQ(h100->device.peakFlops("f32", /*matrix=*/false), 67e12);
  // Missing vector keys fall back to the vector f32 peak.
  EXPECT_DOUBLE_EQ(h100->device.peakFlops("bf16", /*matrix=*/false), 67e12);
  EXPECT_EQ(h100->topology.ranksPerNode, 8);

  auto h200 = getDevicePreset("H200");
  ASSERT_TRUE(static_cast<bool>(h200));
  EXPECT_DOUBLE_EQ(h200->device.memoryBytesPerSecond, 4.8e12);
  EXPECT_DOUBLE_EQ(h200->device.memoryCapacityBytes, 141e9);

  auto a100 = getDevicePreset("a100");
  ASSERT_TRUE(static_cast<bool>(a100));
  EXPECT_DOUBLE_EQ(a100->device.peakFlops("f16", true), 312e12);
  EXPECT_DOUBLE_EQ(a100->device.memoryBytesPerSecond, 2.039e12);

  auto cpu = getDevicePreset("cpu");
  ASSERT_TRUE(static_cast<bool>(cpu));
  EXPECT_DOUBLE_EQ(cpu->device.peakFlops("f32", true), 96 * 2.4e9 * 32);

  for (llvm::StringRef name : presetNames(PresetKind::Device)) {
    auto hw = getDevicePreset(name);
    ASSERT_TRUE(static_cast<bool>(hw)) << name.str();
    EXPECT_FALSE(static_cast<bool>(hw->validate())) << name.str();
  }
  auto bad = getDevicePreset("x100");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(errorOf(bad.takeError()).find("unknown device 'x100'"),
            std::string::npos);
}

TEST(Topology, IntraAndInterNode) {
  Topology t;
  t.ranksPerNode = 4;
  t.intraNode = {1e-6, 100e9};
  t.interNode = {5e-6, 10e9};
  EXPECT_DOUBLE_EQ(t.between(0, 3).bytesPerSecond, 100e9);
  EXPECT_DOUBLE_EQ(t.between(3, 4).bytesPerSecond, 10e9);
  EXPECT_DOUBLE_EQ(t.between(5, 7).latencySeconds, 1e-6);
  // alpha-beta: 5 us + 1 MB / 10 GB/s = 105 us; nothing for 0 bytes.
  EXPECT_NEAR(t.between(0, 4).seconds(1e6), 105e-6, 1e-12);
  EXPECT_EQ(t.between(0, 4).seconds(0), 0.0);
}

TEST(ByteSize, SuffixesAndErrors) {
  EXPECT_DOUBLE_EQ(*parseByteSize("80GB"), 80e9);
  EXPECT_DOUBLE_EQ(*parseByteSize("80 GB"), 80e9);
  EXPECT_DOUBLE_EQ(*parseByteSize("16GiB"), 16.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*parseByteSize("1.5e9"), 1.5e9);
  EXPECT_DOUBLE_EQ(*parseByteSize("512mb"), 512e6);
  EXPECT_DOUBLE_EQ(*parseByteSize("1024"), 1024);
  EXPECT_DOUBLE_EQ(*parseByteSize("0"), 0);
  // Sizes of 2^63 bytes or more overflow (99999999999999999999999GB).
  for (const char *bad :
       {"", "GB", "80XB", "-1GB", "abc", "1e999", "99999999999999999999999GB",
        "9.3e18", "10000000TiB"}) {
    auto v = parseByteSize(bad);
    EXPECT_FALSE(static_cast<bool>(v)) << bad;
    if (!v)
      llvm::consumeError(v.takeError());
  }
}

TEST(HardwareJSON, BaseAndOverrides) {
  auto hw = parseMachine(parseJSON(R"({
    "base": "h100", "name": "h100-tf32",
    "peak_flops": {"f32": 494.5e12},
    "memory_capacity": "40GB",
    "topology": {"gpus_per_node": 4,
                 "inter_node": {"latency_s": 1e-5, "bandwidth": 25e9}}
  })"),
                         MachineUse::Hardware);
  ASSERT_TRUE(static_cast<bool>(hw)) << errorOf(hw.takeError());
  EXPECT_EQ(hw->name, "h100-tf32");
  EXPECT_DOUBLE_EQ(hw->device.peakFlops("f32", true), 494.5e12);
  EXPECT_DOUBLE_EQ(hw->device.peakFlops("bf16", true), 989.5e12); // kept
  EXPECT_DOUBLE_EQ(hw->device.peakFlops("f32", false), 67e12);    // kept
  EXPECT_DOUBLE_EQ(hw->device.memoryCapacityBytes, 40e9);
  EXPECT_DOUBLE_EQ(hw->device.memoryBytesPerSecond, 3.35e12);
  EXPECT_EQ(hw->topology.ranksPerNode, 4);
  EXPECT_DOUBLE_EQ(hw->topology.interNode.bytesPerSecond, 25e9);
  EXPECT_DOUBLE_EQ(hw->topology.intraNode.bytesPerSecond, 450e9); // kept
}

TEST(HardwareJSON, FromScratchAndErrors) {
  auto hw = parseMachine(parseJSON(R"({
    "name": "toy", "peak_flops": {"f32": 1e12}, "memory_bandwidth": 1e11,
    "memory_capacity": 1e10, "op_overhead_s": 0})"),
                         MachineUse::Hardware);
  ASSERT_TRUE(static_cast<bool>(hw)) << errorOf(hw.takeError());
  // Without a base, the vector table defaults to peak_flops.
  EXPECT_DOUBLE_EQ(hw->device.peakFlops("f32", false), 1e12);

  struct Case {
    const char *json, *message;
  } cases[] = {
      {R"([1])", "expected an object"},
      {R"({"base": "h100", "memory_bandwith": 1})", "unknown key"},
      {R"({"base": "h100", "memory_bandwidth": "fast"})", "memory_bandwidth"},
      {R"({"base": "h100", "peak_flops": {"f32": -1}})", "must be positive"},
      {R"({"name": "x", "peak_flops": {"bf16": 1e12},
           "memory_bandwidth": 1e11, "memory_capacity": 1e10})",
       "\"f32\""},
      {R"({"base": "nope"})", "unknown device"},
      {R"({"base": "h100", "topology": {"intra_node": 3}})", "intra_node"},
      // A hardware file must define a device (no silent fallback to the
      // caller's preset).
      {R"({})", "defines no device"},
      {R"({"name": "x", "topology": {"ranks_per_node": 4}})",
       "defines no device"},
      {R"({"base": "h100", "memory_capacity": 1e30})", "too large"},
      {R"({"base": "h100", "topology": {"ranks_per_node": 4294967297}})",
       "out of range"},
  };
  for (const Case &c : cases) {
    auto r = parseMachine(parseJSON(c.json), MachineUse::Hardware);
    ASSERT_FALSE(static_cast<bool>(r)) << c.json;
    std::string msg = errorOf(r.takeError());
    EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
  }

  // With the caller's preset as the base (pipe-partition device=h100
  // hardware=<file>), an empty file is still an error, not that preset.
  auto h100 = getDevicePreset("h100");
  ASSERT_TRUE(static_cast<bool>(h100)) << errorOf(h100.takeError());
  auto empty = parseMachine(parseJSON("{}"), MachineUse::Hardware, &*h100);
  ASSERT_FALSE(static_cast<bool>(empty));
  std::string msg = errorOf(empty.takeError());
  EXPECT_NE(msg.find("defines no device"), std::string::npos) << msg;
  auto topologyOnly = parseMachine(
      parseJSON(R"({"base": "h100", "topology": {"ranks_per_node": 4}})"),
      MachineUse::Hardware, &*h100);
  EXPECT_TRUE(static_cast<bool>(topologyOnly))
      << errorOf(topologyOnly.takeError());
}

} // namespace
