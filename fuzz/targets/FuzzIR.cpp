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
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {
mlir::DialectRegistry *registry;
// PIPEOPT_FUZZ_STATS=1: how many inputs parsed and how many passed the
// pipeline, printed at exit (how deep blind mutation gets).
size_t numInputs = 0, numParsed = 0, numCompiled = 0;
} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  pipeopt::registerAllPasses();
  registry = new mlir::DialectRegistry;
  pipeopt::registerAllDialects(*registry);
  if (std::getenv("PIPEOPT_FUZZ_STATS"))
    std::atexit([] {
      std::fprintf(
          stderr, "fuzz-ir: %zu inputs, %zu parsed, %zu through the pipeline\n",
          numInputs, numParsed, numCompiled);
    });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // MLIR's lexer reads the byte after the buffer (it expects the '\0' that
  // files read through llvm::MemoryBuffer have): parse a NUL-terminated copy.
  std::string copy(reinterpret_cast<const char *>(data), size);
  llvm::StringRef text(copy.c_str(), size);
  bool training = text.starts_with("// training");
  mlir::MLIRContext ctx(*registry, mlir::MLIRContext::Threading::DISABLED);
  ctx.allowUnregisteredDialects(false);
  mlir::ScopedDiagnosticHandler quiet(
      &ctx, [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &ctx, "fuzz.mlir");
  ++numInputs;
  if (!module)
    return 0;
  ++numParsed;
  mlir::PassManager pm(&ctx);
  std::string pipeline =
      std::string("builtin.module(pipeopt-pipeline{num-stages=2 "
                  "num-microbatches=2 schedule=1f1b device=cpu") +
      (training ? " training=true" : "") +
      "},pipe-simulate{backward-cost=rule system=ideal report=/dev/null})";
  if (mlir::failed(mlir::parsePassPipeline(pipeline, pm)))
    __builtin_trap(); // the pipeline itself must parse
  if (mlir::succeeded(pm.run(*module)))
    ++numCompiled;
  return 0;
}
