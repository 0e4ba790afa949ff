//===- CudaRuntime.cpp - Bindings, the CudaApi.h table and mgpu* ----------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// libpipeopt_rt_cuda.so's host side:
//  - the CUDA driver, loaded with dlopen("libcuda.so.1") at the first device
//    call (never at load time, and never linked: a model .so that needs this
//    library loads on a machine without a driver, and its first device call
//    fails with "no CUDA driver (libcuda.so.1 not found): ...");
//  - per-thread bindings (bind_thread): device, compute stream, cuBLAS and
//    cuDNN handles, and the thread's sticky error;
//  - the CudaApi.h function table;
//  - the mgpu* host functions that MLIR 22's gpu-to-llvm lowering calls
//    (signatures as in the LLVM IR it emits, see docs/CUDA-runtime-lib.md).
//
// Kernel modules: mgpuModuleLoad runs in the model's global constructor at
// dlopen time, before any thread is bound, so it only records the image.
// The first mgpuModuleGetFunction of the module loads it with
// cuLibraryLoadData, which is context-independent; the CUkernel handles of
// cuLibraryGetKernel are context-independent too, and cuLaunchKernel accepts
// them (cuda.h: "f - Function CUfunction or Kernel CUkernel to launch"),
// loading the code into the current context (the bound device's primary
// context) at the first launch there. So one image serves every device.
//
//===----------------------------------------------------------------------===//

#include "CudaState.h"

#include "KernelShapes.h"
#include "pipeopt/runtime/CudaApi.h"

