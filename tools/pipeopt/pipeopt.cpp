//===- pipeopt.cpp - the pipeopt opt-style driver -----------------*- C++
//-*-===//
//
// Part of pipeopt. Parses func + tosa / linalg models and the pipe dialect,
// and runs any pipeopt pass or pipeline (see `pipeopt --help`).
//
//===----------------------------------------------------------------------===//

#include "pipeopt/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "pipeopt/Support/CommandLine.h"
#include "llvm/Support/CommandLine.h"

#include "mlir/Debug/Counter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/Timing.h"

int main(int argc, char **argv) {
  pipeopt::registerAllPasses();
  // A diagnostic on a model function would otherwise be followed by the
  // whole function in generic form; users can still ask for it with
  // --mlir-print-op-on-diagnostic.
  mlir::registerMLIRContextCLOptions();
  if (auto *opt = static_cast<llvm::cl::opt<bool> *>(
          llvm::cl::getRegisteredOptions().lookup(
              "mlir-print-op-on-diagnostic")))
    opt->setInitialValue(false);
  mlir::DialectRegistry registry;
  pipeopt::registerAllDialects(registry);
  // Ops of torch-mlir's tm_tensor and other front ends' dialects: an error
  // that says what to do.
  pipeopt::registerUnsupportedDialects(registry);
  // MlirOptMain registers its own options when it parses; registering
  // them first (each registration is idempotent) lets an unknown option
  // starting with "h" be an error rather than llvm::cl's grouped -h help.
  mlir::registerAsmPrinterCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::tracing::DebugCounter::registerCLOptions();
  mlir::MlirOptMainConfig::registerCLOptions(registry);
  if (!pipeopt::rejectHelpTypos(argc, argv, "pipeopt",
                                [](llvm::StringRef n) {
                                  return mlir::PassInfo::lookup(n) ||
                                         mlir::PassPipelineInfo::lookup(n);
                                },
                                {"o"}))
    return 1;
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "pipeopt: pipeline-parallelism compiler driver\n", registry));
}
