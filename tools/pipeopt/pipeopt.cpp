//===- pipeopt.cpp - the pipeopt opt-style driver -----------------*- C++ -*-===//
//
// Part of pipeopt. Parses func + tosa / linalg models and the pipe dialect,
// and runs any pipeopt pass or pipeline (see `pipeopt --help`).
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
      argc, argv, "pipeopt: pipeline-parallelism compiler driver\n", registry));
}
