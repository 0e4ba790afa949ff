//===- Kernels.cpp - Contraction, convolution and index-check kernels -----===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// The library kernels that compiled stage bodies call instead of naive loop
// nests (pipeopt_runtime.h, "KERNELS"): GEMM-shaped contractions through
// CBLAS (OpenBLAS), 2-D convolutions as im2col + GEMM, and the error report
// of an out-of-range gather index.
//
// OpenBLAS is loaded with dlopen on first use (pipeopt-run: when it sets the
// kernel threads, before any rank runs) rather than linked:
// its CPU detection runs in its load-time constructor, and on CPUs newer
// than the library (Debian 12's 0.3.21 on Sapphire Rapids, for one) it falls
// back to its SSE3 "Prescott" kernels, about 10x slower. Loading it late lets
// the runtime pick the AVX-512 or AVX2 kernels through OPENBLAS_CORETYPE
// first (unless the user set it). Without OpenBLAS at run time the GEMM is a
// plain loop with the same semantics: correct, slow, and said so once on
// stderr.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Kernels.h"
#include "KernelShapes.h"
#include "pipeopt/runtime/Context.h"
#include "pipeopt/runtime/Manifest.h"
#include "pipeopt/runtime/pipeopt_runtime.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <optional>
#include <sched.h>
#include <thread>

