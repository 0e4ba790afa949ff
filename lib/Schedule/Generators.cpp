//===- Generators.cpp - Pipeline schedule generators ------------*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The schedule generators (docs/Design.md §4). Each takes its name, chunks
/// per rank and kind (split backward, async, forward-only) from its row in
/// the registry (Registry.cpp, detail::infoOf()).
///
/// Notation: S ranks, v chunks (virtual stages) per rank, M microbatches,
/// numStages = S * v. Every generator documents its source and the rule it
/// implements; tables are compute-only (see insertCommunication()).
///
/// Two construction styles are used:
///  - *explicit*: the per-rank order is written down from the paper's rule
///    (GPipe, 1F1B, interleaved 1F1B, looped BFS, ZB-H1, DualPipeV,
///    PipeDream, PipeDream-2BW, forward-only);
///  - *greedy*: a deterministic unit-time list scheduler with a per-schedule
///    priority and activation cap (ZB-V, Chimera, Hanayo). These
///    schedules are defined in their papers by pictures and placement rules,
///    not by a closed-form order; the greedy realisation keeps the
///    placement, the split of work and the memory bound, and always yields a
///    dependency-consistent table.
///
//===----------------------------------------------------------------------===//

#include "ScheduleInternal.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <set>

using namespace pipeopt::schedule;
using namespace pipeopt::schedule::detail;

