//===- CollectivesTest.cpp - Gradient all-reduces and optimizer steps -----===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// Exact values of the after-backward actions (Collectives.h): ring
// all-reduce times, Chimera's replica all-reduce, tied weights, data
// parallelism and the optimizer step, at the table and event levels.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Simulate/Collectives.h"
#include "pipeopt/Simulate/CostTable.h"
#include "pipeopt/Simulate/Simulator.h"
#include "pipeopt/Simulate/Trace.h"

#include "llvm/Support/JSON.h"

#include "gtest/gtest.h"

using namespace pipeopt;
using namespace pipeopt::sim;
using namespace pipeopt::machine;
using schedule::Schedule;

namespace {

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

/// F = B = W = 1 s per stage (a full backward BW = 2 s), `weights` bytes
/// per stage, no activations, 0-byte boundaries.
CostTable unitTable(int n, double weights) {
  return CostTable::uniform(n, 1.0, 0, weights, 0);
}

/// One link class {latency, bandwidth} everywhere, `perNode` ranks a node.
Machine oneLink(double latency, double bandwidth, int perNode = 64,
                int nics = 1) {
  Machine sys;
  sys.name = "test";
  sys.topology.ranksPerNode = perNode;
  sys.topology.nicsPerNode = nics;
  sys.topology.intraNode = {latency, bandwidth};
  sys.topology.interNode = {latency, bandwidth};
  return sys;
}

Metrics table(const Schedule &s, const CostTable &c, const Machine &sys,
              Timeline *tl = nullptr) {
  llvm::Expected<Metrics> m = simulateTable(s, c, sys, tl);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return Metrics();
  }
  return std::move(*m);
}

Metrics events(const Schedule &s, const CostTable &c, const Machine &sys,
               Timeline *tl = nullptr) {
  llvm::Expected<Metrics> m = simulateEvents(s, c, sys, tl);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return Metrics();
  }
  return std::move(*m);
}

//===----------------------------------------------------------------------===//
// Ring all-reduce
//===----------------------------------------------------------------------===//

TEST(RingAllReduce, OneLinkClass) {
  // 2 (p-1) alpha + 2 (p-1)/p n / beta, alpha = 1 ms, beta = 1 GB/s,
  // n = 4 GB.
  Link link{1e-3, 1e9};
  // p = 2: one exchange of n/2 each way per phase: 2 alpha + n / beta.
  EXPECT_DOUBLE_EQ(ringAllReduceSec(4e9, 2, link), 2e-3 + 4.0);
  // p = 4: 6 alpha + 1.5 n / beta.
  EXPECT_DOUBLE_EQ(ringAllReduceSec(4e9, 4, link), 6e-3 + 6.0);
  EXPECT_EQ(ringAllReduceSec(4e9, 1, link), 0);
  EXPECT_DOUBLE_EQ(ringAllReduceBytesPerRank(4e9, 4), 6e9);
  // The topology form on one node: the same.
  Machine sys = oneLink(1e-3, 1e9);
  EXPECT_DOUBLE_EQ(ringAllReduceSec(4e9, {0, 1, 2, 3}, sys), 6e-3 + 6.0);
  EXPECT_DOUBLE_EQ(ringAllReduceSec(4e9, {0, 1}, sys), 2e-3 + 4.0);
}

TEST(RingAllReduce, AcrossNodesTheSlowestLinkSetsTheStep) {
  Machine sys = oneLink(0, 0, /*perNode=*/2);
  sys.topology.intraNode = {1e-6, 1e11};
  sys.topology.interNode = {1e-3, 1e9};
  // Ring 0-1 | 2-3: links 0->1 and 2->3 intra, 1->2 and 3->0 inter. Each of
  // the 6 steps moves n/4 = 1 GB and lasts as long as the inter-node link:
  // 1e-3 + 1 s.
  EXPECT_DOUBLE_EQ(ringAllReduceSec(4e9, {0, 1, 2, 3}, sys), 6 * (1e-3 + 1.0));
  // p = 2 inside a node: 2 (1e-6 + 2 GB / 100 GB/s).
  EXPECT_DOUBLE_EQ(ringAllReduceSec(4e9, {0, 1}, sys), 2 * (1e-6 + 0.02));
  // p = 2 across nodes: 2 alpha + n / beta of the inter-node link.
  EXPECT_DOUBLE_EQ(ringAllReduceSec(4e9, {1, 2}, sys), 2e-3 + 4.0);
}

