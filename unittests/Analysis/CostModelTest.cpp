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
#include "mlir/Dialect/Math/IR/Math.h"
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
                        mlir::arith::ArithDialect, mlir::math::MathDialect>();
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
  machine::Machine hw = *machine::getDevicePreset("h100");
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
  machine::Machine hw = *machine::getDevicePreset("a100");
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
  CostAnalysis analysis(fn, *machine::getDevicePreset("h100"));
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

TEST_F(OpCostTest, OneOpOfEachKind) {
  // The op table dispatches on op classes and interfaces: each op below
  // hits a different entry (docs/CostModel.md "FLOPs and bytes per op
  // kind").
  auto ops = parse(R"(
    func.func @f(%x: tensor<1x8x8x4xf32>, %w: tensor<2x3x3x4xf32>,
                 %b: tensor<2xf32>, %q: tensor<8x16xi8>, %r: tensor<16x4xi8>,
                 %acc: tensor<8x4xi32>, %zp: i32, %in: tensor<1x4x6x6xf32>,
                 %win: tensor<2x2xf32>, %pool: tensor<1x4x3x3xf32>,
                 %m: tensor<8x16xf32>, %i: index) -> () {
      %zf = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
      %0 = tosa.conv2d %x, %w, %b, %zf, %zf {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x8x8x4xf32>, tensor<2x3x3x4xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x6x6x2xf32>
      %1 = linalg.quantized_matmul ins(%q, %r, %zp, %zp : tensor<8x16xi8>, tensor<16x4xi8>, i32, i32) outs(%acc : tensor<8x4xi32>) -> tensor<8x4xi32>
      %2 = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%in, %win : tensor<1x4x6x6xf32>, tensor<2x2xf32>) outs(%pool : tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
      %3 = tosa.max_pool2d %x {kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x8x8x4xf32>) -> tensor<1x4x4x4xf32>
      %4 = tosa.sigmoid %x : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
      %5 = tosa.cast %4 : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf16>
      %6 = math.exp %m : tensor<8x16xf32>
      %7 = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<1x8x8x4xf32>) -> tensor<1x1x8x4xf32>
      %8 = tosa.reverse %x {axis = 2 : i32} : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
      %9 = tensor.extract_slice %m[0, 0] [4, 16] [1, 1] : tensor<8x16xf32> to tensor<4x16xf32>
      %10 = tensor.collapse_shape %m [[0, 1]] : tensor<8x16xf32> into tensor<128xf32>
      %11 = tensor.empty() : tensor<8x16xf32>
      %12 = tensor.extract %m[%i, %i] : tensor<8x16xf32>
      %13 = tensor.splat %12 : tensor<8x16xf32>
      return
    })");
  ASSERT_EQ(ops.size(), 15u);
  machine::Machine hw = *machine::getDevicePreset("h100");
  auto cost = [&](int i) { return estimateOp(ops[i], hw.device); };
  // conv2d, weight [OC=2, 3, 3, IC=4], out 1x6x6x2 = 72:
  // 2 * 72 * (72 / 2) + 72 (bias).
  EXPECT_EQ(cost(1).kind, OpKind::Contraction);
  EXPECT_DOUBLE_EQ(cost(1).flops, 2 * 72.0 * 36 + 72);
  // quantized_matmul (neither contraction interface): listed as one;
  // 8 x 4 x 16 iterations x (2 subi, mul, add, 3 extsi casts free) = 4.
  EXPECT_EQ(cost(2).kind, OpKind::Contraction);
  EXPECT_DOUBLE_EQ(cost(2).flops, 8 * 4 * 16 * 4.0);
  // linalg pooling implements the convolution interface, yet is pooling:
  // N C OH OW KH KW = 1 * 4 * 3 * 3 * 2 * 2 iterations, one max each.
  EXPECT_EQ(cost(3).kind, OpKind::Pooling);
  EXPECT_DOUBLE_EQ(cost(3).flops, 4 * 9 * 4.0);
  EXPECT_EQ(cost(4).kind, OpKind::Pooling);
  EXPECT_DOUBLE_EQ(cost(4).flops, 64 * 4.0);
  // TOSA element-wise (trait) and tosa.cast (listed; 0 FLOP; of an
  // activation: on a parameter it would be folded into a view).
  EXPECT_EQ(cost(5).kind, OpKind::Elementwise);
  EXPECT_DOUBLE_EQ(cost(5).flops, 256);
  EXPECT_EQ(cost(6).kind, OpKind::Elementwise);
  EXPECT_DOUBLE_EQ(cost(6).flops, 0);
  EXPECT_DOUBLE_EQ(cost(6).bytesWritten, 256 * 2);
  // math on a tensor: one op per element.
  EXPECT_EQ(cost(7).kind, OpKind::Elementwise);
  EXPECT_DOUBLE_EQ(cost(7).flops, 128);
  // Reductions count input elements.
  EXPECT_EQ(cost(8).kind, OpKind::Reduction);
  EXPECT_DOUBLE_EQ(cost(8).flops, 256);
  EXPECT_EQ(cost(9).kind, OpKind::DataMovement);
  EXPECT_DOUBLE_EQ(cost(9).bytesRead, 256 * 4);
  // A slice of an activation reads only the slice (%m is an argument, but
  // a slice is a layout op: with folding off it is data movement).
  CostOptions noFold;
  noFold.foldParameterLayout = false;
  OpCost slice = estimateOp(ops[10], hw.device, noFold);
  EXPECT_EQ(slice.kind, OpKind::DataMovement);
  EXPECT_DOUBLE_EQ(slice.bytesRead, 4 * 16 * 4.0);
  EXPECT_EQ(estimateOp(ops[11], hw.device, noFold).kind, OpKind::View);
  EXPECT_EQ(cost(12).kind, OpKind::Constant);
  EXPECT_EQ(cost(13).kind, OpKind::DataMovement);
  EXPECT_DOUBLE_EQ(cost(13).bytesRead, 4);
  EXPECT_EQ(cost(14).kind, OpKind::Fill);
  EXPECT_DOUBLE_EQ(cost(14).bytesWritten, 128 * 4.0);
  EXPECT_EQ(cost(14).backwardInputSeconds, 0);
}