namespace {

/// Resolved shape: S ranks, v chunks per rank.
struct Shape {
  int S = 0, v = 1, M = 0;
  int numStages() const { return S * v; }
};

/// Resolve ScheduleParams. `fixedChunks` > 0 forces the chunks per rank
/// (single-chunk schedules pass 1); otherwise `defaultChunks` applies when
/// virtualStages is 0.
llvm::Expected<Shape> resolveShape(llvm::StringRef name,
                                   const ScheduleParams &p, int fixedChunks,
                                   int defaultChunks) {
  Shape sh;
  if (p.numMicrobatches < 1)
    return err("{0} needs num-microbatches >= 1, got {1}", name,
               p.numMicrobatches);
  sh.M = p.numMicrobatches;
  if (p.virtualStages < 0 || p.numStages < 0 || p.numRanks < 0)
    return err("{0}: num-stages, num-ranks and virtual-stages must not be "
               "negative",
               name);
  if (fixedChunks > 0) {
    if (p.virtualStages != 0 && p.virtualStages != fixedChunks)
      return err("{0} uses {1} chunk(s) per rank; virtual-stages must be {1}, "
                 "got {2}",
                 name, fixedChunks, p.virtualStages);
    sh.v = fixedChunks;
  } else {
    sh.v = p.virtualStages > 0 ? p.virtualStages : defaultChunks;
  }
  if (p.numRanks > 0) {
    sh.S = p.numRanks;
    if (p.numStages > 0 && p.numStages != sh.S * sh.v)
      return err("{0}: num-stages ({1}) must equal num-ranks ({2}) x chunks "
                 "per rank ({3})",
                 name, p.numStages, sh.S, sh.v);
  } else if (p.numStages > 0) {
    if (p.numStages % sh.v != 0)
      return err("{0}: num-stages ({1}) must be a multiple of the chunks per "
                 "rank ({2})",
                 name, p.numStages, sh.v);
    sh.S = p.numStages / sh.v;
  } else {
    return err("{0} needs num-stages or num-ranks", name);
  }
  return sh;
}

/// resolveShape() with the chunks per rank of the registry row `info`.
llvm::Expected<Shape> resolve(const ScheduleInfo &info,
                              const ScheduleParams &p) {
  switch (info.chunks.kind) {
  case ChunkRule::Fixed:
    return resolveShape(info.name, p, info.chunks.count, 1);
  case ChunkRule::Configurable:
    return resolveShape(info.name, p, 0, info.chunks.count);
  case ChunkRule::PerWave:
    return resolveShape(info.name, p, info.chunks.count * p.waves, 1);
  }
  llvm_unreachable("unknown ChunkRule kind");
}

llvm::Error needAtLeastStages(llvm::StringRef name, const Shape &sh) {
  if (sh.M < sh.S)
    return err("{0} needs num-microbatches >= the number of ranks ({1}), got "
               "{2}",
               name, sh.S, sh.M);
  return llvm::Error::success();
}

/// Empty schedule with one pipeline, `placement[stage]` -> rank; name and
/// kind (split backward, async, forward-only) from the registry row.
Schedule skeleton(const ScheduleInfo &info, const Shape &sh,
                  std::vector<int> placement) {
  Schedule s;
  s.name = info.name.str();
  s.splitBackward = info.splitBackward;
  s.async = info.async();
  s.forwardOnly = info.forwardOnly;
  s.numRanks = sh.S;
  s.numStages = static_cast<int>(placement.size());
  s.numMicrobatches = sh.M;
  s.stageRank = {std::move(placement)};
  s.microbatchPipeline.assign(sh.M, 0);
  s.actions.resize(sh.S);
  return s;
}

/// Looped placement: stage k on rank k % S (Megatron interleaving).
std::vector<int> loopedPlacement(int S, int v) {
  std::vector<int> p(S * v);
  for (int k = 0; k < S * v; ++k)
    p[k] = k % S;
  return p;
}

/// V / wave placement: position k % (2S) goes down ranks 0..S-1 then back
/// up S-1..0 (ZB-V, DualPipeV, Hanayo waves).
std::vector<int> wavePlacement(int S, int numStages) {
  std::vector<int> p(numStages);
  for (int k = 0; k < numStages; ++k) {
    int pos = k % (2 * S);
    p[k] = pos < S ? pos : 2 * S - 1 - pos;
  }
  return p;
}

Action F(int st, int m) { return Action::compute(Phase::F, st, m); }
Action BW(int st, int m) { return Action::compute(Phase::BW, st, m); }
Action Bi(int st, int m) { return Action::compute(Phase::B, st, m); }
Action Wg(int st, int m) { return Action::compute(Phase::W, st, m); }

//===----------------------------------------------------------------------===//
// Greedy unit-time list scheduler
//===----------------------------------------------------------------------===//

/// Configuration of the greedy scheduler. At every unit-time slot each idle
/// rank runs the ready action of highest priority: backward (B or BW) of the
/// smallest microbatch (ties: the later stage), else a forward of the
/// smallest microbatch (ties: the later stage) whose stage is below its
/// activation cap (and the rank below its `rankCap`, if set), else (split
/// backward) the oldest pending W. With
/// `deferW`, W runs only when nothing else is ready; otherwise W is preferred
/// to a new forward. `unitSize` and `forwardLaterStageFirst` change the
/// forward priority (Chimera, see makeChimera()).
struct GreedyConfig {
  bool split = false; ///< B and W separate.
  bool deferW = true;
  /// > 0: microbatches form units of this many (m / unitSize); a forward of
  /// an earlier unit always goes first. Backward order is unchanged (it is
  /// by microbatch, hence by unit already).
  int unitSize = 0;
  /// Within a unit, forwards of the later stage (the one closer to the end
  /// of its pipeline) go first; ties: the smaller microbatch.
  bool forwardLaterStageFirst = false;
  /// Activation cap of (pipeline, stage): max microbatches with F done and
  /// the activation not yet freed (freed by W when split, by BW otherwise).
  std::function<int(int pipeline, int stage)> cap;
  /// Optional cap of a whole rank: max microbatches, summed over the stages
  /// of the rank, with F done and the input gradient (B, or BW) not yet
  /// done -- what peakInFlightPerRank() counts. Empty: no rank cap.
  std::function<int(int rank)> rankCap;
};

/// Implementation: the same choice as scanning each rank's candidates in
/// priority order every slot, but the candidates that are ready (their
/// dependencies finished in an earlier slot) are kept in ordered sets, so a
/// slot costs O(log n) per rank instead of O(n) (n = actions per rank), and
/// the whole schedule O(n log n) instead of O(n^2): zb-v with S = 16 and
/// M = 8000 took 17 s before. Actions take one slot, so everything decided
/// in slot t becomes visible at the start of slot t + 1; forwards are
/// grouped by (pipeline, stage), the unit of the activation cap.
llvm::Expected<Schedule> greedy(Schedule s, const GreedyConfig &cfg) {
  int R = s.numRanks, NS = s.numStages, M = s.numMicrobatches;
  int P = s.numPipelines();
  ComputeIndex idx(NS, M);
  std::vector<int> finish(idx.size(), -1);
  std::vector<std::vector<int>> inflight(P, std::vector<int>(NS, 0));
  // Candidate (stage, mb) pairs per rank.
  std::vector<std::vector<std::pair<int, int>>> owned(R);
  for (int m = 0; m < M; ++m)
    for (int st = 0; st < NS; ++st)
      owned[s.rankOf(st, m)].push_back({st, m});
  // Order: smallest mb first, then later stage first.
  for (auto &o : owned)
    llvm::sort(o, [](auto a, auto b) {
      return a.second != b.second ? a.second < b.second : a.first > b.first;
    });
  // Forward order: by default the same; optionally unit, later stage, mb.
  std::vector<std::vector<std::pair<int, int>>> ownedF = owned;
  if (cfg.forwardLaterStageFirst || cfg.unitSize > 0) {
    int unit = cfg.unitSize > 0 ? cfg.unitSize : M;
    bool later = cfg.forwardLaterStageFirst;
    for (auto &o : ownedF)
      llvm::sort(o, [unit, later](auto a, auto b) {
        int ua = a.second / unit, ub = b.second / unit;
        if (ua != ub)
          return ua < ub;
        if (later && a.first != b.first)
          return a.first > b.first;
        return a.second != b.second ? a.second < b.second : a.first > b.first;
      });
  }
  // Priority (position in owned / ownedF) of each (stage, mb).
  std::vector<int> posB(static_cast<size_t>(NS) * M), posF(posB.size());
  auto slot = [M](int st, int m) { return static_cast<size_t>(st) * M + m; };
  for (int r = 0; r < R; ++r) {
    for (auto [k, e] : llvm::enumerate(owned[r]))
      posB[slot(e.first, e.second)] = static_cast<int>(k);
    for (auto [k, e] : llvm::enumerate(ownedF[r]))
      posF[slot(e.first, e.second)] = static_cast<int>(k);
  }
  // Ready candidates. Backward: per rank, by position. Forward: per rank and
  // (pipeline, stage), by position.
  std::vector<std::set<int>> readyB(R);
  using Group = std::pair<int, int>; // (pipeline, stage)
  struct GroupState {
    std::set<int> ready; ///< positions of ready, unscheduled forwards
    int head = -1;       ///< its entry in `heads` (-1: none)
  };
  std::vector<std::map<Group, GroupState>> readyF(R);
  // Per rank, the first ready forward of every group under its activation
  // cap, so that picking the forward is O(log) even with many chunks per
  // rank (hanayo with many waves).
  std::vector<std::set<std::pair<int, Group>>> heads(R);
  auto refresh = [&](int r, Group g) {
    GroupState &gs = readyF[r][g];
    if (gs.head >= 0)
      heads[r].erase({gs.head, g});
    gs.head = -1;
    if (!gs.ready.empty() &&
        inflight[g.first][g.second] < cfg.cap(g.first, g.second)) {
      gs.head = *gs.ready.begin();
      heads[r].insert({gs.head, g});
    }
  };
  auto makeReadyF = [&](int st, int m) {
    int r = s.rankOf(st, m);
    Group g{s.pipelineOf(m), st};
    readyF[r][g].ready.insert(posF[slot(st, m)]);
    refresh(r, g);
  };
  // A backward needs its forward and, except on the last stage, the next
  // stage's backward: the number of those still missing.
  std::vector<int> missingB(posB.size());
  for (int st = 0; st < NS; ++st)
    for (int m = 0; m < M; ++m)
      missingB[slot(st, m)] = st + 1 < NS ? 2 : 1;
  auto satisfyB = [&](int st, int m) {
    if (--missingB[slot(st, m)] == 0)
      readyB[s.rankOf(st, m)].insert(posB[slot(st, m)]);
  };
  for (int m = 0; m < M; ++m)
    makeReadyF(0, m);

  Phase bwd = cfg.split ? Phase::B : Phase::BW;
  auto done = [&](Phase p, int st, int m, int t) {
    int f = finish[idx.key(p, st, m)];
    return f >= 0 && f <= t;
  };
  std::vector<std::deque<std::pair<int, int>>> pendingW(R);
  std::vector<int> rankInflight(R, 0); // F done, B / BW not yet
  std::vector<std::pair<Phase, std::pair<int, int>>> decided;
  long remaining = static_cast<long>(NS) * M * (cfg.split ? 3 : 2);
  for (int t = 0; remaining > 0; ++t) {
    // What finished at the end of slot t - 1 makes its successors ready.
    for (auto &[ph, e] : decided) {
      auto [st, m] = e;
      if (ph == Phase::F) {
        if (st + 1 < NS)
          makeReadyF(st + 1, m);
        satisfyB(st, m);
      } else if (ph == bwd && st > 0) {
        satisfyB(st - 1, m);
      }
    }
    decided.clear();
    bool any = false;
    for (int r = 0; r < R; ++r) {
      int chosenSt = -1, chosenM = -1;
      Phase chosen = Phase::F;
      // Backward.
      if (!readyB[r].empty()) {
        auto [st, m] = owned[r][*readyB[r].begin()];
        chosen = bwd, chosenSt = st, chosenM = m;
      }
      auto tryW = [&]() {
        for (auto [st, m] : pendingW[r])
          if (done(Phase::B, st, m, t)) {
            chosen = Phase::W, chosenSt = st, chosenM = m;
            return;
          }
      };
      if (chosenSt < 0 && cfg.split && !cfg.deferW)
        tryW();
      if (chosenSt < 0 && !heads[r].empty() &&
          (!cfg.rankCap || rankInflight[r] < cfg.rankCap(r))) {
        auto [st, m] = ownedF[r][heads[r].begin()->first];
        chosen = Phase::F, chosenSt = st, chosenM = m;
      }
      if (chosenSt < 0 && cfg.split)
        tryW();
      if (chosenSt < 0)
        continue;
      any = true;
      --remaining;
      finish[idx.key(chosen, chosenSt, chosenM)] = t + 1;
      decided.push_back({chosen, {chosenSt, chosenM}});
      s.actions[r].push_back(Action::compute(chosen, chosenSt, chosenM));
      int p = s.pipelineOf(chosenM);
      if (chosen == Phase::F) {
        readyF[r][{p, chosenSt}].ready.erase(posF[slot(chosenSt, chosenM)]);
        ++inflight[p][chosenSt];
        ++rankInflight[r];
        refresh(r, {p, chosenSt});
      } else if (chosen == bwd) {
        readyB[r].erase(posB[slot(chosenSt, chosenM)]);
        --rankInflight[r];
      }
      if (chosen == Phase::B)
        pendingW[r].push_back({chosenSt, chosenM});
      if (chosen == Phase::BW || chosen == Phase::W) {
        --inflight[p][chosenSt];
        refresh(r, {p, chosenSt});
      }
      if (chosen == Phase::W)
        pendingW[r].erase(
            llvm::find(pendingW[r], std::make_pair(chosenSt, chosenM)));
    }
    // Nothing ran and nothing is in progress past t: no later slot differs.
    if (!any) {
      bool inProgress = llvm::any_of(finish, [&](int f) { return f > t; });
      if (!inProgress)
        return err("{0}: internal error: greedy scheduler stalled at slot {1} "
                   "with {2} actions left",
                   s.name, t, remaining);
    }
  }
  return s;
}

/// Shared 1F1B order on one rank: `warm` forwards, then F/BW pairs, then
/// the remaining backwards.
void oneFOneB(std::vector<Action> &row, int stage, int M, int warm) {
  for (int m = 0; m < warm; ++m)
    row.push_back(F(stage, m));
  for (int i = 0; i + warm < M; ++i) {
    row.push_back(F(stage, warm + i));
    row.push_back(BW(stage, i));
  }
  for (int m = M - warm; m < M; ++m)
    row.push_back(BW(stage, m));
}

} // namespace

