//===- ConvertToF64.h - a function's f32 computation to f64 -----*- C++ -*-===//
//
// Part of pipeopt. Used by pipeopt-gradcheck (--precision f64) so that
// finite differences of a model are compared with its gradient in double
// precision; any pass or tool may use it.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_TRANSFORMS_CONVERTTOF64_H
#define PIPEOPT_TRANSFORMS_CONVERTTOF64_H

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Support/LLVM.h"

namespace pipeopt {

/// Rewrites every f32 in `function` (a function with a body, on tensors,
/// e.g. func + linalg/tensor/arith/math/scf after TOSA lowering) to f64, in
/// place:
///   - the function's argument and result types (f32, tensor<...xf32>,
///     vector, memref, complex<f32>, anything that nests f32),
///   - the result types of every op and the types of every block argument
///     (linalg regions, scf.for iteration arguments, ...),
///   - attributes: FloatAttr (`arith.constant 1.0 : f32`), dense elements
///     (`dense<...> : tensor<...xf32>`, splat or not, complex<f32> too),
///     sparse elements, and `dense_resource` blobs (a new f64 blob is
///     created; the f32 blob is left to the resource manager). Values are
///     converted exactly (every f32 is an f64). `array<f32: ...>` op
///     parameters are kept as they are.
///   - `arith.extf` / `arith.truncf` that become f64 -> f64 are removed
///     (their result is replaced by their operand).
/// Integer, index and f64 values are untouched.
///
/// Errors are diagnostics at the op (and nothing is changed, `function` is
/// left exactly as it was):
///   - an op defines a value of another floating-point type (f16, bf16,
///     f8, ...; e.g. `arith.truncf %x : f32 to f16`): such a computation
///     cannot be widened faithfully;
///   - a bitcast (`arith.bitcast`, `tensor.bitcast`, ...) of f32 data;
///   - an op that refers to a symbol (a `func.call`, a global load) and has
///     f32 operands or results: the callee / global is outside `function`
///     and is not converted (inline calls first, e.g. with pipe-prepare);
///   - a `dense_resource` f32 constant without data (elided blob);
///   - the converted function does not verify (an op whose verifier insists
///     on f32).
/// Returns failure after any of these.
mlir::LogicalResult convertFunctionToF64(mlir::FunctionOpInterface function);

} // namespace pipeopt

#endif // PIPEOPT_TRANSFORMS_CONVERTTOF64_H
