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

/// For a linalg.generic that only permutes one input (its body yields the
/// input element, both indexing maps are permutations), the map P with
/// out[i] = in[P(i)]; else nothing.
std::optional<AffineMap> permutationOf(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 ||
      generic.getNumLoops() != generic.getNumParallelLoops())
    return std::nullopt;
  Block &body = generic.getRegion().front();
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!yield || body.getOperations().size() != 1 ||
      yield.getNumOperands() != 1 || yield.getOperand(0) != body.getArgument(0))
    return std::nullopt;
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (!maps[0].isPermutation() || !maps[1].isPermutation())
    return std::nullopt;
  // out[outMap(l)] = in[inMap(l)]: with l = outMap^-1(i), out[i] =
  // in[inMap(outMap^-1(i))].
  return maps[0].compose(inversePermutation(maps[1]));
}

/// True if the permutation map `p` swaps the last two dimensions and keeps
/// the others in place (a batched matrix transpose).
bool swapsLastTwo(AffineMap p) {
  unsigned n = p.getNumResults();
  if (n < 2)
    return false;
  SmallVector<unsigned> perm;
  for (AffineExpr e : p.getResults())
    perm.push_back(cast<AffineDimExpr>(e).getPosition());
  for (unsigned i = 0; i + 2 < n; ++i)
    if (perm[i] != i)
      return false;
  return perm[n - 2] == n - 1 && perm[n - 1] == n - 2;
}

/// True for a linalg.generic that only transposes the last two dimensions
/// of one input, through either indexing map (permutationOf, swapsLastTwo).
bool isMatrixTranspose(Operation *op) {
  std::optional<AffineMap> p = permutationOf(op);
  return p && swapsLastTwo(*p);
}

/// True for a linalg.generic that only transposes the last two dimensions
/// of one input, read through its input map (the output map is the
/// identity). Fused into a contraction it becomes a transposed operand map,
/// which the BLAS kernel reads in place instead of materializing the copy.
/// Other permutations (attention's head transposes [1, 0, 2]) would move
/// the batch dimension out of the leading position, where the kernel cannot
/// take it, so they are not fused; nor are transposes written through a
/// permuted output map, whose fused maps the GPU kernels' matcher does not
/// take (measured: ResNet-50's classifier lost its cuBLAS call).
bool isPurePermutation(Operation *op) {
  return isMatrixTranspose(op) &&
         cast<linalg::GenericOp>(op).getIndexingMapsArray()[1].isIdentity();
}

/// Rewrites `transpose` (a pure permutation) of the only result of a
/// contraction generic whose init is a linalg.fill into that contraction
/// writing the permuted layout: a new fill of the transpose's init, the
/// contraction's output map composed with the inverse permutation. Leaves
/// anything else alone.
void foldTransposeIntoContraction(RewriterBase &rewriter,
                                  linalg::GenericOp transpose) {
  auto producer =
      transpose.getDpsInputs().front().getDefiningOp<linalg::GenericOp>();
  if (!producer || !isKernelOp(producer) || producer->getNumResults() != 1 ||
      !producer->hasOneUse() || producer.getNumDpsInits() != 1)
    return;
  auto fill = producer.getDpsInits().front().getDefiningOp<linalg::FillOp>();
  if (!fill || !fill.hasPureTensorSemantics())
    return;
  // transpose: out[i] = in[perm(i)], so in[c] lands at out[perm^-1(c)].
  AffineMap perm = *permutationOf(transpose);
  SmallVector<AffineMap> maps = producer.getIndexingMapsArray();
  maps.back() = inversePermutation(perm).compose(maps.back());

  rewriter.setInsertionPoint(transpose);
  Value init = transpose.getDpsInits().front();
  Value filled =
      linalg::FillOp::create(rewriter, fill.getLoc(), fill.getInputs(), init)
          .getResult(0);
  auto fused = linalg::GenericOp::create(
      rewriter, producer.getLoc(), TypeRange{init.getType()},
      producer.getDpsInputs(), ValueRange{filled}, maps,
      producer.getIteratorTypesArray());
  rewriter.cloneRegionBefore(producer.getRegion(), fused.getRegion(),
                             fused.getRegion().begin());
  rewriter.replaceOp(transpose, fused->getResults());
  rewriter.eraseOp(producer);
  if (fill->use_empty())
    rewriter.eraseOp(fill);
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
      // A contraction whose only user transposes its result: the transpose
      // becomes its output map (foldTransposeIntoContraction, below).
      if (op->getNumResults() == 1 && op->hasOneUse() &&
          isMatrixTranspose(*op->getResult(0).getUsers().begin()))
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

    // A transpose that feeds several contractions (a tied embedding table:
    // the LM head's forward and its backward both read it transposed) is
    // copied once per contraction, so that the fusion below folds each copy
    // into its contraction's operand map; the original goes if nothing
    // else reads it.
    {
      SmallVector<linalg::GenericOp> shared;
      module.walk([&](linalg::GenericOp op) {
        if (isPurePermutation(op) && !op->hasOneUse())
          shared.push_back(op);
      });
      for (linalg::GenericOp transpose : shared) {
        for (OpOperand &use :
             llvm::make_early_inc_range(transpose->getResult(0).getUses())) {
          if (!isKernelOp(use.getOwner()) || transpose->hasOneUse())
            continue;
          rewriter.setInsertionPointAfter(transpose);
          use.set(rewriter.clone(*transpose)->getResult(0));
        }
      }
    }

    // A transpose of a contraction's result (the gradient of a transposed
    // weight: dW^T computed as X^T dY, then transposed back into W's
    // layout) becomes the contraction's output map: the contraction writes
    // the transposed layout directly, which the BLAS call then produces as
    // B^T A^T, and the transposed copy is never materialized.
    {
      SmallVector<linalg::GenericOp> transposes;
      module.walk([&](linalg::GenericOp op) {
        if (isMatrixTranspose(op))
          transposes.push_back(op);
      });
      for (linalg::GenericOp transpose : transposes)
        foldTransposeIntoContraction(rewriter, transpose);
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