//===----------------------------------------------------------------------===//
// PipeDream weight versions
//===----------------------------------------------------------------------===//

/// A stage's version counts the weight updates applied on that stage before
/// the F runs (walking the rank's order); BW uses the version its F used
/// (weight stashing). An update happens after every `updateEvery` completed
/// backward passes of the stage.
void pipeopt::schedule::assignWeightVersions(Schedule &s, WeightVersions rule) {
  if (rule == WeightVersions::None)
    return;
  const int updateEvery =
      rule == WeightVersions::PerBackward ? 1 : std::max(1, s.numStages);
  std::vector<int> backwardDone(s.numStages, 0);
  ComputeIndex idx(s.numStages, s.numMicrobatches);
  std::vector<int> fVersion(idx.size(), 0);
  for (auto &row : s.actions)
    for (Action &a : row) {
      if (!idx.inRange(a.stage, a.microbatch))
        continue;
      if (a.phase == Phase::F) {
        a.weightVersion = backwardDone[a.stage] / updateEvery;
        fVersion[idx.key(Phase::F, a.stage, a.microbatch)] = a.weightVersion;
      } else if (a.phase == Phase::BW) {
        a.weightVersion = fVersion[idx.key(Phase::F, a.stage, a.microbatch)];
        ++backwardDone[a.stage];
      }
    }
}

//===----------------------------------------------------------------------===//
// Generators
//===----------------------------------------------------------------------===//

/// GPipe (Huang et al., NeurIPS 2019, §2.2): every rank runs all M
/// forwards, then all M full backwards (microbatch order 0..M-1, as in
/// PyTorch's ScheduleGPipe). Any M >= 1.
llvm::Expected<Schedule> pipeopt::schedule::makeGPipe(const ScheduleParams &p) {
  const ScheduleInfo &info = detail::infoOf(makeGPipe);
  auto sh = resolve(info, p);
  if (!sh)
    return sh.takeError();
  Schedule s = skeleton(info, *sh, loopedPlacement(sh->S, 1));
  for (int r = 0; r < sh->S; ++r) {
    for (int m = 0; m < sh->M; ++m)
      s.actions[r].push_back(F(r, m));
    for (int m = 0; m < sh->M; ++m)
      s.actions[r].push_back(BW(r, m));
  }
  return s;
}

