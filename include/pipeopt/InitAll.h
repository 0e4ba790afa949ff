//===- InitAll.h - register pipeopt dialects and passes -----------*- C++
//-*-===//
//
// Part of pipeopt. One place that knows every dialect pipeopt parses and
// every pass and pipeline it provides; tools and embedders call these.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_INITALL_H
#define PIPEOPT_INITALL_H

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

} // namespace pipeopt

#endif // PIPEOPT_INITALL_H
