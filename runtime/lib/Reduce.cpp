//===- Reduce.cpp - Averaging an output over microbatches -------*- C++ -*-===//

#include "pipeopt/runtime/Reduce.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace pipeopt {
namespace rt {

bool isFloatDType(DType type) {
  return type == DType::F32 || type == DType::F64 || type == DType::F16 ||
         type == DType::BF16;
}

namespace {

/// The value of a binary floating-point bit pattern with `expBits` exponent
/// and `mantBits` fraction bits (IEEE layout: sign, exponent, fraction).
double bitsToDouble(uint32_t bits, int expBits, int mantBits) {
  int bias = (1 << (expBits - 1)) - 1;
  uint32_t mant = bits & ((1u << mantBits) - 1);
  uint32_t exp = (bits >> mantBits) & ((1u << expBits) - 1);
  bool negative = (bits >> (mantBits + expBits)) & 1;
  double v;
  if (exp == 0) // zero or subnormal
    v = std::ldexp(double(mant), 1 - bias - mantBits);
  else if (exp == (1u << expBits) - 1)
    v = mant ? std::numeric_limits<double>::quiet_NaN()
             : std::numeric_limits<double>::infinity();
  else
    v = std::ldexp(double(mant | (1u << mantBits)), int(exp) - bias - mantBits);
  return negative ? -v : v;
}

/// `value` rounded to the nearest number of that format (ties to even:
/// std::nearbyint in the default rounding mode), as a bit pattern.
uint32_t doubleToBits(double value, int expBits, int mantBits) {
  int bias = (1 << (expBits - 1)) - 1;
  uint32_t sign = std::signbit(value) ? 1u << (expBits + mantBits) : 0;
  uint32_t expMax = (1u << expBits) - 1;
  if (std::isnan(value))
    return sign | (expMax << mantBits) | (1u << (mantBits - 1));
  double a = std::fabs(value);
  if (std::isinf(a))
    return sign | (expMax << mantBits);
  int minExp = 1 - bias; // exponent of the smallest normal number
  int e;
  std::frexp(a, &e); // a = f * 2^e, f in [0.5, 1)
  int exp = e - 1;   // a = s * 2^exp, s in [1, 2)
  if (a == 0 || exp < minExp) {
    // Subnormal: a multiple of 2^(minExp - mantBits). A result of
    // 2^mantBits units is the smallest normal number, which the same bit
    // pattern encodes.
    double units = std::nearbyint(std::ldexp(a, mantBits - minExp));
    return sign | uint32_t(units);
  }
  double units =
      std::nearbyint(std::ldexp(a, mantBits - exp)); // [2^m, 2^(m+1)]
  if (units == std::ldexp(1.0, mantBits + 1)) {
    units = std::ldexp(1.0, mantBits);
    ++exp;
  }
  if (exp + bias >= int(expMax))
    return sign | (expMax << mantBits); // overflow: infinity
  return sign | (uint32_t(exp + bias) << mantBits) |
         (uint32_t(units) - (1u << mantBits));
}

} // namespace

double halfToDouble(uint16_t bits) { return bitsToDouble(bits, 5, 10); }
double bf16ToDouble(uint16_t bits) { return bitsToDouble(bits, 8, 7); }
uint16_t doubleToHalf(double value) {
  return uint16_t(doubleToBits(value, 5, 10));
}
uint16_t doubleToBf16(double value) {
  return uint16_t(doubleToBits(value, 8, 7));
}

void addToSum(DType dtype, const uint8_t *data, std::vector<double> &sum) {
  size_t n = sum.size();
  switch (dtype) {
  case DType::F32:
    for (size_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, data + 4 * i, 4);
      sum[i] += double(v);
    }
    return;
  case DType::F64:
    for (size_t i = 0; i < n; ++i) {
      double v;
      std::memcpy(&v, data + 8 * i, 8);
      sum[i] += v;
    }
    return;
  case DType::F16:
  case DType::BF16:
    for (size_t i = 0; i < n; ++i) {
      uint16_t v;
      std::memcpy(&v, data + 2 * i, 2);
      sum[i] += dtype == DType::F16 ? halfToDouble(v) : bf16ToDouble(v);
    }
    return;
  default:
    throw RuntimeError(std::string("a mean over microbatches needs a "
                                   "floating-point dtype, not ") +
                       dtypeName(dtype));
  }
}

HostTensor meanFromSum(const std::vector<double> &sum, int64_t count,
                       DType dtype, const Shape &shape) {
  if (count < 1)
    throw RuntimeError("a mean needs at least one microbatch");
  if (!isFloatDType(dtype))
    throw RuntimeError(std::string("a mean over microbatches needs a "
                                   "floating-point dtype, not ") +
                       dtypeName(dtype));
  HostTensor t;
  t.dtype = dtype;
  t.shape = shape;
  size_t n = size_t(numElements(shape));
  if (sum.size() != n)
    throw RuntimeError("mean: " + std::to_string(sum.size()) + " sums for " +
                       typeString(dtype, shape));
  t.data.resize(n * dtypeSize(dtype));
  for (size_t i = 0; i < n; ++i) {
    double mean = sum[i] / double(count);
    uint8_t *p = t.data.data() + i * dtypeSize(dtype);
    if (dtype == DType::F32) {
      float v = float(mean);
      std::memcpy(p, &v, 4);
    } else if (dtype == DType::F64) {
      std::memcpy(p, &mean, 8);
    } else {
      uint16_t v =
          dtype == DType::F16 ? doubleToHalf(mean) : doubleToBf16(mean);
      std::memcpy(p, &v, 2);
    }
  }
  return t;
}

} // namespace rt
} // namespace pipeopt