//===----------------------------------------------------------------------===//
// Chimera
//===----------------------------------------------------------------------===//

TEST(Reductions, ChimeraReplicasAllReduceAfterTheirLastBackward) {
  // Chimera S = 4, M = 4, F = 1, BW = 2: stage k runs on ranks k and 3 - k.
  // Without weights the table takes 16 s; the last BW of stage 0 (rank 0:
  // BW0.1, rank 3: BW0.3) ends at 16 on both replicas. Weight gradients of
  // 2 bytes over alpha = 0.5 s, 1 B/s: p = 2, 2 * 0.5 + 2 / 1 = 3 s, so
  // the iteration ends at 16 + 3 = 19. Stage 3 (ranks 0 and 3) is ready at
  // 9 (BW3.1, BW3.3 end), stage 2 (ranks 1, 2) at 12, stage 1 at 14.
  Schedule s = make("chimera", 4, 4);
  Machine sys = oneLink(0.5, 1.0);
  EXPECT_DOUBLE_EQ(table(s, unitTable(4, 0), sys).makespanSec, 16);
  Timeline tl;
  Metrics m = table(s, unitTable(4, 2), sys, &tl);
  EXPECT_DOUBLE_EQ(m.makespanSec, 19);
  EXPECT_DOUBLE_EQ(m.postBackwardSec, 3);
  ASSERT_EQ(tl.collectives.size(), 4u);
  const double ready[] = {16, 14, 12, 9};
  for (int st = 0; st < 4; ++st) {
    const TimedCollective &c = tl.collectives[st];
    EXPECT_FALSE(c.tied);
    EXPECT_EQ(c.stages, std::vector<int>{st});
    std::vector<int> ranks{std::min(st, 3 - st), std::max(st, 3 - st)};
    EXPECT_EQ(c.ranks, ranks);
    EXPECT_EQ(c.ringSize, 2);
    EXPECT_DOUBLE_EQ(c.readySec, ready[st]);
    EXPECT_DOUBLE_EQ(c.endSec, ready[st] + 3);
  }
  // Two stages per rank, 3 s each; each of the 2 ranks of each of the 4
  // all-reduces sends 2 (p-1)/p * 2 = 2 bytes.
  for (double v : m.allReduceSecPerRank)
    EXPECT_DOUBLE_EQ(v, 6);
  EXPECT_DOUBLE_EQ(m.allReduceSec, 6);
  EXPECT_DOUBLE_EQ(m.collectiveBytes, 4 * 2 * 2.0);
  // Idle during the all-reduce: bubble of rank 0 = 1 - 12 / 19.
  EXPECT_DOUBLE_EQ(m.bubblePerRank[0], 1 - 12.0 / 19);
}

TEST(Reductions, ChimeraAllReducesContendAtTheEventLevel) {
  // Zero latency: point-to-point transfers of 0 bytes are free, so the
  // event level runs the table's compute times. 8-byte gradients over
  // 1 B/s: p = 2, 8 s each. Table (no contention): stage 3 9 -> 17, stage 0
  // 16 -> 24, stage 2 12 -> 20, stage 1 14 -> 22. Event: stages 0 and 3
  // share the send / recv engines of ranks 0 and 3, so stage 0 waits for
  // stage 3: 17 -> 25; stages 1 and 2 share ranks 1 and 2: 20 -> 28.
  Schedule s = make("chimera", 4, 4);
  Machine sys = oneLink(0, 1.0);
  CostTable c = unitTable(4, 8);
  EXPECT_DOUBLE_EQ(table(s, c, sys).makespanSec, 24);
  Timeline tl;
  Metrics m = events(s, c, sys, &tl);
  EXPECT_DOUBLE_EQ(m.makespanSec, 28);
  ASSERT_EQ(tl.collectives.size(), 4u);
  EXPECT_DOUBLE_EQ(tl.collectives[0].readySec, 16);
  EXPECT_DOUBLE_EQ(tl.collectives[0].startSec, 17);
  EXPECT_DOUBLE_EQ(tl.collectives[3].startSec, 9);
  // Ranks 1, 2: stage 2 12 -> 20, stage 1 ready 14 waits until 20 -> 28.
  EXPECT_DOUBLE_EQ(tl.collectives[1].startSec, 20);
  EXPECT_DOUBLE_EQ(tl.collectives[1].endSec, 28);
  EXPECT_DOUBLE_EQ(tl.collectives[0].endSec, 25);
}

//===----------------------------------------------------------------------===//
// Tied weights
//===----------------------------------------------------------------------===//

