//===- FuzzMachineJson.cpp - libFuzzer target: machine JSON ---------------===//
//
// The machine JSON readers of lib/Machine/MachineJSON.cpp (compiled here,
// instrumented): parseSystems (the simulator's `system=` file) and
// parseMachine as a hardware file (the `hardware=` option). An llvm::Error is
// the reader rejecting the input; a crash or sanitizer report is a bug.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Machine/Machine.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstddef>
#include <cstdint>

using namespace pipeopt::machine;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto systems = parseSystems(text);
  if (!systems)
    llvm::consumeError(systems.takeError());
  auto value = llvm::json::parse(text);
  if (!value) {
    llvm::consumeError(value.takeError());
    return 0;
  }
  auto hw = parseMachine(*value, MachineUse::Hardware);
  if (!hw)
    llvm::consumeError(hw.takeError());
  return 0;
}
