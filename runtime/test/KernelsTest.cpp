//===- KernelsTest.cpp - The runtime's BLAS kernels against naive loops ---===//
//
// Every case computes out += f(inputs) through the C ABI
// (_mlir_ciface_pipeopt_rt_matmul_<T> / conv2d_<T>) and compares with a
// direct triple loop over the same strided operands, starting from a
// nonzero output (the kernels accumulate, as linalg ops do).
//
//===----------------------------------------------------------------------===//

#include "TestMemRef.h"

#include "pipeopt/runtime/Context.h"
#include "pipeopt/runtime/Kernels.h"
#include "pipeopt/runtime/pipeopt_runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using pipeopt_test::MemRef;

namespace {

std::vector<double> randomData(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (double &x : v)
    x = u(g);
  return v;
}

template <typename T>
std::vector<T> cast(const std::vector<double> &v) {
  return std::vector<T>(v.begin(), v.end());
}

/// Relative tolerance for a sum of k products of values in [-1, 1].
template <typename T>
double tolerance(int64_t k) {
  return (sizeof(T) == 4 ? 2e-6 : 1e-14) * double(k + 1);
}

/// Strided 2-D view for the reference loops.
struct View {
  int64_t offset, s0, s1;
  int64_t at(int64_t i, int64_t j) const { return offset + i * s0 + j * s1; }
};

template <typename T>
int32_t matmul(pipeopt_rt_unranked_memref *a, pipeopt_rt_unranked_memref *b,
               pipeopt_rt_unranked_memref *c, int64_t ta, int64_t tb) {
  if constexpr (std::is_same_v<T, float>)
    return _mlir_ciface_pipeopt_rt_matmul_f32(a, b, c, ta, tb);
  else
    return _mlir_ciface_pipeopt_rt_matmul_f64(a, b, c, ta, tb);
}

/// C[m, n] += op(A) op(B) with A stored [m, k] or [k, m] (transA), B [k, n]
/// or [n, k]; `padA`/`padB`/`padC` add unused elements to the leading
/// dimension (strided, not contiguous); `colMajorC` stores C transposed.
template <typename T>
void checkMatmul(int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                 int64_t padA = 0, int64_t padB = 0, int64_t padC = 0,
                 bool colMajorC = false) {
  int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  int64_t lda = ac + padA, ldb = bc + padB;
  int64_t cr = colMajorC ? n : m, cc = colMajorC ? m : n, ldc = cc + padC;
  std::vector<T> a = cast<T>(randomData(size_t(ar * lda), 1)),
                 b = cast<T>(randomData(size_t(br * ldb), 2)),
                 c = cast<T>(randomData(size_t(cr * ldc), 3));
  std::vector<T> want = c;
  View av{0, ta ? 1 : lda, ta ? lda : 1}, bv{0, tb ? 1 : ldb, tb ? ldb : 1},
      cv{0, colMajorC ? 1 : ldc, colMajorC ? ldc : 1};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      long double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += (long double)a[size_t(av.at(i, p))] * b[size_t(bv.at(p, j))];
      want[size_t(cv.at(i, j))] += T(s);
    }
  MemRef<2> am(a.data(), {ar, ac}, {lda, 1}), bm(b.data(), {br, bc}, {ldb, 1});
  // A column-major C is the [m, n] view with strides (1, ldc).
  MemRef<2> cm = colMajorC ? MemRef<2>(c.data(), {m, n}, {1, ldc})
                           : MemRef<2>(c.data(), {m, n}, {ldc, 1});
  ASSERT_EQ(matmul<T>(am.get(), bm.get(), cm.get(), ta, tb), 0);
  for (size_t i = 0; i < c.size(); ++i)
    ASSERT_NEAR(c[i], want[i], tolerance<T>(k)) << "element " << i;
}

TEST(Kernels, MatmulAllTransposes) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(testing::Message() << "ta " << ta << " tb " << tb);
      checkMatmul<float>(17, 33, 65, ta, tb);
      checkMatmul<double>(9, 5, 130, ta, tb);
    }
}

TEST(Kernels, MatmulStridedOperandsAndOutput) {
  checkMatmul<float>(8, 12, 20, false, false, 3, 5, 7);
  checkMatmul<float>(8, 12, 20, true, true, 1, 2, 3);
  checkMatmul<double>(6, 4, 10, false, true, 0, 0, 0, /*colMajorC=*/true);
  checkMatmul<float>(1, 1, 1, false, false);
  checkMatmul<float>(1, 40, 3, true, false);
}

