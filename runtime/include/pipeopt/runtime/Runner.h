//===- Runner.h - pipeopt-run: load a model .so and run its ranks -*- C++ -*-===//
//
// The launcher logic behind the pipeopt-run tool, in the library so tests
// can drive it. See docs/Runtime.md for the command line, the input
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

/// Parsed pipeopt-run options.
struct RunOptions {
  std::string modelPath;
  std::string manifestPath; ///< default: <model stem>.manifest.json
  CommKind comm = CommKind::Loopback;
  int iterations = 1;       ///< measured iterations (= --steps if given)
  int warmup = 0;           ///< unmeasured iterations run first
  double timeoutS = 60;     ///< per blocking communication call, seconds
  uint64_t seed = 0;        ///< for inputs without --input
  std::map<int, std::vector<std::string>> inputFiles; ///< argIndex -> files
  std::string outputDir;    ///< write output_<i>.npy here if set
  std::string tracePath;    ///< Chrome trace JSON if set
  std::string profilePath;  ///< profile JSON if set
  bool quiet = false;
  /// --steps N: a training build's measured steps (its name for
  /// --iterations; 0: not given). Without an optimizer (issue 11) every
  /// step computes the gradients of the same weights.
  int steps = 0;
  /// --save-grads: write every named output of a training build as
  /// <outputDir>/<name>.npy (grad_<i>.npy, loss.npy) instead of
  /// output_<index>.npy. Needs --output-dir.
  bool saveGrads = false;
  /// Training builds with parameters: after every checkpointEvery-th step
  /// write a complete checkpoint into checkpointDir (docs/Runtime.md,
  /// "Checkpoints"); 0 / "": none.
  std::string checkpointDir;
  int checkpointEvery = 0;
  /// --resume C: continue from the latest complete checkpoint in C; --steps
  /// is then the total number of steps, of which the remaining ones run.
  std::string resumeDir;
  /// Threads per rank for the library kernels (GEMM); 0: this node's cores
  /// divided by the ranks running on it (at least 1).
  int threads = 0;
  /// --pin-ranks: "auto" (the default: when the in-process ranks outnumber
  /// the usable cores and each has one kernel thread), "on" or "off". A
  /// pinned rank runs on one core from the first measured iteration on (the
  /// second without warm-up);
  /// the cores are assigned from the thread CPU time of each rank's last
  /// warm-up iteration, longest first onto the least loaded core (LPT,
  /// Graham 1969; assignRanksToCores in Placement.h), so that the busiest stage does not share a core with
  /// the others. Without warm-up (training) the first iteration is
  /// measured and the ranks are pinned from the second. Loopback
  /// (in-process ranks) only.
  std::string pinRanks = "auto";
  /// --devices LIST: the CUDA devices of a cuda build's ranks (empty: the
  /// default, assignDevices).
  std::vector<int> devices;
  /// PIPEOPT_FAULT_KILL=<rank>:<step> (tests only, docs/Runtime.md
  /// "Testing failures"): that rank raises SIGKILL at the start of that
  /// step (counted from 1 like --checkpoint-every). -1: no fault.
  int faultKillRank = -1;
  int faultKillStep = 0;
};

/// Parses the command line; throws RuntimeError with a usage hint on error.
/// What needs the manifest (--steps and --save-grads need a training build)
/// is checked by checkTrainingOptions.
RunOptions parseRunOptions(int argc, char **argv);

/// True if `manifest` is a training build: some output has "reduce":
/// "mean" (the loss and gradients, averaged over microbatches).
bool isTrainingBuild(const Manifest &manifest);

/// The file that --output-dir gets for `output`: "<name>.npy" with
/// --save-grads if it has a name, else "output_<index>.npy".
std::string outputFileName(const ManifestOutput &output,
                           const RunOptions &options);

/// Checks --steps and --save-grads against the manifest: both need a
/// training build; with --save-grads every output name must be a plain
/// file name (letters, digits, '_', '-', '.', not starting with '.') and no
/// two outputs may get the same file. Throws RuntimeError naming the
/// problem (pipeopt-run exits with 2).
void checkTrainingOptions(const Manifest &manifest, const RunOptions &options);
/// The CUDA device of each of `localRanks` of a cuda build, out of
/// `count` visible devices. `listed` is --devices (empty: 0..count-1).
/// In one process (loopback, single-process NCCL) rank r gets
/// listed[r % size]; with one process per rank (`distributed`) the
/// process's rank gets listed[localRank % size] (localRank: the rank
/// among the node's processes, OMPI_COMM_WORLD_LOCAL_RANK / LOCAL_RANK).
/// Throws RuntimeError naming a listed device >= count and the count.
std::vector<int> assignDevices(const std::vector<int> &listed,
                               const std::vector<int> &localRanks,
                               bool distributed, int localRank, int count);

