//===- ZeroBubbleAuto.cpp - zb-auto: automatic zero-bubble scheduling ----===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// zb-auto (AutoSchedule.h): the heuristic of Qi et al., "Zero Bubble
/// Pipeline Parallelism", ICLR'24, §3.1, as an event-driven list scheduler
/// in simulated time, and the library's timed evaluator.
///
/// Simulation: time advances from event to event (a rank becoming free, a
/// value arriving on another rank). At each event time the free ranks
/// decide in rank order; a decision starts one action at that time or
/// waits for the next event. Every action whose start is before the
/// current time has been decided, so a dependency not yet scheduled will
/// end no earlier than max(now, its rank's free time) + its duration (+
/// communication): that lower bound is the "gap" estimate for W placement
/// when the exact arrival is not known yet. Since an action starts exactly
/// when its rank is free or its last input arrives, executing the
/// resulting per-rank orders as soon as possible (timedMakespan()) gives
/// the same start times; autoSchedule() checks that.
///
/// Why the list scheduler cannot get stuck with every per-rank limit >= 1:
/// F and B run in microbatch order on every rank, so the activations rank
/// r + 1 holds belong to microbatches >= the oldest one rank r waits to
/// run B for; if rank r + 1 has not run F of that microbatch it holds
/// nothing and may run it; the last rank's B needs only its own F. A rank
/// whose W-held memory blocks an F can always run a pending W.
///
//===----------------------------------------------------------------------===//

#include "pipeopt/Schedule/ZeroBubbleAuto.h"

#include "ScheduleInternal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <functional>
#include <queue>

using namespace pipeopt::schedule;
using namespace pipeopt::schedule::detail;

namespace {

constexpr double kEps = 1e-9;

/// "%g" of a number, for messages.
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

/// Checks one per-stage time vector ("" = valid): empty or `n` entries,
/// finite and > 0.
llvm::Error checkTimes(llvm::StringRef who, llvm::StringRef what,
                       const std::vector<double> &v, int n) {
  if (v.empty())
    return llvm::Error::success();
  if (static_cast<int>(v.size()) != n)
    return err("{0}: {1} has {2} entries, expected one per stage ({3})", who,
               what, v.size(), n);
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]) || v[i] <= 0)
      return err("{0}: {1} of stage {2} must be finite and > 0 seconds, got "
                 "{3}",
                 who, what, i, num(v[i]));
  return llvm::Error::success();
}

double at(const std::vector<double> &v, int i) {
  return v.empty() ? 1.0 : v[i];
}

/// One variant of the heuristic (see AutoSchedule.h).
struct Variant {
  int extra = 0;        ///< In-flight cap min(limit, S - r + extra).
  bool patient = false; ///< Skip an F that would end after the next B arrives.
  bool lazyW = false;   ///< No W into gaps shorter than T_W.
  std::string describe() const {
    return llvm::formatv("in-flight cap min(limit, S-r+{0}), {1} warm-up, {2} "
                         "W placement",
                         extra, patient ? "patient" : "eager",
                         lazyW ? "lazy" : "paper")
        .str();
  }
};

/// Per-rank times (stage r on rank r) and the limit.
struct Problem {
  int S = 0, M = 0;
  std::vector<double> tf, tb, tw, limit;
  double comm = 0, frac = 0;
};