TEST(Reductions, TiedWeightsOfFirstAndLastStage) {
  // 1F1B S = 4, M = 4, F = 1, BW = 2: (M + S - 1) * 3 = 21 s, rank 0's
  // last BW ends at 21 and rank 3's at 15. The tied parameter's gradient
  // (2 bytes) is all-reduced between ranks 0 and 3 once both are done:
  // 21 + 2 * 0.5 + 2 / 1 = 24.
  Schedule s = make("1f1b", 4, 4);
  Machine sys = oneLink(0.5, 1.0);
  CostTable c = unitTable(4, 0);
  EXPECT_DOUBLE_EQ(table(s, c, sys).makespanSec, 21);
  c.tied.push_back({{0, 3}, 2});
  Timeline tl;
  Metrics m = table(s, c, sys, &tl);
  EXPECT_DOUBLE_EQ(m.makespanSec, 24);
  ASSERT_EQ(tl.collectives.size(), 1u);
  EXPECT_TRUE(tl.collectives[0].tied);
  EXPECT_EQ(tl.collectives[0].ranks, (std::vector<int>{0, 3}));
  EXPECT_DOUBLE_EQ(tl.collectives[0].readySec, 21);
  EXPECT_DOUBLE_EQ(m.allReduceSecPerRank[0], 3);
  EXPECT_DOUBLE_EQ(m.allReduceSecPerRank[1], 0);
  EXPECT_DOUBLE_EQ(m.allReduceSecPerRank[3], 3);
  // The event level with free point-to-point transfers: the same.
  EXPECT_DOUBLE_EQ(events(s, c, oneLink(0, 1.0)).makespanSec, 21 + 2);
  // Both stages on one rank: summed locally, no all-reduce.
  Schedule one = make("1f1b", 1, 4);
  CostTable c1 = unitTable(1, 0);
  c1.tied.push_back({{0, 0}, 2});
  EXPECT_DOUBLE_EQ(table(one, c1, sys).postBackwardSec, 0);
}

