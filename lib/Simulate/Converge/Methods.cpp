//===- Methods.cpp - Sync, PipeDream, 2BW, RPD and LocalSGD runs ----------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// One engine for all methods: the state is, per replica and per block, the
/// list of every version of that block. A read records which version a
/// microbatch saw (the schedule table's weight version for the table-driven
/// methods); a block update evaluates the block gradient at the point made
/// of the recorded versions (weight stashing) and appends a new version.
/// Table-driven methods replay their table's compute actions in the global
/// order (unit-time slot, stage), the order sim::Staleness counts delays in
/// (arXiv 2606.03498, notes section 1.2).
///
//===----------------------------------------------------------------------===//

#include "ConvergeInternal.h"

#include "pipeopt/Simulate/Simulator.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <tuple>

using namespace pipeopt;
using namespace pipeopt::converge;
using schedule::Action;
using schedule::Phase;
using schedule::Schedule;

double converge::gradientNoise(uint64_t seed, uint64_t key, int coord) {
  return detail::noiseAt(seed, key, static_cast<uint64_t>(coord));
}

llvm::StringRef converge::methodName(Method m) {
  switch (m) {
  case Method::Sync:
    return "sync";
  case Method::PipeDream:
    return "pipedream";
  case Method::PipeDream2BW:
    return "pipedream-2bw";
  case Method::RPD:
    return "rpd";
  case Method::LocalSGD:
    return "localsgd";
  }
  return "?";
}

const std::vector<Method> &converge::allMethods() {
  static const std::vector<Method> all = {Method::Sync, Method::PipeDream,
                                          Method::PipeDream2BW, Method::RPD,
                                          Method::LocalSGD};
  return all;
}

llvm::Expected<Method> converge::parseMethod(llvm::StringRef name) {
  for (Method m : allMethods())
    if (name == methodName(m))
      return m;
  return detail::error("unknown method '" + name.str() +
                       "' (expected sync, pipedream, pipedream-2bw, rpd or "
                       "localsgd)");
}

