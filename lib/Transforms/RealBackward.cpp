//===- RealBackward.cpp - B and W costs from the generated backward -*- C++ -*-===//
//
// Part of pipeopt. See RealBackward.h.
//
//===----------------------------------------------------------------------===//

#include "RealBackward.h"

#include "pipeopt/Autodiff/Autodiff.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/DenseMap.h"

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
/// costed by the roofline), in place of the per-op-class rule. Ops that
/// differ only in their operands (a transformer's repeated layers) are
/// differentiated once. Ops without a derivative rule keep the rule.
void pipeopt::costRealBackward(cost::CostAnalysis &analysis,
                             ArrayRef<Operation *> ops,
                             const cost::Hardware &hw) {
  struct Entry {
    Operation *op;
    double b, w;
    bool ok;
  };
  llvm::DenseMap<llvm::hash_code, SmallVector<Entry, 1>> seen;
  for (Operation *op : ops) {
    if (analysis.get(op).measured)
      continue;
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
    Entry entry{op, 0, 0, false};
    if (found) {
      entry = *found;
      entry.op = op;
    } else {
      FailureOr<autodiff::OpBackward> r = autodiff::differentiateOp(
          op, cost::parameterOperands(op), [&](Operation *g, bool isW) {
            if (isAccumulatorInit(g))
              return;
            double t = cost::estimateOp(g, hw.device).forwardSeconds;
            (isW ? entry.w : entry.b) += t;
          });
      entry.ok = succeeded(r);
      bucket.push_back(entry);
    }
    if (entry.ok)
      analysis.setBackward(op, entry.b, entry.w);
  }
}