TEST(Kernels, MatmulUnitStrideInNeitherDimensionIsPacked) {
  // A [4, 6] read with strides (12, 2): every other column of a wider array.
  int64_t m = 4, k = 6, n = 3;
  std::vector<float> a = cast<float>(randomData(size_t(m * 2 * k), 4)),
                     b = cast<float>(randomData(size_t(k * n), 5)),
                     c(size_t(m * n), 0.5f);
  std::vector<float> want = c;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        want[size_t(i * n + j)] +=
            a[size_t(i * 2 * k + 2 * p)] * b[size_t(p * n + j)];
  MemRef<2> am(a.data(), {m, k}, {2 * k, 2}), bm(b.data(), {k, n}),
      cm(c.data(), {m, n});
  ASSERT_EQ(
      _mlir_ciface_pipeopt_rt_matmul_f32(am.get(), bm.get(), cm.get(), 0, 0),
      0);
  for (size_t i = 0; i < c.size(); ++i)
    EXPECT_NEAR(c[i], want[i], 1e-5);
}

TEST(Kernels, BatchMatmulWithOffset) {
  int64_t bs = 3, m = 5, k = 7, n = 4;
  std::vector<double> a = randomData(size_t(1 + bs * m * k), 6),
                      b = randomData(size_t(bs * n * k), 7),
                      c = randomData(size_t(bs * m * n), 8);
  std::vector<double> want = c;
  for (int64_t q = 0; q < bs; ++q)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t p = 0; p < k; ++p)
          want[size_t((q * m + i) * n + j)] +=
              a[size_t(1 + (q * m + i) * k + p)] *
              b[size_t((q * n + j) * k + p)];
  // A has offset 1; B is stored [batch, n, k] and read transposed.
  MemRef<3> am(a.data(), {bs, m, k}, {m * k, k, 1}, 1),
      bm(b.data(), {bs, n, k}), cm(c.data(), {bs, m, n});
  ASSERT_EQ(
      _mlir_ciface_pipeopt_rt_matmul_f64(am.get(), bm.get(), cm.get(), 0, 1),
      0);
  for (size_t i = 0; i < c.size(); ++i)
    EXPECT_NEAR(c[i], want[i], 1e-13);
}

TEST(Kernels, MatvecAndVecmat) {
  int64_t m = 6, k = 9;
  std::vector<float> a = cast<float>(randomData(size_t(m * k), 9)),
                     x = cast<float>(randomData(size_t(k), 10)),
                     y(size_t(m), 1.0f), z(size_t(m), -1.0f);
  std::vector<float> wantY = y, wantZ = z;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      wantY[size_t(i)] += a[size_t(i * k + p)] * x[size_t(p)];
      // vecmat: z[j] += sum_p x[p] * a^T[p, j], a^T read transposed from a.
      wantZ[size_t(i)] += x[size_t(p)] * a[size_t(i * k + p)];
    }
  MemRef<2> am(a.data(), {m, k}), at(a.data(), {m, k});
  MemRef<1> xm(x.data(), {k}), ym(y.data(), {m}), zm(z.data(), {m});
  ASSERT_EQ(
      _mlir_ciface_pipeopt_rt_matmul_f32(am.get(), xm.get(), ym.get(), 0, 0),
      0);
  ASSERT_EQ(
      _mlir_ciface_pipeopt_rt_matmul_f32(xm.get(), at.get(), zm.get(), 0, 1),
      0);
  for (int64_t i = 0; i < m; ++i) {
    EXPECT_NEAR(y[size_t(i)], wantY[size_t(i)], 1e-5);
    EXPECT_NEAR(z[size_t(i)], wantZ[size_t(i)], 1e-5);
  }
}

TEST(Kernels, MatmulShapeMismatchIsAnError) {
  std::vector<float> a(6), b(6), c(4);
  MemRef<2> am(a.data(), {2, 3}), bm(b.data(), {2, 3}), cm(c.data(), {2, 2});
  testing::internal::CaptureStderr();
  EXPECT_NE(
      _mlir_ciface_pipeopt_rt_matmul_f32(am.get(), bm.get(), cm.get(), 0, 0),
      0);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("sizes do not match"), std::string::npos) << err;
}

