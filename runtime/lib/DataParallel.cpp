//===- DataParallel.cpp - gradient all-reduce buckets -----------*- C++ -*-===//
//
// DataParallelRank (DataParallel.h): the all-reduce of one rank's gradient
// sums over its data-parallel group, in buckets that start as the
// schedule completes them.
//
//===----------------------------------------------------------------------===//

#include "DataParallel.h"
#include "RunnerInternal.h"

#include <algorithm>
#include <cstring>

namespace pipeopt {
namespace rt {

void recordEvent(RankContext &ctx, int kind, double beginS, double endS,
                 int peer, int64_t bytes) {
  if (ctx.iteration < 0)
    return; // a warm-up iteration
  TraceEvent e;
  e.kind = kind;
  e.stage = -1;
  e.microbatch = -1;
  e.iteration = ctx.iteration;
  e.beginS = beginS;
  e.endS = endS;
  e.peer = peer;
  e.bytes = bytes;
  ctx.events.push_back(e);
}

void DataParallelRank::beginStep() {
  seen.clear();
  started.clear();
  buckets.clear();
}

void DataParallelRank::onGradient(RankContext &ctx, int index, int microbatch) {
  if (zeroStage > 0)
    return;
  size_t action = ctx.actionsBegun > 0 ? ctx.actionsBegun - 1 : 0;
  if (started.count(index)) {
    auto it = lastAction.find(index);
    throw RuntimeError(
        "the gradient of " + runner::parameterName(*ctx.manifest, index) +
        " for microbatch " + std::to_string(microbatch) + " came in action " +
        std::to_string(action) +
        " of the step, after its data-parallel "
        "all-reduce had started (in the first step its last contribution "
        "came in action " +
        (it == lastAction.end() ? std::string("?")
                                : std::to_string(it->second)) +
        "): the program reports gradients in another order from step to "
        "step");
  }
  seen[index] = action;
}

void DataParallelRank::start(RankContext &ctx, const std::vector<int> &params) {
  // Pack in parameter order up to bucketBytes (a parameter larger than a
  // bucket gets one of its own).
  std::vector<int> pack;
  size_t bytes = 0;
  auto flush = [&] {
    if (pack.empty())
      return;
    Bucket b;
    b.params = pack;
    for (int p : pack) {
      const std::vector<double> &g = gradientSumOf(ctx.parameters.at(p));
      b.sums.insert(b.sums.end(), g.begin(), g.end());
      started.insert(p);
    }
    b.beginS = ctx.now();
    b.request = group->startAllReduceSum(b.sums.data(), b.sums.size());
    buckets.push_back(std::move(b));
    pack.clear();
    bytes = 0;
  };
  for (int p : params) {
    size_t n = gradientSumOf(ctx.parameters.at(p)).size() * sizeof(double);
    if (!pack.empty() && bytes + n > bucketBytes)
      flush();
    pack.push_back(p);
    bytes += n;
  }
  flush();
}

void DataParallelRank::progress(RankContext &ctx) {
  if (zeroStage > 0)
    return;
  for (Bucket &b : buckets)
    if (b.endS < 0 && b.request->test())
      b.endS = ctx.now();
}

void DataParallelRank::onActionsCompleted(RankContext &ctx, size_t completed) {
  if (zeroStage > 0)
    return;
  progress(ctx);
  if (!learned)
    return;
  std::vector<int> done;
  for (const auto &[index, action] : lastAction)
    if (action < completed && !started.count(index))
      done.push_back(index);
  if (!done.empty())
    start(ctx, done);
}

void DataParallelRank::finishStep(RankContext &ctx, int step, double timeoutS) {
  if (zeroStage > 0)
    return;
  // What the schedule left: every sum in the first step, else the
  // parameters whose last action is the step's last or that this step
  // did not see (none with a fixed schedule).
  std::vector<int> rest;
  for (const auto &[index, st] : ctx.parameters)
    if (!started.count(index))
      rest.push_back(index);
  if (!rest.empty())
    start(ctx, rest);
  double waitBegin = ctx.now();
  for (size_t k = 0; k < buckets.size(); ++k) {
    Bucket &b = buckets[k];
    if (b.endS < 0) {
      try {
        b.request->wait(timeoutS);
      } catch (const RuntimeError &e) {
        throw RuntimeError("step " + std::to_string(step) +
                           ": the data-parallel all-reduce of bucket " +
                           std::to_string(k) + " (" +
                           std::to_string(b.params.size()) + " parameter(s), " +
                           std::to_string(b.sums.size() * sizeof(double)) +
                           " bytes) over replicas 0.." +
                           std::to_string(replicas - 1) + ": " + e.what());
      }
      b.endS = ctx.now();
    }
  }
  double waitEnd = ctx.now();
  // Write the totals back; record the buckets and the wait.
  std::vector<std::pair<double, double>> spans;
  for (size_t k = 0; k < buckets.size(); ++k) {
    Bucket &b = buckets[k];
    size_t at = 0;
    for (int p : b.params) {
      std::vector<double> &g = gradientSumOf(ctx.parameters.at(p));
      std::memcpy(g.data(), b.sums.data() + at, g.size() * sizeof(double));
      at += g.size();
    }
    spans.emplace_back(b.beginS, b.endS);
    recordEvent(ctx, TraceAllReduce, b.beginS, b.endS, int(k),
                int64_t(b.sums.size() * sizeof(double)));
  }
  recordEvent(ctx, TraceAllReduceWait, waitBegin, waitEnd, -1, 0);
  // The union of the buckets' intervals.
  std::sort(spans.begin(), spans.end());
  double busy = 0, curB = 0, curE = -1;
  for (auto [b, e] : spans) {
    if (b > curE) {
      busy += std::max(0.0, curE - curB);
      curB = b;
      curE = e;
    } else {
      curE = std::max(curE, e);
    }
  }
  busy += std::max(0.0, curE - curB);
  if (learned) {
    inFlightS.push_back(busy);
    waitS.push_back(waitEnd - waitBegin);
  } else {
    lastAction = seen;
    learned = true;
  }
}

void DataParallelRank::groupTotals(RankContext &ctx, double timeoutS) {
  std::vector<double> mine = {0, 0, double(inFlightS.size())};
  for (size_t k = 0; k < inFlightS.size(); ++k) {
    mine[0] += inFlightS[k];
    mine[1] += waitS[k];
  }
  std::vector<double> every = allGatherValues(*group, mine, timeoutS);
  double inFlight = 0, waited = 0, steps = 0;
  for (int d = 0; d < replicas; ++d) {
    inFlight += every[3 * size_t(d)];
    waited += every[3 * size_t(d) + 1];
    steps += every[3 * size_t(d) + 2];
  }
  recordEvent(ctx, TraceDataParallelTotals, inFlight, waited, int(steps), 0);
}

std::vector<double> allGatherValues(Communicator &group,
                                    const std::vector<double> &mine,
                                    double timeoutS) {
  std::vector<double> every(mine.size() * size_t(group.size()));
  group.startAllGather(mine.data(), every.data(), mine.size() * sizeof(double))
      ->wait(timeoutS);
  return every;
}

} // namespace rt
} // namespace pipeopt
