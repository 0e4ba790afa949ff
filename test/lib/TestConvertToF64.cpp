//===- TestConvertToF64.cpp - -test-pipe-convert-to-f64 ---------*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
//
// Runs pipeopt::convertFunctionToF64 on every function with a body (or on the
// functions named by `functions=`), so lit tests can check the rewritten IR
// and its diagnostics (test/Transforms/convert-to-f64*.mlir).
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Transforms/ConvertToF64.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {
struct TestConvertToF64Pass
    : PassWrapper<TestConvertToF64Pass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestConvertToF64Pass)

  TestConvertToF64Pass() = default;
  TestConvertToF64Pass(const TestConvertToF64Pass &other)
      : PassWrapper(other) {}

  StringRef getArgument() const final { return "test-pipe-convert-to-f64"; }
  StringRef getDescription() const final {
    return "Convert functions from f32 to f64 (pipeopt::convertFunctionToF64)";
  }

  ListOption<std::string> functions{
      *this, "functions",
      llvm::cl::desc("Functions to convert (default: every function with a "
                     "body)")};

  void runOnOperation() override {
    bool ok = true;
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      if (!functions.empty() &&
          !llvm::is_contained(functions, fn.getSymName().str()))
        continue;
      if (failed(pipeopt::convertFunctionToF64(fn)))
        ok = false;
    }
    if (!ok)
      signalPassFailure();
  }
};
} // namespace

namespace pipeopt {
namespace test {
/// Registers -test-pipe-convert-to-f64.
void registerTestConvertToF64Pass() {
  PassRegistration<TestConvertToF64Pass>();
}
} // namespace test
} // namespace pipeopt