/// The list scheduler for one variant; fills `order` and returns the
/// makespan (seconds), or an internal error.
llvm::Expected<double> runVariant(const Problem &pb, const Variant &v,
                                  std::vector<std::vector<Action>> &order) {
  const int S = pb.S, M = pb.M;
  auto id = [M](int r, int m) { return r * M + m; };
  std::vector<double> fFin(S * M, -1), bFin(S * M, -1);
  std::vector<double> freeAt(S, 0), bubble(S, 0);
  std::vector<int> nextF(S, 0), nextB(S, 0), inflight(S, 0), cap(S);
  std::vector<std::deque<int>> pendingW(S);
  order.assign(S, {});
  for (int r = 0; r < S; ++r)
    cap[r] =
        std::max(1, std::min(static_cast<int>(std::floor(pb.limit[r] + kEps)),
                             S - r + v.extra));
  std::priority_queue<double, std::vector<double>, std::greater<double>> events;
  events.push(0);
  const long total = 3L * S * M;
  long scheduled = 0;
  double makespan = 0;
  auto mem = [&](int r) {
    return inflight[r] + pb.frac * static_cast<double>(pendingW[r].size());
  };
  auto start = [&](int r, double t, Phase ph, int m, double dur) {
    bubble[r] += t - freeAt[r];
    freeAt[r] = t + dur;
    makespan = std::max(makespan, freeAt[r]);
    order[r].push_back(Action::compute(ph, r, m));
    events.push(freeAt[r]);
    if (pb.comm > 0)
      events.push(freeAt[r] + pb.comm);
    ++scheduled;
  };
  // Arrival of B(r, m)'s gradient (r < S-1) or F(r, m)'s input (r > 0): the
  // exact time when the producer is scheduled, else a lower bound.
  auto arrival = [&](const std::vector<double> &fin, int q, int m, double dur,
                     double t, bool &known) {
    double f = fin[id(q, m)];
    known = f >= 0;
    if (known)
      return f + pb.comm;
    return std::max(t, freeAt[q]) + dur + pb.comm;
  };

  // Returns whether rank r started an action at time t.
  auto decide = [&](int r, double t) {
    // 1. B.
    bool hasB = nextB[r] < nextF[r];
    bool bKnown = false;
    double bArr = 0;
    if (hasB) {
      int m = nextB[r];
      if (r == S - 1) {
        bKnown = true;
        bArr = fFin[id(r, m)];
      } else {
        bArr = arrival(bFin, r + 1, m, pb.tb[r + 1], t, bKnown);
      }
      if (bKnown && bArr <= t) {
        start(r, t, Phase::B, m, pb.tb[r]);
        bFin[id(r, m)] = freeAt[r];
        --inflight[r];
        ++nextB[r];
        pendingW[r].push_back(m);
        return true;
      }
    }
    // 2. F.
    bool hasF = nextF[r] < M;
    bool fKnown = true;
    double fArr = 0;
    if (hasF && r > 0)
      fArr = arrival(fFin, r - 1, nextF[r], pb.tf[r - 1], t, fKnown);
    bool fReady = hasF && fKnown && fArr <= t;
    bool memBlocked = mem(r) + 1 > pb.limit[r] + kEps;
    bool fAllowed = hasF && inflight[r] + 1 <= cap[r] && !memBlocked;
    bool patientHold = false;
    if (fReady && fAllowed) {
      if (v.patient && hasB && bKnown && bArr < t + pb.tf[r] - kEps) {
        patientHold = true;
      } else {
        int m = nextF[r]++;
        start(r, t, Phase::F, m, pb.tf[r]);
        fFin[id(r, m)] = freeAt[r];
        ++inflight[r];
        return true;
      }
    }
    // 3. W.
    if (pendingW[r].empty())
      return false;
    bool doW = false;
    if (nextF[r] == M && nextB[r] == M) {
      doW = true; // Nothing else left on this rank.
    } else if (hasF && memBlocked && pb.frac > 0) {
      doW = true; // Recycle the W-held memory.
    } else {
      // Gap until the next F or B could start.
      double next = INFINITY;
      bool nextKnown = false;
      auto consider = [&](double a, bool known) {
        if (a < next - kEps || (std::fabs(a - next) <= kEps && known)) {
          next = a;
          nextKnown = known;
        }
      };
      if (hasB)
        consider(bArr, bKnown);
      if (hasF && fAllowed && !patientHold)
        consider(std::max(fArr, t), fKnown);
      if (!std::isfinite(next)) {
        doW = true; // Nothing to wait for but memory.
      } else {
        double gap = next - t;
        double maxBubble = *std::max_element(bubble.begin(), bubble.end());
        if (gap >= pb.tw[r] - kEps)
          doW = true;
        else if (nextKnown && !v.lazyW && gap > kEps &&
                 bubble[r] + gap > maxBubble + kEps)
          doW = true;
      }
    }
    if (!doW)
      return false;
    int m = pendingW[r].front();
    pendingW[r].pop_front();
    start(r, t, Phase::W, m, pb.tw[r]);
    return true;
  };

  while (scheduled < total) {
    if (events.empty())
      return err("zb-auto: internal error: the list scheduler is stuck with "
                 "{0} of {1} actions scheduled ({2})",
                 scheduled, total, v.describe());
    double t = events.top();
    while (!events.empty() && events.top() <= t)
      events.pop();
    for (int r = 0; r < S; ++r)
      if (freeAt[r] <= t && order[r].size() < static_cast<size_t>(3 * M))
        decide(r, t);
  }
  return makespan;
}

} // namespace

