//===- RunnerInternal.h - shared internals of the launcher -----*- C++ -*-===//
//
// Declarations the files of pipeopt-run's launcher logic share (RunOptions,
// Inputs, RankControl, TrainingStep, Checkpoint, Pinning, RankLoop,
// Outputs, Session). Private to the runtime library: not installed.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_LIB_RUNNERINTERNAL_H
#define PIPEOPT_RUNTIME_LIB_RUNNERINTERNAL_H

#include "pipeopt/runtime/Runner.h"

#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace pipeopt {
namespace rt {
struct DataParallelRank;
namespace runner {

//===----------------------------------------------------------------------===//
// RankControl.cpp: the launcher's messages between ranks
//===----------------------------------------------------------------------===//

/// A rank's entry point in the model .so (pipeopt_rank_<r>).
using EntryFn = int32_t (*)();

/// The tags of the launcher's control messages.
enum ControlTag : int32_t {
  TagBarrier = 1,
  TagStats = 2,
  TagEvents = 3,
  TagOutputCount = 4,
  TagOutput = 5,
  TagModelEvidence = 6,
  TagReducedCount = 7,
  TagReduced = 8,
  TagGradient = 9,    ///< a rank's gradient accumulator of one parameter
  TagStepLoss = 10,   ///< a rank's loss sum, count and time of one step
  TagParamValue = 11, ///< a rank's copy of one parameter (gathering)
  TagParamState = 12, ///< its mean gradient and optimizer state (f64)
  TagStash = 13,      ///< a rank's peak stashed bytes
  TagDone = 14,       ///< rank 0 has every rank's results (the run's end)
  TagTimes = 15,      ///< a rank's kernel, gradient and update seconds
};

/// What rank 0 collects from every rank.
struct RankReport {
  std::vector<double> iterationS;
  std::vector<TraceEvent> events;
  std::map<std::pair<int, int>, HostTensor> outputs;
  /// Outputs with "reduce": "mean": output index -> the sum of the values
  /// the rank wrote in its last call (with --output-dir; the microbatches
  /// are in outputsWritten).
  std::map<int, std::vector<double>> reducedSums;
  /// What the program did, to check the manifest against: RankContext's
  /// microbatchedInputReads and inputsReadPerMicrobatch, and the
  /// (output index, microbatch or -1) the rank wrote.
  std::set<std::pair<int, int>> microbatchedInputReads;
  std::set<int> inputsReadPerMicrobatch;
  std::set<std::pair<int, int>> outputsWritten;
  /// pipeopt_rt_stash: whether the rank called it, and its peak total.
  bool stashUsed = false;
  int64_t stashPeak = 0;
  /// RankContext's kernelS, gradientS and updateS over the run.
  double kernelS = 0, gradientS = 0, updateS = 0;
};

/// Kinds of the (kind, index, microbatch) triples of a TagModelEvidence
/// message.
enum EvidenceKind : int32_t {
  EvidenceInputRead = 0,         ///< microbatched input read for microbatch
  EvidenceReadPerMicrobatch = 1, ///< input read for 2+ microbatches in a call
  EvidenceOutputWritten = 2,     ///< output written for microbatch (or -1)
};

/// The result of one local rank's run (GatheredParameter: Checkpoint.h).
struct RankResult {
  bool ok = true;
  /// The non-finite-loss warning was printed (once per run).
  bool warnedNonFinite = false;
  std::string error;
  std::vector<RankReport> reports; ///< rank 0 only: [rank]
  /// Training builds with parameters (rank 0 only): the per-step losses
  /// (NaN for a step without a loss output), the gathered parameters, the
  /// ranks' peak stashed bytes (-1: the rank never called pipeopt_rt_stash).
  std::vector<float> losses;
  std::map<int, GatheredParameter> parameters;
  std::vector<int64_t> stashPeak;
};

/// What `ctx`'s program read and wrote (the evidence part of a report).
RankReport evidenceOf(const RankContext &ctx);
/// Sends a control message (tag, payload, optional dtype/shape/index/
/// microbatch) to rank `dst`.
void sendControl(Communicator &c, int dst, int32_t tag, const void *data,
                 size_t bytes, double timeoutS, DType dtype = DType::I8,
                 Shape shape = {}, int index = -1, int mb = -1);
/// Receives control message `tag` from `src`; throws naming what came
/// instead.
Message recvControl(Communicator &c, int src, int32_t tag, double timeoutS);
/// All ranks meet; hub is rank 0.
void barrier(Communicator &c, double timeoutS);
/// Sends this rank's report to rank 0 (rank != 0).
void sendReport(Communicator &c, const RankContext &ctx,
                const std::vector<double> &iterS, bool withOutputs,
                double timeoutS);
/// Receives the report of rank `src` (rank 0).
RankReport recvReport(Communicator &c, int src, double timeoutS);
/// Sends a control message whose payload is `values` (f64).
void sendDoubles(Communicator &c, int dst, int32_t tag,
                 const std::vector<double> &values, int index, int step,
                 double timeoutS);
/// Receives a control message `tag` from `src` about parameter `index` in
/// step `step`; checks both against its header. `what` names the exchange
/// for errors.
Message recvAbout(Communicator &c, int src, int32_t tag, int index, int step,
                  double timeoutS, const std::string &what);

//===----------------------------------------------------------------------===//
// RunOptions.cpp
//===----------------------------------------------------------------------===//

/// The index of the output named "loss" with "reduce": "mean", or -1.
int lossOutput(const Manifest &m);

//===----------------------------------------------------------------------===//
// TrainingStep.cpp: gradient reduction and the optimizer step
//===----------------------------------------------------------------------===//

/// "parameter 1 ('w')".
std::string parameterName(const Manifest &m, int index);
/// "0, 1, 3".
std::string rankList(const std::vector<int> &ranks);
/// The end of a training step on one rank: the gradient exchange, the
/// checks and the optimizer update. Returns an error ("" if none); throws
/// on communication errors.
std::string reduceAndUpdate(RankContext &ctx, Communicator &comm,
                            const Manifest &m, int step, double timeoutS);
/// Rank 0 gathers every parameter (and with `withState` its optimizer
/// state) into `out`; the other ranks send theirs. Returns an error.
std::string gatherParameters(RankContext &ctx, Communicator &comm,
                             const Manifest &m, int step, bool withState,
                             double timeoutS,
                             std::map<int, GatheredParameter> *out);
/// ZeRO-1: creates `dp`'s ShardedOptimizer from the rank's full optimizer
/// state when it has none yet (the start of a run).
void loadShardedState(RankContext &ctx, DataParallelRank &dp);
/// gatherParameters, with data-parallel replicas (RankContext::
/// dataParallel): ZeRO-1 shards gathered first; only replica 0 gathers.
std::string gatherReplicaParameters(RankContext &ctx, Communicator &comm,
                                    const Manifest &m, int step, bool withState,
                                    double timeoutS,
                                    std::map<int, GatheredParameter> *out);
/// reduceAndUpdate, then the step's loss and time to rank 0, which prints
/// the progress line. Returns false (ctx failed) on an error.
bool endTrainingStep(RankContext &ctx, Communicator &comm, const Manifest &m,
                     const RunOptions &o, int step, bool measured,
                     int measuredStep, int totalSteps, double t0,
                     RankResult &result);

//===----------------------------------------------------------------------===//
// Checkpoint.cpp: checks of a --checkpoint-dir before a run
//===----------------------------------------------------------------------===//

/// A fresh run refuses a directory that already holds checkpoints.
void refuseExistingCheckpoints(const std::string &dir);
/// An exclusive flock on `dir`/.lock for the rest of the process.
void lockCheckpointDir(const std::string &dir);

//===----------------------------------------------------------------------===//
// Pinning.cpp: --pin-ranks
//===----------------------------------------------------------------------===//

/// slot of `cpuS` before the barrier of iteration pinAt and
/// reads all of them after it (the barrier orders the accesses), so every
/// thread computes the same assignment.
struct RankPinning {
  std::vector<int> ranks;   ///< the local ranks, in thread order
  std::vector<int> cpus;    ///< the usable CPU ids (affinity mask)
  std::vector<double> cpuS; ///< thread CPU seconds of the last warm-up
  std::vector<int> cpuOf;   ///< the CPU id each rank got (-1: not pinned)
  std::vector<std::string> errors; ///< per rank: why it was not pinned
  /// The iteration from which the ranks are pinned: the first measured
  /// one after a warm-up, else the second (training has no warm-up).
  int pinAt = 1;
};

/// " (1.23 ms)".
std::string msInParens(double s);
/// `x` as printf's %.9g, for values in error messages (std::to_string would
/// print -1e-30 as -0.000000).
std::string numberText(double x);
/// The calling thread's CPU time, seconds.
double threadCpuSeconds();
/// Pins the calling thread, local rank `slot` of `p`, to its core of the
/// LPT assignment of p.cpuS.
void pinThisRank(RankPinning &p, size_t slot);

//===----------------------------------------------------------------------===//
// RankLoop.cpp: one rank's run
//===----------------------------------------------------------------------===//

/// What the main thread can see of a rank running in another thread (the
/// loopback watchdog of pipeoptRunMain): where it is, under `mu`, and its
/// context while it runs.
struct RankProgress {
  std::mutex mu;
  std::string phase;
  const RankContext *ctx = nullptr; ///< while runRank runs
};

/// runRank's "phase" (what the rank is doing, for its errors), published to
/// a RankProgress when there is one.
struct PhaseText {
  RankProgress *progress = nullptr;
  std::string text;
  PhaseText &operator=(std::string t) {
    if (progress) {
      std::lock_guard<std::mutex> lock(progress->mu);
      progress->phase = t;
    }
    text = std::move(t);
    return *this;
  }
};

/// "rank 1 (stage 1)", "rank 0 (stages 0, 3)", or "rank 2".
std::string rankLabel(const Manifest &m, int rank);
/// Runs one rank to completion (in the calling thread). `first`: the
/// training steps done before this run. `parameters`: the rank's
/// parameter state (training builds with parameters: value and optimizer
/// state, as RankContext::initParameters creates it, then carried from
/// run to run); it is moved into the rank's context for the run and moved
/// back at its end (cuda builds: the device copies are refreshed to the
/// host and released first), also after a failure (then it is partial).
/// `gather`: rank 0 gathers every parameter and its optimizer state into
/// result.parameters at the end. With o.iterations == 0 and o.warmup == 0
/// the run only gathers (Session::synchronize): no report to rank 0.
/// Rank 0's result.losses holds the losses of the steps before this run
/// on entry; the run appends its steps'. `collectOutputs`: the ranks send
/// their outputs to rank 0 (--output-dir, or a session that reads them
/// back). `dataParallel` (--data-parallel D > 1): `rank` is the rank in
/// its replica's pipeline and `comm` that pipeline's communicator; the
/// object (kept by the caller from run to run) holds the data-parallel
/// group and what the first step learned (DataParallel.h).
void runRank(int rank, Communicator &comm, const Manifest &m,
             const InputStore &inputs, EntryFn entry, const RunOptions &o,
             int first, std::map<int, ParameterState> &parameters, bool gather,
             const Device *device, RankResult &result, bool collectOutputs,
             RankPinning *pinning = nullptr, RankProgress *progress = nullptr,
             DataParallelRank *dataParallel = nullptr);
/// Loopback: after a rank failed, how long the others get to return.
double loopbackGraceS(const RunOptions &o);
/// What the loopback watchdog says about a rank that did not return.
std::string describeStuckRank(const Manifest &m, int rank,
                              RankProgress &progress, double graceS);

//===----------------------------------------------------------------------===//
// Outputs.cpp
//===----------------------------------------------------------------------===//

/// The median (0 for none).
double median(std::vector<double> v);
/// Every text file: checked and atomic (writeFileAtomic).
void writeText(const std::string &path, const std::string &text,
               FollowLinks follow);
/// A training build's parameters, optimizer state and per-step losses into
/// o.outputDir.
void writeTrainingFiles(const Manifest &m, const RunOptions &o,
                        const RankResult &result);
/// Output `mo` as --output-dir writes it, put together from the ranks'
/// reports (microbatched: [M, ...shape]; "reduce": "mean": the mean).
/// Throws RuntimeError when a rank did not send it.
HostTensor assembleOutput(const Manifest &m, const ManifestOutput &mo,
                          const std::vector<RankReport> &reports);
/// Checks what the ranks reported against the manifest (every output
/// written for every microbatch, microbatched inputs read as such).
void checkReports(const Manifest &m, const RunOptions &o,
                  const std::vector<RankReport> &reports);
/// After every rank finished: the checks, then outputs, trace, profile and
/// the summary (rank 0).
void finish(const Manifest &m, const RunOptions &o, const RankResult &result,
            const std::string &commName, std::ostream &out);
/// Before step 1: the output and checkpoint locations can be written.
void checkOutputLocations(const RunOptions &o);

//===----------------------------------------------------------------------===//
// Session.cpp
//===----------------------------------------------------------------------===//

/// "pipeopt-run: error: <message>" with a single write(2).
void printError(const std::string &message);

} // namespace runner
} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_LIB_RUNNERINTERNAL_H
