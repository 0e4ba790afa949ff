//===- FakeCudaApi.cpp - A CudaApi.h table backed by host memory -*- C++
//-*-===//

#include "FakeCudaApi.h"

#include "pipeopt/runtime/Npy.h"
#include "pipeopt/runtime/Optimizer.h"
#include "pipeopt/runtime/Reduce.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

using namespace pipeopt::rt;

namespace fake_cuda {
namespace {

struct State {
  std::mutex mu;
  std::map<uintptr_t, size_t> allocations; ///< base -> bytes
  Counters counters;
  int deviceCount = 2;
};

State &state() {
  static State *s = new State; // never destroyed: frees may come late
  return *s;
}

thread_local std::string tlsError;
thread_local int tlsDevice = -1;
thread_local int tlsStream = 0; ///< its address is the "stream"

int32_t fail(const std::string &message) {
  if (tlsError.empty())
    tlsError = message;
  return 1;
}

bool isDeviceLocked(State &s, const void *p, size_t bytes) {
  auto a = reinterpret_cast<uintptr_t>(p);
  auto it = s.allocations.upper_bound(a);
  if (it == s.allocations.begin())
    return false;
  --it;
  return a >= it->first && a + bytes <= it->first + it->second;
}

/// Fails (a misuse) unless [p, p + bytes) is device memory.
int32_t needDevice(State &s, const void *p, size_t bytes, const char *fn,
                   const char *what) {
  if (bytes == 0 || isDeviceLocked(s, p, bytes))
    return 0;
  ++s.counters.misuses;
  return fail(std::string("fake CUDA: ") + fn + ": " + what +
              " is not device memory (a host pointer?)");
}

int32_t needBound(State &s, const char *fn) {
  if (tlsDevice >= 0)
    return 0;
  ++s.counters.misuses;
  return fail(std::string("fake CUDA: ") + fn +
              ": the thread is not bound to a device");
}

const char *lastError() { return tlsError.c_str(); }

int32_t deviceCount(int32_t *count) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.deviceCount < 1)
    return fail("fake CUDA: cudaGetDeviceCount: no CUDA-capable device is "
                "detected");
  *count = s.deviceCount;
  return 0;
}

int32_t bindThread(int32_t device, int32_t) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (device < 0 || device >= s.deviceCount)
    return fail("fake CUDA: cudaSetDevice: invalid device ordinal");
  ++s.counters.binds;
  if (tlsDevice != device)
    tlsError.clear(); // a new binding starts without an error
  tlsDevice = device;
  return 0;
}

int32_t unbindThread() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.counters.unbinds;
  tlsDevice = -1;
  return 0;
}

void *computeStream() { return tlsDevice >= 0 ? &tlsStream : nullptr; }

int32_t synchronize() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.counters.synchronizes;
  if (needBound(s, "synchronize"))
    return 1;
  return tlsError.empty() ? 0 : 1;
}

int32_t alloc(void **ptr, size_t bytes) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (needBound(s, "cudaMalloc"))
    return 1;
  void *p = std::malloc(bytes ? bytes : 1);
  if (!p)
    return fail("fake CUDA: cudaMalloc: out of memory");
  s.allocations[reinterpret_cast<uintptr_t>(p)] = bytes ? bytes : 1;
  ++s.counters.allocs;
  *ptr = p;
  return 0;
}

int32_t freeMem(void *ptr) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!ptr)
    return 0;
  auto it = s.allocations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == s.allocations.end()) {
    ++s.counters.misuses;
    return fail("fake CUDA: cudaFree: not a device allocation");
  }
  s.allocations.erase(it);
  ++s.counters.frees;
  std::free(ptr);
  return 0;
}

