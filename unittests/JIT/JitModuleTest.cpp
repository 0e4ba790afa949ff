//===- JitModuleTest.cpp - Unit tests of the JIT harness ------------------===//
//
// Part of pipeopt. Compiles small tensor functions with
// pipeopt::jit::JitModule and checks the values they return against values
// computed here, the ownership rules of returned buffers (an argument or a
// constant returned as is, one value returned twice), dynamic shapes, that
// inputs are never written, and the errors.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/JIT/JitModule.h"

#include "pipeopt/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace pipeopt::jit;

namespace {

class JitModuleTest : public ::testing::Test {
protected:
  JitModuleTest() {
    mlir::DialectRegistry registry;
    pipeopt::registerAllDialects(registry);
    context = std::make_unique<mlir::MLIRContext>(registry);
    context->loadAllAvailableDialects();
  }

  /// Parses `source` and JIT-compiles `entries`; fails the test on errors.
  std::unique_ptr<JitModule> compile(llvm::StringRef source,
                                     llvm::ArrayRef<std::string> entries) {
    module = mlir::parseSourceString<mlir::ModuleOp>(source, context.get());
    EXPECT_TRUE(module) << "parse error";
    if (!module)
      return nullptr;
    auto jit = JitModule::create(*module, entries);
    if (!jit) {
      ADD_FAILURE() << llvm::toString(jit.takeError());
      return nullptr;
    }
    return std::move(*jit);
  }

  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

Tensor filled(ElementKind kind, llvm::ArrayRef<int64_t> shape,
              llvm::ArrayRef<double> values) {
  Tensor t(kind, shape);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.set(i, values[i]);
  return t;
}

TEST(Tensor, KindsShapesAndConversions) {
  Tensor scalar(ElementKind::F64, {});
  EXPECT_EQ(scalar.numElements(), 1);
  EXPECT_EQ(scalar.typeString(), "f64[]");
  Tensor m(ElementKind::I32, {2, 3});
  EXPECT_EQ(m.numElements(), 6);
  EXPECT_EQ(m.byteSize(), 24u);
  EXPECT_EQ(m.typeString(), "i32[2x3]");
  m.set(4, -7.9);
  EXPECT_EQ(m.as<int32_t>()[4], -7);
  Tensor f(ElementKind::F32, {2});
  f.set(0, 0.1);
  EXPECT_EQ(f.as<float>()[0], 0.1f);
  EXPECT_EQ(f.get(0), double(0.1f));
  Tensor b(ElementKind::I1, {3});
  b.set(1, 5);
  EXPECT_EQ(b.get(1), 1);
  EXPECT_EQ(b.get(0), 0);
  mlir::MLIRContext ctx;
  EXPECT_EQ(elementKindOf(mlir::Float64Type::get(&ctx)), ElementKind::F64);
  EXPECT_EQ(elementKindOf(mlir::IntegerType::get(&ctx, 1)), ElementKind::I1);
  EXPECT_EQ(elementKindOf(mlir::Float16Type::get(&ctx)), std::nullopt);
}

TEST_F(JitModuleTest, MatmulAndScalarResults) {
  // y = x w and the sum of y, two results.
  auto jit = compile(R"mlir(
    #id = affine_map<(i, j) -> (i, j)>
    #red = affine_map<(i, j) -> ()>
    func.func @f(%x: tensor<2x3xf64>, %w: tensor<3x2xf64>) -> (tensor<2x2xf64>, tensor<f64>) {
      %c0 = arith.constant 0.0 : f64
      %e = tensor.empty() : tensor<2x2xf64>
      %z = linalg.fill ins(%c0 : f64) outs(%e : tensor<2x2xf64>) -> tensor<2x2xf64>
      %y = linalg.matmul ins(%x, %w : tensor<2x3xf64>, tensor<3x2xf64>) outs(%z : tensor<2x2xf64>) -> tensor<2x2xf64>
      %s0 = tensor.empty() : tensor<f64>
      %s1 = linalg.fill ins(%c0 : f64) outs(%s0 : tensor<f64>) -> tensor<f64>
      %s = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["reduction", "reduction"]}
          ins(%y : tensor<2x2xf64>) outs(%s1 : tensor<f64>) {
      ^bb0(%a: f64, %acc: f64):
        %n = arith.addf %a, %acc : f64
        linalg.yield %n : f64
      } -> tensor<f64>
      return %y, %s : tensor<2x2xf64>, tensor<f64>
    })mlir",
                     {"f"});
  ASSERT_TRUE(jit);
  const Signature *sig = jit->signature("f");
  ASSERT_TRUE(sig);
  EXPECT_EQ(sig->inputs.size(), 2u);
  EXPECT_EQ(sig->results.size(), 2u);
  Tensor x = filled(ElementKind::F64, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor w = filled(ElementKind::F64, {3, 2}, {1, -1, 0.5, 2, -2, 0});
  // x w = [[1 + 1 - 6, -1 + 4 + 0], [4 + 2.5 - 12, -4 + 10 + 0]]
  for (int call = 0; call < 3; ++call) {
    auto r = jit->call("f", {&x, &w});
    ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
    ASSERT_EQ(r->size(), 2u);
    const Tensor &y = (*r)[0];
    EXPECT_EQ(y.typeString(), "f64[2x2]");
    EXPECT_DOUBLE_EQ(y.get(0), -4);
    EXPECT_DOUBLE_EQ(y.get(1), 3);
    EXPECT_DOUBLE_EQ(y.get(2), -5.5);
    EXPECT_DOUBLE_EQ(y.get(3), 6);
    EXPECT_EQ((*r)[1].typeString(), "f64[]");
    EXPECT_DOUBLE_EQ((*r)[1].get(0), -0.5);
  }
}

TEST_F(JitModuleTest, ReturnedArgumentsConstantsAndDuplicates) {
  // An argument and a constant returned as they are (the callee returns
  // clones), and one computed value returned twice (one buffer, freed
  // once).
  auto jit = compile(R"mlir(
    func.func @g(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
      %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
      %s = arith.addf %a, %c : tensor<4xf32>
      return %a, %c, %s, %s : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    })mlir",
                     {"g"});
  ASSERT_TRUE(jit);
  Tensor a = filled(ElementKind::F32, {4}, {10, 20, 30, 40});
  for (int call = 0; call < 3; ++call) {
    auto r = jit->call("g", {&a});
    ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ((*r)[0].get(i), 10.0 * (i + 1));
      EXPECT_EQ((*r)[1].get(i), i + 1.0);
      EXPECT_EQ((*r)[2].get(i), 11.0 * (i + 1));
      EXPECT_EQ((*r)[3].get(i), 11.0 * (i + 1));
    }
    // Results are copies, not views of the input.
    EXPECT_NE((*r)[0].data(), a.data());
  }
}