namespace {
using detail::error;
using detail::formatAmount;

/// A compute action of a table at its start time: the unit-time slot
/// (unit model) or the start in seconds of sim::simulateTable (cost table).
struct Event {
  double time;
  int stage;
  const Action *action;
};

/// Start times of every action of `s`: unit-time slots without `costs`,
/// else the idealized table simulation's starts (seconds, free
/// communication). starts[rank][i] is meaningful for compute actions only.
llvm::Error actionStarts(const Schedule &s, const sim::CostTable *costs,
                         std::vector<std::vector<double>> &starts,
                         double *makespan) {
  starts.assign(s.actions.size(), {});
  for (size_t r = 0; r < s.actions.size(); ++r)
    starts[r].assign(s.actions[r].size(), 0.0);
  double end = 0;
  if (!costs) {
    llvm::Expected<std::vector<std::vector<int>>> slots =
        schedule::unitTimeSlots(s);
    if (!slots)
      return slots.takeError();
    for (size_t r = 0; r < s.actions.size(); ++r)
      for (size_t i = 0; i < s.actions[r].size(); ++i) {
        starts[r][i] = (*slots)[r][i];
        if (s.actions[r][i].isCompute())
          end = std::max(end, starts[r][i] + 1);
      }
    *makespan = end;
    return llvm::Error::success();
  }
  sim::Timeline tl;
  llvm::Expected<sim::Metrics> m =
      sim::simulateTable(s, *costs, machine::idealSystem(), &tl);
  if (!m)
    return m.takeError();
  // tl.compute lists every rank's compute actions in table order.
  std::vector<size_t> next(s.actions.size(), 0);
  for (const sim::TimedCompute &tc : tl.compute) {
    if (tc.rank < 0 || tc.rank >= static_cast<int>(s.actions.size()))
      return error("table simulation returned an unknown rank");
    auto &row = s.actions[tc.rank];
    size_t &i = next[tc.rank];
    while (i < row.size() && !row[i].isCompute())
      ++i;
    if (i == row.size() || row[i].phase != tc.action.phase ||
        row[i].stage != tc.action.stage ||
        row[i].microbatch != tc.action.microbatch)
      return error("table simulation of '" + s.name +
                   "' does not list the table's compute actions in order");
    starts[tc.rank][i++] = tc.startSec;
  }
  *makespan = m->makespanSec;
  return llvm::Error::success();
}

/// The table's compute actions in the global order (start time, stage),
/// and its makespan (slots or seconds).
llvm::Expected<std::vector<Event>> orderedEvents(const Schedule &s,
                                                 const sim::CostTable *costs,
                                                 double *makespan) {
  std::vector<std::vector<double>> starts;
  if (llvm::Error err = actionStarts(s, costs, starts, makespan))
    return std::move(err);
  std::vector<Event> ev;
  for (size_t r = 0; r < s.actions.size(); ++r)
    for (size_t i = 0; i < s.actions[r].size(); ++i) {
      const Action &a = s.actions[r][i];
      if (!a.isCompute())
        continue;
      if (a.phase != Phase::F && a.phase != Phase::BW)
        return error("schedule '" + s.name + "' has a split backward (" +
                     schedule::describe(a) +
                     "); the optimization simulator needs full backwards");
      ev.push_back({starts[r][i], a.stage, &a});
    }
  std::stable_sort(ev.begin(), ev.end(), [](const Event &a, const Event &b) {
    return a.time != b.time ? a.time < b.time : a.stage < b.stage;
  });
  return ev;
}

/// Every entry of a cost table needs F > 0 and BW > 0 (finite): the
/// replay orders actions by start time and counts budgets in actions.
llvm::Error checkCostTable(const sim::CostTable &t) {
  if (t.size() == 0)
    return error("cost table has no stages");
  for (int s = 0; s < t.size(); ++s) {
    const sim::StageCost &c = t.stages[s];
    if (!(std::isfinite(c.forwardSec) && c.forwardSec > 0 &&
          std::isfinite(c.backwardSec()) && c.backwardSec() > 0))
      return error(llvm::formatv("cost table entry {0}: the optimization "
                                 "simulator needs F > 0 and B + W > 0 "
                                 "seconds, got F = {1}, B + W = {2}",
                                 s, c.forwardSec, c.backwardSec())
                       .str());
  }
  return llvm::Error::success();
}

/// A key that identifies a cost table's times (cache keys).
std::string costKey(const sim::CostTable *costs) {
  return costs ? sim::costTableToJSON(*costs) : std::string();
}

llvm::Expected<Schedule> generate(llvm::StringRef name, int S, int M) {
  schedule::ScheduleParams p;
  p.numStages = S;
  p.numMicrobatches = M;
  return schedule::makeSchedule(name, p);
}

/// A generated table with its ordered events (which point into it).
struct TableEvents {
  Schedule schedule;
  std::vector<Event> events;
  double makespan = 0; ///< Slots or seconds.
};

/// Generates (or reuses: sweeps run the same table for every step and seed)
/// the table `name` for S stages and M microbatches, with its events.
llvm::Expected<std::shared_ptr<const TableEvents>>
tableEvents(llvm::StringRef name, int S, int M, const sim::CostTable *costs) {
  static std::mutex mu;
  static std::map<std::tuple<std::string, int, int, std::string>,
                  std::shared_ptr<const TableEvents>>
      cache;
  auto key = std::make_tuple(name.str(), S, M, costKey(costs));
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end())
      return it->second;
  }
  auto t = std::make_shared<TableEvents>();
  llvm::Expected<Schedule> s = generate(name, S, M);
  if (!s)
    return s.takeError();
  t->schedule = std::move(*s);
  llvm::Expected<std::vector<Event>> ev =
      orderedEvents(t->schedule, costs, &t->makespan);
  if (!ev)
    return ev.takeError();
  t->events = std::move(*ev);
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() > 64)
    cache.clear();
  cache[key] = t;
  return std::shared_ptr<const TableEvents>(t);
}

/// The time budget T: slots (unit model) or seconds (cost table).
double budgetOf(const RunConfig &c) {
  return c.costs ? c.budgetSec : static_cast<double>(c.budgetSlots);
}

/// The simulation state and the curve sampler shared by all methods.
class Engine {
public:
  Engine(const Objective &obj, const RunConfig &c, int replicas)
      : obj_(obj), c_(c), S_(c.stages), bounds_(blockBounds(obj.dim(), S_)),
        versions_(replicas), z_(obj.dim()), g_(obj.dim()) {
    std::vector<double> x0 = obj.initialPoint();
    for (auto &rep : versions_) {
      rep.resize(S_);
      for (int s = 0; s < S_; ++s)
        rep[s].push_back(block(x0, s));
    }
    // Unit model: integer slots floor(T j / P); cost table: T j / P seconds.
    for (int j = 0; j <= c.numSamples; ++j)
      sampleTimes_.push_back(
          c.costs ? c.budgetSec * j / c.numSamples
                  : static_cast<double>(static_cast<long>(
                        (static_cast<__int128>(c.budgetSlots) * j) /
                        c.numSamples)));
    result_.initialSubopt = obj.value(x0.data()) - obj.optimum();
  }