TEST_F(OpCostTest, UnknownOpIsConservative) {
  context.allowUnregisteredDialects();
  auto ops = parse(R"(
    func.func @f(%a: tensor<16x4xf32>) -> tensor<8xf32> {
      %0 = "test.mystery"(%a) : (tensor<16x4xf32>) -> tensor<8xf32>
      return %0 : tensor<8xf32>
    })");
  ASSERT_EQ(ops.size(), 1u);
  std::string remark;
  OpCost c =
      estimateOp(ops[0], machine::getDevicePreset("h100")->device, {}, &remark);
  EXPECT_EQ(c.kind, OpKind::Unknown);
  EXPECT_DOUBLE_EQ(c.flops, 64); // elements of the largest operand
  EXPECT_DOUBLE_EQ(c.bytesRead, 256);
  EXPECT_DOUBLE_EQ(c.bytesWritten, 32);
  // Unknown ops: B = W = F.
  EXPECT_DOUBLE_EQ(c.backwardWeightSeconds, c.forwardSeconds);
  EXPECT_NE(remark.find("unknown op 'test.mystery'"), std::string::npos);
}

TEST_F(OpCostTest, ParameterAnalysis) {
  auto ops = parse(R"(
    func.func @f(%x: tensor<8x16xf32>, %w: tensor<4x16xf32>,
                 %scale: tensor<4xf32>, %big: tensor<8x4xf32>,
                 %table: tensor<1x32x4xf32>, %ids: tensor<1x8xi32>)
        -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<1x8x4xf32>) {
      %e = tensor.empty() : tensor<16x4xf32>
      %wt = linalg.transpose ins(%w : tensor<4x16xf32>) outs(%e : tensor<16x4xf32>) permutation = [1, 0]
      %c0 = arith.constant 0.0 : f32
      %acc0 = tensor.empty() : tensor<8x4xf32>
      %acc = linalg.fill ins(%c0 : f32) outs(%acc0 : tensor<8x4xf32>) -> tensor<8x4xf32>
      %y = linalg.matmul ins(%x, %wt : tensor<8x16xf32>, tensor<16x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
      %k = arith.constant dense<1.0> : tensor<4x4xf32>
      %y2 = linalg.matmul ins(%y, %k : tensor<8x4xf32>, tensor<4x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
      %sb = tensor.expand_shape %scale [[0, 1]] output_shape [1, 4] : tensor<4xf32> into tensor<1x4xf32>
      %s = tensor.collapse_shape %sb [[0, 1]] : tensor<1x4xf32> into tensor<4xf32>
      %bs = linalg.broadcast ins(%s : tensor<4xf32>) outs(%acc0 : tensor<8x4xf32>) dimensions = [0]
      %z = arith.mulf %y2, %bs : tensor<8x4xf32>
      %z2 = arith.addf %z, %big : tensor<8x4xf32>
      %g = tosa.gather %table, %ids : (tensor<1x32x4xf32>, tensor<1x8xi32>) -> tensor<1x8x4xf32>
      return %z, %z2, %g : tensor<8x4xf32>, tensor<8x4xf32>, tensor<1x8x4xf32>
    })");
  ASSERT_EQ(ops.size(), 14u);
  auto fn = *module->getOps<mlir::func::FuncOp>().begin();
  ParameterAnalysis params(fn);
  // The matmul's right-hand side is %w through a transpose: a parameter;
  // its left-hand side %x (data) is not.
  llvm::ArrayRef<ParameterUse> mm = params.usesBy(ops[5]);
  ASSERT_EQ(mm.size(), 1u);
  EXPECT_EQ(mm[0].operand, 1u);
  EXPECT_EQ(mm[0].root, fn.getArgument(1));
  // A constant weight is a parameter too.
  llvm::ArrayRef<ParameterUse> mk = params.usesBy(ops[7]);
  ASSERT_EQ(mk.size(), 1u);
  EXPECT_EQ(mk[0].root, ops[6]->getResult(0));
  // The transpose only passes the weight on.
  EXPECT_TRUE(params.usesBy(ops[1]).empty());
  // A rank-1 scale through expand/collapse_shape and a broadcast (layout
  // ops) into an element-wise op: a parameter of the mulf (its source has
  // rank 1), and of the broadcast (a linalg op with a rank-1 argument
  // input).
  llvm::ArrayRef<ParameterUse> mul = params.usesBy(ops[11]);
  ASSERT_EQ(mul.size(), 1u);
  EXPECT_EQ(mul[0].operand, 1u);
  EXPECT_EQ(mul[0].root, fn.getArgument(2));
  ASSERT_EQ(params.usesBy(ops[10]).size(), 1u);
  // A rank-2 argument of an element-wise op is data, not a bias.
  EXPECT_TRUE(params.usesBy(ops[12]).empty());
  // The gather's table is a parameter; its indices are not.
  llvm::ArrayRef<ParameterUse> g = params.usesBy(ops[13]);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].operand, 0u);
  // Sources in order of first use; argument numbers without the constant
  // (what convert-pipe-to-runtime lists as the manifest's parameters).
  ASSERT_EQ(params.sources().size(), 4u);
  EXPECT_EQ(params.sources()[0], fn.getArgument(1));
  EXPECT_EQ(params.sources()[1], ops[6]->getResult(0));
  EXPECT_EQ(params.argumentNumbers(fn), (llvm::SmallVector<unsigned>{1, 2, 4}));
  // The per-op functions agree with the analysis.
  EXPECT_EQ(parameterOperands(ops[5]), (llvm::SmallVector<unsigned>{1}));
  mlir::Value root;
  EXPECT_TRUE(tracesToParameterSource(ops[9]->getResult(0), &root));
  EXPECT_EQ(root, fn.getArgument(2));
  EXPECT_FALSE(tracesToParameterSource(ops[5]->getResult(0)));
  // The cost model charges the readers their parameters' bytes.
  machine::Machine hw = *machine::getDevicePreset("h100");
  EXPECT_DOUBLE_EQ(estimateOp(ops[5], hw.device).paramBytes, 4 * 16 * 4.0);
  EXPECT_DOUBLE_EQ(estimateOp(ops[7], hw.device).paramBytes, 4 * 4 * 4.0);
  EXPECT_DOUBLE_EQ(estimateOp(ops[13], hw.device).paramBytes, 32 * 4 * 4.0);
}

} // namespace
