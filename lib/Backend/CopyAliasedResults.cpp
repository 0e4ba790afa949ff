//===- CopyAliasedResults.cpp - pipeopt-copy-aliased-results ----*- C++ -*-===//
//
// Part of pipeopt. Copies function results that are arguments or repeated
// so that buffer-results-to-out-params sees one allocation per result. See
// the pass description in Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Backend/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace pipeopt {
#define GEN_PASS_DEF_COPYALIASEDRESULTSPASS
#include "pipeopt/Backend/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;

namespace {

struct CopyAliasedResultsPass
    : pipeopt::impl::CopyAliasedResultsPassBase<CopyAliasedResultsPass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation().walk([&](func::ReturnOp ret) {
      llvm::SmallPtrSet<Value, 8> seen;
      OpBuilder b(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Value v = operand.get();
        auto type = dyn_cast<RankedTensorType>(v.getType());
        bool aliased = isa<BlockArgument>(v) || !seen.insert(v).second;
        if (!type || !aliased)
          continue;
        Value init = tensor::EmptyOp::create(b, ret.getLoc(), type.getShape(),
                                             type.getElementType());
        operand.set(
            linalg::CopyOp::create(b, ret.getLoc(), v, init).getResult(0));
      }
    });
  }
};

} // namespace
