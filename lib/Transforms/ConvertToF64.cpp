//===- ConvertToF64.cpp - rewrite a function's f32 computation to f64 -----===//
//
// Part of pipeopt. See pipeopt/Transforms/ConvertToF64.h.
//
// The rewrite is one AttrTypeReplacer over the function (types of results
// and block arguments, attributes, the function type), with replacements
// for the attributes whose payload depends on the element type (FloatAttr,
// dense and dense_resource elements), which the generic sub-element rewrite
// would otherwise rebuild with f32 bits under an f64 type. Everything that
// cannot be widened is rejected first, so a failure leaves the function
// untouched.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Transforms/ConvertToF64.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/APFloat.h"

#include <complex>

using namespace mlir;

namespace {

/// Walks `t` (a type with sub-elements, e.g. tensor<4xcomplex<f16>>) and
/// returns the first floating-point type that is neither f32 nor f64.
FloatType otherFloatIn(Type t) {
  FloatType found;
  AttrTypeWalker walker;
  walker.addWalk([&](FloatType ft) {
    if (!ft.isF32() && !ft.isF64() && !found)
      found = ft;
  });
  walker.walk(t);
  return found;
}

/// True if `t` nests f32.
bool containsF32(Type t) {
  bool found = false;
  AttrTypeWalker walker;
  walker.addWalk([&](FloatType ft) {
    if (ft.isF32())
      found = true;
  });
  walker.walk(t);
  return found;
}

bool hasF32Types(Operation *op) {
  return llvm::any_of(op->getOperandTypes(), containsF32) ||
         llvm::any_of(op->getResultTypes(), containsF32);
}

/// True if an attribute of `op` (or a nested attribute) is a symbol
/// reference.
bool refersToSymbol(Operation *op) {
  bool found = false;
  AttrTypeWalker walker;
  walker.addWalk([&](SymbolRefAttr) { found = true; });
  walker.walk(op->getAttrDictionary());
  return found;
}

/// Checks that everything in `function` can be widened; emits a diagnostic
/// for each problem (at the op that defines it).
LogicalResult checkConvertible(FunctionOpInterface function) {
  bool ok = true;
  auto reportOtherFloat = [&](Operation *op, Type t, StringRef what) {
    if (FloatType other = otherFloatIn(t)) {
      op->emitError() << what << " has type " << t << ": it computes in "
                      << other
                      << ", which cannot be converted to f64 (only f32 "
                         "computations are widened)";
      ok = false;
      return true;
    }
    return false;
  };

  for (BlockArgument arg : function.getArguments())
    if (reportOtherFloat(function, arg.getType(),
                         "argument " + std::to_string(arg.getArgNumber())))
      break;
  for (auto [i, t] : llvm::enumerate(function.getResultTypes()))
    if (reportOtherFloat(function, t, "result " + std::to_string(i)))
      break;

  function.getFunctionBody().walk([&](Operation *op) {
    // A value of another float type is reported where it is defined (not
    // again at every user).
    bool reported = false;
    for (auto [i, t] : llvm::enumerate(op->getResultTypes()))
      if ((reported = reportOtherFloat(op, t, "result " + std::to_string(i))))
        break;
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (!reported)
            reported = reportOtherFloat(op, arg.getType(),
                                        "block argument " +
                                            std::to_string(arg.getArgNumber()));

    if (op->getName().stripDialect() == "bitcast" && hasF32Types(op)) {
      op->emitError() << "reinterprets the bits of f32 data, which cannot "
                         "be converted to f64";
      ok = false;
    }
    if (refersToSymbol(op) && hasF32Types(op)) {
      op->emitError()
          << "refers to a symbol outside the function and has f32 operands "
             "or results; the symbol is not converted to f64 (inline calls "
             "first, e.g. with pipe-prepare)";
      ok = false;
    }

    // dense_resource constants need their data to be converted.
    AttrTypeWalker walker;
    walker.addWalk([&](DenseResourceElementsAttr attr) {
      if (!containsF32(attr.getType()))
        return;
      if (!isa<FloatType>(attr.getType().getElementType()) ||
          !llvm::isa<DenseF32ResourceElementsAttr>(attr)) {
        op->emitError() << "dense_resource '" << attr.getRawHandle().getKey()
                        << "' of type " << attr.getType()
                        << " cannot be converted to f64";
        ok = false;
        return;
      }
      if (!llvm::cast<DenseF32ResourceElementsAttr>(attr).tryGetAsArrayRef()) {
        op->emitError() << "dense_resource '" << attr.getRawHandle().getKey()
                        << "' has no data (an elided or missing blob), so it "
                           "cannot be converted to f64";
        ok = false;
      }
    });
    walker.walk(op->getAttrDictionary());
  });
  return success(ok);
}

/// Exact f32 -> f64 conversion of one value.
APFloat widen(const APFloat &value) {
  APFloat result = value;
  bool losesInfo = false;
  result.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                 &losesInfo);
  return result;
}