/// Forward-only (inference): GPipe's forward order, no backward.
llvm::Expected<Schedule>
pipeopt::schedule::makeForwardOnly(const ScheduleParams &p) {
  const ScheduleInfo &info = detail::infoOf(makeForwardOnly);
  auto sh = resolve(info, p);
  if (!sh)
    return sh.takeError();
  Schedule s = skeleton(info, *sh, loopedPlacement(sh->S, 1));
  for (int r = 0; r < sh->S; ++r)
    for (int m = 0; m < sh->M; ++m)
      s.actions[r].push_back(F(r, m));
  return s;
}

/// 1F1B = PipeDream-Flush (Narayanan et al., ICML 2021 "Memory-Efficient
/// Pipeline-Parallel DNN Training", §3; also Megatron-LM SC'21 §2.2.1):
/// rank r runs S-1-r warm-up forwards, then alternates one forward and one
/// full backward, then drains the remaining backwards; a flush ends the
/// batch. Needs M >= S.
llvm::Expected<Schedule> pipeopt::schedule::make1F1B(const ScheduleParams &p) {
  const ScheduleInfo &info = detail::infoOf(make1F1B);
  auto sh = resolve(info, p);
  if (!sh)
    return sh.takeError();
  if (auto e = needAtLeastStages(info.name, *sh))
    return std::move(e);
  Schedule s = skeleton(info, *sh, loopedPlacement(sh->S, 1));
  for (int r = 0; r < sh->S; ++r)
    oneFOneB(s.actions[r], r, sh->M, std::min(sh->S - 1 - r, sh->M));
  return s;
}

/// Interleaved 1F1B (Narayanan et al., SC'21 "Efficient Large-Scale Language
/// Model Training on GPU Clusters Using Megatron-LM", §2.2.2): v chunks per
/// rank, virtual stage k on rank k % S. Order of work on a rank follows
/// Megatron-core's schedule table: microbatches are taken in groups of S;
/// within a group all chunks 0..v-1 run for every microbatch of the group.
/// Backwards use the same table with chunk order reversed. Warm-up on rank r
/// (Megatron): min(2 (S-1-r) + (v-1) G, M v) forwards with G the group size,
/// then 1F1B steady state, then cool-down. Needs M >= S.
/// M not a multiple of S (our rule): the *first* group takes S + M mod S
/// microbatches (G = that size in the warm-up formula), all later groups S.
/// Megatron-core instead leaves a short last group, which with the warm-up
/// above gives a dependency cycle for e.g. S=4, v=3, M=5; a group never
/// shorter than S avoids that (the sweep test covers S<=8, v<=3, M<=17).
llvm::Expected<Schedule>
pipeopt::schedule::makeInterleaved1F1B(const ScheduleParams &p) {
  const ScheduleInfo &info = detail::infoOf(makeInterleaved1F1B);
  auto sh = resolve(info, p);
  if (!sh)
    return sh.takeError();
  if (auto e = needAtLeastStages(info.name, *sh))
    return std::move(e);
  int S = sh->S, v = sh->v, M = sh->M;
  Schedule s = skeleton(info, *sh, loopedPlacement(S, v));
  // (microbatch, chunk) table: groups of microbatches, every chunk of a
  // group before the next group. The first group absorbs M mod S.
  int first = S + M % S;
  if (M % S == 0)
    first = S;
  std::vector<std::pair<int, int>> table;
  for (int g0 = 0; g0 < M;) {
    int g1 = g0 == 0 ? first : g0 + S;
    for (int c = 0; c < v; ++c)
      for (int m = g0; m < g1; ++m)
        table.push_back({m, c});
    g0 = g1;
  }
  int total = M * v;
  for (int r = 0; r < S; ++r) {
    auto &row = s.actions[r];
    auto fwd = [&](int i) {
      row.push_back(F(table[i].second * S + r, table[i].first));
    };
    auto bwd = [&](int i) {
      row.push_back(BW((v - 1 - table[i].second) * S + r, table[i].first));
    };
    int warm = std::min(2 * (S - 1 - r) + (v - 1) * first, total);
    for (int i = 0; i < warm; ++i)
      fwd(i);
    for (int i = 0; warm + i < total; ++i) {
      fwd(warm + i);
      bwd(i);
    }
    for (int i = total - warm; i < total; ++i)
      bwd(i);
  }
  return s;
}

/// Looped BFS (Lamy-Poirier, "Breadth-First Pipeline Parallelism", MLSys
/// 2023, §3): looped placement (stage k on rank k % S); each rank runs the
/// forward of all M microbatches on chunk 0, then chunk 1, ..., then the
/// backwards chunk v-1 down to 0, each over all microbatches in reverse
/// order. Any M >= 1.
llvm::Expected<Schedule>
pipeopt::schedule::makeLoopedBFS(const ScheduleParams &p) {
  const ScheduleInfo &info = detail::infoOf(makeLoopedBFS);
  auto sh = resolve(info, p);
  if (!sh)
    return sh.takeError();
  int S = sh->S, v = sh->v, M = sh->M;
  Schedule s = skeleton(info, *sh, loopedPlacement(S, v));
  for (int r = 0; r < S; ++r) {
    for (int c = 0; c < v; ++c)
      for (int m = 0; m < M; ++m)
        s.actions[r].push_back(F(c * S + r, m));
    for (int c = v - 1; c >= 0; --c)
      for (int m = M - 1; m >= 0; --m)
        s.actions[r].push_back(BW(c * S + r, m));
  }
  return s;
}

/// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, §3.1,
/// Fig. 3 top): one stage per rank, backward split into B (input gradient)
/// and W (weight gradient); 1F1B's order of F and B with the W's deferred
/// into the cool-down bubbles. Explicit construction, rank r of S, d = S-1:
///  1. warm-up: F_0 .. F_{S-r-1} (1F1B's S-1-r warm-up forwards plus the
///     first steady forward; at most S-r microbatches between F and B, as
///     in 1F1B);
///  2. steps i = 0 .. M-1, each starting with B_i: then the next forward if
///     any is left, then oldest-first W's so that the step takes L(i) unit
///     slots, L(i) = 2 for i < d and 3 for i >= d (0, 1 or 2 W's);
///  3. the last step (i = M-1) is B_{M-1} followed by every remaining W
///     (r + 1 of them when M >= 2S-1-r: the W "triangle" of the figure).
/// Why it is exact in unit time (F = B = W = 1): every rank's steps have the
/// same lengths L(i), and rank r starts step 0 (B_0) at slot 2S-1-r, one slot
/// after rank r+1, so each B_i on rank r runs the slot after B_i on rank
/// r+1 finishes, each forward reaches rank r+1 before the step that uses
/// it, and no rank idles after its B_0. Rank r idles r slots before F_0 and
/// S-1-r slots waiting for B_0: S-1 in all, so the makespan is
/// 3M + S - 1, i.e. bubble (S-1)(F+B-W) of the paper. d = S-1 is the
/// smallest deferral that works for every M: in the cool-down rank 0 needs
/// two W's in each of its S-1 steps before the last, so S-1 W's must be
/// pending when its forwards run out. (Some deferral is unavoidable: the
/// last rank must still hold S W's after its last B, or rank 0 could not
/// finish B_{M-1} and W_{M-1} by 3M + S - 1.)
/// Memory: between F and B a stage holds at most S-s microbatches (1F1B's
/// peak, what maxInFlight() counts and what the paper's "same as 1F1B"
/// refers to); in addition up to S microbatches wait for their W, which
/// keep only W's inputs (the paper's M_W < M_B). Needs M >= S.
llvm::Expected<Schedule> pipeopt::schedule::makeZBH1(const ScheduleParams &p) {
  const ScheduleInfo &info = detail::infoOf(makeZBH1);
  auto sh = resolve(info, p);
  if (!sh)
    return sh.takeError();
  if (auto e = needAtLeastStages(info.name, *sh))
    return std::move(e);
  Schedule s = skeleton(info, *sh, loopedPlacement(sh->S, 1));
  int S = sh->S, M = sh->M, d = S - 1;
  for (int r = 0; r < S; ++r) {
    auto &row = s.actions[r];
    int nextF = 0, nextW = 0;
    for (; nextF < S - r; ++nextF)
      row.push_back(F(r, nextF));
    for (int i = 0; i < M; ++i) {
      row.push_back(Bi(r, i));
      if (i == M - 1) {
        for (; nextW < M; ++nextW)
          row.push_back(Wg(r, nextW));
        break;
      }
      bool hasF = nextF < M;
      if (hasF)
        row.push_back(F(r, nextF++));
      int stepLen = i < d ? 2 : 3;
      for (int k = 0; k < stepLen - 1 - (hasF ? 1 : 0); ++k) {
        if (nextW > i)
          return err("{0}: internal error: no pending W on rank {1} in step "
                     "{2} (S={3}, M={4})",
                     info.name, r, i, S, M);
        row.push_back(Wg(r, nextW++));
      }
    }
  }
  return s;
}

namespace {

/// Unit-time makespan of a generated table: one past the last slot of any
/// compute action (unitTimeSlots()); -1 when it has no consistent order.
int unitMakespanOf(const Schedule &s) {
  auto slots = unitTimeSlots(s);
  if (!slots) {
    llvm::consumeError(slots.takeError());
    return -1;
  }
  int end = 0;
  for (size_t r = 0; r < s.actions.size(); ++r)
    for (size_t i = 0; i < s.actions[r].size(); ++i)
      if (s.actions[r][i].isCompute())
        end = std::max(end, (*slots)[r][i] + 1);
  return end;
}

/// The ZB-V order of the paper's figure (Qi et al., "Zero Bubble Pipeline
/// Parallelism", ICLR 2024, arXiv 2401.10241 §6, ZB-V; V-shape analysis in
/// Qi et al., "Pipeline Parallelism with Controllable Memory", 2024, §4);
/// the same rule as torch 2.15's ScheduleZBVZeroBubble. Rank r of S holds chunk
/// 0 = stage r and chunk 1 = stage 2S-1-r; with N = max(M, 2S-1) microbatches:
///  1. 2(S-r)-1 x F0;  2. r x {F1, F0};  3. (S-r) x {F1, I1, W1};
///  4. steady, until every F is done: {F0 (while any is left), I0, W0, F1,
///     I1, W1};
///  5. r x {I0, I1} (W deferred);  6. (S-r) x {I0, W0 (oldest deferred)};
///  7. the deferred W of chunk 1, then those of chunk 0.
/// With F = I = W = 1 slot and M >= 2S-1 (N = M) every rank is busy from
/// its first F (slot r) to the end: 6M + S - 1 slots, which is optimal (the
/// last rank cannot start before slot S-1 and has 6M slots of work). When M <
/// 2S-1 the order is built for N = 2S-1 and the actions of microbatches >= M
/// are dropped, which leaves idle slots. Per rank at most 2S microbatches have
/// F done and I not yet (chunk 0 peaks at 2S-r while chunk 1 holds r, and
/// chunk 1 peaks at r+1 while chunk 0 holds 2S-r-1).
void zbvPaperOrder(Schedule &s, int S, int M) {
  const int N = std::max(M, 2 * S - 1);
  for (int r = 0; r < S; ++r) {
    std::vector<Action> row;
    const int st[2] = {r, 2 * S - 1 - r};
    int f[2] = {0, 0}, b[2] = {0, 0}, w[2] = {0, 0};
    auto fwd = [&](int c) { row.push_back(F(st[c], f[c]++)); };
    auto inp = [&](int c) { row.push_back(Bi(st[c], b[c]++)); };
    auto wgt = [&](int c) { row.push_back(Wg(st[c], w[c]++)); };
    for (int i = 0; i < 2 * (S - r) - 1; ++i)
      fwd(0);
    for (int i = 0; i < r; ++i) {
      fwd(1);
      fwd(0);
    }
    for (int i = 0; i < S - r; ++i) {
      fwd(1);
      inp(1);
      wgt(1);
    }
    while (f[1] < f[0] || f[0] < N) {
      if (f[0] < N)
        fwd(0);
      inp(0);
      wgt(0);
      fwd(1);
      inp(1);
      wgt(1);
    }
    for (int i = 0; i < r; ++i) {
      inp(0);
      inp(1);
    }
    for (int i = 0; i < S - r; ++i) {
      inp(0);
      wgt(0);
    }
    while (w[1] < b[1])
      wgt(1);
    while (w[0] < b[0])
      wgt(0);
    for (const Action &a : row)
      if (a.microbatch < M)
        s.actions[r].push_back(a);
  }
}

} // namespace

