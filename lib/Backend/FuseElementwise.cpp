//===- FuseElementwise.cpp - pipeopt-fuse-elementwise
//----------------------===//
//
// Part of pipeopt. Element-wise linalg chains become one linalg.generic each,
// by upstream generalization and element-wise fusion, without touching the
// contractions and convolutions the BLAS kernels take. See the pass
// description in Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Backend/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace pipeopt {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "pipeopt/Backend/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;

namespace {

/// True for contractions and convolutions: the library kernels' ops.
bool isKernelOp(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  return linalgOp && (linalg::isaContractionOpInterface(linalgOp) ||
                      linalg::isaConvolutionOpInterface(linalgOp));
}

/// True for a linalg.generic that only transposes the last two dimensions
/// of one input: its body yields the input element, its input map swaps
/// the last two dimensions and keeps the others in place, its output map is
/// the identity. Fused into a contraction it becomes a transposed operand
/// map, which the BLAS kernel reads in place instead of materializing the
/// copy. Other permutations (attention's head transposes [1, 0, 2]) would
/// move the batch dimension out of the leading position, where the kernel
/// cannot take it, so they are not fused.
bool isPurePermutation(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 ||
      generic.getNumLoops() != generic.getNumParallelLoops())
    return false;
  Block &body = generic.getRegion().front();
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!yield || body.getOperations().size() != 1 ||
      yield.getNumOperands() != 1 || yield.getOperand(0) != body.getArgument(0))
    return false;
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  unsigned n = maps[0].getNumResults();
  if (n < 2 || !maps[0].isPermutation() || !maps[1].isIdentity())
    return false;
  SmallVector<unsigned> perm;
  for (AffineExpr e : maps[0].getResults())
    perm.push_back(cast<AffineDimExpr>(e).getPosition());
  for (unsigned i = 0; i + 2 < n; ++i)
    if (perm[i] != i)
      return false;
  return perm[n - 2] == n - 1 && perm[n - 1] == n - 2;
}

struct FuseElementwisePass
    : pipeopt::impl::FuseElementwisePassBase<FuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    IRRewriter rewriter(&getContext());

    // Named ops `pred` selects become linalg.generic (collected first: the
    // rewrite replaces the op being walked).
    auto generalize = [&](llvm::function_ref<bool(linalg::LinalgOp)> pred) {
      SmallVector<linalg::LinalgOp> ops;
      module.walk([&](linalg::LinalgOp op) {
        if (!isa<linalg::GenericOp>(op) && op.hasPureTensorSemantics() &&
            pred(op))
          ops.push_back(op);
      });
      for (linalg::LinalgOp op : ops) {
        rewriter.setInsertionPoint(op);
        if (succeeded(linalg::generalizeNamedOp(rewriter, op)))
          ++numGeneralized;
      }
    };
    // Element-wise named ops, for the fusion below.
    generalize([](linalg::LinalgOp op) {
      return isa<linalg::MapOp, linalg::ElementwiseOp, linalg::BroadcastOp,
                 linalg::TransposeOp>(op.getOperation());
    });
    // Contractions that read a transpose (generic by now), so that it can
    // be fused into their operand maps, and batch-1 batch_matmuls (TOSA's
    // leading 1 on every tensor), whose unit dimension is dropped next so
    // that the reshapes between a transpose and the contraction it feeds
    // (transpose -> expand_shape [1, K, N] -> batch_matmul) fold away.
    generalize([](linalg::LinalgOp op) {
      if (!linalg::isaContractionOpInterface(op))
        return false;
      if (isa<linalg::BatchMatmulOp>(op.getOperation()) &&
          op.getStaticLoopRanges().front() == 1)
        return true;
      return llvm::any_of(op.getDpsInputs(), [](Value v) {
        return isPurePermutation(v.getDefiningOp());
      });
    });

    {
      // Only contractions lose their unit dimensions: on element-wise ops
      // the reshapes it adds around every result cost a copy when the
      // result is a function result (measured: a fused chain fell from
      // 10.5 to 6 GB/s).
      linalg::ControlDropUnitDims control;
      control.controlFn = [](Operation *op) -> SmallVector<unsigned> {
        auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
        if (!linalgOp || !linalg::isaContractionOpInterface(linalgOp))
          return {};
        return llvm::to_vector(llvm::seq<unsigned>(0, linalgOp.getNumLoops()));
      };
      RewritePatternSet unit(&getContext());
      linalg::populateFoldUnitExtentDimsPatterns(unit, control);
      linalg::populateFoldUnitExtentDimsCanonicalizationPatterns(unit, control);
      if (failed(applyPatternsGreedily(module, std::move(unit))))
        return signalPassFailure();
    }

    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [](OpOperand *fused) {
          Operation *producer = fused->get().getDefiningOp();
          if (!producer || !producer->hasOneUse())
            return false;
          // A producer that reads its own `outs` (o + o on an init that
          // holds data): upstream's fusion keeps that init as the fused
          // op's output operand under the producer's map, so a consumer
          // that broadcasts the result re-reads the updated element on
          // every broadcast iteration (row 1 of x + bcast(2w) got 4w).
          if (auto linalgProducer = dyn_cast<linalg::LinalgOp>(producer))
            for (OpOperand &init : linalgProducer.getDpsInitsMutable())
              if (linalgProducer.payloadUsesValueFromOperand(&init))
                return false;
          if (isKernelOp(fused->getOwner()))
            return isPurePermutation(producer);
          return true;
        });
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
