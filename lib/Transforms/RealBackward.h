//===- RealBackward.h - B and W costs from the generated backward -*- C++
//-*-===//
//
// Part of pipeopt. Private helper of pipe-partition and pipe-simulate.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_LIB_TRANSFORMS_REALBACKWARD_H
#define PIPEOPT_LIB_TRANSFORMS_REALBACKWARD_H

#include "pipeopt/Analysis/CostModel.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

namespace pipeopt {

/// Replaces the estimated B and W times of `ops` in `analysis` with the
/// roofline cost of their generated backward: each op is differentiated on
/// its own (autodiff::differentiateOp, its parameter operands as weights)
/// and every op of the generated B and W functions is costed on
/// `hw.device`. Ops that differ only in their operands (a transformer's
/// repeated layers) are differentiated once; measured ops and ops without a
/// derivative rule keep their times. Saved-activation bytes become the
/// bytes of each op's results that its own or a consumer's backward reads,
/// plus, for the first op whose backward reads a function argument that is
/// not a weight (a stage input, the data), that argument's bytes. The
/// caller's pass must declare the linalg, tensor, arith, math, scf and
/// affine dialects as dependent.
void costRealBackward(cost::CostAnalysis &analysis,
                      llvm::ArrayRef<mlir::Operation *> ops,
                      const machine::Machine &hw);

} // namespace pipeopt

#endif // PIPEOPT_LIB_TRANSFORMS_REALBACKWARD_H