/// Interleaved zero bubble, ZB1P (Qi et al., "Zero Bubble Pipeline
/// Parallelism", ICLR 2024, §3 applied to Megatron's interleaved placement;
/// the rule of torch 2.15's ScheduleInterleavedZeroBubble): v chunks per
/// rank, stage k on rank k % S, backward split into B (input gradient) and W
/// (weight gradient). Microbatches run in R = max(1, floor(M / S)) rounds of
/// G = M / R (M must be a multiple of R). Rank r of S:
///  - forward op k = 0 .. vM-1 runs chunk (k / G) mod v, backward op j runs
///    chunk v-1 - (j / G) mod v; each stage takes its microbatches in order;
///  - warm-up: w = min((v-1) G + S-1-r, vM) forwards (interleaved 1F1B's
///    warm-up with one forward, not two, per hop from the last rank: the
///    W's fill what 1F1B leaves for the second);
///  - steady, k = w .. vM-1: F op k, B op k-w, then, once r backwards have
///    been done before it (k-w >= r), the W of backward op k-w-r;
///  - cool-down, j = vM-w .. vM-1: B op j, then the W of op j-r if j >= r;
///  - the remaining r W's, oldest first.
/// The r deferred W's per rank are the ZB-H1 idea: rank r delays its W's by
/// r backwards, so that they fill the slots where it would wait for the
/// backward from rank r+1. With F = B = W = 1 slot it takes 3vM + S - 1
/// slots on the whole sweep S in {2,4,8}, M in {S,2S,16}, v = 2 (the unit
/// time optimum: the last rank starts at slot S-1 and has 3vM slots of
/// work).
llvm::Expected<Schedule>
pipeopt::schedule::makeInterleavedZB(const ScheduleParams &p) {
  const ScheduleInfo &info = detail::infoOf(makeInterleavedZB);
  auto sh = resolve(info, p);
  if (!sh)
    return sh.takeError();
  int S = sh->S, v = sh->v, M = sh->M;
  const int rounds = std::max(1, M / S), G = M / rounds;
  if (M % rounds != 0)
    return err("{0} needs num-microbatches to be a multiple of the number of "
               "rounds max(1, floor(M / S)) = {1} (S = {2}), got {3}",
               info.name, rounds, S, M);
  Schedule s = skeleton(info, *sh, loopedPlacement(S, v));
  const int total = v * M;
  for (int r = 0; r < S; ++r) {
    auto &row = s.actions[r];
    std::vector<int> nextF(v, 0), nextB(v, 0), nextW(v, 0);
    auto fwdChunk = [&](int k) { return (k / G) % v; };
    auto bwdChunk = [&](int j) { return v - 1 - (j / G) % v; };
    auto fwd = [&](int k) {
      int c = fwdChunk(k);
      row.push_back(F(c * S + r, nextF[c]++));
    };
    auto bwd = [&](int j) {
      int c = bwdChunk(j);
      row.push_back(Bi(c * S + r, nextB[c]++));
    };
    auto wgt = [&](int j) {
      int c = bwdChunk(j);
      row.push_back(Wg(c * S + r, nextW[c]++));
    };
    const int warm = std::min((v - 1) * G + S - 1 - r, total);
    int doneW = 0;
    for (int k = 0; k < warm; ++k)
      fwd(k);
    for (int k = warm; k < total; ++k) {
      fwd(k);
      bwd(k - warm);
      if (k - warm >= r)
        wgt(doneW++);
    }
    for (int j = total - warm; j < total; ++j) {
      bwd(j);
      if (j >= r)
        wgt(doneW++);
    }
    while (doneW < total)
      wgt(doneW++);
  }
  return s;
}

/// ZB-H2 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, §2.2,
/// Fig. 3 bottom): one stage per rank, backward split into B and W; more
/// warm-up forwards than 1F1B fill the bubble before the first B, and the
/// W's are deferred to the tail, which turns ZB-H1's trapezoid into a
/// parallelogram. Greedy realisation: every slot a rank runs its ready B
/// (oldest microbatch), else a forward while fewer than 2(S-r)-1 of its
/// microbatches have F done and B not yet, else its oldest pending W.
/// Derivation with F = B = W = 1 slot (rank r of S):
///  - F_0 reaches rank r at slot r and rank S-1 runs B_0 right after its
///    F_0 (slot S), so B_0 reaches rank r at slot 2S-1-r: rank r has
///    2(S-1-r)+1 slots before it, exactly filled by the warm-up forwards
///    F_0 .. F_{2(S-r)-2}; hence the per-rank peak in flight
///    min(2(S-r)-1, M) (rank 0: 2S-1, about 2x 1F1B's S -- the paper's
///    (2p-1) M_B);
///  - after that a B arrives every 3 slots and the slots between are filled
///    by one F and one W, or by two W's once the forwards are used up;
///    with M >= 2S-1 every rank is then busy without a gap from slot r to
///    slot 3M+r (its busy span is 3M: no bubble inside any rank);
///  - the makespan is 3M + S - 1: the last rank cannot start before slot
///    S-1 and has 3M slots of work, and it never idles after F_0. For
///    S <= M < 2S-1 the makespan is the same (ranks may idle in between).
/// So in unit time ZB-H2 takes as long as ZB-H1 (whose bubble (S-1)(F+B-W)
/// is also S-1 slots); what the parallelogram buys is that no rank idles
/// between its first and its last action, which pays off when the times
/// differ or when the optimizer step need not wait for all ranks (§2.2,
/// §4). Needs M >= S.
llvm::Expected<Schedule> pipeopt::schedule::makeZBH2(const ScheduleParams &p) {
  const ScheduleInfo &info = detail::infoOf(makeZBH2);
  auto sh = resolve(info, p);
  if (!sh)
    return sh.takeError();
  if (auto e = needAtLeastStages(info.name, *sh))
    return std::move(e);
  int S = sh->S, M = sh->M;
  GreedyConfig cfg;
  cfg.split = true;
  cfg.deferW = true;
  cfg.cap = [M](int, int) { return M; }; // no per-stage cap: the rank cap
  cfg.rankCap = [S](int r) { return 2 * (S - r) - 1; };
  return greedy(skeleton(info, *sh, loopedPlacement(S, 1)), cfg);
}

