//===- LibraryKernels.cpp - pipeopt_rt_gpu_matmul / conv2d ----------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// The library kernels of --target=cuda builds (RuntimeFunctions.def,
// PIPEOPT_RT_GPU_FLOAT_FN): the operands and semantics of the CPU kernels
// (pipeopt_runtime.h, "KERNELS"; the same decoding, KernelShapes.h) on
// device memory, enqueued on the calling thread's compute stream, not
// synchronized.
//
//  - matmul: one cuBLAS ?gemmStridedBatched_64 call with beta = 1. cuBLAS is
//    column-major; a row-major C = A x B is the column-major C^T = B^T x A^T,
//    so the operands are passed swapped. Operands with a unit stride in one
//    of their last two dimensions are read in place (as op N or op T);
//    others, and an output that is not row-major, are packed into
//    stream-ordered scratch with the gather kernel first (and the output
//    scattered back).
//  - conv2d: cuDNN cudnnConvolutionForward with beta = 1, cross-correlation,
//    no padding, in NCHW / KCRS (the formats every cuDNN configuration
//    supports, f64 included). NHWC operands and HWCF / FHWC filters, and any
//    non-contiguous operand, are brought to that form with the gather kernel
//    (the permutation is a stride permutation); an output that needs it is
//    gathered, accumulated into, and scattered back. cuDNN runs with
//    CUDNN_FMA_MATH: no TF32 tensor-core paths, so f32 results stay within
//    f32 rounding of the CPU kernels. The workspace is the binding's, grown
//    on demand.
//
// Errors are recorded as the thread's sticky error (CudaApi.h), named
// "pipeopt_rt_gpu_matmul (f32): ...": shape errors with the CPU kernels'
// messages, CUDA ones with the failing call. After an error the kernels do
// nothing.
//
//===----------------------------------------------------------------------===//

#include "CudaState.h"

#include "KernelShapes.h"
#include "pipeopt/runtime/pipeopt_runtime.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <type_traits>
#include <vector>

namespace pipeopt {
namespace rt {
namespace cuda {
namespace {

template <typename T>
constexpr DType dtypeOf() {
  return std::is_same_v<T, float> ? DType::F32 : DType::F64;
}

/// A strided view in elements of T, of any rank up to kMaxCopyRank.
struct View {
  uint8_t *base = nullptr;
  std::vector<int64_t> sizes, strides;