#include <cuda.h>

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <exception>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace pipeopt {
namespace rt {
namespace cuda {

//===----------------------------------------------------------------------===//
// Errors and bindings
//===----------------------------------------------------------------------===//

namespace {

struct ThreadState {
  Binding binding;
  bool bound = false;
  std::string error;
};

ThreadState &threadState() {
  static thread_local ThreadState state;
  return state;
}

/// Runs `f` for the C entry point `fn`; an exception is recorded as the
/// thread's error ("<fn>: <message>") and gives `failValue`.
template <typename R, typename F>
R guarded(const char *fn, R failValue, F &&f) {
  try {
    return f();
  } catch (const std::exception &e) {
    recordError(std::string(fn) + ": " + e.what());
  } catch (...) {
    recordError(std::string(fn) + ": unknown exception");
  }
  return failValue;
}

/// For the CudaApi.h table: 0 on success, 1 with the error recorded.
template <typename F>
int32_t apiCall(const char *fn, F &&f) {
  return guarded(fn, int32_t(1), [&] {
    f();
    return int32_t(0);
  });
}

} // namespace

Binding *currentBinding() {
  ThreadState &s = threadState();
  return s.bound ? &s.binding : nullptr;
}

Binding &requireBinding() {
  Binding *b = currentBinding();
  if (!b)
    throw RuntimeError("the calling thread is not bound to a CUDA device "
                       "(bind_thread was not called)");
  return *b;
}

bool threadFailed() { return !threadState().error.empty(); }

void recordError(const std::string &message) {
  std::string &error = threadState().error;
  if (error.empty())
    error = message.empty() ? "unknown error" : message;
}

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw RuntimeError(std::string(what) + ": " + cudaGetErrorString(e));
}

void check(cublasStatus_t s, const char *what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw RuntimeError(std::string(what) + ": " + cublasGetStatusString(s));
}

#ifdef PIPEOPT_RT_CUDA_HAVE_CUDNN
void check(cudnnStatus_t s, const char *what) {
  if (s != CUDNN_STATUS_SUCCESS)
    throw RuntimeError(std::string(what) + ": " + cudnnGetErrorString(s));
}
#endif

StreamScratch::StreamScratch(size_t bytes, cudaStream_t stream)
    : stream(stream) {
  if (bytes)
    check(cudaMallocAsync(&ptr, bytes, stream), "cudaMallocAsync");
}

StreamScratch::~StreamScratch() {
  if (!ptr)
    return;
  cudaError_t e = cudaFreeAsync(ptr, stream);
  if (e != cudaSuccess)
    recordError(std::string("cudaFreeAsync: ") + cudaGetErrorString(e));
}

//===----------------------------------------------------------------------===//
// The driver, through dlopen
//===----------------------------------------------------------------------===//

namespace {

/// The driver entry points used here, resolved with cuGetProcAddress for
/// the ABI of the CUDA_VERSION this library was compiled against.
struct Driver {
  std::string error; ///< why the driver cannot be used ("" if it can)
  decltype(&::cuGetErrorString) getErrorString = nullptr;
  decltype(&::cuLibraryLoadData) libraryLoadData = nullptr;
  decltype(&::cuLibraryUnload) libraryUnload = nullptr;
  decltype(&::cuLibraryGetKernel) libraryGetKernel = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;
  decltype(&::cuLaunchKernelEx) launchKernelEx = nullptr;
  decltype(&::cuMemsetD32Async) memsetD32Async = nullptr;
  decltype(&::cuMemsetD16Async) memsetD16Async = nullptr;
};

using GetProcAddressFn = CUresult (*)(const char *, void **, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult *);
using InitFn = CUresult (*)(unsigned int);

const Driver &driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    // RTLD_LOCAL: the CUDA runtime opens the same library for itself.
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char *e = dlerror();
      d.error = std::string("no CUDA driver (libcuda.so.1 not found): ") +
                (e ? e : "dlopen failed");
      return;
    }
    auto init = reinterpret_cast<InitFn>(dlsym(h, "cuInit"));
    auto getProc =
        reinterpret_cast<GetProcAddressFn>(dlsym(h, "cuGetProcAddress_v2"));
    if (!init || !getProc) {
      d.error = "the CUDA driver is too old (libcuda.so.1 has no cuInit / "
                "cuGetProcAddress_v2; this library needs a CUDA " +
                std::to_string(CUDA_VERSION / 1000) + " driver)";
      return;
    }
    std::string missing;
    auto resolve = [&](const char *name, auto &fn) {
      void *p = nullptr;
      CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
      if (getProc(name, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT,
                  &status) != CUDA_SUCCESS ||
          !p || status != CU_GET_PROC_ADDRESS_SUCCESS)
        missing += std::string(missing.empty() ? "" : ", ") + name;
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    resolve("cuGetErrorString", d.getErrorString);
    resolve("cuLibraryLoadData", d.libraryLoadData);
    resolve("cuLibraryUnload", d.libraryUnload);
    resolve("cuLibraryGetKernel", d.libraryGetKernel);
    resolve("cuLaunchKernel", d.launchKernel);
    resolve("cuLaunchKernelEx", d.launchKernelEx);
    resolve("cuMemsetD32Async", d.memsetD32Async);
    resolve("cuMemsetD16Async", d.memsetD16Async);
    if (!missing.empty()) {
      d.error = "the CUDA driver lacks " + missing + " (for CUDA " +
                std::to_string(CUDA_VERSION / 1000) + "." +
                std::to_string(CUDA_VERSION % 1000 / 10) + ")";
      return;
    }
    CUresult r = init(0);
    if (r != CUDA_SUCCESS) {
      const char *s = nullptr;
      d.getErrorString(r, &s);
      d.error =
          std::string(r == CUDA_ERROR_NO_DEVICE ? "no CUDA device: " : "") +
          "cuInit: " + (s ? s : "error " + std::to_string(int(r)));
    }
  });
  return d;
}

void checkDriver(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS)
    return;
  const char *s = nullptr;
  if (driver().getErrorString)
    driver().getErrorString(r, &s);
  throw RuntimeError(std::string(what) + ": " +
                     (s ? s : "error " + std::to_string(int(r))));
}

} // namespace

void requireDriver() {
  const Driver &d = driver();
  if (!d.error.empty())
    throw RuntimeError(d.error);
}

} // namespace cuda
} // namespace rt
} // namespace pipeopt

using namespace pipeopt::rt;
using namespace pipeopt::rt::cuda;

//===----------------------------------------------------------------------===//
// The CudaApi.h table
//===----------------------------------------------------------------------===//

namespace {

const char *apiLastError() { return threadState().error.c_str(); }

int32_t apiDeviceCount(int32_t *count) {
  return apiCall("device_count", [&] {
    requireDriver();
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaErrorNoDevice)
      throw RuntimeError(std::string("no CUDA device: cudaGetDeviceCount: ") +
                         cudaGetErrorString(e));
    check(e, "cudaGetDeviceCount");
    if (n < 1)
      throw RuntimeError("no CUDA device is visible (CUDA_VISIBLE_DEVICES?)");
    if (count)
      *count = n;
  });
}