TEST_F(JitModuleTest, InputsAreNotWritten) {
  // Without bufferization.writable = false, one-shot bufferization would
  // compute the result in the argument's buffer.
  auto jit = compile(R"mlir(
    #id = affine_map<(i) -> (i)>
    func.func @double(%a: tensor<3xf64>) -> tensor<3xf64> {
      %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
          outs(%a : tensor<3xf64>) {
      ^bb0(%x: f64):
        %y = arith.addf %x, %x : f64
        linalg.yield %y : f64
      } -> tensor<3xf64>
      return %r : tensor<3xf64>
    })mlir",
                     {"double"});
  ASSERT_TRUE(jit);
  Tensor a = filled(ElementKind::F64, {3}, {1, 2, 3});
  auto r = jit->call("double", {&a});
  ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
  EXPECT_EQ((*r)[0].get(2), 6);
  EXPECT_EQ(a.get(0), 1);
  EXPECT_EQ(a.get(1), 2);
  EXPECT_EQ(a.get(2), 3);
}

TEST_F(JitModuleTest, DynamicShapesAndIntegers) {
  // A gather of rows by i64 indices; the result has the indices' length.
  auto jit = compile(R"mlir(
    #rk = affine_map<(r, k) -> (r, k)>
    #r = affine_map<(r, k) -> (r)>
    func.func @take(%t: tensor<5x2xf32>, %ids: tensor<?xi64>) -> tensor<?x2xf32> {
      %c0 = arith.constant 0 : index
      %n = tensor.dim %ids, %c0 : tensor<?xi64>
      %e = tensor.empty(%n) : tensor<?x2xf32>
      %g = linalg.generic {indexing_maps = [#r, #rk], iterator_types = ["parallel", "parallel"]}
          ins(%ids : tensor<?xi64>) outs(%e : tensor<?x2xf32>) {
      ^bb0(%id: i64, %o: f32):
        %i = arith.index_cast %id : i64 to index
        %k = linalg.index 1 : index
        %v = tensor.extract %t[%i, %k] : tensor<5x2xf32>
        linalg.yield %v : f32
      } -> tensor<?x2xf32>
      return %g : tensor<?x2xf32>
    })mlir",
                     {"take"});
  ASSERT_TRUE(jit);
  Tensor table =
      filled(ElementKind::F32, {5, 2}, {0, 1, 10, 11, 20, 21, 30, 31, 40, 41});
  Tensor ids = filled(ElementKind::I64, {3}, {4, 0, 2});
  auto r = jit->call("take", {&table, &ids});
  ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
  const Tensor &g = (*r)[0];
  ASSERT_EQ(g.typeString(), "f32[3x2]");
  double expected[] = {40, 41, 0, 1, 20, 21};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(g.get(i), expected[i]);
}

TEST_F(JitModuleTest, CallErrors) {
  auto jit = compile(R"mlir(
    func.func @id(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
      return %a : tensor<2x3xf32>
    })mlir",
                     {"id"});
  ASSERT_TRUE(jit);
  Tensor good(ElementKind::F32, {2, 3});
  Tensor wrongShape(ElementKind::F32, {3, 2});
  Tensor wrongKind(ElementKind::F64, {2, 3});
  auto e1 = jit->call("id", {});
  ASSERT_FALSE(static_cast<bool>(e1));
  EXPECT_EQ(llvm::toString(e1.takeError()), "@id takes 1 argument, got 0");
  auto e2 = jit->call("id", {&wrongShape});
  ASSERT_FALSE(static_cast<bool>(e2));
  EXPECT_EQ(llvm::toString(e2.takeError()),
            "@id argument 0: expected tensor<2x3xf32>, got f32[3x2]");
  auto e3 = jit->call("id", {&wrongKind});
  ASSERT_FALSE(static_cast<bool>(e3));
  EXPECT_EQ(llvm::toString(e3.takeError()),
            "@id argument 0: expected tensor<2x3xf32>, got f64[2x3]");
  auto e4 = jit->call("other", {&good});
  ASSERT_FALSE(static_cast<bool>(e4));
  EXPECT_EQ(llvm::toString(e4.takeError()),
            "@other is not an entry of this JIT module");
  EXPECT_TRUE(static_cast<bool>(jit->call("id", {&good})));
  EXPECT_EQ(jit->signature("other"), nullptr);
}

TEST_F(JitModuleTest, CreateErrors) {
  module = mlir::parseSourceString<mlir::ModuleOp>(R"mlir(
    func.func @scalar(%a: f32) -> f32 {
      return %a : f32
    }
    func.func private @decl(tensor<2xf32>) -> tensor<2xf32>
    func.func @half(%a: tensor<2xf16>) -> tensor<2xf16> {
      return %a : tensor<2xf16>
    })mlir",
                                                   context.get());
  ASSERT_TRUE(module);
  auto check = [&](const std::string &entry, const std::string &message) {
    auto jit = JitModule::create(*module, {entry});
    ASSERT_FALSE(static_cast<bool>(jit));
    EXPECT_EQ(llvm::toString(jit.takeError()), message);
  };
  check("missing", "no function @missing in the module");
  check("decl", "@decl has no body");
  check("scalar", "@scalar: argument 0 has type f32; the JIT harness passes "
                  "ranked tensors of f32, f64, i64, i32, i8 or i1 only");
  check("half", "@half: argument 0 has type tensor<2xf16>; the JIT harness "
                "passes ranked tensors of f32, f64, i64, i32, i8 or i1 only");
}

} // namespace
