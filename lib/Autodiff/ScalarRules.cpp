//===- ScalarRules.cpp - adjoints of scalar arith/math ops -------*- C++
//-*-===//
//
// Part of pipeopt. The derivative rules of scalar float ops, used inside
// linalg bodies and at the top level of a function (AutodiffInternal.h).
//
//===----------------------------------------------------------------------===//

#include "AutodiffInternal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace pipeopt::autodiff;

namespace {

/// Builds scalar float arithmetic of one type at one location.
struct Scalar {
  OpBuilder &b;
  Location loc;
  Type type;

  Value cst(double v) {
    return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, v));
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  Value cmp(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value log(Value x) { return math::LogOp::create(b, loc, x); }
  Value cos(Value x) { return math::CosOp::create(b, loc, x); }
  Value sin(Value x) { return math::SinOp::create(b, loc, x); }
  Value pow(Value x, Value y) { return math::PowFOp::create(b, loc, x, y); }
};

} // namespace

bool pipeopt::autodiff::isFloatLike(Type t) {
  if (auto shaped = dyn_cast<ShapedType>(t))
    t = shaped.getElementType();
  return isa<FloatType>(t);
}

FailureOr<SmallVector<Value>>
pipeopt::autodiff::scalarAdjoint(OpBuilder &b, Operation *op, Value g) {
  Location loc = op->getLoc();
  SmallVector<Value> d(op->getNumOperands());
  if (op->getNumResults() != 1)
    return failure();
  Value v = op->getResult(0);
  Scalar s{b, loc, v.getType()};
  auto x = [&](unsigned i) { return op->getOperand(i); };

  // max(a, b): a gets the gradient where a > b, b where b > a, half each
  // where equal (torch.maximum's subgradient). min: the mirror image.
  auto maxLike = [&](bool isMax) {
    Value zero = s.cst(0.0), half = s.mul(g, s.cst(0.5));
    auto pa = isMax ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT;
    Value aWins = s.cmp(pa, x(0), x(1));
    Value tie = s.cmp(arith::CmpFPredicate::OEQ, x(0), x(1));
    Value bWins = s.cmp(pa, x(1), x(0));
    d[0] = s.select(aWins, g, s.select(tie, half, zero));
    d[1] = s.select(bWins, g, s.select(tie, half, zero));
  };

  if (isa<arith::AddFOp>(op)) {
    d[0] = g;
    d[1] = g;
  } else if (isa<arith::SubFOp>(op)) {
    d[0] = g;
    d[1] = s.neg(g);
  } else if (isa<arith::MulFOp>(op)) {
    d[0] = s.mul(g, x(1));
    d[1] = s.mul(g, x(0));
  } else if (isa<arith::DivFOp>(op)) {
    // v = a / b: dv/da = 1/b, dv/db = -v/b.
    d[0] = s.div(g, x(1));
    d[1] = s.neg(s.div(s.mul(g, v), x(1)));
  } else if (isa<arith::NegFOp>(op)) {
    d[0] = s.neg(g);
  } else if (isa<arith::MaximumFOp, arith::MaxNumFOp>(op)) {
    maxLike(true);
  } else if (isa<arith::MinimumFOp, arith::MinNumFOp>(op)) {
    maxLike(false);
  } else if (isa<arith::SelectOp>(op)) {
    Value zero = s.cst(0.0);
    d[1] = s.select(x(0), g, zero);
    d[2] = s.select(x(0), zero, g);
  } else if (isa<arith::ExtFOp>(op)) {
    d[0] = arith::TruncFOp::create(b, loc, x(0).getType(), g);
  } else if (isa<arith::TruncFOp>(op)) {
    d[0] = arith::ExtFOp::create(b, loc, x(0).getType(), g);
  } else if (isa<math::ExpOp>(op)) {
    d[0] = s.mul(g, v);
  } else if (isa<math::Exp2Op>(op)) {
    d[0] = s.mul(g, s.mul(v, s.cst(M_LN2)));
  } else if (isa<math::ExpM1Op>(op)) {
    d[0] = s.mul(g, s.add(v, s.cst(1.0)));
  } else if (isa<math::LogOp>(op)) {
    d[0] = s.div(g, x(0));
  } else if (isa<math::Log1pOp>(op)) {
    d[0] = s.div(g, s.add(x(0), s.cst(1.0)));
  } else if (isa<math::Log2Op>(op)) {
    d[0] = s.div(g, s.mul(x(0), s.cst(M_LN2)));
  } else if (isa<math::Log10Op>(op)) {
    d[0] = s.div(g, s.mul(x(0), s.cst(M_LN10)));
  } else if (isa<math::TanhOp>(op)) {
    d[0] = s.mul(g, s.sub(s.cst(1.0), s.mul(v, v)));
  } else if (isa<math::SinOp>(op)) {
    d[0] = s.mul(g, s.cos(x(0)));
  } else if (isa<math::CosOp>(op)) {
    d[0] = s.neg(s.mul(g, s.sin(x(0))));
  } else if (isa<math::ErfOp, math::ErfcOp>(op)) {
    // d erf(a)/da = 2/sqrt(pi) exp(-a^2); erfc = 1 - erf.
    Value e = s.exp(s.neg(s.mul(x(0), x(0))));
    Value r = s.mul(g, s.mul(e, s.cst(M_2_SQRTPI)));
    d[0] = isa<math::ErfOp>(op) ? r : s.neg(r);
  } else if (isa<math::SqrtOp>(op)) {
    d[0] = s.div(s.mul(g, s.cst(0.5)), v);
  } else if (isa<math::RsqrtOp>(op)) {
    // v = a^(-1/2): dv/da = -v^3 / 2.
    d[0] = s.mul(g, s.mul(s.cst(-0.5), s.mul(v, s.mul(v, v))));
  } else if (isa<math::PowFOp>(op)) {
    // v = a^b: dv/da = b a^(b-1), dv/db = v log(a).
    d[0] = s.mul(g, s.mul(x(1), s.pow(x(0), s.sub(x(1), s.cst(1.0)))));
    d[1] = s.mul(g, s.mul(v, s.log(x(0))));
  } else if (auto fpowi = dyn_cast<math::FPowIOp>(op)) {
    // v = a^n (integer n): dv/da = n a^(n-1).
    Value n = fpowi.getRhs();
    Value one = arith::ConstantOp::create(b, loc, n.getType(),
                                          b.getIntegerAttr(n.getType(), 1));
    Value nm1 = arith::SubIOp::create(b, loc, n, one);
    Value nf = arith::SIToFPOp::create(b, loc, v.getType(), n);
    d[0] = s.mul(g, s.mul(nf, math::FPowIOp::create(b, loc, x(0), nm1)));
  } else if (isa<math::AbsFOp>(op)) {
    Value zero = s.cst(0.0);
    Value pos = s.cmp(arith::CmpFPredicate::OGT, x(0), zero);
    Value negv = s.cmp(arith::CmpFPredicate::OLT, x(0), zero);
    d[0] = s.select(pos, g, s.select(negv, s.neg(g), zero));
  } else if (isa<math::FmaOp>(op)) {
    d[0] = s.mul(g, x(1));
    d[1] = s.mul(g, x(0));
    d[2] = g;
  } else {
    return failure();
  }
  return d;
}

bool pipeopt::autodiff::hasNoGradient(Operation *op) {
  // Comparisons, integer -> float casts, constants and index computations:
  // their float results (if any) are constant with respect to every input.
  return isa<arith::CmpFOp, arith::CmpIOp, arith::SIToFPOp, arith::UIToFPOp,
             arith::ConstantOp, arith::IndexCastOp, arith::IndexCastUIOp,
             arith::FPToSIOp, arith::FPToUIOp, math::IsNaNOp, math::IsInfOp,
             math::IsFiniteOp, math::FloorOp, math::CeilOp, math::RoundOp,
             math::RoundEvenOp, math::TruncOp>(op);
}