/// Destroys what `b` holds (after synchronizing its stream); the first
/// failure is thrown once everything is released.
void releaseBinding(Binding &b) {
  std::string first;
  auto note = [&](bool failed, const std::string &what) {
    if (failed && first.empty())
      first = what;
  };
  if (b.stream) {
    cudaError_t e = cudaStreamSynchronize(b.stream);
    note(e != cudaSuccess,
         std::string("cudaStreamSynchronize: ") + cudaGetErrorString(e));
    if (b.workspace) {
      e = cudaFreeAsync(b.workspace, b.stream);
      note(e != cudaSuccess,
           std::string("cudaFreeAsync: ") + cudaGetErrorString(e));
      e = cudaStreamSynchronize(b.stream);
      note(e != cudaSuccess,
           std::string("cudaStreamSynchronize: ") + cudaGetErrorString(e));
    }
  }
#ifdef PIPEOPT_RT_CUDA_HAVE_CUDNN
  if (b.dnn) {
    cudnnStatus_t s = cudnnDestroy(b.dnn);
    note(s != CUDNN_STATUS_SUCCESS,
         std::string("cudnnDestroy: ") + cudnnGetErrorString(s));
  }
#endif
  if (b.blas) {
    cublasStatus_t s = cublasDestroy(b.blas);
    note(s != CUBLAS_STATUS_SUCCESS,
         std::string("cublasDestroy: ") + cublasGetStatusString(s));
  }
  if (b.stream) {
    cudaError_t e = cudaStreamDestroy(b.stream);
    note(e != cudaSuccess,
         std::string("cudaStreamDestroy: ") + cudaGetErrorString(e));
  }
  b = Binding();
  if (!first.empty())
    throw RuntimeError(first);
}

int32_t apiBindThread(int32_t device, int32_t rank) {
  ThreadState &st = threadState();
  if (st.bound && st.binding.device == device) {
    st.binding.rank = rank;
    return 0;
  }
  std::string fn = "bind_thread (device " + std::to_string(device) + ", rank " +
                   std::to_string(rank) + ")";
  if (st.bound) {
    int32_t rc = apiCall(fn.c_str(), [&] {
      st.bound = false;
      releaseBinding(st.binding);
    });
    if (rc)
      return rc;
  }
  // A new binding starts without an error.
  st.error.clear();
  return apiCall(fn.c_str(), [&] {
    requireDriver();
    int n = 0;
    check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
    if (device < 0 || device >= n)
      throw RuntimeError("there is no CUDA device " + std::to_string(device) +
                         " (" + std::to_string(n) + " visible)");
    Binding b;
    b.device = device;
    b.rank = rank;
    try {
      check(cudaSetDevice(device), "cudaSetDevice");
      check(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking),
            "cudaStreamCreateWithFlags");
      check(cublasCreate(&b.blas), "cublasCreate");
      check(cublasSetStream(b.blas, b.stream), "cublasSetStream");
      // No TF32 or other reduced-precision tensor-core paths: results must
      // match the CPU kernels within f32 rounding.
      check(cublasSetMathMode(b.blas, CUBLAS_DEFAULT_MATH),
            "cublasSetMathMode");
#ifdef PIPEOPT_RT_CUDA_HAVE_CUDNN
      check(cudnnCreate(&b.dnn), "cudnnCreate");
      check(cudnnSetStream(b.dnn, b.stream), "cudnnSetStream");
#endif
    } catch (...) {
      try {
        releaseBinding(b);
      } catch (...) {
      }
      throw;
    }
    st.binding = b;
    st.bound = true;
  });
}

int32_t apiUnbindThread() {
  ThreadState &st = threadState();
  if (!st.bound)
    return 0;
  return apiCall("unbind_thread", [&] {
    st.bound = false;
    releaseBinding(st.binding);
  });
}

void *apiComputeStream() {
  Binding *b = currentBinding();
  return b ? static_cast<void *>(b->stream) : nullptr;
}

int32_t apiSynchronize() {
  return apiCall("synchronize", [] {
    check(cudaStreamSynchronize(requireBinding().stream),
          "cudaStreamSynchronize");
  });
}

int32_t apiAlloc(void **ptr, size_t bytes) {
  return apiCall("alloc", [&] {
    requireBinding();
    *ptr = nullptr;
    if (bytes)
      check(cudaMalloc(ptr, bytes), "cudaMalloc");
  });
}

int32_t apiFree(void *ptr) {
  return apiCall("free", [&] {
    requireBinding();
    // cudaFree synchronizes the device before it frees.
    if (ptr)
      check(cudaFree(ptr), "cudaFree");
  });
}

