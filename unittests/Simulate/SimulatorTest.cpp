//===- SimulatorTest.cpp - Tests of the pipeline simulator ----------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Simulate/Simulator.h"
#include "pipeopt/Simulate/CostTable.h"
#include "pipeopt/Simulate/Trace.h"

#include "llvm/Support/JSON.h"

#include "gtest/gtest.h"

#include <string>

using namespace pipeopt;
using namespace pipeopt::sim;
using namespace pipeopt::machine;
using schedule::Action;
using schedule::Phase;
using schedule::Schedule;

namespace {

/// The schedule, or an empty one when the generator rejects the parameters.
Schedule tryMake(llvm::StringRef name, int ranks, int microbatches) {
  schedule::ScheduleParams p;
  p.numRanks = ranks;
  p.numMicrobatches = microbatches;
  llvm::Expected<Schedule> s = schedule::makeSchedule(name, p);
  if (!s) {
    llvm::consumeError(s.takeError());
    return Schedule();
  }
  return std::move(*s);
}

Schedule make(llvm::StringRef name, int ranks, int microbatches) {
  schedule::ScheduleParams p;
  p.numRanks = ranks;
  p.numMicrobatches = microbatches;
  llvm::Expected<Schedule> s = schedule::makeSchedule(name, p);
  if (!s) {
    ADD_FAILURE() << name.str() << ": " << llvm::toString(s.takeError());
    return Schedule();
  }
  return std::move(*s);
}

/// A table with F = f, B = b, W = w seconds per stage.
CostTable table(int n, double f, double b, double w, double act = 0,
                double weights = 0, double boundary = 0) {
  CostTable t = CostTable::uniform(n, f, act, weights, boundary);
  for (StageCost &c : t.stages) {
    c.backwardInputSec = b;
    c.backwardWeightSec = w;
  }
  return t;
}

Metrics tableMetrics(const Schedule &s, const CostTable &c,
                     Timeline *tl = nullptr) {
  llvm::Expected<Metrics> m = simulateTable(s, c, idealSystem(), tl);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return Metrics();
  }
  return std::move(*m);
}

Metrics eventMetrics(const Schedule &s, const CostTable &c, const Machine &sys,
                     Timeline *tl = nullptr) {
  llvm::Expected<Metrics> m = simulateEvents(s, c, sys, tl);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return Metrics();
  }
  return std::move(*m);
}

/// [start, end) of rank `rank`'s compute in `tl`, in timeline order.
using Spans = std::vector<std::pair<double, double>>;
Spans computeSpans(const Timeline &tl, int rank) {
  Spans out;
  for (const TimedCompute &tc : tl.compute)
    if (tc.rank == rank)
      out.push_back({tc.startSec, tc.endSec});
  return out;
}

/// [start, end) of every transfer in `tl`, in timeline order.
Spans transferSpans(const Timeline &tl) {
  Spans out;
  for (const TimedTransfer &x : tl.transfers)
    out.push_back({x.startSec, x.endSec});
  return out;
}

/// A 4-rank system, 2 ranks per node, with the given inter-node link.
Machine twoNodes(double latency, double bandwidth, int nics) {
  Machine sys;
  sys.name = "test";
  sys.topology.ranksPerNode = 2;
  sys.topology.nicsPerNode = nics;
  sys.topology.intraNode = {latency, bandwidth};
  sys.topology.interNode = {latency, bandwidth};
  return sys;
}

/// Ideal devices, 2 ranks on one node, the intra-node link of `latency`
/// seconds and unlimited bandwidth.
Machine oneNodeTwoRanks(double latency) {
  Machine sys = idealSystem();
  sys.topology.ranksPerNode = 2;
  sys.topology.intraNode = {latency, 0};
  return sys;
}

//===----------------------------------------------------------------------===//
// Level 2 against the closed forms
//===----------------------------------------------------------------------===//

TEST(SimulateTable, GPipeAnd1F1BBubbleEqualsFormula) {
  // F = 1, B = 1, W = 1 (full backward 2): makespan (M + S - 1) * 3 and
  // bubble (S - 1) / (M + S - 1), exactly.
  for (int S : {2, 3, 4, 6, 8})
    for (int M : {S, S + 1, 2 * S, 16, 32, 64}) {
      CostTable c = table(S, 1, 1, 1, 0, 0, /*boundary=*/10);
      for (llvm::StringRef name : {"gpipe", "1f1b"}) {
        Schedule s = make(name, S, M);
        Metrics m = tableMetrics(s, c);
        SCOPED_TRACE(name.str() + " S=" + std::to_string(S) +
                     " M=" + std::to_string(M));
        double expected = formula::bubbleGPipe(S, M);
        EXPECT_NEAR(m.bubbleRatio, expected, 1e-12);
        EXPECT_DOUBLE_EQ(m.makespanSec, 3.0 * (M + S - 1));
        ASSERT_EQ(m.bubblePerRank.size(), static_cast<size_t>(S));
        for (double b : m.bubblePerRank)
          EXPECT_NEAR(b, expected, 1e-12);
        // The formula level agrees with the table for uniform stages.
        Metrics f = evaluateFormula(s, c, idealSystem());
        ASSERT_TRUE(f.available);
        EXPECT_NEAR(f.bubbleRatio, expected, 1e-12);
        EXPECT_NEAR(f.makespanSec, m.makespanSec, 1e-9);
        // Activation forward and gradient back over each of the S - 1 cuts.
        EXPECT_DOUBLE_EQ(m.commBytes, 2 * 10.0 * M * (S - 1));
        EXPECT_DOUBLE_EQ(f.commBytes, m.commBytes);
      }
    }
  // A different F:B ratio gives the same bubble.
  Schedule s = make("1f1b", 4, 8);
  EXPECT_NEAR(tableMetrics(s, table(4, 1, 1.5, 0.5)).bubbleRatio, 3.0 / 11,
              1e-12);
}

