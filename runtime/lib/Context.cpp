//===- Context.cpp - Per-rank state and memref descriptors ------*- C++ -*-===//

#include "pipeopt/runtime/Context.h"
#include "pipeopt/runtime/Device.h"

#include <cstring>

namespace pipeopt {
namespace rt {

//===----------------------------------------------------------------------===//
// InputStore
//===----------------------------------------------------------------------===//

void InputStore::set(const ManifestInput &meta, int numMicrobatches,
                     HostTensor tensor, int dataSteps) {
  std::string what = "input " + std::to_string(meta.index);
  if (!meta.name.empty())
    what += " ('" + meta.name + "')";
  if (tensor.dtype != meta.dtype)
    throw RuntimeError(what + ": the manifest says dtype " +
                       dtypeName(meta.dtype) + " but the data is " +
                       dtypeName(tensor.dtype));
  Shape want = meta.shape;
  if (meta.microbatched)
    want.insert(want.begin(), numMicrobatches);
  if (dataSteps > 0) {
    if (!meta.microbatched)
      throw RuntimeError(what + ": only a microbatched input can be a "
                                "dataset (one slice per step)");
    want.insert(want.begin(), dataSteps);
  }
  if (tensor.shape != want)
    throw RuntimeError(what + ": expected " + typeString(meta.dtype, want) +
                       (meta.microbatched ? " (microbatches x per-microbatch "
                                            "shape)"
                                          : "") +
                       " but got " + typeString(tensor.dtype, tensor.shape));
  entries[meta.index] = {meta, std::move(tensor)};
  if (dataSteps > 0)
    steps[meta.index] = dataSteps;
  else
    steps.erase(meta.index);
}

const std::pair<ManifestInput, HostTensor> *InputStore::find(int index) const {
  auto it = entries.find(index);
  return it == entries.end() ? nullptr : &it->second;
}

//===----------------------------------------------------------------------===//
// RankContext
//===----------------------------------------------------------------------===//

RankContext::RankContext(int rank, Communicator *comm, const Manifest *manifest,
                         const InputStore *inputs, double timeoutS)
    : rank(rank), comm(comm), manifest(manifest), inputs(inputs),
      timeoutS(timeoutS) {}

void RankContext::initParameters() {
  parameters.clear();
  if (!manifest)
    return;
  for (const ManifestParameter &p : manifest->parameters) {
    if (!std::binary_search(p.ranks.begin(), p.ranks.end(), rank))
      continue;
    const auto *entry = inputs ? inputs->find(p.index) : nullptr;
    if (!entry)
      throw RuntimeError("parameter " + std::to_string(p.index) +
                         ": its input was not loaded");
    ParameterState &st = parameters[p.index];
    st.param = &p;
    st.input = manifest->findInput(p.index);
    st.value = entry->second; // this rank's own copy
    st.gradSum.assign(size_t(numElements(st.value.shape)), 0.0);
  }
}

void RankContext::beginCall() {
  for (auto &kv : parameters) {
    ParameterState &st = kv.second;
    if (st.device && device)
      device->zero(st.device->gradSum.data(), st.device->gradSum.size());
    else
      std::fill(st.gradSum.begin(), st.gradSum.end(), 0.0);
    st.microbatches.clear();
  }
  actionsBegun = 0;
  sharedInputReads.clear();
  sharedOutputWrites.clear();
  microbatchedInputFirstRead.clear();
  reducedOutputs.clear();
}

void RankContext::fail(const std::string &message) {
  if (poisoned)
    return;
  poisoned = true;
  error = "rank " + std::to_string(rank) + ": " + message;
}

double RankContext::now() const {
  return std::chrono::duration<double>(Clock::now() - origin).count();
}

static thread_local RankContext *tlsContext = nullptr;

RankContext *currentContext() { return tlsContext; }

ScopedContext::ScopedContext(RankContext *ctx) : previous(tlsContext) {
  tlsContext = ctx;
}
ScopedContext::~ScopedContext() { tlsContext = previous; }

//===----------------------------------------------------------------------===//
// Memref views
//===----------------------------------------------------------------------===//

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

MemRefView decodeMemRef(const pipeopt_rt_unranked_memref *memref,
                        DType dtype) {
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
