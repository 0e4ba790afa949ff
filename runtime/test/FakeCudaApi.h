//===- FakeCudaApi.h - A CudaApi.h table backed by host memory --*- C++ -*-===//
//
// Stands in for libpipeopt_rt_cuda.so in tests, so that every device-mode
// path of the runtime runs without a GPU. "Device memory" is malloc'd and
// tracked: a function that needs device memory and gets a pointer outside
// every live allocation (a host pointer) fails like CUDA would, records a
// sticky error and counts a misuse; copies are counted by direction.
// Kernels of a fake model are plain host code on the tracked memory.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_TEST_FAKECUDAAPI_H
#define PIPEOPT_RUNTIME_TEST_FAKECUDAAPI_H

#include "pipeopt/runtime/CudaApi.h"

#include <cstddef>
#include <cstdint>

namespace fake_cuda {

/// What the fake did since the last reset().
struct Counters {
  /// copy() calls by direction; h2h (neither pointer is device memory)
  /// fails and counts as a misuse too.
  int64_t h2d = 0, d2h = 0, d2d = 0, h2h = 0;
  int64_t gathers = 0, scatters = 0, accumulates = 0, optimizerSteps = 0;
  int64_t zeros = 0, allocs = 0, frees = 0, binds = 0, unbinds = 0;
  int64_t synchronizes = 0;
  /// Calls given host memory where device memory was needed (or the
  /// reverse), or that used an unbound thread: always a runtime bug.
  int64_t misuses = 0;
};

/// The table (version PIPEOPT_RT_CUDA_API_VERSION).
const pipeopt_rt_cuda_api *api();
/// Sets the number of visible devices (default 2; 0: device_count fails
/// with "fake CUDA: no CUDA-capable device is detected") and clears the
/// counters. Live allocations stay.
void reset(int deviceCount = 2);
Counters counters();
/// Bytes in live allocations.
size_t liveBytes();
/// True if [p, p + bytes) lies in one live allocation.
bool isDevice(const void *p, size_t bytes = 1);
/// Records `message` as the calling thread's sticky error, as a failing
/// kernel would (CudaApi.h last_error).
void recordError(const char *message);

} // namespace fake_cuda

#endif // PIPEOPT_RUNTIME_TEST_FAKECUDAAPI_H