namespace pipeopt {
namespace rt {
namespace {

//===----------------------------------------------------------------------===//
// OpenBLAS, loaded at first use
//===----------------------------------------------------------------------===//

// The standard CBLAS C ABI (netlib cblas.h): enum values and signatures.
enum { kCblasRowMajor = 101, kCblasNoTrans = 111, kCblasTrans = 112 };
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float *,
                         int, const float *, int, float, float *, int);
using DgemmFn = void (*)(int, int, int, int, int, int, double, const double *,
                         int, const double *, int, double, double *, int);
using SetThreadsFn = void (*)(int);
using GetThreadsFn = int (*)();
using CoreNameFn = char *(*)();

struct Blas {
  SgemmFn sgemm = nullptr;
  DgemmFn dgemm = nullptr;
  SetThreadsFn setThreads = nullptr;
  GetThreadsFn getThreads = nullptr;
  std::string name = "built-in loops";
};

std::atomic<int> gThreads{0};

const Blas &blas() {
  static Blas b;
  static std::once_flag once;
  std::call_once(once, [] {
    if (!std::getenv("OPENBLAS_CORETYPE")) {
      __builtin_cpu_init();
      if (__builtin_cpu_supports("avx512f") &&
          __builtin_cpu_supports("avx512bw") &&
          __builtin_cpu_supports("avx512vl"))
        setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
      else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        setenv("OPENBLAS_CORETYPE", "Haswell", 0);
    }
    const char *override = std::getenv("PIPEOPT_BLAS_LIBRARY");
    std::vector<const char *> names;
    if (override && *override)
      names.push_back(override);
    else
      names = {"libopenblas.so.0", "libopenblas.so"};
    void *h = nullptr;
    std::string why;
    for (const char *n : names) {
      if ((h = dlopen(n, RTLD_NOW | RTLD_LOCAL)))
        break;
      const char *e = dlerror();
      why += std::string(why.empty() ? "" : "; ") + (e ? e : n);
    }
    if (h) {
      b.sgemm = reinterpret_cast<SgemmFn>(dlsym(h, "cblas_sgemm"));
      b.dgemm = reinterpret_cast<DgemmFn>(dlsym(h, "cblas_dgemm"));
      b.setThreads =
          reinterpret_cast<SetThreadsFn>(dlsym(h, "openblas_set_num_threads"));
      b.getThreads =
          reinterpret_cast<GetThreadsFn>(dlsym(h, "openblas_get_num_threads"));
      auto core =
          reinterpret_cast<CoreNameFn>(dlsym(h, "openblas_get_corename"));
      if (b.sgemm && b.dgemm) {
        b.name =
            std::string("OpenBLAS (") + (core ? core() : "?") + " kernels)";
      } else {
        why =
            std::string(override && *override ? override : "libopenblas.so.0") +
            " has no cblas_sgemm / cblas_dgemm";
        b.sgemm = nullptr;
        b.dgemm = nullptr;
        b.setThreads = nullptr;
        b.getThreads = nullptr;
      }
    }
    if (!b.sgemm)
      std::fprintf(stderr,
                   "pipeopt runtime: warning: no BLAS library loaded (%s); "
                   "contractions run as plain loops on one thread, much "
                   "slower (install OpenBLAS, Debian: libopenblas0, or set "
                   "PIPEOPT_BLAS_LIBRARY to its path)\n",
                   why.c_str());
    if (b.setThreads && gThreads.load() > 0)
      b.setThreads(gThreads.load());
  });
  return b;
}

template <typename T>
constexpr DType dtypeOf();
template <>
constexpr DType dtypeOf<float>() {
  return DType::F32;
}
template <>
constexpr DType dtypeOf<double>() {
  return DType::F64;
}

/// Runs `f`; an exception becomes the calling rank's first error (or a line
/// on stderr when no rank context is installed, e.g. in a unit test) and a
/// nonzero return. Unlike the communication functions, kernels do not need a
/// context: they are pure computations on their operands.
template <typename F>
int32_t kernelGuard(const char *fn, F &&f) {
  RankContext *ctx = currentContext();
  if (ctx && ctx->isPoisoned())
    return 1;
  try {
    if (ctx) {
      double beginS = ctx->now();
      f();
      ctx->addTime(ctx->kernelS, ctx->now() - beginS);
    } else {
      f();
    }
    return 0;
  } catch (const std::exception &e) {
    std::string where;
    if (ctx && ctx->openKind >= 0)
      where = std::string(actionKindName(ctx->openKind)) + " of stage " +
              std::to_string(ctx->openStage) + " microbatch " +
              std::to_string(ctx->openMicrobatch) + ": ";
    std::string message = where + fn + ": " + e.what();
    if (ctx)
      ctx->fail(message);
    else
      std::fprintf(stderr, "pipeopt runtime: %s\n", message.c_str());
  }
  return 1;
}

/// A row-major matrix operand of a GEMM: element (i, j) is at
/// data[i * ld + j] (trans = false) or data[j * ld + i] (trans = true).
template <typename T>
struct Matrix {
  T *data = nullptr;
  int64_t rows = 0, cols = 0, ld = 1;
  bool trans = false;
};

/// A strided 2-D view as a BLAS operand, if asBlasLayout (KernelShapes.h)
/// accepts it.
template <typename T>
bool asBlasMatrix(T *data, int64_t rows, int64_t cols, int64_t rowStride,
                  int64_t colStride, Matrix<T> &m) {
  BlasLayout layout;
  if (!asBlasLayout(rows, cols, rowStride, colStride, layout))
    return false;
  m = {data, rows, cols, layout.ld, layout.trans};
  return true;
}

/// C (m x n, row-major, ldc) += A (m x k) * B (k x n).
template <typename T>
void gemmAccumulate(const Matrix<T> &a, const Matrix<T> &b, T *c, int64_t ldc) {
  int64_t m = a.rows, k = a.cols, n = b.cols;
  if (m == 0 || n == 0 || k == 0)
    return;
  const Blas &lib = blas();
  if (lib.sgemm) {
    int ta = a.trans ? kCblasTrans : kCblasNoTrans;
    int tb = b.trans ? kCblasTrans : kCblasNoTrans;
    if constexpr (std::is_same_v<T, float>)
      lib.sgemm(kCblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0f, a.data,
                int(a.ld), b.data, int(b.ld), 1.0f, c, int(ldc));
    else
      lib.dgemm(kCblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0, a.data,
                int(a.ld), b.data, int(b.ld), 1.0, c, int(ldc));
    return;
  }
  auto at = [&](const Matrix<T> &x, int64_t i, int64_t j) {
    return x.trans ? x.data[j * x.ld + i] : x.data[i * x.ld + j];
  };
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      T aip = at(a, i, p);
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] += aip * at(b, p, j);
    }
}