int32_t apiCopy(void *dst, const void *src, size_t bytes) {
  return apiCall("copy", [&] {
    cudaStream_t s = requireBinding().stream;
    if (!bytes)
      return;
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s),
          "cudaMemcpyAsync");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  });
}

int32_t apiZero(void *ptr, size_t bytes) {
  return apiCall("zero", [&] {
    cudaStream_t s = requireBinding().stream;
    if (!bytes)
      return;
    check(cudaMemsetAsync(ptr, 0, bytes, s), "cudaMemsetAsync");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  });
}

void checkCopyShape(int64_t elemBytes, int32_t rank, const int64_t *sizes,
                    const int64_t *strides) {
  if (elemBytes < 1)
    throw RuntimeError("element size " + std::to_string(elemBytes) +
                       " is not positive");
  if (rank < 0 || rank > kMaxCopyRank)
    throw RuntimeError("rank " + std::to_string(rank) +
                       " is not supported (0.." + std::to_string(kMaxCopyRank) +
                       ")");
  if (rank > 0 && (!sizes || !strides))
    throw RuntimeError("null sizes or strides");
  for (int d = 0; d < rank; ++d)
    if (sizes[d] < 0)
      throw RuntimeError("size " + std::to_string(sizes[d]) + " of dimension " +
                         std::to_string(d) + " is negative");
}

int32_t stridedCopyCall(const char *fn, void *dst, const void *src,
                        int64_t elemBytes, int32_t rank, const int64_t *sizes,
                        const int64_t *strides, bool scatter) {
  return apiCall(fn, [&] {
    cudaStream_t s = requireBinding().stream;
    checkCopyShape(elemBytes, rank, sizes, strides);
    check(stridedCopy(dst, src, elemBytes, rank, sizes, strides, scatter, s),
          scatter ? "scatter kernel launch" : "gather kernel launch");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  });
}

int32_t apiGather(void *dst, const void *src, int64_t elemBytes, int32_t rank,
                  const int64_t *sizes, const int64_t *strides) {
  return stridedCopyCall("gather", dst, src, elemBytes, rank, sizes, strides,
                         false);
}

int32_t apiScatter(void *dst, const void *src, int64_t elemBytes, int32_t rank,
                   const int64_t *sizes, const int64_t *strides) {
  return stridedCopyCall("scatter", dst, src, elemBytes, rank, sizes, strides,
                         true);
}

bool isFloatCode(int32_t dtype) {
  return dtype == PIPEOPT_RT_DTYPE_F32 || dtype == PIPEOPT_RT_DTYPE_F64 ||
         dtype == PIPEOPT_RT_DTYPE_F16 || dtype == PIPEOPT_RT_DTYPE_BF16;
}

std::string dtypeLabel(int32_t dtype) {
  return isValidDType(dtype) ? dtypeName(DType(dtype))
                             : "code " + std::to_string(dtype);
}

int32_t apiAccumulate(double *sum, const void *grad, int32_t dtype, int64_t n) {
  return apiCall("accumulate", [&] {
    cudaStream_t s = requireBinding().stream;
    if (!isFloatCode(dtype))
      throw RuntimeError("a gradient sum needs a floating-point dtype, not " +
                         dtypeLabel(dtype));
    if (n < 0)
      throw RuntimeError("negative element count " + std::to_string(n));
    check(accumulateKernel(sum, grad, dtype, n, s), "accumulate kernel launch");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  });
}

