//===- RankLoop.cpp - one rank's run ----------------------------*- C++ -*-===//
//
// runRank: one rank's run of the schedule (start barrier, the measured and
// warm-up iterations, training steps and checkpoints, the report to rank
// 0), and what the loopback watchdog says about a rank that is stuck.
//
//===----------------------------------------------------------------------===//

#include "DataParallel.h"
#include "RunnerInternal.h"
#include "ShardedOptimizer.h"
#include "pipeopt/runtime/Device.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <sstream>

namespace pipeopt {
namespace rt {

using namespace runner;

namespace runner {

/// "rank 1 (stage 1)", "rank 0 (stages 0, 3)", or "rank 2" when the
/// manifest places no stage on it.
std::string rankLabel(const Manifest &m, int rank) {
  std::set<int> stages;
  for (const auto &pipeline : m.stageRankPipelines)
    for (size_t s = 0; s < pipeline.size(); ++s)
      if (pipeline[s] == rank)
        stages.insert(int(s));
  if (stages.empty() && size_t(rank) < m.actions.size())
    for (const ManifestAction &a : m.actions[size_t(rank)])
      stages.insert(a.stage);
  std::string r = "rank " + std::to_string(rank);
  if (stages.empty())
    return r;
  r += stages.size() == 1 ? " (stage " : " (stages ";
  bool first = true;
  for (int s : stages) {
    r += (first ? "" : ", ") + std::to_string(s);
    first = false;
  }
  return r + ")";
}

/// Runs one rank to completion (in the calling thread). With `pinning`
/// (an in-process rank of --pin-ranks), the rank is pinned to one core
/// from the first measured iteration on.
void runRank(int rank, Communicator &comm, const Manifest &m,
             const InputStore &inputs, EntryFn entry, const RunOptions &o,
             int first, std::map<int, ParameterState> &parameters, bool gather,
             const Device *device, RankResult &result, bool collectOutputs,
             RankPinning *pinning, RankProgress *progress,
             DataParallelRank *dataParallel) {
  RankContext ctx(rank, &comm, &m, &inputs, o.timeoutS);
  ctx.device = device;
  ctx.dataParallel = dataParallel;
  // The rank's number in the whole run (replica d's rank r is d * P + r).
  const int globalRank =
      dataParallel ? dataParallel->replica * m.numRanks + rank : rank;
  ctx.recordCalls = !o.tracePath.empty() || !o.profilePath.empty();
  ctx.keepMeanGradients = o.saveGrads;
  ScopedContext scope(&ctx);
  std::vector<double> iterS;
  PhaseText phase{progress, ""};
  phase = "at the start barrier";
  if (progress) {
    std::lock_guard<std::mutex> lock(progress->mu);
    progress->ctx = &ctx;
  }
  struct Unpublish {
    RankProgress *progress;
    ~Unpublish() {
      if (progress) {
        std::lock_guard<std::mutex> lock(progress->mu);
        progress->ctx = nullptr;
      }
    }
  } unpublish{progress};
  bool bound = false;
  // Only gathers the parameters (Session::synchronize).
  const bool gatherOnly = o.iterations == 0 && o.warmup == 0;
  // The rank's parameter state, carried from the previous run (no copy).
  ctx.parameters = std::move(parameters);
  if (dataParallel) {
    dataParallel->inFlightS.clear();
    dataParallel->waitS.clear();
  }
  try {
    if (device) {
      phase = "binding the rank to CUDA device " + std::to_string(device->id());
      device->bindThread(rank);
      bound = true;
    }
    phase = "setting up the parameters";
    if (m.hasParameters && ctx.parameters.empty()) {
      // A caller that carries no state: the initial weights.
      ctx.initParameters();
    }
    initDeviceParameters(ctx); // cuda builds: weights and state on the device
    if (dataParallel && dataParallel->zeroStage > 0)
      loadShardedState(ctx, *dataParallel);
    phase = "at the start barrier";
    if (!gatherOnly)
      barrier(comm, o.timeoutS);
    ctx.origin = RankContext::Clock::now();
    // --pin-ranks: this rank's slot in `pinning`.
    const size_t slot =
        pinning ? size_t(std::find(pinning->ranks.begin(), pinning->ranks.end(),
                                   globalRank) -
                         pinning->ranks.begin())
                : 0;
    for (int it = 0; it < o.warmup + o.iterations; ++it) {
      bool measured = it >= o.warmup;
      // Iteration 0 starts right after the start barrier.
      if (it > 0) {
        phase = "at the barrier before iteration " + std::to_string(it);
        barrier(comm, o.timeoutS);
      }
      if (pinning && it == pinning->pinAt)
        pinThisRank(*pinning, slot);
      double cpu0 = pinning ? threadCpuSeconds() : 0;
      if (!measured)
        ctx.iteration = -1;
      else
        ctx.iteration = it - o.warmup;
      // PIPEOPT_FAULT_KILL: a real crash, mid-run (no cleanup, no message).
      if (measured && globalRank == o.faultKillRank &&
          first + it - o.warmup + 1 == o.faultKillStep)
        ::raise(SIGKILL);
      // Only replica 0's events reach the trace and the profile: the other
      // replicas keep none (they would grow with every step).
      if (dataParallel && dataParallel->replica != 0)
        ctx.events.clear();
      ctx.beginCall();
      // Warm-up calls read step 0's slice of a dataset.
      ctx.dataStep = measured ? first + it - o.warmup : 0;
      phase = "in iteration " + std::to_string(it) + " (" +
              (measured ? "measured" : "warm-up") + "), calling " +
              m.entryPoints[rank];
      double t0 = ctx.now();
      int32_t rc = entry();
      // cuda builds: the iteration's time includes the device work it
      // enqueued; an error of that work fails the rank here.
      if (device && !ctx.isPoisoned() && !pollDeviceError(ctx) &&
          device->api().synchronize() != 0)
        ctx.fail("CUDA error on device " + std::to_string(device->id()) +
                 " completing the device work of iteration " +
                 std::to_string(it) + " of " + m.entryPoints[rank] + ": " +
                 device->pendingError());
      double t1 = ctx.now();
      if (rc != 0 || ctx.isPoisoned()) {
        if (!ctx.isPoisoned())
          ctx.fail(m.entryPoints[rank] + " returned " + std::to_string(rc) +
                   " without a runtime error (iteration " + std::to_string(it) +
                   ")");
        break;
      }
      if (ctx.openKind >= 0) {
        ctx.fail(std::string("action ") + actionKindName(ctx.openKind) +
                 " for stage " + std::to_string(ctx.openStage) +
                 " microbatch " + std::to_string(ctx.openMicrobatch) +
                 " was begun but never ended");
        break;
      }
      if (size_t(rank) < m.actions.size() &&
          ctx.actionsBegun != m.actions[size_t(rank)].size()) {
        ctx.fail(m.entryPoints[rank] + " ran " +
                 std::to_string(ctx.actionsBegun) + " action(s) in iteration " +
                 std::to_string(it) + ", but the manifest " + o.manifestPath +
                 " lists " + std::to_string(m.actions[size_t(rank)].size()) +
                 " for rank " + std::to_string(rank) +
                 " (is it the manifest of this model?)");
        break;
      }
      phase = "completing the sends of iteration " + std::to_string(it);
      comm.flush(o.timeoutS);
      // A training step's time covers its update too (endTrainingStep
      // below), as its progress line does.
      if (measured && !m.hasParameters)
        iterS.push_back(t1 - t0);
      if (pinning && it == pinning->pinAt - 1)
        pinning->cpuS[slot] = threadCpuSeconds() - cpu0;
      if (m.hasParameters) {
        int step = first + it + 1;
        int measuredStep = first + it - o.warmup + 1;
        phase = "ending training step " + std::to_string(step);
        if (!endTrainingStep(ctx, comm, m, o, step, measured, measuredStep,
                             first + o.iterations, t0, result))
          break;
        if (measured)
          iterS.push_back(ctx.now() - t0);
        if (measured && o.checkpointEvery > 0 &&
            measuredStep % o.checkpointEvery == 0) {
          phase =
              "writing the checkpoint of step " + std::to_string(measuredStep);
          std::map<int, GatheredParameter> params;
          std::string error = gatherReplicaParameters(ctx, comm, m, step, true,
                                                      o.timeoutS, &params);
          if (!error.empty()) {
            ctx.fail(error);
            break;
          }
          if (globalRank == 0)
            writeCheckpoint(m, o.checkpointDir, measuredStep, result.losses,
                            params);
          if (dataParallel) {
            // No rank starts the next step before rank 0 has written the
            // checkpoint: its replica waits for it (the pipeline's
            // barrier), every other replica for its own rank of replica
            // 0 (the data-parallel group's). A crash in the next step
            // then never loses this checkpoint.
            phase = "waiting for rank 0 to write the checkpoint of step " +
                    std::to_string(measuredStep);
            barrier(comm, o.timeoutS);
            allGatherValues(*dataParallel->group, {0.0}, o.timeoutS);
          }
        }
        comm.flush(o.timeoutS);
      }
    }
    if (!ctx.isPoisoned() && dataParallel && dataParallel->zeroStage == 0 &&
        !gatherOnly) {
      phase = "adding up the data-parallel all-reduce times";
      dataParallel->groupTotals(ctx, o.timeoutS);
    }
    if (!ctx.isPoisoned() && m.hasParameters && gather) {
      phase = "gathering the parameters";
      std::string error =
          gatherReplicaParameters(ctx, comm, m, first + o.warmup + o.iterations,
                                  true, o.timeoutS, &result.parameters);
      if (!error.empty())
        ctx.fail(error);
      comm.flush(o.timeoutS);
    }
    if (!ctx.isPoisoned() && !gatherOnly) {
      // Drop warm-up events.
      ctx.events.erase(
          std::remove_if(ctx.events.begin(), ctx.events.end(),
                         [](const TraceEvent &e) { return e.iteration < 0; }),
          ctx.events.end());
      bool withOutputs = collectOutputs;
      phase = rank != 0 ? "sending results to rank 0"
                        : "collecting results from the other ranks";
      if (rank != 0) {
        sendReport(comm, ctx, iterS, withOutputs, o.timeoutS);
        comm.flush(o.timeoutS);
        // Until rank 0 confirms that it has every result, this rank watches
        // it: a rank 0 stuck in its last computation, which nobody else
        // waits for, would otherwise hang the run (MPI_Finalize, the
        // loopback join) without a word. Three times --timeout-s: rank 0
        // itself gives up on a missing result after twice that, naming the
        // rank that did not send it. A rank 0 that ended without confirming
        // (loopback) failed, and its error says why.
        phase = "waiting for rank 0 to confirm it has every rank's results";
        try {
          recvControl(comm, 0, TagDone, 3 * o.timeoutS);
        } catch (const PeerExitedError &) {
        }
      } else {
        result.reports.resize(comm.size());
        result.reports[0].iterationS = iterS;
        result.reports[0].events = ctx.events;
        RankReport own = evidenceOf(ctx);
        result.reports[0].microbatchedInputReads =
            std::move(own.microbatchedInputReads);
        result.reports[0].inputsReadPerMicrobatch =
            std::move(own.inputsReadPerMicrobatch);
        result.reports[0].outputsWritten = std::move(own.outputsWritten);
        result.reports[0].stashUsed = ctx.stashUsed;
        result.reports[0].stashPeak = ctx.stashPeakBytes;
        result.reports[0].kernelS = ctx.kernelS;
        result.reports[0].gradientS = ctx.gradientS;
        result.reports[0].updateS = ctx.updateS;
        if (withOutputs) {
          result.reports[0].outputs = ctx.outputs;
          for (const auto &[index, acc] : ctx.reducedOutputs)
            result.reports[0].reducedSums[index] = acc.sum;
        }
        // A peer that is still blocked gives up on its own after at most
        // --timeout-s and its error names the message it waited for, which
        // is the root cause. Rank 0 therefore waits twice as long for the
        // results, so that its own, less specific timeout never wins that
        // race (with MPI the peer's MPI_Abort ends rank 0 first).
        for (int r = 1; r < comm.size(); ++r)
          result.reports[r] = recvReport(comm, r, 2 * o.timeoutS);
        phase = "confirming the end of the run to the other ranks";
        for (int r = 1; r < comm.size(); ++r)
          sendControl(comm, r, TagDone, nullptr, 0, o.timeoutS);
        comm.flush(o.timeoutS);
      }
    }
  } catch (const std::exception &e) {
    ctx.fail("launcher, " + phase.text + ": " + e.what());
  }
  if (bound) {
    // The state carried to the next run is the host's: the device copies
    // are read back, then released before the thread's binding goes.
    if (!ctx.isPoisoned()) {
      try {
        for (auto &[index, st] : ctx.parameters)
          refreshHostParameter(ctx, st);
      } catch (const std::exception &e) {
        ctx.fail(std::string("launcher, reading the parameters back from the "
                             "device: ") +
                 e.what());
      }
    }
    for (auto &[index, st] : ctx.parameters)
      st.device.reset(); // the next run's initDeviceParameters copies it in
    try {
      device->unbindThread();
    } catch (const std::exception &e) {
      ctx.fail(std::string("launcher, at the end: ") + e.what());
    }
  }
  if (ctx.isPoisoned()) {
    result.ok = false;
    result.error = ctx.errorMessage();
  }
  parameters = std::move(ctx.parameters);
  comm.close();
}

/// Loopback: after a rank failed, how long the others get to return (they
/// fail at once when they wait for a rank that has failed, within
/// --timeout-s when they wait for one that is stuck) before the run ends
/// without them.
double loopbackGraceS(const RunOptions &o) {
  return std::min(o.timeoutS, 10.0);
}

/// Reads a field that the rank's thread may be writing (it normally is
/// stuck and does not): relaxed atomic loads, a snapshot for an error
/// message.
template <typename T>
T peek(const T &v) {
  return __atomic_load_n(&v, __ATOMIC_RELAXED);
}

/// "rank 0 (stage 0) did not return within 1 s of the first failure: in
/// iteration 0 (measured), calling pipeopt_rank_0, in action F for stage 0
/// microbatch 1 (begun 3.2 s ago, not ended); last completed action: F for
/// stage 0 microbatch 0".
std::string describeStuckRank(const Manifest &m, int rank,
                              RankProgress &progress, double graceS) {
  std::ostringstream os;
  os << rankLabel(m, rank) << " did not return within " << graceS
     << " s of the first failure (stuck in a computation, or blocked):";
  std::lock_guard<std::mutex> lock(progress.mu);
  os << " " << progress.phase;
  const RankContext *ctx = progress.ctx;
  if (!ctx)
    return os.str();
  int openKind = peek(ctx->openKind);
  int openStage = peek(ctx->openStage);
  int openMb = peek(ctx->openMicrobatch);
  size_t begun = peek(ctx->actionsBegun);
  if (openKind >= 0) {
    char ago[64];
    std::snprintf(ago, sizeof(ago), "%.1f", ctx->now() - ctx->openBeginS);
    os << ", in action " << actionKindName(openKind) << " for stage "
       << openStage << " microbatch " << openMb << " (begun " << ago
       << " s ago, not ended)";
  }
  size_t completed = begun - (openKind >= 0 && begun > 0 ? 1 : 0);
  if (size_t(rank) < m.actions.size() && completed <= m.actions[rank].size()) {
    if (completed == 0) {
      os << "; no action completed in this call";
    } else {
      const ManifestAction &a = m.actions[size_t(rank)][completed - 1];
      os << "; last completed action: " << actionKindName(a.kind)
         << " for stage " << a.stage << " microbatch " << a.microbatch
         << " (its action " << completed - 1 << " of "
         << m.actions[size_t(rank)].size() << " in this call)";
    }
  } else {
    os << "; actions completed in this call: " << completed;
  }
  return os.str();
}

} // namespace runner

} // namespace rt
} // namespace pipeopt