/// ZB-V (Qi et al., "Pipeline Parallelism with Controllable Memory", 2024,
/// §4; the zero-bubble repository's ZB-V): two chunks per rank in a V:
/// stage s on rank s and stage 2S-1-s on rank s, B/W split. Needs M >= S.
///
/// Two candidate orders are built and one is kept:
///  (a) the paper's order (zbvPaperOrder(), the same rule as torch's
///      ScheduleZBVZeroBubble): optimal in unit time for M >= 2S-1
///      (6M + S - 1 slots), at most 2S activations per rank;
///  (b) the greedy list scheduler (backward first, W only in idle slots)
///      under a per-stage cap 2S-k (stage k) *and* a rank cap of 2S. It
///      fills the warm-up better when M < 2S-1, where (a) has idle slots
///      (S=4, M=4: 27 slots against 30).
/// (b) is kept when its unit-time makespan is shorter than (a)'s and no rank
/// holds more activations than in (a); otherwise (a). (b) is not built when
/// (a) reaches the lower bound 6M + S - 1 (M >= 2S-1). So zb-v is never
/// slower and never holds more in flight, on any rank, than the paper's
/// (torch's) ZB-V.
/// Why the greedy alone was not enough: with per-stage caps only (2S-r on
/// chunk 0, r+1 on chunk 1) both chunks of a rank can be full at once, 2S+1
/// activations, one more than the paper's V, whose chunk-0 peak coincides
/// with chunk 1 holding r, not r+1; and the greedy's earliest-first choices
/// at S=8 leave one or two slots that the paper's steady pattern
/// {F0, I0, W0, F1, I1, W1} does not (S=8, M=16: 105 against 103).
llvm::Expected<Schedule> pipeopt::schedule::makeZBV(const ScheduleParams &p) {
  const ScheduleInfo &info = detail::infoOf(makeZBV);
  auto sh = resolve(info, p);
  if (!sh)
    return sh.takeError();
  if (auto e = needAtLeastStages(info.name, *sh))
    return std::move(e);
  int S = sh->S, M = sh->M;
  Schedule paper = skeleton(info, *sh, wavePlacement(S, 2 * S));
  zbvPaperOrder(paper, S, M);
  int paperSpan = unitMakespanOf(paper);
  if (paperSpan < 0)
    return err("{0}: internal error: the paper's order has no consistent "
               "execution order (S={1}, M={2})",
               info.name, S, M);
  // 6M + S - 1 is a lower bound (rank S-1 starts at slot S-1 and runs 6M
  // actions): no candidate can be shorter.
  if (paperSpan == 6 * M + S - 1)
    return paper;
  GreedyConfig cfg;
  cfg.split = true;
  cfg.deferW = true;
  cfg.cap = [S](int, int st) { return 2 * S - st; };
  cfg.rankCap = [S](int) { return 2 * S; };
  auto g = greedy(skeleton(info, *sh, wavePlacement(S, 2 * S)), cfg);
  if (!g)
    return g.takeError();
  int greedySpan = unitMakespanOf(*g);
  std::vector<int> paperPeak = peakInFlightPerRank(paper),
                   greedyPeak = peakInFlightPerRank(*g);
  bool greedyFits = true;
  for (int r = 0; r < S; ++r)
    greedyFits = greedyFits && greedyPeak[r] <= paperPeak[r];
  if (greedySpan >= 0 && greedySpan < paperSpan && greedyFits)
    return std::move(*g);
  return paper;
}

/// Chimera (Li & Hoefler, SC'21, §3): two pipelines over the same S ranks
/// (S even): the down pipeline places stage s on rank s, the up pipeline on
/// rank S-1-s, so every rank holds two model replicas' stages. Microbatches
/// are split in basic units of S (§3.2): in each unit the first S/2 go
/// down, the last S/2 go up. Full backward. Needs S even and M a multiple
/// of S.
/// Basic unit (M = S): unit-time list scheduling, each rank running a ready
/// backward if it has one (smallest microbatch, then later stage), else the
/// ready forward of the *later stage* (the one further along its own
/// pipeline; ties: smaller microbatch). Forwarding the microbatch closer to
/// its pipeline's end first is what lets the two directions fill each
/// other's bubbles: the unit takes 3S-2 slots with F = BW = 1 slot, i.e.
/// S-2 idle slots per rank (§3.2, Table 2), and for S = 4 it is exactly the
/// paper's Fig. 3 unit. (Smallest-microbatch-first forwards take 12 slots
/// at S = 4.)
/// M = kS: direct concatenation (§3.5) of k basic units, in order; a rank
/// runs an action of unit u+1 only when no action of an earlier unit is
/// ready, so the next unit's forwards fill the previous unit's cool-down
/// bubbles and the whole batch takes 2M + S - 2 slots (bubble
/// (S-2)/(2M+S-2), Table 2). Forward doubling / backward halving (§3.5) is
/// not implemented. Activation cap per (pipeline, stage): S - s.
llvm::Expected<Schedule>
pipeopt::schedule::makeChimera(const ScheduleParams &p) {
  const ScheduleInfo &info = detail::infoOf(makeChimera);
  auto sh = resolve(info, p);
  if (!sh)
    return sh.takeError();
  int S = sh->S, M = sh->M;
  if (S % 2 != 0)
    return err("{0} needs an even num-stages (two bidirectional "
               "pipelines), got {1}",
               info.name, S);
  if (M % S != 0)
    return err("{0} needs num-microbatches to be a multiple of "
               "num-stages ({1}) (basic units of {1} microbatches), got {2}",
               info.name, S, M);
  Schedule s = skeleton(info, *sh, loopedPlacement(S, 1));
  std::vector<int> up(S);
  for (int st = 0; st < S; ++st)
    up[st] = S - 1 - st;
  s.stageRank.push_back(up);
  for (int m = 0; m < M; ++m)
    s.microbatchPipeline[m] = (m % S) < S / 2 ? 0 : 1;
  GreedyConfig cfg;
  cfg.split = false;
  cfg.unitSize = S;
  cfg.forwardLaterStageFirst = true;
  cfg.cap = [S](int, int st) { return S - st; };
  return greedy(std::move(s), cfg);
}

