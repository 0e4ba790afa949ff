//===- DecomposePads.cpp - pipeopt-decompose-pads -------------------------===//
//
// Part of pipeopt. tensor.pad -> tensor.empty + fill + tensor.insert_slice
// (upstream linalg::DecomposePadOpPattern), then the padded value's producer
// writing into the padded tensor's interior. See the pass description in
// Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Backend/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace pipeopt {
#define GEN_PASS_DEF_DECOMPOSEPADSPASS
#include "pipeopt/Backend/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;

namespace {

/// For `tensor.insert_slice %v into %fill` where %fill is a linalg.fill of
/// a tensor.empty (a decomposed pad) and %v the only result of a linalg op
/// whose only init is a tensor.empty used by nothing else, or a linalg.fill
/// of one (a max-pool's -inf): moves the empty and the fill before that
/// producer (or its init's fill) and makes it (or the init's fill) write
/// into `tensor.extract_slice %fill` at the insert_slice's position, so that
/// one-shot bufferization writes the producer's result straight into the
/// padded buffer. (Upstream eliminate-empty-tensors does the same in
/// general, but corrupted the heap on a generated training module here:
/// heir_mnist_mlp, 8 stages, interleaved 1F1B.) Does nothing unless every
/// value it moves or uses dominates the producer.
void writeProducerIntoPad(tensor::InsertSliceOp insert, DominanceInfo &dom) {
  auto fill = insert.getDest().getDefiningOp<linalg::FillOp>();
  auto producer = insert.getSource().getDefiningOp<linalg::LinalgOp>();
  if (!fill || !producer || !fill->hasOneUse() ||
      producer->getNumResults() != 1 || producer.getNumDpsInits() != 1 ||
      producer->getBlock() != insert->getBlock())
    return;
  auto empty =
      fill.getDpsInitOperand(0)->get().getDefiningOp<tensor::EmptyOp>();
  // The operand that gets the interior: the producer's init, or the init
  // of the fill that initializes it.
  Operation *first = producer;
  OpOperand *init = producer.getDpsInitOperand(0);
  if (producer.payloadUsesValueFromOperand(init)) {
    auto initFill = init->get().getDefiningOp<linalg::FillOp>();
    if (!initFill || !initFill->hasOneUse() ||
        initFill->getBlock() != producer->getBlock())
      return;
    first = initFill;
    init = initFill.getDpsInitOperand(0);
  }
  auto producerEmpty = init->get().getDefiningOp<tensor::EmptyOp>();
  if (!empty || !empty->hasOneUse() || !producerEmpty ||
      !producerEmpty->hasOneUse())
    return;
  auto dominatesProducer = [&](ValueRange values) {
    return llvm::all_of(
        values, [&](Value v) { return dom.properlyDominates(v, first); });
  };
  if (!dominatesProducer(empty->getOperands()) ||
      !dominatesProducer(fill.getDpsInputs()) ||
      !dominatesProducer(insert.getOffsets()) ||
      !dominatesProducer(insert.getSizes()) ||
      !dominatesProducer(insert.getStrides()))
    return;
  empty->moveBefore(first);
  fill->moveBefore(first);
  OpBuilder b(first);
  Value interior = tensor::ExtractSliceOp::create(
      b, insert.getLoc(), cast<RankedTensorType>(init->get().getType()),
      fill.getResult(0), insert.getMixedOffsets(), insert.getMixedSizes(),
      insert.getMixedStrides());
  init->set(interior);
  producerEmpty->erase();
}

struct DecomposePadsPass
    : pipeopt::impl::DecomposePadsPassBase<DecomposePadsPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateDecomposePadPatterns(patterns);
    // Only the pads: no folding of the new ops back into one.
    GreedyRewriteConfig config;
    config.enableFolding(false);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
    DominanceInfo dom(getOperation());
    SmallVector<tensor::InsertSliceOp> inserts;
    getOperation().walk(
        [&](tensor::InsertSliceOp op) { inserts.push_back(op); });
    for (tensor::InsertSliceOp insert : inserts)
      writeProducerIntoPad(insert, dom);
  }
};

} // namespace
