//===- ConvergeInternal.h - Helpers shared by the Converge files -*- C++
//-*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_LIB_SIMULATE_CONVERGE_CONVERGEINTERNAL_H
#define PIPEOPT_LIB_SIMULATE_CONVERGE_CONVERGEINTERNAL_H

#include "pipeopt/Simulate/Converge.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace pipeopt {
namespace converge {
namespace detail {

inline llvm::Error error(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// A time or budget (seconds or slots) for messages and reports: two
/// decimals below 10^6 ("187.50"), else three significant digits in
/// scientific notation ("1.00e+25"), so that no value prints as a 26-digit
/// fixed-point number.
inline std::string formatAmount(double v) {
  return std::abs(v) < 1e6 ? llvm::formatv("{0:f2}", v).str()
                           : llvm::formatv("{0:e2}", v).str();
}

/// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): one 64-bit mixing step.
inline uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Uniform in (0, 1) from 64 random bits (53-bit mantissa, never 0).
inline double unitFromBits(uint64_t b) {
  return (static_cast<double>(b >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/// A small deterministic generator, identical on every platform (the
/// standard distributions are not).
class Rng {
public:
  explicit Rng(uint64_t seed) : state_(mix64(seed)) {}
  uint64_t next() { return mix64(state_ += 0x632BE59BD9B4E019ull); }
  double uniform() { return unitFromBits(next()); }
  /// Uniform integer in [0, n), n >= 1, without modulo bias.
  uint64_t below(uint64_t n) {
    uint64_t limit = ~0ull - (~0ull % n);
    uint64_t r;
    do
      r = next();
    while (r >= limit);
    return r % n;
  }
  double gaussian() { // Box-Muller, one value per call
    double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

private:
  uint64_t state_;
};

/// Counter-based standard normal for (seed, key, coordinate): the same
/// value whatever order the simulator asks for it in.
inline double noiseAt(uint64_t seed, uint64_t key, uint64_t coord) {
  uint64_t h = mix64(mix64(seed ^ 0xA0761D6478BD642Full) ^ key);
  h = mix64(h ^ (coord * 0xE7037ED1A0B428DBull));
  double u1 = unitFromBits(h), u2 = unitFromBits(mix64(h));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

/// The flush schedule synchronous SGD replays for M microbatches per step
/// on S stages: 1F1B once every stage has a microbatch in flight, else GPipe.
inline llvm::StringRef syncSchedule(int M, int S) {
  return M >= S ? schedule::kOneFOneBSchedule : schedule::kGPipeSchedule;
}

} // namespace detail
} // namespace converge
} // namespace pipeopt

#endif // PIPEOPT_LIB_SIMULATE_CONVERGE_CONVERGEINTERNAL_H
