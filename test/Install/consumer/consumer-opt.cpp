//===- consumer-opt.cpp - an opt tool on installed pipeopt ---*- C++ -*-===//
// Part of pipeopt's tests (test/Install): what a downstream compiler does to
// reuse pipeopt's dialect, passes and pipelines in its own MlirOptMain tool.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  pipeopt::registerAllPasses();
  mlir::DialectRegistry registry;
  pipeopt::registerAllDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "consumer-opt: pipeopt as a library\n", registry));
}