  int stages() const { return S_; }
  int lo(int s) const { return bounds_[s]; }
  int hi(int s) const { return bounds_[s + 1]; }
  int currentVersion(int rep, int s) const {
    return static_cast<int>(versions_[rep][s].size()) - 1;
  }
  bool stopped() const { return stopped_; }
  RunResult &result() { return result_; }

  /// Emits every curve point whose time is <= `time` (the state holds all
  /// actions that started before `time`). Returns false once the run
  /// diverged.
  bool advanceTo(double time) {
    while (next_ < sampleTimes_.size() && sampleTimes_[next_] <= time) {
      double f = INFINITY;
      if (!stopped_) {
        std::vector<double> x = evalPoint();
        f = obj_.value(x.data()) - obj_.optimum();
        if (!std::isfinite(f) ||
            f > c_.divergeFactor * std::max(result_.initialSubopt, 1e-300)) {
          stopped_ = true;
          result_.diverged = true;
          f = INFINITY;
        }
      }
      const double t = sampleTimes_[next_];
      result_.curve.push_back(
          {c_.costs ? -1 : static_cast<long>(t), t, result_.blockUpdates, f});
      ++next_;
    }
    return !stopped_;
  }

  /// Assembles z from (replica, per-block version) and returns the noisy
  /// gradient of block s for `batch`, noise key `key`.
  const double *gradient(int rep, const std::vector<int> &ver, int s, int batch,
                         uint64_t key) {
    for (int b = 0; b < S_; ++b) {
      const std::vector<double> &v = versions_[rep][b][ver[b]];
      std::copy(v.begin(), v.end(), z_.begin() + lo(b));
    }
    obj_.blockGradient(batch, z_.data(), lo(s), hi(s), g_.data());
    if (c_.noiseStd != 0)
      for (int j = lo(s); j < hi(s); ++j)
        g_[j - lo(s)] += c_.noiseStd * detail::noiseAt(c_.seed, key, j);
    return g_.data();
  }

  /// Appends x_s - scale * g as the new version of replica rep's block s.
  void apply(int rep, int s, const double *g, double scale) {
    std::vector<double> next = versions_[rep][s].back();
    for (int j = 0, e = hi(s) - lo(s); j < e; ++j)
      next[j] -= scale * g[j];
    versions_[rep][s].push_back(std::move(next));
    ++result_.blockUpdates;
  }

  /// Drops every version but the newest (sync: after a step no read refers
  /// to an older one); version numbers restart at 0.
  void collapse() {
    for (auto &rep : versions_)
      for (auto &blk : rep)
        if (blk.size() > 1)
          blk.erase(blk.begin(), blk.end() - 1);
  }

  /// Block s of replica rep at version v.
  const std::vector<double> &blockAt(int rep, int s, int v) const {
    return versions_[rep][s][v];
  }

  /// Replaces every replica by the replica average (LocalSGD), resetting
  /// the version lists.
  void averageReplicas() {
    for (int s = 0; s < S_; ++s) {
      std::vector<double> avg(hi(s) - lo(s), 0.0);
      for (auto &rep : versions_)
        for (size_t j = 0; j < avg.size(); ++j)
          avg[j] += rep[s].back()[j];
      for (double &a : avg)
        a /= static_cast<double>(versions_.size());
      for (auto &rep : versions_)
        rep[s].assign(1, avg);
    }
  }

  void finish() {
    advanceTo(budgetOf(c_));
    result_.finalSubopt = result_.curve.back().subopt;
    result_.finalPoint = evalPoint();
  }

private:
  std::vector<double> block(const std::vector<double> &x, int s) const {
    return std::vector<double>(x.begin() + lo(s), x.begin() + hi(s));
  }
  /// The evaluated point: the newest blocks, averaged over replicas.
  std::vector<double> evalPoint() const {
    std::vector<double> x(obj_.dim(), 0.0);
    for (const auto &rep : versions_)
      for (int s = 0; s < S_; ++s)
        for (int j = lo(s); j < hi(s); ++j)
          x[j] += rep[s].back()[j - lo(s)];
    if (versions_.size() > 1)
      for (double &v : x)
        v /= static_cast<double>(versions_.size());
    return x;
  }

