//===- Calibration.h - Fits of measured kernel times ------------*- C++ -*-===//
//
// Part of the pipeopt runtime. Header-only and free of dependencies: the
// arithmetic pipeopt-calibrate applies to its measurements, kept apart from
// the timing code so that unit tests can check it on exact numbers.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_CALIBRATION_H
#define PIPEOPT_RUNTIME_CALIBRATION_H

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

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_CALIBRATION_H