int32_t copy(void *dst, const void *src, size_t bytes) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (needBound(s, "cudaMemcpy"))
    return 1;
  if (bytes == 0)
    return 0;
  bool dDev = isDeviceLocked(s, dst, bytes);
  bool sDev = isDeviceLocked(s, src, bytes);
  // A pointer that starts in an allocation but runs past its end.
  if ((!dDev && isDeviceLocked(s, dst, 1)) ||
      (!sDev && isDeviceLocked(s, src, 1))) {
    ++s.counters.misuses;
    return fail("fake CUDA: cudaMemcpy: copy runs past a device allocation");
  }
  if (dDev && sDev)
    ++s.counters.d2d;
  else if (dDev)
    ++s.counters.h2d;
  else if (sDev)
    ++s.counters.d2h;
  else {
    // The runtime never copies host to host through the table: one of the
    // two is a host pointer where device memory belongs.
    ++s.counters.h2h;
    ++s.counters.misuses;
    return fail("fake CUDA: cudaMemcpy: neither pointer is device memory "
                "(a host pointer where device memory belongs?)");
  }
  std::memmove(dst, src, bytes);
  return 0;
}

int32_t zero(void *ptr, size_t bytes) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (needBound(s, "cudaMemset") ||
      needDevice(s, ptr, bytes, "cudaMemset", "the buffer"))
    return 1;
  ++s.counters.zeros;
  std::memset(ptr, 0, bytes);
  return 0;
}

/// Extent in bytes of a strided view: one past its last element.
size_t viewExtent(int64_t esize, int32_t rank, const int64_t *sizes,
                  const int64_t *strides) {
  int64_t last = 0;
  for (int32_t d = 0; d < rank; ++d) {
    if (sizes[d] == 0)
      return 0;
    last += (sizes[d] - 1) * strides[d];
  }
  return size_t((last + 1) * esize);
}

template <typename F>
void forEach(int64_t esize, int32_t rank, const int64_t *sizes,
             const int64_t *strides, F &&f) {
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d)
    n *= sizes[d];
  std::vector<int64_t> idx(size_t(rank), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    for (int32_t d = 0; d < rank; ++d)
      off += idx[d] * strides[d];
    f(e * esize, off * esize);
    for (int32_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d])
        break;
      idx[d] = 0;
    }
  }
}

int32_t stridedCopy(bool isGather, void *dst, const void *src, int64_t esize,
                    int32_t rank, const int64_t *sizes,
                    const int64_t *strides) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  const char *fn = isGather ? "gather" : "scatter";
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d)
    n *= sizes[d];
  size_t packed = size_t(n * esize);
  size_t extent = viewExtent(esize, rank, sizes, strides);
  if (needBound(s, fn) ||
      needDevice(s, dst, isGather ? packed : extent, fn, "the destination") ||
      needDevice(s, src, isGather ? extent : packed, fn, "the source"))
    return 1;
  isGather ? ++s.counters.gathers : ++s.counters.scatters;
  auto *d = static_cast<uint8_t *>(dst);
  const auto *p = static_cast<const uint8_t *>(src);
  forEach(esize, rank, sizes, strides, [&](int64_t packedOff, int64_t viewOff) {
    if (isGather)
      std::memcpy(d + packedOff, p + viewOff, size_t(esize));
    else
      std::memcpy(d + viewOff, p + packedOff, size_t(esize));
  });
  return 0;
}

int32_t gather(void *dst, const void *src, int64_t esize, int32_t rank,
               const int64_t *sizes, const int64_t *strides) {
  return stridedCopy(true, dst, src, esize, rank, sizes, strides);
}
int32_t scatter(void *dst, const void *src, int64_t esize, int32_t rank,
                const int64_t *sizes, const int64_t *strides) {
  return stridedCopy(false, dst, src, esize, rank, sizes, strides);
}

int32_t accumulate(double *sum, const void *grad, int32_t dtype, int64_t n) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  DType t = DType(dtype);
  if (needBound(s, "accumulate") ||
      needDevice(s, sum, size_t(n) * 8, "accumulate", "the sum") ||
      needDevice(s, grad, size_t(n) * dtypeSize(t), "accumulate",
                 "the gradient"))
    return 1;
  ++s.counters.accumulates;
  std::vector<double> acc(sum, sum + n);
  addToSum(t, static_cast<const uint8_t *>(grad), acc);
  std::memcpy(sum, acc.data(), size_t(n) * 8);
  return 0;
}

