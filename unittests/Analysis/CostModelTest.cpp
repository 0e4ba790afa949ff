//===- CostModelTest.cpp - Unit tests of the cost model ----------*- C++
//-*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Analysis/CostModel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace pipeopt;
using namespace pipeopt::cost;

namespace {

llvm::json::Value parseJSON(llvm::StringRef text) {
  auto v = llvm::json::parse(text);
  EXPECT_TRUE(static_cast<bool>(v)) << llvm::toString(v.takeError());
  return v ? std::move(*v) : llvm::json::Value(nullptr);
}

std::string errorOf(llvm::Error err) { return llvm::toString(std::move(err)); }

TEST(DevicePresets, DatasheetNumbers) {
  auto h100 = getPreset("h100");
  ASSERT_TRUE(static_cast<bool>(h100));
  EXPECT_DOUBLE_EQ(h100->device.memoryBandwidth, 3.35e12);
  EXPECT_DOUBLE_EQ(h100->device.memoryCapacity, 80e9);
  EXPECT_DOUBLE_EQ(h100->device.peakFlops("bf16", /*matrix=*/true), 989.5e12);
  EXPECT_DOUBLE_EQ(h100->device.peakFlops("f32", /*matrix=*/false), 67e12);
  // Missing vector keys fall back to the vector f32 peak.
  EXPECT_DOUBLE_EQ(h100->device.peakFlops("bf16", /*matrix=*/false), 67e12);
  EXPECT_EQ(h100->topology.ranksPerNode, 8);

  auto h200 = getPreset("H200");
  ASSERT_TRUE(static_cast<bool>(h200));
  EXPECT_DOUBLE_EQ(h200->device.memoryBandwidth, 4.8e12);
  EXPECT_DOUBLE_EQ(h200->device.memoryCapacity, 141e9);

  auto a100 = getPreset("a100");
  ASSERT_TRUE(static_cast<bool>(a100));
  EXPECT_DOUBLE_EQ(a100->device.peakFlops("f16", true), 312e12);
  EXPECT_DOUBLE_EQ(a100->device.memoryBandwidth, 2.039e12);

  auto cpu = getPreset("cpu");
  ASSERT_TRUE(static_cast<bool>(cpu));
  EXPECT_DOUBLE_EQ(cpu->device.peakFlops("f32", true), 96 * 2.4e9 * 32);

  for (llvm::StringRef name : presetNames()) {
    auto hw = getPreset(name);
    ASSERT_TRUE(static_cast<bool>(hw)) << name.str();
    EXPECT_FALSE(static_cast<bool>(hw->device.validate())) << name.str();
  }
  auto bad = getPreset("x100");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(errorOf(bad.takeError()).find("unknown device 'x100'"),
            std::string::npos);
}

TEST(Topology, IntraAndInterNode) {
  Topology t;
  t.ranksPerNode = 4;
  t.intraNode = {1e-6, 100e9};
  t.interNode = {5e-6, 10e9};
  EXPECT_DOUBLE_EQ(t.between(0, 3).bandwidth, 100e9);
  EXPECT_DOUBLE_EQ(t.between(3, 4).bandwidth, 10e9);
  EXPECT_DOUBLE_EQ(t.between(5, 7).latency, 1e-6);
  // alpha-beta: 5 us + 1 MB / 10 GB/s = 105 us; nothing for 0 bytes.
  EXPECT_NEAR(t.between(0, 4).seconds(1e6), 105e-6, 1e-12);
  EXPECT_EQ(t.between(0, 4).seconds(0), 0.0);
}

TEST(ByteSize, Suffixes) {
  EXPECT_DOUBLE_EQ(*parseByteSize("80GB"), 80e9);
  EXPECT_DOUBLE_EQ(*parseByteSize("80 GB"), 80e9);
  EXPECT_DOUBLE_EQ(*parseByteSize("16GiB"), 16.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*parseByteSize("1.5e9"), 1.5e9);
  EXPECT_DOUBLE_EQ(*parseByteSize("512mb"), 512e6);
  EXPECT_DOUBLE_EQ(*parseByteSize("1024"), 1024);
  EXPECT_DOUBLE_EQ(*parseByteSize("0"), 0);
  // Sizes of 2^63 bytes or more overflow (99999999999999999999999GB).
  for (const char *bad : {"", "GB", "80XB", "-1GB", "abc", "1e999",
                          "99999999999999999999999GB", "9.3e18",
                          "10000000TiB"}) {
    auto v = parseByteSize(bad);
    EXPECT_FALSE(static_cast<bool>(v)) << bad;
    if (!v)
      llvm::consumeError(v.takeError());
  }
}

TEST(HardwareJSON, BaseAndOverrides) {
  auto hw = parseHardware(parseJSON(R"({
    "base": "h100", "name": "h100-tf32",
    "peak_flops": {"f32": 494.5e12},
    "memory_capacity": "40GB",
    "topology": {"gpus_per_node": 4,
                 "inter_node": {"latency_s": 1e-5, "bandwidth": 25e9}}
  })"));
  ASSERT_TRUE(static_cast<bool>(hw)) << errorOf(hw.takeError());
  EXPECT_EQ(hw->device.name, "h100-tf32");
  EXPECT_DOUBLE_EQ(hw->device.peakFlops("f32", true), 494.5e12);
  EXPECT_DOUBLE_EQ(hw->device.peakFlops("bf16", true), 989.5e12); // kept
  EXPECT_DOUBLE_EQ(hw->device.peakFlops("f32", false), 67e12);    // kept
  EXPECT_DOUBLE_EQ(hw->device.memoryCapacity, 40e9);
  EXPECT_DOUBLE_EQ(hw->device.memoryBandwidth, 3.35e12);
  EXPECT_EQ(hw->topology.ranksPerNode, 4);
  EXPECT_DOUBLE_EQ(hw->topology.interNode.bandwidth, 25e9);
  EXPECT_DOUBLE_EQ(hw->topology.intraNode.bandwidth, 450e9); // kept
}

TEST(HardwareJSON, FromScratchAndErrors) {
  auto hw = parseHardware(parseJSON(R"({
    "name": "toy", "peak_flops": {"f32": 1e12}, "memory_bandwidth": 1e11,
    "memory_capacity": 1e10, "op_overhead_s": 0})"));
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
    auto r = parseHardware(parseJSON(c.json));
    ASSERT_FALSE(static_cast<bool>(r)) << c.json;
    std::string msg = errorOf(r.takeError());
    EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
  }

