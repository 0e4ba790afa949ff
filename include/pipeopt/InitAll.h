//===- InitAll.h - register pipeopt dialects and passes -----------*- C++
//-*-===//
//
// Part of pipeopt. One place that knows every dialect pipeopt parses and
// every pass and pipeline it provides; tools and embedders call these.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_INITALL_H
#define PIPEOPT_INITALL_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace pipeopt {

/// Adds the pipe dialect and the upstream input dialects pipeopt accepts
/// (func, tosa, linalg, tensor, arith, math, scf, cf, memref, bufferization,
/// ml_program, llvm) plus the interface extensions lowering needs.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers every pipeopt pass (pipe-*, convert-pipe-to-*) and pipeline
/// (pipeopt-*) with the global pass registry, plus the upstream passes that
/// pipeopt's pipelines use, so that `pipeopt` can replay any step.
void registerAllPasses();

/// The error for `op` (an op name such as "tm_tensor.scan", or "!torch" /
/// "#torch" for a type or attribute) of `dialect`, a dialect pipeopt does
/// not load: names both, says what pipeopt takes (func with tosa or linalg
/// on tensors, ...) and what to do: for torch-mlir's tm_tensor (e.g. the
/// tm_tensor.scan of a GPT-2 exported without an explicit attention_mask)
/// pass an explicit attention_mask or lower the op; for torch, StableHLO,
/// MHLO, TensorFlow, TFLite and ONNX how to get to linalg or tosa; for any
/// other dialect, export or convert to linalg on tensors or tosa.
std::string unsupportedDialectMessage(llvm::StringRef dialect,
                                      llvm::StringRef op);

/// Registers placeholder dialects for the namespaces of other front ends
/// (tm_tensor, torch, torch_c, stablehlo, chlo, mhlo, tf, tfl, onnx): an op,
/// type or attribute of one is then the parse error
/// unsupportedDialectMessage at its location, instead of MLIR's "Dialect
/// `tm_tensor' not found for custom op 'tm_tensor.scan'". The pipeopt
/// opt tool and pipeopt-compile register them; registerAllDialects does
/// not (a project that loads one of these dialects itself keeps it).
void registerUnsupportedDialects(mlir::DialectRegistry &registry);

} // namespace pipeopt

#endif // PIPEOPT_INITALL_H
