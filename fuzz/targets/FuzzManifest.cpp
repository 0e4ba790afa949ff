//===- FuzzManifest.cpp - libFuzzer target: the manifest reader -----------===//
//
// Feeds arbitrary bytes to pipeopt::rt::parseManifest (runtime/lib/
// Manifest.cpp), the reader of <model>.manifest.json. A RuntimeError (or any
// std::exception) is the reader rejecting the input, which is fine; a crash,
// a sanitizer report, a hang or an escaping non-std exception is a bug.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Manifest.h"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  try {
    pipeopt::rt::Manifest m =
        pipeopt::rt::parseManifest(text, "fuzz.manifest.json");
    // Touch what the runner uses right after loading.
    for (const pipeopt::rt::ManifestInput &in : m.inputs)
      (void)m.findInput(in.index);
    for (const pipeopt::rt::ManifestParameter &p : m.parameters)
      (void)m.findInput(p.index);
  } catch (const std::exception &) {
  }
  return 0;
}