  int64_t elements() const {
    int64_t n = 1;
    for (int64_t s : sizes)
      n *= s;
    return n;
  }
  /// Row-major contiguous (size-1 dimensions ignored).
  bool dense() const {
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
};

/// A view used by a library call in dense row-major form: in place when it
/// is dense, else a gathered scratch copy (written back by writeBack).
class DenseOperand {
public:
  DenseOperand(const View &v, size_t elemBytes, bool copyIn,
               cudaStream_t stream)
      : view(v), elemBytes(elemBytes), stream(stream) {
    if (v.dense()) {
      data = v.base;
      return;
    }
    scratch.emplace(size_t(v.elements()) * elemBytes, stream);
    data = scratch->get();
    if (copyIn)
      check(stridedCopy(data, v.base, int64_t(elemBytes), int(v.sizes.size()),
                        v.sizes.data(), v.strides.data(), false, stream),
            "gather kernel launch");
  }
  void writeBack() {
    if (scratch)
      check(stridedCopy(view.base, data, int64_t(elemBytes),
                        int(view.sizes.size()), view.sizes.data(),
                        view.strides.data(), true, stream),
            "scatter kernel launch");
  }
  void *data = nullptr;

private:
  View view;
  size_t elemBytes;
  cudaStream_t stream;
  std::optional<StreamScratch> scratch;
};

View matrixView(const StridedMatrix &m) {
  return View{m.base, {m.batch, m.rows, m.cols}, {m.sb, m.sr, m.sc}};
}

template <typename T>
void gpuMatmul(pipeopt_rt_unranked_memref *lhsRef,
               pipeopt_rt_unranked_memref *rhsRef,
               pipeopt_rt_unranked_memref *outRef, int64_t transLhs,
               int64_t transRhs) {
  constexpr DType dt = dtypeOf<T>();
  MemRefView lhs = decodeMemRef(lhsRef, dt), rhs = decodeMemRef(rhsRef, dt),
             out = decodeMemRef(outRef, dt);
  MatmulShape shape = planMatmul(lhs, rhs, out, transLhs, transRhs);
  Binding &bind = requireBinding();
  cudaStream_t stream = bind.stream;
  const StridedMatrix &a = shape.a, &b = shape.b, &c = shape.c;
  int64_t m = c.rows, n = c.cols, k = a.cols, batch = c.batch;
  if (m == 0 || n == 0 || k == 0 || batch == 0)
    return;

  // A cuBLAS operand: the matrix (with op) in place, or a dense copy.
  struct Operand {
    const void *data;
    int64_t ld;
    long long batchStride;
    bool trans;
  };
  std::optional<DenseOperand> packedA, packedB, packedC;
  auto operand = [&](const StridedMatrix &x,
                     std::optional<DenseOperand> &packed) {
    BlasLayout layout;
    if (asBlasLayout(x.rows, x.cols, x.sr, x.sc, layout))
      return Operand{x.base, layout.ld, (long long)x.sb, layout.trans};
    packed.emplace(matrixView(x), sizeof(T), /*copyIn=*/true, stream);
    return Operand{packed->data, std::max<int64_t>(x.cols, 1),
                   (long long)(x.rows * x.cols), false};
  };
  Operand oa = operand(a, packedA), ob = operand(b, packedB);
  BlasLayout cl;
  T *cData;
  int64_t ldc;
  long long strideC;
  if (asBlasLayout(c.rows, c.cols, c.sr, c.sc, cl) && !cl.trans) {
    cData = reinterpret_cast<T *>(c.base);
    ldc = cl.ld;
    strideC = c.sb;
  } else {
    packedC.emplace(matrixView(c), sizeof(T), /*copyIn=*/true, stream);
    cData = static_cast<T *>(packedC->data);
    ldc = std::max<int64_t>(c.cols, 1);
    strideC = (long long)(c.rows * c.cols);
  }
  // Row-major C (m x n) += A (m x k) B (k x n) is column-major
  // C^T (n x m) += B^T (n x k) A^T (k x m): a row-major operand read as
  // column-major is its transpose already, so op N reads it in place.
  cublasOperation_t opA = oa.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = ob.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  const T one = 1;
  if constexpr (std::is_same_v<T, float>)
    check(cublasSgemmStridedBatched_64(
              bind.blas, opB, opA, n, m, k, &one,
              static_cast<const T *>(ob.data), ob.ld, ob.batchStride,
              static_cast<const T *>(oa.data), oa.ld, oa.batchStride, &one,
              cData, ldc, strideC, batch),
          "cublasSgemmStridedBatched_64");
  else
    check(cublasDgemmStridedBatched_64(
              bind.blas, opB, opA, n, m, k, &one,
              static_cast<const T *>(ob.data), ob.ld, ob.batchStride,
              static_cast<const T *>(oa.data), oa.ld, oa.batchStride, &one,
              cData, ldc, strideC, batch),
          "cublasDgemmStridedBatched_64");
  if (packedC)
    packedC->writeBack();
}

#ifdef PIPEOPT_RT_CUDA_HAVE_CUDNN

/// RAII for one cuDNN descriptor type.
template <typename D, cudnnStatus_t (*Create)(D *), cudnnStatus_t (*Destroy)(D)>
struct Descriptor {
  D d = nullptr;
  explicit Descriptor(const char *what) { check(Create(&d), what); }
  ~Descriptor() {
    if (d)
      Destroy(d);
  }
  Descriptor(const Descriptor &) = delete;
  Descriptor &operator=(const Descriptor &) = delete;
};
using TensorDesc =
    Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
               cudnnDestroyTensorDescriptor>;
using FilterDesc =
    Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
               cudnnDestroyFilterDescriptor>;
using ConvDesc =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
               cudnnDestroyConvolutionDescriptor>;

int toInt(int64_t v, const char *what) {
  if (v < 0 || v > INT32_MAX)
    throw RuntimeError(std::string(what) + " " + std::to_string(v) +
                       " does not fit cuDNN's int");
  return int(v);
}

/// Grows the binding's cuDNN workspace to at least `bytes`.
void *workspace(Binding &b, size_t bytes) {
  if (bytes <= b.workspaceBytes)
    return b.workspace;
  if (b.workspace) {
    check(cudaFreeAsync(b.workspace, b.stream), "cudaFreeAsync");
    b.workspace = nullptr;
    b.workspaceBytes = 0;
  }
  check(cudaMallocAsync(&b.workspace, bytes, b.stream), "cudaMallocAsync");
  b.workspaceBytes = bytes;
  return b.workspace;
}

template <typename T>
void gpuConv2d(pipeopt_rt_unranked_memref *inRef,
               pipeopt_rt_unranked_memref *filterRef,
               pipeopt_rt_unranked_memref *outRef, int64_t layout,
               int64_t strideH, int64_t strideW, int64_t dilationH,
               int64_t dilationW) {
  constexpr DType dt = dtypeOf<T>();
  MemRefView in = decodeMemRef(inRef, dt), filter = decodeMemRef(filterRef, dt),
             out = decodeMemRef(outRef, dt);
  Conv2dShape s = planConv2d(in, filter, out, layout, strideH, strideW,
                             dilationH, dilationW);
  Binding &bind = requireBinding();
  cudaStream_t stream = bind.stream;
  if (s.n == 0 || s.f == 0 || s.oh == 0 || s.ow == 0 || s.c == 0 || s.kh == 0 ||
      s.kw == 0)
    return; // nothing to add
  // The input rows and columns the output window reads: cuDNN derives the
  // output size from the input size, the CPU kernel allows a smaller output.
  int64_t h = (s.oh - 1) * s.strideH + (s.kh - 1) * s.dilationH + 1;
  int64_t w = (s.ow - 1) * s.strideW + (s.kw - 1) * s.dilationW + 1;
  auto st = [](const MemRefView &v, int d) { return v.strides[d]; };
  // NCHW views of input and output, KCRS of the filter (a permutation of
  // the sizes and strides; the input cropped to [h, w]).
  View x, y, k;
  x.base = in.base;
  y.base = out.base;
  k.base = filter.base;
  switch (layout) {
  case PIPEOPT_RT_CONV_NCHW_FCHW:
    x.sizes = {s.n, s.c, h, w};
    x.strides = {st(in, 0), st(in, 1), st(in, 2), st(in, 3)};
    y.sizes = {s.n, s.f, s.oh, s.ow};
    y.strides = {st(out, 0), st(out, 1), st(out, 2), st(out, 3)};
    k.sizes = {s.f, s.c, s.kh, s.kw};
    k.strides = {st(filter, 0), st(filter, 1), st(filter, 2), st(filter, 3)};
    break;
  default: // NHWC input and output
    x.sizes = {s.n, s.c, h, w};
    x.strides = {st(in, 0), st(in, 3), st(in, 1), st(in, 2)};
    y.sizes = {s.n, s.f, s.oh, s.ow};
    y.strides = {st(out, 0), st(out, 3), st(out, 1), st(out, 2)};
    k.sizes = {s.f, s.c, s.kh, s.kw};
    if (layout == PIPEOPT_RT_CONV_NHWC_HWCF) // [KH, KW, C, F]
      k.strides = {st(filter, 3), st(filter, 2), st(filter, 0), st(filter, 1)};
    else if (layout == PIPEOPT_RT_CONV_NHWC_FCHW) // [F, C, KH, KW]
      k.strides = {st(filter, 0), st(filter, 1), st(filter, 2), st(filter, 3)};
    else // FHWC: [F, KH, KW, C]
      k.strides = {st(filter, 0), st(filter, 3), st(filter, 1), st(filter, 2)};
  }
  // A cropped input is not dense in its cropped sizes unless h, w are full.
  DenseOperand dx(x, sizeof(T), true, stream), dk(k, sizeof(T), true, stream),
      dy(y, sizeof(T), true, stream);

  cudnnDataType_t type =
      std::is_same_v<T, float> ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;
  TensorDesc xd("cudnnCreateTensorDescriptor"),
      yd("cudnnCreateTensorDescriptor");
  FilterDesc kd("cudnnCreateFilterDescriptor");
  ConvDesc cd("cudnnCreateConvolutionDescriptor");
  check(cudnnSetTensor4dDescriptor(xd.d, CUDNN_TENSOR_NCHW, type,
                                   toInt(s.n, "batch"), toInt(s.c, "channels"),
                                   toInt(h, "height"), toInt(w, "width")),
        "cudnnSetTensor4dDescriptor");
  check(cudnnSetTensor4dDescriptor(yd.d, CUDNN_TENSOR_NCHW, type,
                                   toInt(s.n, "batch"), toInt(s.f, "filters"),
                                   toInt(s.oh, "height"), toInt(s.ow, "width")),
        "cudnnSetTensor4dDescriptor");
  check(cudnnSetFilter4dDescriptor(
            kd.d, type, CUDNN_TENSOR_NCHW, toInt(s.f, "filters"),
            toInt(s.c, "channels"), toInt(s.kh, "window height"),
            toInt(s.kw, "window width")),
        "cudnnSetFilter4dDescriptor");
  check(cudnnSetConvolution2dDescriptor(
            cd.d, 0, 0, toInt(s.strideH, "stride"), toInt(s.strideW, "stride"),
            toInt(s.dilationH, "dilation"), toInt(s.dilationW, "dilation"),
            CUDNN_CROSS_CORRELATION, type),
        "cudnnSetConvolution2dDescriptor");
  check(cudnnSetConvolutionMathType(cd.d, CUDNN_FMA_MATH),
        "cudnnSetConvolutionMathType");
  int outN = 0, outC = 0, outH = 0, outW = 0;
  check(cudnnGetConvolution2dForwardOutputDim(cd.d, xd.d, kd.d, &outN, &outC,
                                              &outH, &outW),
        "cudnnGetConvolution2dForwardOutputDim");
  if (outN != s.n || outC != s.f || outH != s.oh || outW != s.ow)
    throw RuntimeError("cuDNN computes an output of " + std::to_string(outN) +
                       "x" + std::to_string(outC) + "x" + std::to_string(outH) +
                       "x" + std::to_string(outW) + " (NCHW) for this window");
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  check(cudnnGetConvolutionForwardAlgorithm_v7(bind.dnn, xd.d, kd.d, cd.d, yd.d,
                                               CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                               &returned, perf),
        "cudnnGetConvolutionForwardAlgorithm_v7");
  const cudnnConvolutionFwdAlgoPerf_t *pick = nullptr;
  for (int i = 0; i < returned && !pick; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS &&
        perf[i].mathType != CUDNN_TENSOR_OP_MATH &&
        perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      pick = &perf[i];
  if (!pick)
    throw RuntimeError("cuDNN has no forward algorithm for this convolution "
                       "without tensor-op math");
  size_t wsBytes = 0;
  check(cudnnGetConvolutionForwardWorkspaceSize(bind.dnn, xd.d, kd.d, cd.d,
                                                yd.d, pick->algo, &wsBytes),
        "cudnnGetConvolutionForwardWorkspaceSize");
  void *ws = wsBytes ? workspace(bind, wsBytes) : nullptr;
  const T one = 1;
  check(cudnnConvolutionForward(bind.dnn, &one, xd.d, dx.data, kd.d, dk.data,
                                cd.d, pick->algo, ws, wsBytes, &one, yd.d,
                                dy.data),
        "cudnnConvolutionForward");
  dy.writeBack();
}

#else

template <typename T>
void gpuConv2d(pipeopt_rt_unranked_memref *, pipeopt_rt_unranked_memref *,
               pipeopt_rt_unranked_memref *, int64_t, int64_t, int64_t, int64_t,
               int64_t) {
  throw RuntimeError("libpipeopt_rt_cuda.so was built without cuDNN "
                     "(not found in the CUDA toolkit at configure time)");
}

#endif // PIPEOPT_RT_CUDA_HAVE_CUDNN

/// Runs a library kernel: nothing after an earlier error; an exception is
/// recorded as "<fn>: <message>" and gives 1.
template <typename F>
int32_t kernelCall(const char *fn, F &&f) {
  if (threadFailed())
    return 1;
  try {
    f();
    return 0;
  } catch (const std::exception &e) {
    recordError(std::string(fn) + ": " + e.what());
  } catch (...) {
    recordError(std::string(fn) + ": unknown exception");
  }
  return 1;
}

} // namespace
} // namespace cuda
} // namespace rt
} // namespace pipeopt

using namespace pipeopt::rt::cuda;

extern "C" {

// Declarations from RuntimeFunctions.def: a definition below that differs
// from the compiler's view of a kernel's signature does not compile.
#define PIPEOPT_RT_CUDA_DECL2_(Suffix, Name, Ret, Params)                      \
  PIPEOPT_RT_CUDA_EXPORT PIPEOPT_RT_KIND_##Ret _mlir_ciface_##Name##_##Suffix  \
      PIPEOPT_RT_PARAMS Params;
#define PIPEOPT_RT_CUDA_DECL_(Suffix, CType, Ctx)                              \
  PIPEOPT_RT_CALL(PIPEOPT_RT_CUDA_DECL2_, Suffix, PIPEOPT_RT_UNPACK Ctx)
#define PIPEOPT_RT_GPU_FLOAT_FN(Name, Ret, Params)                             \
  PIPEOPT_RT_FLOAT_DTYPE_LIST(PIPEOPT_RT_CUDA_DECL_, (Name, Ret, Params))
#include "pipeopt/runtime/RuntimeFunctions.def"
#undef PIPEOPT_RT_CUDA_DECL_
#undef PIPEOPT_RT_CUDA_DECL2_

#define PIPEOPT_RT_CUDA_DEFINE_KERNELS_(Suffix, CType)                         \
  PIPEOPT_RT_CUDA_EXPORT int32_t _mlir_ciface_pipeopt_rt_gpu_matmul_##Suffix(  \
      pipeopt_rt_unranked_memref *lhs, pipeopt_rt_unranked_memref *rhs,        \
      pipeopt_rt_unranked_memref *out, int64_t transLhs, int64_t transRhs) {   \
    return kernelCall("pipeopt_rt_gpu_matmul (" #Suffix ")", [&] {             \
      gpuMatmul<CType>(lhs, rhs, out, transLhs, transRhs);                     \
    });                                                                        \
  }                                                                            \
  PIPEOPT_RT_CUDA_EXPORT int32_t _mlir_ciface_pipeopt_rt_gpu_conv2d_##Suffix(  \
      pipeopt_rt_unranked_memref *in, pipeopt_rt_unranked_memref *filter,      \
      pipeopt_rt_unranked_memref *out, int64_t layout, int64_t strideH,        \
      int64_t strideW, int64_t dilationH, int64_t dilationW) {                 \
    return kernelCall("pipeopt_rt_gpu_conv2d (" #Suffix ")", [&] {             \
      gpuConv2d<CType>(in, filter, out, layout, strideH, strideW, dilationH,   \
                       dilationW);                                             \
    });                                                                        \
  }
PIPEOPT_RT_CUDA_DEFINE_KERNELS_(f32, float)
PIPEOPT_RT_CUDA_DEFINE_KERNELS_(f64, double)
#undef PIPEOPT_RT_CUDA_DEFINE_KERNELS_

} // extern "C"