TEST(SimulateTable, ForwardOnlyMatchesItsFormula) {
  // Inference: F = 1 per stage, backward costs in the table are not run.
  // Makespan M + S - 1, bubble (S - 1) / (M + S - 1), one microbatch of
  // activations held per stage, at both the table and formula levels.
  for (int S : {1, 2, 4, 8})
    for (int M : {1, S, 2 * S + 1, 32}) {
      SCOPED_TRACE("S=" + std::to_string(S) + " M=" + std::to_string(M));
      CostTable c = table(S, 1, 1, 1, /*act=*/100, /*weights=*/0,
                          /*boundary=*/10);
      Schedule s = make("forward-only", S, M);
      Metrics t = tableMetrics(s, c);
      EXPECT_DOUBLE_EQ(t.makespanSec, M + S - 1.0);
      EXPECT_NEAR(t.bubbleRatio, formula::bubbleGPipe(S, M), 1e-12);
      Metrics f = evaluateFormula(s, c, idealSystem());
      ASSERT_TRUE(f.available);
      EXPECT_NEAR(f.makespanSec, t.makespanSec, 1e-9);
      EXPECT_NEAR(f.bubbleRatio, t.bubbleRatio, 1e-12);
      // Activations cross each of the S - 1 cuts once per microbatch; no
      // gradients come back.
      EXPECT_DOUBLE_EQ(t.commBytes, 10.0 * M * (S - 1));
      EXPECT_DOUBLE_EQ(f.commBytes, t.commBytes);
      for (int r = 0; r < S; ++r) {
        EXPECT_DOUBLE_EQ(f.peakActivationBytes[r], 100);
        EXPECT_DOUBLE_EQ(t.peakActivationBytes[r], 100);
      }
    }
}

TEST(SimulateTable, FormulasHaveTheirClosedForm) {
  EXPECT_DOUBLE_EQ(formula::bubbleGPipe(4, 8), 3.0 / 11);
  EXPECT_DOUBLE_EQ(formula::bubbleInterleaved(4, 8, 2), 3.0 / 19);
  // ZB-H1 with T_F = T_B = T_W = 1: bubble (S-1) next to 3M of work.
  EXPECT_DOUBLE_EQ(formula::bubbleZBH1(4, 8, 1, 1, 1), 3.0 / 27);
  EXPECT_DOUBLE_EQ(formula::bubbleChimera(4, 4), 2.0 / 10);
  EXPECT_EQ(formula::pipeDreamMaxDelay(4), 14);
  EXPECT_EQ(formula::pipeDreamMaxDelay(5), 22); // floor(25 - 2.5)
  EXPECT_DOUBLE_EQ(formula::pipeDreamMeanDelay(4), 7.5);
}

