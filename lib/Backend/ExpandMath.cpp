//===- ExpandMath.cpp - pipeopt-expand-math
//--------------------------------===//
//
// Part of pipeopt. math.erf / math.erfc (no LLVM lowering) become upstream
// polynomial approximations on f32 and libm calls otherwise. See the pass
// description in Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Backend/Passes.h"

#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace pipeopt {
#define GEN_PASS_DEF_EXPANDMATHPASS
#include "pipeopt/Backend/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;

namespace {

struct ExpandMathPass : pipeopt::impl::ExpandMathPassBase<ExpandMathPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();

    // Math ops on tensors are lowered to linalg first
    // (convert-elementwise-to-linalg); the expansions below work on scalars
    // and vectors only (on tensors they build invalid IR).
    bool bad = false;
    module.walk([&](Operation *op) {
      if (op->getDialect() && isa<math::MathDialect>(op->getDialect()) &&
          llvm::any_of(op->getResultTypes(), llvm::IsaPred<TensorType>) &&
          isa<math::ErfOp, math::ErfcOp>(op)) {
        op->emitError() << "'" << op->getName()
                        << "' on a tensor: lower it to linalg first "
                           "(convert-elementwise-to-linalg; "
                           "pipeopt-lower-to-llvm does)";
        bad = true;
      }
    });
    if (bad)
      return signalPassFailure();

    // f32 (and vectors of f32): polynomial approximations. tanh always:
    // LLVM's vectorizer knows no vector tanhf (glibc's libmvec has one, but
    // LLVM 22's table for it does not list it), so every tanhf of a GELU
    // loop was a scalar libm call (about a fifth of a small GPT-2 step).
    RewritePatternSet approx(ctx);
    bool all = approximateAll;
    populateMathPolynomialApproximationPatterns(approx, [all](StringRef name) {
      name.consume_front("math.");
      return all || name == "erf" || name == "erfc" || name == "tanh";
    });
    SmallVector<Operation *> scalarMath;
    module.walk([&](Operation *op) {
      if (op->getDialect() && isa<math::MathDialect>(op->getDialect()) &&
          llvm::none_of(op->getResultTypes(), llvm::IsaPred<TensorType>))
        scalarMath.push_back(op);
    });
    if (!scalarMath.empty() &&
        failed(applyOpPatternsGreedily(scalarMath, std::move(approx))))
      return signalPassFailure();

    // What is left of erf / erfc (f64, f16, ...) calls the C library.
    SmallVector<Operation *> rest;
    module.walk([&](Operation *op) {
      if (isa<math::ErfOp, math::ErfcOp>(op))
        rest.push_back(op);
    });
    if (rest.empty())
      return;
    RewritePatternSet libm(ctx);
    populateMathToLibmConversionPatterns(libm);
    if (failed(applyOpPatternsGreedily(rest, std::move(libm))))
      return signalPassFailure();
    module.walk([&](Operation *op) {
      if (isa<math::ErfOp, math::ErfcOp>(op)) {
        op->emitError() << "'" << op->getName()
                        << "' on this type cannot be lowered (no "
                           "approximation and no C library function)";
        signalPassFailure();
      }
    });
  }
};

} // namespace