/// Hanayo (Liu et al., SC'23 "Hanayo: Harnessing Wave-like Pipeline
/// Parallelism", §3): the model is cut into 2 W S stages that sweep the ranks
/// in W waves (down 0..S-1, then up S-1..0), so each rank holds 2W chunks.
/// Full backward; per-stage activation cap numStages-k. Greedy realisation.
/// Needs waves >= 1 and M >= S.
llvm::Expected<Schedule>
pipeopt::schedule::makeHanayo(const ScheduleParams &p) {
  const ScheduleInfo &info = detail::infoOf(makeHanayo);
  if (p.waves < 1)
    return err("{0} needs waves >= 1, got {1}", info.name, p.waves);
  auto sh = resolve(info, p);
  if (!sh)
    return sh.takeError();
  if (auto e = needAtLeastStages(info.name, *sh))
    return std::move(e);
  int S = sh->S, NS = sh->numStages();
  Schedule s = skeleton(info, *sh, wavePlacement(S, NS));
  GreedyConfig cfg;
  cfg.split = false;
  cfg.cap = [NS](int, int st) { return NS - st; };
  return greedy(std::move(s), cfg);
}

/// DualPipeV (DeepSeek-V3 technical report, §3.2.1, and the "V" variant of
/// github.com/deepseek-ai/DualPipe): V placement (rank r holds stage r,
/// "chunk 0", and stage 2S-1-r, "chunk 1"), eight phases per rank:
///  1. 2(S-1-r) x F0;  2. (r+1) x {F0, F1};  3. (S-1-r) x {B1 (input grad),
///  W (oldest deferred), F1};  4. (M-2S+r+1) x {F0, BW1, F1, BW0};
///  5. (S-1-r) x {BW1, F1, BW0};  6. (r+1) x {B1, B0}, switching from full
///  backward to input-grad-only halfway (at i = (r+1)/2, chunk 1 first on
///  odd ranks, chunk 0 first on even ranks);  7. (S-1-r) x {W, B0 (input
///  grad)};  8. all remaining deferred W.
/// The F&B overlap of a step is a runtime optimisation; the table lists the
/// two actions in sequence. Needs M >= 2S (as DualPipe asserts).
llvm::Expected<Schedule>
pipeopt::schedule::makeDualPipeV(const ScheduleParams &p) {
  const ScheduleInfo &info = detail::infoOf(makeDualPipeV);
  auto sh = resolve(info, p);
  if (!sh)
    return sh.takeError();
  int S = sh->S, M = sh->M;
  if (M < 2 * S)
    return err("{0} needs num-microbatches >= 2 x num-ranks ({1}), got "
               "{2}",
               info.name, 2 * S, M);
  Schedule s = skeleton(info, *sh, wavePlacement(S, 2 * S));
  for (int r = 0; r < S; ++r) {
    auto &row = s.actions[r];
    int st[2] = {r, 2 * S - 1 - r};
    int fIdx[2] = {0, 0}, bIdx[2] = {0, 0};
    std::deque<std::pair<int, int>> wq;
    auto f = [&](int c) { row.push_back(F(st[c], fIdx[c]++)); };
    auto bFull = [&](int c) { row.push_back(BW(st[c], bIdx[c]++)); };
    auto bInput = [&](int c) {
      wq.push_back({st[c], bIdx[c]});
      row.push_back(Bi(st[c], bIdx[c]++));
    };
    auto popW = [&]() {
      if (wq.empty())
        return;
      row.push_back(Wg(wq.front().first, wq.front().second));
      wq.pop_front();
    };
    for (int i = 0; i < 2 * (S - 1 - r); ++i)
      f(0);
    for (int i = 0; i < r + 1; ++i) {
      f(0);
      f(1);
    }
    for (int i = 0; i < S - 1 - r; ++i) {
      bInput(1);
      popW();
      f(1);
    }
    for (int i = 0; i < M - 2 * S + r + 1; ++i) {
      f(0);
      bFull(1);
      f(1);
      bFull(0);
    }
    for (int i = 0; i < S - 1 - r; ++i) {
      bFull(1);
      f(1);
      bFull(0);
    }
    bool zb = false;
    for (int i = 0; i < r + 1; ++i) {
      if (i == (r + 1) / 2 && r % 2 == 1)
        zb = true;
      zb ? bInput(1) : bFull(1);
      if (i == (r + 1) / 2 && r % 2 == 0)
        zb = true;
      zb ? bInput(0) : bFull(0);
    }
    for (int i = 0; i < S - 1 - r; ++i) {
      popW();
      bInput(0);
    }
    while (!wq.empty())
      popW();
  }
  return s;
}

/// PipeDream (Narayanan et al., SOSP 2019, §3.2-3.3): asynchronous 1F1B
/// without flush; the input stage admits S microbatches (NOAM) and every
/// rank alternates F and full backward after its warm-up, which gives the
/// same per-rank order as 1F1B over the M microbatches of the table. Weight
/// stashing: a stage updates its weights after every backward; each F uses
/// the newest version on its stage, its BW uses the stashed version of that
/// F (Action::weightVersion). Any M >= 1.
llvm::Expected<Schedule>
pipeopt::schedule::makePipeDream(const ScheduleParams &p) {
  const ScheduleInfo &info = detail::infoOf(makePipeDream);
  auto sh = resolve(info, p);
  if (!sh)
    return sh.takeError();
  Schedule s = skeleton(info, *sh, loopedPlacement(sh->S, 1));
  for (int r = 0; r < sh->S; ++r)
    oneFOneB(s.actions[r], r, sh->M, std::min(sh->S - 1 - r, sh->M));
  assignWeightVersions(s, info.weightVersions);
  return s;
}

/// PipeDream-2BW (Narayanan et al., ICML 2021 "Memory-Efficient
/// Pipeline-Parallel DNN Training", §3.1): 1F1B order without flush and
/// double-buffered weights: a new weight version is produced once per batch
/// of S microbatches (the paper's m = d), so a stage's F uses version
/// floor(backwards done on the stage / S) and its backward uses the same
/// (stashed) version; at most two versions are live. Any M >= 1.
llvm::Expected<Schedule>
pipeopt::schedule::makePipeDream2BW(const ScheduleParams &p) {
  const ScheduleInfo &info = detail::infoOf(makePipeDream2BW);
  auto sh = resolve(info, p);
  if (!sh)
    return sh.takeError();
  Schedule s = skeleton(info, *sh, loopedPlacement(sh->S, 1));
  for (int r = 0; r < sh->S; ++r)
    oneFOneB(s.actions[r], r, sh->M, std::min(sh->S - 1 - r, sh->M));
  assignWeightVersions(s, info.weightVersions);
  return s;
}
