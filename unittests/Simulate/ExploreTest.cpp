//===- ExploreTest.cpp - Tests of the explorer library (Explore.h) --------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Simulate/Explore.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <string>

using namespace pipeopt;
using namespace pipeopt::sim;
using namespace pipeopt::machine;

namespace {

/// A point with the given makespans (s) at formula / table / event level
/// (a negative formula value: no closed form) and peak memory (bytes).
ExplorePoint point(const std::string &sched, int S, int M, double f, double t,
                   double e, double memory = 0, double limit = 0,
                   const std::string &sys = "sys") {
  ExplorePoint p;
  p.schedule = sched;
  p.stages = S;
  p.microbatches = M;
  p.modelStages = S;
  p.system = sys;
  p.eval.formula.level = Level::Formula;
  p.eval.formula.available = f >= 0;
  p.eval.formula.makespanSec = f >= 0 ? f : 0;
  p.eval.table.level = Level::Table;
  p.eval.table.makespanSec = t;
  p.eval.event.level = Level::Event;
  p.eval.event.makespanSec = e;
  p.peakMemoryBytes = memory;
  p.memoryLimitBytes = limit;
  return p;
}

TEST(ExploreTest, RankAtSharesRanksWithinTolerance) {
  std::vector<ExplorePoint> pts = {
      point("a", 4, 8, 1, 2.0, 1), point("b", 4, 8, 1, 1.0, 1),
      point("c", 4, 8, 1, 1.0005, 1), point("d", 4, 8, 1, 3.0, 1)};
  std::vector<const ExplorePoint *> ptrs;
  for (const ExplorePoint &p : pts)
    ptrs.push_back(&p);
  // b and c tie (0.05% apart, tolerance 0.1%); competition ranking.
  EXPECT_EQ(rankAt(ptrs, Level::Table, 1e-3), (std::vector<int>{3, 1, 1, 4}));
  // Without tolerance they do not.
  EXPECT_EQ(rankAt(ptrs, Level::Table, 0), (std::vector<int>{3, 1, 2, 4}));
}

TEST(ExploreTest, RankAtSkipsUnavailableLevels) {
  std::vector<ExplorePoint> pts = {point("a", 4, 8, -1, 1, 1),
                                   point("b", 4, 8, 5, 1, 1),
                                   point("c", 4, 8, 2, 1, 1)};
  std::vector<const ExplorePoint *> ptrs = {&pts[0], &pts[1], &pts[2]};
  EXPECT_EQ(rankAt(ptrs, Level::Formula, 1e-3), (std::vector<int>{0, 2, 1}));
}

TEST(ExploreTest, FlipWhenBestSchedulesAreDisjoint) {
  // Table level: a best; event level: b best; formula agrees with table.
  std::vector<ExplorePoint> pts = {point("a", 4, 8, 1.0, 1.0, 2.0),
                                   point("b", 4, 8, 1.5, 1.5, 1.8),
                                   point("c", 4, 8, 3.0, 3.0, 3.0)};
  Ranking r = rankPoints(pts, 1e-3);
  ASSERT_EQ(r.groups.size(), 1u);
  // Flips: (table, event) and (formula, event); not (formula, table).
  ASSERT_EQ(r.flips.size(), 2u);
  const Flip &f = r.flips[0];
  EXPECT_EQ(f.a, Level::Table);
  EXPECT_EQ(f.b, Level::Event);
  EXPECT_EQ(f.bestA, (std::vector<std::string>{"a"}));
  EXPECT_EQ(f.bestB, (std::vector<std::string>{"b"}));
  EXPECT_DOUBLE_EQ(f.bestAAtA, 1.0);
  EXPECT_DOUBLE_EQ(f.bestAAtB, 2.0);
  EXPECT_DOUBLE_EQ(f.bestBAtA, 1.5);
  EXPECT_DOUBLE_EQ(f.bestBAtB, 1.8);
  // Pairs (a,b), (a,c), (b,c): only (a,b) changes order.
  EXPECT_EQ(f.comparablePairs, 3);
  EXPECT_EQ(f.discordantPairs, 1);
  EXPECT_EQ(r.flips[1].a, Level::Formula);
  EXPECT_EQ(r.flips[1].b, Level::Event);
  EXPECT_EQ(r.rankOf.at(&pts[0])[2], 2);
  EXPECT_EQ(r.rankOf.at(&pts[1])[2], 1);
}

TEST(ExploreTest, NoFlipWhenBestSetsOverlap) {
  // a and b tie at the event level; a is best at the table level: the best
  // sets {a} and {a, b} overlap, so no flip.
  std::vector<ExplorePoint> pts = {point("a", 4, 8, -1, 1.0, 1.0),
                                   point("b", 4, 8, -1, 1.2, 1.0)};
  Ranking r = rankPoints(pts, 1e-3);
  EXPECT_TRUE(r.flips.empty());
  EXPECT_EQ(r.bestOf.begin()->second[2], (std::vector<std::string>{"a", "b"}));
}

TEST(ExploreTest, GroupsAreRankedSeparately) {
  std::vector<ExplorePoint> pts = {
      point("a", 4, 8, -1, 1, 1), point("b", 4, 8, -1, 2, 2),
      point("a", 4, 16, -1, 4, 4), point("b", 4, 16, -1, 3, 3)};
  Ranking r = rankPoints(pts, 0);
  EXPECT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.rankOf.at(&pts[0])[1], 1);
  EXPECT_EQ(r.rankOf.at(&pts[3])[1], 1);
  EXPECT_EQ(r.rankOf.at(&pts[2])[1], 2);
  EXPECT_TRUE(r.flips.empty());
}

