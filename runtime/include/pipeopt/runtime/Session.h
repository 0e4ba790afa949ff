//===- Session.h - Load a compiled build, run it, read it back -*- C++ -*-===//
//
// The runtime as a library: a Session loads a build (the model .so and its
// manifest), takes its inputs by name from memory or .npy files, runs
// inference iterations or training steps (the optimizer included) over
// the build's ranks, and gives the outputs and weights back by name; it
// writes checkpoints and resumes from them. pipeopt-run (pipeoptRunMain,
// Runner.h) is a thin client: parse options, load, set inputs, run, write
// the results. See docs/RuntimeSession.md.
//
// Training state: each rank keeps its own parameters and optimizer state
// from one run() to the next (each process its own ranks': loopback and
// MPI alike), so a training loop may call run(1) once per step. After a
// run, rank 0 gathers a copy of every parameter for weight(),
// writeCheckpoint() and writeResults(); setGatherAfterRun(false) skips
// that copy, and synchronize() makes it when needed.
//
// With one process per rank (MPI), the members documented as collective
// (run, synchronize, setWeight, setOptimizerState) must be called by every
// process, in the same order and with the same arguments.
//
// Errors are returned as a Status, never by exiting the process, with one
// exception: when a loopback rank thread is stuck (it does not return
// within min(--timeout-s, 10) s after another rank failed), the process
// ends with std::_Exit(1) after printing the errors, as pipeopt-run does:
// the stuck thread still uses the session's state and cannot be stopped.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_SESSION_H
#define PIPEOPT_RUNTIME_SESSION_H

