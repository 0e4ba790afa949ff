//===- Reduce.h - Averaging an output over microbatches ---------*- C++ -*-===//
//
// The mean over microbatches of an output with "reduce": "mean" (a training
// build's loss and gradients; docs/Runtime.md, "Manifest"). Every
// microbatch's value is added to a sum in double precision as it is written,
// on whichever rank writes it; rank 0 adds the ranks' sums, divides by the
// number of microbatches and rounds once to the output's dtype. Summing M
// float values in double and rounding once makes the mean independent of
// the order of the writes (to far below the output dtype's precision).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_REDUCE_H
#define PIPEOPT_RUNTIME_REDUCE_H

#include "pipeopt/runtime/Npy.h"

#include <cstdint>
#include <vector>

namespace pipeopt {
namespace rt {

/// True for f32, f64, f16 and bf16.
bool isFloatDType(DType type);

/// The value of an IEEE half (binary16) / bfloat16 bit pattern.
double halfToDouble(uint16_t bits);
double bf16ToDouble(uint16_t bits);
/// `value` rounded to the nearest half / bfloat16 (ties to even; overflow
/// to infinity, NaN stays NaN), as a bit pattern.
uint16_t doubleToHalf(double value);
uint16_t doubleToBf16(double value);

/// Adds the `sum.size()` elements of floating-point type `dtype` at `data`
/// (row-major, packed) element by element to `sum`. Throws RuntimeError for
/// a non-floating-point dtype.
void addToSum(DType dtype, const uint8_t *data, std::vector<double> &sum);

/// The tensor of dtype `dtype` and shape `shape` whose elements are
/// `sum[i] / count`, each rounded once to `dtype` (to nearest, ties to
/// even). `sum` has numElements(shape) elements; `count` >= 1.
HostTensor meanFromSum(const std::vector<double> &sum, int64_t count,
                       DType dtype, const Shape &shape);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_REDUCE_H
