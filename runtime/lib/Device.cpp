//===- Device.cpp - A rank's CUDA device, over the CudaApi.h table -*- C++
//-*-===//

#include "pipeopt/runtime/Device.h"

#include "pipeopt/runtime/Manifest.h"
#include "pipeopt/runtime/Optimizer.h"

#include <dlfcn.h>

#include <cstring>
#include <utility>

namespace pipeopt {
namespace rt {

const pipeopt_rt_cuda_api *cudaApiFromModel(void *handle,
                                            const std::string &modelPath) {
  dlerror();
  void *sym = dlsym(handle, PIPEOPT_RT_CUDA_GET_API_SYMBOL);
  if (!sym) {
    const char *e = dlerror();
    throw RuntimeError(
        modelPath + " has no symbol " + PIPEOPT_RT_CUDA_GET_API_SYMBOL +
        " (a --target=cuda model links libpipeopt_rt_cuda.so): " +
        (e ? e : "not found"));
  }
  auto get = reinterpret_cast<pipeopt_rt_cuda_get_api_fn>(sym);
  const pipeopt_rt_cuda_api *api = get(PIPEOPT_RT_CUDA_API_VERSION);
  if (!api)
    throw RuntimeError("the libpipeopt_rt_cuda.so that " + modelPath +
                       " loaded does not provide version " +
                       std::to_string(PIPEOPT_RT_CUDA_API_VERSION) +
                       " of its function table (CudaApi.h): it is from "
                       "another pipeopt build");
  if (api->version != PIPEOPT_RT_CUDA_API_VERSION)
    throw RuntimeError("libpipeopt_rt_cuda.so returned a table of version " +
                       std::to_string(api->version) + ", expected " +
                       std::to_string(PIPEOPT_RT_CUDA_API_VERSION));
  return api;
}

//===----------------------------------------------------------------------===//
// Device
//===----------------------------------------------------------------------===//

void Device::check(int32_t rc, const std::string &what) const {
  if (rc == 0)
    return;
  const char *e = table->last_error();
  throw RuntimeError(what + " on CUDA device " + std::to_string(deviceId) +
                     ": " + (e && *e ? e : "failed (no error text)"));
}

std::string Device::pendingError() const {
  const char *e = table->last_error();
  return e ? e : "";
}

void Device::bindThread(int rank) const {
  check(table->bind_thread(deviceId, rank),
        "binding rank " + std::to_string(rank) + " to its device");
}

void Device::unbindThread() const {
  check(table->unbind_thread(), "unbinding the thread from its device");
}

void *Device::alloc(size_t bytes) const {
  void *p = nullptr;
  check(table->alloc(&p, bytes),
        "allocating " + std::to_string(bytes) + " bytes");
  return p;
}

void Device::free(void *ptr) const noexcept {
  if (ptr)
    table->free(ptr);
}

void Device::copy(void *dst, const void *src, size_t bytes) const {
  if (bytes)
    check(table->copy(dst, src, bytes),
          "copying " + std::to_string(bytes) + " bytes");
}

void Device::zero(void *ptr, size_t bytes) const {
  if (bytes)
    check(table->zero(ptr, bytes),
          "zeroing " + std::to_string(bytes) + " bytes");
}

void Device::gather(void *dst, const MemRefView &v) const {
  if (!v.byteSize())
    return;
  check(table->gather(dst, v.base, int64_t(dtypeSize(v.dtype)),
                      int32_t(v.sizes.size()), v.sizes.data(),
                      v.strides.data()),
        "gathering the strided view " + typeString(v.dtype, v.sizes));
}

void Device::scatter(const MemRefView &v, const void *src) const {
  if (!v.byteSize())
    return;
  check(table->scatter(v.base, src, int64_t(dtypeSize(v.dtype)),
                       int32_t(v.sizes.size()), v.sizes.data(),
                       v.strides.data()),
        "scattering into the strided view " + typeString(v.dtype, v.sizes));
}

void Device::accumulate(double *sum, const void *grad, DType dtype,
                        int64_t n) const {
  if (n)
    check(table->accumulate(sum, grad, int32_t(dtype), n),
          "adding a gradient of " + std::to_string(n) + " elements");
}

static int32_t cudaOptimizerKind(OptimizerKind kind) {
  switch (kind) {
  case OptimizerKind::None:
    return PIPEOPT_RT_CUDA_OPT_NONE;
  case OptimizerKind::Sgd:
    return PIPEOPT_RT_CUDA_OPT_SGD;
  case OptimizerKind::Momentum:
    return PIPEOPT_RT_CUDA_OPT_MOMENTUM;
  case OptimizerKind::AdamW:
    return PIPEOPT_RT_CUDA_OPT_ADAMW;
  }
  return PIPEOPT_RT_CUDA_OPT_NONE;
}

void Device::optimizerStep(const TrainingConfig &c, void *weights, DType dtype,
                           const double *gradSum, double gradScale,
                           double *first, double *second, int64_t step,
                           int64_t n) const {
  pipeopt_rt_cuda_optimizer cfg;
  cfg.kind = cudaOptimizerKind(c.optimizer);
  cfg.lr = c.lr;
  cfg.momentum = c.momentum;
  cfg.beta1 = c.beta1;
  cfg.beta2 = c.beta2;
  cfg.eps = c.eps;
  cfg.weight_decay = c.weightDecay;
  check(table->optimizer_step(&cfg, weights, int32_t(dtype), gradSum, gradScale,
                              first, second, step, n),
        std::string(optimizerName(c.optimizer)) + " step " +
            std::to_string(step) + " of " + std::to_string(n) + " weights");
}

//===----------------------------------------------------------------------===//
// DeviceBuffer
//===----------------------------------------------------------------------===//

DeviceBuffer::DeviceBuffer(const Device &dev, size_t n) : device(&dev) {
  if (n) {
    ptr = dev.alloc(n);
    bytes = n;
  }
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    reset();
    device = std::exchange(other.device, nullptr);
    ptr = std::exchange(other.ptr, nullptr);
    bytes = std::exchange(other.bytes, 0);
  }
  return *this;
}

void DeviceBuffer::reset() noexcept {
  if (ptr && device)
    device->free(ptr);
  ptr = nullptr;
  bytes = 0;
}

//===----------------------------------------------------------------------===//
// MemorySpace
//===----------------------------------------------------------------------===//

void MemorySpace::toHost(const MemRefView &v, void *dst) const {
  if (!device) {
    packMemRef(v, dst);
    return;
  }
  if (v.isContiguous()) {
    device->copy(dst, v.base, v.byteSize());
    return;
  }
  DeviceBuffer packed(*device, v.byteSize());
  device->gather(packed.data(), v);
  device->copy(dst, packed.data(), v.byteSize());
}

void MemorySpace::fromHost(const MemRefView &v, const void *src) const {
  if (!device) {
    unpackMemRef(v, src);
    return;
  }
  if (v.isContiguous()) {
    device->copy(v.base, src, v.byteSize());
    return;
  }
  DeviceBuffer packed(*device, v.byteSize());
  device->copy(packed.data(), src, v.byteSize());
  device->scatter(v, packed.data());
}

void MemorySpace::toDevice(const MemRefView &v, void *dst) const {
  if (!device)
    throw RuntimeError("internal: a device copy in a cpu build");
  if (v.isContiguous())
    device->copy(dst, v.base, v.byteSize());
  else
    device->gather(dst, v);
}

void MemorySpace::fromDevice(const MemRefView &v, const void *src) const {
  if (!device)
    throw RuntimeError("internal: a device copy in a cpu build");
  if (v.isContiguous())
    device->copy(v.base, src, v.byteSize());
  else
    device->scatter(v, src);
}

//===----------------------------------------------------------------------===//
// Parameters on the device
//===----------------------------------------------------------------------===//

void initDeviceParameters(RankContext &ctx) {
  if (!ctx.device)
    return;
  const Device &dev = *ctx.device;
  const TrainingConfig &cfg = ctx.manifest->training;
  bool wantFirst = cfg.optimizer == OptimizerKind::Momentum ||
                   cfg.optimizer == OptimizerKind::AdamW;
  bool wantSecond = cfg.optimizer == OptimizerKind::AdamW;
  for (auto &[index, st] : ctx.parameters) {
    size_t n = size_t(numElements(st.value.shape));
    auto d = std::make_shared<DeviceParameterState>();
    d->value = DeviceBuffer(dev, st.value.data.size());
    dev.copy(d->value.data(), st.value.data.data(), st.value.data.size());
    d->gradSum = DeviceBuffer(dev, n * sizeof(double));
    dev.zero(d->gradSum.data(), d->gradSum.size());
    d->lastGradSum = DeviceBuffer(dev, n * sizeof(double));
    dev.zero(d->lastGradSum.data(), d->lastGradSum.size());
    // The device kernels keep f64 state (optimizerStateDType).
    auto state = [&](bool want, const StateBuffer &stateBuffer,
                     DeviceBuffer &buf, const char *what) {
      if (!want)
        return;
      std::vector<double> host = stateBuffer.toDoubles();
      buf = DeviceBuffer(dev, n * sizeof(double));
      if (host.empty()) {
        dev.zero(buf.data(), buf.size());
      } else {
        if (host.size() != n)
          throw RuntimeError("parameter " + std::to_string(index) + ": " +
                             what + " has " + std::to_string(host.size()) +
                             " elements, expected " + std::to_string(n));
        dev.copy(buf.data(), host.data(), buf.size());
      }
    };
    state(wantFirst, st.optimizer.first, d->first,
          "the optimizer's first state");
    state(wantSecond, st.optimizer.second, d->second,
          "the optimizer's second state");
    st.gradSum.clear();
    st.gradSum.shrink_to_fit();
    st.device = std::move(d);
  }
}

void deviceParameterStep(RankContext &ctx, ParameterState &st,
                         const double *gradSum, double gradScale) {
  const Device &dev = *ctx.device;
  DeviceParameterState &d = *st.device;
  int64_t n = numElements(st.value.shape);
  dev.optimizerStep(ctx.manifest->training, d.value.data(), st.value.dtype,
                    gradSum, gradScale, static_cast<double *>(d.first.data()),
                    static_cast<double *>(d.second.data()),
                    st.optimizer.step + 1, n);
  ++st.optimizer.step;
  d.hostStale = true;
}

void refreshHostParameter(RankContext &ctx, ParameterState &st) {
  if (!st.device || !st.device->hostStale)
    return;
  const Device &dev = *ctx.device;
  DeviceParameterState &d = *st.device;
  size_t n = size_t(numElements(st.value.shape));
  dev.copy(st.value.data.data(), d.value.data(), st.value.data.size());
  if (!d.hostMeanGrad) {
    st.meanGrad.assign(n, 0.0);
    dev.copy(st.meanGrad.data(), d.lastGradSum.data(), n * sizeof(double));
    for (double &x : st.meanGrad)
      x *= d.lastGradScale;
  }
  // As optimizerStep keeps it on the host: empty until the first step.
  if (st.optimizer.step > 0) {
    if (d.first) {
      st.optimizer.first = StateBuffer(n, DType::F64);
      dev.copy(st.optimizer.first.f64Data(), d.first.data(), d.first.size());
    }
    if (d.second) {
      st.optimizer.second = StateBuffer(n, DType::F64);
      dev.copy(st.optimizer.second.f64Data(), d.second.data(), d.second.size());
    }
  }
  d.hostStale = false;
}

bool pollDeviceError(RankContext &ctx) {
  if (!ctx.device || ctx.isPoisoned())
    return ctx.isPoisoned();
  std::string e = ctx.device->pendingError();
  if (e.empty())
    return false;
  std::string where = ctx.openKind >= 0
                          ? std::string("in action ") +
                                actionKindName(ctx.openKind) + " for stage " +
                                std::to_string(ctx.openStage) + " microbatch " +
                                std::to_string(ctx.openMicrobatch)
                          : std::string("outside any action");
  ctx.fail("CUDA error on device " + std::to_string(ctx.device->id()) + " " +
           where + " (a kernel or library call of the compiled program): " + e);
  return true;
}

} // namespace rt
} // namespace pipeopt

