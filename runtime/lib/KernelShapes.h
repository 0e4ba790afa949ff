//===- KernelShapes.h - Operand decoding of the library kernels -*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// The shape and stride analysis of the matmul / conv2d library kernels
// (pipeopt_runtime.h, "KERNELS"), shared by the CPU kernels (Kernels.cpp,
// OpenBLAS) and the device kernels of libpipeopt_rt_cuda.so (cuBLAS,
// cuDNN), so that both accept exactly the same operands and report the same
// errors. Pure arithmetic on decoded descriptors: nothing here reads the
// data, so the views may point at host or device memory.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_LIB_KERNELSHAPES_H
#define PIPEOPT_RUNTIME_LIB_KERNELSHAPES_H

#include "pipeopt/runtime/MemRefView.h"

#include <cstdint>

namespace pipeopt {
namespace rt {

/// A batch of strided matrices: element (q, i, j) is at
/// base + elementBytes * (q * sb + i * sr + j * sc). Strides in elements.
struct StridedMatrix {
  uint8_t *base = nullptr;
  int64_t batch = 1, rows = 1, cols = 1, sb = 0, sr = 1, sc = 1;
};

/// How a BLAS routine reads a (rows x cols) matrix of row-major BLAS
/// (CBLAS with CblasRowMajor): element (i, j) at data[i * ld + j]
/// (trans = false) or data[j * ld + i] (trans = true).
struct BlasLayout {
  int64_t ld = 1;
  bool trans = false;
};

/// Describes a strided 2-D view (rows x cols, strides in elements) as a BLAS
/// operand if one of its strides is 1 and the other is a valid leading
/// dimension; returns false otherwise. Size-1 dimensions have arbitrary
/// strides, so they are normalized first.
bool asBlasLayout(int64_t rows, int64_t cols, int64_t rowStride,
                  int64_t colStride, BlasLayout &layout);

/// The operands of out += op(lhs) x op(rhs) as batches of matrices, with
/// op applied (a: batch x m x k, b: batch x k x n, c: batch x m x n;
/// rank-2 operands have batch 1, matvec's rhs is a k x 1 column and its out
/// an m x 1 column, vecmat's lhs a 1 x k row and its out a 1 x n row).
struct MatmulShape {
  StridedMatrix a, b, c;
};

/// Checks the operand ranks and sizes of a matmul kernel call and returns
/// its matrices. Throws RuntimeError "operands <lhs> x <rhs> -> <out>: <why>"
/// (unsupported operand ranks, a transposed vector, mismatched sizes).
MatmulShape planMatmul(const MemRefView &lhs, const MemRefView &rhs,
                       const MemRefView &out, bool transLhs, bool transRhs);

/// The sizes of a conv2d kernel call (pipeopt_rt_conv_layout `layout`).
struct Conv2dShape {
  int64_t layout = 0;
  int64_t n = 0, c = 0, h = 0, w = 0; ///< input batch, channels, height, width
  int64_t f = 0, kh = 0, kw = 0;      ///< filters, window height, width
  int64_t oh = 0, ow = 0;             ///< output height, width
  int64_t strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
};

/// Checks the operands of a conv2d kernel call (ranks, layout code, positive
/// strides and dilations, matching batch and channel counts, the output
/// window inside the input) and returns its sizes. Throws RuntimeError
/// "input <in>, filter <filter> -> <out>: <why>".
Conv2dShape planConv2d(const MemRefView &in, const MemRefView &filter,
                       const MemRefView &out, int64_t layout, int64_t strideH,
                       int64_t strideW, int64_t dilationH, int64_t dilationW);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_LIB_KERNELSHAPES_H
