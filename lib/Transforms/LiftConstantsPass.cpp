//===- LiftConstantsPass.cpp - pipe-lift-constants --------------*- C++ -*-===//
//
// Part of pipeopt. Float tensor constants of a model function become
// arguments; their values are written as .npy. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"
#include "pipeopt/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace pipeopt {
#define GEN_PASS_DEF_LIFTCONSTANTSPASS
#include "pipeopt/Transforms/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;

namespace {

constexpr const char *kPass = "pipe-lift-constants: ";

/// The .npy descr of a float element type, or "" if .npy has none.
std::string npyDescr(Type t) {
  if (t.isF32())
    return "<f4";
  if (t.isF64())
    return "<f8";
  if (t.isF16())
    return "<f2";
  if (t.isBF16())
    return "<u2"; // raw bfloat16 bits, as pipeopt-run reads them
  return "";
}

/// The raw little-endian bytes of a non-splat constant's value, or failure
/// (with a diagnostic at `op`).
FailureOr<ArrayRef<char>> rawData(Operation *op, ElementsAttr value) {
  if (auto dense = dyn_cast<DenseElementsAttr>(value))
    return dense.getRawData();
  if (auto blob = dyn_cast<DenseResourceElementsAttr>(value)) {
    const AsmResourceBlob *b = blob.getRawHandle().getBlob();
    if (!b)
      return op->emitError()
             << kPass
             << "the dense_resource blob of this constant is not in "
                "the file (elided); export the model with its "
                "weights";
    return b->getData();
  }
  return op->emitError() << kPass << "unsupported constant attribute " << value;
}

/// Writes a version 1.0 .npy file (C order).
LogicalResult writeNpy(Operation *op, StringRef path, StringRef descr,
                       ArrayRef<int64_t> shape, ArrayRef<char> data) {
  std::string dims;
  for (int64_t d : shape)
    dims += std::to_string(d) + ", ";
  if (shape.size() > 1)
    dims.resize(dims.size() - 2);
  else if (shape.size() == 1)
    dims.pop_back();
  std::string header = llvm::formatv(
      "{{'descr': '{0}', 'fortran_order': False, 'shape': ({1}), }", descr,
      dims);
  // Magic (6) + version (2) + length (2) + header + '\n', padded to 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return op->emitError() << kPass << "cannot write " << path << ": "
                           << ec.message();
  os << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff)
     << char(header.size() >> 8) << header;
  os.write(data.data(), data.size());
  os.close();
  if (os.has_error())
    return op->emitError() << kPass << "cannot write " << path << ": "
                           << os.error().message();
  return success();
}

struct LiftConstantsPass
    : pipeopt::impl::LiftConstantsPassBase<LiftConstantsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (minElements < 1) {
      emitError(module.getLoc())
          << kPass << "min-elements must be at least 1, got "
          << static_cast<int64_t>(minElements);
      return signalPassFailure();
    }
    if (!outputDir.empty() && !llvm::sys::fs::is_directory(outputDir)) {
      emitError(module.getLoc()) << kPass << "output-dir '" << outputDir
                                 << "' is not an existing directory";
      return signalPassFailure();
    }
    func::FuncOp fn;
    if (!function.empty()) {
      fn = module.lookupSymbol<func::FuncOp>(function);
      if (!fn || fn.isExternal()) {
        emitError(module.getLoc())
            << kPass << "no function @" << function << " with a body";
        return signalPassFailure();
      }
    } else {
      SmallVector<func::FuncOp> candidates;
      for (auto f : module.getOps<func::FuncOp>())
        if (f.isPublic() && !f.isExternal())
          candidates.push_back(f);
      if (candidates.size() != 1) {
        emitError(module.getLoc())
            << kPass << "expected one public function with a body, found "
            << candidates.size() << "; name it with function=NAME";
        return signalPassFailure();
      }
      fn = candidates.front();
    }
    if (auto uses = SymbolTable::getSymbolUses(fn, module))
      if (!uses->empty()) {
        fn.emitError() << kPass << "@" << fn.getSymName()
                       << " is called by another function; lift the "
                          "constants of the outermost model function";
        return signalPassFailure();
      }

    // Collect first, so that an error leaves the module unchanged.
    struct Lifted {
      Operation *op;
      RankedTensorType type;
      ArrayRef<char> data;
    };
    SmallVector<Lifted> lifted;
    Block &body = fn.getBody().front();
    for (Operation &op : body) {
      ElementsAttr value;
      if (auto c = dyn_cast<arith::ConstantOp>(op))
        value = dyn_cast<ElementsAttr>(c.getValue());
      else if (auto c = dyn_cast<tosa::ConstOp>(op))
        value = c.getValues();
      if (!value)
        continue;
      auto type = dyn_cast<RankedTensorType>(value.getType());
      if (!type || !isa<FloatType>(type.getElementType()) ||
          !type.hasStaticShape() || type.getNumElements() < minElements)
        continue;
      if (auto dense = dyn_cast<DenseElementsAttr>(value))
        if (dense.isSplat())
          continue;
      if (npyDescr(type.getElementType()).empty()) {
        op.emitError() << kPass << "element type " << type.getElementType()
                       << " cannot be written as .npy";
        return signalPassFailure();
      }
      FailureOr<ArrayRef<char>> data = rawData(&op, value);
      if (failed(data))
        return signalPassFailure();
      int64_t bytes =
          type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
      if (int64_t(data->size()) != bytes) {
        op.emitError() << kPass << "the constant holds " << data->size()
                       << " bytes, expected " << bytes;
        return signalPassFailure();
      }
      lifted.push_back({&op, type, *data});
    }

    unsigned first = body.getNumArguments();
    if (!outputDir.empty())
      for (auto [k, l] : llvm::enumerate(lifted)) {
        llvm::SmallString<256> path(outputDir);
        llvm::sys::path::append(path,
                                "arg_" + std::to_string(first + k) + ".npy");
        if (failed(writeNpy(l.op, path, npyDescr(l.type.getElementType()),
                            l.type.getShape(), l.data)))
          return signalPassFailure();
      }
    SmallVector<int64_t> indices;
    SmallVector<Type> inputs(fn.getArgumentTypes());
    for (auto [k, l] : llvm::enumerate(lifted)) {
      BlockArgument a = body.addArgument(l.type, l.op->getLoc());
      l.op->getResult(0).replaceAllUsesWith(a);
      l.op->erase();
      inputs.push_back(l.type);
      indices.push_back(first + k);
    }
    fn.setFunctionType(
        FunctionType::get(&getContext(), inputs, fn.getResultTypes()));
    fn->setAttr(
        pipeopt::pipe::PipeDialect::LiftedConstantsAttrHelper::getNameStr(),
        DenseI64ArrayAttr::get(&getContext(), indices));
  }
};

} // namespace
