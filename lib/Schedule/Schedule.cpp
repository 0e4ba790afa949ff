//===- Schedule.cpp - Schedule tables: core, validation, views --*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Core Schedule / StageGraph methods, validate(), unit-time execution,
/// the text grid and the helpers the simulator uses (warm-up counts,
/// in-flight microbatches).
///
//===----------------------------------------------------------------------===//

#include "ScheduleInternal.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <map>
#include <set>

using namespace pipeopt::schedule;
using namespace pipeopt::schedule::detail;

char ScheduleError::ID = 0;

//===----------------------------------------------------------------------===//
// Core types
//===----------------------------------------------------------------------===//

Action Action::compute(Phase phase, int stage, int microbatch,
                       int weightVersion) {
  Action a;
  a.phase = phase;
  a.stage = stage;
  a.microbatch = microbatch;
  a.weightVersion = weightVersion;
  return a;
}

Action Action::send(int stage, int microbatch, int peerRank, int peerStage,
                    bool backward) {
  Action a;
  a.phase = Phase::Send;
  a.stage = stage;
  a.microbatch = microbatch;
  a.peerRank = peerRank;
  a.peerStage = peerStage;
  a.backward = backward;
  return a;
}

Action Action::recv(int stage, int microbatch, int peerRank, int peerStage,
                    bool backward) {
  Action a = send(stage, microbatch, peerRank, peerStage, backward);
  a.phase = Phase::Recv;
  return a;
}

bool Action::operator==(const Action &o) const {
  return phase == o.phase && stage == o.stage && microbatch == o.microbatch &&
         peerRank == o.peerRank && peerStage == o.peerStage &&
         backward == o.backward && value == o.value &&
         weightVersion == o.weightVersion;
}

int Schedule::pipelineOf(int microbatch) const {
  if (microbatch < 0 ||
      microbatch >= static_cast<int>(microbatchPipeline.size()))
    return 0;
  return microbatchPipeline[microbatch];
}

int Schedule::rankOf(int stage, int microbatch) const {
  int p = pipelineOf(microbatch);
  if (p < 0 || p >= numPipelines() || stage < 0 ||
      stage >= static_cast<int>(stageRank[p].size()))
    return -1;
  return stageRank[p][stage];
}

bool Schedule::hasCommunication() const {
  for (const auto &row : actions)
    for (const Action &a : row)
      if (a.isComm())
        return true;
  return false;
}

int Schedule::stagesOnRank(int rank) const {
  if (stageRank.empty())
    return 0;
  return static_cast<int>(llvm::count(stageRank[0], rank));
}

StageGraph StageGraph::chain(int n, double bytes) {
  StageGraph g;
  g.numStages = n;
  for (int s = 0; s + 1 < n; ++s)
    g.edges.push_back({s, s + 1, bytes});
  return g;
}

std::vector<int> StageGraph::preds(int stage) const {
  std::set<int> out;
  for (const StageEdge &e : edges)
    if (e.to == stage)
      out.insert(e.from);
  return {out.begin(), out.end()};
}

std::vector<int> StageGraph::succs(int stage) const {
  std::set<int> out;
  for (const StageEdge &e : edges)
    if (e.from == stage)
      out.insert(e.to);
  return {out.begin(), out.end()};
}

llvm::StringRef pipeopt::schedule::phaseName(Phase p) {
  switch (p) {
  case Phase::F:
    return "F";
  case Phase::B:
    return "B";
  case Phase::W:
    return "W";
  case Phase::BW:
    return "BW";
  case Phase::Send:
    return "SEND";
  case Phase::Recv:
    return "RECV";
  }
  return "?";
}

namespace {
thread_local ActionNaming currentNaming = ActionNaming::Pipeopt;
} // namespace

ScopedActionNaming::ScopedActionNaming(ActionNaming naming)
    : previous(currentNaming) {
  currentNaming = naming;
}
ScopedActionNaming::~ScopedActionNaming() { currentNaming = previous; }
ActionNaming ScopedActionNaming::current() { return currentNaming; }