  // With the caller's preset as the base (pipe-partition device=h100
  // hardware=<file>), an empty file is still an error, not that preset.
  auto h100 = getPreset("h100");
  ASSERT_TRUE(static_cast<bool>(h100)) << errorOf(h100.takeError());
  auto empty = parseHardware(parseJSON("{}"), &*h100);
  ASSERT_FALSE(static_cast<bool>(empty));
  std::string msg = errorOf(empty.takeError());
  EXPECT_NE(msg.find("defines no device"), std::string::npos) << msg;
  auto topologyOnly = parseHardware(
      parseJSON(R"({"base": "h100", "topology": {"ranks_per_node": 4}})"),
      &*h100);
  EXPECT_TRUE(static_cast<bool>(topologyOnly))
      << errorOf(topologyOnly.takeError());
}

TEST(ProfileJSON, RuntimeFormat) {
  // The shape pipeopt-run --profile writes (docs/Runtime.md, "Profile JSON").
  auto p = parseProfile(parseJSON(R"({
    "format": "pipeopt-profile", "version": 1, "num_stages": 2,
    "stages": [
      {"stage": 0, "ranks": [0], "forward_s": 0.0011, "backward_s": 0.0023,
       "backward_input_s": null, "backward_weight_s": null,
       "backward_full_s": 0.0023, "count": {"F": 12}},
      {"stage": 1, "forward_s": 0.0012, "backward_s": null}
    ],
    "ops": [{"index": 3, "forward_s": 1e-6, "backward_input_s": 2e-6}]
  })"));
  ASSERT_TRUE(static_cast<bool>(p)) << errorOf(p.takeError());
  ASSERT_EQ(p->stages.size(), 2u);
  EXPECT_DOUBLE_EQ(p->stages[0].forward, 0.0011);
  EXPECT_DOUBLE_EQ(p->stages[0].backwardFull, 0.0023);
  EXPECT_LT(p->stages[0].backwardInput, 0);
  EXPECT_LT(p->stages[1].backwardFull, 0);
  EXPECT_DOUBLE_EQ(p->ops[3].backwardInput, 2e-6);

  for (const char *bad :
       {R"({})", R"({"stages": 3})", R"({"stages": [{"forward_s": 1}]})",
        R"({"stages": [{"stage": 0}]})",
        R"({"ops": [{"index": 0, "forward_s": -1}]})"}) {
    auto r = parseProfile(parseJSON(bad));
    EXPECT_FALSE(static_cast<bool>(r)) << bad;
    if (!r)
      llvm::consumeError(r.takeError());
  }
}