TEST(SimulateTable, InterleavedMatchesMegatronBubble) {
  // v = 2 chunks, F = B = W = 1 per chunk: bubble (S-1)/(v*M + S-1).
  for (int S : {2, 4})
    for (int M : {S, 2 * S, 4 * S}) {
      Schedule s = make("interleaved-1f1b", S, M);
      ASSERT_EQ(s.numStages, 2 * S);
      Metrics m = tableMetrics(s, table(2 * S, 1, 1, 1));
      EXPECT_NEAR(m.bubbleRatio, formula::bubbleInterleaved(S, M, 2), 1e-12)
          << "S=" << S << " M=" << M;
    }
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

TEST(SimulateTable, ActivationPeaks) {
  // One byte of activation per microbatch and stage: the peak counts
  // microbatches. 1F1B: min(S - s, M); GPipe: M.
  for (int S : {2, 4, 8})
    for (int M : {S, 2 * S, 3 * S + 1}) {
      CostTable c = table(S, 1, 1, 1, /*act=*/1, /*weights=*/10);
      Metrics one = tableMetrics(make("1f1b", S, M), c);
      Metrics gp = tableMetrics(make("gpipe", S, M), c);
      ASSERT_EQ(one.peakActivationBytes.size(), static_cast<size_t>(S));
      for (int st = 0; st < S; ++st) {
        EXPECT_EQ(one.peakActivationBytes[st], std::min(S - st, M))
            << "1f1b S=" << S << " M=" << M << " stage " << st;
        EXPECT_EQ(gp.peakActivationBytes[st], M)
            << "gpipe S=" << S << " M=" << M << " stage " << st;
        EXPECT_EQ(one.weightBytes[st], 10);
      }
      // The formula level says the same.
      Metrics f = evaluateFormula(make("1f1b", S, M), c, idealSystem());
      for (int st = 0; st < S; ++st)
        EXPECT_EQ(f.peakActivationBytes[st], std::min(S - st, M));
    }
  // GPipe with fewer microbatches than stages still holds all of them.
  Metrics gp = tableMetrics(make("gpipe", 4, 2), table(4, 1, 1, 1, 1));
  EXPECT_EQ(gp.peakActivationBytes[0], 2);
}

TEST(SimulateTable, ChimeraHoldsTwoWeightReplicas) {
  Schedule s = make("chimera", 4, 8);
  CostTable c = table(4, 1, 1, 1, 1, /*weights=*/100);
  Metrics m = tableMetrics(s, c);
  for (double w : m.weightBytes)
    EXPECT_EQ(w, 200);
  Metrics f = evaluateFormula(s, c, idealSystem());
  for (double w : f.weightBytes)
    EXPECT_EQ(w, 200);
}

//===----------------------------------------------------------------------===//
// Chimera basic unit
//===----------------------------------------------------------------------===//

/// Chimera's basic unit for D = 4 stages and N = D microbatches (Li &
/// Hoefler SC'21, Fig. 3 layout): microbatches 0, 1 go down (stage k on
/// rank k), 2, 3 go up (stage k on rank 3 - k); full backward only.
Schedule chimeraUnit4() {
  Schedule s;
  s.name = "chimera-unit";
  s.numRanks = 4;
  s.numStages = 4;
  s.numMicrobatches = 4;
  s.stageRank = {{0, 1, 2, 3}, {3, 2, 1, 0}};
  s.microbatchPipeline = {0, 0, 1, 1};
  auto F = [](int st, int mb) { return Action::compute(Phase::F, st, mb); };
  auto B = [](int st, int mb) { return Action::compute(Phase::BW, st, mb); };
  s.actions = {
      {F(0, 0), F(0, 1), F(3, 2), B(3, 2), F(3, 3), B(3, 3), B(0, 0), B(0, 1)},
      {F(1, 0), F(2, 2), F(1, 1), F(2, 3), B(2, 2), B(1, 0), B(2, 3), B(1, 1)},
      {F(1, 2), F(2, 0), F(1, 3), F(2, 1), B(2, 0), B(1, 2), B(2, 1), B(1, 3)},
      {F(0, 2), F(0, 3), F(3, 0), B(3, 0), F(3, 1), B(3, 1), B(0, 2), B(0, 3)},
  };
  return s;
}

TEST(SimulateTable, ChimeraBasicUnitTakes3SMinus2Slots) {
  // Convention (the one Chimera's bubble count uses): forward and backward
  // take one slot each. The basic unit (N = D) then has D - 2 idle slots
  // per worker: 2D + D - 2 = 3D - 2 slots, bubble (D-2)/(2N+D-2).
  Schedule s = chimeraUnit4();
  ASSERT_FALSE(static_cast<bool>(schedule::validate(s)));
  CostTable c = table(4, 1, 1, 0);
  Metrics m = tableMetrics(s, c);
  EXPECT_DOUBLE_EQ(m.makespanSec, 3 * 4 - 2);
  EXPECT_NEAR(m.bubbleRatio, formula::bubbleChimera(4, 4), 1e-12);
  // With B = 2F the same order takes longer than 3D - 2 forward slots.
  EXPECT_GT(tableMetrics(s, table(4, 1, 1, 1)).makespanSec, 10);
  // The formula level reproduces 3D - 2 for the generator's table too.
  Metrics f = evaluateFormula(make("chimera", 4, 4), c, idealSystem());
  EXPECT_DOUBLE_EQ(f.makespanSec, 10);
}

// The schedule library's Chimera basic unit matches the paper's 3S - 2
// (it used to take 12 slots at S = 4; see chimeraUnit4()).
TEST(SimulateTable, ChimeraGeneratorReachesBasicUnit) {
  for (int S : {4, 6, 8}) {
    Metrics m = tableMetrics(make("chimera", S, S), table(S, 1, 1, 0));
    EXPECT_DOUBLE_EQ(m.makespanSec, 3 * S - 2) << "S=" << S;
  }
}

//===----------------------------------------------------------------------===//
// Staleness
//===----------------------------------------------------------------------===//

TEST(Staleness, PipeDreamSteadyStateDelay) {
  for (int S : {2, 4, 8, 16}) {
    Schedule s = make("pipedream", S, 4 * S);
    ASSERT_TRUE(s.async);
    llvm::Expected<Staleness> st = computeStaleness(s);
    ASSERT_TRUE(static_cast<bool>(st)) << llvm::toString(st.takeError());
    EXPECT_TRUE(st->steadyState);
    EXPECT_EQ(st->maxDelay, S * S - S / 2) << "S=" << S;
    EXPECT_DOUBLE_EQ(st->meanDelay, (S * S - 1) / 2.0) << "S=" << S;
    // The table level carries it too.
    Metrics m = tableMetrics(s, table(S, 1, 1, 1));
    ASSERT_TRUE(m.staleness.has_value());
    EXPECT_EQ(m.staleness->maxDelay, S * S - S / 2);
  }
  // Odd S: floor(S^2 - S/2).
  llvm::Expected<Staleness> st = computeStaleness(make("pipedream", 3, 12));
  ASSERT_TRUE(static_cast<bool>(st));
  EXPECT_EQ(st->maxDelay, 7);
  EXPECT_DOUBLE_EQ(st->meanDelay, 4.0);
}

TEST(Staleness, SynchronousSchedulesHaveNone) {
  Schedule s = make("1f1b", 4, 8);
  llvm::Expected<Staleness> st = computeStaleness(s);
  EXPECT_FALSE(static_cast<bool>(st));
  llvm::consumeError(st.takeError());
  EXPECT_FALSE(tableMetrics(s, table(4, 1, 1, 1)).staleness.has_value());
}

TEST(Staleness, TwoBWDelaysLessAndKeepsTwoVersions) {
  Schedule pd = make("pipedream", 4, 32), bw = make("pipedream-2bw", 4, 32);
  llvm::Expected<Staleness> a = computeStaleness(pd), b = computeStaleness(bw);
  ASSERT_TRUE(a && b);
  EXPECT_LT(b->maxDelay, a->maxDelay);
  CostTable c = table(4, 1, 1, 1, 1, /*weights=*/1);
  Metrics mpd = tableMetrics(pd, c), mbw = tableMetrics(bw, c);
  // PipeDream stashes S - s versions; 2BW double-buffers (the last stage,
  // whose F and backward are adjacent, never has two versions live).
  for (int st = 0; st < 4; ++st) {
    EXPECT_EQ(mpd.weightBytes[st], 4 - st);
    EXPECT_EQ(mbw.weightBytes[st], st < 3 ? 2 : 1);
  }
}

//===----------------------------------------------------------------------===//
// Level 3
//===----------------------------------------------------------------------===//

TEST(SimulateEvents, ZeroCommunicationEqualsTable) {
  for (const schedule::ScheduleInfo &info : schedule::listSchedules()) {
    Schedule s = tryMake(info.name, 4, 8);
    if (s.numRanks == 0)
      continue;
    CostTable c = table(s.numStages, 1.0, 1.3, 0.7, 1, 1, 1e9);
    Timeline t2, t3;
    Metrics m2 = tableMetrics(s, c, &t2);
    Machine sys = idealSystem();
    sys.topology.ranksPerNode = 1; // every transfer crosses nodes, at zero cost
    Metrics m3 = eventMetrics(s, c, sys, &t3);
    SCOPED_TRACE(info.name.str());
    EXPECT_EQ(m2.makespanSec, m3.makespanSec);
    EXPECT_EQ(m2.bubblePerRank, m3.bubblePerRank);
    EXPECT_EQ(m2.commBytes, m3.commBytes);
    ASSERT_EQ(t2.compute.size(), t3.compute.size());
    for (size_t i = 0; i < t2.compute.size(); ++i) {
      EXPECT_EQ(t2.compute[i].startSec, t3.compute[i].startSec);
      EXPECT_EQ(t2.compute[i].endSec, t3.compute[i].endSec);
    }
  }
}

TEST(SimulateEvents, RanksSharingCoresRunAtCoresOverBusy) {
  // Forward-only, 4 stages, 4 microbatches, F = 1, free communication, all
  // ranks on one node with 2 cores. Processor sharing, step by step:
  //   [0, 1)     rank 0 alone                        (F0 of mb 0)
  //   [1, 2)     ranks 0, 1: 2 busy on 2 cores, full speed
  //   [2, 3.5)   ranks 0-2: speed 2/3, 1 unit takes 1.5
  //   [3.5, 5.5) ranks 0-3: speed 1/2
  //   [5.5, 7)   ranks 1-3: speed 2/3
  //   [7, 8)     ranks 2, 3; [8, 9) rank 3.
  Schedule s = make("forward-only", 4, 4);
  CostTable c = table(4, 1, 0, 0);
  Machine sys = idealSystem();
  EXPECT_FALSE(sys.topology.sharesCores(4));
  EXPECT_DOUBLE_EQ(eventMetrics(s, c, sys).makespanSec, 7);
  sys.topology.coresPerNode = 2;
  EXPECT_TRUE(sys.topology.sharesCores(4));
  EXPECT_FALSE(sys.topology.sharesCores(2));
  Timeline tl;
  Metrics m = eventMetrics(s, c, sys, &tl);
  EXPECT_DOUBLE_EQ(m.makespanSec, 9);
  EXPECT_NE(m.note.find("share 2 core(s)"), std::string::npos) << m.note;
  // Rank 2's actions: mb 0 in [2, 3.5), mb 1 in [3.5, 5.5), mb 2 in
  // [5.5, 7), mb 3 in [7, 8).
  EXPECT_EQ(computeSpans(tl, 2),
            (Spans{{2, 3.5}, {3.5, 5.5}, {5.5, 7}, {7, 8}}));
  // A rank is busy while its (slowed) actions run: rank 2 for 6 of 9 s.
  EXPECT_DOUBLE_EQ(m.bubblePerRank[2], 1 - 6.0 / 9);
  // One core: the 16 units of work run one at a time.
  sys.topology.coresPerNode = 1;
  EXPECT_DOUBLE_EQ(eventMetrics(s, c, sys).makespanSec, 16);
  // As many cores as ranks, or a fractional share: 16 units at 0.5 per s
  // whenever any rank is busy (at most 0.5 / 1 per rank) = 32 s.
  sys.topology.coresPerNode = 4;
  EXPECT_DOUBLE_EQ(eventMetrics(s, c, sys).makespanSec, 7);
  sys.topology.coresPerNode = 0.5;
  EXPECT_DOUBLE_EQ(eventMetrics(s, c, sys).makespanSec, 32);
  // Two nodes of 2 ranks with 1 core each: ranks 0, 1 share one core,
  // ranks 2, 3 the other.
  sys.topology.coresPerNode = 1;
  sys.topology.ranksPerNode = 2;
  Metrics two = eventMetrics(s, c, sys);
  Metrics oneNode = [&] {
    Machine all = sys;
    all.topology.ranksPerNode = 4;
    all.topology.coresPerNode = 2;
    return eventMetrics(s, c, all);
  }();
  EXPECT_GE(two.makespanSec, oneNode.makespanSec);
  // Node 0 (ranks 0, 1) does 8 units on 1 core: at least 8 + the 1 unit
  // of stage 2 and stage 3 after the last microbatch leaves rank 1 (at
  // least 2 more).
  EXPECT_GE(two.makespanSec, 10);
}

TEST(SimulateEvents, PinnedRanksShareOnlyTheirOwnCore) {
  // The setting above with the ranks pinned (pipeopt-run --pin-ranks):
  // equal loads, so LPT alternates: ranks 0, 2 on core 0, ranks 1, 3 on
  // core 1, each core shared only by its two ranks.
  //   [0, 1)  r0 mb0            [1, 2)  r0 mb1 | r1 mb0
  //   [2, 4)  r0 mb2 + r2 mb0 at 1/2 on core 0 | r1 mb1 in [2, 3), then
  //           r1 waits for mb 2
  //   [4, 6)  r0 mb3 + r2 mb1 | r1 mb2 + r3 mb0, all at 1/2
  //   [6, 7)  r2 mb2 alone | [6, 8) r1 mb3 + r3 mb1 at 1/2
  //   [8, 9)  r2 mb3 | r3 mb2;  [9, 10) r3 mb3.
  Schedule s = make("forward-only", 4, 4);
  CostTable c = table(4, 1, 0, 0);
  Machine sys = idealSystem();
  sys.topology.coresPerNode = 2;
  sys.topology.pinRanks = true;
  Timeline tl;
  Metrics m = eventMetrics(s, c, sys, &tl);
  EXPECT_DOUBLE_EQ(m.makespanSec, 10);
  EXPECT_NE(m.note.find("each rank pinned to one"), std::string::npos)
      << m.note;
  EXPECT_EQ(computeSpans(tl, 2), (Spans{{2, 4}, {4, 6}, {6, 7}, {8, 9}}));
  // A fractional calibration: 1.5 cores = 2 cores of 0.75 each, so every
  // time above stretches by 1 / 0.75.
  sys.topology.coresPerNode = 1.5;
  EXPECT_DOUBLE_EQ(eventMetrics(s, c, sys).makespanSec, 10 / 0.75);
  // One core: the same as unpinned (16 units one at a time).
  sys.topology.coresPerNode = 1;
  EXPECT_DOUBLE_EQ(eventMetrics(s, c, sys).makespanSec, 16);
}

TEST(SimulateEvents, CoreSharingWithoutContentionEqualsLongestPath) {
  // One microbatch through 4 stages: one rank computes at a time, so one
  // core per node slows nothing and the processor-sharing run gives the
  // longest-path times, transfers included.
  Schedule s = make("forward-only", 4, 1);
  CostTable c = table(4, 1.0, 0, 0, 0, 0, 1e6);
  Machine sys = twoNodes(0.125, 1e9, 1);
  Timeline plainTl, sharedTl;
  Metrics plain = eventMetrics(s, c, sys, &plainTl);
  sys.topology.coresPerNode = 1;
  ASSERT_TRUE(sys.topology.sharesCores(4));
  Metrics shared = eventMetrics(s, c, sys, &sharedTl);
  EXPECT_DOUBLE_EQ(plain.makespanSec, 4 + 3 * (0.125 + 1e-3));
  EXPECT_DOUBLE_EQ(shared.makespanSec, plain.makespanSec);
  ASSERT_EQ(plainTl.compute.size(), sharedTl.compute.size());
  for (size_t i = 0; i < plainTl.compute.size(); ++i)
    EXPECT_DOUBLE_EQ(sharedTl.compute[i].endSec, plainTl.compute[i].endSec);
  // The 1F1B pipeline on the same links: some moments have both ranks of
  // a node busy, so one core per node is slower, never faster.
  Schedule f = make("1f1b", 4, 8);
  CostTable fc = table(4, 1.0, 1.25, 0.75, 0, 0, 1e6);
  Machine two = twoNodes(0.125, 1e9, 1);
  double full = eventMetrics(f, fc, two).makespanSec;
  two.topology.coresPerNode = 1;
  EXPECT_GT(eventMetrics(f, fc, two).makespanSec, full);
}

TEST(SimulateEvents, SenderOverheadKeepsTheSenderBusy) {
  // Forward-only, 2 ranks on one node, 2 microbatches, F = 1, latency
  // 0.25, unlimited bandwidth, send call 0.5 (LogP's o).
  Schedule s = make("forward-only", 2, 2);
  CostTable c = table(2, 1, 0, 0, 0, 0, 1e6);
  Machine sys = oneNodeTwoRanks(0.25);
  // Without it: rank 1 runs [1.25, 2.25) and [2.25, 3.25).
  EXPECT_DOUBLE_EQ(eventMetrics(s, c, sys).makespanSec, 3.25);
  sys.topology.intraNode.senderOverheadSeconds = 0.5;
  // Rank 0: F [0, 1), send [1, 1.5), F [1.5, 2.5), send [2.5, 3). The
  // messages leave when their calls start (arrive at 1.25 and 2.75): rank
  // 1 runs [1.25, 2.25) and [2.75, 3.75).
  Timeline tl;
  Metrics m = eventMetrics(s, c, sys, &tl);
  EXPECT_DOUBLE_EQ(m.makespanSec, 3.75);
  EXPECT_NE(m.note.find("per-message overhead"), std::string::npos) << m.note;
  EXPECT_EQ(computeSpans(tl, 0), (Spans{{0, 1}, {1.5, 2.5}}));
  EXPECT_EQ(transferSpans(tl), (Spans{{1, 1.25}, {2.5, 2.75}}));
  // Rank 0 is busy in its send calls: 3 of 3.75 s.
  EXPECT_DOUBLE_EQ(m.bubblePerRank[0], 1 - 3 / 3.75);
  // An inter-node overhead does not apply to an intra-node message.
  sys.topology.intraNode.senderOverheadSeconds = 0;
  sys.topology.interNode.senderOverheadSeconds = 0.5;
  EXPECT_DOUBLE_EQ(eventMetrics(s, c, sys).makespanSec, 3.25);
  // One core for both ranks: the send calls are compute that shares it.
  // The 5 units of work (4 F, 2 calls of 0.5) keep the core busy from 0
  // (the first message is in flight while its call runs), so 5 s.
  sys.topology.interNode.senderOverheadSeconds = 0;
  sys.topology.intraNode.senderOverheadSeconds = 0.5;
  sys.topology.coresPerNode = 1;
  EXPECT_DOUBLE_EQ(eventMetrics(s, c, sys).makespanSec, 5);
}

TEST(SimulateEvents, MessagesToAnIdleCoreWaitForItsWakeUp) {
  // Forward-only, 2 ranks with a core each, 3 microbatches, stage 0's F = 1,
  // stage 1's F = 1.5; latency 0.25, but 0.5 to a receiver whose core is
  // idle (Link::idleReceiverLatencySeconds).
  Schedule s = make("forward-only", 2, 3);
  CostTable c = table(2, 1, 0, 0, 0, 0, 1e6);
  c.stages[1].forwardSec = 1.5;
  Machine sys = oneNodeTwoRanks(0.25);
  sys.topology.intraNode.idleReceiverLatencySeconds = 0.5;
  // mb0 leaves at 1 while rank 1 waits: arrives 1.5, F [1.5, 3). mb1 leaves
  // at 2 and mb2 at 3 while rank 1 computes: 0.25 each. Rank 1: [3, 4.5),
  // [4.5, 6).
  Timeline tl;
  Metrics m = eventMetrics(s, c, sys, &tl);
  EXPECT_DOUBLE_EQ(m.makespanSec, 6);
  EXPECT_NE(m.note.find("a message to an idle core waits for its wake-up"),
            std::string::npos)
      << m.note;
  EXPECT_EQ(transferSpans(tl), (Spans{{1, 1.5}, {2, 2.25}, {3, 3.25}}));
  // The send call too: 0.125 to the idle core, nothing to the busy one (so
  // only mb0's call delays rank 0).
  sys.topology.intraNode.idleReceiverSenderOverheadSeconds = 0.125;
  tl = Timeline();
  m = eventMetrics(s, c, sys, &tl);
  EXPECT_DOUBLE_EQ(m.makespanSec, 6);
  EXPECT_EQ(computeSpans(tl, 0),
            (Spans{{0, 1}, {1.125, 2.125}, {2.125, 3.125}}));
  EXPECT_EQ(transferSpans(tl),
            (Spans{{1, 1.5}, {2.125, 2.375}, {3.125, 3.375}}));
  // Both ranks on one pinned core: a receiver on its sender's core never
  // finds it idle while the sender runs on (mb0 and mb1 at 0.25).
  sys.topology.intraNode.idleReceiverSenderOverheadSeconds = 0;
  sys.topology.coresPerNode = 1;
  sys.topology.pinRanks = true;
  tl = Timeline();
  m = eventMetrics(s, c, sys, &tl);
  ASSERT_EQ(tl.transfers.size(), 3u);
  for (const TimedTransfer &x : tl.transfers)
    EXPECT_DOUBLE_EQ(x.endSec - x.startSec, 0.25);
  // Not even a message sent when the sender has nothing left to run (one
  // microbatch: rank 0 [0, 1), the message [1, 1.25), rank 1 [1.25, 2.75)).
  EXPECT_DOUBLE_EQ(eventMetrics(make("forward-only", 2, 1), c, sys).makespanSec,
                   2.75);
  // Without the idle fields nothing changes: the longest-path times.
  sys = oneNodeTwoRanks(0.25);
  EXPECT_DOUBLE_EQ(eventMetrics(s, c, sys).makespanSec, 1.25 + 3 * 1.5);
}

TEST(SimulateEvents, SendCallsSeeTheComputeStartingWithThem) {
  // ZB-H1, 2 ranks with a core each, 2 microbatches, F = B = W = 1,
  // latency 2, send calls free to a busy core and 2 to an idle one.
  // Rank 1 starts B mb0 at 4, the moment rank 0 sends mb1's activation:
  // that call finds rank 1's core busy (free), not idle. By hand:
  //   r0 F0 [0, 1), call to idle r1 [1, 3) (message [1, 3)), F1 [3, 4);
  //   r1 F0 [3, 4), B0 [4, 5), call to idle r0 [5, 7) (message [5, 7));
  //   r0's call for F1 at 4: free (message [4, 6));
  //   r0 B0 [7, 8), W0 [8, 9); r1 F1 [7, 8), B1 [8, 9), call to idle r0
  //   [9, 11); r0 B1 [11, 12), W1 [12, 13); r1 W0 [11, 12), W1 [12, 13).
  Schedule s = make("zb-h1", 2, 2);
  CostTable c = table(2, 1, 1, 1, 0, 0, 1e6);
  Machine sys = oneNodeTwoRanks(2.0);
  sys.topology.intraNode.idleReceiverSenderOverheadSeconds = 2;
  Timeline tl;
  Metrics m = eventMetrics(s, c, sys, &tl);
  EXPECT_DOUBLE_EQ(m.makespanSec, 13);
  EXPECT_EQ(computeSpans(tl, 0),
            (Spans{{0, 1}, {3, 4}, {7, 8}, {8, 9}, {11, 12}, {12, 13}}));
  EXPECT_EQ(transferSpans(tl), (Spans{{1, 3}, {4, 6}, {5, 7}, {9, 11}}));
}

TEST(SimulateEvents, InputCopiesAtEachStagesFirstAction) {
  // Forward-only, 2 ranks, 2 microbatches, F = 1, 1 GB of weights per
  // stage copied at 4 GB/s (read + written): 0.5 s at the first action of
  // each stage on its rank. Rank 0: [0, 1.5), [1.5, 2.5); rank 1:
  // [1.5, 3), [3, 4).
  Schedule s = make("forward-only", 2, 2);
  CostTable c = table(2, 1, 0, 0, 0, 1e9);
  Machine sys = idealSystem();
  EXPECT_DOUBLE_EQ(eventMetrics(s, c, sys).makespanSec, 3);
  sys.device.inputCopyBytesPerSecond = 4e9;
  Timeline tl;
  EXPECT_DOUBLE_EQ(eventMetrics(s, c, sys, &tl).makespanSec, 4);
  llvm::Expected<Metrics> tableLevel = simulateTable(s, c, sys);
  ASSERT_TRUE(static_cast<bool>(tableLevel))
      << llvm::toString(tableLevel.takeError());
  EXPECT_DOUBLE_EQ(tableLevel->makespanSec, 4);
  std::vector<std::pair<double, double>> rank1;
  for (const TimedCompute &tc : tl.compute)
    if (tc.rank == 1)
      rank1.push_back({tc.startSec, tc.endSec});
  std::vector<std::pair<double, double>> want = {{1.5, 3}, {3, 4}};
  EXPECT_EQ(rank1, want);
  // A training table's weights count gradients and optimizer state too
  // (4x here); the runtime copies the parameters alone (gradientBytes).
  CostTable train = c;
  for (StageCost &sc : train.stages) {
    sc.gradientBytes = sc.weightBytes;
    sc.weightBytes *= 4;
  }
  EXPECT_DOUBLE_EQ(eventMetrics(s, train, sys).makespanSec, 4);
  // Interleaved: each rank holds 2 stages and copies both, once each: the
  // ranks' busy time grows by 4 stages x 0.5 s.
  Schedule il = make("interleaved-1f1b", 2, 4);
  ASSERT_EQ(il.numStages, 4);
  CostTable ic = table(4, 1, 1, 1, 0, 1e9);
  auto busy = [&](const Machine &m) {
    Metrics r = eventMetrics(il, ic, m);
    double sum = 0;
    for (double b : r.bubblePerRank)
      sum += (1 - b) * r.makespanSec;
    return sum;
  };
  Machine plain = idealSystem();
  EXPECT_NEAR(busy(sys) - busy(plain), 4 * 0.5, 1e-9);
}

TEST(SimulateEvents, CommunicationCostsTime) {
  // 1F1B, S = 4, M = 8: a transfer of 1 s latency on each of the 2S - 2
  // critical hops of the first and last microbatch adds time.
  Schedule s = make("1f1b", 4, 8);
  CostTable c = table(4, 1, 1, 1);
  double ideal = tableMetrics(s, c).makespanSec;
  Machine sys = twoNodes(0.25, 0, 1);
  Metrics m = eventMetrics(s, c, sys);
  EXPECT_GT(m.makespanSec, ideal);
  EXPECT_GT(m.bubbleRatio, tableMetrics(s, c).bubbleRatio);
  // Fill and drain both cross the 3 hops: at least 6 latencies more.
  EXPECT_GE(m.makespanSec, ideal + 6 * 0.25 - 1e-12);
}

TEST(SimulateEvents, LatencyNeverShortensMakespan) {
  for (const schedule::ScheduleInfo &info : schedule::listSchedules()) {
    for (int M : {4, 8}) {
      Schedule s = tryMake(info.name, 4, M);
      if (s.numRanks == 0)
        continue;
      CostTable c = table(s.numStages, 1.0, 1.1, 0.9, 1, 1, 2e9);
      for (int nics : {1, 2})
        for (bool overlap : {true, false}) {
          double prev = -1;
          for (double lat :
               {0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 1.3, 2.0, 3.0}) {
            Machine sys = twoNodes(lat, 10e9, nics);
            sys.simulation.overlap = overlap;
            double ms = eventMetrics(s, c, sys).makespanSec;
            EXPECT_GE(ms, prev) << info.name.str() << " M=" << M
                                << " nics=" << nics << " latency=" << lat;
            prev = ms;
          }
        }
    }
  }
}

/// Two independent 2-stage pipelines side by side: rank 0 -> rank 2 and
/// rank 1 -> rank 3 (ranks 0, 1 on node 0; 2, 3 on node 1).
Schedule twoCrossingPipelines() {
  Schedule s;
  s.name = "two-pipes";
  s.numRanks = 4;
  s.numStages = 2;
  s.numMicrobatches = 2;
  s.stageRank = {{0, 2}, {1, 3}};
  s.microbatchPipeline = {0, 1};
  auto F = [](int st, int mb) { return Action::compute(Phase::F, st, mb); };
  auto B = [](int st, int mb) { return Action::compute(Phase::BW, st, mb); };
  s.actions = {{F(0, 0), B(0, 0)},
               {F(0, 1), B(0, 1)},
               {F(1, 0), B(1, 0)},
               {F(1, 1), B(1, 1)}};
  return s;
}

TEST(SimulateEvents, ContentionOnASharedNic) {
  Schedule s = twoCrossingPipelines();
  // F = 1, BW = 1; 1 GB boundary over 1 GB/s + 0.5 s latency = 1.5 s.
  CostTable c = table(2, 1, 0.5, 0.5, 0, 0, 1e9);
  Timeline shared, separate;
  Metrics ms = eventMetrics(s, c, twoNodes(0.5, 1e9, 1), &shared);
  Metrics mp = eventMetrics(s, c, twoNodes(0.5, 1e9, 2), &separate);
  // Separate NICs: F 1 + act 1.5 + F 1 + BW 1 + grad 1.5 + BW 1 = 7.
  EXPECT_DOUBLE_EQ(mp.makespanSec, 7.0);
  // One NIC per node: the second activation waits for the first (+1.5),
  // and the gradients serialize on the way back.
  EXPECT_GT(ms.makespanSec, mp.makespanSec);
  EXPECT_DOUBLE_EQ(ms.makespanSec, 8.5);
  ASSERT_EQ(shared.transfers.size(), 4u);
  double lastActivation = 0;
  for (const TimedTransfer &x : shared.transfers)
    if (!x.backward)
      lastActivation = std::max(lastActivation, x.endSec);
  EXPECT_DOUBLE_EQ(lastActivation, 1 + 2 * 1.5);
  // Both systems move the same bytes.
  EXPECT_EQ(ms.commBytes, 4e9);
  EXPECT_EQ(mp.commBytes, 4e9);
}

TEST(SimulateEvents, NoOverlapMakesComputeWaitForSends) {
  Schedule s = make("1f1b", 4, 8);
  CostTable c = table(4, 1, 1, 1, 0, 0, 1e9);
  Machine on = twoNodes(0.1, 2e9, 1), off = on;
  off.simulation.overlap = false;
  double a = eventMetrics(s, c, on).makespanSec;
  double b = eventMetrics(s, c, off).makespanSec;
  EXPECT_GT(b, a);
}

TEST(SimulateEvents, SlowerNetworkPresetIsNeverFaster) {
  CostTable c = CostTable::uniform(8, 0.01, 1e9, 1e9, 64e6);
  std::vector<Machine> grid = presetGrid();
  ASSERT_EQ(grid.size(), 9u);
  for (const char *name :
       {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "chimera", "zb-v"}) {
    Schedule s = make(name, 8, 16);
    for (int comp = 0; comp < 3; ++comp) {
      double slow = eventMetrics(s, c, grid[comp * 3 + 0]).makespanSec;
      double med = eventMetrics(s, c, grid[comp * 3 + 1]).makespanSec;
      double fast = eventMetrics(s, c, grid[comp * 3 + 2]).makespanSec;
      EXPECT_GE(slow, med) << name;
      EXPECT_GE(med, fast) << name;
      EXPECT_GE(fast, tableMetrics(s, c).makespanSec /
                              grid[comp * 3].simulation.computeSpeed -
                          1e-12)
          << name;
    }
  }
}

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

TEST(CostModel, ParsesAndRoundTrips) {
  llvm::Expected<CostTable> t = parseCostTable(R"({"name": "x", "stages": [
      {"forward_s": 1, "backward_s": 2, "activation_bytes": 10,
       "weight_bytes": 5, "boundary_bytes": 3},
      {"forward_s": 2, "backward_input_s": 1.5, "backward_weight_s": 0.5}]})");
  ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  ASSERT_EQ(t->size(), 2);
  EXPECT_EQ(t->stages[0].backwardInputSec, 1);
  EXPECT_EQ(t->stages[0].backwardWeightSec, 1);
  EXPECT_EQ(t->stages[1].backwardSec(), 2);
  EXPECT_EQ(t->stages[0].boundaryBytes, 3);
  llvm::Expected<CostTable> again = parseCostTable(costTableToJSON(*t));
  ASSERT_TRUE(static_cast<bool>(again));
  EXPECT_EQ(again->stages[1].forwardSec, 2);
  EXPECT_EQ(again->name, "x");
}