int32_t apiOptimizerStep(const pipeopt_rt_cuda_optimizer *config, void *weights,
                         int32_t dtype, const double *gradSum, double gradScale,
                         double *first, double *second, int64_t step,
                         int64_t n) {
  return apiCall("optimizer_step", [&] {
    cudaStream_t s = requireBinding().stream;
    if (!config)
      throw RuntimeError("null optimizer configuration");
    if (!isFloatCode(dtype))
      throw RuntimeError("a parameter needs a floating-point dtype, not " +
                         dtypeLabel(dtype));
    if (n < 0)
      throw RuntimeError("negative element count " + std::to_string(n));
    if (step < 1)
      throw RuntimeError("step " + std::to_string(step) +
                         " is not positive (the count after this step)");
    const pipeopt_rt_cuda_optimizer &c = *config;
    OptimizerArgs a;
    a.kind = c.kind;
    switch (c.kind) {
    case PIPEOPT_RT_CUDA_OPT_NONE:
      return;
    case PIPEOPT_RT_CUDA_OPT_SGD:
      break;
    case PIPEOPT_RT_CUDA_OPT_MOMENTUM:
      if (!first && n)
        throw RuntimeError("momentum needs its buffer (first is null)");
      break;
    case PIPEOPT_RT_CUDA_OPT_ADAMW:
      if ((!first || !second) && n)
        throw RuntimeError("adamw needs both moments (first or second is "
                           "null)");
      break;
    default:
      throw RuntimeError("unknown optimizer kind " + std::to_string(c.kind));
    }
    a.weights = weights;
    a.dtype = dtype;
    a.gradSum = gradSum;
    a.gradScale = gradScale;
    a.first = first;
    a.second = second;
    a.firstStep = step == 1;
    a.lr = c.lr;
    a.momentum = c.momentum;
    a.beta1 = c.beta1;
    a.beta2 = c.beta2;
    a.eps = c.eps;
    a.weightDecay = c.weight_decay;
    // The element-independent scalars exactly as Optimizer.cpp computes them
    // (on the host, with the host's pow and sqrt).
    double t = double(step);
    a.stepSize = c.lr / (1 - std::pow(c.beta1, t));
    a.bc2Sqrt = std::sqrt(1 - std::pow(c.beta2, t));
    a.decay = 1 - c.lr * c.weight_decay;
    a.n = n;
    check(optimizerKernel(a, s), "optimizer kernel launch");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  });
}

const pipeopt_rt_cuda_api kApi = {
    PIPEOPT_RT_CUDA_API_VERSION,
    apiLastError,
    apiDeviceCount,
    apiBindThread,
    apiUnbindThread,
    apiComputeStream,
    apiSynchronize,
    apiAlloc,
    apiFree,
    apiCopy,
    apiZero,
    apiGather,
    apiScatter,
    apiAccumulate,
    apiOptimizerStep,
};

//===----------------------------------------------------------------------===//
// mgpu* helpers
//===----------------------------------------------------------------------===//

/// A kernel image recorded by mgpuModuleLoad / mgpuModuleLoadJIT and loaded
/// at its first mgpuModuleGetFunction.
struct GpuModule {
  const void *image = nullptr;
  bool jit = false; ///< PTX text (mgpuModuleLoadJIT)
  int optLevel = 0;
  std::mutex mutex;
  bool tried = false;
  CUlibrary library = nullptr;
  std::string error; ///< why loading failed
  std::unordered_map<std::string, CUkernel> kernels;
};

/// Work of an mgpu* function: skipped (returning `failValue`) once the
/// thread has an error, which is already recorded; errors recorded as
/// "<fn>: ...".
template <typename R, typename F>
R mgpuCall(const char *fn, R failValue, F &&f) {
  if (threadFailed())
    return failValue;
  return guarded(fn, failValue, std::forward<F>(f));
}

template <typename F>
void mgpuVoid(const char *fn, F &&f) {
  mgpuCall(fn, 0, [&] {
    f();
    return 0;
  });
}

cudaStream_t streamOrCompute(void *stream) {
  return stream ? static_cast<cudaStream_t>(stream) : requireBinding().stream;
}

unsigned launchDim(int64_t v, const char *what) {
  if (v < 1 || v > int64_t(UINT32_MAX))
    throw RuntimeError(std::string(what) + " " + std::to_string(v) +
                       " is out of range");
  return unsigned(v);
}

/// Allocations of mgpuMemAlloc with isHostShared (managed memory): freed
/// with cudaFree, not cudaFreeAsync.
std::mutex gManagedMutex;
std::unordered_set<void *> gManaged;

/// Bytes spanned by a memref descriptor's view (0 when it is empty).
size_t memrefSpan(int64_t rank, const int64_t *sizes, const int64_t *strides,
                  int64_t elemBytes) {
  int64_t last = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (sizes[d] == 0)
      return 0;
    last += (sizes[d] - 1) * strides[d];
  }
  return size_t(last + 1) * size_t(elemBytes);
}

/// A ranked memref descriptor's head; int64_t sizes[rank] and
/// strides[rank] follow it.
struct MemRefHead {
  void *allocated;
  char *aligned;
  int64_t offset;
};

const int64_t *memrefDims(const MemRefHead *head) {
  return reinterpret_cast<const int64_t *>(head + 1);
}

} // namespace