std::string pipeopt::schedule::describe(const Action &a) {
  return describe(a, currentNaming);
}

std::string pipeopt::schedule::describe(const Action &a, ActionNaming naming) {
  if (naming == ActionNaming::Torch) {
    // torch's token first (what the user wrote), then what it means.
    std::string token = formatAction(a);
    if (a.isCompute()) {
      const char *what = a.phase == Phase::F   ? "forward"
                         : a.phase == Phase::B ? "input gradient"
                         : a.phase == Phase::W ? "weight gradient"
                                               : "full backward";
      return llvm::formatv("{0} ({1}, stage {2}, mb {3})", token, what, a.stage,
                           a.microbatch)
          .str();
    }
    return llvm::formatv("{0} ({1}, stage {2} {3} {4}, mb {5})", token,
                         a.backward ? "gradient" : "activation", a.stage,
                         a.phase == Phase::Send ? "->" : "<-", a.peerStage,
                         a.microbatch)
        .str();
  }
  if (a.isCompute())
    return llvm::formatv("{0}(stage {1}, mb {2})", phaseName(a.phase), a.stage,
                         a.microbatch)
        .str();
  const char *kind = a.backward ? "B" : "F";
  // The value is named only where a transfer moves several.
  std::string value =
      a.value != 0 ? llvm::formatv(", value {0}", a.value).str() : "";
  if (a.phase == Phase::Send)
    return llvm::formatv("SEND_{0}(stage {1} -> {2}, mb {3}{4})", kind, a.stage,
                         a.peerStage, a.microbatch, value)
        .str();
  return llvm::formatv("RECV_{0}(stage {1} <- {2}, mb {3}{4})", kind, a.stage,
                       a.peerStage, a.microbatch, value)
      .str();
}

//===----------------------------------------------------------------------===//
// Unit-time execution
//===----------------------------------------------------------------------===//

namespace {
/// Where every compute action sits and which backward kind each
/// (stage, mb) uses.
struct Placement {
  ComputeIndex idx;
  std::vector<int> rank, pos; // by compute key; -1 if absent
  Placement(const Schedule &s) : idx(s.numStages, s.numMicrobatches) {
    rank.assign(idx.size(), -1);
    pos.assign(idx.size(), -1);
    for (int r = 0; r < static_cast<int>(s.actions.size()); ++r)
      for (int i = 0; i < static_cast<int>(s.actions[r].size()); ++i) {
        const Action &a = s.actions[r][i];
        if (a.isCompute() && idx.inRange(a.stage, a.microbatch)) {
          int k = idx.key(a.phase, a.stage, a.microbatch);
          if (rank[k] < 0) {
            rank[k] = r;
            pos[k] = i;
          }
        }
      }
  }
  bool has(Phase p, int stage, int mb) const {
    return idx.inRange(stage, mb) && rank[idx.key(p, stage, mb)] >= 0;
  }
  bool hasSplitB(int stage, int mb) const { return has(Phase::B, stage, mb); }
};

/// Result of executing the table in unit time.
struct Execution {
  std::vector<std::vector<int>> slots; // -1: not reached
  std::vector<int> next;               // per rank: first unexecuted action
  bool complete = true;
};

Execution execute(const Schedule &s, const StageGraph &g, const Placement &pl) {
  Execution ex;
  int R = static_cast<int>(s.actions.size());
  ex.slots.resize(R);
  for (int r = 0; r < R; ++r)
    ex.slots[r].assign(s.actions[r].size(), -1);
  ex.next.assign(R, 0);
  std::vector<int> rankTime(R, 0);
  std::vector<int> finish(pl.idx.size(), -1);
  auto split = [&](int st, int mb) { return pl.hasSplitB(st, mb); };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < R; ++r) {
      while (ex.next[r] < static_cast<int>(s.actions[r].size())) {
        const Action &a = s.actions[r][ex.next[r]];
        int start = rankTime[r];
        if (a.isCompute()) {
          bool ready = true;
          if (pl.idx.inRange(a.stage, a.microbatch))
            for (auto [ph, st] :
                 computeDeps(g, a.phase, a.stage, a.microbatch, split)) {
              if (!pl.idx.inRange(st, a.microbatch))
                continue;
              int k = pl.idx.key(ph, st, a.microbatch);
              if (pl.rank[k] < 0)
                continue; // missing; validate() reports it
              if (finish[k] < 0) {
                ready = false;
                break;
              }
              start = std::max(start, finish[k]);
            }
          if (!ready)
            break;
          ex.slots[r][ex.next[r]] = start;
          rankTime[r] = start + 1;
          if (pl.idx.inRange(a.stage, a.microbatch)) {
            int k = pl.idx.key(a.phase, a.stage, a.microbatch);
            if (pl.rank[k] == r && pl.pos[k] == ex.next[r])
              finish[k] = start + 1;
          }
        } else {
          ex.slots[r][ex.next[r]] = start;
        }
        ++ex.next[r];
        progress = true;
      }
    }
  }
  for (int r = 0; r < R; ++r)
    if (ex.next[r] < static_cast<int>(s.actions[r].size()))
      ex.complete = false;
  return ex;
}

