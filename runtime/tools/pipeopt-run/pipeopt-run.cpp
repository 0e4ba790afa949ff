//===- pipeopt-run.cpp - Run a compiled pipeopt model -----------*- C++ -*-===//
//
// Loads <model>.so + <model>.manifest.json, runs every rank's program over a
// communicator (loopback threads, MPI or NCCL), and writes outputs, a Chrome
// trace and a per-stage profile. See docs/Runtime.md.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Runner.h"

int main(int argc, char **argv) {
  return pipeopt::rt::pipeoptRunMain(argc, argv);
}