/// Naive convolution in NCHW / NHWC over logical indices.
template <typename T>
void checkConv(int64_t layout, int64_t n, int64_t c, int64_t h, int64_t w,
               int64_t f, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
               int64_t dh, int64_t dw) {
  int64_t oh = (h - (kh - 1) * dh - 1) / sh + 1,
          ow = (w - (kw - 1) * dw - 1) / sw + 1;
  std::vector<T> in = cast<T>(randomData(size_t(n * c * h * w), 11)),
                 fl = cast<T>(randomData(size_t(f * c * kh * kw), 12)),
                 out = cast<T>(randomData(size_t(n * f * oh * ow), 13));
  bool nchw = layout == PIPEOPT_RT_CONV_NCHW_FCHW;
  auto inAt = [&](int64_t b, int64_t ch, int64_t y, int64_t x) {
    return nchw ? ((b * c + ch) * h + y) * w + x
                : ((b * h + y) * w + x) * c + ch;
  };
  auto flAt = [&](int64_t fo, int64_t ch, int64_t i, int64_t j) {
    switch (layout) {
    case PIPEOPT_RT_CONV_NCHW_FCHW:
      return ((fo * c + ch) * kh + i) * kw + j;
    case PIPEOPT_RT_CONV_NHWC_HWCF:
      return ((i * kw + j) * c + ch) * f + fo;
    case PIPEOPT_RT_CONV_NHWC_FCHW:
      return ((fo * c + ch) * kh + i) * kw + j;
    default:
      return ((fo * kh + i) * kw + j) * c + ch;
    }
  };
  auto outAt = [&](int64_t b, int64_t fo, int64_t y, int64_t x) {
    return nchw ? ((b * f + fo) * oh + y) * ow + x
                : ((b * oh + y) * ow + x) * f + fo;
  };
  std::vector<T> want = out;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t fo = 0; fo < f; ++fo)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          long double s = 0;
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j)
                s += (long double)in[size_t(
                         inAt(b, ch, y * sh + i * dh, x * sw + j * dw))] *
                     fl[size_t(flAt(fo, ch, i, j))];
          want[size_t(outAt(b, fo, y, x))] += T(s);
        }
  int64_t inShape[4], flShape[4], outShape[4];
  if (nchw) {
    int64_t a[4] = {n, c, h, w}, fs[4] = {f, c, kh, kw}, o[4] = {n, f, oh, ow};
    std::copy(a, a + 4, inShape), std::copy(fs, fs + 4, flShape),
        std::copy(o, o + 4, outShape);
  } else {
    int64_t a[4] = {n, h, w, c}, o[4] = {n, oh, ow, f};
    int64_t hwcf[4] = {kh, kw, c, f}, fhwc[4] = {f, kh, kw, c},
            fchw[4] = {f, c, kh, kw};
    std::copy(a, a + 4, inShape), std::copy(o, o + 4, outShape);
    const int64_t *fs = layout == PIPEOPT_RT_CONV_NHWC_HWCF   ? hwcf
                        : layout == PIPEOPT_RT_CONV_NHWC_FCHW ? fchw
                                                              : fhwc;
    std::copy(fs, fs + 4, flShape);
  }
  MemRef<4> im(in.data(), {inShape[0], inShape[1], inShape[2], inShape[3]}),
      fm(fl.data(), {flShape[0], flShape[1], flShape[2], flShape[3]}),
      om(out.data(), {outShape[0], outShape[1], outShape[2], outShape[3]});
  int32_t rc;
  if constexpr (std::is_same_v<T, float>)
    rc = _mlir_ciface_pipeopt_rt_conv2d_f32(im.get(), fm.get(), om.get(),
                                            layout, sh, sw, dh, dw);
  else
    rc = _mlir_ciface_pipeopt_rt_conv2d_f64(im.get(), fm.get(), om.get(),
                                            layout, sh, sw, dh, dw);
  ASSERT_EQ(rc, 0);
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_NEAR(out[i], want[i], tolerance<T>(c * kh * kw)) << "element " << i;
}

