//===- BufferCache.h - Reuse of a compiled model's buffers ------*- C++ -*-===//
//
// A compiled model allocates its buffers (activations, gradients, the
// temporaries of every op) with memref.alloc and frees them with
// memref.dealloc; pipeopt-lower-to-llvm lowers those to calls of
// _mlir_memref_to_llvm_alloc / _mlir_memref_to_llvm_free (upstream MLIR's
// finalize-memref-to-llvm use-generic-functions), which the runtime defines
// here. A training step allocates the same buffers in the same order at
// every step, and the allocator would otherwise map large ones fresh from
// the kernel (glibc maps requests above 32 MiB at most, and unmaps them on
// free): every step paid the page faults and the zero-filling of every
// large buffer again (measured on GPT-2 8 x 512: about a tenth of the step
// in the kernel's page-fault path).
//
// The cache keeps freed blocks of at least kMinCachedBytes and hands them to
// the next request of the same size. It never holds more memory than the
// model has had live at once: a request that no idle block fits first
// releases idle blocks (least recently freed first) of at least its size,
// so live + idle bytes grow only when nothing is idle, that is, only to a
// new peak of the live bytes. Smaller requests go to malloc / free
// directly. Thread-safe (the ranks of a loopback run share it). Pointers it
// did not allocate (descriptors the runtime malloc'ed) are passed to free.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_BUFFERCACHE_H
#define PIPEOPT_RUNTIME_BUFFERCACHE_H

#include <cstddef>
#include <cstdint>

extern "C" {
/// memref.alloc of a compiled model: `size` bytes, malloc's alignment; null
/// when out of memory (the model's code then fails as it would with malloc).
void *_mlir_memref_to_llvm_alloc(size_t size);
/// memref.alloc with use-aligned-alloc: `size` bytes aligned to `alignment`
/// (a power of two). Not cached.
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size);
/// memref.dealloc: returns `ptr` to the cache, or to free.
void _mlir_memref_to_llvm_free(void *ptr);
}

namespace pipeopt {
namespace rt {

/// Requests smaller than this (bytes) bypass the cache.
constexpr size_t kMinCachedBytes = size_t(64) << 10;

/// Counters of the buffer cache since the process started (bytes, calls).
struct BufferCacheStats {
  /// Cached-size requests served from an idle block / by malloc.
  uint64_t hits = 0, misses = 0;
  /// Bytes live (allocated through the cache, not yet freed) and idle
  /// (freed, kept for reuse) now; the largest live + idle so far.
  uint64_t liveBytes = 0, idleBytes = 0, peakBytes = 0;
  /// Idle bytes released to make room for a request no idle block fitted.
  uint64_t releasedBytes = 0;
};

BufferCacheStats bufferCacheStats();

/// Releases every idle block (to free); live blocks stay valid.
void releaseIdleBuffers();

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_BUFFERCACHE_H
