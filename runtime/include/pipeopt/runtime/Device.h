//===- Device.h - A rank's CUDA device, over the CudaApi.h table -*- C++
//-*-===//
//
// libpipeopt_rt stays CUDA-free at build time: everything it does on a GPU
// goes through the function table of libpipeopt_rt_cuda.so (CudaApi.h),
// which a `--target=cuda` model brings along (DT_NEEDED). This header wraps
// that table:
//   * Device: one CUDA device as a rank sees it (its thread bound to it);
//     every call that fails throws RuntimeError naming what was being done
//     and the table's error text;
//   * DeviceBuffer: RAII device memory;
//   * MemorySpace: the one seam through which the C ABI (Abi.cpp) reads and
//     writes the memory of the memrefs the program passes: host memory for
//     cpu builds (packMemRef/unpackMemRef, unchanged), the rank's device for
//     cuda builds (copy / gather / scatter).
// docs/Runtime.md, "CUDA builds", says what crosses host<->device and when.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_DEVICE_H
#define PIPEOPT_RUNTIME_DEVICE_H

#include "pipeopt/runtime/Context.h"
#include "pipeopt/runtime/CudaApi.h"

#include <cstddef>
#include <string>

namespace pipeopt {
namespace rt {

/// The table of a loaded cuda model: dlsym(modelHandle,
/// PIPEOPT_RT_CUDA_GET_API_SYMBOL)(PIPEOPT_RT_CUDA_API_VERSION). Throws
/// RuntimeError when the model does not export the symbol (it was not
/// linked against libpipeopt_rt_cuda.so) or the library's table has
/// another version.
const pipeopt_rt_cuda_api *cudaApiFromModel(void *modelHandle,
                                            const std::string &modelPath);

/// One CUDA device of a rank. Not owning: the table outlives it. The
/// methods act for the calling thread's binding (bindThread), as the table
/// does; all of them are synchronous (CudaApi.h).
class Device {
public:
  Device() = default;
  Device(const pipeopt_rt_cuda_api *api, int id) : table(api), deviceId(id) {}

  const pipeopt_rt_cuda_api &api() const { return *table; }
  /// The CUDA device ordinal.
  int id() const { return deviceId; }

  /// Throws RuntimeError("<what>: <last_error()>") if `rc` is nonzero.
  void check(int32_t rc, const std::string &what) const;
  /// The calling thread's sticky error (CudaApi.h last_error), "" if none.
  std::string pendingError() const;

  /// bind_thread / unbind_thread for the calling thread (`rank` labels the
  /// table's messages).
  void bindThread(int rank) const;
  void unbindThread() const;
  /// The calling thread's compute stream (a cudaStream_t; null if unbound).
  void *computeStream() const { return table->compute_stream(); }

