//===- TrainingStep.cpp - gradient reduction + optimizer step ---*- C++ -*-===//
//
// The end of a training step of a build with parameters: the ranks of
// each parameter exchange their gradient sums and apply the optimizer;
// rank 0 gathers the parameters for checkpoints and --output-dir.
//
//===----------------------------------------------------------------------===//

#include "DataParallel.h"
#include "RunnerInternal.h"
#include "ShardedOptimizer.h"
#include "pipeopt/runtime/Device.h"
#include "pipeopt/runtime/Kernels.h"
#include "pipeopt/runtime/Optimizer.h"
#include "pipeopt/runtime/Reduce.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <set>
#include <sstream>

namespace pipeopt {
namespace rt {

using namespace runner;

namespace runner {

std::string parameterName(const Manifest &m, int index) {
  const ManifestInput *in = m.findInput(index);
  return "parameter " + std::to_string(index) +
         (in && !in->name.empty() ? " ('" + in->name + "')" : "");
}

std::string rankList(const std::vector<int> &ranks) {
  std::string s;
  for (int r : ranks)
    s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

/// The error for microbatch `mb` of `M`, for which no rank of parameter
/// `index`'s `ranks` reported a gradient (`got`: those reported).
static std::string missingMicrobatchError(const Manifest &m, int index,
                                          const std::vector<int> &ranks,
                                          const std::set<int> &got, size_t mb,
                                          size_t M, int step) {
  std::string list;
  for (int k : got)
    list += (list.empty() ? "" : ", ") + std::to_string(k);
  return parameterName(m, index) + ": no rank of its \"ranks\" (" +
         rankList(ranks) + ") reported a gradient for microbatch " +
         std::to_string(mb) + " of " + std::to_string(M) + " in step " +
         std::to_string(step) + " (reported for microbatch(es) " + list +
         "): the schedule misses a weight-gradient (W or backward) action";
}

/// The error for rank `r` of parameter `index`'s `ranks`, which reported
/// no gradient for it in `step`.
static std::string noGradientError(const Manifest &m, int index,
                                   const std::vector<int> &ranks, int r,
                                   int step) {
  return parameterName(m, index) + ": rank " + std::to_string(r) +
         " is in its \"ranks\" (" + rankList(ranks) + ") in the manifest " +
         m.source + " but reported no gradient for it in step " +
         std::to_string(step) +
         " (a rank that reads a parameter reports its gradient with "
         "pipeopt_rt_gradient)";
}

/// The sums of M microbatches (of D replicas with `dp`) -> their mean over
/// the D x M microbatches of the global batch.
static void scaleGradientSum(std::vector<double> &sums, size_t M,
                             const DataParallelRank *dp) {
  if (dp) {
    const double scale = 1.0 / (double(M) * double(dp->replicas));
    for (double &x : sums)
      x *= scale;
  } else {
    for (double &x : sums)
      x /= double(M);
  }
}

/// The end of a training step on one rank (a manifest with parameters):
/// for every parameter this rank keeps, the ranks of its list exchange
/// their accumulators (pairwise, in a global order that is deadlock-free
/// even with rendezvous sends), sum them in ascending rank order, check
/// that every rank reported and every microbatch is covered, divide by M
/// and apply the optimizer. Returns an error message ("" if none); throws
/// on communication errors.
std::string reduceAndUpdate(RankContext &ctx, Communicator &comm,
                            const Manifest &m, int step, double timeoutS) {
  const size_t M = size_t(m.numMicrobatches);
  // Asynchronous schedules updated each parameter as its gradients arrived
  // (pipeopt_rt_gradient); the step only checks that none is missing.
  if (m.training.updateEvery > 0) {
    for (auto &[index, st] : ctx.parameters)
      if (st.microbatches.size() != M || st.pending != 0)
        return parameterName(m, index) + ": rank " + std::to_string(ctx.rank) +
               " reported its gradient for " +
               std::to_string(st.microbatches.size()) + " of " +
               std::to_string(M) + " microbatches in step " +
               std::to_string(step) +
               " (asynchronous updates need every microbatch's)";
    return "";
  }
  // Data parallelism: every sum becomes the total over the D replicas
  // (the buckets started during the step; DataParallel.h), or, with
  // ZeRO-1, is reduce-scattered after the exchange below.
  DataParallelRank *dp = ctx.dataParallel;
  const bool zero = dp && dp->zeroStage > 0;
  if (dp)
    dp->finishStep(ctx, step, timeoutS);
  std::map<int, std::vector<double>> zeroSums;
  for (auto &[index, st] : ctx.parameters) {
    const std::vector<int> &ranks = st.param->ranks;
    // cuda builds: the sums are on the device. A parameter of one rank is
    // updated there from its sum; the sums of a parameter of several ranks
    // are exchanged through the host (the one copy of a training step
    // that is not an input or output) and the mean goes back to the device.
    bool onDevice = st.device != nullptr;
    bool deviceOnly = onDevice && ranks.size() == 1;
    size_t n = size_t(numElements(st.value.shape));
    size_t sumBytes = deviceOnly ? 0 : n * sizeof(double);
    if (!onDevice && !zero && ranks.size() == 1) {
      // Only this rank reads the parameter: its sums are the total. They
      // are scaled and applied where they lie, with no copy (a tied
      // 50257 x 512 embedding's sums are 206 MB). The buffer then takes the
      // next step's sums (zeroed by beginCall), or, when the mean gradient
      // is kept (--save-grads), becomes it and last step's mean-gradient
      // buffer takes the sums.
      if (st.microbatches.empty())
        return noGradientError(m, index, ranks, ctx.rank, step);
      for (size_t mb = 0; mb < M; ++mb)
        if (!st.microbatches.count(int(mb)))
          return missingMicrobatchError(m, index, ranks, st.microbatches, mb, M,
                                        step);
      if (!st.soleGradient.empty()) {
        // One f32 gradient (M = 1): the mean is that gradient (x / 1 is
        // exact), read as the f64 sum would hold it (Context.h).
        optimizerStepTensor(m.training, st.value, st.soleGradient, st.optimizer,
                            kernelThreads());
        if (ctx.keepMeanGradients) {
          st.meanGrad.resize(n);
          for (size_t i = 0; i < n; ++i)
            st.meanGrad[i] = sumOfOne(st.soleGradient[i]);
        }
        continue;
      }
      std::vector<double> total;
      total.swap(gradientSumOf(st));
      scaleGradientSum(total, M, dp);
      optimizerStepTensor(m.training, st.value, total, st.optimizer,
                          kernelThreads());
      if (ctx.keepMeanGradients) {
        st.gradSum.swap(st.meanGrad);
        st.meanGrad = std::move(total);
      } else {
        st.gradSum = std::move(total);
      }
      if (st.gradSum.size() != n)
        st.gradSum.assign(n, 0.0);
      continue;
    }
    // Payload: the n sums, then one byte per microbatch (reported or not).
    std::vector<uint8_t> mine(sumBytes + M, 0);
    if (!onDevice)
      std::memcpy(mine.data(), gradientSumOf(st).data(), sumBytes);
    else if (!deviceOnly)
      ctx.device->copy(mine.data(), st.device->gradSum.data(), sumBytes);
    for (int mb : st.microbatches)
      mine[sumBytes + size_t(mb)] = 1;
    std::map<int, std::vector<uint8_t>> all;
    for (int peer : ranks) {
      if (peer == ctx.rank)
        continue;
      std::string what = "exchanging the gradient of " +
                         parameterName(m, index) + " with rank " +
                         std::to_string(peer) + " in step " +
                         std::to_string(step);
      auto receive = [&] {
        Message msg =
            recvAbout(comm, peer, TagGradient, index, step, timeoutS, what);
        if (msg.payload.size() != mine.size())
          throw RuntimeError(what + ": rank " + std::to_string(peer) +
                             " sent " + std::to_string(msg.payload.size()) +
                             " bytes, expected " + std::to_string(mine.size()) +
                             " (" + std::to_string(n) + " sums and " +
                             std::to_string(M) + " microbatch flags)");
        all[peer] = std::move(msg.payload);
      };
      auto send = [&] {
        try {
          sendControl(comm, peer, TagGradient, mine.data(), mine.size(),
                      timeoutS, DType::I8, {}, index, step);
        } catch (const RuntimeError &e) {
          throw RuntimeError(what + ": " + e.what());
        }
      };
      if (ctx.rank < peer) {
        send();
        receive();
      } else {
        receive();
        send();
      }
    }
    all[ctx.rank] = std::move(mine);
    // Sum in ascending rank order: every copy gets the same bits.
    std::vector<double> total(deviceOnly ? 0 : n, 0.0);
    std::vector<bool> covered(M, false);
    for (int r : ranks) {
      const std::vector<uint8_t> &bytes = all[r];
      const uint8_t *flags = bytes.data() + sumBytes;
      bool any = false;
      for (size_t mb = 0; mb < M; ++mb)
        if (flags[mb]) {
          covered[mb] = true;
          any = true;
        }
      if (!any)
        return noGradientError(m, index, ranks, r, step);
      for (size_t i = 0; i < total.size(); ++i) {
        double x;
        std::memcpy(&x, bytes.data() + i * sizeof(double), sizeof(double));
        total[i] += x;
      }
    }
    for (size_t mb = 0; mb < M; ++mb) {
      if (covered[mb])
        continue;
      std::set<int> got;
      for (size_t k = 0; k < M; ++k)
        if (covered[k])
          got.insert(int(k));
      return missingMicrobatchError(m, index, ranks, got, mb, M, step);
    }
    if (deviceOnly) {
      DeviceParameterState &d = *st.device;
      deviceParameterStep(ctx, st, static_cast<double *>(d.gradSum.data()),
                          1.0 / double(M));
      std::swap(d.gradSum, d.lastGradSum); // zeroed by beginCall
      d.lastGradScale = 1.0 / double(M);
      d.hostMeanGrad = false;
      continue;
    }
    if (zero) {
      zeroSums[index] = std::move(total);
      continue;
    }
    scaleGradientSum(total, M, dp);
    if (onDevice) {
      DeviceParameterState &d = *st.device;
      ctx.device->copy(d.gradSum.data(), total.data(), sumBytes);
      deviceParameterStep(ctx, st, static_cast<double *>(d.gradSum.data()),
                          1.0);
      d.hostMeanGrad = true;
      st.meanGrad = std::move(total);
      continue;
    }
    // In place, on the rank's kernel threads (Optimizer.h).
    optimizerStepTensor(m.training, st.value, total, st.optimizer,
                        kernelThreads());
    if (ctx.keepMeanGradients)
      st.meanGrad = std::move(total);
  }
  if (zero) {
    // ZeRO-1: reduce-scatter, this replica's shard of the update,
    // all-gather of the weights (ShardedOptimizer.h).
    std::map<int, std::vector<double>> weights;
    for (auto &[index, st] : ctx.parameters)
      weights[index] = tensorToDoubles(st.value);
    const double beginS = ctx.now();
    int64_t bytes = 0;
    for (const auto &[index, sums] : zeroSums)
      bytes += int64_t(sums.size() * sizeof(double));
    try {
      dp->sharded->step(*dp->group, m.training, zeroSums, weights,
                        1.0 / (double(M) * double(dp->replicas)), timeoutS);
    } catch (const RuntimeError &e) {
      throw RuntimeError("step " + std::to_string(step) +
                         ": the ZeRO-1 update over replicas 0.." +
                         std::to_string(dp->replicas - 1) + ": " + e.what());
    }
    recordEvent(ctx, TraceZeroUpdate, beginS, ctx.now(), -1, bytes);
    for (auto &[index, st] : ctx.parameters) {
      doublesToTensor(weights.at(index), st.value);
      st.meanGrad.clear(); // the shards' parts: ShardedOptimizer::gather
    }
  }
  return "";
}

/// Rank 0 receives every parameter from the lowest rank of its list (its
/// value and, with `withState`, mean gradient and optimizer state) and
/// checks the other ranks' copies bit for bit; the other ranks send theirs.
/// Every rank calls it at the same steps. Returns an error ("" if none).
std::string gatherParameters(RankContext &ctx, Communicator &comm,
                             const Manifest &m, int step, bool withState,
                             double timeoutS,
                             std::map<int, GatheredParameter> *out) {
  std::string error;
  // cuda builds: the device copies are the current ones.
  for (auto &[index, st] : ctx.parameters)
    refreshHostParameter(ctx, st);
  for (const ManifestParameter &p : m.parameters) {
    int owner = p.ranks.front();
    std::string name = parameterName(m, p.index);
    if (ctx.rank != 0) {
      auto it = ctx.parameters.find(p.index);
      if (it == ctx.parameters.end())
        continue;
      const ParameterState &st = it->second;
      sendControl(comm, 0, TagParamValue, st.value.data.data(),
                  st.value.data.size(), timeoutS, st.value.dtype,
                  st.value.shape, p.index, step);
      if (withState && ctx.rank == owner) {
        // The state travels as doubles (exact for f32 state).
        std::vector<double> state = st.meanGrad;
        for (const StateBuffer *b : {&st.optimizer.first, &st.optimizer.second})
          for (size_t i = 0; i < b->size(); ++i)
            state.push_back((*b)[i]);
        state.push_back(double(st.optimizer.step));
        state.push_back(double(st.meanGrad.size()));
        state.push_back(double(st.optimizer.first.size()));
        sendDoubles(comm, 0, TagParamState, state, p.index, step, timeoutS);
      }
      continue;
    }
    // Rank 0: every copy in rank order, the lowest rank's is the reference.
    GatheredParameter g;
    bool haveRef = false;
    int refRank = -1;
    for (int r : p.ranks) {
      HostTensor copy;
      if (r == 0) {
        const ParameterState &st = ctx.parameters.at(p.index);
        copy = st.value;
        if (r == owner && withState) {
          g.meanGrad = st.meanGrad;
          g.first = st.optimizer.first.toDoubles();
          g.second = st.optimizer.second.toDoubles();
          g.step = st.optimizer.step;
        }
      } else {
        std::string what = "gathering " + name + " from rank " +
                           std::to_string(r) + " after step " +
                           std::to_string(step);
        Message msg = recvAbout(comm, r, TagParamValue, p.index, step,
                                2 * timeoutS, what);
        copy.dtype = DType(msg.header.dtype);
        copy.shape = msg.header.getShape();
        copy.data = std::move(msg.payload);
        if (r == owner && withState) {
          Message sm = recvAbout(comm, r, TagParamState, p.index, step,
                                 2 * timeoutS, what);
          std::vector<double> state(sm.payload.size() / sizeof(double));
          std::memcpy(state.data(), sm.payload.data(),
                      state.size() * sizeof(double));
          if (state.size() < 3)
            throw RuntimeError(what + ": a truncated optimizer state");
          size_t firstN = size_t(state.back());
          size_t gradN = size_t(state[state.size() - 2]);
          g.step = int64_t(state[state.size() - 3]);
          state.resize(state.size() - 3);
          if (gradN + firstN > state.size())
            throw RuntimeError(what + ": a malformed optimizer state");
          g.meanGrad.assign(state.begin(), state.begin() + long(gradN));
          g.first.assign(state.begin() + long(gradN),
                         state.begin() + long(gradN + firstN));
          g.second.assign(state.begin() + long(gradN + firstN), state.end());
        }
      }
      if (!haveRef) {
        g.value = std::move(copy);
        haveRef = true;
        refRank = r;
        continue;
      }
      if (error.empty() &&
          (copy.data != g.value.data || copy.shape != g.value.shape ||
           copy.dtype != g.value.dtype)) {
        double maxDiff = 0;
        if (copy.dtype == g.value.dtype && copy.shape == g.value.shape) {
          std::vector<double> a = tensorToDoubles(g.value),
                              b = tensorToDoubles(copy);
          for (size_t i = 0; i < a.size(); ++i)
            maxDiff = std::max(maxDiff, std::fabs(a[i] - b[i]));
        }
        std::ostringstream os;
        os << name << ": rank " << r << "'s copy differs from rank " << refRank
           << "'s after step " << step << " (max abs difference " << maxDiff
           << "): the ranks of a parameter must compute the same update";
        error = os.str();
      }
    }
    if (out)
      (*out)[p.index] = std::move(g);
  }
  return error;
}

/// ZeRO-1 at the start of a run: a rank without its ShardedOptimizer yet
/// (the first run, or the caller made its state anew: resume, a failed
/// run, setOptimizerState) creates it from its parameters' full optimizer
/// state (empty before the first step) and keeps its shard of it; the
/// full copies are dropped.
void loadShardedState(RankContext &ctx, DataParallelRank &dp) {
  if (dp.sharded)
    return;
  std::map<int, size_t> sizes;
  std::map<int, OptimizerState> full;
  std::map<int, std::vector<double>> meanGrads;
  for (auto &[index, st] : ctx.parameters) {
    sizes[index] = size_t(numElements(st.value.shape));
    full[index] = std::move(st.optimizer);
    st.optimizer.clear();
    if (st.meanGrad.size() == sizes[index])
      meanGrads[index] = std::move(st.meanGrad);
    st.meanGrad.clear();
  }
  dp.sharded =
      std::make_shared<ShardedOptimizer>(sizes, dp.replicas, dp.replica);
  dp.sharded->load(full, meanGrads.size() == sizes.size()
                             ? meanGrads
                             : std::map<int, std::vector<double>>());
}

/// gatherParameters for a run that may have data-parallel replicas: with
/// ZeRO-1 the replicas first gather their shards of the optimizer state
/// and mean gradient to replica 0 (a collective of the data-parallel
/// group); then replica 0 gathers as one pipeline does, and the other
/// replicas, whose copies are the same, return at once.
std::string gatherReplicaParameters(RankContext &ctx, Communicator &comm,
                                    const Manifest &m, int step, bool withState,
                                    double timeoutS,
                                    std::map<int, GatheredParameter> *out) {
  DataParallelRank *dp = ctx.dataParallel;
  if (!dp)
    return gatherParameters(ctx, comm, m, step, withState, timeoutS, out);
  const bool zero = dp->zeroStage > 0 && withState;
  if (zero) {
    auto full = dp->sharded->gather(*dp->group, timeoutS);
    for (auto &[index, sm] : full) {
      ParameterState &st = ctx.parameters.at(index);
      st.optimizer = std::move(sm.first);
      st.meanGrad = std::move(sm.second);
    }
  }
  std::string error;
  if (dp->replica == 0)
    error = gatherParameters(ctx, comm, m, step, withState, timeoutS, out);
  if (zero)
    for (auto &[index, st] : ctx.parameters) {
      // The shards stay the state; the full copy was for the gathering.
      st.optimizer.clear();
      st.meanGrad.clear();
    }
  return error;
}

/// The end of one training step of a build with parameters, after the
/// entry point returned and the rank's sends completed: the gradient
/// reduction and optimizer update, then the step's loss and time to rank 0,
/// which prints the progress line. Returns false (with ctx failed) on an
/// error the ranks detected; throws on communication errors.
bool endTrainingStep(RankContext &ctx, Communicator &comm, const Manifest &m,
                     const RunOptions &o, int step, bool measured,
                     int measuredStep, int totalSteps, double t0,
                     RankResult &result) {
  const double updateBeginS = ctx.now();
  std::string error = reduceAndUpdate(ctx, comm, m, step, o.timeoutS);
  ctx.addTime(ctx.updateS, ctx.now() - updateBeginS);
  if (!error.empty()) {
    ctx.fail(error);
    return false;
  }
  double seconds = ctx.now() - t0;
  int lossIndex = lossOutput(m);
  std::vector<double> mine = {0.0, 0.0, seconds};
  if (lossIndex >= 0)
    if (auto it = ctx.reducedOutputs.find(lossIndex);
        it != ctx.reducedOutputs.end() && !it->second.sum.empty()) {
      mine[0] = it->second.sum[0];
      mine[1] = double(it->second.microbatches.size());
    }
  if (ctx.rank != 0) {
    sendDoubles(comm, 0, TagStepLoss, mine, -1, step, o.timeoutS);
    return true;
  }
  double sum = mine[0], count = mine[1], slowest = seconds;
  for (int r = 1; r < comm.size(); ++r) {
    Message msg =
        recvAbout(comm, r, TagStepLoss, -1, step, 2 * o.timeoutS,
                  "collecting the loss of step " + std::to_string(step));
    if (msg.payload.size() != 3 * sizeof(double))
      throw RuntimeError("collecting the loss of step " + std::to_string(step) +
                         ": rank " + std::to_string(r) +
                         " sent a malformed message");
    double v[3];
    std::memcpy(v, msg.payload.data(), sizeof(v));
    sum += v[0];
    count += v[1];
    slowest = std::max(slowest, v[2]);
  }
  double microbatches = double(m.numMicrobatches);
  if (DataParallelRank *dp = ctx.dataParallel) {
    // Rank 0 of every replica: the replicas' loss sums, counts and times,
    // added in replica order (the same bits everywhere).
    std::vector<double> every;
    try {
      every =
          allGatherValues(*dp->group, {sum, count, slowest}, 2 * o.timeoutS);
    } catch (const RuntimeError &e) {
      throw RuntimeError("collecting the loss of step " + std::to_string(step) +
                         " from the rank 0 of every replica: " + e.what());
    }
    sum = count = 0;
    for (int d = 0; d < dp->replicas; ++d) {
      sum += every[3 * size_t(d)];
      count += every[3 * size_t(d) + 1];
      slowest = std::max(slowest, every[3 * size_t(d) + 2]);
    }
    microbatches *= double(dp->replicas);
    if (dp->replica != 0)
      return true; // replica 0 keeps the losses and prints
  }
  if (!measured)
    return true;
  float loss = std::nanf("");
  if (lossIndex >= 0 && count > 0)
    loss = float(sum / microbatches);
  result.losses.push_back(loss);
  if (!o.quiet) {
    char line[256];
    if (lossIndex >= 0)
      std::snprintf(line, sizeof(line),
                    "pipeopt-run: step %d/%d: loss %.6g (%.4f s)\n",
                    measuredStep, totalSteps, double(loss), slowest);
    else
      std::snprintf(line, sizeof(line), "pipeopt-run: step %d/%d (%.4f s)\n",
                    measuredStep, totalSteps, slowest);
    std::cout << line << std::flush;
  }
  // The first non-finite loss is worth saying once: the weights are lost.
  if (lossIndex >= 0 && count > 0 && !std::isfinite(loss) &&
      !result.warnedNonFinite) {
    result.warnedNonFinite = true;
    std::cerr << "pipeopt-run: warning: the loss of step " << measuredStep
              << " is " << (std::isnan(loss) ? "nan" : "inf")
              << ": training diverged (a smaller --lr?) or the data holds "
                 "nan/inf; the weights written will not be finite\n";
  }
  return true;
}

} // namespace runner

std::string updateParameters(RankContext &ctx, Communicator &comm, int step,
                             double timeoutS) {
  return reduceAndUpdate(ctx, comm, *ctx.manifest, step, timeoutS);
}

} // namespace rt
} // namespace pipeopt