TEST(Kernels, ConvEveryLayoutStrideDilation) {
  for (int64_t layout :
       {PIPEOPT_RT_CONV_NCHW_FCHW, PIPEOPT_RT_CONV_NHWC_HWCF,
        PIPEOPT_RT_CONV_NHWC_FHWC, PIPEOPT_RT_CONV_NHWC_FCHW}) {
    SCOPED_TRACE(testing::Message() << "layout " << layout);
    checkConv<float>(layout, 2, 3, 9, 8, 4, 3, 3, 1, 1, 1, 1);
    checkConv<float>(layout, 1, 5, 11, 10, 3, 3, 2, 2, 3, 1, 1);
    checkConv<double>(layout, 2, 2, 10, 9, 3, 2, 3, 1, 2, 2, 2);
    // 1x1 stride 1: the GEMM reads the input in place.
    checkConv<float>(layout, 2, 6, 4, 5, 7, 1, 1, 1, 1, 1, 1);
    // 1x1 with stride 2 needs the im2col copy.
    checkConv<double>(layout, 1, 4, 7, 7, 2, 1, 1, 2, 2, 1, 1);
    // More filters than im2col rows: NHWC_FCHW scatters its rows in the
    // filter's (c, kh, kw) order instead of reordering the filter.
    checkConv<float>(layout, 1, 3, 4, 5, 20, 3, 2, 1, 1, 1, 1);
    checkConv<double>(layout, 1, 5, 6, 6, 9, 2, 3, 2, 2, 1, 1);
  }
}

TEST(Kernels, ConvAfterALargerConvOnTheSameThread) {
  // The im2col buffer is the thread's, reused and never zeroed: a larger
  // convolution first leaves its values in it, and the smaller one after it
  // must overwrite every element it reads.
  for (int64_t layout :
       {PIPEOPT_RT_CONV_NCHW_FCHW, PIPEOPT_RT_CONV_NHWC_HWCF,
        PIPEOPT_RT_CONV_NHWC_FHWC, PIPEOPT_RT_CONV_NHWC_FCHW}) {
    SCOPED_TRACE(testing::Message() << "layout " << layout);
    checkConv<float>(layout, 2, 8, 20, 20, 4, 5, 5, 1, 1, 1, 1);
    checkConv<float>(layout, 1, 2, 6, 5, 3, 3, 2, 1, 2, 1, 1);
    checkConv<double>(layout, 2, 8, 20, 20, 4, 5, 5, 1, 1, 1, 1);
    checkConv<double>(layout, 1, 3, 5, 7, 2, 2, 3, 2, 1, 1, 1);
  }
}

TEST(Kernels, ConvReadingPastTheInputIsAnError) {
  std::vector<float> in(1 * 1 * 4 * 4), fl(1 * 1 * 3 * 3), out(1 * 1 * 3 * 3);
  MemRef<4> im(in.data(), {1, 1, 4, 4}), fm(fl.data(), {1, 1, 3, 3}),
      om(out.data(), {1, 1, 3, 3});
  testing::internal::CaptureStderr();
  EXPECT_NE(_mlir_ciface_pipeopt_rt_conv2d_f32(im.get(), fm.get(), om.get(),
                                               PIPEOPT_RT_CONV_NCHW_FCHW, 1, 1,
                                               1, 1),
            0);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("reads past the input"), std::string::npos) << err;
}

TEST(Kernels, IndexErrorNamesTheActionAndPoisonsTheContext) {
  pipeopt::rt::RankContext ctx(2, nullptr, nullptr, nullptr, 1.0);
  pipeopt::rt::ScopedContext scope(&ctx);
  ctx.openKind = PIPEOPT_RT_ACTION_F;
  ctx.openStage = 1;
  ctx.openMicrobatch = 3;
  EXPECT_NE(pipeopt_rt_index_error(30522, 30522, 0), 0);
  ASSERT_TRUE(ctx.isPoisoned());
  EXPECT_EQ(ctx.errorMessage(),
            "rank 2: F of stage 1 microbatch 3: gather: index 30522 is out of "
            "range [0, 30522) in dimension 0 of the indexed tensor");
  // Later kernel calls do nothing and fail.
  std::vector<float> a(1, 1), b(1, 1), c(1, 0);
  MemRef<2> am(a.data(), {1, 1}), bm(b.data(), {1, 1}), cm(c.data(), {1, 1});
  EXPECT_NE(
      _mlir_ciface_pipeopt_rt_matmul_f32(am.get(), bm.get(), cm.get(), 0, 0),
      0);
  EXPECT_EQ(c[0], 0.0f);
}

TEST(Kernels, DefaultThreadsDivideTheCoresAmongTheRanks) {
  EXPECT_EQ(pipeopt::rt::defaultKernelThreads(16, 4), 4);
  EXPECT_EQ(pipeopt::rt::defaultKernelThreads(2, 4), 1);
  EXPECT_EQ(pipeopt::rt::defaultKernelThreads(8, 3), 2);
  EXPECT_EQ(pipeopt::rt::defaultKernelThreads(0, 0), 1);
}

} // namespace