  const Objective &obj_;
  const RunConfig &c_;
  int S_;
  std::vector<int> bounds_;
  /// [replica][block][version] -> block values.
  std::vector<std::vector<std::vector<std::vector<double>>>> versions_;
  std::vector<double> z_, g_;
  std::vector<double> sampleTimes_;
  size_t next_ = 0;
  bool stopped_ = false;
  RunResult result_;
};

/// Per-(microbatch, block) reads of a table-driven run.
struct Reads {
  int S;
  std::vector<int> version;  ///< [m * S + s']
  std::vector<long> updates; ///< Block updates done at the read.
  Reads(int S, int M)
      : S(S), version(static_cast<size_t>(S) * M, -1),
        updates(static_cast<size_t>(S) * M, -1) {}

  /// The forward of microbatch `mb` on `stage` read block `stage` at weight
  /// version `v`, after `blockUpdates` block updates.
  void forward(int mb, int stage, int v, long blockUpdates) {
    version[index(mb, stage)] = v;
    updates[index(mb, stage)] = blockUpdates;
  }
  /// The versions the forward passes of microbatch `mb` read, per block.
  void versions(int mb, std::vector<int> &ver) const {
    for (int b = 0; b < S; ++b)
      ver[b] = version[index(mb, b)];
  }
  /// Block updates applied since the forward of microbatch `mb` read each
  /// block (its staleness, per block), now that `blockUpdates` are done.
  std::vector<int> delays(int mb, long blockUpdates) const {
    std::vector<int> d(S);
    for (int b = 0; b < S; ++b)
      d[b] = static_cast<int>(blockUpdates - updates[index(mb, b)]);
    return d;
  }

private:
  size_t index(int mb, int s) const { return static_cast<size_t>(mb) * S + s; }
};

/// Records update delays when asked.
void record(Engine &e, const RunConfig &c, double time, int stage, int mb,
            int batch, int rep, std::vector<int> delay) {
  if (!c.recordUpdates)
    return;
  UpdateRecord u;
  u.slot = c.costs ? -1 : static_cast<long>(time);
  u.time = time;
  u.stage = stage;
  u.microbatch = mb;
  u.batch = batch;
  u.replica = rep;
  u.delay = std::move(delay);
  e.result().updates.push_back(std::move(u));
}

/// PipeDream and PipeDream-2BW: one pass over the generated async table.
/// `every` backwards per block update (1: PipeDream; S: 2BW, mean of the
/// accumulated gradients).
llvm::Error runAsyncTable(Engine &e, const Objective &obj, const RunConfig &c,
                          llvm::StringRef name, int every) {
  const int S = c.stages;
  llvm::Expected<int> M =
      pipeDreamMicrobatchesForTime(S, budgetOf(c), c.costs.get());
  if (!M)
    return M.takeError();
  auto table = tableEvents(name, S, *M, c.costs.get());
  if (!table)
    return table.takeError();
  const std::vector<Event> *events = &(*table)->events;
  Reads reads(S, *M);
  std::vector<std::vector<double>> acc(S);
  std::vector<int> pending(S, 0);
  std::vector<int> ver(S);
  for (const Event &ev : *events) {
    if (ev.time >= budgetOf(c) || !e.advanceTo(ev.time))
      break;
    const Action &a = *ev.action;
    if (a.phase == Phase::F) {
      if (a.weightVersion != e.currentVersion(0, a.stage))
        return error(
            llvm::formatv("{0}: the table's F(stage {1}, mb {2}) reads weight "
                          "version {3}, the replay holds version {4}",
                          name, a.stage, a.microbatch, a.weightVersion,
                          e.currentVersion(0, a.stage))
                .str());
      reads.forward(a.microbatch, a.stage, a.weightVersion,
                    e.result().blockUpdates);
      if (a.stage == 0)
        ++e.result().microbatches;
      continue;
    }
    // Backward of microbatch m on stage s: the gradient of block s at the
    // versions its forward pass read (weight stashing).
    reads.versions(a.microbatch, ver);
    if (c.forceZeroDelay)
      for (int b = 0; b < S; ++b)
        ver[b] = e.currentVersion(0, b);
    const int batch = a.microbatch % obj.numBatches();
    const double *g = e.gradient(0, ver, a.stage, batch, a.microbatch);
    const int len = e.hi(a.stage) - e.lo(a.stage);
    if (every == 1) {
      record(e, c, ev.time, a.stage, a.microbatch, batch, 0,
             reads.delays(a.microbatch, e.result().blockUpdates));
      e.apply(0, a.stage, g, c.stepSize);
      continue;
    }
    std::vector<double> &sum = acc[a.stage];
    if (sum.empty())
      sum.assign(len, 0.0);
    for (int j = 0; j < len; ++j)
      sum[j] += g[j];
    if (++pending[a.stage] == every) {
      record(e, c, ev.time, a.stage, a.microbatch, batch, 0,
             reads.delays(a.microbatch, e.result().blockUpdates));
      e.apply(0, a.stage, sum.data(), c.stepSize / every);
      sum.assign(len, 0.0);
      pending[a.stage] = 0;
    }
  }
  return llvm::Error::success();
}