class OpCostTest : public ::testing::Test {
protected:
  OpCostTest() {
    context.loadDialect<mlir::func::FuncDialect, mlir::linalg::LinalgDialect,
                        mlir::tosa::TosaDialect, mlir::tensor::TensorDialect,
                        mlir::arith::ArithDialect>();
  }
  /// Parses `source` and returns the top-level ops of its first function.
  std::vector<mlir::Operation *> parse(llvm::StringRef source) {
    module = mlir::parseSourceString<mlir::ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    std::vector<mlir::Operation *> ops;
    if (!module)
      return ops;
    auto fn = *module->getOps<mlir::func::FuncOp>().begin();
    for (mlir::Operation &op : fn.getBody().front().without_terminator())
      ops.push_back(&op);
    return ops;
  }
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

TEST_F(OpCostTest, MatmulRoofline) {
  // 4096^3 matmul, f32: 2 * 4096^3 FLOP; compute-bound on H100 (67 TF/s).
  auto ops = parse(R"(
    func.func @f(%a: tensor<4096x4096xf32>, %b: tensor<4096x4096xf32>,
                 %c: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> {
      %0 = linalg.matmul ins(%a, %b : tensor<4096x4096xf32>, tensor<4096x4096xf32>)
                         outs(%c : tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
      return %0 : tensor<4096x4096xf32>
    })");
  ASSERT_EQ(ops.size(), 1u);
  Hardware hw = *getPreset("h100");
  OpCost c = estimateOp(ops[0], hw.device);
  double n = 4096.0;
  EXPECT_EQ(c.kind, OpKind::Contraction);
  EXPECT_DOUBLE_EQ(c.flops, 2 * n * n * n);
  EXPECT_DOUBLE_EQ(c.bytesRead, 3 * n * n * 4);
  EXPECT_DOUBLE_EQ(c.bytesWritten, n * n * 4);
  EXPECT_NEAR(c.forwardSeconds, 2 * n * n * n / 67e12 + 2e-6, 1e-12);
  // A weight (function argument on the right): B = W = F.
  EXPECT_DOUBLE_EQ(c.paramBytes, n * n * 4);
  EXPECT_DOUBLE_EQ(c.backwardInputSeconds, c.forwardSeconds);
  EXPECT_DOUBLE_EQ(c.backwardWeightSeconds, c.forwardSeconds);
}

TEST_F(OpCostTest, MemoryBoundElementwiseAndBackwardRules) {
  auto ops = parse(R"(
    func.func @f(%a: tensor<1024x1024xf32>, %b: tensor<1x1024x64xf32>,
                 %c: tensor<1x64x1024xf32>) -> (tensor<1024x1024xf32>, tensor<1x1024x1024xf32>) {
      %0 = tosa.exp %a : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
      %1 = tosa.exp %b : (tensor<1x1024x64xf32>) -> tensor<1x1024x64xf32>
      %2 = tosa.exp %c : (tensor<1x64x1024xf32>) -> tensor<1x64x1024xf32>
      %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
      %3 = tosa.matmul %1, %2, %zp, %zp : (tensor<1x1024x64xf32>, tensor<1x64x1024xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1024x1024xf32>
      return %0, %3 : tensor<1024x1024xf32>, tensor<1x1024x1024xf32>
    })");
  ASSERT_EQ(ops.size(), 5u);
  Hardware hw = *getPreset("a100");
  OpCost e = estimateOp(ops[0], hw.device);
  EXPECT_EQ(e.kind, OpKind::Elementwise);
  double bytes = 2 * 1024.0 * 1024 * 4;
  EXPECT_NEAR(e.forwardSeconds, bytes / 2.039e12 + 2e-6, 1e-12);
  EXPECT_DOUBLE_EQ(e.backwardInputSeconds, e.forwardSeconds);
  EXPECT_EQ(e.backwardWeightSeconds, 0);
  EXPECT_DOUBLE_EQ(e.savedActivationBytes, 1024.0 * 1024 * 4);
  // Attention-style matmul of two activations: B = 2F, W = 0.
  OpCost m = estimateOp(ops[4], hw.device);
  EXPECT_EQ(m.kind, OpKind::Contraction);
  EXPECT_EQ(m.paramBytes, 0);
  EXPECT_DOUBLE_EQ(m.backwardInputSeconds, 2 * m.forwardSeconds);
  EXPECT_EQ(m.backwardWeightSeconds, 0);
  // Constants are free.
  OpCost k = estimateOp(ops[3], hw.device);
  EXPECT_EQ(k.kind, OpKind::Constant);
  EXPECT_EQ(k.forwardSeconds, 0);
}

TEST_F(OpCostTest, AnalysisAndProfile) {
  auto ops = parse(R"(
    func.func @f(%a: tensor<64xf32>) -> tensor<64xf32> {
      %0 = arith.addf %a, %a {pipe.stage = 0 : i64} : tensor<64xf32>
      %1 = arith.mulf %0, %0 {pipe.stage = 0 : i64} : tensor<64xf32>
      %2 = arith.subf %1, %0 {pipe.stage = 1 : i64} : tensor<64xf32>
      return %2 : tensor<64xf32>
    })");
  ASSERT_EQ(ops.size(), 3u);
  auto fn = *module->getOps<mlir::func::FuncOp>().begin();
  CostAnalysis analysis(fn, *getPreset("h100"));
  double estimate = analysis.get(ops[0]).forwardSeconds;
  EXPECT_GT(estimate, 0);
  Profile profile;
  profile.stages[0].forward = 1e-3; // two equal ops: 0.5 ms each
  profile.ops[2].forward = 7e-3;
  ASSERT_FALSE(
      static_cast<bool>(applyProfile(analysis, fn.getBody().front(), profile)));
  EXPECT_NEAR(analysis.get(ops[0]).forwardSeconds, 0.5e-3, 1e-15);
  EXPECT_NEAR(analysis.get(ops[1]).forwardSeconds, 0.5e-3, 1e-15);
  EXPECT_TRUE(analysis.get(ops[1]).measured);
  EXPECT_DOUBLE_EQ(analysis.get(ops[2]).forwardSeconds, 7e-3);

  Profile missing;
  missing.stages[5].forward = 1;
  llvm::Error err = applyProfile(analysis, fn.getBody().front(), missing);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_NE(errorOf(std::move(err)).find("profile stage 5"), std::string::npos);
}

} // namespace
