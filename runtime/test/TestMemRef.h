//===- TestMemRef.h - Hand-built memref descriptors for tests ---*- C++ -*-===//
//
// Builds the ranked + unranked memref descriptors that MLIR-generated code
// passes through `llvm.emit_c_interface`, for tests and the fake model.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_TEST_TESTMEMREF_H
#define PIPEOPT_RUNTIME_TEST_TESTMEMREF_H

#include "pipeopt/runtime/pipeopt_runtime.h"

#include <cstdint>

namespace pipeopt_test {

/// Ranked descriptor of rank N (layout of MLIR's StridedMemRefType<T, N>).
template <int N>
struct Desc {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
};
template <>
struct Desc<0> {
  void *allocated;
  void *aligned;
  int64_t offset;
};

/// A memref over `data` with the given sizes and (default row-major) strides.
template <int N>
struct MemRef {
  Desc<N> desc;
  pipeopt_rt_unranked_memref unranked;

  MemRef(void *data, const int64_t (&sizes)[N]) {
    desc.allocated = desc.aligned = data;
    desc.offset = 0;
    int64_t s = 1;
    for (int i = N - 1; i >= 0; --i) {
      desc.sizes[i] = sizes[i];
      desc.strides[i] = s;
      s *= sizes[i];
    }
    unranked.rank = N;
    unranked.descriptor = &desc;
  }
  MemRef(void *data, const int64_t (&sizes)[N], const int64_t (&strides)[N],
         int64_t offset = 0) {
    desc.allocated = desc.aligned = data;
    desc.offset = offset;
    for (int i = 0; i < N; ++i) {
      desc.sizes[i] = sizes[i];
      desc.strides[i] = strides[i];
    }
    unranked.rank = N;
    unranked.descriptor = &desc;
  }
  pipeopt_rt_unranked_memref *get() { return &unranked; }
};

/// Rank-0 memref (a scalar).
template <>
struct MemRef<0> {
  Desc<0> desc;
  pipeopt_rt_unranked_memref unranked;
  explicit MemRef(void *data) {
    desc.allocated = desc.aligned = data;
    desc.offset = 0;
    unranked.rank = 0;
    unranked.descriptor = &desc;
  }
  pipeopt_rt_unranked_memref *get() { return &unranked; }
};

} // namespace pipeopt_test

#endif