TEST(ExploreTest, MemoryLimitRemovesFromRankingAndRecommendation) {
  const double GiB = 1024.0 * 1024 * 1024;
  // gpipe is fastest but needs 93 GiB of an 80 GiB device.
  std::vector<ExplorePoint> pts = {
      point("gpipe", 4, 16, -1, 1.0, 1.0, 93.1 * GiB, 80 * GiB),
      point("1f1b", 4, 16, -1, 1.1, 1.1, 40 * GiB, 80 * GiB),
      point("zb-h1", 4, 16, -1, 1.2, 1.2, 45 * GiB, 80 * GiB)};
  Ranking r = rankPoints(pts, 1e-3);
  ASSERT_EQ(r.overMemory.size(), 1u);
  EXPECT_EQ(r.overMemory[0], &pts[0]);
  EXPECT_EQ(r.rankOf.at(&pts[0])[2], 0);
  EXPECT_EQ(r.rankOf.at(&pts[1])[2], 1);
  EXPECT_EQ(r.rankOf.at(&pts[2])[2], 2);
  EXPECT_EQ(memoryRemovedLine(r),
            "removed: 1 configuration over the 80 GiB limit; e.g. gpipe S=4 "
            "M=16 v=1 on sys needs 93.1 GiB");

  std::vector<Recommendation> rec = recommend(pts);
  ASSERT_EQ(rec.size(), 1u);
  ASSERT_TRUE(rec[0].best);
  EXPECT_EQ(rec[0].best->schedule, "1f1b");
  ASSERT_TRUE(rec[0].runnerUp);
  EXPECT_EQ(rec[0].runnerUp->schedule, "zb-h1");
  EXPECT_NEAR(rec[0].marginPercent, 100 * (1.2 - 1.1) / 1.2, 1e-9);
  EXPECT_EQ(rec[0].removed, 1);
  llvm::json::Object o = recommendationJSON(rec[0]);
  EXPECT_EQ(o.getString("schedule"), "1f1b");
  EXPECT_EQ(o.getBoolean("fits"), true);
}

TEST(ExploreTest, NothingFitsNamesTheSmallestRequirement) {
  const double GiB = 1024.0 * 1024 * 1024;
  std::vector<ExplorePoint> pts = {
      point("gpipe", 4, 16, -1, 1.0, 1.0, 93.1 * GiB, 8 * GiB),
      point("1f1b", 4, 16, -1, 1.1, 1.1, 40 * GiB, 8 * GiB)};
  std::vector<Recommendation> rec = recommend(pts);
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_FALSE(rec[0].best);
  ASSERT_TRUE(rec[0].smallest);
  EXPECT_EQ(rec[0].smallest->schedule, "1f1b");
  EXPECT_EQ(recommendationLine(rec[0]),
            "no configuration fits the 8 GiB memory limit on sys; the "
            "smallest needs 40 GiB (1f1b S=4 M=16 v=1)");
}

