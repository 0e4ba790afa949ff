//===- UnsupportedDialects.cpp - ops of dialects pipeopt does not load ----===//
//
// Part of pipeopt. What an op of a dialect pipeopt does not load is told
// (unsupportedDialectMessage), and the placeholder dialects that tell it
// while parsing, at the op (registerUnsupportedDialects). See InitAll.h.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/InitAll.h"

#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/TypeID.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <utility>
#include <vector>

using namespace mlir;

namespace {

/// What to do with the ops of a dialect of another front end.
struct Advice {
  const char *dialect;
  const char *what; ///< the dialect, in words
  const char *todo; ///< what to do
};

constexpr Advice kAdvice[] = {
    {"tm_tensor", "torch-mlir's TMTensor dialect",
     "PyTorch models exported by torch-mlir carry tm_tensor ops where "
     "torch has no linalg form, e.g. tm_tensor.scan for the cumulative sum "
     "transformers' GPT-2 computes its position ids with when it is "
     "exported without an explicit attention_mask: pass an explicit "
     "attention_mask (and position_ids) to the model you export, or lower "
     "the op to linalg on tensors before pipeopt"},
    {"torch", "torch-mlir's torch dialect",
     "export with torch_mlir.fx.export_and_import(..., "
     "output_type=\"linalg-on-tensors\") or output_type=\"tosa\""},
    {"torch_c", "torch-mlir's torch_c dialect",
     "export with torch_mlir.fx.export_and_import(..., "
     "output_type=\"linalg-on-tensors\") or output_type=\"tosa\""},
    {"stablehlo", "StableHLO",
     "lower it to linalg on tensors (stablehlo-opt "
     "--stablehlo-legalize-to-linalg) or to tosa first"},
    {"chlo", "StableHLO's chlo dialect",
     "lower it to linalg on tensors (stablehlo-opt "
     "--chlo-legalize-to-stablehlo --stablehlo-legalize-to-linalg) or to "
     "tosa first"},
    {"mhlo", "MHLO", "lower it to linalg on tensors or to tosa first"},
    {"tf", "TensorFlow's tf dialect",
     "convert the model to tosa first (tf-opt's TF-to-TOSA legalization)"},
    {"tfl", "TensorFlow Lite's tfl dialect",
     "convert the model to tosa first (tf-opt --tosa-legalize-tfl)"},
    {"onnx", "ONNX",
     "import it with torch-mlir's ONNX importer and export linalg on "
     "tensors or tosa"},
};

const Advice *adviceFor(llvm::StringRef dialect) {
  for (const Advice &a : kAdvice)
    if (dialect == a.dialect)
      return &a;
  return nullptr;
}

/// A dialect of another front end, loaded only so that its ops, types and
/// attributes are an error that says what to do
/// (unsupportedDialectMessage) instead of MLIR's "Dialect not found".
class UnsupportedDialect : public Dialect {
public:
  UnsupportedDialect(llvm::StringRef name, MLIRContext *ctx, TypeID id)
      : Dialect(name, ctx, id) {}

  std::optional<ParseOpHook>
  getParseOperationHook(llvm::StringRef opName) const override {
    return ParseOpHook([](OpAsmParser &parser, OperationState &state) {
      // Through the context, not parser.emitError, which would put
      // "custom op '<name>'" in front.
      llvm::StringRef op = state.name.getStringRef();
      emitError(parser.getEncodedSourceLoc(parser.getNameLoc()),
                pipeopt::unsupportedDialectMessage(op.split('.').first, op));
      return failure();
    });
  }

  Type parseType(DialectAsmParser &parser) const override {
    parser.emitError(parser.getNameLoc(),
                     pipeopt::unsupportedDialectMessage(
                         getNamespace(), "!" + getNamespace().str()));
    return Type();
  }

  Attribute parseAttribute(DialectAsmParser &parser, Type) const override {
    parser.emitError(parser.getNameLoc(),
                     pipeopt::unsupportedDialectMessage(
                         getNamespace(), "#" + getNamespace().str()));
    return Attribute();
  }
};

/// One TypeID per placeholder dialect, for the life of the process.
TypeID typeIdOf(size_t k) {
  static const std::vector<TypeID> ids = [] {
    static TypeIDAllocator allocator;
    std::vector<TypeID> v;
    for (size_t i = 0; i < std::size(kAdvice); ++i)
      v.push_back(allocator.allocate());
    return v;
  }();
  return ids[k];
}

} // namespace

std::string pipeopt::unsupportedDialectMessage(llvm::StringRef dialect,
                                               llvm::StringRef op) {
  const Advice *a = adviceFor(dialect);
  bool isOp = !op.starts_with("!") && !op.starts_with("#");
  std::string s = "'" + op.str() + "' is " +
                  (isOp                  ? "an op"
                   : op.starts_with("!") ? "a type"
                                         : "an attribute") +
                  " of dialect '" + dialect.str() + "'" +
                  (a ? std::string(" (") + a->what + ")" : std::string()) +
                  ", which pipeopt does not load: pipeopt takes func with "
                  "tosa or linalg on tensors (and tensor, arith, math, scf, "
                  "ml_program; the pipe dialect for its own stages); ";
  s += a ? a->todo
         : "export or convert the model to linalg on tensors or to tosa "
           "first";
  return s;
}

void pipeopt::registerUnsupportedDialects(DialectRegistry &registry) {
  for (size_t k = 0; k < std::size(kAdvice); ++k) {
    llvm::StringRef name = kAdvice[k].dialect;
    TypeID id = typeIdOf(k);
    registry.insert(id, name, [name, id](MLIRContext *ctx) -> Dialect * {
      return ctx->getOrLoadDialect(name, id, [&] {
        return std::make_unique<UnsupportedDialect>(name, ctx, id);
      });
    });
  }
}
