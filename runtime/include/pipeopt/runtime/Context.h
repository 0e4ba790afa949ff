//===- Context.h - Per-rank state behind the C ABI --------------*- C++ -*-===//
//
// A RankContext is what the C ABI functions in pipeopt_runtime.h operate on:
// the rank's communicator, the model inputs, the outputs it produced, the
// measured actions, and the first error (after which the context is
// poisoned). It is installed per thread (ScopedContext) by the launcher.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_CONTEXT_H
#define PIPEOPT_RUNTIME_CONTEXT_H

#include "pipeopt/runtime/Communicator.h"
#include "pipeopt/runtime/Manifest.h"
#include "pipeopt/runtime/MemRefView.h"
#include "pipeopt/runtime/Npy.h"
#include "pipeopt/runtime/Optimizer.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace pipeopt {
namespace rt {

class Device;
struct DeviceParameterState;
struct DataParallelRank;

/// Model inputs shared (read-only) by all ranks of a process.
class InputStore {
public:
  /// Sets input `meta.index`. For a microbatched input `tensor` must have
  /// shape [M, ...meta.shape]; otherwise exactly meta.shape. Throws
  /// RuntimeError on a dtype or shape mismatch.
  /// With `dataSteps` > 0 (a dataset, microbatched inputs only) `tensor`
  /// holds one [M, ...meta.shape] slice per step: [dataSteps, M, ...].
  void set(const ManifestInput &meta, int numMicrobatches, HostTensor tensor,
           int dataSteps = 0);
  /// Input `index` or nullptr.
  const std::pair<ManifestInput, HostTensor> *find(int index) const;
  /// The number of steps of input `index` if it is a dataset, else 0.
  int dataSteps(int index) const {
    auto it = steps.find(index);
    return it == steps.end() ? 0 : it->second;
  }
  /// Number of inputs set.
  size_t size() const { return entries.size(); }
  /// Frees the data of input `index` (if set); find() still returns its
  /// entry, whose tensor then has its dtype and shape but no bytes.
  void releaseData(int index);

private:
  std::map<int, std::pair<ManifestInput, HostTensor>> entries;
  std::map<int, int> steps;
};

/// Kinds of TraceEvent besides the actions (pipeopt_rt_action_kind, 0-3):
/// the runtime calls a program makes around them, recorded when the run
/// writes a trace or a profile (RankContext::recordCalls).
enum TraceCallKind : int {
  TraceSend = 16,   ///< pipeopt_rt_send_*: copying the message out
  TraceRecv = 17,   ///< pipeopt_rt_recv_*: waiting for it and copying it in
  TraceInput = 18,  ///< pipeopt_rt_input_*: copying a model input in
  TraceOutput = 19, ///< pipeopt_rt_output_*: copying a model output out
};

/// True for the TraceCallKind values.
inline bool isTraceCall(int kind) {
  return kind >= TraceSend && kind <= TraceOutput;
}

/// "send", "recv", "input" or "output" for a TraceCallKind; "call" else.
inline const char *traceCallName(int kind) {
  switch (kind) {
  case TraceSend:
    return "send";
  case TraceRecv:
    return "recv";
  case TraceInput:
    return "input";
  case TraceOutput:
    return "output";
  default:
    return "call";
  }
}

/// One measured action or runtime call (times in seconds since the
/// context's origin).
struct TraceEvent {
  int kind = 0;       ///< pipeopt_rt_action_kind or TraceCallKind
  int stage = 0;      ///< the action's stage; send: source stage, recv:
                      ///< destination stage; input/output: -1
  int microbatch = 0; ///< -1 for a shared input or output
  int iteration = 0;
  double beginS = 0;
  double endS = 0;
  /// Calls: the peer rank (send, recv) or the model argument / result
  /// index (input, output); -1 for actions.
  int peer = -1;
  /// Calls: bytes copied; 0 for actions.
  int64_t bytes = 0;
};

/// This call's running sum of an output with "reduce": "mean" on one rank:
/// the values of the microbatches written so far, added in double
/// precision (Reduce.h), and which microbatches they were.
struct ReducedOutput {
  std::vector<double> sum; ///< numElements(shape) elements
  std::set<int> microbatches;
};

/// One rank's copy of a trainable parameter of a training build (manifest
/// "parameters"): its current value, this step's gradient accumulator and
/// its optimizer state. Every rank in the parameter's "ranks" has one.
struct ParameterState {
  const ManifestParameter *param = nullptr;
  const ManifestInput *input = nullptr;
  /// The rank's current weights (dtype and shape of the input); what
  /// pipeopt_rt_input_* of the parameter's index reads.
  HostTensor value;
  /// This step's sum of the reported contributions (pipeopt_rt_gradient_*),
  /// in double, and the microbatches they were reported for. Reset by
  /// beginCall(). Made when first needed: read it through gradientSumOf().
  std::vector<double> gradSum;
  std::set<int> microbatches;
  /// The step's first contribution, as reported, while it is the only one
  /// (an f32 gradient of a build of one microbatch per step, cpu, f32
  /// optimizer state, synchronous updates, no data parallelism: the
  /// unpartitioned training step). A sum of one value is that value, so
  /// it stays in f32 (4 bytes per weight instead of the sum's 8) and the
  /// optimizer reads it (optimizerStepTensor's f32 overload) with the bits
  /// the f64 sum would give; a second contribution moves it into gradSum
  /// (gradientSumOf). Emptied by beginCall(), which keeps its capacity.
  std::vector<float> soleGradient;
  /// The last step's mean gradient g over all ranks of the parameter (after
  /// the reduction), for --save-grads; empty unless the rank's context
  /// keeps mean gradients (RankContext::keepMeanGradients).
  std::vector<double> meanGrad;
  OptimizerState optimizer;
  /// Asynchronous updates ("update_every" k): contributions in gradSum
  /// since the last update (an update happens when it reaches k).
  int pending = 0;
  /// cuda builds (RankContext::device set): the device copies of the
  /// value, the gradient sum and the optimizer state (Device.h), which are
  /// then the authoritative ones; `value`, `meanGrad` and `optimizer` are
  /// refreshed from them only when the launcher needs them
  /// (refreshHostParameter), `gradSum` is unused. Null for cpu builds.
  std::shared_ptr<DeviceParameterState> device;
};

/// `st`'s f64 gradient sum of this step: made (zeros, numElements of the
/// value) if it does not exist yet, holding the sole f32 gradient if one
/// is kept (which then goes).
std::vector<double> &gradientSumOf(ParameterState &st);

/// State of one rank.
class RankContext {
public:
  using Clock = std::chrono::steady_clock;