/// Synchronous SGD: the 1F1B (flush) table of M microbatches (GPipe when
/// M < S) repeated back to back; every stage applies the mean gradient of the
/// step after its last backward of the step.
llvm::Error runSync(Engine &e, const Objective &obj, const RunConfig &c) {
  const int S = c.stages;
  const int M = c.syncMicrobatches ? c.syncMicrobatches : S;
  // 1F1B needs M >= S; with fewer microbatches GPipe's flush has the same
  // unit-time makespan 2(M + S - 1) and the same reads (step-start weights).
  auto table = tableEvents(detail::syncSchedule(M, S), S, M, c.costs.get());
  if (!table)
    return table.takeError();
  const std::vector<Event> *events = &(*table)->events;
  const double period = (*table)->makespan, T = budgetOf(c);
  std::vector<std::vector<double>> acc(S);
  std::vector<int> pending(S, 0), ver(S);
  Reads reads(S, M);
  for (long step = 0; step * period < T; ++step) {
    for (const Event &ev : *events) {
      const double slot = step * period + ev.time;
      if (slot >= T || !e.advanceTo(slot))
        return llvm::Error::success();
      const Action &a = *ev.action;
      const long mb = step * M + a.microbatch;
      if (a.phase == Phase::F) {
        reads.forward(a.microbatch, a.stage, e.currentVersion(0, a.stage),
                      e.result().blockUpdates);
        if (a.stage == 0)
          ++e.result().microbatches;
        continue;
      }
      reads.versions(a.microbatch, ver);
      if (c.forceZeroDelay)
        for (int b = 0; b < S; ++b)
          ver[b] = e.currentVersion(0, b);
      const int batch = static_cast<int>(mb % obj.numBatches());
      const double *g = e.gradient(0, ver, a.stage, batch, mb);
      const int len = e.hi(a.stage) - e.lo(a.stage);
      std::vector<double> &sum = acc[a.stage];
      if (sum.empty())
        sum.assign(len, 0.0);
      for (int j = 0; j < len; ++j)
        sum[j] += g[j];
      if (++pending[a.stage] == M) {
        record(e, c, slot, a.stage, static_cast<int>(mb), batch, 0,
               reads.delays(a.microbatch, e.result().blockUpdates));
        e.apply(0, a.stage, sum.data(), c.stepSize / M);
        sum.assign(len, 0.0);
        pending[a.stage] = 0;
      }
    }
    e.collapse(); // the step's reads are all consumed
  }
  return llvm::Error::success();
}

/// Randomized PipeDream (notes section 2.1): K = the block updates
/// PipeDream completes in the budget, at PipeDream's update slots; update k
/// draws its block and batch uniformly and, per block s', a delay
/// d ~ U{0..min(delta, k)}, reading block s' of x^{k-d}.
llvm::Error runRPD(Engine &e, const Objective &obj, const RunConfig &c) {
  const int S = c.stages;
  const long delta = c.rpdDelta >= 0
                         ? c.rpdDelta
                         : static_cast<long>(std::floor(S * S - S / 2.0));
  llvm::Expected<int> M =
      pipeDreamMicrobatchesForTime(S, budgetOf(c), c.costs.get());
  if (!M)
    return M.takeError();
  auto table = tableEvents(schedule::kPipeDreamSchedule, S, *M, c.costs.get());
  if (!table)
    return table.takeError();
  const std::vector<Event> *events = &(*table)->events;
  std::vector<double> updateSlots;
  for (const Event &ev : *events)
    if (ev.action->phase == Phase::BW && ev.time < budgetOf(c))
      updateSlots.push_back(ev.time);
  detail::Rng rng(detail::mix64(c.seed) ^ 0x5D1Eull);
  // writtenAt[s] = global update indices that wrote block s, ascending.
  std::vector<std::vector<long>> writtenAt(S);
  std::vector<int> ver(S), delay(S);
  for (long k = 0; k < static_cast<long>(updateSlots.size()); ++k) {
    if (!e.advanceTo(updateSlots[k]))
      break;
    const int s = static_cast<int>(rng.below(S));
    const int batch = static_cast<int>(rng.below(obj.numBatches()));
    for (int b = 0; b < S; ++b) {
      long d = static_cast<long>(rng.below(std::min(delta, k) + 1));
      if (c.forceZeroDelay)
        d = 0;
      // Version of block b in x^{k-d}: its writes before update k - d.
      const std::vector<long> &w = writtenAt[b];
      ver[b] = static_cast<int>(std::lower_bound(w.begin(), w.end(), k - d) -
                                w.begin());
      delay[b] = static_cast<int>(d);
    }
    const double *g = e.gradient(0, ver, s, batch, static_cast<uint64_t>(k));
    record(e, c, updateSlots[k], s, -1, batch, 0, delay);
    e.apply(0, s, g, c.stepSize);
    writtenAt[s].push_back(k);
  }
  return llvm::Error::success();
}