/// A dense row-major copy of a view when the view cannot be used in place.
template <typename T>
struct Dense {
  std::vector<T> storage;
  T *data = nullptr;
  Dense(const MemRefView &v, bool copyIn) {
    if (v.isContiguous()) {
      data = reinterpret_cast<T *>(v.base);
      return;
    }
    storage.resize(v.byteSize() / sizeof(T));
    if (copyIn)
      packMemRef(v, storage.data());
    data = storage.data();
  }
  bool copied() const { return !storage.empty(); }
};

template <typename T>
void matmul(pipeopt_rt_unranked_memref *lhsRef,
            pipeopt_rt_unranked_memref *rhsRef,
            pipeopt_rt_unranked_memref *outRef, int64_t transLhs,
            int64_t transRhs) {
  constexpr DType dt = dtypeOf<T>();
  MemRefView lhs = decodeMemRef(lhsRef, dt), rhs = decodeMemRef(rhsRef, dt),
             out = decodeMemRef(outRef, dt);
  MatmulShape shape = planMatmul(lhs, rhs, out, transLhs, transRhs);
  struct View3 {
    T *base;
    int64_t batch, rows, cols, sb, sr, sc;
  };
  auto typed = [](const StridedMatrix &m) {
    return View3{reinterpret_cast<T *>(m.base),
                 m.batch,
                 m.rows,
                 m.cols,
                 m.sb,
                 m.sr,
                 m.sc};
  };
  View3 a = typed(shape.a), b = typed(shape.b), c = typed(shape.c);

  // The output must be row-major for CBLAS; otherwise accumulate into a
  // dense row-major copy (the runtime's packMemRef / unpackMemRef) and write
  // it back.
  Matrix<T> cm;
  bool cInPlace =
      asBlasMatrix(c.base, c.rows, c.cols, c.sr, c.sc, cm) && !cm.trans;
  std::optional<Dense<T>> cDense;
  if (!cInPlace) {
    cDense.emplace(out, /*copyIn=*/true);
    cm = {cDense->data, c.rows, c.cols, std::max<int64_t>(c.cols, 1), false};
    c.sb = c.rows * c.cols;
  }
  // An operand BLAS cannot read in place is packed into its own scratch.
  std::vector<T> scratchA, scratchB;
  auto operand = [](const View3 &v, int64_t q, std::vector<T> &scratch) {
    T *p = v.base + q * v.sb;
    Matrix<T> m;
    if (asBlasMatrix(p, v.rows, v.cols, v.sr, v.sc, m))
      return m;
    scratch.resize(size_t(v.rows * v.cols));
    for (int64_t i = 0; i < v.rows; ++i)
      for (int64_t j = 0; j < v.cols; ++j)
        scratch[size_t(i * v.cols + j)] = p[i * v.sr + j * v.sc];
    return Matrix<T>{scratch.data(), v.rows, v.cols,
                     std::max<int64_t>(v.cols, 1), false};
  };
  for (int64_t q = 0; q < c.batch; ++q)
    gemmAccumulate(operand(a, q, scratchA), operand(b, q, scratchB),
                   cm.data + q * c.sb, cm.ld);
  if (cDense && cDense->copied())
    unpackMemRef(out, cDense->data);
}

/// The calling thread's im2col buffer, at least `count` elements, reused
/// from call to call and not zeroed: the im2col loops write every element
/// the GEMM reads. A fresh zeroed vector per call cost ResNet-18 a memset
/// and the page faults of a new mapping for every convolution (7.4 MB for
/// its first layer). The largest buffer a thread needed stays allocated
/// until the thread ends. `Slot` 1 is a second buffer of the same kind
/// (the NHWC_FCHW filter reordered, used together with the im2col one).
template <typename T, int Slot = 0>
T *im2colBuffer(size_t count) {
  thread_local std::unique_ptr<T[]> buffer;
  thread_local size_t capacity = 0;
  if (count > capacity) {
    buffer.reset(); // the old one first: never both at once
    buffer.reset(new T[count]);
    capacity = count;
  }
  return buffer.get();
}