/// Why execution stalled: the text of the cycle of waiting ranks and, per
/// rank in it, the action it waits at.
struct Stall {
  std::string text;
  std::vector<ActionRef> cycle;
};

/// Explain why execution stalled: follow "waits for" from the first blocked
/// rank until a rank repeats and describe that cycle.
Stall explainStall(const Schedule &s, const StageGraph &g, const Placement &pl,
                   const Execution &ex) {
  int R = static_cast<int>(s.actions.size());
  auto split = [&](int st, int mb) { return pl.hasSplitB(st, mb); };
  // For a blocked rank: the (dep action, its rank) it waits for.
  auto waitOf = [&](int r, std::string &text) -> int {
    const Action &a = s.actions[r][ex.next[r]];
    for (auto [ph, st] :
         computeDeps(g, a.phase, a.stage, a.microbatch, split)) {
      if (!pl.idx.inRange(st, a.microbatch))
        continue;
      int k = pl.idx.key(ph, st, a.microbatch);
      int dr = pl.rank[k];
      if (dr < 0 || pl.pos[k] < ex.next[dr])
        continue;
      text = llvm::formatv("rank {0} waits at {1} for {2} on rank {3}", r,
                           describe(a),
                           describe(Action::compute(ph, st, a.microbatch)), dr)
                 .str();
      return dr;
    }
    return -1;
  };
  int start = 0;
  while (start < R &&
         ex.next[start] >= static_cast<int>(s.actions[start].size()))
    ++start;
  std::vector<int> seenAt(R, -1);
  std::vector<std::string> texts;
  std::vector<int> ranks;
  int r = start;
  while (r >= 0 && seenAt[r] < 0) {
    seenAt[r] = static_cast<int>(ranks.size());
    std::string t;
    int nr = waitOf(r, t);
    ranks.push_back(r);
    texts.push_back(t);
    r = nr;
  }
  Stall out;
  int from = r >= 0 ? seenAt[r] : 0;
  for (int i = from; i < static_cast<int>(texts.size()); ++i) {
    if (i != from)
      out.text += "; ";
    out.text += texts[i];
    out.cycle.push_back(ActionRef{ranks[i], ex.next[ranks[i]]});
  }
  return out;
}

/// The ScheduleErrorKind::Cycle error of a stalled execution.
llvm::Error stallError(const Schedule &s, const Stall &stall, const char *fmt) {
  ErrorSite site{ScheduleErrorKind::Cycle};
  if (!stall.cycle.empty()) {
    site.at = stall.cycle.front();
    site.action = s.actions[site.at.rank][site.at.index];
  }
  site.cycle = stall.cycle;
  return scheduleErr(std::move(site), fmt, stall.text);
}
} // namespace

