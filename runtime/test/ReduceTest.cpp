//===- ReduceTest.cpp - Mean over microbatches, f16/bf16 rounding -*- C++
//-*-===//

#include "pipeopt/runtime/Reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace pipeopt::rt;

namespace {

std::vector<uint8_t> bytesOf(const std::vector<float> &v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST(Reduce, HalfConversionsRoundToNearestEven) {
  EXPECT_EQ(doubleToHalf(1.0), 0x3C00);
  EXPECT_EQ(doubleToHalf(-2.0), 0xC000);
  EXPECT_EQ(doubleToHalf(-0.0), 0x8000);
  EXPECT_EQ(doubleToHalf(0.1), 0x2E66);     // 0.0999755859375
  EXPECT_EQ(doubleToHalf(65504.0), 0x7BFF); // largest finite
  EXPECT_EQ(doubleToHalf(65519.0), 0x7BFF);
  EXPECT_EQ(doubleToHalf(65520.0), 0x7C00); // the tie rounds to infinity
  EXPECT_EQ(doubleToHalf(std::ldexp(1.0, -14)), 0x0400); // smallest normal
  EXPECT_EQ(doubleToHalf(std::ldexp(1.0, -24)), 0x0001); // smallest subnormal
  EXPECT_EQ(doubleToHalf(std::ldexp(1.0, -26)), 0x0000); // below half of it
  // Ties go to the even neighbour: 1 + 2^-11 lies between 0x3C00 and 0x3C01,
  // 1 + 3 * 2^-11 between 0x3C01 and 0x3C02.
  EXPECT_EQ(doubleToHalf(1.0 + std::ldexp(1.0, -11)), 0x3C00);
  EXPECT_EQ(doubleToHalf(1.0 + 3 * std::ldexp(1.0, -11)), 0x3C02);
  // Just above a tie rounds up.
  EXPECT_EQ(doubleToHalf(1.0 + std::ldexp(1.0, -11) + 1e-12), 0x3C01);
  // The largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(doubleToHalf(std::ldexp(1023.9, -24)), 0x0400);
  uint16_t nan = doubleToHalf(std::nan(""));
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
  EXPECT_EQ(halfToDouble(0x3555), 0.333251953125);
  EXPECT_EQ(halfToDouble(0x0001), std::ldexp(1.0, -24));
  EXPECT_TRUE(std::isinf(halfToDouble(0xFC00)));
  // Every finite and infinite half survives the round trip.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7C00) == 0x7C00 && (b & 0x03FF))
      continue; // NaN
    ASSERT_EQ(doubleToHalf(halfToDouble(uint16_t(b))), b) << std::hex << b;
  }
}

TEST(Reduce, Bf16ConversionsRoundToNearestEven) {
  EXPECT_EQ(doubleToBf16(1.0), 0x3F80);
  EXPECT_EQ(doubleToBf16(3.0), 0x4040);
  EXPECT_EQ(doubleToBf16(-0.5), 0xBF00);
  EXPECT_EQ(doubleToBf16(1.0 + std::ldexp(1.0, -8)), 0x3F80);
  EXPECT_EQ(doubleToBf16(1.0 + 3 * std::ldexp(1.0, -8)), 0x3F82);
  EXPECT_EQ(doubleToBf16(1e39), 0x7F80); // beyond the largest finite
  EXPECT_EQ(bf16ToDouble(0x4049), 3.140625);
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7F80) == 0x7F80 && (b & 0x007F))
      continue; // NaN
    ASSERT_EQ(doubleToBf16(bf16ToDouble(uint16_t(b))), b) << std::hex << b;
  }
}

TEST(Reduce, MeanIsSummedInDoubleAndRoundedOnce) {
  // Four microbatches' values of one f32 element. Summed in f32 the result
  // depends on the order (1e8 + 1 == 1e8 in f32): 0.25 or 0. In double the
  // sum is exactly 2 in every order, so the mean is 0.5.
  std::vector<std::vector<float>> orders = {{1e8f, 1.0f, -1e8f, 1.0f},
                                            {1.0f, 1.0f, 1e8f, -1e8f},
                                            {-1e8f, 1e8f, 1.0f, 1.0f},
                                            {1.0f, 1e8f, 1.0f, -1e8f}};
  for (const auto &order : orders) {
    std::vector<double> sum(1, 0.0);
    for (float v : order)
      addToSum(DType::F32, bytesOf({v}).data(), sum);
    HostTensor mean = meanFromSum(sum, 4, DType::F32, {});
    ASSERT_EQ(mean.shape, Shape{});
    float got;
    std::memcpy(&got, mean.data.data(), 4);
    EXPECT_EQ(got, 0.5f);
  }
  // Several elements, f16 in and out: the mean of 1.5 and 2.5 is 2, of
  // 0.1 and 0.2 is 0.15 rounded once (not (0.1 + 0.2 rounded) / 2).
  std::vector<double> sum(2, 0.0);
  uint16_t a[2] = {doubleToHalf(1.5), doubleToHalf(0.1)};
  uint16_t b[2] = {doubleToHalf(2.5), doubleToHalf(0.2)};
  addToSum(DType::F16, reinterpret_cast<const uint8_t *>(a), sum);
  addToSum(DType::F16, reinterpret_cast<const uint8_t *>(b), sum);
  HostTensor h = meanFromSum(sum, 2, DType::F16, {2});
  uint16_t out[2];
  std::memcpy(out, h.data.data(), 4);
  EXPECT_EQ(out[0], doubleToHalf(2.0));
  EXPECT_EQ(out[1],
            doubleToHalf((halfToDouble(a[1]) + halfToDouble(b[1])) / 2));
  // f64 and bf16 work; integers are rejected.
  std::vector<double> one(1, 0.0);
  double d = 3.0;
  addToSum(DType::F64, reinterpret_cast<const uint8_t *>(&d), one);
  HostTensor f64 = meanFromSum(one, 3, DType::F64, {1});
  double got64;
  std::memcpy(&got64, f64.data.data(), 8);
  EXPECT_EQ(got64, 1.0);
  HostTensor bf = meanFromSum(one, 2, DType::BF16, {1});
  uint16_t gotBf;
  std::memcpy(&gotBf, bf.data.data(), 2);
  EXPECT_EQ(gotBf, 0x3FC0); // 1.5
  int32_t i = 1;
  EXPECT_THROW(addToSum(DType::I32, reinterpret_cast<const uint8_t *>(&i), one),
               RuntimeError);
  EXPECT_THROW(meanFromSum(one, 2, DType::I64, {1}), RuntimeError);
  EXPECT_THROW(meanFromSum(one, 0, DType::F32, {1}), RuntimeError);
  EXPECT_TRUE(isFloatDType(DType::BF16));
  EXPECT_FALSE(isFloatDType(DType::I1));
}

} // namespace