//===----------------------------------------------------------------------===//
// Communicator defaults for device payloads
//===----------------------------------------------------------------------===//

namespace pipeopt {
namespace rt {

// The key function: Communicator's vtable is emitted here, with the device
// defaults below, not in Types.cpp, which libpipeopt_rt_cuda.so also links.
Communicator::~Communicator() = default;

void Communicator::sendDevice(int dst, const MessageHeader &header,
                              const void *data, size_t bytes,
                              const Device &device, double timeoutS) {
  // Through host memory (MPI): the one transport without device payloads.
  std::vector<uint8_t> host(bytes);
  device.copy(host.data(), data, bytes);
  send(dst, header, host.data(), bytes, timeoutS);
}

Message Communicator::recvDevice(int src, const Device &, double timeoutS) {
  return recv(src, timeoutS);
}

// Sub-communicators and collectives: a backend without them says so.
CollectiveRequest::~CollectiveRequest() = default;

static RuntimeError unsupported(const Communicator &c, const char *what) {
  return RuntimeError(std::string(what) + " is not supported by the " +
                      c.name() + " communicator");
}

std::unique_ptr<Communicator> Communicator::split(int, int, double) {
  throw unsupported(*this, "split");
}

std::unique_ptr<CollectiveRequest> Communicator::startAllReduceSum(double *,
                                                                   size_t) {
  throw unsupported(*this, "all-reduce");
}

std::unique_ptr<CollectiveRequest>
Communicator::startReduceScatterSum(const double *, double *, size_t) {
  throw unsupported(*this, "reduce-scatter");
}

std::unique_ptr<CollectiveRequest>
Communicator::startAllGather(const void *, void *, size_t) {
  throw unsupported(*this, "all-gather");
}

} // namespace rt
} // namespace pipeopt
