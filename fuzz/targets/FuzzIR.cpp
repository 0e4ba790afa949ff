//===- FuzzIR.cpp - libFuzzer target: the compiler's front half on IR -----===//
//
// Parses the input as an MLIR module (every dialect and pass the pipeopt
// driver registers, pipeopt::registerAll*), then runs
//   pipeopt-pipeline{num-stages=2 num-microbatches=2 schedule=1f1b
//                    device=cpu [training=true]},
//   pipe-simulate{backward-cost=rule system=ideal report=/dev/null}
// with training=true when the module's text starts with "// training".
// Diagnostics are swallowed: an error is the compiler rejecting the input; a
// crash or sanitizer report is a bug. Linked to the prebuilt static
// libraries of a g++ build: only this file is instrumented (see
// fuzz/CMakeLists.txt), so libFuzzer's coverage feedback is this file's and
// the mutations are blind to the compiler's branches.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {
mlir::DialectRegistry *registry;
} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  pipeopt::registerAllPasses();
  registry = new mlir::DialectRegistry;
  pipeopt::registerAllDialects(*registry);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  bool training = text.starts_with("// training");
  mlir::MLIRContext ctx(*registry, mlir::MLIRContext::Threading::DISABLED);
  ctx.allowUnregisteredDialects(false);
  mlir::ScopedDiagnosticHandler quiet(&ctx, [](mlir::Diagnostic &) {
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &ctx, "fuzz.mlir");
  if (!module)
    return 0;
  mlir::PassManager pm(&ctx);
  std::string pipeline =
      std::string("builtin.module(pipeopt-pipeline{num-stages=2 "
                  "num-microbatches=2 schedule=1f1b device=cpu") +
      (training ? " training=true" : "") +
      "},pipe-simulate{backward-cost=rule system=ideal report=/dev/null})";
  if (mlir::failed(mlir::parsePassPipeline(pipeline, pm)))
    __builtin_trap(); // the pipeline itself must parse
  (void)pm.run(*module);
  return 0;
}
