//===- KernelShapes.cpp - Operand decoding of the library kernels ---------===//
//
// Part of pipeopt. Compiled into libpipeopt_rt and libpipeopt_rt_cuda.so.
//
//===----------------------------------------------------------------------===//

#include "KernelShapes.h"

#include <algorithm>
#include <utility>

namespace pipeopt {
namespace rt {

bool asBlasLayout(int64_t rows, int64_t cols, int64_t rowStride,
                  int64_t colStride, BlasLayout &layout) {
  if (cols <= 1)
    colStride = 1;
  if (rows <= 1)
    rowStride = std::max<int64_t>(cols, 1);
  if (colStride == 1 && rowStride >= std::max<int64_t>(cols, 1)) {
    layout.trans = false;
    layout.ld = rowStride;
    return true;
  }
  // Column-major storage is the transpose of a row-major cols x rows matrix.
  if (rows <= 1)
    rowStride = 1;
  if (cols <= 1)
    colStride = std::max<int64_t>(rows, 1);
  if (rowStride == 1 && colStride >= std::max<int64_t>(rows, 1)) {
    layout.trans = true;
    layout.ld = colStride;
    return true;
  }
  return false;
}

static std::string shapeOf(const MemRefView &v) {
  return typeString(v.dtype, v.sizes);
}

MatmulShape planMatmul(const MemRefView &lhs, const MemRefView &rhs,
                       const MemRefView &out, bool transLhs, bool transRhs) {
  auto bad = [&](const std::string &why) {
    return RuntimeError("operands " + shapeOf(lhs) + " x " + shapeOf(rhs) +
                        " -> " + shapeOf(out) + ": " + why);
  };
  // Bring every operand to (batch, rows, cols) with strides; rank-1 operands
  // of matvec / vecmat become a column / a row.
  auto view3 = [](const MemRefView &v, bool trans, bool vectorIsRow) {
    StridedMatrix r;
    r.base = v.base;
    size_t rank = v.sizes.size();
    if (rank == 1) {
      if (vectorIsRow) {
        r.cols = v.sizes[0];
        r.sr = v.sizes[0];
        r.sc = v.strides[0];
      } else {
        r.rows = v.sizes[0];
        r.sr = v.strides[0];
      }
      return r;
    }
    size_t off = rank == 3 ? 1 : 0;
    if (rank == 3) {
      r.batch = v.sizes[0];
      r.sb = v.strides[0];
    }
    r.rows = v.sizes[off];
    r.cols = v.sizes[off + 1];
    r.sr = v.strides[off];
    r.sc = v.strides[off + 1];
    if (trans) {
      std::swap(r.rows, r.cols);
      std::swap(r.sr, r.sc);
    }
    return r;
  };
  size_t rl = lhs.sizes.size(), rr = rhs.sizes.size(), ro = out.sizes.size();
  bool ok = (ro == 3 && rl == 3 && rr == 3) ||
            (ro == 2 && rl == 2 && rr == 2) ||
            (ro == 1 && ((rl == 2 && rr == 1) || (rl == 1 && rr == 2)));
  if (!ok)
    throw bad("unsupported operand ranks");
  if ((transLhs && rl != 2 && rl != 3) || (transRhs && rr != 2 && rr != 3))
    throw bad("a transposed operand must be a matrix");
  bool vecmat = ro == 1 && rl == 1;
  MatmulShape s;
  s.a = view3(lhs, transLhs, /*vectorIsRow=*/true);
  s.b = view3(rhs, transRhs, /*vectorIsRow=*/false);
  // The output vector of vecmat is a row, that of matvec a column.
  s.c = view3(out, false, /*vectorIsRow=*/vecmat);
  const StridedMatrix &a = s.a, &b = s.b, &c = s.c;
  if (a.batch != c.batch || b.batch != c.batch || a.rows != c.rows ||
      b.cols != c.cols || a.cols != b.rows)
    throw bad("sizes do not match");
  return s;
}

Conv2dShape planConv2d(const MemRefView &in, const MemRefView &filter,
                       const MemRefView &out, int64_t layout, int64_t strideH,
                       int64_t strideW, int64_t dilationH, int64_t dilationW) {
  auto bad = [&](const std::string &why) {
    return RuntimeError("input " + shapeOf(in) + ", filter " + shapeOf(filter) +
                        " -> " + shapeOf(out) + ": " + why);
  };
  if (in.sizes.size() != 4 || filter.sizes.size() != 4 || out.sizes.size() != 4)
    throw bad("operands must have rank 4");
  if (strideH < 1 || strideW < 1 || dilationH < 1 || dilationW < 1)
    throw bad("strides and dilations must be positive");
  Conv2dShape s;
  s.layout = layout;
  s.strideH = strideH;
  s.strideW = strideW;
  s.dilationH = dilationH;
  s.dilationW = dilationW;
  s.n = in.sizes[0];
  switch (layout) {
  case PIPEOPT_RT_CONV_NCHW_FCHW:
    s.c = in.sizes[1], s.h = in.sizes[2], s.w = in.sizes[3];
    s.f = filter.sizes[0], s.kh = filter.sizes[2], s.kw = filter.sizes[3];
    s.oh = out.sizes[2], s.ow = out.sizes[3];
    if (filter.sizes[1] != s.c || out.sizes[1] != s.f)
      throw bad("channel counts do not match");
    break;
  case PIPEOPT_RT_CONV_NHWC_HWCF:
  case PIPEOPT_RT_CONV_NHWC_FHWC:
  case PIPEOPT_RT_CONV_NHWC_FCHW: {
    s.h = in.sizes[1], s.w = in.sizes[2], s.c = in.sizes[3];
    int64_t filterC;
    if (layout == PIPEOPT_RT_CONV_NHWC_HWCF)
      s.kh = filter.sizes[0], s.kw = filter.sizes[1], s.f = filter.sizes[3],
      filterC = filter.sizes[2];
    else if (layout == PIPEOPT_RT_CONV_NHWC_FHWC)
      s.f = filter.sizes[0], s.kh = filter.sizes[1], s.kw = filter.sizes[2],
      filterC = filter.sizes[3];
    else
      s.f = filter.sizes[0], s.kh = filter.sizes[2], s.kw = filter.sizes[3],
      filterC = filter.sizes[1];
    s.oh = out.sizes[1], s.ow = out.sizes[2];
    if (filterC != s.c || out.sizes[3] != s.f)
      throw bad("channel counts do not match");
    break;
  }
  default:
    throw bad("unknown layout code " + std::to_string(layout));
  }
  if (out.sizes[0] != s.n)
    throw bad("batch sizes do not match");
  if ((s.oh > 0 && (s.oh - 1) * strideH + (s.kh - 1) * dilationH >= s.h) ||
      (s.ow > 0 && (s.ow - 1) * strideW + (s.kw - 1) * dilationW >= s.w))
    throw bad("the output window reads past the input");
  return s;
}

} // namespace rt
} // namespace pipeopt