//===----------------------------------------------------------------------===//
// Timed evaluation
//===----------------------------------------------------------------------===//

llvm::Expected<double>
pipeopt::schedule::timedMakespan(const Schedule &s, const AutoScheduleInputs &t,
                                 const StageGraph *g) {
  const int NS = s.numStages, M = s.numMicrobatches;
  for (auto [what, v] : {std::pair<const char *, const std::vector<double> *>{
                             "forward times", &t.forwardSec},
                         {"input-gradient times", &t.backwardInputSec},
                         {"weight-gradient times", &t.backwardWeightSec}})
    if (llvm::Error e = checkTimes("timed evaluation", what, *v, NS))
      return std::move(e);
  if (!std::isfinite(t.commSec) || t.commSec < 0)
    return err("timed evaluation: communication time must be finite and >= 0 "
               "seconds, got {0}",
               num(t.commSec));
  StageGraph chain;
  if (!g) {
    chain = StageGraph::chain(NS);
    g = &chain;
  }
  ComputeIndex idx(NS, M);
  std::vector<char> present(idx.size(), 0);
  for (const auto &row : s.actions)
    for (const Action &a : row)
      if (a.isCompute() && idx.inRange(a.stage, a.microbatch))
        present[idx.key(a.phase, a.stage, a.microbatch)] = 1;
  auto hasSplitB = [&](int st, int mb) {
    return present[idx.key(Phase::B, st, mb)] != 0;
  };
  auto duration = [&](const Action &a) {
    switch (a.phase) {
    case Phase::F:
      return at(t.forwardSec, a.stage);
    case Phase::B:
      return at(t.backwardInputSec, a.stage);
    case Phase::W:
      return at(t.backwardWeightSec, a.stage);
    default:
      return at(t.backwardInputSec, a.stage) + at(t.backwardWeightSec, a.stage);
    }
  };
  std::vector<double> finish(idx.size(), -1);
  const int R = static_cast<int>(s.actions.size());
  std::vector<size_t> pos(R, 0);
  std::vector<double> freeAt(R, 0);
  double makespan = 0;
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < R; ++r) {
      const auto &row = s.actions[r];
      while (pos[r] < row.size()) {
        const Action &a = row[pos[r]];
        if (!a.isCompute()) {
          ++pos[r];
          continue;
        }
        if (!idx.inRange(a.stage, a.microbatch))
          return err("timed evaluation: rank {0}: {1} is out of range", r,
                     describe(a));
        double ready = freeAt[r];
        bool ok = true;
        for (auto [ph, st] :
             computeDeps(*g, a.phase, a.stage, a.microbatch, hasSplitB)) {
          double f = finish[idx.key(ph, st, a.microbatch)];
          if (f < 0) {
            ok = false;
            break;
          }
          if (s.rankOf(st, a.microbatch) != r)
            f += t.commSec;
          ready = std::max(ready, f);
        }
        if (!ok)
          break;
        freeAt[r] = ready + duration(a);
        finish[idx.key(a.phase, a.stage, a.microbatch)] = freeAt[r];
        makespan = std::max(makespan, freeAt[r]);
        ++pos[r];
        progress = true;
      }
    }
  }
  for (int r = 0; r < R; ++r)
    if (pos[r] < s.actions[r].size())
      return err("timed evaluation: no consistent execution order: rank {0} "
                 "waits forever at {1}",
                 r, describe(s.actions[r][pos[r]]));
  return makespan;
}

