//===- OutlineLoopNests.cpp - pipeopt-outline-loop-nests --------*- C++ -*-===//
//
// Part of pipeopt. Moves each linalg op on buffers into a function of its
// own, one function per distinct op, so that LLVM compiles a transformer's
// repeated loop nests once. See the pass description in Backend/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "Outlining.h"
#include "pipeopt/Backend/Passes.h"

#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace pipeopt {
#define GEN_PASS_DEF_OUTLINELOOPNESTSPASS
#include "pipeopt/Backend/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;

/// Marks the functions this pass creates (so a second run leaves them).
static constexpr llvm::StringLiteral kLoopNestAttr = "pipeopt.loop_nest";
static constexpr llvm::StringLiteral kNamePrefix = "pipeopt_loop_nest_";

namespace {

struct OutlineLoopNestsPass
    : pipeopt::impl::OutlineLoopNestsPassBase<OutlineLoopNestsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::SmallVector<linalg::LinalgOp> ops;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal() || fn->hasAttr(kLoopNestAttr))
        continue;
      fn.walk([&](linalg::LinalgOp op) {
        if (op.hasPureBufferSemantics())
          ops.push_back(op);
      });
    }

    pipeopt::DistinctFunctions functions(module, kNamePrefix, kLoopNestAttr);
    for (linalg::LinalgOp op : ops) {
      // Arguments: the operands, then the non-constant values the regions
      // use from above; constants are cloned into the function.
      llvm::SmallVector<Value> args(op->getOperands());
      llvm::SetVector<Value> above;
      getUsedValuesDefinedAbove(op->getRegions(), above);
      llvm::SmallVector<Operation *> constants;
      for (Value v : above) {
        if (pipeopt::DistinctFunctions::isClonedConstant(v))
          constants.push_back(v.getDefiningOp());
        else
          args.push_back(v);
      }
      functions.outline(op.getOperation(), args, constants, {});
      ++numOutlined;
    }
    numFunctions = functions.size();
  }
};

} // namespace