llvm::Expected<std::vector<std::vector<int>>>
pipeopt::schedule::unitTimeSlots(const Schedule &s) {
  return detail::slotsWithGraph(s, StageGraph::chain(s.numStages));
}

llvm::Expected<std::vector<std::vector<int>>>
pipeopt::schedule::detail::slotsWithGraph(const Schedule &s,
                                          const StageGraph &g) {
  Placement pl(s);
  Execution ex = execute(s, g, pl);
  if (!ex.complete)
    return stallError(s, explainStall(s, g, pl, ex),
                      "no consistent execution order: {0}");
  return ex.slots;
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

static llvm::Error checkShape(const Schedule &s, const StageGraph &g) {
  if (s.numRanks <= 0 || s.numStages <= 0 || s.numMicrobatches <= 0)
    return tableErr("schedule '{0}' has numRanks {1}, numStages {2}, "
                    "numMicrobatches {3}; all must be positive",
                    s.name, s.numRanks, s.numStages, s.numMicrobatches);
  if (static_cast<int>(s.actions.size()) != s.numRanks)
    return tableErr("schedule has {0} action lists for {1} ranks",
                    s.actions.size(), s.numRanks);
  if (g.numStages != s.numStages)
    return tableErr("stage graph has {0} stages, schedule has {1}", g.numStages,
                    s.numStages);
  for (const StageEdge &e : g.edges)
    if (e.from < 0 || e.to >= g.numStages || e.from >= e.to)
      return tableErr(
          "stage graph edge {0} -> {1} is not a forward edge between "
          "existing stages",
          e.from, e.to);
  if (s.stageRank.empty())
    return tableErr("schedule has no stage placement (stageRank is empty)");
  for (int p = 0; p < s.numPipelines(); ++p) {
    if (static_cast<int>(s.stageRank[p].size()) != s.numStages)
      return tableErr("pipeline {0} places {1} stages, expected {2}", p,
                      s.stageRank[p].size(), s.numStages);
    for (int st = 0; st < s.numStages; ++st)
      if (s.stageRank[p][st] < 0 || s.stageRank[p][st] >= s.numRanks)
        return tableErr(
            "pipeline {0} places stage {1} on rank {2}, outside 0..{3}", p, st,
            s.stageRank[p][st], s.numRanks - 1);
  }
  if (!s.microbatchPipeline.empty()) {
    if (static_cast<int>(s.microbatchPipeline.size()) != s.numMicrobatches)
      return tableErr("microbatchPipeline has {0} entries for {1} microbatches",
                      s.microbatchPipeline.size(), s.numMicrobatches);
    for (int m = 0; m < s.numMicrobatches; ++m)
      if (s.microbatchPipeline[m] < 0 ||
          s.microbatchPipeline[m] >= s.numPipelines())
        return tableErr(
            "microbatch {0} is assigned to pipeline {1}, but there are "
            "{2} pipelines",
            m, s.microbatchPipeline[m], s.numPipelines());
  } else if (s.numPipelines() != 1) {
    return tableErr("{0} pipelines but no microbatch -> pipeline assignment",
                    s.numPipelines());
  }
  return llvm::Error::success();
}

/// Checks of Send/Recv actions against the compute placement: right peers,
/// one Send and one Recv per cross-rank value, Send after the producer and
/// Recv before the consumer on their ranks.
static llvm::Error checkComms(const Schedule &s, const StageGraph &g,
                              const Placement &pl) {
  // Key: (fromStage, toStage, mb, backward) -> position on its rank.
  using Key = std::tuple<int, int, int, bool>;
  std::map<Key, std::pair<int, int>> sends, recvs;
  for (int r = 0; r < s.numRanks; ++r)
    for (int i = 0; i < static_cast<int>(s.actions[r].size()); ++i) {
      const Action &a = s.actions[r][i];
      if (!a.isComm())
        continue;
      if (!pl.idx.inRange(a.stage, a.microbatch) ||
          !pl.idx.inRange(a.peerStage, a.microbatch))
        return scheduleErr(
            {ScheduleErrorKind::BadAction, {r, i}, a},
            "rank {0}: {1} refers to a stage or microbatch out of range", r,
            describe(a));
      // The value's producer and consumer stages.
      bool isSend = a.phase == Phase::Send;
      int producer = isSend ? a.stage : a.peerStage;
      int consumer = isSend ? a.peerStage : a.stage;
      int lo = a.backward ? consumer : producer,
          hi = a.backward ? producer : consumer;
      bool edge = llvm::any_of(g.edges, [&](const StageEdge &e) {
        return e.from == lo && e.to == hi;
      });
      if (!edge)
        return scheduleErr({ScheduleErrorKind::BadAction, {r, i}, a},
                           "rank {0}: {1} has no stage-graph edge {2} -> {3}",
                           r, describe(a), lo, hi);
      if (s.rankOf(a.stage, a.microbatch) != r)
        return scheduleErr(
            {ScheduleErrorKind::BadAction, {r, i}, a},
            "rank {0}: {1} but stage {2} runs on rank {3} for mb {4}", r,
            describe(a), a.stage, s.rankOf(a.stage, a.microbatch),
            a.microbatch);
      if (s.rankOf(a.peerStage, a.microbatch) != a.peerRank)
        return scheduleErr({ScheduleErrorKind::BadAction, {r, i}, a},
                           "rank {0}: {1} names peer rank {2}, but stage {3} "
                           "runs on rank {4} for mb {5}",
                           r, describe(a), a.peerRank, a.peerStage,
                           s.rankOf(a.peerStage, a.microbatch), a.microbatch);
      if (a.peerRank == r)
        return scheduleErr({ScheduleErrorKind::BadAction, {r, i}, a},
                           "rank {0}: {1} sends to its own rank", r,
                           describe(a));
      auto &tab = isSend ? sends : recvs;
      Key k{producer, consumer, a.microbatch, a.backward};
      auto [first, inserted] = tab.emplace(k, std::make_pair(r, i));
      if (!inserted)
        return scheduleErr({ScheduleErrorKind::Duplicate,
                            {r, i},
                            a,
                            {first->second.first, first->second.second}},
                           "rank {0}: duplicate {1}", r, describe(a));
      // Order against the compute that produces / consumes the value.
      Phase bwd = pl.hasSplitB(a.stage, a.microbatch) ? Phase::B : Phase::BW;
      Phase localPhase = a.backward ? bwd : Phase::F;
      int ck = pl.idx.key(localPhase, a.stage, a.microbatch);
      if (pl.rank[ck] == r) {
        Action c = Action::compute(localPhase, a.stage, a.microbatch);
        if (isSend && pl.pos[ck] > i)
          return scheduleErr(
              {ScheduleErrorKind::Order, {r, i}, a, {r, pl.pos[ck]}},
              "rank {0}: {1} appears before {2}", r, describe(a), describe(c));
        if (!isSend && pl.pos[ck] < i)
          return scheduleErr({ScheduleErrorKind::Order,
                              {r, pl.pos[ck]},
                              s.actions[r][pl.pos[ck]],
                              {r, i}},
                             "rank {0}: {1} appears before {2}", r, describe(c),
                             describe(a));
      }
    }
  // Every cross-rank value needs exactly one matching pair.
  for (int m = 0; m < s.numMicrobatches; ++m)
    for (const StageEdge &e : g.edges) {
      int rf = s.rankOf(e.from, m), rt = s.rankOf(e.to, m);
      if (rf == rt)
        continue;
      for (bool bwd : {false, true}) {
        if (bwd && s.forwardOnly)
          continue;
        int producer = bwd ? e.to : e.from, consumer = bwd ? e.from : e.to;
        Key k{producer, consumer, m, bwd};
        int pr = bwd ? rt : rf, cr = bwd ? rf : rt;
        if (!sends.count(k)) {
          Action missing = Action::send(producer, m, cr, consumer, bwd);
          return scheduleErr({ScheduleErrorKind::Missing, {pr, -1}, missing},
                             "rank {0}: missing {1}", pr, describe(missing));
        }
        if (!recvs.count(k)) {
          Action missing = Action::recv(consumer, m, pr, producer, bwd);
          return scheduleErr({ScheduleErrorKind::Missing, {cr, -1}, missing},
                             "rank {0}: missing {1}", cr, describe(missing));
        }
      }
    }
  for (auto &kv : sends)
    if (!recvs.count(kv.first)) {
      auto [r, i] = kv.second;
      const Action &a = s.actions[r][i];
      return scheduleErr({ScheduleErrorKind::Unmatched, {r, i}, a},
                         "rank {0}: {1} has no matching receive", r,
                         describe(a));
    }
  for (auto &kv : recvs)
    if (!sends.count(kv.first)) {
      auto [r, i] = kv.second;
      const Action &a = s.actions[r][i];
      return scheduleErr({ScheduleErrorKind::Unmatched, {r, i}, a},
                         "rank {0}: {1} has no matching send", r, describe(a));
    }
  return llvm::Error::success();
}

llvm::Error pipeopt::schedule::validate(const Schedule &s,
                                        const StageGraph &g) {
  if (llvm::Error e = checkShape(s, g))
    return e;
  ComputeIndex idx(s.numStages, s.numMicrobatches);
  Placement pl(s);

  // 1. Every compute action: known phase, in range, on the right rank, once.
  std::vector<std::pair<int, int>> firstAt(idx.size(), {-1, -1});
  for (int r = 0; r < s.numRanks; ++r)
    for (int i = 0; i < static_cast<int>(s.actions[r].size()); ++i) {
      const Action &a = s.actions[r][i];
      if (a.isComm())
        continue;
      if (!idx.inRange(a.stage, a.microbatch))
        return scheduleErr({ScheduleErrorKind::BadAction, {r, i}, a},
                           "rank {0}: {1} is out of range ({2} stages, {3} "
                           "microbatches)",
                           r, describe(a), s.numStages, s.numMicrobatches);
      if (s.forwardOnly && a.phase != Phase::F)
        return scheduleErr({ScheduleErrorKind::BadAction, {r, i}, a},
                           "rank {0}: {1} in a forward-only schedule", r,
                           describe(a));
      if (!s.splitBackward && (a.phase == Phase::B || a.phase == Phase::W))
        return scheduleErr({ScheduleErrorKind::BadAction, {r, i}, a},
                           "rank {0}: {1} in a schedule without split "
                           "backward (use BW)",
                           r, describe(a));
      int want = s.rankOf(a.stage, a.microbatch);
      if (want != r)
        return scheduleErr({ScheduleErrorKind::BadAction, {r, i}, a},
                           "rank {0}: {1} belongs on rank {2} (stage {3} of "
                           "pipeline {4})",
                           r, describe(a), want, a.stage,
                           s.pipelineOf(a.microbatch));
      int k = idx.key(a.phase, a.stage, a.microbatch);
      if (firstAt[k].first >= 0)
        return scheduleErr({ScheduleErrorKind::Duplicate,
                            {r, i},
                            a,
                            {firstAt[k].first, firstAt[k].second}},
                           "rank {0}: {1} appears twice (first at position "
                           "{2})",
                           r, describe(a), firstAt[k].second);
      firstAt[k] = {r, i};
      if (a.phase == Phase::BW && pl.hasSplitB(a.stage, a.microbatch)) {
        int kb = idx.key(Phase::B, a.stage, a.microbatch);
        return scheduleErr(
            {ScheduleErrorKind::BadAction,
             {r, i},
             a,
             {pl.rank[kb], pl.pos[kb]}},
            "rank {0}: {1} and {2} both present", r, describe(a),
            describe(Action::compute(Phase::B, a.stage, a.microbatch)));
      }
    }

  // 2. Nothing missing.
  for (int m = 0; m < s.numMicrobatches; ++m)
    for (int st = 0; st < s.numStages; ++st) {
      int r = s.rankOf(st, m);
      auto missing = [&](Phase p) {
        Action a = Action::compute(p, st, m);
        return scheduleErr({ScheduleErrorKind::Missing, {r, -1}, a},
                           "missing {0} (expected on rank {1})", describe(a),
                           r);
      };
      if (!pl.has(Phase::F, st, m))
        return missing(Phase::F);
      if (s.forwardOnly)
        continue;
      bool b = pl.has(Phase::B, st, m), w = pl.has(Phase::W, st, m),
           bw = pl.has(Phase::BW, st, m);
      if (!b && !bw)
        return missing(s.splitBackward ? Phase::B : Phase::BW);
      if (b && !w)
        return missing(Phase::W);
      if (w && !b)
        return missing(Phase::B);
    }

  // 3. Order within a rank: F before B/BW before W of the same (stage, mb);
  //    same-rank cross-stage dependencies in order.
  auto split = [&](int st, int mb) { return pl.hasSplitB(st, mb); };
  for (int r = 0; r < s.numRanks; ++r)
    for (int i = 0; i < static_cast<int>(s.actions[r].size()); ++i) {
      const Action &a = s.actions[r][i];
      if (a.isComm())
        continue;
      for (auto [ph, st] :
           computeDeps(g, a.phase, a.stage, a.microbatch, split)) {
        int k = idx.key(ph, st, a.microbatch);
        if (pl.rank[k] == r && pl.pos[k] > i)
          return scheduleErr(
              {ScheduleErrorKind::Order, {r, i}, a, {r, pl.pos[k]}},
              "rank {0}: {1} appears before {2}", r, describe(a),
              describe(Action::compute(ph, st, a.microbatch)));
      }
    }

  // 4. A consistent global execution exists.
  Execution ex = execute(s, g, pl);
  if (!ex.complete)
    return stallError(s, explainStall(s, g, pl, ex),
                      "no consistent execution order (cross-rank dependency "
                      "cycle): {0}");

  // 5. Communication, if lowered.
  if (s.hasCommunication())
    return checkComms(s, g, pl);
  return llvm::Error::success();
}

llvm::Error pipeopt::schedule::validate(const Schedule &s) {
  return validate(s, StageGraph::chain(s.numStages));
}

//===----------------------------------------------------------------------===//
// Views and helpers
//===----------------------------------------------------------------------===//

std::string pipeopt::schedule::renderGrid(const Schedule &s) {
  auto slotsOr = unitTimeSlots(s);
  if (!slotsOr)
    return "<invalid schedule: " + llvm::toString(slotsOr.takeError()) + ">\n";
  const auto &slots = *slotsOr;
  bool showStage = false;
  for (int r = 0; r < s.numRanks; ++r)
    if (s.stagesOnRank(r) > 1 || s.numPipelines() > 1)
      showStage = true;
  int T = 0;
  for (int r = 0; r < s.numRanks; ++r)
    for (int i = 0; i < static_cast<int>(s.actions[r].size()); ++i)
      if (s.actions[r][i].isCompute())
        T = std::max(T, slots[r][i] + 1);
  std::vector<std::vector<std::string>> cells(s.numRanks,
                                              std::vector<std::string>(T, "."));
  size_t width = 1;
  for (int r = 0; r < s.numRanks; ++r)
    for (int i = 0; i < static_cast<int>(s.actions[r].size()); ++i) {
      const Action &a = s.actions[r][i];
      if (!a.isCompute())
        continue;
      std::string c = (showStage ? "s" + std::to_string(a.stage) + ":" : "") +
                      phaseName(a.phase).str() + std::to_string(a.microbatch);
      cells[r][slots[r][i]] = c;
      width = std::max(width, c.size());
    }
  std::string out =
      llvm::formatv("{0}: {1} ranks, {2} stages, {3} "
                    "microbatches, {4} unit-time slots\n",
                    s.name, s.numRanks, s.numStages, s.numMicrobatches, T)
          .str();
  std::string rankLabel = "rank " + std::to_string(s.numRanks - 1);
  for (int r = 0; r < s.numRanks; ++r) {
    std::string label = "rank " + std::to_string(r);
    label.resize(rankLabel.size(), ' ');
    out += label + " |";
    for (int t = 0; t < T; ++t) {
      std::string c = cells[r][t];
      c.resize(width, ' ');
      out += " " + c;
    }
    // Trim trailing spaces.
    while (!out.empty() && out.back() == ' ')
      out.pop_back();
    out += "\n";
  }
  return out;
}

int pipeopt::schedule::warmupCount(const Schedule &s, int rank) {
  if (rank < 0 || rank >= static_cast<int>(s.actions.size()))
    return 0;
  int before = 0, total = 0;
  bool seenBackward = false;
  for (const Action &a : s.actions[rank]) {
    if (a.phase == Phase::F) {
      ++total;
      if (!seenBackward)
        ++before;
    } else if (a.phase == Phase::B || a.phase == Phase::BW) {
      seenBackward = true;
    }
  }
  // Megatron's definition: the warm-up forwards precede the steady state,
  // whose every step is "one F, then one backward". So the F right before
  // the first backward is the first steady F, unless no forward follows the
  // first backward (all forwards are warm-up, as in GPipe).
  if (!seenBackward || before == total)
    return before;
  return before - 1;
}

std::vector<int> pipeopt::schedule::warmupCounts(const Schedule &s) {
  std::vector<int> out;
  for (int r = 0; r < s.numRanks; ++r)
    out.push_back(warmupCount(s, r));
  return out;
}

namespace {
/// Walk each rank's list tracking in-flight microbatches per stage.
/// Returns per-rank, per-stage maxima and per-rank sum maxima.
void inFlight(const Schedule &s, std::vector<int> &perStage,
              std::vector<int> &perRank) {
  perStage.assign(s.numStages, 0);
  perRank.assign(s.numRanks, 0);
  ComputeIndex idx(s.numStages, s.numMicrobatches);
  for (int r = 0; r < static_cast<int>(s.actions.size()); ++r) {
    std::vector<int> cur(s.numStages, 0);
    int sum = 0;
    for (const Action &a : s.actions[r]) {
      if (!a.isCompute() || a.stage < 0 || a.stage >= s.numStages)
        continue;
      int delta = 0;
      if (a.phase == Phase::F)
        delta = s.forwardOnly ? 0 : 1;
      else if (a.phase == Phase::B || a.phase == Phase::BW)
        delta = -1;
      if (a.phase == Phase::F && s.forwardOnly) {
        // Inference frees the activation right away: one resident at a time.
        perStage[a.stage] = std::max(perStage[a.stage], 1);
        perRank[r] = std::max(perRank[r], 1);
        continue;
      }
      cur[a.stage] += delta;
      sum += delta;
      perStage[a.stage] = std::max(perStage[a.stage], cur[a.stage]);
      perRank[r] = std::max(perRank[r], sum);
    }
  }
}
} // namespace

int pipeopt::schedule::maxInFlight(const Schedule &s, int stage) {
  std::vector<int> perStage, perRank;
  inFlight(s, perStage, perRank);
  if (stage < 0 || stage >= static_cast<int>(perStage.size()))
    return 0;
  return perStage[stage];
}

std::vector<int> pipeopt::schedule::peakInFlightPerRank(const Schedule &s) {
  std::vector<int> perStage, perRank;
  inFlight(s, perStage, perRank);
  return perRank;
}

int pipeopt::schedule::numComputeActions(const Schedule &s, int rank) {
  if (rank < 0 || rank >= static_cast<int>(s.actions.size()))
    return 0;
  return static_cast<int>(llvm::count_if(
      s.actions[rank], [](const Action &a) { return a.isCompute(); }));
}