std::vector<double>
pipeopt::schedule::peakMemoryPerRank(const Schedule &s,
                                     double weightHeldFraction) {
  std::vector<double> peak;
  for (const auto &row : s.actions) {
    double cur = 0, best = 0;
    for (const Action &a : row) {
      switch (a.phase) {
      case Phase::F:
        cur += s.forwardOnly ? 0 : 1;
        break;
      case Phase::B:
        cur += weightHeldFraction - 1;
        break;
      case Phase::W:
        cur -= weightHeldFraction;
        break;
      case Phase::BW:
        cur -= 1;
        break;
      default:
        break;
      }
      best = std::max(best, cur);
    }
    peak.push_back(best);
  }
  return peak;
}

//===----------------------------------------------------------------------===//
// zb-auto
//===----------------------------------------------------------------------===//

llvm::Expected<AutoScheduleResult>
pipeopt::schedule::autoSchedule(const ScheduleParams &p) {
  const char *name = "zb-auto";
  if (p.numMicrobatches < 1)
    return err("{0} needs num-microbatches >= 1, got {1}", name,
               p.numMicrobatches);
  if (p.numStages < 0 || p.numRanks < 0 || p.virtualStages < 0)
    return err("{0}: num-stages, num-ranks and virtual-stages must not be "
               "negative",
               name);
  if (p.virtualStages > 1)
    return err("{0} uses 1 chunk(s) per rank; virtual-stages must be 1, got "
               "{1}",
               name, p.virtualStages);
  if (p.numRanks > 0 && p.numStages > 0 && p.numRanks != p.numStages)
    return err("{0}: num-stages ({1}) must equal num-ranks ({2}) x chunks per "
               "rank (1)",
               name, p.numStages, p.numRanks);
  int S = p.numRanks > 0 ? p.numRanks : p.numStages;
  if (S < 1)
    return err("{0} needs num-stages or num-ranks", name);
  if (S > kMaxPipelineCount || p.numMicrobatches > kMaxPipelineCount)
    return err("{0}: num-stages and num-microbatches must be <= {1}", name,
               kMaxPipelineCount);
  const int M = p.numMicrobatches;
  AutoScheduleInputs in = p.autoInputs ? *p.autoInputs : AutoScheduleInputs();

  for (auto [what, v] : {std::pair<const char *, const std::vector<double> *>{
                             "forward times", &in.forwardSec},
                         {"input-gradient times", &in.backwardInputSec},
                         {"weight-gradient times", &in.backwardWeightSec}})
    if (llvm::Error e = checkTimes(name, what, *v, S))
      return std::move(e);
  if (!std::isfinite(in.commSec) || in.commSec < 0)
    return err("{0}: communication time must be finite and >= 0 seconds, got "
               "{1}",
               name, num(in.commSec));
  if (!(in.weightHeldFraction >= 0 && in.weightHeldFraction <= 1))
    return err("{0}: the W-held fraction of an activation must be in [0, 1], "
               "got {1}",
               name, num(in.weightHeldFraction));

  Problem pb;
  pb.S = S;
  pb.M = M;
  pb.comm = in.commSec;
  pb.frac = in.weightHeldFraction;
  for (int r = 0; r < S; ++r) {
    pb.tf.push_back(at(in.forwardSec, r));
    pb.tb.push_back(at(in.backwardInputSec, r));
    pb.tw.push_back(at(in.backwardWeightSec, r));
  }
  if (in.memoryLimitBytes != 0) {
    if (in.memoryLimit)
      return err("{0}: give the memory limit in activations or in bytes, not "
                 "both",
                 name);
    if (!std::isfinite(in.memoryLimitBytes) || in.memoryLimitBytes < 0)
      return err("{0}: memory limit must be finite and > 0 bytes, got {1}",
                 name, num(in.memoryLimitBytes));
    if (static_cast<int>(in.activationBytes.size()) != S)
      return err("{0}: a memory limit in bytes needs the activation bytes of "
                 "every stage ({1}), got {2}",
                 name, S, in.activationBytes.size());
    for (int r = 0; r < S; ++r) {
      double a = in.activationBytes[r];
      if (!std::isfinite(a) || a <= 0)
        return err("{0}: activation bytes of stage {1} must be finite and > "
                   "0, got {2}",
                   name, r, num(a));
      double units = in.memoryLimitBytes / a;
      if (units < 1 - kEps)
        return err("{0}: memory limit {1} bytes is less than one activation "
                   "of stage {2} ({3} bytes); every rank must hold at least "
                   "one",
                   name, num(in.memoryLimitBytes), r, num(a));
      pb.limit.push_back(units);
    }
  } else {
    double limit = in.memoryLimit ? *in.memoryLimit : static_cast<double>(S);
    if (!std::isfinite(limit) || limit < 1)
      return err("{0} needs a memory limit >= 1 activation (one "
                 "microbatch's activations per rank), got {1}",
                 name, num(limit));
    pb.limit.assign(S, limit);
  }

  // Variants: in-flight cap extras 0..E (at most 2S + 1 of them, plus E),
  // where E lifts every rank's cap to its limit; each eager / patient,
  // paper / lazy W.
  int E = 0;
  for (int r = 0; r < S; ++r)
    E = std::max(E, static_cast<int>(std::floor(pb.limit[r] + kEps)) - (S - r));
  E = std::min(E, M);
  std::vector<int> extras;
  for (int e = 0; e <= std::min(E, 2 * S); ++e)
    extras.push_back(e);
  if (extras.back() != E)
    extras.push_back(E);

  const ScheduleInfo &info = infoOf(makeZBAuto);
  AutoScheduleResult best;
  bool have = false;
  double bestPeak = 0;
  std::vector<std::vector<Action>> order;
  for (int e : extras)
    for (bool patient : {false, true})
      for (bool lazyW : {false, true}) {
        Variant v{e, patient, lazyW};
        llvm::Expected<double> ms = runVariant(pb, v, order);
        if (!ms)
          return ms.takeError();
        ++best.variantsTried;
        Schedule s;
        s.name = info.name.str();
        s.splitBackward = true;
        s.numRanks = S;
        s.numStages = S;
        s.numMicrobatches = M;
        s.stageRank.push_back({});
        for (int r = 0; r < S; ++r)
          s.stageRank[0].push_back(r);
        s.microbatchPipeline.assign(M, 0);
        s.actions = order;
        // The timed execution of the table must reproduce the simulation.
        llvm::Expected<double> check = timedMakespan(s, in);
        if (!check)
          return check.takeError();
        if (std::fabs(*check - *ms) > kEps * std::max(1.0, *ms))
          return err("{0}: internal error: the table of variant '{1}' runs "
                     "in {2} s, the list scheduler planned {3} s",
                     name, v.describe(), num(*check), num(*ms));
        std::vector<double> peak = peakMemoryPerRank(s, pb.frac);
        for (int r = 0; r < S; ++r)
          if (peak[r] > pb.limit[r] + kEps)
            return err("{0}: internal error: variant '{1}' holds {2} "
                       "activations on rank {3}, limit {4}",
                       name, v.describe(), num(peak[r]), r, num(pb.limit[r]));
        double maxPeak = *std::max_element(peak.begin(), peak.end());
        double tol = kEps * std::max(1.0, *check);
        bool better =
            !have || *check < best.makespanSec - tol ||
            (*check <= best.makespanSec + tol && maxPeak < bestPeak - kEps);
        if (better) {
          have = true;
          best.schedule = std::move(s);
          best.makespanSec = *check;
          best.variant = v.describe();
          best.peakMemoryPerRank = std::move(peak);
          bestPeak = maxPeak;
        }
      }
  best.limitPerRank = pb.limit;
  return best;
}

/// zb-auto (Qi et al., Zero Bubble Pipeline Parallelism, ICLR'24, §3.1):
/// autoSchedule()'s table.
llvm::Expected<Schedule>
pipeopt::schedule::makeZBAuto(const ScheduleParams &p) {
  llvm::Expected<AutoScheduleResult> r = autoSchedule(p);
  if (!r)
    return r.takeError();
  return std::move(r->schedule);
}
