//===- PreparePass.cpp - pipe-prepare: inline helper calls ------*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/STLExtras.h"

namespace pipeopt {
#define GEN_PASS_DEF_PREPAREPASS
#include "pipeopt/Transforms/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;

namespace {
struct PreparePass : pipeopt::impl::PreparePassBase<PreparePass> {
  void runOnOperation() override;
};
} // namespace

void PreparePass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTableCollection symbols;

  // Reject what the inliner cannot or must not resolve, with a location.
  bool bad = false;
  module.walk([&](func::CallOp call) {
    auto callee = symbols.lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (!callee || callee.isExternal()) {
      call.emitError() << "cannot inline call to " << call.getCalleeAttr()
                       << ": the callee has no body, so its cost and stage "
                          "cannot be determined (add its definition to the "
                          "module)";
      bad = true;
    }
  });
  if (bad)
    return signalPassFailure();

  // Detect recursion: a call chain that reaches its own function.
  llvm::DenseMap<Operation *, unsigned> state; // 0 new, 1 active, 2 done
  std::function<bool(func::FuncOp)> visit = [&](func::FuncOp fn) -> bool {
    unsigned &s = state[fn];
    if (s == 2)
      return true;
    s = 1;
    bool ok = true;
    fn.walk([&](func::CallOp call) {
      if (!ok)
        return;
      auto callee = symbols.lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      if (state.lookup(callee) == 1) {
        call.emitError() << "cannot inline recursive call to "
                         << call.getCalleeAttr();
        ok = false;
        return;
      }
      ok = visit(callee);
    });
    state[fn] = 2;
    return ok;
  };
  for (auto fn : module.getOps<func::FuncOp>())
    if (!visit(fn))
      return signalPassFailure();

  unsigned calls = 0;
  module.walk([&](func::CallOp) { ++calls; });
  // Nothing to inline: leave the module exactly as it is (the inliner would
  // also canonicalize, which costs as much as parsing a large model).
  if (calls == 0)
    return;

  OpPassManager pm(ModuleOp::getOperationName());
  pm.addPass(createInlinerPass());
  pm.addPass(createSymbolDCEPass());
  pm.addPass(createCanonicalizerPass());
  if (failed(runPipeline(pm, module)))
    return signalPassFailure();

  unsigned remaining = 0;
  module.walk([&](func::CallOp call) {
    ++remaining;
    call.emitError() << "call to " << call.getCalleeAttr()
                     << " could not be inlined";
  });
  if (remaining)
    return signalPassFailure();
  numInlined = calls;
}
