//===- BufferCache.cpp - Reuse of a compiled model's buffers ----*- C++ -*-===//
//
// See BufferCache.h.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/BufferCache.h"

#include <cstdlib>
#include <iterator>
#include <list>
#include <mutex>
#include <unordered_map>

namespace pipeopt {
namespace rt {
namespace {

struct IdleBlock {
  void *ptr;
  size_t size;
};

class BufferCache {
public:
  void *allocate(size_t size) {
    if (size < kMinCachedBytes)
      return std::malloc(size);
    std::lock_guard<std::mutex> lock(mutex);
    void *ptr = nullptr;
    auto found = bySize.find(size);
    if (found != bySize.end()) {
      // An idle block of this size.
      auto block = found->second;
      ptr = block->ptr;
      idleBytes -= size;
      bySize.erase(found);
      lru.erase(block);
      ++hits;
    } else {
      // Make room first: live + idle stays at most what it was, unless
      // nothing is idle.
      size_t released = 0;
      while (released < size && !lru.empty()) {
        IdleBlock oldest = lru.front();
        eraseFromIndex(lru.begin());
        lru.pop_front();
        std::free(oldest.ptr);
        idleBytes -= oldest.size;
        released += oldest.size;
      }
      releasedBytes += released;
      ptr = std::malloc(size);
      if (!ptr)
        return nullptr;
      ++misses;
    }
    live.emplace(ptr, size);
    liveBytes += size;
    if (liveBytes + idleBytes > peakBytes)
      peakBytes = liveBytes + idleBytes;
    return ptr;
  }

  void release(void *ptr) {
    if (!ptr)
      return;
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = live.find(ptr);
      if (it != live.end()) {
        size_t size = it->second;
        live.erase(it);
        liveBytes -= size;
        lru.push_back({ptr, size});
        bySize.emplace(size, std::prev(lru.end()));
        idleBytes += size;
        return;
      }
    }
    std::free(ptr);
  }

  void releaseIdle() {
    std::lock_guard<std::mutex> lock(mutex);
    for (IdleBlock &b : lru)
      std::free(b.ptr);
    releasedBytes += idleBytes;
    lru.clear();
    bySize.clear();
    idleBytes = 0;
  }

  BufferCacheStats stats() {
    std::lock_guard<std::mutex> lock(mutex);
    BufferCacheStats s;
    s.hits = hits;
    s.misses = misses;
    s.liveBytes = liveBytes;
    s.idleBytes = idleBytes;
    s.peakBytes = peakBytes;
    s.releasedBytes = releasedBytes;
    return s;
  }

private:
  using LruIt = std::list<IdleBlock>::iterator;

  void eraseFromIndex(LruIt block) {
    auto range = bySize.equal_range(block->size);
    for (auto it = range.first; it != range.second; ++it)
      if (it->second == block) {
        bySize.erase(it);
        return;
      }
  }

  std::mutex mutex;
  /// Idle blocks, least recently freed first.
  std::list<IdleBlock> lru;
  /// Size -> idle blocks of that size.
  std::unordered_multimap<size_t, LruIt> bySize;
  /// Blocks handed out and not yet freed -> their size.
  std::unordered_map<void *, size_t> live;
  uint64_t hits = 0, misses = 0, liveBytes = 0, idleBytes = 0, peakBytes = 0,
           releasedBytes = 0;
};

/// Never destroyed: a model's code may free buffers during static
/// destruction (a session kept in a Python global).
BufferCache &cache() {
  static BufferCache *c = new BufferCache;
  return *c;
}

} // namespace

BufferCacheStats bufferCacheStats() { return cache().stats(); }

void releaseIdleBuffers() { cache().releaseIdle(); }

} // namespace rt
} // namespace pipeopt

extern "C" void *_mlir_memref_to_llvm_alloc(size_t size) {
  return pipeopt::rt::cache().allocate(size);
}

extern "C" void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment,
                                                    size_t size) {
  // aligned_alloc wants a multiple of the alignment.
  size_t rounded = (size + alignment - 1) / alignment * alignment;
  return std::aligned_alloc(alignment, rounded);
}

extern "C" void _mlir_memref_to_llvm_free(void *ptr) {
  pipeopt::rt::cache().release(ptr);
}