/// Usage text.
std::string runUsage();

/// Builds the inputs for `manifest` from `options` (files or seeded random
/// data). Throws RuntimeError naming the input and file on bad data.
InputStore loadInputs(const Manifest &manifest, const RunOptions &options);

/// Deterministic pseudo-random data for model input `input` of a model with
/// `numMicrobatches` microbatches, from `seed`: shape [M, ...input.shape]
/// for a microbatched input, input.shape otherwise. The data depends only on
/// (input.dtype, input.shape, input.microbatched, numMicrobatches, seed), so
/// it is the same on every rank and in every build of the same model
/// (reference and pipelined, compiled with the same --microbatch-args).
///
/// Floating-point inputs:
///  - microbatched inputs (data: activations, images, embeddings) are
///    uniform in [-1, 1), unscaled, independently for every microbatch;
///  - other inputs (weights) are classified by their shape without its
///    leading size-1 dimensions (TOSA's rank-3 matmul operands [1, K, N],
///    broadcast biases [1, 1, N]): rank <= 1 after that (biases,
///    normalization scales, means and variances) is uniform in [0.5, 1.5),
///    so that variances stay positive; otherwise uniform in
///    [-sqrt(3 / fan_in), sqrt(3 / fan_in)) with fan_in = the product of all
///    dimensions but the first, which has variance 1 / fan_in (LeCun-style).
/// Integers are uniform in [0, 10), or in [0, index_bound) for the inputs
/// the manifest marks as gather indices (token ids of an embedding, whose
/// table has index_bound rows), i1 in {0, 1}.
///
/// Rationale: the runs that compare a pipelined build with the reference
/// must detect a microbatch mix-up (a stage that computes on, or a rank that
/// receives, another microbatch's data). That needs outputs that depend
/// clearly on the data: the data is O(1) and differs per microbatch, and the
/// weights preserve the variance of the activations through matmul and
/// convolution layers, so deep models neither overflow nor shrink to their
/// biases. fan_in is exact for weights stored output-dimension first
/// ([out, in] linear weights, OIHW and OHWI convolution kernels); for
/// [in, out] matrices it is `out`, which only changes the scale of that
/// layer by sqrt(in / out). Which inputs are data is the manifest's
/// "microbatched" flag (pipeopt-compile --microbatch-args).
HostTensor randomInput(const ManifestInput &input, int numMicrobatches,
                       uint64_t seed);

/// Seed of model input `index` for the run seed `seed` (pipeopt-run --seed).
uint64_t inputSeed(uint64_t seed, int64_t index);

/// Parses a --seed value: digits only, below 2^64; throws RuntimeError
/// naming the value otherwise ("-1" and "abc" are rejected).
uint64_t parseSeed(const std::string &value);

/// Creates `dir` and its missing parents (mkdir -p); throws RuntimeError
/// naming the directory that cannot be created.
void ensureDir(const std::string &dir);

/// The end of a training step of a build with parameters, after the entry
/// point returned (pipeopt-run calls it on every rank): the ranks of each
/// parameter of `ctx` exchange their gradient sums over `comm`, and each
/// applies the optimizer to its copy with the mean over the M microbatches
/// (asynchronous schedules only check that every microbatch reported). In
/// device mode (ctx.device) the update runs on the device. Returns an error
/// ("" if none: a missing microbatch, a rank that reported nothing);
/// throws RuntimeError on communication or device errors. `step` (from 1)
/// only labels messages.
std::string updateParameters(RankContext &ctx, Communicator &comm, int step,
                             double timeoutS);

/// A parameter as rank 0 gathers it (from the lowest rank of its list).
struct GatheredParameter {
  HostTensor value;
  std::vector<double> meanGrad, first, second;
  int64_t step = 0;
};

/// A checkpoint read back for --resume.
struct Checkpoint {
  int step = 0;
  std::vector<float> losses;
  std::map<int, GatheredParameter> parameters;
};

/// Reads the checkpoint that `dir`/latest names, for the manifest `m`;
/// throws RuntimeError naming the file when it is missing or does not fit
/// the manifest. (Public for the checkpoint fuzz target, fuzz/.)
Checkpoint readCheckpoint(const Manifest &m, const std::string &dir);

/// Entry point of pipeopt-run: returns the process exit code (0 success, 1
/// run-time error, 2 usage or setup error).
int pipeoptRunMain(int argc, char **argv);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_RUNNER_H