/// LocalSGD (notes section 4): rounds of the makeLocalSGDRound table back
/// to back; replica i mod R runs microbatch i of a round on its own copy;
/// after the round's last backward the replicas are averaged (free).
llvm::Error runLocalSGD(Engine &e, const Objective &obj, const RunConfig &c) {
  const int S = c.stages;
  const int R = c.replicas ? c.replicas : S, H = c.localSteps;
  llvm::Expected<Schedule> sched = makeLocalSGDRound(S, R, H);
  if (!sched)
    return sched.takeError();
  double period = 0;
  const double T = budgetOf(c);
  llvm::Expected<std::vector<Event>> eventsOr =
      orderedEvents(*sched, c.costs.get(), &period);
  if (!eventsOr)
    return eventsOr.takeError();
  const std::vector<Event> *events = &*eventsOr;
  const int M = R * H;
  Reads reads(S, M);
  std::vector<int> ver(S);
  for (long round = 0; round * period < T; ++round) {
    for (const Event &ev : *events) {
      const double slot = round * period + ev.time;
      if (slot >= T || !e.advanceTo(slot))
        return llvm::Error::success();
      const Action &a = *ev.action;
      const int rep = a.microbatch % R, local = a.microbatch / R;
      const long mb = round * M + a.microbatch;
      if (a.phase == Phase::F) {
        // No staleness within a run: the replica's previous local step
        // has left this stage.
        if (e.currentVersion(rep, a.stage) != local)
          return error(
              llvm::formatv("localsgd round table: F(stage {0}, mb {1}) of "
                            "replica {2} sees {3} local updates, expected {4}",
                            a.stage, a.microbatch, rep,
                            e.currentVersion(rep, a.stage), local)
                  .str());
        reads.forward(a.microbatch, a.stage, local, e.result().blockUpdates);
        if (a.stage == 0)
          ++e.result().microbatches;
        continue;
      }
      reads.versions(a.microbatch, ver);
      const int batch = static_cast<int>(mb % obj.numBatches());
      const double *g = e.gradient(rep, ver, a.stage, batch, mb);
      record(e, c, slot, a.stage, static_cast<int>(mb), batch, rep,
             reads.delays(a.microbatch, e.result().blockUpdates));
      e.apply(rep, a.stage, g, c.stepSize);
    }
    if ((round + 1) * period <= T)
      e.averageReplicas();
  }
  return llvm::Error::success();
}

} // namespace

llvm::Expected<int> converge::pipeDreamMicrobatchesForBudget(int stages,
                                                             long budget) {
  if (stages < 1 || budget < 1)
    return error("pipedream budget needs stages >= 1 and budget >= 1 slot");
  return pipeDreamMicrobatchesForTime(stages, static_cast<double>(budget),
                                      nullptr);
}