  /// `manifest` and `inputs` may be null (pure communication tests); the
  /// referenced objects must outlive the context.
  RankContext(int rank, Communicator *comm, const Manifest *manifest,
              const InputStore *inputs, double timeoutS);

  int rank;
  Communicator *comm;
  const Manifest *manifest;
  const InputStore *inputs;
  double timeoutS; ///< per blocking communication call, seconds
  /// cuda builds: the device this rank's thread is bound to; every memref
  /// the program passes is its memory (Device.h, MemorySpace). Null for cpu
  /// builds. Not owned.
  const Device *device = nullptr;

  /// Iteration number stamped on trace events.
  int iteration = 0;
  /// The step whose slice a dataset input gives (InputStore::dataSteps):
  /// the measured step, counted over the whole training from 0.
  int dataStep = 0;
  /// Time origin of trace events.
  Clock::time_point origin = Clock::now();
  /// Measured actions (and, with recordCalls, runtime calls), in order.
  std::vector<TraceEvent> events;
  /// Whether send, recv, input and output calls are recorded as events too
  /// (pipeopt-run sets it when it writes a trace or a profile).
  bool recordCalls = false;
  /// Whether a training step keeps each parameter's mean gradient
  /// (ParameterState::meanGrad) after its update, for --save-grads. Without
  /// it the buffer that held the mean takes the next step's sums: one
  /// buffer of 8 bytes per weight instead of two.
  bool keepMeanGradients = false;
  /// Appends a call event from `beginS` to now (when recordCalls).
  void recordCall(int kind, int stage, int microbatch, int peer, int64_t bytes,
                  double beginS);
  /// Outputs produced by this rank: (resultIndex, microbatch or -1) ->
  /// tensor. Later iterations overwrite earlier ones. Outputs with "reduce":
  /// "mean" are not stored here but summed in reducedOutputs.
  std::map<std::pair<int, int>, HostTensor> outputs;
  /// Per output with "reduce": "mean", the sum of the values this rank
  /// wrote in the current (after the run: the last) call. Reset by
  /// beginCall(); rank 0 adds the ranks' sums and divides by M.
  std::map<int, ReducedOutput> reducedOutputs;

