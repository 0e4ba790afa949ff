//===- CalibrationTest.cpp - pipeopt-calibrate's fits ---------------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Calibration.h"

#include <gtest/gtest.h>

using namespace pipeopt::rt;

namespace {

ContractionSample sample(double flops, double bytes, double seconds) {
  ContractionSample s;
  s.flops = flops;
  s.bytesRead = bytes;
  s.seconds = seconds;
  return s;
}

TEST(Calibration, OperandBandwidthRecoversTheRule) {
  // Times made by the rule itself at 100 GFLOP/s and 10 GB/s (a 16 x 256 x
  // 256 and a 32 x 512 x 512 f32 GEMM): the fit gives 10 GB/s back.
  const double peak = 1e11, bw = 1e10;
  auto exact = [&](double flops, double bytes) {
    return sample(flops, bytes, flops / peak + bytes / bw);
  };
  std::vector<ContractionSample> s = {
      exact(2.0 * 16 * 256 * 256, 4.0 * (16 * 256 + 256 * 256)),
      exact(2.0 * 32 * 512 * 512, 4.0 * (32 * 512 + 512 * 512))};
  EXPECT_NEAR(fitOperandBandwidth(s, peak), bw, bw * 1e-12);
}

TEST(Calibration, OperandBandwidthIsTheRelativeLeastSquaresSlope) {
  // No compute (flops 0): times beyond the peak 2 s and 5 s for 1 and 3
  // bytes, weights 1/2^2 and 1/5^2. The slope through the origin is
  // (1*2/4 + 3*5/25) / (1/4 + 9/25) = 1.1 / 0.61 s per byte; the first
  // sample alone would say 2, the second 5/3, unweighted least squares 1.7.
  std::vector<ContractionSample> s = {sample(0, 1, 2), sample(0, 3, 5)};
  EXPECT_DOUBLE_EQ(fitOperandBandwidth(s, 1e9), 0.61 / 1.1);
  // The compute is subtracted first (4 FLOP at 2 FLOP/s take 2 s), and the
  // weights are those of the whole times: 1/4^2 and 1/7^2.
  s = {sample(4, 1, 4), sample(4, 3, 7)};
  EXPECT_DOUBLE_EQ(fitOperandBandwidth(s, 2),
                   (1.0 / 16 + 9.0 / 49) / (2.0 / 16 + 15.0 / 49));
}

TEST(Calibration, OperandBandwidthZeroWhenNotMeasurable) {
  EXPECT_EQ(fitOperandBandwidth({}, 1e11), 0);
  // Not slower than the peak: the operands cost nothing measurable.
  EXPECT_EQ(fitOperandBandwidth({sample(1e6, 1e5, 5e-6)}, 1e11), 0);
  // No bytes read, or no peak.
  EXPECT_EQ(fitOperandBandwidth({sample(1e6, 0, 1)}, 1e11), 0);
  EXPECT_EQ(fitOperandBandwidth({sample(1e6, 1e5, 1)}, 0), 0);
}

TEST(Calibration, UpperMedian) {
  EXPECT_EQ(upperMedian({3, 1, 2, 4}), 3); // the upper of the middle two
  EXPECT_EQ(upperMedian({5, 9, 1}), 5);
  EXPECT_EQ(upperMedian({7}), 7);
  EXPECT_EQ(upperMedian({}), 0);
}

TEST(Calibration, PooledTimeOverAllRoundsResistsADisturbedStretch) {
  // 7 rounds of 2 calls at 1 s; rounds 2-4 (a stretch another job slowed)
  // at 3 s. The disturbed kernel of a non-interleaved measurement would be
  // 3 s; pooled, the 6 slow calls of 14 leave the median at 1 s.
  RoundTimes r(7, {1.0, 1.0});
  for (int i = 2; i <= 4; ++i)
    r[size_t(i)] = {3.0, 3.0};
  EXPECT_EQ(pooledTime(r, false), 1.0);
  // Half the calls slow: the upper middle of 8 sorted calls.
  EXPECT_EQ(pooledTime({{1, 2}, {3, 4}, {5, 6}, {7, 8}}, false), 5);
  EXPECT_EQ(pooledTime({{4, 2}, {3}, {}, {1.5}}, true), 1.5);
  // Odd count: the middle of 1.5, 2, 3, 4, 9.
  EXPECT_EQ(pooledTime({{4, 2}, {3}, {}, {1.5, 9}}, false), 3);
  EXPECT_EQ(pooledTime({}, false), 0);
  EXPECT_EQ(pooledTime({{}, {}}, true), 0);
}

TEST(Calibration, RoundSpreadComparesTheRoundMedians) {
  // Round medians 1..11 (round 5 empty, skipped): 10 medians 1,2,3,4,6..11;
  // nearest ranks 0.1 * 9 + 0.5 -> index 1 (2) and 0.9 * 9 + 0.5 -> index 8
  // (10).
  RoundTimes r;
  for (int i = 1; i <= 11; ++i)
    r.push_back(i == 5 ? std::vector<double>{}
                       : std::vector<double>{double(i), double(i), 100.0});
  EXPECT_DOUBLE_EQ(roundSpread(r), 10.0 / 2.0);
  // A quiet node: every round alike.
  EXPECT_EQ(roundSpread(RoundTimes(20, {2.0})), 1);
  // One slow round of 20 is not a disturbance of the rounds.
  RoundTimes one(20, {2.0});
  one[7] = {9.0};
  EXPECT_EQ(roundSpread(one), 1);
  EXPECT_EQ(roundSpread({{5.0}}), 1);
  EXPECT_EQ(roundSpread({}), 1);
  EXPECT_EQ(roundSpread({{0.0}, {0.0}, {0.0}}), 1);
}

TEST(Calibration, RoundSpreadTakesEachRoundsMedian) {
  // Rounds {0, i, 100} (odd) and {0, i, i + 1, 100} (even, upper middle
  // i + 1): medians 3, 4, 4, 6, 6, indexes round(0.4) = 0 and round(3.6) =
  // 4. Each round's fastest call (0) would give 1, its lower middle 6 / 2.
  RoundTimes r = {
      {0, 2, 3, 100}, {0, 3, 4, 100}, {100, 4, 0}, {0, 5, 6, 100}, {6, 100, 0}};
  EXPECT_DOUBLE_EQ(roundSpread(r), 6.0 / 3.0);
}

TEST(Calibration, RoundSpreadThresholdAtTheToolsRoundCounts) {
  // pipeopt-calibrate warns above 1.3. With 49 rounds the 90th percentile
  // is the 6th slowest round (index round(0.9 * 48) = 43): 5 slow rounds
  // leave it quiet, 6 do not.
  auto rounds = [](int count, int slow) {
    RoundTimes r(size_t(count), {1.0});
    for (int i = 0; i < slow; ++i)
      r[size_t(i * 3)] = {2.0};
    return r;
  };
  EXPECT_EQ(roundSpread(rounds(49, 5)), 1);
  EXPECT_EQ(roundSpread(rounds(49, 6)), 2);
  // --quick's 9 rounds: index round(7.2) = 7, the 2nd slowest.
  EXPECT_EQ(roundSpread(rounds(9, 1)), 1);
  EXPECT_EQ(roundSpread(rounds(9, 2)), 2);
}

} // namespace
