//===- Runner.h - pipeopt-run: load a model .so and run its ranks -*- C++ -*-===//
//
// The launcher logic behind the pipeopt-run tool, in the library so tests
// can drive it. See runtime/docs/Runtime.md for the command line, the input
// conventions and the trace/profile formats.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_RUNNER_H
#define PIPEOPT_RUNTIME_RUNNER_H

#include "pipeopt/runtime/Context.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pipeopt {
namespace rt {

/// Which communicator pipeopt-run uses.
enum class CommKind { Loopback, Mpi, Nccl };

/// Parsed pipeopt-run options.
struct RunOptions {
  std::string modelPath;
  std::string manifestPath; ///< default: <model stem>.manifest.json
  CommKind comm = CommKind::Loopback;
  int iterations = 1;       ///< measured iterations
  int warmup = 0;           ///< unmeasured iterations run first
  double timeoutS = 60;     ///< per blocking communication call, seconds
  uint64_t seed = 0;        ///< for inputs without --input
  std::map<int, std::vector<std::string>> inputFiles; ///< argIndex -> files
  std::string outputDir;    ///< write output_<i>.npy here if set
  std::string tracePath;    ///< Chrome trace JSON if set
  std::string profilePath;  ///< profile JSON if set
  bool quiet = false;
};

/// Parses the command line; throws RuntimeError with a usage hint on error.
RunOptions parseRunOptions(int argc, char **argv);
/// Usage text.
std::string runUsage();

/// Builds the inputs for `manifest` from `options` (files or seeded random
/// data). Throws RuntimeError naming the input and file on bad data.
InputStore loadInputs(const Manifest &manifest, const RunOptions &options);

/// Deterministic pseudo-random data for a model input whose per-microbatch
/// shape is `inputShape`, stored with shape `shape` (`inputShape`, or
/// [M, inputShape...] for a microbatched input), from `seed` (the same data
/// on every rank and in every build of the same model). The data is
/// well-conditioned so that deep models stay finite: floating-point tensors
/// of rank >= 2 are uniform in [-1, 1) / sqrt(fan-in), fan-in = elements of
/// `inputShape` per leading index (LeCun-style scaling, which keeps
/// activations O(1) through matmul and convolution layers); rank <= 1
/// tensors (biases, normalization scales, means and variances) are uniform
/// in [0.5, 1.5) so that variances stay positive; integers are uniform in
/// [0, 10) and i1 in {0, 1}.
HostTensor randomInput(DType dtype, const Shape &shape,
                       const Shape &inputShape, uint64_t seed);

/// Seed of model input `index` for the run seed `seed` (pipeopt-run --seed).
uint64_t inputSeed(uint64_t seed, int64_t index);

/// Parses a --seed value: digits only, below 2^64; throws RuntimeError
/// naming the value otherwise ("-1" and "abc" are rejected).
uint64_t parseSeed(const std::string &value);

/// Creates `dir` and its missing parents (mkdir -p); throws RuntimeError
/// naming the directory that cannot be created.
void ensureDir(const std::string &dir);

/// Entry point of pipeopt-run: returns the process exit code (0 success, 1
/// run-time error, 2 usage or setup error).
int pipeoptRunMain(int argc, char **argv);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_RUNNER_H
