//===- MemRefView.h - Memref descriptors of the C ABI, decoded --*- C++ -*-===//
//
// Part of pipeopt. The decoded form of the unranked memref descriptors that
// compiled code passes to the runtime (pipeopt_runtime.h). Pure code with no
// rank context: libpipeopt_rt and libpipeopt_rt_cuda.so both compile it
// (lib/MemRefView.cpp); the latter only decodes descriptors of device memory
// and never dereferences `base` on the host.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_MEMREFVIEW_H
#define PIPEOPT_RUNTIME_MEMREFVIEW_H

#include "pipeopt/runtime/Types.h"

#include <cstdint>
#include <vector>

namespace pipeopt {
namespace rt {

/// A view of a memref passed through the C ABI.
struct MemRefView {
  DType dtype = DType::F32;
  uint8_t *base = nullptr;      ///< aligned + offset, in bytes
  Shape sizes;                  ///< elements
  std::vector<int64_t> strides; ///< elements
  /// Bytes of the dense (packed) form.
  size_t byteSize() const;
  /// True if row-major contiguous (size-1 dimensions ignored).
  bool isContiguous() const;
};

/// Decodes an unranked memref descriptor; throws RuntimeError if it is
/// null, has a negative or too large rank, or negative sizes.
MemRefView decodeMemRef(const pipeopt_rt_unranked_memref *memref, DType dtype);
/// Copies the view's elements into `dst` (byteSize() bytes, row-major).
/// Host memory only (both directions).
void packMemRef(const MemRefView &view, void *dst);
/// Copies byteSize() row-major bytes from `src` into the view's elements.
void unpackMemRef(const MemRefView &view, const void *src);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_MEMREFVIEW_H
