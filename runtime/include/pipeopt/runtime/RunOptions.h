//===- RunOptions.h - pipeopt-run options -----------------------*- C++ -*-===//
//
// The options of a run: what pipeopt-run's command line sets (parseRunOptions)
// and what a Session is loaded with (Session.h), and their checks against a
// manifest. Runner.h includes it.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_RUNOPTIONS_H
#define PIPEOPT_RUNTIME_RUNOPTIONS_H

#include "pipeopt/runtime/Manifest.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pipeopt {
namespace rt {

/// Parsed pipeopt-run options.
struct RunOptions {
  std::string modelPath;
  std::string manifestPath; ///< default: <model stem>.manifest.json
  /// --comm: the name of a communicator of the registry (CommRegistry.h:
  /// "loopback", "mpi", "nccl").
  std::string comm = "loopback";
  int iterations = 1;   ///< measured iterations (= --steps if given)
  int warmup = 0;       ///< unmeasured iterations run first
  double timeoutS = 60; ///< per blocking communication call, seconds
  uint64_t seed = 0;    ///< for inputs without --input
  std::map<int, std::vector<std::string>> inputFiles; ///< argIndex -> files
  /// --inputs DIR|FILE.npz: every input at once (readInputSet, Inputs.h);
  /// an input of inputFiles takes its file instead. "": none.
  std::string inputSet;
  std::string outputDir;   ///< write output_<i>.npy here if set
  std::string tracePath;   ///< Chrome trace JSON if set
  std::string profilePath; ///< profile JSON if set
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
  /// Graham 1969; assignRanksToCores in Placement.h), so that the busiest stage
  /// does not share a core with the others. Without warm-up (training) the
  /// first iteration is measured and the ranks are pinned from the second.
  /// Loopback (in-process ranks) only.
  std::string pinRanks = "auto";
  /// --devices LIST: the CUDA devices of a cuda build's ranks (empty: the
  /// default, assignDevices).
  std::vector<int> devices;
  /// PIPEOPT_FAULT_KILL=<rank>:<step> (tests only, docs/Runtime.md
  /// "Testing failures"): that rank raises SIGKILL at the start of that
  /// step (counted from 1 like --checkpoint-every). -1: no fault.
  int faultKillRank = -1;
  int faultKillStep = 0;
  /// --data-parallel D: D replicas of the build's P-rank pipeline on D x P
  /// ranks (global rank g = d * P + r: replica d, pipeline rank r, the
  /// simulator's layout). Each replica takes the d-th of D equal
  /// consecutive parts of every microbatched input's global batch; each
  /// stage's gradients are averaged over its D replicas with the
  /// communicator's all-reduce before the optimizer (docs/Runtime.md,
  /// "Data parallelism"). 1: one pipeline.
  int dataParallel = 1;
  /// --zero 1: ZeRO stage 1 (Rajbhandari et al., SC 2020, section 5.1):
  /// each replica keeps and updates 1/D of its ranks' optimizer state
  /// (reduce-scatter of the gradient sums, the optimizer over its shard,
  /// all-gather of the weights) instead of all-reducing the gradients and
  /// updating every element on every replica. 0: off. Needs D > 1.
  int zeroStage = 0;
  /// --bucket-mb: the largest all-reduce bucket of data-parallel gradient
  /// sums, in MiB of f64 sums (a bucket otherwise closes with the action
  /// that completed its last gradient).
  double bucketMiB = 25;
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
/// Checks --data-parallel, --zero and --bucket-mb, their values (for a
/// Session loaded without parseRunOptions) and against the manifest
/// (checkTrainingOptions calls it): D >= 1, --zero 0 or 1, a bucket of
/// (0, 1e6] MiB; D > 1 needs a cpu training build with parameters and a
/// synchronous schedule (an asynchronous one updates each parameter as
/// its gradients arrive, which D replicas cannot agree on); --zero 1
/// needs D > 1. Throws RuntimeError naming the problem.
void checkDataParallelOptions(const Manifest &manifest,
                              const RunOptions &options);
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

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_RUNOPTIONS_H
