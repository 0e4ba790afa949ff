//===- TestCostModel.cpp - -test-pipe-cost-model ------------------*- C++
//-*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
//
// Prints the cost model's estimate of every top-level op of every function
// with a body as a remark at the op's location, so lit tests can check exact
// FLOP and byte counts with -verify-diagnostics.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Analysis/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace pipeopt;

namespace {
struct TestCostModelPass
    : PassWrapper<TestCostModelPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestCostModelPass)

  TestCostModelPass() = default;
  TestCostModelPass(const TestCostModelPass &other) : PassWrapper(other) {}

  StringRef getArgument() const final { return "test-pipe-cost-model"; }
  StringRef getDescription() const final {
    return "Print the cost model's per-op FLOPs, bytes and times as remarks";
  }

  Option<std::string> device{*this, "device",
                             llvm::cl::desc("Device preset (h100, h200, a100, "
                                            "cpu)"),
                             llvm::cl::init("h100")};
  Option<std::string> hardware{
      *this, "hardware",
      llvm::cl::desc("Hardware JSON file (overrides device)"),
      llvm::cl::init("")};
  Option<std::string> profile{*this, "profile",
                              llvm::cl::desc("Measured profile JSON file"),
                              llvm::cl::init("")};

  void runOnOperation() override {
    auto hw = machine::loadMachine(device, hardware);
    if (!hw) {
      getOperation().emitError() << llvm::toString(hw.takeError());
      return signalPassFailure();
    }
    std::optional<cost::Profile> prof;
    if (!profile.empty()) {
      auto p = cost::loadProfile(profile);
      if (!p) {
        getOperation().emitError() << llvm::toString(p.takeError());
        return signalPassFailure();
      }
      prof = *p;
    }
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      cost::CostAnalysis analysis(fn, *hw);
      if (prof) {
        if (auto err =
                cost::applyProfile(analysis, fn.getBody().front(), *prof)) {
          fn.emitError() << llvm::toString(std::move(err));
          return signalPassFailure();
        }
      }
      int index = 0;
      for (Operation &op : fn.getBody().front().without_terminator()) {
        const cost::OpCost &c = analysis.get(&op);
        op.emitRemark() << llvm::formatv(
            "op #{0} {1}: kind={2} flops={3:F0} read={4:F0} written={5:F0} "
            "time={6:E3} B={7:E3} W={8:E3} params={9:F0} saved={10:F0}{11}",
            index++, op.getName().getStringRef(), cost::toString(c.kind),
            c.flops, c.bytesRead, c.bytesWritten, c.forwardSeconds,
            c.backwardInputSeconds, c.backwardWeightSeconds, c.paramBytes,
            c.savedActivationBytes, c.measured ? " measured" : "");
      }
    }
  }
};
} // namespace

namespace pipeopt {
namespace test {
/// Registers -test-pipe-cost-model.
void registerTestCostModelPass() { PassRegistration<TestCostModelPass>(); }
} // namespace test
} // namespace pipeopt
