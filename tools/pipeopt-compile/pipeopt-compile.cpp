//===- pipeopt-compile.cpp - model.mlir -> model.so + manifest -----------===//
//
// Part of pipeopt. Compiles a model into the shared object and manifest that
// pipeopt-run executes (docs/Runtime.md). The work is the compiler driver's
// (include/pipeopt/Driver/Driver.h): this tool registers its command-line
// options and calls pipeopt::driver::compile.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Driver/Driver.h"
#include "pipeopt/InitAll.h"
#include "pipeopt/Support/CommandLine.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  pipeopt::registerAllPasses();
  pipeopt::driver::registerCompileCLOptions();
  llvm::cl::HideUnrelatedOptions(pipeopt::driver::getCompileCLCategory());
  if (!pipeopt::rejectHelpTypos(argc, argv, "pipeopt-compile"))
    return 1;
  if (!pipeopt::rejectEmptyValues(argc, argv, "pipeopt-compile",
                                  {"o", "manifest", "trainable"}))
    return 1;
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "pipeopt-compile: compile a model to <model>.so + "
      "<model>.manifest.json for pipeopt-run\n");
  if (llvm::Error e =
          pipeopt::driver::compile(pipeopt::driver::getCompileOptionsFromCL()))
    return pipeopt::driver::reportError(std::move(e), "pipeopt-compile");
  return 0;
}
