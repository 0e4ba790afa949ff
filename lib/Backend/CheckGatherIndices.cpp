//===- CheckGatherIndices.cpp - pipeopt-check-gather-indices
//---------------===//
//
// Part of pipeopt. Data-dependent tensor.extract indices (gathers) are
// compared with the extent they index; an index out of range is reported to
// the runtime and clamped. See the pass description in Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Backend/Passes.h"
#include "pipeopt/Conversion/RuntimeABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace pipeopt {
#define GEN_PASS_DEF_CHECKGATHERINDICESPASS
#include "pipeopt/Backend/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;

namespace {

/// True if `v` is an index computed from data: a cast of an integer.
bool isDataDependentIndex(Value v) {
  return v.getDefiningOp<arith::IndexCastOp>() ||
         v.getDefiningOp<arith::IndexCastUIOp>();
}

struct CheckGatherIndicesPass
    : pipeopt::impl::CheckGatherIndicesPassBase<CheckGatherIndicesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(pipeopt::checkRuntimeTarget(module, target)))
      return signalPassFailure();
    // Device code (target=cuda) has no runtime to report to: clamp only.
    bool report = target == "cpu";
    SymbolTable symbols(module);
    pipeopt::RuntimeDecls decls(module, symbols);
    // Ops of nested modules are left to a run on those modules (the
    // declaration must be in the symbol table the call resolves in).
    SmallVector<tensor::ExtractOp> extracts;
    module.walk([&](tensor::ExtractOp op) {
      if (op->getParentOfType<ModuleOp>() == module)
        extracts.push_back(op);
    });
    for (tensor::ExtractOp op : extracts) {
      for (auto [dim, index] : llvm::enumerate(op.getIndices())) {
        if (!isDataDependentIndex(index))
          continue;
        Location loc = op.getLoc();
        // No index is valid in an empty dimension, and no clamped one
        // either: reject it here rather than read outside the tensor.
        if (op.getTensor().getType().getDimSize(dim) == 0) {
          op.emitError() << "gathers from dimension " << dim << " of "
                         << op.getTensor().getType()
                         << ", which is empty: every index is out of range";
          return signalPassFailure();
        }
        OpBuilder b(op);
        Value size = tensor::DimOp::create(b, loc, op.getTensor(), dim);
        Value zero = arith::ConstantIndexOp::create(b, loc, 0);
        Value one = arith::ConstantIndexOp::create(b, loc, 1);
        if (report && failed(emitReport(b, loc, decls, index, size, zero, dim)))
          return signalPassFailure();
        Value last = arith::SubIOp::create(b, loc, size, one);
        Value clamped = arith::MaxSIOp::create(
            b, loc, arith::MinSIOp::create(b, loc, index, last), zero);
        op.getIndicesMutable()[dim].assign(clamped);
        ++numChecks;
      }
    }
  }

  /// `if (index < 0 || index >= size) pipeopt_rt_index_error(index, size,
  /// dim)` at `b`'s insertion point.
  static LogicalResult emitReport(OpBuilder &b, Location loc,
                                  pipeopt::RuntimeDecls &decls, Value index,
                                  Value size, Value zero, size_t dim) {
    FailureOr<func::FuncOp> report =
        decls.get(loc, "pipeopt_rt_index_error", Type());
    if (failed(report))
      return failure();
    Value negative =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, index, zero);
    Value tooLarge =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, index, size);
    Value bad = arith::OrIOp::create(b, loc, negative, tooLarge);
    scf::IfOp::create(b, loc, bad, [&](OpBuilder &tb, Location l) {
      auto i64 = tb.getI64Type();
      Value index64 = arith::IndexCastOp::create(tb, l, i64, index);
      Value size64 = arith::IndexCastOp::create(tb, l, i64, size);
      Value dim64 = arith::ConstantIntOp::create(tb, l, int64_t(dim), 64);
      func::CallOp::create(tb, l, *report, ValueRange{index64, size64, dim64});
      scf::YieldOp::create(tb, l);
    });
    return success();
  }
};

} // namespace