int32_t optimizerStepFn(const pipeopt_rt_cuda_optimizer *c, void *weights,
                        int32_t dtype, const double *gradSum, double scale,
                        double *first, double *second, int64_t step,
                        int64_t n) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  DType t = DType(dtype);
  if (needBound(s, "optimizer_step") ||
      needDevice(s, weights, size_t(n) * dtypeSize(t), "optimizer_step",
                 "the weights") ||
      needDevice(s, gradSum, size_t(n) * 8, "optimizer_step", "the sum") ||
      (first && needDevice(s, first, size_t(n) * 8, "optimizer_step",
                           "the first state")) ||
      (second && needDevice(s, second, size_t(n) * 8, "optimizer_step",
                            "the second state")))
    return 1;
  ++s.counters.optimizerSteps;
  TrainingConfig cfg;
  cfg.optimizer = c->kind == PIPEOPT_RT_CUDA_OPT_SGD ? OptimizerKind::Sgd
                  : c->kind == PIPEOPT_RT_CUDA_OPT_MOMENTUM
                      ? OptimizerKind::Momentum
                  : c->kind == PIPEOPT_RT_CUDA_OPT_ADAMW ? OptimizerKind::AdamW
                                                         : OptimizerKind::None;
  cfg.lr = c->lr;
  cfg.momentum = c->momentum;
  cfg.beta1 = c->beta1;
  cfg.beta2 = c->beta2;
  cfg.eps = c->eps;
  cfg.weightDecay = c->weight_decay;
  HostTensor w;
  w.dtype = t;
  w.shape = {n};
  w.data.assign(static_cast<uint8_t *>(weights),
                static_cast<uint8_t *>(weights) + size_t(n) * dtypeSize(t));
  std::vector<double> wd = tensorToDoubles(w);
  std::vector<double> g(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    g[size_t(i)] = gradSum[i] * scale;
  // The host state is empty before the first step (Optimizer.h).
  OptimizerState st;
  st.step = step - 1;
  if (step > 1 && first)
    st.first = StateBuffer(std::vector<double>(first, first + n), DType::F64);
  if (step > 1 && second)
    st.second =
        StateBuffer(std::vector<double>(second, second + n), DType::F64);
  optimizerStep(cfg, wd, g, st);
  doublesToTensor(wd, w);
  std::memcpy(weights, w.data.data(), w.data.size());
  if (first && !st.first.empty())
    std::memcpy(first, st.first.f64Data(), size_t(n) * 8);
  if (second && !st.second.empty())
    std::memcpy(second, st.second.f64Data(), size_t(n) * 8);
  return 0;
}

pipeopt_rt_cuda_api makeTable() {
  pipeopt_rt_cuda_api t;
  t.version = PIPEOPT_RT_CUDA_API_VERSION;
  t.last_error = lastError;
  t.device_count = deviceCount;
  t.bind_thread = bindThread;
  t.unbind_thread = unbindThread;
  t.compute_stream = computeStream;
  t.synchronize = synchronize;
  t.alloc = alloc;
  t.free = freeMem;
  t.copy = copy;
  t.zero = zero;
  t.gather = gather;
  t.scatter = scatter;
  t.accumulate = accumulate;
  t.optimizer_step = optimizerStepFn;
  return t;
}

} // namespace

const pipeopt_rt_cuda_api *api() {
  static const pipeopt_rt_cuda_api table = makeTable();
  return &table;
}

void reset(int count) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.deviceCount = count;
  s.counters = Counters();
}

Counters counters() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.counters;
}

size_t liveBytes() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  size_t n = 0;
  for (auto &kv : s.allocations)
    n += kv.second;
  return n;
}

bool isDevice(const void *p, size_t bytes) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return isDeviceLocked(s, p, bytes);
}

void recordError(const char *message) { fail(message); }

} // namespace fake_cuda
