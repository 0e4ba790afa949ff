//===- CudaState.h - Internals of libpipeopt_rt_cuda.so ---------*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// Shared by the three sources of libpipeopt_rt_cuda.so: CudaRuntime.cpp (the
// driver loader, thread bindings, the CudaApi.h table and the mgpu* host
// ABI), LibraryKernels.cpp (pipeopt_rt_gpu_matmul / conv2d on cuBLAS and
// cuDNN) and DeviceKernels.cu (the strided copy, accumulate and optimizer
// kernels). Nothing here is exported: the library is built with hidden
// visibility and exports only the C symbols marked PIPEOPT_RT_CUDA_EXPORT.
//
// Error handling: internal functions throw RuntimeError; every C entry point
// catches it and records the message as the calling thread's sticky error
// (CudaApi.h, last_error). Nothing aborts, exits or throws across C.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_LIB_CUDA_CUDASTATE_H
#define PIPEOPT_RUNTIME_LIB_CUDA_CUDASTATE_H

#include "pipeopt/runtime/Types.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#ifdef PIPEOPT_RT_CUDA_HAVE_CUDNN
#include <cudnn.h>
#endif

#include <cstddef>
#include <cstdint>
#include <string>

#define PIPEOPT_RT_CUDA_EXPORT __attribute__((visibility("default")))

namespace pipeopt {
namespace rt {
namespace cuda {

/// What bind_thread creates for the calling thread.
struct Binding {
  int device = -1;
  int rank = -1;
  cudaStream_t stream = nullptr; ///< the compute stream (non-blocking)
  cublasHandle_t blas = nullptr; ///< set to `stream`
#ifdef PIPEOPT_RT_CUDA_HAVE_CUDNN
  cudnnHandle_t dnn = nullptr; ///< set to `stream`
#endif
  void *workspace = nullptr; ///< cuDNN workspace (stream-ordered memory)
  size_t workspaceBytes = 0;
};

/// The calling thread's binding, or nullptr when it is unbound.
Binding *currentBinding();
/// The calling thread's binding; throws "the calling thread is not bound to
/// a CUDA device (bind_thread was not called)" when unbound.
Binding &requireBinding();

/// Loads the driver (dlopen("libcuda.so.1"), cuInit) on first use; throws
/// "no CUDA driver (libcuda.so.1 not found): <dlerror>" or the cuInit error
/// on this and every later call when that failed.
void requireDriver();

/// True when the calling thread has recorded an error since bind_thread.
bool threadFailed();
/// Records `message` as the calling thread's error unless one is recorded.
void recordError(const std::string &message);

/// Throws RuntimeError "<what>: <CUDA error string>" when `e` is an error.
void check(cudaError_t e, const char *what);
void check(cublasStatus_t s, const char *what);
#ifdef PIPEOPT_RT_CUDA_HAVE_CUDNN
void check(cudnnStatus_t s, const char *what);
#endif

/// Device memory ordered on `stream`: cudaMallocAsync at construction,
/// cudaFreeAsync at destruction (errors of the free are recorded, not
/// thrown). Used for the scratch copies of the library kernels.
class StreamScratch {
public:
  StreamScratch(size_t bytes, cudaStream_t stream);
  ~StreamScratch();
  StreamScratch(const StreamScratch &) = delete;
  StreamScratch &operator=(const StreamScratch &) = delete;
  void *get() const { return ptr; }

private:
  void *ptr = nullptr;
  cudaStream_t stream;
};

//===----------------------------------------------------------------------===//
// Kernels of DeviceKernels.cu (enqueued on `stream`, not synchronized;
// return the launch error)
//===----------------------------------------------------------------------===//

/// Largest rank of stridedCopy.
constexpr int kMaxCopyRank = 8;

/// scatter = false: dst[e] = src-view[idx(e)] (gather into contiguous dst);
/// scatter = true: dst-view[idx(e)] = src[e]. The view's element
/// (i_0..i_{r-1}) is at view + elemBytes * sum(i_k * strides[k]); e runs over
/// the row-major indices of `sizes`. rank in [0, kMaxCopyRank].
cudaError_t stridedCopy(void *dst, const void *src, int64_t elemBytes, int rank,
                        const int64_t *sizes, const int64_t *strides,
                        bool scatter, cudaStream_t stream);

/// sum[i] += (double)grad[i], i < n; dtype a PIPEOPT_RT_DTYPE_* float code.
cudaError_t accumulateKernel(double *sum, const void *grad, int dtype,
                             int64_t n, cudaStream_t stream);

/// The per-element part of one optimizer step (Optimizer.cpp's formulas);
/// the scalars that do not depend on the element are computed on the host.
struct OptimizerArgs {
  int kind = 0; ///< pipeopt_rt_cuda_optimizer_kind (not NONE)
  void *weights = nullptr;
  int dtype = 0; ///< PIPEOPT_RT_DTYPE_* float code of `weights`
  const double *gradSum = nullptr;
  double gradScale = 1;
  double *first = nullptr, *second = nullptr;
  bool firstStep = false; ///< momentum: the buffer starts as the gradient
  double lr = 0, momentum = 0, beta1 = 0, beta2 = 0, eps = 0, weightDecay = 0;
  double stepSize = 0; ///< adamw: lr / (1 - beta1^t)
  double bc2Sqrt = 0;  ///< adamw: sqrt(1 - beta2^t)
  double decay = 0;    ///< adamw: 1 - lr * weightDecay
  int64_t n = 0;
};
cudaError_t optimizerKernel(const OptimizerArgs &args, cudaStream_t stream);

} // namespace cuda
} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_LIB_CUDA_CUDASTATE_H