extern "C" {

PIPEOPT_RT_CUDA_EXPORT const pipeopt_rt_cuda_api *
pipeopt_rt_cuda_get_api(int32_t version) {
  return version == PIPEOPT_RT_CUDA_API_VERSION ? &kApi : nullptr;
}

//===----------------------------------------------------------------------===//
// mgpu*: the host ABI of MLIR's GPU lowering
//===----------------------------------------------------------------------===//

PIPEOPT_RT_CUDA_EXPORT void *mgpuModuleLoad(void *data, size_t /*size*/) {
  // Runs at dlopen time (a global constructor): records only.
  auto *m = new (std::nothrow) GpuModule;
  if (m)
    m->image = data;
  return m;
}

PIPEOPT_RT_CUDA_EXPORT void *mgpuModuleLoadJIT(void *data, int optLevel) {
  auto *m = static_cast<GpuModule *>(mgpuModuleLoad(data, 0));
  if (m) {
    m->jit = true;
    m->optLevel = optLevel;
  }
  return m;
}

PIPEOPT_RT_CUDA_EXPORT void mgpuModuleUnload(void *module) {
  // Runs in a global destructor (dlclose, exit): errors are ignored.
  auto *m = static_cast<GpuModule *>(module);
  if (!m)
    return;
  if (m->library && driver().libraryUnload)
    driver().libraryUnload(m->library);
  delete m;
}

PIPEOPT_RT_CUDA_EXPORT void *mgpuModuleGetFunction(void *module,
                                                   const char *name) {
  return mgpuCall("mgpuModuleGetFunction", static_cast<void *>(nullptr), [&] {
    auto *m = static_cast<GpuModule *>(module);
    if (!m)
      throw RuntimeError("null module (mgpuModuleLoad failed)");
    requireDriver();
    const Driver &d = driver();
    std::lock_guard<std::mutex> lock(m->mutex);
    if (!m->tried) {
      m->tried = true;
      CUjit_option opts[1] = {CU_JIT_OPTIMIZATION_LEVEL};
      void *values[1] = {
          reinterpret_cast<void *>(static_cast<uintptr_t>(m->optLevel))};
      try {
        checkDriver(d.libraryLoadData(&m->library, m->image,
                                      m->jit ? opts : nullptr,
                                      m->jit ? values : nullptr,
                                      m->jit ? 1u : 0u, nullptr, nullptr, 0),
                    "cuLibraryLoadData");
      } catch (const std::exception &e) {
        m->error = e.what();
        m->library = nullptr;
      }
    }
    if (!m->library)
      throw RuntimeError(m->error);
    std::string key = name ? name : "";
    auto it = m->kernels.find(key);
    if (it != m->kernels.end())
      return static_cast<void *>(it->second);
    CUkernel k = nullptr;
    checkDriver(d.libraryGetKernel(&k, m->library, key.c_str()),
                ("cuLibraryGetKernel '" + key + "'").c_str());
    m->kernels.emplace(key, k);
    return static_cast<void *>(k);
  });
}

PIPEOPT_RT_CUDA_EXPORT void
mgpuLaunchKernel(void *function, int64_t gridX, int64_t gridY, int64_t gridZ,
                 int64_t blockX, int64_t blockY, int64_t blockZ, int32_t smem,
                 void *stream, void **params, void **extra,
                 int64_t /*paramsCount*/) {
  mgpuVoid("mgpuLaunchKernel", [&] {
    cudaStream_t s = streamOrCompute(stream);
    if (!function)
      throw RuntimeError("null kernel (mgpuModuleGetFunction failed)");
    checkDriver(driver().launchKernel(
                    static_cast<CUfunction>(function),
                    launchDim(gridX, "grid x"), launchDim(gridY, "grid y"),
                    launchDim(gridZ, "grid z"), launchDim(blockX, "block x"),
                    launchDim(blockY, "block y"), launchDim(blockZ, "block z"),
                    unsigned(smem), reinterpret_cast<CUstream>(s), params,
                    extra),
                "cuLaunchKernel");
  });
}

PIPEOPT_RT_CUDA_EXPORT void mgpuLaunchClusterKernel(
    void *function, int64_t clusterX, int64_t clusterY, int64_t clusterZ,
    int64_t gridX, int64_t gridY, int64_t gridZ, int64_t blockX, int64_t blockY,
    int64_t blockZ, int32_t smem, void *stream, void **params, void **extra) {
  mgpuVoid("mgpuLaunchClusterKernel", [&] {
    cudaStream_t s = streamOrCompute(stream);
    if (!function)
      throw RuntimeError("null kernel (mgpuModuleGetFunction failed)");
    CUlaunchAttribute attr;
    std::memset(&attr, 0, sizeof(attr));
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = launchDim(clusterX, "cluster x");
    attr.value.clusterDim.y = launchDim(clusterY, "cluster y");
    attr.value.clusterDim.z = launchDim(clusterZ, "cluster z");
    CUlaunchConfig config;
    std::memset(&config, 0, sizeof(config));
    config.gridDimX = launchDim(gridX, "grid x");
    config.gridDimY = launchDim(gridY, "grid y");
    config.gridDimZ = launchDim(gridZ, "grid z");
    config.blockDimX = launchDim(blockX, "block x");
    config.blockDimY = launchDim(blockY, "block y");
    config.blockDimZ = launchDim(blockZ, "block z");
    config.sharedMemBytes = unsigned(smem);
    config.hStream = reinterpret_cast<CUstream>(s);
    config.attrs = &attr;
    config.numAttrs = 1;
    checkDriver(driver().launchKernelEx(
                    &config, static_cast<CUfunction>(function), params, extra),
                "cuLaunchKernelEx");
  });
}

PIPEOPT_RT_CUDA_EXPORT void *mgpuStreamCreate() {
  // The calling thread's compute stream: all generated device work of a
  // rank is ordered on it, after and before the runtime's own work.
  return mgpuCall("mgpuStreamCreate", static_cast<void *>(nullptr),
                  [] { return static_cast<void *>(requireBinding().stream); });
}

PIPEOPT_RT_CUDA_EXPORT void mgpuStreamDestroy(void *stream) {
  mgpuVoid("mgpuStreamDestroy", [&] {
    Binding *b = currentBinding();
    if (stream && (!b || stream != static_cast<void *>(b->stream)))
      check(cudaStreamDestroy(static_cast<cudaStream_t>(stream)),
            "cudaStreamDestroy");
    // The compute stream itself lives until unbind_thread.
  });
}

PIPEOPT_RT_CUDA_EXPORT void mgpuStreamSynchronize(void *stream) {
  mgpuVoid("mgpuStreamSynchronize", [&] {
    check(cudaStreamSynchronize(streamOrCompute(stream)),
          "cudaStreamSynchronize");
  });
}

PIPEOPT_RT_CUDA_EXPORT void mgpuStreamWaitEvent(void *stream, void *event) {
  mgpuVoid("mgpuStreamWaitEvent", [&] {
    check(cudaStreamWaitEvent(streamOrCompute(stream),
                              static_cast<cudaEvent_t>(event), 0),
          "cudaStreamWaitEvent");
  });
}

PIPEOPT_RT_CUDA_EXPORT void *mgpuEventCreate() {
  return mgpuCall("mgpuEventCreate", static_cast<void *>(nullptr), [] {
    requireBinding();
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
          "cudaEventCreateWithFlags");
    return static_cast<void *>(e);
  });
}