TEST(ExploreTest, RecommendationComparesTimePerMicrobatchPerSystem) {
  // M=32 takes longer per batch but less per microbatch than M=8.
  std::vector<ExplorePoint> pts = {point("1f1b", 4, 8, -1, 1, 1.1, 0, 0, "x"),
                                   point("1f1b", 4, 32, -1, 1, 3.3, 0, 0, "x"),
                                   point("gpipe", 4, 32, -1, 1, 3.6, 0, 0, "x"),
                                   point("gpipe", 4, 8, -1, 1, 0.5, 0, 0, "y")};
  std::vector<Recommendation> rec = recommend(pts);
  ASSERT_EQ(rec.size(), 2u);
  EXPECT_EQ(rec[0].system, "x");
  EXPECT_EQ(rec[0].best, &pts[1]);
  EXPECT_EQ(rec[0].runnerUp, &pts[2]); // the best of another schedule
  EXPECT_NEAR(rec[0].marginPercent, 100 * (3.6 - 3.3) / 3.6, 1e-9);
  EXPECT_EQ(rec[1].system, "y");
  EXPECT_EQ(rec[1].best, &pts[3]);
  EXPECT_FALSE(rec[1].runnerUp);
}

TEST(ExploreTest, SweepEvaluatesAndAppliesMemoryLimit) {
  SweepOptions o;
  o.schedules = {"gpipe", "1f1b"};
  o.stages = {2};
  o.microbatches = {8};
  o.systems = {idealSystem()};
  // GPipe keeps 8 microbatches' activations on rank 0, 1F1B 2.
  CostTable t = CostTable::uniform(2, 0.01, /*activationBytes=*/1e9,
                                   /*weightBytes=*/1e9);
  o.memoryLimitBytes = 5e9;
  llvm::Expected<SweepResult> r =
      sweep(o, [&](const schedule::Schedule &) -> llvm::Expected<CostTable> {
        return t;
      });
  ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
  ASSERT_EQ(r->points.size(), 2u);
  EXPECT_DOUBLE_EQ(r->points[0].peakMemoryBytes, 9e9);
  EXPECT_DOUBLE_EQ(r->points[1].peakMemoryBytes, 3e9);
  EXPECT_TRUE(r->points[0].overMemory());
  EXPECT_FALSE(r->points[1].overMemory());
  Ranking rank = rankPoints(r->points, 1e-3);
  EXPECT_EQ(rank.overMemory.size(), 1u);
  std::string csv;
  llvm::raw_string_ostream os(csv);
  writeRowsCSV(os, r->points, rank);
  // Header + 2 points x 3 levels; the removed point's rank is 0.
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 7);
  EXPECT_NE(csv.find("gpipe,2,2,8,ideal,event,1,"), std::string::npos);
}

TEST(ExploreTest, SweepSkipsWhatTheTableCallbackRefuses) {
  SweepOptions o;
  o.schedules = {"1f1b"};
  o.stages = {2, 4};
  o.microbatches = {8};
  o.systems = {idealSystem()};
  llvm::Expected<SweepResult> r =
      sweep(o, [&](const schedule::Schedule &s) -> llvm::Expected<CostTable> {
        if (s.numStages > 2)
          return llvm::createStringError("too many stages");
        return CostTable::uniform(s.numStages, 0.01);
      });
  ASSERT_TRUE(static_cast<bool>(r));
  ASSERT_EQ(r->points.size(), 1u);
  ASSERT_EQ(r->skipped.size(), 1u);
  EXPECT_EQ(r->skipped[0], "1f1b S=4 M=8: too many stages");
}

} // namespace

//===----------------------------------------------------------------------===//
// Device split: training memory and the D x P recommendation
//===----------------------------------------------------------------------===//

namespace {

schedule::Schedule makeSched(const std::string &name, int ranks, int M) {
  schedule::ScheduleParams p;
  p.numRanks = ranks;
  p.numMicrobatches = M;
  llvm::Expected<schedule::Schedule> s = schedule::makeSchedule(name, p);
  EXPECT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
  return std::move(*s);
}

/// Two entries: entry 0 counts its parameters (1e9 bytes) in
/// gradient_bytes and more in weight_bytes; entry 1 has only weight_bytes
/// (2e9 bytes of parameters).
CostTable twoEntries() {
  CostTable t = CostTable::uniform(2, 0.01);
  t.stages[0].weightBytes = 3e9;
  t.stages[0].gradientBytes = 1e9;
  t.stages[1].weightBytes = 2e9;
  return t;
}

Metrics activations(std::vector<double> perRank) {
  Metrics m;
  m.level = Level::Event;
  m.peakActivationBytes = std::move(perRank);
  return m;
}

} // namespace