TEST(Reductions, TiedGroupsResampleToStages) {
  CostTable layers = CostTable::uniform(8, 1.0);
  layers.tied.push_back({{0, 7}, 5});
  CostTable four = layers.resample(4);
  ASSERT_EQ(four.tied.size(), 1u);
  EXPECT_EQ(four.tied[0].stages, (std::vector<int>{0, 3}));
  EXPECT_EQ(four.tied[0].bytes, 5);
  // A tied stage out of range of the schedule is an error.
  CostTable bad = unitTable(4, 0);
  bad.tied.push_back({{0, 9}, 1});
  llvm::Expected<Metrics> m =
      simulateTable(make("1f1b", 4, 4), bad, oneLink(0, 0));
  ASSERT_FALSE(static_cast<bool>(m));
  EXPECT_NE(llvm::toString(m.takeError()).find("out of range"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Data parallelism
//===----------------------------------------------------------------------===//

TEST(Reductions, DataParallelOneF1B) {
  // D = 2 replicas of a 4-rank 1F1B pipeline, 4 ranks per node: replica 1
  // is global ranks 4..7 on node 1, so every stage's ring {r, 4 + r} crosses
  // the inter-node link (latency 1 s, 0.5 B/s): 2 * 1 + 2 / 0.5 = 6 s per
  // 2-byte stage gradient. Last BW of stage s ends at 21 - 2s (15, 17, 19,
  // 21 for s = 3..0).
  Schedule s = make("1f1b", 4, 4);
  Machine sys = oneLink(0, 1.0, /*perNode=*/4, /*nics=*/1);
  sys.topology.interNode = {1.0, 0.5};
  sys.simulation.dataParallel = 2;
  CostTable c = unitTable(4, 2);
  Timeline tl;
  Metrics m = table(s, c, sys, &tl);
  EXPECT_DOUBLE_EQ(m.makespanSec, 21 + 6);
  ASSERT_EQ(tl.collectives.size(), 4u);
  for (int st = 0; st < 4; ++st) {
    EXPECT_EQ(tl.collectives[st].ranks, std::vector<int>{st});
    EXPECT_EQ(tl.collectives[st].ringSize, 2);
    EXPECT_DOUBLE_EQ(tl.collectives[st].readySec, 21 - 2 * st);
    EXPECT_DOUBLE_EQ(tl.collectives[st].endSec, 27 - 2 * st);
    EXPECT_DOUBLE_EQ(m.allReduceSecPerRank[st], 6);
  }
  EXPECT_DOUBLE_EQ(m.collectiveBytes, 4 * 2.0);
  // Event level: all four rings leave node 0 through its one NIC, which
  // serves them one at a time in ready order: stage 3 15 -> 21, stage 2
  // 21 -> 27, stage 1 27 -> 33, stage 0 33 -> 39.
  Timeline te;
  Metrics e = events(s, c, sys, &te);
  EXPECT_DOUBLE_EQ(e.makespanSec, 39);
  EXPECT_DOUBLE_EQ(te.collectives[1].startSec, 27);
  EXPECT_DOUBLE_EQ(te.collectives[1].readySec, 19);
  // One NIC per rank: no contention, as the table.
  sys.topology.nicsPerNode = 4;
  EXPECT_DOUBLE_EQ(events(s, c, sys).makespanSec, 27);
  // D = 1: no reduction, the 1F1B makespan.
  sys.simulation.dataParallel = 1;
  EXPECT_DOUBLE_EQ(table(s, c, sys).makespanSec, 21);
  EXPECT_DOUBLE_EQ(events(s, c, sys).makespanSec, 21);
  // Bad degree.
  sys.simulation.dataParallel = 0;
  llvm::Expected<Metrics> bad = simulateTable(s, c, sys);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("data-parallel degree"),
            std::string::npos);
}

TEST(Reductions, DataParallelChimeraRingsOverAllCopies) {
  // Chimera with D = 2: stage 0 lives on ranks 0, 3 of both replicas, a
  // ring of 4 global ranks {0, 3, 4, 7}; on one link class of alpha = 0.5,
  // 1 B/s and 4-byte gradients: 6 * 0.5 + 1.5 * 4 = 9 s.
  Schedule s = make("chimera", 4, 4);
  Machine sys = oneLink(0.5, 1.0);
  sys.simulation.dataParallel = 2;
  Timeline tl;
  Metrics m = table(s, unitTable(4, 4), sys, &tl);
  ASSERT_EQ(tl.collectives.size(), 4u);
  EXPECT_EQ(tl.collectives[0].ringSize, 4);
  EXPECT_DOUBLE_EQ(tl.collectives[0].endSec - tl.collectives[0].startSec, 9);
  EXPECT_DOUBLE_EQ(m.makespanSec, 16 + 9);
  llvm::Expected<std::vector<GradientReduction>> plan =
      planGradientReductions(s, unitTable(4, 4), sys);
  ASSERT_TRUE(static_cast<bool>(plan));
  EXPECT_EQ((*plan)[0].ring, (std::vector<int>{0, 3, 4, 7}));
}

//===----------------------------------------------------------------------===//
// Optimizer step
//===----------------------------------------------------------------------===//

TEST(Reductions, OptimizerStepAfterTheGradients) {
  // 1F1B S = 4, M = 4 on compute speed 2: 21 / 2 = 10.5 s; each stage's
  // optimizer step (0.5 s on the reference device, 0.25 s here) follows
  // its rank's last BW: rank 0 ends at 10.75.
  Schedule s = make("1f1b", 4, 4);
  Machine sys = oneLink(0, 0);
  sys.simulation.computeSpeed = 2;
  CostTable c = unitTable(4, 2);
  for (StageCost &st : c.stages)
    st.optimizerSec = 0.5;
  Timeline tl;
  Metrics m = table(s, c, sys, &tl);
  EXPECT_DOUBLE_EQ(m.makespanSec, 10.75);
  EXPECT_DOUBLE_EQ(m.postBackwardSec, 0.25);
  EXPECT_DOUBLE_EQ(m.optimizerSec, 0.25);
  ASSERT_EQ(tl.optimizerSteps.size(), 4u);
  EXPECT_DOUBLE_EQ(tl.optimizerSteps[3].startSec, 7.5); // rank 3
  // Counted as compute: rank 0 is busy 12 / 2 + 0.25 = 6.25 of 10.75.
  EXPECT_DOUBLE_EQ(m.bubblePerRank[0], 1 - 6.25 / 10.75);
  EXPECT_DOUBLE_EQ(events(s, c, sys).makespanSec, 10.75);
  // After the data-parallel all-reduce of DataParallelOneF1B (speed 1,
  // optimizer 0.5 s): 27 + 0.5 at the table level, 39 + 0.5 at the event
  // level.
  Machine dp = oneLink(0, 1.0, 4, 1);
  dp.topology.interNode = {1.0, 0.5};
  dp.simulation.dataParallel = 2;
  EXPECT_DOUBLE_EQ(table(s, c, dp).makespanSec, 27.5);
  Timeline te;
  EXPECT_DOUBLE_EQ(events(s, c, dp, &te).makespanSec, 39.5);
  // Rank 3's step waits for its all-reduce (15 -> 21), not for rank 0.
  int rank3Steps = 0;
  for (const TimedOptimizerStep &st : te.optimizerSteps) {
    if (st.rank != 3)
      continue;
    ++rank3Steps;
    EXPECT_DOUBLE_EQ(st.startSec, 21);
  }
  EXPECT_EQ(rank3Steps, 1);
}

//===----------------------------------------------------------------------===//
// Data-parallel buckets and ZeRO-1 (the runtime's exchange)
//===----------------------------------------------------------------------===//

/// The latest end of rank `r`'s W / BW actions of `stage` in `tl`.
double lastWeightGradientEnd(const Timeline &tl, int r, int stage) {
  double end = -1;
  for (const TimedCompute &c : tl.compute)
    if (c.rank == r && c.action.stage == stage &&
        (c.action.phase == schedule::Phase::W ||
         c.action.phase == schedule::Phase::BW))
      end = std::max(end, c.endSec);
  return end;
}

/// The end of rank `r`'s last compute action in `tl`.
double rankEnd(const Timeline &tl, int r) {
  double end = 0;
  for (const TimedCompute &c : tl.compute)
    if (c.rank == r)
      end = std::max(end, c.endSec);
  return end;
}

TEST(Reductions, DataParallelBucketsStartWhenTheirStageIsDone) {
  // Interleaved 1F1B, 2 ranks, 4 stages: rank 0 holds stages 0 and 2,
  // rank 1 stages 1 and 3; a rank's later chunk finishes its backward
  // first. Each stage exchanges 8 bytes (exchangedGradientBytes: the
  // runtime's double sums), not its 2 weight bytes.
  Schedule s = make("interleaved-1f1b", 2, 4);
  ASSERT_EQ(s.numStages, 4);
  CostTable c = unitTable(4, 2);
  for (StageCost &st : c.stages)
    st.exchangedGradientBytes = 8;
  Machine sys = oneLink(0.5, 1.0);
  sys.simulation.dataParallel = 2;
  // The default capacity (25 MiB): one bucket per stage, in the order the
  // stages' last backwards end, each started at that end.
  llvm::Expected<std::vector<GradientReduction>> plan =
      planGradientReductions(s, c, sys);
  ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  ASSERT_EQ(plan->size(), 4u);
  const int expectStage[4] = {2, 0, 3, 1}, expectRank[4] = {0, 0, 1, 1};
  for (int i = 0; i < 4; ++i) {
    const GradientReduction &b = (*plan)[i];
    EXPECT_TRUE(b.bucket);
    EXPECT_FALSE(b.atRankEnd);
    EXPECT_FALSE(b.zero);
    EXPECT_EQ(b.stages, std::vector<int>{expectStage[i]});
    EXPECT_EQ(b.ranks, std::vector<int>{expectRank[i]});
    // Ring {r, P + r} over the two replicas: 2 alpha + 8 / 1 = 9 s.
    EXPECT_EQ(b.ring, (std::vector<int>{expectRank[i], 2 + expectRank[i]}));
    EXPECT_DOUBLE_EQ(b.bytes, 8);
    EXPECT_DOUBLE_EQ(b.durationSec, 2 * 0.5 + 8);
  }
  Timeline tl;
  Metrics m = table(s, c, sys, &tl);
  ASSERT_EQ(tl.collectives.size(), 4u);
  // Stage 2's bucket starts when its last backward ends, before rank 0's
  // schedule (stage 0's backwards) ends: it overlaps the backward.
  const double stage2 = lastWeightGradientEnd(tl, 0, 2);
  EXPECT_DOUBLE_EQ(tl.collectives[0].readySec, stage2);
  EXPECT_DOUBLE_EQ(tl.collectives[0].startSec, stage2);
  EXPECT_LT(stage2, rankEnd(tl, 0));
  EXPECT_DOUBLE_EQ(tl.collectives[1].readySec, lastWeightGradientEnd(tl, 0, 0));
  EXPECT_DOUBLE_EQ(m.collectiveBytes, 4 * 8.0);
  // The rank's buckets run one after another on its collective channel.
  Timeline te;
  events(s, c, sys, &te);
  ASSERT_EQ(te.collectives.size(), 4u);
  EXPECT_GE(te.collectives[1].startSec, te.collectives[0].endSec);

  // Capacity 3 bytes: each stage's 8 bytes go in buckets of 3, 3 and 2
  // bytes, all ready at the stage's last backward.
  sys.simulation.gradientBucketBytes = 3;
  plan = planGradientReductions(s, c, sys);
  ASSERT_TRUE(static_cast<bool>(plan));
  ASSERT_EQ(plan->size(), 12u);
  EXPECT_EQ((*plan)[0].stages, std::vector<int>{2});
  EXPECT_EQ((*plan)[2].stages, std::vector<int>{2});
  EXPECT_EQ((*plan)[3].stages, std::vector<int>{0});
  EXPECT_DOUBLE_EQ((*plan)[0].bytes, 3);
  EXPECT_DOUBLE_EQ((*plan)[1].bytes, 3);
  EXPECT_DOUBLE_EQ((*plan)[2].bytes, 2);
  EXPECT_DOUBLE_EQ((*plan)[2].durationSec, 2 * 0.5 + 2);
  // They share the rank's ring: one after another at the table level too,
  // 4 + 4 + 3 = 11 s from the stage's last backward.
  Timeline t3;
  table(s, c, sys, &t3);
  ASSERT_EQ(t3.collectives.size(), 12u);
  EXPECT_DOUBLE_EQ(t3.collectives[0].startSec, stage2);
  EXPECT_DOUBLE_EQ(t3.collectives[1].startSec, t3.collectives[0].endSec);
  EXPECT_DOUBLE_EQ(t3.collectives[2].endSec, stage2 + 11);
  EXPECT_DOUBLE_EQ(t3.collectives[1].readySec, stage2);
  // A capacity of 0 is an error.
  sys.simulation.gradientBucketBytes = 0;
  plan = planGradientReductions(s, c, sys);
  ASSERT_FALSE(static_cast<bool>(plan));
  EXPECT_NE(llvm::toString(plan.takeError()).find("bucket capacity"),
            std::string::npos);
}

TEST(Reductions, ZeroStageOneReduceScattersThenShardsTheOptimizer) {
  // 1F1B, 4 ranks, D = 2, one link class (alpha 1 s, 1 B/s), 8-byte
  // stage gradients, optimizer 0.5 s per stage. ZeRO-1: per rank one
  // reduce-scatter + all-gather of (p - 1) = 1 step each of 8 / 2 bytes:
  // 2 * (1 + 4) = 10 s, against 2 * (1 + 4) = 10 s for the all-reduce
  // (the same volume), and the optimizer over half the elements: 0.25 s.
  Schedule s = make("1f1b", 4, 4);
  CostTable c = unitTable(4, 8);
  for (StageCost &st : c.stages)
    st.optimizerSec = 0.5;
  Machine sys = oneLink(1.0, 1.0);
  sys.simulation.dataParallel = 2;
  EXPECT_DOUBLE_EQ(ringReduceScatterSec(8, std::vector<int>{0, 4}, sys), 5);
  EXPECT_DOUBLE_EQ(ringReduceScatterSec(8, std::vector<int>{0}, sys), 0);
  // Four ranks: 3 steps of alpha + bytes / 4 each.
  EXPECT_DOUBLE_EQ(ringReduceScatterSec(8, std::vector<int>{0, 1, 2, 3}, sys),
                   3 * (1 + 2));
  Metrics plain = table(s, c, sys);
  // Rank 0 ends its schedule at 21; all-reduce 10 s; optimizer 0.5 s.
  EXPECT_DOUBLE_EQ(plain.makespanSec, 21 + 10 + 0.5);
  EXPECT_DOUBLE_EQ(plain.optimizerSec, 0.5);
  // The event level also pays the point-to-point transfers (1 s each).
  const double plainEvents = events(s, c, sys).makespanSec;
  sys.simulation.zeroStage = 1;
  llvm::Expected<std::vector<GradientReduction>> plan =
      planGradientReductions(s, c, sys);
  ASSERT_TRUE(static_cast<bool>(plan));
  ASSERT_EQ(plan->size(), 4u);
  for (const GradientReduction &g : *plan) {
    EXPECT_TRUE(g.zero);
    EXPECT_TRUE(g.atRankEnd);
    EXPECT_DOUBLE_EQ(g.durationSec, 10);
  }
  Timeline tl;
  Metrics z = table(s, c, sys, &tl);
  EXPECT_DOUBLE_EQ(z.makespanSec, 21 + 10 + 0.25);
  EXPECT_DOUBLE_EQ(z.optimizerSec, 0.25);
  // Same exchange time, half the optimizer.
  EXPECT_DOUBLE_EQ(events(s, c, sys).makespanSec, plainEvents - 0.25);
  // A bad stage is an error that names it.
  sys.simulation.zeroStage = 2;
  llvm::Expected<Metrics> bad = simulateTable(s, c, sys);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("ZeRO stage must be 0 or 1"),
            std::string::npos);
}

TEST(Reductions, DataParallelReplicasShareTheNodesCores) {
  // 1F1B on P = 2 ranks, M = 4, no parameters (no exchange), free links.
  // All D x P ranks on one node of 2 cores: with D = 2 the other replica's
  // two ranks run the same timeline on the same cores, so replica 0 runs
  // as 2 ranks on 1 core would: the same makespan as D = 1 on 1 core, and
  // longer than D = 1 on 2 cores (a core per rank).
  Schedule s = make("1f1b", 2, 4);
  CostTable c = unitTable(2, 0);
  Machine sys = oneLink(0, 0, /*perNode=*/4);
  sys.topology.coresPerNode = 2;
  const double alone = events(s, c, sys).makespanSec;
  EXPECT_DOUBLE_EQ(alone, table(s, c, sys).makespanSec);
  sys.simulation.dataParallel = 2;
  const double replicas = events(s, c, sys).makespanSec;
  Machine oneCore = oneLink(0, 0, /*perNode=*/4);
  oneCore.topology.coresPerNode = 1;
  EXPECT_DOUBLE_EQ(replicas, events(s, c, oneCore).makespanSec);
  EXPECT_GT(replicas, alone);
  // Two ranks per node: each replica has a node of its own, nothing shared.
  sys.topology.ranksPerNode = 2;
  EXPECT_DOUBLE_EQ(events(s, c, sys).makespanSec, alone);
}

TEST(Reductions, GradientAccumulationLengthensEveryWeightGradient) {
  // 1F1B, S = 4, M = 4, F = B = W = 1 s: 21 s. The runtime's gradient
  // accumulation, 0.25 s per W / BW, lengthens every backward to 2.25 s:
  // the 1F1B makespan (M + S - 1) (F + BW) = 7 * 3.25 = 22.75 s.
  Schedule s = make("1f1b", 4, 4);
  CostTable c = unitTable(4, 2);
  Machine sys = oneLink(0, 0);
  EXPECT_DOUBLE_EQ(table(s, c, sys).makespanSec, 21);
  for (StageCost &st : c.stages)
    st.gradientAccumulateSec = 0.25;
  EXPECT_DOUBLE_EQ(table(s, c, sys).makespanSec, 7 * 3.25);
  EXPECT_DOUBLE_EQ(events(s, c, sys).makespanSec, 7 * 3.25);
  // Resampling 4 entries onto 2 stages sums them.
  CostTable two = c.resample(2);
  EXPECT_DOUBLE_EQ(two.stages[0].gradientAccumulateSec, 0.5);
  // Zero-bubble H1 splits B and W: only W carries it.
  Schedule zb = make("zb-h1", 4, 4);
  Timeline tl;
  table(zb, c, sys, &tl);
  for (const TimedCompute &tc : tl.compute) {
    double len = tc.endSec - tc.startSec;
    if (tc.action.phase == schedule::Phase::W)
      EXPECT_DOUBLE_EQ(len, 1.25);
    else if (tc.action.phase == schedule::Phase::B)
      EXPECT_DOUBLE_EQ(len, 1.0);
  }
}

//===----------------------------------------------------------------------===//
// Defaults, asynchronous schedules, reports
//===----------------------------------------------------------------------===//

TEST(Reductions, NothingWithoutReplicasOrInputs) {
  // A pipeline without replicas, D = 1, no tied groups, no optimizer time:
  // no after-backward action, whatever the weights and links.
  for (const char *name : {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1"}) {
    Schedule s = make(name, 4, 8);
    CostTable c = unitTable(s.numStages, 1e9);
    Machine sys = oneLink(1e-3, 1e9, 2);
    llvm::Expected<std::vector<GradientReduction>> plan =
        planGradientReductions(s, c, sys);
    ASSERT_TRUE(static_cast<bool>(plan));
    EXPECT_TRUE(plan->empty()) << name;
    Metrics m = events(s, c, sys);
    EXPECT_EQ(m.postBackwardSec, 0) << name;
    EXPECT_EQ(m.allReduceSec, 0) << name;
  }
}

TEST(Reductions, AsynchronousSchedulesSkipThemWithANote) {
  Schedule s = make("pipedream", 4, 8);
  CostTable c = unitTable(4, 2);
  Machine sys = oneLink(0.5, 1.0);
  double base = table(s, c, sys).makespanSec;
  sys.simulation.dataParallel = 2;
  Metrics m = table(s, c, sys);
  EXPECT_EQ(m.makespanSec, base);
  EXPECT_NE(m.note.find("not modeled for asynchronous"), std::string::npos);
}

TEST(Reductions, ReportRowsAndTrace) {
  Schedule s = make("chimera", 4, 4);
  Machine sys = oneLink(0.5, 1.0);
  CostTable c = unitTable(4, 2);
  for (StageCost &st : c.stages)
    st.optimizerSec = 1;
  Timeline tl;
  Metrics m = events(s, c, sys, &tl);
  llvm::json::Object row;
  addMetricsJSON(row, m);
  EXPECT_EQ(*row.getNumber("allreduce_s"), m.allReduceSec);
  EXPECT_EQ(*row.getNumber("optimizer_s"), 2);
  EXPECT_EQ(*row.getNumber("post_backward_s"), m.postBackwardSec);
  EXPECT_EQ(row.getArray("allreduce_s_per_rank")->size(), 4u);
  EXPECT_EQ(*row.getNumber("collective_bytes"), 16);
  std::string text = chromeTraceJSON(tl, "t");
  EXPECT_NE(text.find("\"allreduce s0\""), std::string::npos);
  EXPECT_NE(text.find("\"optimizer s3\""), std::string::npos);
  std::string svg = renderSvgGantt(tl);
  EXPECT_NE(svg.find("all-reduce"), std::string::npos);
  EXPECT_NE(svg.find("optimizer step"), std::string::npos);
}

TEST(Reductions, CostTableAndSystemFields) {
  llvm::Expected<CostTable> t = parseCostTable(R"({"stages": [
      {"forward_s": 1, "weight_bytes": 8, "gradient_bytes": 2,
       "optimizer_s": 0.5},
      {"forward_s": 1, "weight_bytes": 8}],
      "tied": [{"stages": [1, 0], "bytes": 3}]})");
  ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  EXPECT_EQ(t->stages[0].reducedGradientBytes(), 2);
  EXPECT_EQ(t->stages[1].reducedGradientBytes(), 8);
  EXPECT_EQ(t->stages[0].optimizerSec, 0.5);
  ASSERT_EQ(t->tied.size(), 1u);
  EXPECT_EQ(t->tied[0].stages, (std::vector<int>{0, 1}));
  llvm::Expected<CostTable> again = parseCostTable(costTableToJSON(*t));
  ASSERT_TRUE(static_cast<bool>(again));
  EXPECT_EQ(again->stages[0].gradientBytes, 2);
  EXPECT_EQ(again->stages[1].gradientBytes, -1);
  EXPECT_EQ(again->tied[0].bytes, 3);
  for (
      const char *bad :
      {R"({"stages": [{"forward_s": 1}], "tied": [{"stages": [0], "bytes": 1}]})",
       R"({"stages": [{"forward_s": 1}, {"forward_s": 1}], "tied": [{"stages": [0, 2], "bytes": 1}]})",
       R"({"stages": [{"forward_s": 1}, {"forward_s": 1}], "tied": [{"stages": [0, 1]}]})",
       R"({"stages": [{"forward_s": 1}, {"forward_s": 1}], "tied": [{"stages": [0, 1], "bytes": 1, "b": 0}]})",
       R"({"stages": [{"forward_s": 1, "optimizer_s": -1}]})"}) {
    llvm::Expected<CostTable> e = parseCostTable(bad);
    EXPECT_FALSE(static_cast<bool>(e)) << bad;
    llvm::consumeError(e.takeError());
  }
  llvm::Expected<std::vector<Machine>> s =
      parseSystems(R"({"name": "a", "data_parallel": 4})");
  ASSERT_TRUE(static_cast<bool>(s));
  EXPECT_EQ(s->front().simulation.dataParallel, 4);
  llvm::Expected<std::vector<Machine>> z =
      parseSystems(R"({"name": "a", "data_parallel": 0})");
  ASSERT_FALSE(static_cast<bool>(z));
  EXPECT_NE(llvm::toString(z.takeError()).find("data_parallel"),
            std::string::npos);
}

} // namespace