  /// Records the first error ("rank R: " is prepended) and poisons.
  void fail(const std::string &message);
  bool isPoisoned() const { return poisoned; }
  const std::string &errorMessage() const { return error; }
  /// Seconds since origin.
  double now() const;

  /// Open action (begin without end), kind < 0 if none.
  int openKind = -1, openStage = -1, openMicrobatch = -1;
  double openBeginS = 0;

  /// Checks of the program against its manifest (docs/Runtime.md,
  /// "What the manifest is checked against"), per call of the entry point:
  /// actions begun so far (the index into the manifest's `actions` of this
  /// rank) and, per input that is not microbatched, the microbatch it was
  /// first read for. Reset by beginCall().
  size_t actionsBegun = 0;
  std::map<int, int64_t> sharedInputReads;
  /// Per output that is not microbatched, the microbatch it was first
  /// written for in this call (reset by beginCall()).
  std::map<int, int64_t> sharedOutputWrites;
  /// Per microbatched input, the microbatch it was first read for in this
  /// call (reset by beginCall()).
  std::map<int, int64_t> microbatchedInputFirstRead;
  /// Over all calls: (input index, microbatch) of every read of a
  /// microbatched input, and the microbatched inputs that some call read
  /// for more than one microbatch. The launcher puts the ranks' sets
  /// together to find inputs that the program reads once and shares.
  std::set<std::pair<int, int>> microbatchedInputReads;
  std::set<int> inputsReadPerMicrobatch;
  /// Training builds: this rank's copies of the parameters whose "ranks"
  /// include it, by input index (initParameters()).
  std::map<int, ParameterState> parameters;
  /// Creates `parameters` from the manifest and the inputs (the initial
  /// weights). Needs both; a no-op for a manifest without parameters.
  /// Throws RuntimeError if a parameter's input was not loaded.
  void initParameters();

  /// Activations stashed for later backward actions (pipeopt_rt_stash):
  /// (stage, microbatch) -> bytes, their total now and its peak over the
  /// run, and whether the program called pipeopt_rt_stash at all.
  std::map<std::pair<int, int>, int64_t> stash;
  int64_t stashBytes = 0;
  int64_t stashPeakBytes = 0;
  bool stashUsed = false;

  /// Seconds of the measured iterations (iteration >= 0) spent in the
  /// library kernels (pipeopt_rt_matmul_* / conv2d_*: OpenBLAS GEMM and
  /// im2col), in adding gradients to their sums (pipeopt_rt_gradient_*) and
  /// in the end-of-step update (the gradient exchange between ranks, the
  /// data-parallel wait and the optimizer). The profile's kernel_s,
  /// gradient_s and update_s (docs/Runtime.md, "Profile JSON").
  double kernelS = 0, gradientS = 0, updateS = 0;
  /// Adds `seconds` to `total` if this is a measured iteration.
  void addTime(double &total, double seconds) {
    if (iteration >= 0)
      total += seconds;
  }

  /// With --data-parallel D > 1: this rank's part in its data-parallel
  /// group (the gradient all-reduce buckets; runtime/lib/DataParallel.h).
  /// Null otherwise. Not owned.
  DataParallelRank *dataParallel = nullptr;

  /// To be called before every call of the entry point (zeroes the
  /// gradient sums, on the device in device mode).
  void beginCall();

private:
  bool poisoned = false;
  std::string error;
};

/// The calling thread's current context (nullptr if none).
RankContext *currentContext();
/// Installs `ctx` as the calling thread's context for the scope's lifetime.
class ScopedContext {
public:
  explicit ScopedContext(RankContext *ctx);
  ~ScopedContext();
  ScopedContext(const ScopedContext &) = delete;
  ScopedContext &operator=(const ScopedContext &) = delete;

private:
  RankContext *previous;
};

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_CONTEXT_H
