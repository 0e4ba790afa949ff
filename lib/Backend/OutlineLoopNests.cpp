//===- OutlineLoopNests.cpp - pipeopt-outline-loop-nests --------*- C++ -*-===//
//
// Part of pipeopt. Moves each linalg op on buffers into a function of its
// own, one function per distinct op, so that LLVM compiles a transformer's
// repeated loop nests once. See the pass description in Backend/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "Outlining.h"
#include "pipeopt/Backend/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
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
        Operation *def = v.getDefiningOp();
        if (def && def->getNumResults() == 1 && matchPattern(v, m_Constant()))
          constants.push_back(def);
        else
          args.push_back(v);
      }
      llvm::SmallVector<Type> argTypes;
      for (Value v : args)
        argTypes.push_back(v.getType());

      func::FuncOp fn = functions.create(
          op.getLoc(), FunctionType::get(&getContext(), argTypes, {}));
      Block *entry = fn.addEntryBlock();
      OpBuilder b = OpBuilder::atBlockBegin(entry);
      IRMapping map;
      map.map(args, entry->getArguments());
      for (Operation *c : constants)
        b.clone(*c, map);
      b.clone(*op, map);
      func::ReturnOp::create(b, op.getLoc());
      fn = functions.intern(fn);
      OpBuilder callBuilder(op);
      func::CallOp::create(callBuilder, op.getLoc(), fn, args);
      op->erase();
      ++numOutlined;
    }
    numFunctions = functions.size();
  }
};

} // namespace