TEST(ExploreSplitTest, OptimizerStateBytesAreTheRuntimesDoubles) {
  EXPECT_EQ(optimizerStateBytesPerElement(OptimizerKind::SGD), 0);
  EXPECT_EQ(optimizerStateBytesPerElement(OptimizerKind::Momentum), 8);
  EXPECT_EQ(optimizerStateBytesPerElement(OptimizerKind::AdamW), 16);
  llvm::Expected<OptimizerKind> k = parseOptimizerKind("AdamW");
  ASSERT_TRUE(static_cast<bool>(k));
  EXPECT_EQ(*k, OptimizerKind::AdamW);
  llvm::Expected<OptimizerKind> bad = parseOptimizerKind("adam");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "unknown optimizer 'adam' (expected sgd, momentum or adamw, the "
            "runtime's optimizers)");
}

TEST(ExploreSplitTest, RankMemoryCountsWeightsGradientsStateActivations) {
  schedule::Schedule s = makeSched("1f1b", 2, 4);
  TrainingMemoryModel mm; // f32 weights, double gradients, AdamW
  llvm::Expected<std::vector<RankMemory>> mem = trainingRankMemory(
      s, twoEntries(), activations({5e8, 3e8}), mm, /*D=*/4, /*zero=*/0);
  ASSERT_TRUE(static_cast<bool>(mem)) << llvm::toString(mem.takeError());
  ASSERT_EQ(mem->size(), 2u);
  // Rank 0: 1e9 bytes of f32 parameters = 2.5e8 elements.
  EXPECT_DOUBLE_EQ((*mem)[0].weightBytes, 1e9);
  EXPECT_DOUBLE_EQ((*mem)[0].gradientBytes, 2.5e8 * 8);
  EXPECT_DOUBLE_EQ((*mem)[0].optimizerStateBytes, 2.5e8 * 16);
  EXPECT_DOUBLE_EQ((*mem)[0].activationBytes, 5e8);
  EXPECT_DOUBLE_EQ((*mem)[0].total(), 1e9 + 2e9 + 4e9 + 5e8);
  // Rank 1: 2e9 bytes = 5e8 elements.
  EXPECT_DOUBLE_EQ((*mem)[1].total(), 2e9 + 4e9 + 8e9 + 3e8);

  // ZeRO-1 over D = 4 replicas: the state is a quarter, nothing else moves.
  mem = trainingRankMemory(s, twoEntries(), activations({5e8, 3e8}), mm, 4, 1);
  ASSERT_TRUE(static_cast<bool>(mem));
  EXPECT_DOUBLE_EQ((*mem)[0].optimizerStateBytes, 1e9);
  EXPECT_DOUBLE_EQ((*mem)[1].optimizerStateBytes, 2e9);
  EXPECT_DOUBLE_EQ((*mem)[1].gradientBytes, 4e9);

  // bf16 parameters: twice the elements per byte; SGD: no state.
  mm.weightElementBytes = 2;
  mm.optimizerStateElementBytes =
      optimizerStateBytesPerElement(OptimizerKind::SGD);
  mem = trainingRankMemory(s, twoEntries(), activations({0, 0}), mm, 1, 0);
  ASSERT_TRUE(static_cast<bool>(mem));
  EXPECT_DOUBLE_EQ((*mem)[0].gradientBytes, 5e8 * 8);
  EXPECT_DOUBLE_EQ((*mem)[0].optimizerStateBytes, 0);
}

TEST(ExploreSplitTest, ParameterElementsPreferTheTablesCount) {
  TrainingMemoryModel mm;
  StageCost c;
  c.weightBytes = 4e9;
  EXPECT_DOUBLE_EQ(parameterElementsOf(c, mm), 1e9);
  mm.weightElementBytes = 2;
  EXPECT_DOUBLE_EQ(parameterElementsOf(c, mm), 2e9);
  c.parameterElements = 3e8; // stated by the table: no dtype needed
  EXPECT_DOUBLE_EQ(parameterElementsOf(c, mm), 3e8);
}

