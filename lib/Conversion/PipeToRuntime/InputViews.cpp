//===- InputViews.cpp - pipeopt-materialize-input-views -----------*- C++
//-*-===//
//
// Part of pipeopt. convert-pipe-to-runtime reads model inputs in place
// through placeholder memref.globals (kInputViewAttrName); after buffer
// deallocation this pass turns every read of one into the runtime call
// pipeopt_rt_input_view_<T> and erases the placeholders.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Conversion/Passes.h"
#include "pipeopt/Conversion/PipeToRuntime/PipeToRuntime.h"
#include "pipeopt/Conversion/RuntimeABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

namespace pipeopt {
#define GEN_PASS_DEF_MATERIALIZEINPUTVIEWSPASS
#include "pipeopt/Conversion/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;

namespace {

/// A checked placeholder: its buffer type and (argument, microbatch).
struct Placeholder {
  MemRefType type;
  int64_t arg = 0, microbatch = 0;
};

/// Checks `global` as a placeholder (see the pass description); emits the
/// error at it otherwise.
FailureOr<Placeholder> checkPlaceholder(memref::GlobalOp global,
                                        Attribute attr) {
  auto ids = dyn_cast<DenseI64ArrayAttr>(attr);
  if (!ids || ids.size() != 2 || ids[0] < 0 || ids[1] < 0)
    return global.emitError()
           << "'" << pipeopt::kInputViewAttrName
           << "' must be array<i64: argument, microbatch> with both >= 0";
  MemRefType type = global.getType();
  if (!global.isPrivate() || !global.isExternal() || !type.hasStaticShape() ||
      !type.getLayout().isIdentity() || type.getMemorySpace())
    return global.emitError()
           << "input view placeholder must be a private declaration (no "
              "initial value) of a statically shaped memref with the "
              "identity layout in the default memory space, got "
           << type;
  if (!pipeopt::runtimeDTypeName(type.getElementType()))
    return global.emitError()
           << "input view of element type " << type.getElementType()
           << ": the runtime carries " << pipeopt::runtimeDTypeList();
  return Placeholder{type, ids[0], ids[1]};
}

struct MaterializeInputViewsPass
    : pipeopt::impl::MaterializeInputViewsPassBase<MaterializeInputViewsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    pipeopt::RuntimeDecls decls(module, symbols);

    llvm::StringMap<Placeholder> placeholders;
    SmallVector<memref::GlobalOp> erase;
    for (auto global : module.getOps<memref::GlobalOp>()) {
      Attribute attr = global->getAttr(pipeopt::kInputViewAttrName);
      if (!attr)
        continue;
      FailureOr<Placeholder> p = checkPlaceholder(global, attr);
      if (failed(p))
        return signalPassFailure();
      placeholders[global.getSymName()] = *p;
      erase.push_back(global);
    }
    if (placeholders.empty())
      return;

    SmallVector<memref::GetGlobalOp> reads;
    // Only references resolved in this module's symbol table (a nested
    // module's symbol of the same name is another global).
    module.walk([&](memref::GetGlobalOp get) {
      if (placeholders.count(get.getName()) &&
          SymbolTable::getNearestSymbolTable(get) == module.getOperation())
        reads.push_back(get);
    });
    for (memref::GetGlobalOp get : reads) {
      const Placeholder &p = placeholders[get.getName()];
      Location loc = get.getLoc();
      OpBuilder b(get);
      FailureOr<func::FuncOp> callee =
          decls.get(loc, "pipeopt_rt_input_view", p.type.getElementType());
      if (failed(callee))
        return signalPassFailure();
      // The shape, one i64 per dimension, on the stack.
      int64_t rank = p.type.getRank();
      auto i64 = b.getI64Type();
      Value shape =
          memref::AllocaOp::create(b, loc, MemRefType::get({rank}, i64));
      for (int64_t d = 0; d < rank; ++d) {
        Value size =
            arith::ConstantIntOp::create(b, loc, p.type.getDimSize(d), 64);
        Value idx = arith::ConstantIndexOp::create(b, loc, d);
        memref::StoreOp::create(b, loc, size, shape, ValueRange{idx});
      }
      Value shapeArg = memref::CastOp::create(
          b, loc, UnrankedMemRefType::get(i64, 0), shape);
      Value arg = arith::ConstantIntOp::create(b, loc, p.arg, 64);
      Value mb = arith::ConstantIntOp::create(b, loc, p.microbatch, 64);
      auto call =
          func::CallOp::create(b, loc, *callee, ValueRange{arg, mb, shapeArg});
      Value view = memref::CastOp::create(b, loc, p.type, call.getResult(0));
      get.replaceAllUsesWith(view);
      get.erase();
      ++numViews;
    }
    for (memref::GlobalOp global : erase)
      global.erase();
  }
};

} // namespace
