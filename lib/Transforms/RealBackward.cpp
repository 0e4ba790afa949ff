//===- RealBackward.cpp - B and W costs from the generated backward -*- C++
//-*-===//
//
// Part of pipeopt. See RealBackward.h.
//
//===----------------------------------------------------------------------===//

#include "RealBackward.h"

#include "pipeopt/Autodiff/Autodiff.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace pipeopt;

/// A fill whose results only initialize the outputs of linalg ops (the
/// zero accumulator of a gradient reduction): part of the op that
/// accumulates (a GEMM with beta = 0, the same loop nest), not an op of
/// its own.
static bool isAccumulatorInit(Operation *op) {
  if (!isa<linalg::FillOp>(op))
    return false;
  for (OpOperand &use : op->getResult(0).getUses()) {
    auto user = dyn_cast<linalg::LinalgOp>(use.getOwner());
    if (!user || !user.isDpsInit(&use))
      return false;
  }
  return true;
}

/// Training: the B and W times of every op from its generated backward
/// (pipeopt/Autodiff: the op differentiated on its own, every generated op
/// costed by the roofline), in place of the per-op-class rule, and the
/// saved activations: an op's results that its own backward or a
/// consumer's reads (plus a lowered TOSA op's saved intermediates). Ops
/// that differ only in their operands (a transformer's repeated layers) are
/// differentiated once. Ops without a derivative rule keep the rule.
void pipeopt::costRealBackward(cost::CostAnalysis &analysis,
                               ArrayRef<Operation *> ops,
                               const machine::Machine &hw) {
  struct Entry {
    Operation *op;
    double b = 0, w = 0, bFlops = 0, wFlops = 0;
    bool ok = false;
    autodiff::OpBackward reads;
  };
  llvm::DenseMap<llvm::hash_code, SmallVector<Entry, 1>> seen;
  llvm::DenseMap<Operation *, Entry> entries;
  llvm::DenseSet<Value> needed;     // results some backward reads
  llvm::DenseSet<Value> neededArgs; // non-weight arguments one reads
  llvm::DenseMap<Operation *, double> argBytesOf; // ... charged to this op
  for (Operation *op : ops) {
    llvm::hash_code h = llvm::hash_combine(
        OperationEquivalence::computeHash(
            op, OperationEquivalence::ignoreHashValue,
            OperationEquivalence::ignoreHashValue,
            OperationEquivalence::IgnoreLocations),
        llvm::hash_combine_range(op->getOperandTypes().begin(),
                                 op->getOperandTypes().end()));
    SmallVector<Entry, 1> &bucket = seen[h];
    const Entry *found = nullptr;
    for (const Entry &e : bucket)
      if (e.op->getOperandTypes() == op->getOperandTypes() &&
          OperationEquivalence::isEquivalentTo(
              e.op, op, OperationEquivalence::ignoreValueEquivalence, nullptr,
              OperationEquivalence::IgnoreLocations))
        found = &e;
    Entry entry{op};
    if (found) {
      entry = *found;
      entry.op = op;
    } else {
      FailureOr<autodiff::OpBackward> r = autodiff::differentiateOp(
          op, cost::parameterOperands(op), [&](Operation *g, bool isW) {
            if (isAccumulatorInit(g))
              return;
            cost::OpCost c = cost::estimateOp(g, hw.device);
            (isW ? entry.w : entry.b) += c.forwardSeconds;
            (isW ? entry.wFlops : entry.bFlops) += c.flops;
          });
      entry.ok = succeeded(r);
      if (entry.ok)
        entry.reads = std::move(*r);
      bucket.push_back(entry);
    }
    if (entry.ok) {
      analysis.setBackward(op, entry.b, entry.w, entry.bFlops, entry.wFlops);
      SmallVector<unsigned> params = cost::parameterOperands(op);
      for (auto [i, read] : llvm::enumerate(entry.reads.readsOperand))
        if (read) {
          Value v = op->getOperand(i);
          needed.insert(v);
          // A function argument (a stage input, the data) the backward
          // reads is kept by the first op that reads it.
          if (isa<BlockArgument>(v) &&
              !llvm::is_contained(params, unsigned(i)) &&
              neededArgs.insert(v).second)
            argBytesOf[op] += cost::typeBytes(v.getType());
        }
      for (auto [j, read] : llvm::enumerate(entry.reads.readsResult))
        if (read)
          needed.insert(op->getResult(j));
    }
    entries[op] = std::move(entry);
  }
  // Saved activations. An op without a float result (an index computation,
  // token ids) has no backward of its own but may be read by a consumer's;
  // an op with one that could not be differentiated keeps the rule.
  for (Operation *op : ops) {
    const Entry &e = entries[op];
    bool floatResult = llvm::any_of(op->getResultTypes(), [](Type t) {
      auto rt = dyn_cast<RankedTensorType>(t);
      return rt && isa<FloatType>(rt.getElementType());
    });
    if (!e.ok && floatResult)
      continue;
    double bytes = e.ok ? double(e.reads.internalSavedBytes) : 0.0;
    bytes += argBytesOf.lookup(op);
    for (Value r : op->getResults())
      if (needed.contains(r))
        bytes += cost::typeBytes(r.getType());
    analysis.setSavedActivationBytes(op, bytes);
  }
}