TEST(ExploreSplitTest, ChimeraRanksHoldBothCopies) {
  // Chimera on 2 ranks: each rank holds stage 0 of one pipeline and stage
  // 1 of the other, i.e. both entries' parameters.
  schedule::Schedule s = makeSched("chimera", 2, 4);
  TrainingMemoryModel mm;
  mm.optimizerStateElementBytes = 8;
  llvm::Expected<std::vector<RankMemory>> mem = trainingRankMemory(
      s, twoEntries(), activations({0, 0}), mm, /*D=*/1, /*zero=*/0);
  ASSERT_TRUE(static_cast<bool>(mem));
  for (const RankMemory &r : *mem) {
    EXPECT_DOUBLE_EQ(r.weightBytes, 3e9);
    EXPECT_DOUBLE_EQ(r.gradientBytes, 7.5e8 * 8);
    EXPECT_DOUBLE_EQ(r.optimizerStateBytes, 7.5e8 * 8);
  }
}

TEST(ExploreSplitTest, RankMemoryErrors) {
  schedule::Schedule s = makeSched("1f1b", 2, 4);
  TrainingMemoryModel mm;
  auto msg = [&](const Metrics &m, int D, int z) {
    llvm::Expected<std::vector<RankMemory>> r =
        trainingRankMemory(s, twoEntries(), m, mm, D, z);
    return r ? std::string("ok") : llvm::toString(r.takeError());
  };
  EXPECT_EQ(msg(activations({0, 0}), 2, 2), "ZeRO stage must be 0 or 1, got 2");
  EXPECT_EQ(msg(activations({0, 0}), 0, 0),
            "data-parallel degree must be >= 1, got 0");
  EXPECT_EQ(msg(activations({0}), 1, 0),
            "metrics have 1 ranks, the schedule 2");
  mm.weightElementBytes = 0;
  EXPECT_EQ(msg(activations({0, 0}), 1, 0),
            "bytes per weight element must be a finite number > 0");
}

namespace {

SplitPoint split(int D, int P, int z, double step, double memory, double limit,
                 int M = 8) {
  SplitPoint sp;
  sp.point = point("1f1b", P, M / D, 0, step, step, memory, limit);
  sp.dataParallel = D;
  sp.globalMicrobatches = M;
  sp.zeroStage = z;
  sp.peak.weightBytes = memory;
  return sp;
}

constexpr double GiB = 1024.0 * 1024 * 1024;

} // namespace

TEST(ExploreSplitTest, RecommendsFastestFittingSplitWithReasons) {
  std::vector<SplitPoint> pts = {
      split(4, 1, 0, 1.0, 30 * GiB, 20 * GiB), // fastest, over
      split(4, 1, 1, 1.0, 22 * GiB, 20 * GiB), // over by 2 GiB
      split(2, 2, 0, 2.0, 16 * GiB, 20 * GiB),
      split(2, 2, 1, 2.0, 12 * GiB, 20 * GiB), // tie: ZeRO-0 first
      split(1, 4, 0, 2.5, 8 * GiB, 20 * GiB)};
  std::vector<SplitRecommendation> r = recommendSplits(pts);
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].best, &pts[2]);
  ASSERT_EQ(r[0].runnerUp, &pts[4]);
  EXPECT_DOUBLE_EQ(r[0].marginPercent, 20.0);
  ASSERT_EQ(r[0].splits.size(), 3u);
  EXPECT_EQ(r[0].splits[0].best, nullptr);
  EXPECT_EQ(r[0].splits[0].smallest, &pts[1]);
  EXPECT_EQ(r[0].splits[0].overMemory, 2);
  EXPECT_EQ(splitRecommendationLine(r[0]),
            "recommended: D=2 x P=2 1f1b M=8 (4 per replica) v=1 ZeRO-0 on "
            "sys: 2 s per step (250 ms per microbatch), peak memory 16 GiB "
            "of 20 GiB (rank 0); 20.0% faster per microbatch than the best "
            "other split D=1 x P=4 1f1b M=8 (8 per replica) v=1 ZeRO-0 (2.5 "
            "s per step); over the memory limit: D=4 x P=1 (needs at least "
            "22 GiB, 2 GiB over)");
  // ZeRO-1 clearly faster beyond the tolerance wins its tie-break.
  pts[3] = split(2, 2, 1, 1.9, 12 * GiB, 20 * GiB);
  r = recommendSplits(pts);
  EXPECT_EQ(r[0].best, &pts[3]);
}