TEST(CostModel, RejectsBadInput) {
  for (
      const char *bad :
      {"", "{}", R"({"stages": []})", R"({"stages": [{"backward_s": 1}]})",
       R"({"stages": [{"forward_s": -1}]})",
       R"({"stages": [{"forward_s": 1, "backward_s": 1, "backward_input_s": 1}]})",
       R"({"stages": [{"forward_s": "1"}]})"}) {
    llvm::Expected<CostTable> t = parseCostTable(bad);
    EXPECT_FALSE(static_cast<bool>(t)) << bad;
    llvm::consumeError(t.takeError());
  } // A key given twice (llvm::json::parse would keep one silently).
  llvm::Expected<CostTable> dup =
      parseCostTable("{\"stages\": [{\"forward_s\": 1,\n \"forward_s\": 2}]}");
  ASSERT_FALSE(static_cast<bool>(dup));
  EXPECT_EQ(llvm::toString(dup.takeError()),
            "cost table: invalid JSON: line 2: duplicate key 'forward_s'");
  llvm::Expected<std::vector<Machine>> sys =
      parseSystems(R"({"name": "a", "name": "b"})");
  ASSERT_FALSE(static_cast<bool>(sys));
  EXPECT_NE(llvm::toString(sys.takeError()).find("duplicate key 'name'"),
            std::string::npos);
}

