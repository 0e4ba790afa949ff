/*===- CudaApi.h - The CUDA side of the runtime, as a table of functions ---===*
 *
 * Part of pipeopt. C ABI between libpipeopt_rt (the CUDA-free runtime that
 * pipeopt-run links) and libpipeopt_rt_cuda.so (built only when the CUDA
 * toolkit is found at configure time; links the CUDA runtime, the driver
 * API, cuBLAS and cuDNN).
 *
 * A model compiled with `--target=cuda` needs libpipeopt_rt_cuda.so
 * (DT_NEEDED, found through the model's RUNPATH): it defines the `mgpu*`
 * host functions that MLIR's GPU lowering calls and the library kernels
 * `_mlir_ciface_pipeopt_rt_gpu_*` (RuntimeFunctions.def,
 * PIPEOPT_RT_GPU_FLOAT_FN). Once the model .so is loaded, libpipeopt_rt
 * looks up `pipeopt_rt_cuda_get_api` (dlsym on the model's handle) and does
 * everything device-related through the returned table: binding a rank's
 * thread to its device, copies, gradient sums and optimizer steps. Tests
 * supply a fake table backed by host memory, so that every device-mode path
 * of the runtime runs on a machine without a GPU.
 *
 * Conventions of every function below:
 *  - Returns 0 on success; otherwise nonzero, and last_error() gives a
 *    message naming the CUDA call and its error string (e.g.
 *    "cudaMemcpyAsync: an illegal memory access was encountered").
 *  - Acts for the calling thread's binding (bind_thread): its device and
 *    its compute stream. Work is enqueued on that stream in call order;
 *    functions documented "synchronous" return only when it has completed.
 *  - Sizes are in bytes unless named `n` (elements). dtype is a
 *    pipeopt_rt dtype code (DType in Types.h: F32, F64, F16, BF16, ...).
 *
 *===----------------------------------------------------------------------===*/

#ifndef PIPEOPT_RUNTIME_CUDAAPI_H
#define PIPEOPT_RUNTIME_CUDAAPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Bumped whenever the table below changes. */
#define PIPEOPT_RT_CUDA_API_VERSION 1

/** Optimizer kinds of pipeopt_rt_cuda_optimizer (as OptimizerKind). */
enum pipeopt_rt_cuda_optimizer_kind {
  PIPEOPT_RT_CUDA_OPT_NONE = 0,
  PIPEOPT_RT_CUDA_OPT_SGD = 1,
  PIPEOPT_RT_CUDA_OPT_MOMENTUM = 2,
  PIPEOPT_RT_CUDA_OPT_ADAMW = 3
};

/** Hyper-parameters of one optimizer step (manifest "training"). */
typedef struct pipeopt_rt_cuda_optimizer {
  int32_t kind; /**< pipeopt_rt_cuda_optimizer_kind */
  double lr, momentum, beta1, beta2, eps, weight_decay;
} pipeopt_rt_cuda_optimizer;

typedef struct pipeopt_rt_cuda_api {
  /** PIPEOPT_RT_CUDA_API_VERSION of the library. */
  int32_t version;

  /** The first error recorded on the calling thread since bind_thread
   *  ("" if none). Sticky: later errors do not replace it. The `mgpu*`
   *  functions and the pipeopt_rt_gpu_* kernels, which cannot return an
   *  error to generated code, record theirs here (and skip their work);
   *  libpipeopt_rt polls it at every ABI call of a rank and fails the rank
   *  with it, naming the open action's stage and microbatch. */
  const char *(*last_error)(void);

  /** Number of visible CUDA devices; fails (no driver, no device) with a
   *  message that says which. */
  int32_t (*device_count)(int32_t *count);

  /** Binds the calling thread to `device` (cudaSetDevice) and creates its
   *  compute stream, a cuBLAS handle and a cuDNN handle on it. `rank` only
   *  labels messages. Rebinding the same device is a no-op. */
  int32_t (*bind_thread)(int32_t device, int32_t rank);
  /** Synchronizes and destroys the calling thread's streams and handles. */
  int32_t (*unbind_thread)(void);

  /** The calling thread's compute stream (a cudaStream_t), or NULL when
   *  unbound: communicators order their streams after it with events. */
  void *(*compute_stream)(void);
  /** Waits until everything enqueued on the compute stream has completed. */
  int32_t (*synchronize)(void);

  /** Device memory of the bound device (synchronous). */
  int32_t (*alloc)(void **ptr, size_t bytes);
  int32_t (*free)(void *ptr);
  /** Copies between any two of host and device memory (cudaMemcpyDefault;
   *  peer devices too). Synchronous. */
  int32_t (*copy)(void *dst, const void *src, size_t bytes);
  /** Sets `bytes` bytes of device memory to zero. Synchronous. */
  int32_t (*zero)(void *ptr, size_t bytes);
  /** Gathers a strided device view into contiguous device memory `dst`
   *  (row-major): element (i_0..i_{r-1}) is read at
   *  src + elem_bytes * sum(i_k * strides[k]). `scatter` does the inverse
   *  (contiguous `src` into the strided view at `dst`). Synchronous. */
  int32_t (*gather)(void *dst, const void *src, int64_t elem_bytes,
                    int32_t rank, const int64_t *sizes, const int64_t *strides);
  int32_t (*scatter)(void *dst, const void *src, int64_t elem_bytes,
                     int32_t rank, const int64_t *sizes,
                     const int64_t *strides);

  /** sum[i] += (double)grad[i] for n elements; `sum` is f64 device memory,
   *  `grad` a contiguous device tensor of `dtype` (F32, F64, F16, BF16).
   *  Synchronous. */
  int32_t (*accumulate)(double *sum, const void *grad, int32_t dtype,
                        int64_t n);
  /** One optimizer step on the device, the same formulas in the same order
   *  as optimizerStep (Optimizer.h) in double: the mean gradient is
   *  grad_sum[i] * grad_scale; `weights` (n elements of `dtype`) is read,
   *  updated in double and rounded once to `dtype` (to nearest even);
   *  `first` / `second` are the f64 optimizer state (n elements each, or
   *  NULL when the optimizer has none; zero-initialized by the caller),
   *  `step` the step count after this step (t of AdamW, >= 1).
   *  Synchronous. */
  int32_t (*optimizer_step)(const pipeopt_rt_cuda_optimizer *config,
                            void *weights, int32_t dtype,
                            const double *grad_sum, double grad_scale,
                            double *first, double *second, int64_t step,
                            int64_t n);
} pipeopt_rt_cuda_api;

/** Exported by libpipeopt_rt_cuda.so: the table, or NULL when `version`
 *  differs from the library's PIPEOPT_RT_CUDA_API_VERSION. */
typedef const pipeopt_rt_cuda_api *(*pipeopt_rt_cuda_get_api_fn)(
    int32_t version);
#define PIPEOPT_RT_CUDA_GET_API_SYMBOL "pipeopt_rt_cuda_get_api"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PIPEOPT_RUNTIME_CUDAAPI_H */