template <typename T>
void conv2d(pipeopt_rt_unranked_memref *inRef,
            pipeopt_rt_unranked_memref *filterRef,
            pipeopt_rt_unranked_memref *outRef, int64_t layout, int64_t strideH,
            int64_t strideW, int64_t dilationH, int64_t dilationW) {
  constexpr DType dt = dtypeOf<T>();
  MemRefView in = decodeMemRef(inRef, dt), filter = decodeMemRef(filterRef, dt),
             out = decodeMemRef(outRef, dt);
  Conv2dShape s = planConv2d(in, filter, out, layout, strideH, strideW,
                             dilationH, dilationW);
  int64_t n = s.n, c = s.c, h = s.h, w = s.w, f = s.f, kh = s.kh, kw = s.kw,
          oh = s.oh, ow = s.ow;
  Dense<T> din(in, true), dfilter(filter, true), dout(out, true);
  const T *x = din.data, *wt = dfilter.data;
  T *y = dout.data;
  int64_t kdim = c * kh * kw, pixels = oh * ow;
  bool pointwise = kh == 1 && kw == 1 && strideH == 1 && strideW == 1;
  T *col = nullptr;
  if (layout == PIPEOPT_RT_CONV_NCHW_FCHW) {
    // Per image: y[F, OH*OW] += W[F, C*KH*KW] * col[C*KH*KW, OH*OW].
    if (!pointwise)
      col = im2colBuffer<T>(size_t(kdim * pixels));
    for (int64_t b = 0; b < n; ++b) {
      const T *xb = x + b * c * h * w;
      const T *colp = xb;
      if (!pointwise) {
        for (int64_t ci = 0; ci < c; ++ci)
          for (int64_t i = 0; i < kh; ++i)
            for (int64_t j = 0; j < kw; ++j) {
              T *row = col + ((ci * kh + i) * kw + j) * pixels;
              for (int64_t yy = 0; yy < oh; ++yy) {
                const T *src = xb +
                               (ci * h + yy * strideH + i * dilationH) * w +
                               j * dilationW;
                T *dst = row + yy * ow;
                if (strideW == 1)
                  std::memcpy(dst, src, size_t(ow) * sizeof(T));
                else
                  for (int64_t xx = 0; xx < ow; ++xx)
                    dst[xx] = src[xx * strideW];
              }
            }
        colp = col;
      }
      Matrix<T> am{const_cast<T *>(wt), f, kdim, kdim, false};
      Matrix<T> bm{const_cast<T *>(colp), kdim, pixels, pixels, false};
      gemmAccumulate(am, bm, y + b * f * pixels, pixels);
    }
  } else {
    // y[N*OH*OW, F] += col[N*OH*OW, K] * W' where W' is the filter as
    // [KH*KW*C, F] (hwcf), or the transpose of [F, KH*KW*C] (fhwc) or of
    // [F, C*KH*KW] (fchw). An im2col row follows the filter's K order:
    // (i, j, c) for hwcf and fhwc, (c, i, j) for fchw. The (c, i, j) rows
    // are a scatter of every input element (about 2 cycles per element
    // here, against a memcpy per (i, j) for (i, j, c) rows), so an fchw
    // filter with fewer filters than im2col rows (F*K < rows*K elements to
    // move: ResNet's early layers) is reordered to fhwc in a per-thread
    // buffer instead, and the rows keep the (i, j, c) order.
    int64_t rows = n * pixels, window = kh * kw;
    bool cFirst = layout == PIPEOPT_RT_CONV_NHWC_FCHW && window > 1;
    if (cFirst && !pointwise && f <= rows) {
      T *reordered = im2colBuffer<T, 1>(size_t(f * kdim));
      for (int64_t fo = 0; fo < f; ++fo) {
        const T *src = wt + fo * kdim;  // [C, KH*KW]
        T *dst = reordered + fo * kdim; // [KH*KW, C]
        for (int64_t ci = 0; ci < c; ++ci)
          for (int64_t q = 0; q < window; ++q)
            dst[q * c + ci] = src[ci * window + q];
      }
      wt = reordered;
      cFirst = false;
    }
    const T *colp = x;
    if (!pointwise) {
      col = im2colBuffer<T>(size_t(rows * kdim));
      for (int64_t b = 0; b < n; ++b)
        for (int64_t yy = 0; yy < oh; ++yy)
          for (int64_t xx = 0; xx < ow; ++xx) {
            T *dst = col + ((b * oh + yy) * ow + xx) * kdim;
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const T *src = x + ((b * h + yy * strideH + i * dilationH) * w +
                                    xx * strideW + j * dilationW) *
                                       c;
                if (!cFirst) {
                  std::memcpy(dst + (i * kw + j) * c, src,
                              size_t(c) * sizeof(T));
                  continue;
                }
                // The row's (c, i, j) order: channel ci at ci*KH*KW + i*KW+j
                // (the row, at most K elements, stays in the L1 cache).
                T *d = dst + i * kw + j;
                for (int64_t ci = 0; ci < c; ++ci)
                  d[ci * window] = src[ci];
              }
          }
      colp = col;
    }
    Matrix<T> am{const_cast<T *>(colp), rows, kdim, kdim, false};
    Matrix<T> bm{const_cast<T *>(wt), kdim, f,
                 layout == PIPEOPT_RT_CONV_NHWC_HWCF ? f : kdim,
                 layout != PIPEOPT_RT_CONV_NHWC_HWCF};
    gemmAccumulate(am, bm, y, f);
  }
  if (dout.copied())
    unpackMemRef(out, dout.data);
}

} // namespace

