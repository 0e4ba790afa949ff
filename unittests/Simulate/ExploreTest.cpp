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