TEST(CostModel, ResampleGroupsLayers) {
  CostTable layers = CostTable::uniform(32, 0.001, 10, 100, 7);
  layers.stages[31].forwardSec = 0.005;
  layers.stages[7].boundaryBytes = 99;
  CostTable four = layers.resample(4);
  ASSERT_EQ(four.size(), 4);
  EXPECT_DOUBLE_EQ(four.stages[0].forwardSec, 0.008);
  EXPECT_DOUBLE_EQ(four.stages[3].forwardSec, 0.007 + 0.005);
  EXPECT_DOUBLE_EQ(four.stages[1].weightBytes, 800);
  EXPECT_EQ(four.stages[0].boundaryBytes, 99); // cut after layer 7
  // Fractional: 3 entries onto 2 stages.
  CostTable three = CostTable::uniform(3, 1.0);
  CostTable two = three.resample(2);
  EXPECT_DOUBLE_EQ(two.stages[0].forwardSec, 1.5);
  EXPECT_DOUBLE_EQ(two.stages[1].forwardSec, 1.5);
}

TEST(CostModel, PresetsAndSystemJSON) {
  std::vector<Machine> grid = presetGrid();
  ASSERT_EQ(grid.size(), 9u);
  EXPECT_EQ(grid[2].name, "compute-slow/net-fast");
  llvm::Expected<Machine> p = getPreset("compute-fast/net-slow");
  ASSERT_TRUE(static_cast<bool>(p));
  EXPECT_EQ(p->simulation.computeSpeed, 2.0);
  EXPECT_EQ(p->topology.interNode.bytesPerSecond, 12.5e9);
  llvm::Expected<Machine> bad = getPreset("nope");
  EXPECT_FALSE(static_cast<bool>(bad));
  llvm::consumeError(bad.takeError());

  llvm::Expected<std::vector<Machine>> s = parseSystems(R"({"systems": [
      {"name": "a", "compute_speed": 1.5, "gpus_per_node": 4,
       "nics_per_node": 2, "overlap": false,
       "intra_node": {"latency_s": 1e-6, "bandwidth_Bps": 1e11},
       "inter_node": {"latency_s": 1e-5, "bandwidth_Bps": 1e10}},
      {"name": "b", "preset": "compute-slow/net-slow", "compute_speed": 0.25}]})");
  ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].topology.ranksPerNode, 4);
  EXPECT_FALSE((*s)[0].simulation.overlap);
  EXPECT_EQ((*s)[0].topology.interNode.latencySeconds, 1e-5);
  EXPECT_EQ((*s)[1].simulation.computeSpeed, 0.25);
  EXPECT_EQ((*s)[1].topology.interNode.bytesPerSecond, 12.5e9);
  EXPECT_EQ((*s)[0].topology.nicOf(5), 1 * 2 + 1);

  // cores_per_node: absent = 0 (a core per rank); fractional allowed.
  EXPECT_EQ((*s)[0].topology.coresPerNode, 0);
  llvm::Expected<std::vector<Machine>> cores =
      parseSystems(R"({"name": "c", "cores_per_node": 1.5})");
  ASSERT_TRUE(static_cast<bool>(cores)) << llvm::toString(cores.takeError());
  EXPECT_EQ(cores->front().topology.coresPerNode, 1.5);
  for (const char *badCores : {R"({"name": "c", "cores_per_node": 0.001})",
                               R"({"name": "c", "cores_per_node": -1})",
                               R"({"name": "c", "cores_per_node": "2"})"}) {
    llvm::Expected<std::vector<Machine>> t = parseSystems(badCores);
    ASSERT_FALSE(static_cast<bool>(t)) << badCores;
    std::string msg = llvm::toString(t.takeError());
    EXPECT_NE(msg.find("cores_per_node"), std::string::npos) << msg;
  }

  // A misspelled key must not silently fall back to the default.
  for (const char *typo :
       {R"({"name": "x", "inter_node": {"bandwidth_gbps": 0}})",
        R"({"name": "x", "compute": 2})"}) {
    llvm::Expected<std::vector<Machine>> t = parseSystems(typo);
    ASSERT_FALSE(static_cast<bool>(t)) << typo;
    std::string msg = llvm::toString(t.takeError());
    EXPECT_NE(msg.find("unknown key"), std::string::npos) << msg;
  }
}