void setKernelThreads(int threads) {
  if (threads < 1)
    threads = 1;
  gThreads = threads;
  if (const Blas &lib = blas(); lib.setThreads)
    lib.setThreads(threads);
}

int kernelThreads() {
  const Blas &lib = blas();
  if (!lib.sgemm)
    return 1; // the fallback loops run on the calling thread
  if (lib.getThreads)
    return lib.getThreads(); // what OpenBLAS uses (it caps the request)
  return gThreads.load();
}

std::string kernelLibrary() { return blas().name; }

int usableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

std::vector<int> usableCpuIds() {
  std::vector<int> ids;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set))
        ids.push_back(c);
  }
  if (ids.empty())
    for (int c = 0; c < usableCores(); ++c)
      ids.push_back(c);
  return ids;
}

int defaultKernelThreads(int cores, int ranksOnNode) {
  return std::max(1, std::max(cores, 1) / std::max(ranksOnNode, 1));
}

} // namespace rt
} // namespace pipeopt

using namespace pipeopt::rt;

extern "C" {

#define PIPEOPT_RT_DEFINE_KERNELS_(Suffix, CType)                              \
  int32_t _mlir_ciface_pipeopt_rt_matmul_##Suffix(                             \
      pipeopt_rt_unranked_memref *lhs, pipeopt_rt_unranked_memref *rhs,        \
      pipeopt_rt_unranked_memref *out, int64_t transLhs, int64_t transRhs) {   \
    return kernelGuard("matmul (" #Suffix ")", [&] {                           \
      matmul<CType>(lhs, rhs, out, transLhs, transRhs);                        \
    });                                                                        \
  }                                                                            \
  int32_t _mlir_ciface_pipeopt_rt_conv2d_##Suffix(                             \
      pipeopt_rt_unranked_memref *in, pipeopt_rt_unranked_memref *filter,      \
      pipeopt_rt_unranked_memref *out, int64_t layout, int64_t strideH,        \
      int64_t strideW, int64_t dilationH, int64_t dilationW) {                 \
    return kernelGuard("conv2d (" #Suffix ")", [&] {                           \
      conv2d<CType>(in, filter, out, layout, strideH, strideW, dilationH,      \
                    dilationW);                                                \
    });                                                                        \
  }
PIPEOPT_RT_DEFINE_KERNELS_(f32, float)
PIPEOPT_RT_DEFINE_KERNELS_(f64, double)
#undef PIPEOPT_RT_DEFINE_KERNELS_

static int32_t indexError(int64_t index, int64_t size, int64_t dim) {
  return kernelGuard("gather", [&] {
    throw RuntimeError("index " + std::to_string(index) +
                       " is out of range [0, " + std::to_string(size) +
                       ") in dimension " + std::to_string(dim) +
                       " of the indexed tensor");
  });
}
int32_t pipeopt_rt_index_error(int64_t index, int64_t size, int64_t dim) {
  return indexError(index, size, dim);
}
int32_t _mlir_ciface_pipeopt_rt_index_error(int64_t index, int64_t size,
                                            int64_t dim) {
  return indexError(index, size, dim);
}

} // extern "C"