#include "pipeopt/runtime/Checkpoint.h"
#include "pipeopt/runtime/Manifest.h"
#include "pipeopt/runtime/Npy.h"
#include "pipeopt/runtime/RunOptions.h"
#include "pipeopt/runtime/Types.h"

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace pipeopt {
namespace rt {

/// The outcome of a Session call: success, or an error with a message and
/// the exit code pipeopt-run gives it (1: a run-time error, such as a rank
/// that failed; 2: a usage or setup error, such as a missing file, an
/// unknown input name or a wrong shape).
class Status {
public:
  /// Success.
  Status() = default;
  /// An error; `code` is 1 or 2 (see above).
  static Status error(int code, std::string message) {
    Status s;
    s.exitCode = code;
    s.text = std::move(message);
    return s;
  }
  /// True on success.
  bool ok() const { return exitCode == 0; }
  explicit operator bool() const { return ok(); }
  /// 0 on success, else 1 or 2.
  int code() const { return exitCode; }
  /// The error message ("" on success), without a "pipeopt-run: error: "
  /// prefix.
  const std::string &message() const { return text; }

private:
  int exitCode = 0;
  std::string text;
};

/// One loaded build. Not copyable; one per process when it uses MPI (the
/// session initializes MPI in load() and finalizes it when destroyed).
/// Every member that returns a Status leaves the session usable after an
/// error of code 2 (a bad input, name or path): fix the cause and call it
/// again.
class Session {
public:
  Session();
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  /// Loads the build `options.modelPath` with its manifest
  /// (`options.manifestPath`; RunOptions.h documents every field: the
  /// communicator `comm`, `timeoutS`, `threads`, `pinRanks`, `devices`,
  /// `seed`, `checkpointDir` / `checkpointEvery`, `outputDir`, `tracePath`,
  /// `profilePath`, `quiet`, `warmup`, `iterations`). Decides which ranks
  /// this process runs (all for loopback; its own with one process per
  /// rank, initializing MPI with `argc`/`argv`, which may be null), checks
  /// the .so against the manifest and the options against both, checks
  /// that the output and checkpoint locations are writable (in the process
  /// of rank 0), and resolves every rank's entry point. Errors (code 2):
  /// a missing or damaged .so or manifest, a model that does not match its
  /// manifest, options the build cannot take, an unwritable location, a
  /// loopback run started by a launcher as one of several processes. Call
  /// once; a second call returns an error.
  Status load(const RunOptions &options, int *argc = nullptr,
              char ***argv = nullptr);

  /// True after a successful load().
  bool loaded() const;
  /// The manifest (valid after a successful load()).
  const Manifest &manifest() const;
  /// True when load() initialized MPI (--comm mpi, or nccl under mpirun);
  /// a launcher that gives up after an error then calls mpiAbort
  /// (Communicator.h), as pipeopt-run does. Valid also after a failed
  /// load().
  bool usesMpi() const;
  /// True when this process runs rank 0, which gathers the outputs, the
  /// weights and the losses: output(), weight(), losses(), writeResults()
  /// and writeCheckpoint() only have data there.
  bool hasRank0() const;

  /// Sets model input `name` (the manifest's "name") or `index` (its
  /// "index") to `tensor` (dtype as in the manifest). A microbatched input
  /// takes [M, ...shape] (M = num_microbatches, shape: the manifest's
  /// per-microbatch shape), [M*d0, d1, ...] (the whole batch, split along
  /// dim 0), or a dataset [N, M, ...shape] / [N, M*d0, d1, ...] of one
  /// slice per step (N: options.iterations, the steps the session will
  /// run in all); a shared input takes exactly its shape. Errors (code 2):
  /// an unknown name or index, a wrong dtype or shape, a class index out of
  /// range (named in the message). Replaces an earlier value or file.
  Status setInput(const std::string &name, HostTensor tensor);
  Status setInput(int index, HostTensor tensor);
  /// Sets input `name` from one .npy file, read and checked at once (the
  /// same forms as setInput). Errors (code 2): unknown name, a missing or
  /// malformed file, a wrong dtype or shape.
  Status setInputFromNpy(const std::string &name, const std::string &path);
  /// Sets every input that the directory or .npz archive `dirOrNpz` holds
  /// (readInputSet in Inputs.h: a directory's `*.npy` files or an .npz's
  /// arrays, as numpy.savez / savez_compressed write them, each named by
  /// input index, "3", "arg_3", "arg3" or "input_3", with or without
  /// ".npy", or by the manifest's "name"), as setInput does with each, in
  /// the same forms; an input that options.inputFiles names keeps its file
  /// (pipeopt-run's --input overrides --inputs); a later setInput replaces
  /// an entry. All or nothing: on an error no input changes. Errors (code
  /// 2), naming the path and entry: a missing path, a damaged archive, an
  /// entry that names no input, two entries for one input, an entry that is
  /// not a valid .npy (or encrypted, or compressed with a method libzip
  /// cannot read), a wrong dtype or shape, a class index out of range.
  Status setInputsFrom(const std::string &dirOrNpz);
  /// Uses `seed`'s pseudo-random data (randomInput in Inputs.h) for every
  /// input that is set neither by setInput nor by options.inputFiles. Off
  /// by default: then such an input is an error of run() (code 2, "input
  /// 1 ('w') of f32[3] was not set ...").
  void setRandomInputs(bool enabled, uint64_t seed);
  /// Builds the inputs of the next run from what was set (run() calls it
  /// when needed); reports a missing input or a bad options.inputFiles
  /// entry (code 2).
  Status prepareInputs();

  /// Continues from the checkpoint in `dir` (a checkpoint directory: the
  /// one `dir`/latest names, or the newest that verifies; see
  /// readCheckpoint in Checkpoint.h): the weights, the optimizer state,
  /// the losses and the step count, replacing the ranks' state (and what
  /// setWeight / setOptimizerState set) at the next run. Under MPI every
  /// process calls it (each reads the checkpoint for its ranks). `notes`
  /// (if given) receives what was skipped on the way. Errors (code 2): not
  /// a training build with parameters, no checkpoint that verifies, one
  /// that does not fit the manifest.
  Status resume(const std::string &dir,
                std::vector<std::string> *notes = nullptr);
  /// Writes the current weights, optimizer state and losses as the
  /// checkpoint of step stepsDone() into `dir` (atomically, like
  /// --checkpoint-dir; `dir` is created). It needs rank 0's gathered copy
  /// of the parameters: after a run with setGatherAfterRun(false) a
  /// loopback session gathers it first (synchronize()); an MPI session
  /// returns an error (code 2) asking to call synchronize() in every
  /// process first. Errors (code 2): not a training build with parameters,
  /// nothing run or resumed yet, not the process of rank 0, the copy not
  /// gathered (MPI); (code 1) the directory cannot be written.
  Status writeCheckpoint(const std::string &dir) const;

  /// Whether the ranks send their outputs to rank 0 after a run, for
  /// output() (default: true). pipeopt-run turns it off unless it writes
  /// --output-dir.
  void setCollectOutputs(bool enabled);

  /// Whether rank 0 gathers every parameter and its optimizer state at the
  /// end of each run() (default: true; pipeopt-run turns it off unless it
  /// writes --output-dir or a parameter has copies on several ranks). Off, a
  /// training loop of run(1) copies no weights between steps; weight(),
  /// optimizerState(), writeCheckpoint() and writeResults() (with
  /// options.outputDir) then need synchronize() first, which a loopback
  /// session does by itself (an MPI session returns an error instead).
  /// The losses reach rank 0 either way.
  void setGatherAfterRun(bool enabled);
  /// Whether the inputs' copies of the parameters are freed once the
  /// ranks' parameter state has been made from them (at the first run(),
  /// setWeight() or the like; default: false). The rank state is then the
  /// only copy of the weights: for f32 parameters 4 bytes per weight less
  /// (GPT-2 8 x 512: 196 MiB). Nothing the session does afterwards reads
  /// them: a failed run continues from the gathered state or loses the
  /// state (as without this), resume() and setWeight() replace it. A later
  /// setInput() of a parameter stores a new copy that the rank state does
  /// not read, as always. pipeopt-run turns it on.
  void setReleaseParameterInputs(bool enabled);

  /// Runs `steps` measured iterations (>= 1) after options.warmup
  /// unmeasured ones: an inference build's forward passes, or a training
  /// build's steps (gradients, their reduction over the ranks of each
  /// parameter and the optimizer update), continuing from the weights,
  /// optimizer state and step count of the previous run(), resume(),
  /// setWeight() or setOptimizerState(): each rank keeps its state between
  /// runs (moved, not copied), so n calls of run(1) train exactly as one
  /// run(n) (the same weights, optimizer state and losses, bit for bit).
  /// Collective under MPI. Checkpoints are written as
  /// options.checkpointDir/checkpointEvery say. Unless options.quiet,
  /// training steps print a progress line to stdout. Errors: code 2 when
  /// the inputs are incomplete, the communicators cannot be created, or a
  /// failed run lost the training state (below); code 1 when a rank fails
  /// (rankErrors() has every failed rank's message, the Status the
  /// first). After a failed training run a loopback session continues from
  /// the state gathered after the last successful run (with
  /// setGatherAfterRun(true)); otherwise the state is lost and run()
  /// returns code 2 until resume(). An MPI session ends after a failure
  /// (abandonAfterFailure, mpiAbort).
  Status run(int steps);
  /// run(1).
  Status step() { return run(1); }
  /// Gathers every parameter and its optimizer state to rank 0 (after runs
  /// with setGatherAfterRun(false), before weight(), optimizerState(),
  /// writeCheckpoint()); does nothing when rank 0's copy is current or
  /// nothing has been run, set or resumed. A collective: under MPI every
  /// process must call it (the one of rank 0 receives, the others send).
  /// Errors: code 1 when a rank fails (rankErrors()); code 2 when the
  /// state was lost.
  Status synchronize();
  /// The measured steps done so far (with resume(): counted from the
  /// checkpoint's).
  int stepsDone() const;
  /// After a run() that failed with code 1: the error of every local rank
  /// that failed, in rank order.
  const std::vector<std::string> &rankErrors() const;
  /// After a failed run() of an MPI session: answers the peers' status
  /// queries with this rank's error for a grace period (statusGraceS),
  /// then releases the communicators; the caller then calls mpiAbort(1).
  void abandonAfterFailure();

  /// The value of output `name` or `index` of the last run (rank 0, with
  /// setCollectOutputs(true)): microbatched outputs [M, ...shape], outputs
  /// with "reduce": "mean" their mean over the microbatches of the last
  /// step, others their shape. Errors (code 2): unknown output, no run yet,
  /// outputs not collected, not the process of rank 0.
  Status output(const std::string &name, HostTensor &out) const;
  Status output(int index, HostTensor &out) const;
  /// The current value of parameter `name` (an input of a training build
  /// with "parameters"): after a run(), resume() or setWeight() the
  /// current weight, else an error (code 2; also: unknown name, not a
  /// parameter, not the process of rank 0, the training state lost).
  Status weight(const std::string &name, HostTensor &out) const;
  /// The same for the parameter at input `index` (models whose inputs have
  /// no names, e.g. torch exports); out of range is an error (code 2).
  /// weight() reads rank 0's gathered copy: see setGatherAfterRun (a
  /// loopback session gathers a stale copy first; under MPI a stale copy
  /// is an error of code 2 that asks for synchronize() in every process).
  Status weight(int index, HostTensor &out) const;
  /// Replaces the value of parameter `name` / input `index` on every rank
  /// that holds it (tied weights and Chimera's replicas included), for the
  /// next run(); the optimizer state stays. `value` must have the input's
  /// dtype and shape. Allowed after load(): before the first run it
  /// overrides the input's value (then every input must be set, as for
  /// run(): the ranks' state is created from them); once the ranks have
  /// their state (after the first run, setWeight or setOptimizerState),
  /// setInput of a parameter no longer changes its weight: use setWeight.
  /// A resume() afterwards replaces it. Collective under MPI: every
  /// process calls it with the same value (each sets its own ranks').
  /// Errors (code 2): unknown name or index, not a parameter, a wrong
  /// dtype or shape (the message names the parameter), incomplete inputs.
  Status setWeight(const std::string &name, const HostTensor &value);
  Status setWeight(int index, const HostTensor &value);
  /// The optimizer state of parameter `name` / input `index` on rank 0, as
  /// weight() reads it (the same rules on staleness): `first` (momentum's
  /// buffer, AdamW's first moment) and `second` (AdamW's second moment),
  /// f64 of the parameter's shape, or empty (f64[0], no data) for an
  /// optimizer without that moment or before the first update; `step`: the
  /// updates applied so far.
  Status optimizerState(const std::string &name, HostTensor &first,
                        HostTensor &second, int64_t &step) const;
  Status optimizerState(int index, HostTensor &first, HostTensor &second,
                        int64_t &step) const;
  /// Replaces the optimizer state of parameter `name` / input `index` on
  /// every rank that holds it, like setWeight (the same rules, collective
  /// under MPI). `first` / `second`: f64 of the parameter's shape, or
  /// empty (no data: zeros, as before the first update); a moment the
  /// optimizer does not keep must be empty. `step` (>= 0): the updates
  /// applied so far (AdamW's bias correction). Errors (code 2): as
  /// setWeight, a wrong dtype or shape, a moment the optimizer does not
  /// keep, a negative step, a moment element that is not finite (or beyond
  /// f32's range for f32 state), a negative second moment. A parameter
  /// whose state is kept in f32 (f32 parameters of cpu builds:
  /// optimizerStateDType in Optimizer.h) stores each value rounded once to
  /// f32; optimizerState() returns the stored values, exactly, as f64.
  Status setOptimizerState(const std::string &name, const HostTensor &first,
                           const HostTensor &second, int64_t step);
  Status setOptimizerState(int index, const HostTensor &first,
                           const HostTensor &second, int64_t step);
  /// The loss of every measured training step so far (NaN for a step
  /// without a "loss" output); training builds with parameters, rank 0.
  const std::vector<float> &losses() const;

  /// What pipeopt-run does after a successful run, in the process of rank
  /// 0 (elsewhere it does nothing): checks what the ranks reported against
  /// the manifest, writes options.outputDir (a training build's weights:
  /// rank 0's gathered copy, as weight() reads it), the trace and the
  /// profile, and prints the summary lines to `summary` (unless
  /// options.quiet). Errors (code 1) name the problem; code 2: the
  /// gathered copy is stale under MPI (see weight()).
  Status writeResults(std::ostream &summary);

  struct Impl;

private:
  std::unique_ptr<Impl> impl;
};

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_SESSION_H
