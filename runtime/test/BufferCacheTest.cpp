//===- BufferCacheTest.cpp - The compiled models' buffer cache ------------===//
//
// _mlir_memref_to_llvm_alloc / _mlir_memref_to_llvm_free (BufferCache.h):
// a freed block is reused for the next request of its size; a request no
// idle block fits releases idle blocks first, so live + idle bytes never
// exceed the largest live bytes; small requests and foreign pointers go to
// malloc / free.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/BufferCache.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

using namespace pipeopt::rt;

namespace {

constexpr size_t kMiB = size_t(1) << 20;

class BufferCacheTest : public ::testing::Test {
protected:
  void SetUp() override { releaseIdleBuffers(); }
  void TearDown() override { releaseIdleBuffers(); }
};

TEST_F(BufferCacheTest, ReusesAFreedBlockOfTheSameSize) {
  BufferCacheStats before = bufferCacheStats();
  void *a = _mlir_memref_to_llvm_alloc(3 * kMiB);
  ASSERT_NE(a, nullptr);
  std::memset(a, 1, 3 * kMiB);
  _mlir_memref_to_llvm_free(a);
  void *b = _mlir_memref_to_llvm_alloc(3 * kMiB);
  EXPECT_EQ(a, b);
  BufferCacheStats after = bufferCacheStats();
  EXPECT_EQ(after.misses - before.misses, 1u);
  EXPECT_EQ(after.hits - before.hits, 1u);
  EXPECT_EQ(after.liveBytes - before.liveBytes, 3 * kMiB);
  EXPECT_EQ(after.idleBytes, 0u);
  _mlir_memref_to_llvm_free(b);
  EXPECT_EQ(bufferCacheStats().idleBytes, 3 * kMiB);
}

TEST_F(BufferCacheTest, RepeatedStepsAllocateOnlyInTheFirst) {
  // Three "steps" of the same allocation sequence: only the first misses.
  const std::vector<size_t> sizes = {4 * kMiB, 1 * kMiB, 4 * kMiB, 2 * kMiB,
                                     kMinCachedBytes};
  BufferCacheStats before = bufferCacheStats();
  for (int step = 0; step < 3; ++step) {
    std::vector<void *> ptrs;
    for (size_t s : sizes)
      ptrs.push_back(_mlir_memref_to_llvm_alloc(s));
    for (void *p : ptrs)
      _mlir_memref_to_llvm_free(p);
  }
  BufferCacheStats after = bufferCacheStats();
  EXPECT_EQ(after.misses - before.misses, sizes.size());
  EXPECT_EQ(after.hits - before.hits, 2 * sizes.size());
  EXPECT_EQ(after.releasedBytes, before.releasedBytes);
}

TEST_F(BufferCacheTest, LiveAndIdleNeverExceedThePeakOfLive) {
  // Live peak 8 MiB (one block). Then requests of other sizes: each one
  // releases idle blocks first, so live + idle stays at 8 MiB.
  BufferCacheStats start = bufferCacheStats();
  ASSERT_EQ(start.idleBytes, 0u);
  const uint64_t limit = start.liveBytes + 8 * kMiB;
  auto total = [] {
    BufferCacheStats s = bufferCacheStats();
    return s.liveBytes + s.idleBytes;
  };
  void *a = _mlir_memref_to_llvm_alloc(8 * kMiB);
  _mlir_memref_to_llvm_free(a);
  EXPECT_EQ(total(), limit);
  void *b = _mlir_memref_to_llvm_alloc(5 * kMiB); // releases a
  BufferCacheStats s = bufferCacheStats();
  EXPECT_EQ(s.idleBytes, 0u);
  EXPECT_EQ(s.releasedBytes - start.releasedBytes, 8 * kMiB);
  void *c = _mlir_memref_to_llvm_alloc(3 * kMiB); // nothing idle: grows
  EXPECT_EQ(total(), limit);
  _mlir_memref_to_llvm_free(b);
  _mlir_memref_to_llvm_free(c);
  s = bufferCacheStats();
  EXPECT_EQ(s.liveBytes, start.liveBytes);
  EXPECT_EQ(s.idleBytes, 8 * kMiB);
  // A request for 6 MiB releases the least recently freed idle block (5
  // MiB), then the 3 MiB one (5 < 6): nothing idle is left.
  void *d = _mlir_memref_to_llvm_alloc(6 * kMiB);
  s = bufferCacheStats();
  EXPECT_EQ(s.idleBytes, 0u);
  EXPECT_EQ(s.releasedBytes - start.releasedBytes, 16 * kMiB);
  EXPECT_LE(total(), limit);
  _mlir_memref_to_llvm_free(d);
}

TEST_F(BufferCacheTest, SmallRequestsAndForeignPointersBypassTheCache) {
  BufferCacheStats before = bufferCacheStats();
  void *small = _mlir_memref_to_llvm_alloc(kMinCachedBytes - 1);
  ASSERT_NE(small, nullptr);
  _mlir_memref_to_llvm_free(small);
  // A pointer malloc'ed elsewhere (a descriptor the runtime made) is freed.
  void *foreign = std::malloc(2 * kMinCachedBytes);
  _mlir_memref_to_llvm_free(foreign);
  _mlir_memref_to_llvm_free(nullptr);
  void *aligned = _mlir_memref_to_llvm_aligned_alloc(64, 100);
  ASSERT_NE(aligned, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(aligned) % 64, 0u);
  _mlir_memref_to_llvm_free(aligned);
  BufferCacheStats after = bufferCacheStats();
  EXPECT_EQ(after.hits, before.hits);
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_EQ(after.idleBytes, before.idleBytes);
}

TEST_F(BufferCacheTest, ThreadsShareItSafely) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) {
        size_t size = (1 + (i + t) % 3) * kMiB;
        auto *p =
            static_cast<unsigned char *>(_mlir_memref_to_llvm_alloc(size));
        p[0] = p[size - 1] = static_cast<unsigned char>(t);
        _mlir_memref_to_llvm_free(p);
      }
    });
  for (std::thread &t : threads)
    t.join();
  BufferCacheStats s = bufferCacheStats();
  EXPECT_EQ(s.liveBytes, 0u);
  EXPECT_LE(s.idleBytes, 4 * 3 * kMiB);
}

} // namespace