llvm::Expected<int>
converge::pipeDreamMicrobatchesForTime(int stages, double budget,
                                       const sim::CostTable *costs) {
  if (stages < 1 || !(std::isfinite(budget) && budget > 0))
    return error("pipedream budget needs stages >= 1 and a budget > 0");
  sim::CostTable resampled;
  if (costs) {
    if (llvm::Error err = checkCostTable(*costs))
      return std::move(err);
    if (costs->size() != stages) {
      resampled = costs->resample(stages);
      costs = &resampled;
    }
  }
  static std::mutex mu;
  static std::map<std::tuple<int, double, std::string>, int> known;
  const auto key = std::make_tuple(stages, budget, costKey(costs));
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = known.find(key);
    if (it != known.end())
      return it->second;
  }
  auto length = [&](int M) -> llvm::Expected<double> {
    llvm::Expected<Schedule> s =
        generate(schedule::kPipeDreamSchedule, stages, M);
    if (!s)
      return s.takeError();
    std::vector<std::vector<double>> starts;
    double makespan = 0;
    if (llvm::Error err = actionStarts(*s, costs, starts, &makespan))
      return std::move(err);
    return makespan;
  };
  // Smallest M whose timeline length reaches the budget. Unit slots: M <=
  // budget. Cost table: stage 0 runs every F and B, so the makespan is at
  // least M (F_0 + BW_0) and M <= budget / (F_0 + BW_0) + 1.
  double bound = budget;
  if (costs) {
    const double work0 =
        costs->stages[0].forwardSec + costs->stages[0].backwardSec();
    bound = std::ceil(budget / work0) + 1;
  }
  int lo = 1, hi = static_cast<int>(
                  std::min<double>(bound, schedule::kMaxPipelineCount));
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    llvm::Expected<double> len = length(mid);
    if (!len)
      return len.takeError();
    if (*len >= budget)
      hi = mid;
    else
      lo = mid + 1;
  }
  if (lo == schedule::kMaxPipelineCount) {
    llvm::Expected<double> len = length(lo);
    if (!len)
      return len.takeError();
    if (*len < budget)
      return error(llvm::formatv("budget {0} is longer than the largest "
                                 "PipeDream table ({1} microbatches, {2} "
                                 "{3})",
                                 formatAmount(budget), lo, formatAmount(*len),
                                 costs ? "seconds" : "slots")
                       .str());
  }
  std::lock_guard<std::mutex> lock(mu);
  known[key] = lo;
  return lo;
}

llvm::Expected<Schedule> converge::makeLocalSGDRound(int S, int R, int H) {
  if (S < 1 || R < 1 || H < 1)
    return error(llvm::formatv("localsgd needs stages, replicas and local "
                               "steps >= 1, got {0}, {1}, {2}",
                               S, R, H)
                     .str());
  if (static_cast<long>(R) * H > schedule::kMaxPipelineCount)
    return error("localsgd: replicas x local steps exceeds the largest "
                 "microbatch count");
  const int M = R * H;
  Schedule s;
  s.name = "localsgd-round";
  s.numRanks = S;
  s.numStages = S;
  s.numMicrobatches = M;
  s.stageRank.assign(1, std::vector<int>(S));
  std::iota(s.stageRank[0].begin(), s.stageRank[0].end(), 0);
  s.actions.resize(S);
  if (R < S) {
    // Fewer replicas than stages: the order is that of a greedy unit-time
    // run (the paper's simulate_local_sgd_1f1b rule, notes section 4): in
    // every slot each stage runs a ready op; F(m, s) is ready once F(m, s-1)
    // and B(m - R, s) finished in earlier slots, B(m, s) once F(m, s) and
    // B(m, s+1) did; backward first until a stage's first backward, then
    // alternate, falling back to whichever op is ready.
    const long never = -1;
    std::vector<std::vector<long>> fDone(S, std::vector<long>(M, never)),
        bDone(S, std::vector<long>(M, never));
    std::vector<int> nextF(S, 0), nextB(S, 0);
    std::vector<char> lastWasB(S, 0), anyB(S, 0);
    auto done = [](long at, long t) { return at != never && at < t; };
    for (long t = 0, left = 2L * S * M; left > 0; ++t) {
      for (int st = 0; st < S; ++st) {
        const int f = nextF[st], b = nextB[st];
        bool fReady = f < M && (st == 0 || done(fDone[st - 1][f], t)) &&
                      (f < R || done(bDone[st][f - R], t));
        bool bReady = b < M && done(fDone[st][b], t) &&
                      (st == S - 1 || done(bDone[st + 1][b], t));
        bool runB = bReady && (!fReady || !anyB[st] || !lastWasB[st]);
        if (runB) {
          bDone[st][b] = t;
          s.actions[st].push_back(Action::compute(Phase::BW, st, b));
          ++nextB[st];
          anyB[st] = lastWasB[st] = 1;
          --left;
        } else if (fReady) {
          fDone[st][f] = t;
          s.actions[st].push_back(Action::compute(Phase::F, st, f));
          ++nextF[st];
          lastWasB[st] = 0;
          --left;
        }
      }
      if (t > 4L * S * M + 4L * S)
        return error("localsgd: the greedy round did not finish");
    }
    if (llvm::Error err = schedule::validate(s))
      return std::move(err);
    return s;
  }
  for (int r = 0; r < S; ++r) {
    auto &row = s.actions[r];
    const int warm = std::min({S - 1 - r, R - 1, M});
    for (int m = 0; m < warm; ++m)
      row.push_back(Action::compute(Phase::F, r, m));
    for (int i = 0; i + warm < M; ++i) {
      row.push_back(Action::compute(Phase::F, r, warm + i));
      row.push_back(Action::compute(Phase::BW, r, i));
    }
    for (int m = M - warm; m < M; ++m)
      row.push_back(Action::compute(Phase::BW, r, m));
  }
  if (llvm::Error err = schedule::validate(s))
    return std::move(err);
  return s;
}

