//===- DecomposePads.cpp - pipeopt-decompose-pads -------------------------===//
//
// Part of pipeopt. tensor.pad -> tensor.empty + fill + tensor.insert_slice
// (upstream linalg::DecomposePadOpPattern), so that eliminate-empty-tensors
// lets the padded value's producer write into the padded buffer. See the
// pass description in Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace pipeopt {
#define GEN_PASS_DEF_DECOMPOSEPADSPASS
#include "pipeopt/Conversion/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;

namespace {

struct DecomposePadsPass
    : pipeopt::impl::DecomposePadsPassBase<DecomposePadsPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateDecomposePadPatterns(patterns);
    // Only the pads: no folding of the new ops back into one.
    GreedyRewriteConfig config;
    config.enableFolding(false);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      return signalPassFailure();
  }
};

} // namespace