  void *alloc(size_t bytes) const;
  /// Never throws (destructors call it); a failure stays in last_error.
  void free(void *ptr) const noexcept;
  /// Any direction (cudaMemcpyDefault); `bytes` 0 does nothing.
  void copy(void *dst, const void *src, size_t bytes) const;
  void zero(void *ptr, size_t bytes) const;
  /// The elements of the strided device view `v` into contiguous device
  /// memory `dst` (v.byteSize() bytes, row-major), and the inverse.
  void gather(void *dst, const MemRefView &v) const;
  void scatter(const MemRefView &v, const void *src) const;
  /// sum[i] += grad[i] for n elements (sum: f64 device memory; grad:
  /// contiguous device memory of the float dtype `dtype`).
  void accumulate(double *sum, const void *grad, DType dtype, int64_t n) const;
  /// One optimizer step of `config` (CudaApi.h optimizer_step): the mean
  /// gradient is gradSum[i] * gradScale; `step` counts this step (>= 1).
  void optimizerStep(const TrainingConfig &config, void *weights, DType dtype,
                     const double *gradSum, double gradScale, double *first,
                     double *second, int64_t step, int64_t n) const;

private:
  const pipeopt_rt_cuda_api *table = nullptr;
  int deviceId = -1;
};

/// Device memory of one Device, freed with it. Movable, not copyable.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  /// `bytes` bytes of `device` (nothing for 0 bytes: data() is null).
  DeviceBuffer(const Device &device, size_t bytes);
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  void *data() const { return ptr; }
  size_t size() const { return bytes; }
  explicit operator bool() const { return ptr != nullptr; }
  /// Frees the memory (if any).
  void reset() noexcept;

private:
  const Device *device = nullptr;
  void *ptr = nullptr;
  size_t bytes = 0;
};

/// The device copies of one parameter of a cuda build (ParameterState::
/// device). Sizes: n = numElements(shape); value n elements of the
/// parameter's dtype; gradSum, lastGradSum, first, second n doubles
/// (first/second empty when the optimizer keeps no such state).
struct DeviceParameterState {
  DeviceBuffer value;
  /// This step's (asynchronous: this update's) sum of the reported
  /// gradients, zeroed by RankContext::beginCall.
  DeviceBuffer gradSum;
  /// The sum of the last update and the factor that makes it the mean:
  /// ParameterState::meanGrad is lastGradSum[i] * lastGradScale (unless
  /// the mean was computed on the host: hostMeanGrad).
  DeviceBuffer lastGradSum;
  double lastGradScale = 0;
  bool hostMeanGrad = false;
  DeviceBuffer first, second;
  /// The host copies (value, meanGrad, optimizer) are older than these.
  bool hostStale = false;
};

/// Where the memrefs that a rank's program passes live: host memory (cpu
/// builds, `device` null) or `device` (cuda builds). Every read or write of
/// memref memory in the C ABI goes through here.
class MemorySpace {
public:
  explicit MemorySpace(const Device *device = nullptr) : device(device) {}
  bool isDevice() const { return device != nullptr; }

  /// The view's elements into host memory `dst` (v.byteSize() bytes,
  /// row-major): packMemRef, or a device-to-host copy.
  void toHost(const MemRefView &v, void *dst) const;
  /// v.byteSize() row-major host bytes into the view: unpackMemRef, or a
  /// host-to-device copy.
  void fromHost(const MemRefView &v, const void *src) const;
  /// Device builds only: the view's elements into contiguous device memory
  /// `dst`, and contiguous device memory into the view (device-to-device).
  void toDevice(const MemRefView &v, void *dst) const;
  void fromDevice(const MemRefView &v, const void *src) const;

private:
  const Device *device;
};

/// The memory space of `ctx`: its device (ctx.device) or the host.
inline MemorySpace memorySpace(const RankContext &ctx) {
  return MemorySpace(ctx.device);
}

/// Device mode of a training build (ctx.device set): gives every parameter
/// of `ctx` its device copy of ParameterState::value, its zeroed f64
/// gradient sum and its optimizer state (from ParameterState::optimizer,
/// zeros when that is empty). Copies host to device: the initial (or
/// resumed) weights are inputs of the run.
void initDeviceParameters(RankContext &ctx);

/// Device mode: one optimizer step of `st` with the mean gradient
/// gradSum[i] * gradScale (`gradSum` f64 device memory), on the device.
/// Counts the step in st.optimizer.step and marks the host copy stale.
void deviceParameterStep(RankContext &ctx, ParameterState &st,
                         const double *gradSum, double gradScale);

/// Device mode: refreshes the host copies of `st` (value, meanGrad,
/// optimizer.first/second) from the device if they are stale; what the
/// launcher reads for checkpoints, --save-grads and the final weights.
void refreshHostParameter(RankContext &ctx, ParameterState &st);

/// Device mode: fails `ctx` (RankContext::fail) with the calling thread's
/// sticky CUDA error if there is one, naming the open action's stage and
/// microbatch (or "outside any action"). Returns true if it failed.
bool pollDeviceError(RankContext &ctx);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_DEVICE_H
