//===- FuzzProfileJson.cpp - libFuzzer target: profile JSON ---------------===//
//
// cost::parseProfile (lib/Analysis/Profile.cpp, compiled here, instrumented),
// the reader of the `profile=` file (pipeopt-run --profile output). An
// llvm::Error is a rejection; a crash or sanitizer report is a bug.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Analysis/CostModel.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto value = llvm::json::parse(text);
  if (!value) {
    llvm::consumeError(value.takeError());
    return 0;
  }
  auto profile = pipeopt::cost::parseProfile(*value);
  if (!profile)
    llvm::consumeError(profile.takeError());
  return 0;
}