PIPEOPT_RT_CUDA_EXPORT void mgpuEventDestroy(void *event) {
  mgpuVoid("mgpuEventDestroy", [&] {
    if (event)
      check(cudaEventDestroy(static_cast<cudaEvent_t>(event)),
            "cudaEventDestroy");
  });
}

PIPEOPT_RT_CUDA_EXPORT void mgpuEventSynchronize(void *event) {
  mgpuVoid("mgpuEventSynchronize", [&] {
    check(cudaEventSynchronize(static_cast<cudaEvent_t>(event)),
          "cudaEventSynchronize");
  });
}

PIPEOPT_RT_CUDA_EXPORT void mgpuEventRecord(void *event, void *stream) {
  mgpuVoid("mgpuEventRecord", [&] {
    check(cudaEventRecord(static_cast<cudaEvent_t>(event),
                          streamOrCompute(stream)),
          "cudaEventRecord");
  });
}

PIPEOPT_RT_CUDA_EXPORT void *mgpuMemAlloc(uint64_t bytes, void *stream,
                                          uint8_t isHostShared) {
  return mgpuCall("mgpuMemAlloc", static_cast<void *>(nullptr), [&] {
    cudaStream_t s = streamOrCompute(stream);
    void *p = nullptr;
    if (!bytes)
      return p;
    if (isHostShared) {
      check(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal),
            "cudaMallocManaged");
      std::lock_guard<std::mutex> lock(gManagedMutex);
      gManaged.insert(p);
      return p;
    }
    // Stream-ordered: the allocation is usable by work enqueued on `s`
    // after this call (all of the thread's generated work).
    check(cudaMallocAsync(&p, bytes, s), "cudaMallocAsync");
    return p;
  });
}

