//===- MemRefView.cpp - Memref descriptors of the C ABI, decoded ----------===//
//
// Part of pipeopt. Compiled into libpipeopt_rt and libpipeopt_rt_cuda.so.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/MemRefView.h"

#include <cstring>

namespace pipeopt {
namespace rt {

size_t MemRefView::byteSize() const {
  return size_t(numElements(sizes)) * dtypeSize(dtype);
}

bool MemRefView::isContiguous() const {
  int64_t expected = 1;
  for (int i = int(sizes.size()) - 1; i >= 0; --i) {
    if (sizes[i] == 1)
      continue;
    if (strides[i] != expected)
      return false;
    expected *= sizes[i];
  }
  return true;
}

MemRefView decodeMemRef(const pipeopt_rt_unranked_memref *memref, DType dtype) {
  if (!memref || !memref->descriptor)
    throw RuntimeError("null memref descriptor");
  if (memref->rank < 0 || memref->rank > PIPEOPT_RT_MAX_RANK)
    throw RuntimeError("memref rank " + std::to_string(memref->rank) +
                       " is not supported (0.." +
                       std::to_string(PIPEOPT_RT_MAX_RANK) + ")");
  const auto *head =
      static_cast<const pipeopt_rt_memref_head *>(memref->descriptor);
  const auto *dims = reinterpret_cast<const int64_t *>(head + 1);
  MemRefView v;
  v.dtype = dtype;
  v.sizes.assign(dims, dims + memref->rank);
  v.strides.assign(dims + memref->rank, dims + 2 * memref->rank);
  int64_t n = numElements(v.sizes);
  if (n > 0 && !head->aligned)
    throw RuntimeError("memref " + typeString(dtype, v.sizes) +
                       " has a null data pointer");
  v.base = static_cast<uint8_t *>(head->aligned) +
           head->offset * int64_t(dtypeSize(dtype));
  return v;
}

/// Calls f(elementPointer) for every element in row-major order.
template <typename F>
static void forEachElement(const MemRefView &v, F &&f) {
  int64_t n = numElements(v.sizes);
  if (n == 0)
    return;
  size_t esize = dtypeSize(v.dtype);
  int rank = int(v.sizes.size());
  std::vector<int64_t> idx(rank, 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    for (int d = 0; d < rank; ++d)
      off += idx[d] * v.strides[d];
    f(v.base + off * int64_t(esize));
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < v.sizes[d])
        break;
      idx[d] = 0;
    }
  }
}

void packMemRef(const MemRefView &v, void *dst) {
  if (v.isContiguous()) {
    if (v.byteSize())
      std::memcpy(dst, v.base, v.byteSize());
    return;
  }
  size_t esize = dtypeSize(v.dtype);
  auto *out = static_cast<uint8_t *>(dst);
  forEachElement(v, [&](const uint8_t *p) {
    std::memcpy(out, p, esize);
    out += esize;
  });
}

void unpackMemRef(const MemRefView &v, const void *src) {
  if (v.isContiguous()) {
    if (v.byteSize())
      std::memcpy(v.base, src, v.byteSize());
    return;
  }
  size_t esize = dtypeSize(v.dtype);
  const auto *in = static_cast<const uint8_t *>(src);
  forEachElement(v, [&](uint8_t *p) {
    std::memcpy(p, in, esize);
    in += esize;
  });
}

} // namespace rt
} // namespace pipeopt
