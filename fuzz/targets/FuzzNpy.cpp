//===- FuzzNpy.cpp - libFuzzer target: the .npy reader --------------------===//
//
// Feeds arbitrary bytes to pipeopt::rt::parseNpy (runtime/lib/Npy.cpp), the
// reader of --input files and checkpoint tensors. A RuntimeError is the
// reader rejecting the input; a crash, a sanitizer report or an allocation
// beyond libFuzzer's -malloc_limit_mb (the reader must check the size
// against the bytes it has before allocating) is a bug. An accepted array
// must round-trip through serializeNpy.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Npy.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  pipeopt::rt::HostTensor t;
  try {
    t = pipeopt::rt::parseNpy(bytes, "fuzz.npy");
  } catch (const std::exception &) {
    return 0;
  }
  if (t.data.size() != size_t(pipeopt::rt::numElements(t.shape)) *
                           pipeopt::rt::dtypeSize(t.dtype))
    std::abort(); // accepted an array whose data does not fit its shape
  // Whatever the reader accepts, the writer writes and the reader reads back
  // identically.
  pipeopt::rt::HostTensor u =
      pipeopt::rt::parseNpy(pipeopt::rt::serializeNpy(t), "round-trip");
  if (u.dtype != t.dtype || u.shape != t.shape || u.data != t.data)
    std::abort();
  return 0;
}
