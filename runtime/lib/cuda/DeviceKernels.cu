//===- DeviceKernels.cu - Copy, gradient-sum and optimizer kernels --------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// The device kernels of libpipeopt_rt_cuda.so (CudaApi.h: gather, scatter,
// accumulate, optimizer_step; the library kernels' packing). Compiled by
// nvcc for sm_90 plus compute_90 PTX, with --fmad=false: the optimizer must
// round like Optimizer.cpp on the host (separate multiply and add, IEEE
// double division and sqrt), so no multiply-add is contracted into an FMA.
//
//===----------------------------------------------------------------------===//

#include "CudaState.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

namespace pipeopt {
namespace rt {
namespace cuda {
namespace {

constexpr int kThreads = 256;

/// Blocks for n elements with grid-stride loops (at most 65535 blocks).
unsigned blocksFor(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(b, 65535)));
}

struct CopyShape {
  int rank;
  int64_t sizes[kMaxCopyRank];
  int64_t strides[kMaxCopyRank];
};

/// Offset (elements) of the e-th row-major element of the strided view.
__device__ int64_t viewOffset(const CopyShape &s, int64_t e) {
  int64_t off = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    int64_t size = s.sizes[d];
    int64_t i = e % size;
    e /= size;
    off += i * s.strides[d];
  }
  return off;
}

template <typename E>
__global__ void copyKernel(E *dst, const E *src, CopyShape s, int64_t n,
                           bool scatter) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t off = viewOffset(s, e);
    if (scatter)
      dst[off] = src[e];
    else
      dst[e] = src[off];
  }
}

/// Elements of any size (or misaligned ones), byte by byte.
__global__ void copyBytesKernel(uint8_t *dst, const uint8_t *src, CopyShape s,
                                int64_t n, int64_t elemBytes, bool scatter) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t off = viewOffset(s, e) * elemBytes;
    int64_t dense = e * elemBytes;
    for (int64_t b = 0; b < elemBytes; ++b) {
      if (scatter)
        dst[off + b] = src[dense + b];
      else
        dst[dense + b] = src[off + b];
    }
  }
}

template <typename E>
cudaError_t launchCopy(void *dst, const void *src, const CopyShape &s,
                       int64_t n, bool scatter, cudaStream_t stream) {
  copyKernel<E><<<blocksFor(n), kThreads, 0, stream>>>(
      static_cast<E *>(dst), static_cast<const E *>(src), s, n, scatter);
  return cudaGetLastError();
}

__device__ double loadFloat(const void *p, int dtype, int64_t i) {
  switch (dtype) {
  case PIPEOPT_RT_DTYPE_F32:
    return double(static_cast<const float *>(p)[i]);
  case PIPEOPT_RT_DTYPE_F64:
    return static_cast<const double *>(p)[i];
  case PIPEOPT_RT_DTYPE_F16:
    return double(__half2float(
        __ushort_as_half(static_cast<const unsigned short *>(p)[i])));
  default: // PIPEOPT_RT_DTYPE_BF16 (checked on the host)
    return double(__bfloat162float(
        __ushort_as_bfloat16(static_cast<const unsigned short *>(p)[i])));
  }
}

/// Rounds once to the dtype, to nearest even.
__device__ void storeFloat(void *p, int dtype, int64_t i, double v) {
  switch (dtype) {
  case PIPEOPT_RT_DTYPE_F32:
    static_cast<float *>(p)[i] = __double2float_rn(v);
    return;
  case PIPEOPT_RT_DTYPE_F64:
    static_cast<double *>(p)[i] = v;
    return;
  case PIPEOPT_RT_DTYPE_F16:
    static_cast<unsigned short *>(p)[i] = __half_as_ushort(__double2half(v));
    return;
  default:
    static_cast<unsigned short *>(p)[i] =
        __bfloat16_as_ushort(__double2bfloat16(v));
  }
}

__global__ void accumulateDevice(double *sum, const void *grad, int dtype,
                                 int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    sum[i] += loadFloat(grad, dtype, i);
}

/// torch.lerp as Optimizer.cpp computes it.
__device__ double lerp(double start, double end, double weight) {
  return fabs(weight) < 0.5 ? start + weight * (end - start)
                            : end - (end - start) * (1 - weight);
}

__global__ void optimizerDevice(OptimizerArgs a) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < a.n;
       i += int64_t(gridDim.x) * blockDim.x) {
    double w = loadFloat(a.weights, a.dtype, i);
    double g = a.gradSum[i] * a.gradScale;
    switch (a.kind) {
    case 1: { // sgd
      double gi = a.weightDecay != 0 ? g + a.weightDecay * w : g;
      w = w + -a.lr * gi;
      break;
    }
    case 2: { // momentum
      double gi = a.weightDecay != 0 ? g + a.weightDecay * w : g;
      double b = a.firstStep ? gi : a.first[i] * a.momentum + gi;
      a.first[i] = b;
      w = w + -a.lr * b;
      break;
    }
    default: { // adamw
      if (a.weightDecay != 0)
        w = w * a.decay;
      double m = lerp(a.first[i], g, 1 - a.beta1);
      double v = a.second[i] * a.beta2 + (1 - a.beta2) * g * g;
      a.first[i] = m;
      a.second[i] = v;
      double denom = sqrt(v) / a.bc2Sqrt + a.eps;
      w = w + -a.stepSize * (m / denom);
    }
    }
    storeFloat(a.weights, a.dtype, i, w);
  }
}

} // namespace

cudaError_t stridedCopy(void *dst, const void *src, int64_t elemBytes,
                        int rank, const int64_t *sizes, const int64_t *strides,
                        bool scatter, cudaStream_t stream) {
  CopyShape s{};
  s.rank = rank;
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) {
    s.sizes[d] = sizes[d];
    s.strides[d] = strides[d];
    n *= sizes[d];
  }
  if (n == 0)
    return cudaSuccess;
  auto bits = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src);
  bool aligned = bits % uintptr_t(elemBytes) == 0;
  if (aligned) {
    switch (elemBytes) {
    case 1:
      return launchCopy<uint8_t>(dst, src, s, n, scatter, stream);
    case 2:
      return launchCopy<uint16_t>(dst, src, s, n, scatter, stream);
    case 4:
      return launchCopy<uint32_t>(dst, src, s, n, scatter, stream);
    case 8:
      return launchCopy<uint64_t>(dst, src, s, n, scatter, stream);
    default:
      break;
    }
  }
  copyBytesKernel<<<blocksFor(n), kThreads, 0, stream>>>(
      static_cast<uint8_t *>(dst), static_cast<const uint8_t *>(src), s, n,
      elemBytes, scatter);
  return cudaGetLastError();
}

cudaError_t accumulateKernel(double *sum, const void *grad, int dtype,
                             int64_t n, cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  accumulateDevice<<<blocksFor(n), kThreads, 0, stream>>>(sum, grad, dtype, n);
  return cudaGetLastError();
}

cudaError_t optimizerKernel(const OptimizerArgs &args, cudaStream_t stream) {
  if (args.n == 0)
    return cudaSuccess;
  optimizerDevice<<<blocksFor(args.n), kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

} // namespace cuda
} // namespace rt
} // namespace pipeopt
