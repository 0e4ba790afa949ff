//===- AutodiffInternal.h - shared pieces of the AD library ------*- C++
//-*-===//
//
// Part of pipeopt. Not installed: helpers shared by the files of
// lib/Autodiff.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_LIB_AUTODIFF_AUTODIFFINTERNAL_H
#define PIPEOPT_LIB_AUTODIFF_AUTODIFFINTERNAL_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

namespace pipeopt::autodiff {

/// A float scalar, or a shaped type with float elements.
bool isFloatLike(mlir::Type t);

/// The adjoints of the operands of the scalar op `op` given the adjoint `g`
/// of its single result, built at `b`'s insertion point (after `op`); null
/// for operands that get none (conditions, integer exponents). Failure: no
/// rule for this op.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
scalarAdjoint(mlir::OpBuilder &b, mlir::Operation *op, mlir::Value g);

/// Ops whose results never carry a gradient (comparisons, int -> float
/// casts, rounding, constants).
bool hasNoGradient(mlir::Operation *op);

} // namespace pipeopt::autodiff

#endif // PIPEOPT_LIB_AUTODIFF_AUTODIFFINTERNAL_H
