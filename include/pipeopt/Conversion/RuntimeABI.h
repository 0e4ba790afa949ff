//===- RuntimeABI.h - Declarations of the runtime's C ABI in MLIR -*- C++
//-*-===//
//
// Part of pipeopt. The functions that compiled code calls in the runtime
// (runtime/include/pipeopt/runtime/RuntimeFunctions.def, the single source of
// truth) declared as MLIR functions, for every conversion that emits calls to
// them (convert-pipe-to-runtime, convert-linalg-to-runtime-kernels,
// pipe-check-gather-indices).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_CONVERSION_RUNTIMEABI_H
#define PIPEOPT_CONVERSION_RUNTIMEABI_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include <optional>
#include <string>

namespace pipeopt {

/// Runtime dtype suffix ("f32", "i64", ...) of an element type, or
/// std::nullopt if the runtime's typed functions (send, recv, input, output)
/// cannot carry it.
std::optional<std::string> runtimeDTypeName(mlir::Type type);

/// The element types of runtimeDTypeName, for messages: "f32, f64, ...".
std::string runtimeDTypeList();

/// True if the runtime has library kernels (PIPEOPT_RT_FLOAT_FN: matmul,
/// conv2d) for `type` (f32 and f64).
bool runtimeHasKernelsFor(mlir::Type type);

/// Checks the `target` option of a conversion that emits runtime calls:
/// "cpu" or "cuda" (which calls the device ABI of libpipeopt_rt_cuda.so).
/// Otherwise emits "unknown target '<target>' (expected cpu or cuda)" at
/// `module` and fails.
mlir::LogicalResult checkRuntimeTarget(mlir::ModuleOp module,
                                       llvm::StringRef target);

/// Declares runtime functions in a module on first use: `private`, with
/// `llvm.emit_c_interface`, memref parameters as `memref<*xT>`.
class RuntimeDecls {
public:
  RuntimeDecls(mlir::ModuleOp module, mlir::SymbolTable &symbols)
      : module(module), symbols(symbols) {}

  /// Returns the declaration of `base` (typed functions: `<base>_<dtype of
  /// element>`), creating it if needed. Emits an error at `loc` and fails if
  /// `base` is not in RuntimeFunctions.def, the runtime has no instance for
  /// `element`, or the symbol exists with another type.
  mlir::FailureOr<mlir::func::FuncOp>
  get(mlir::Location loc, llvm::StringRef base, mlir::Type element);

private:
  mlir::ModuleOp module;
  mlir::SymbolTable &symbols;
};

} // namespace pipeopt

#endif // PIPEOPT_CONVERSION_RUNTIMEABI_H