PIPEOPT_RT_CUDA_EXPORT void mgpuMemFree(void *ptr, void *stream) {
  if (!ptr)
    return;
  // Frees even after an error, so that memory is not leaked.
  guarded("mgpuMemFree", 0, [&] {
    cudaStream_t s = streamOrCompute(stream);
    bool managed;
    {
      std::lock_guard<std::mutex> lock(gManagedMutex);
      managed = gManaged.erase(ptr) != 0;
    }
    if (managed) {
      check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      check(cudaFree(ptr), "cudaFree");
    } else {
      check(cudaFreeAsync(ptr, s), "cudaFreeAsync");
    }
    return 0;
  });
}

PIPEOPT_RT_CUDA_EXPORT void mgpuMemcpy(void *dst, void *src, size_t bytes,
                                       void *stream) {
  mgpuVoid("mgpuMemcpy", [&] {
    if (bytes)
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
                            streamOrCompute(stream)),
            "cudaMemcpyAsync");
  });
}

PIPEOPT_RT_CUDA_EXPORT void mgpuMemset32(void *dst, unsigned int value,
                                         size_t count, void *stream) {
  mgpuVoid("mgpuMemset32", [&] {
    cudaStream_t s = streamOrCompute(stream);
    requireDriver();
    if (count)
      checkDriver(driver().memsetD32Async(reinterpret_cast<CUdeviceptr>(dst),
                                          value, count,
                                          reinterpret_cast<CUstream>(s)),
                  "cuMemsetD32Async");
  });
}

PIPEOPT_RT_CUDA_EXPORT void mgpuMemset16(void *dst, unsigned short value,
                                         size_t count, void *stream) {
  mgpuVoid("mgpuMemset16", [&] {
    cudaStream_t s = streamOrCompute(stream);
    requireDriver();
    if (count)
      checkDriver(driver().memsetD16Async(reinterpret_cast<CUdeviceptr>(dst),
                                          value, count,
                                          reinterpret_cast<CUstream>(s)),
                  "cuMemsetD16Async");
  });
}

PIPEOPT_RT_CUDA_EXPORT void mgpuMemHostRegister(void *ptr, uint64_t bytes) {
  mgpuVoid("mgpuMemHostRegister", [&] {
    requireBinding();
    if (!ptr || !bytes)
      return;
    cudaError_t e = cudaHostRegister(ptr, bytes, cudaHostRegisterDefault);
    if (e == cudaErrorHostMemoryAlreadyRegistered) {
      (void)cudaGetLastError(); // registered before: fine
      return;
    }
    check(e, "cudaHostRegister");
  });
}

PIPEOPT_RT_CUDA_EXPORT void mgpuMemHostUnregister(void *ptr) {
  mgpuVoid("mgpuMemHostUnregister", [&] {
    requireBinding();
    if (!ptr)
      return;
    cudaError_t e = cudaHostUnregister(ptr);
    if (e == cudaErrorHostMemoryNotRegistered) {
      (void)cudaGetLastError();
      return;
    }
    check(e, "cudaHostUnregister");
  });
}

PIPEOPT_RT_CUDA_EXPORT void
mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor, int64_t elemBytes) {
  if (!descriptor || rank < 0)
    return;
  auto *d = static_cast<MemRefHead *>(descriptor);
  const int64_t *dims = memrefDims(d);
  size_t bytes = memrefSpan(rank, dims, dims + rank, elemBytes);
  mgpuMemHostRegister(d->aligned + d->offset * elemBytes, bytes);
}

PIPEOPT_RT_CUDA_EXPORT void
mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor, int64_t elemBytes) {
  if (!descriptor || rank < 0)
    return;
  auto *d = static_cast<MemRefHead *>(descriptor);
  const int64_t *dims = memrefDims(d);
  if (memrefSpan(rank, dims, dims + rank, elemBytes))
    mgpuMemHostUnregister(d->aligned + d->offset * elemBytes);
}

PIPEOPT_RT_CUDA_EXPORT void mgpuSetDefaultDevice(int32_t device) {
  mgpuVoid("mgpuSetDefaultDevice", [&] {
    Binding &b = requireBinding();
    if (device != b.device)
      throw RuntimeError("device " + std::to_string(device) +
                         " requested, but this thread is bound to device " +
                         std::to_string(b.device) +
                         " (the runtime chooses a rank's device)");
  });
}

} // extern "C"