TEST(Formula, NotAvailableWithoutClosedForm) {
  Schedule s = make("zb-v", 4, 8);
  Metrics f = evaluateFormula(s, table(s.numStages, 1, 1, 1), idealSystem());
  EXPECT_FALSE(f.available);
  EXPECT_NE(f.note.find("n/a"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// Trace and SVG
//===----------------------------------------------------------------------===//

TEST(Trace, ChromeTraceHasTracksAndFlows) {
  Schedule s = make("1f1b", 4, 4);
  Timeline tl;
  eventMetrics(s, table(4, 0.01, 0.01, 0.01, 0, 0, 1e8),
               twoNodes(1e-4, 1e10, 1), &tl);
  ASSERT_EQ(tl.transfers.size(), 2u * 3 * 4);
  std::string text = chromeTraceJSON(tl, "t");
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(text);
  ASSERT_TRUE(static_cast<bool>(v)) << llvm::toString(v.takeError());
  const llvm::json::Array *events = v->getAsObject()->getArray("traceEvents");
  ASSERT_NE(events, nullptr);
  int flowsStart = 0, flowsEnd = 0, computeSlices = 0;
  for (const llvm::json::Value &e : *events) {
    llvm::StringRef ph = *e.getAsObject()->getString("ph");
    if (ph == "s")
      ++flowsStart;
    if (ph == "f")
      ++flowsEnd;
    if (ph == "X" && *e.getAsObject()->getInteger("tid") == 0)
      ++computeSlices;
  }
  EXPECT_EQ(flowsStart, 24);
  EXPECT_EQ(flowsEnd, 24);
  EXPECT_EQ(computeSlices, 4 * 4 * 2);
}

TEST(Trace, SvgGantt) {
  Schedule s = make("1f1b", 2, 3);
  Timeline tl;
  tableMetrics(s, table(2, 1, 1, 1), &tl);
  std::string svg = renderSvgGantt(tl, {"1F1B <test>", 600, 24, true});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("1F1B &lt;test&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">2</text>"), std::string::npos); // microbatch 2
  EXPECT_NE(svg.find("rank 1"), std::string::npos);
  EXPECT_NE(svg.find("#4e79a7"), std::string::npos); // F color
}

} // namespace