TEST(ExploreSplitTest, NothingFitsNamesTheClosest) {
  std::vector<SplitPoint> pts = {split(2, 1, 0, 1.0, 30 * GiB, 20 * GiB),
                                 split(1, 2, 0, 1.5, 21 * GiB, 20 * GiB)};
  std::vector<SplitRecommendation> r = recommendSplits(pts);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].best, nullptr);
  EXPECT_EQ(r[0].closest, &pts[1]);
  EXPECT_EQ(splitRecommendationLine(r[0]),
            "no D x P split of 2 devices fits the 20 GiB memory limit on "
            "sys; the closest is D=1 x P=2 1f1b M=8 (8 per replica) v=1 "
            "ZeRO-0 needing 21 GiB (1 GiB over)");
  llvm::json::Object o = splitRecommendationJSON(r[0]);
  EXPECT_EQ(o.getBoolean("fits"), false);
  EXPECT_EQ(o.getObject("closest")->getNumber("peak_memory_bytes"), 21 * GiB);
}

TEST(ExploreSplitTest, SearchSplitsAtAFixedGlobalBatch) {
  // 4 layers of F = B = W = 1 ms and 1e9 bytes of f32 parameters (2.5e8
  // elements) each, on 4 ranks of one node linked at 1e10 B/s.
  CostTable t = CostTable::uniform(4, 1e-3, /*activationBytes=*/1e8,
                                   /*weightBytes=*/1e9);
  Machine m = gridBase();
  m.name = "node";
  m.topology.ranksPerNode = 4;
  m.topology.intraNode.latencySeconds = 0;
  m.topology.intraNode.bytesPerSecond = 1e10;
  SplitOptions o;
  o.devices = 4;
  o.schedules = {"1f1b", "pipedream"};
  o.globalMicrobatches = {4, 6};
  o.systems = {m};
  llvm::Expected<SplitSearch> r =
      searchSplits(o, [&](const schedule::Schedule &) { return t; });
  ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
  EXPECT_EQ(r->pipelineRanks, (std::vector<int>{1, 2, 4}));
  // PipeDream is not searched; D = 4 does not divide M = 6.
  ASSERT_GE(r->skipped.size(), 2u);
  EXPECT_EQ(r->skipped[0].rfind("pipedream: asynchronous", 0), 0u);
  EXPECT_NE(llvm::find(r->skipped, "D=4 x P=1 M=6: 6 global microbatches do "
                                   "not split evenly over 4 replicas"),
            r->skipped.end());
  // D=4: M=4 x ZeRO {0,1}; D=2: M in {4,6} x ZeRO {0,1}; D=1: M in {4,6}
  // with ZeRO-0 only.
  ASSERT_EQ(r->points.size(), 2u + 4u + 2u);
  const SplitPoint &d4 = r->points[0];
  EXPECT_EQ(d4.dataParallel, 4);
  EXPECT_EQ(d4.pipelineRanks(), 1);
  EXPECT_EQ(d4.point.microbatches, 1);
  EXPECT_EQ(d4.zeroStage, 0);
  // One microbatch through all 4 layers (12 ms), then the ring all-reduce
  // of the double gradient sums, 8 x 1e9 elements = 8e9 bytes over 4
  // ranks: 2 x 3 x (8e9 / 4) / 1e10 = 1.2 s.
  EXPECT_NEAR(d4.point.eval.event.allReduceSec, 1.2, 1e-9);
  EXPECT_NEAR(d4.stepSec(), 0.012 + 1.2, 1e-9);
  EXPECT_NEAR(d4.secondsPerMicrobatch(), (0.012 + 1.2) / 4, 1e-9);
  // Memory: 4e9 weights + 8e9 gradient sums + 16e9 AdamW state (4e9 with
  // ZeRO-1 over 4) + one microbatch's 4e8 activations.
  EXPECT_DOUBLE_EQ(d4.peak.total(), 4e9 + 8e9 + 16e9 + 4e8);
  EXPECT_EQ(r->points[1].zeroStage, 1);
  EXPECT_DOUBLE_EQ(r->points[1].peak.total(), 4e9 + 8e9 + 4e9 + 4e8);
  const SplitPoint &last = r->points.back();
  EXPECT_EQ(last.dataParallel, 1);
  EXPECT_EQ(last.globalMicrobatches, 6);
  EXPECT_EQ(last.point.eval.event.allReduceSec, 0);

  o.devices = 0;
  llvm::Expected<SplitSearch> bad =
      searchSplits(o, [&](const schedule::Schedule &) { return t; });
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "the device count must be >= 1, got 0");
}
