//===- Calibration.h - Fits of measured kernel times ------------*- C++ -*-===//
//
// Part of the pipeopt runtime. Header-only and free of dependencies: the
// arithmetic pipeopt-calibrate applies to its measurements, kept apart from
// the timing code so that unit tests can check it on exact numbers.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_CALIBRATION_H
#define PIPEOPT_RUNTIME_CALIBRATION_H

#include <algorithm>
#include <utility>
#include <vector>

namespace pipeopt {
namespace rt {

/// One measured contraction: its FLOPs, the bytes it reads (every input
/// operand once) and its time in seconds.
struct ContractionSample {
  double flops = 0;
  double bytesRead = 0;
  double seconds = 0;
};

/// The operand bandwidth (bytes read / s) of the cost model's contraction
/// rule t = flops / peakFlops + bytesRead / bandwidth (machine::Device::
/// contractionOperandBytesPerSecond; GotoBLAS-style packing, Goto & van de
/// Geijn, ACM TOMS 34(3), 2008), fitted to `samples` by least squares in
/// relative error with peakFlops (FLOP/s) held fixed: with y_i = seconds_i -
/// flops_i / peak (the time beyond the compute), x_i = bytesRead_i and
/// weights w_i = 1 / seconds_i^2 (each shape counts alike, however long it
/// takes), the slope through the origin 1 / bandwidth = sum(w_i x_i y_i) /
/// sum(w_i x_i^2). One sample gives the plain ratio x / y. Several shapes
/// average out the noise of any one difference y_i; an error in peakFlops
/// moves every y_i alike, so measure it in the same conditions.
///
/// Returns 0 when the operands cost nothing measurable (slope <= 0: the
/// samples are no slower per FLOP than the peak), when peakFlops <= 0 or
/// when no sample reads any bytes; the caller then omits the field (plain
/// roofline).
inline double fitOperandBandwidth(const std::vector<ContractionSample> &samples,
                                  double peakFlops) {
  if (!(peakFlops > 0))
    return 0;
  double xy = 0, xx = 0;
  for (const ContractionSample &s : samples) {
    if (!(s.seconds > 0))
      continue;
    double w = 1.0 / (s.seconds * s.seconds);
    double beyond = s.seconds - s.flops / peakFlops;
    xy += w * s.bytesRead * beyond;
    xx += w * s.bytesRead * s.bytesRead;
  }
  if (!(xx > 0) || !(xy > 0))
    return 0;
  return xx / xy;
}

/// The median of `values`: the upper middle one of an even count (the
/// middle of the sorted values at index size / 2); 0 when empty.
inline double upperMedian(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::nth_element(values.begin(), values.begin() + values.size() / 2,
                   values.end());
  return values[values.size() / 2];
}

/// The times (seconds) of one kernel's calls, measured in interleaved
/// rounds: rounds[r] holds the calls of round r. pipeopt-calibrate calls each
/// of a group of kernels a few times per round, round after round, so that
/// another job running for a while (a few hundred ms) slows a minority of
/// every kernel's calls instead of all the calls of the one kernel measured
/// at that moment, and so that a fit that combines two kernels (the operand
/// fit subtracts the 512^3 peak) sees both in the same conditions.
using RoundTimes = std::vector<std::vector<double>>;

/// The median (`fastest` false) or the fastest of all calls of all rounds,
/// pooled; 0 when there is no call. The median of an even count is the
/// upper middle one, as for a single series.
inline double pooledTime(const RoundTimes &rounds, bool fastest) {
  std::vector<double> all;
  for (const std::vector<double> &r : rounds)
    all.insert(all.end(), r.begin(), r.end());
  if (fastest)
    return all.empty() ? 0 : *std::min_element(all.begin(), all.end());
  return upperMedian(std::move(all));
}

/// How much the rounds disagree: the 90th percentile of the rounds' median
/// times (the upper middle of an even count) over their 10th percentile,
/// the q-th percentile of N sorted medians being the one at index
/// round(q (N - 1)); rounds without calls are skipped. About 1 on a quiet
/// node; pipeopt-calibrate warns above 1.3, when other jobs slowed a good
/// part of the rounds (with its 49 rounds: 6 slow rounds or more; with 9:
/// 2 or more). 1 for fewer than two rounds or a 10th percentile of 0.
inline double roundSpread(const RoundTimes &rounds) {
  std::vector<double> medians;
  for (const std::vector<double> &r : rounds)
    if (!r.empty())
      medians.push_back(upperMedian(r));
  if (medians.size() < 2)
    return 1;
  std::sort(medians.begin(), medians.end());
  auto rank = [&](double q) {
    return medians[std::min(medians.size() - 1,
                            size_t(q * double(medians.size() - 1) + 0.5))];
  };
  double low = rank(0.1);
  return low > 0 ? rank(0.9) / low : 1;
}

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_CALIBRATION_H