/// The replacer that widens f32 everywhere in types and attributes.
void addF64Replacements(AttrTypeReplacer &replacer, MLIRContext *context) {
  Type f64 = Float64Type::get(context);
  // Types: every f32 becomes f64; container types (tensor, vector, memref,
  // complex, function) are rebuilt by the generic sub-element rewrite.
  replacer.addReplacement([f64](FloatType t) -> std::optional<Type> {
    if (t.isF32())
      return f64;
    return std::nullopt;
  });

  // Attributes whose payload is f32 bits. Registered after the type
  // replacement, so they are tried first; each returns `skip`, so that its
  // result (already f64) is not rewritten again.
  using Result = std::optional<std::pair<Attribute, WalkResult>>;
  replacer.addReplacement([f64](FloatAttr attr) -> Result {
    if (!attr.getType().isF32())
      return std::nullopt;
    return std::make_pair(FloatAttr::get(f64, widen(attr.getValue())),
                          WalkResult::skip());
  });
  replacer.addReplacement([f64,
                           &replacer](DenseIntOrFPElementsAttr attr) -> Result {
    Type elem = attr.getElementType();
    auto newType = cast<ShapedType>(replacer.replace(attr.getType()));
    if (isa<FloatType>(elem) && cast<FloatType>(elem).isF32()) {
      DenseElementsAttr widened = cast<DenseFPElementsAttr>(attr).mapValues(
          f64, [](const APFloat &v) { return widen(v).bitcastToAPInt(); });
      // mapValues keeps the shape; the container type itself (e.g. a
      // tensor encoding) is taken from the converted type.
      return std::make_pair(widened.reshape(newType), WalkResult::skip());
    }
    auto complexType = dyn_cast<ComplexType>(elem);
    if (complexType && complexType.getElementType().isF32()) {
      SmallVector<std::complex<APFloat>> values;
      for (std::complex<APFloat> v : attr.getValues<std::complex<APFloat>>())
        values.emplace_back(widen(v.real()), widen(v.imag()));
      return std::make_pair(DenseElementsAttr::get(newType, values),
                            WalkResult::skip());
    }
    return std::nullopt;
  });
  replacer.addReplacement([&replacer](
                              DenseResourceElementsAttr attr) -> Result {
    auto f32Attr = dyn_cast<DenseF32ResourceElementsAttr>(attr);
    if (!f32Attr)
      return std::nullopt;
    // checkConvertible made sure the blob is there.
    std::optional<ArrayRef<float>> data = f32Attr.tryGetAsArrayRef();
    SmallVector<double> widened(data->begin(), data->end());
    auto newType = cast<ShapedType>(replacer.replace(attr.getType()));
    std::string name = (attr.getRawHandle().getKey() + "_f64").str();
    return std::make_pair(
        DenseF64ResourceElementsAttr::get(
            newType, name,
            HeapAsmResourceBlob::allocateAndCopyInferAlign<double>(widened)),
        WalkResult::skip());
  });
  // Op parameters given as array<f32: ...> keep their meaning (and type).
  replacer.addReplacement([](DenseArrayAttr attr) -> Result {
    return std::make_pair(Attribute(attr), WalkResult::skip());
  });
}

} // namespace

LogicalResult pipeopt::convertFunctionToF64(FunctionOpInterface function) {
  if (function.isExternal())
    return function.emitError()
           << "cannot convert a function without a body to f64";
  if (failed(checkConvertible(function)))
    return failure();

  // Kept to restore the function if the converted one does not verify.
  OwningOpRef<Operation *> backup(function->clone());

  AttrTypeReplacer replacer;
  addF64Replacements(replacer, function->getContext());
  replacer.recursivelyReplaceElementsIn(function, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/true);

  // f32 <-> f64 conversions that became f64 -> f64.
  function.getFunctionBody().walk([](Operation *op) {
    if (!isa<arith::ExtFOp, arith::TruncFOp>(op))
      return;
    if (op->getOperand(0).getType() == op->getResult(0).getType()) {
      op->getResult(0).replaceAllUsesWith(op->getOperand(0));
      op->erase();
    }
  });

  if (failed(verify(function))) {
    // Put the original back: the caller gets the function unchanged.
    function->setAttrs((*backup)->getAttrDictionary());
    Region &body = function.getFunctionBody();
    body.takeBody(cast<FunctionOpInterface>(*backup).getFunctionBody());
    return function.emitError()
           << "the function does not verify after conversion to f64 (see "
              "the errors above); it is left unchanged";
  }
  return success();
}