llvm::Expected<RunResult> converge::runMethod(const Objective &obj,
                                              const RunConfig &c) {
  if (c.stages < 1 || c.stages > obj.dim())
    return error(llvm::formatv("stages must be in [1, {0}] (one block of at "
                               "least one parameter per stage), got {1}",
                               obj.dim(), c.stages)
                     .str());
  if (c.stages > 1024)
    return error("stages must be at most 1024");
  RunConfig timed;
  const RunConfig *cp = &c;
  if (c.costs) {
    if (llvm::Error err = checkCostTable(*c.costs))
      return std::move(err);
    timed = c;
    if (c.costs->size() != c.stages)
      timed.costs =
          std::make_shared<const sim::CostTable>(c.costs->resample(c.stages));
    double fastest = INFINITY;
    for (const sim::StageCost &s : timed.costs->stages)
      fastest = std::min(fastest, s.forwardSec + s.backwardSec());
    if (!(std::isfinite(c.budgetSec) && c.budgetSec > 0) ||
        c.budgetSec / fastest > 1e7)
      return error(llvm::formatv("budget must be > 0 seconds and at most "
                                 "10^7 microbatches (F + B) of the fastest "
                                 "stage ({0} s), got {1} s",
                                 formatAmount(fastest),
                                 formatAmount(c.budgetSec))
                       .str());
    cp = &timed;
  } else if (c.budgetSlots < 1 || c.budgetSlots > 10000000) {
    return error(llvm::formatv("budget must be in [1, 10000000] slots, got "
                               "{0}",
                               c.budgetSlots)
                     .str());
  }
  if (!(std::isfinite(c.stepSize) && c.stepSize > 0))
    return error("step size must be a finite number > 0");
  if (!(std::isfinite(c.noiseStd) && c.noiseStd >= 0))
    return error("noise must be a finite number >= 0");
  if (c.numSamples < 1 || c.numSamples > 100000)
    return error("curve samples must be in [1, 100000]");
  if (c.localSteps < 1 || c.replicas < 0 || c.syncMicrobatches < 0)
    return error("local steps must be >= 1, replicas and sync microbatches "
                 ">= 0 (0: the default S)");
  if (c.replicas > schedule::kMaxPipelineCount ||
      c.localSteps > schedule::kMaxPipelineCount ||
      c.syncMicrobatches > schedule::kMaxPipelineCount)
    return error("replicas, local steps and sync microbatches must be at "
                 "most 65536");
  if (c.rpdDelta > 100000000)
    return error("rpd delta must be at most 1e8");
  const int replicas =
      c.method == Method::LocalSGD ? (c.replicas ? c.replicas : c.stages) : 1;
  Engine e(obj, *cp, replicas);
  e.advanceTo(0);
  llvm::Error err = llvm::Error::success();
  switch (c.method) {
  case Method::Sync:
    err = runSync(e, obj, *cp);
    break;
  case Method::PipeDream:
    err = runAsyncTable(e, obj, *cp, schedule::kPipeDreamSchedule, 1);
    break;
  case Method::PipeDream2BW:
    err = runAsyncTable(e, obj, *cp, schedule::kPipeDream2BWSchedule, c.stages);
    break;
  case Method::RPD:
    err = runRPD(e, obj, *cp);
    break;
  case Method::LocalSGD:
    err = runLocalSGD(e, obj, *cp);
    break;
  }
  if (err)
    return std::move(err);
  e.finish();
  return std::move(e.result());
}
