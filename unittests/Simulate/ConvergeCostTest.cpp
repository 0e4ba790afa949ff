//===- ConvergeCostTest.cpp - Cost-table times in the Converge simulator --===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Schedule/Schedule.h"
#include "pipeopt/Simulate/Converge.h"
#include "pipeopt/Simulate/Simulator.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>

using namespace pipeopt;
using namespace pipeopt::converge;

namespace {

std::unique_ptr<Objective> quadratic() {
  ObjectiveParams p;
  p.kind = ObjectiveKind::Quadratic;
  llvm::Expected<std::unique_ptr<Objective>> o = makeObjective(p);
  if (!o) {
    ADD_FAILURE() << llvm::toString(o.takeError());
    return nullptr;
  }
  return std::move(*o);
}

RunResult run(const Objective &obj, const RunConfig &c) {
  llvm::Expected<RunResult> r = runMethod(obj, c);
  if (!r) {
    ADD_FAILURE() << methodName(c.method).str() << ": "
                  << llvm::toString(r.takeError());
    return RunResult();
  }
  return std::move(*r);
}

sim::StageCost stage(double f, double bw) {
  sim::StageCost c;
  c.forwardSec = f;
  c.backwardInputSec = bw / 2;
  c.backwardWeightSec = bw / 2;
  return c;
}

/// A table of `n` entries with F = `f`, B + W = `bw` seconds each.
std::shared_ptr<const sim::CostTable> table(int n, double f, double bw) {
  auto t = std::make_shared<sim::CostTable>();
  t->name = "test";
  for (int i = 0; i < n; ++i)
    t->stages.push_back(stage(f, bw));
  return t;
}

llvm::Expected<schedule::Schedule> generate(llvm::StringRef name, int S,
                                            int M) {
  schedule::ScheduleParams p;
  p.numStages = S;
  p.numMicrobatches = M;
  return schedule::makeSchedule(name, p);
}

} // namespace

// F = B = 1 s everywhere: the cost-table run is the unit-slot run, curve
// point for curve point and bit for bit. The table has 2 S entries of
// 0.5 s so that resampling to S stages is exercised too.
TEST(ConvergeCost, UniformOneSecondTableEqualsUnitSlots) {
  auto obj = quadratic();
  ASSERT_TRUE(obj);
  for (Method m : allMethods()) {
    for (int S : {1, 4}) {
      RunConfig unit;
      unit.method = m;
      unit.stages = S;
      unit.budgetSlots = 400;
      unit.numSamples = 50;
      unit.stepSize = 0.05;
      unit.noiseStd = 0.1;
      unit.localSteps = 2;
      unit.recordUpdates = true;
      RunConfig timed = unit;
      timed.costs = table(2 * S, 0.5, 0.5);
      timed.budgetSec = 400;
      RunResult a = run(*obj, unit), b = run(*obj, timed);
      SCOPED_TRACE(methodName(m).str() + " S=" + std::to_string(S));
      ASSERT_EQ(a.curve.size(), b.curve.size());
      for (size_t i = 0; i < a.curve.size(); ++i) {
        EXPECT_EQ(static_cast<double>(a.curve[i].slot), b.curve[i].time);
        EXPECT_EQ(a.curve[i].time, b.curve[i].time);
        EXPECT_EQ(b.curve[i].slot, -1);
        EXPECT_EQ(a.curve[i].blockUpdates, b.curve[i].blockUpdates);
        EXPECT_EQ(a.curve[i].subopt, b.curve[i].subopt) << "point " << i;
      }
      EXPECT_EQ(a.blockUpdates, b.blockUpdates);
      EXPECT_EQ(a.microbatches, b.microbatches);
      EXPECT_EQ(a.finalPoint, b.finalPoint);
      ASSERT_EQ(a.updates.size(), b.updates.size());
      for (size_t k = 0; k < a.updates.size(); ++k) {
        EXPECT_EQ(static_cast<double>(a.updates[k].slot), b.updates[k].time);
        EXPECT_EQ(a.updates[k].delay, b.updates[k].delay);
      }
    }
  }
}

// A slow stage: the sync method's time per step is the table simulator's
// makespan of its 1F1B table (not the unit-time 2(M + S - 1) slots), and
// every step applies one update per stage at the same offset in its step.
TEST(ConvergeCost, SyncStepTimeIsTheTableMakespan) {
  auto obj = quadratic();
  ASSERT_TRUE(obj);
  const int S = 4, M = 6;
  auto t = std::make_shared<sim::CostTable>(*table(S, 1.0, 2.0));
  const_cast<sim::StageCost &>(t->stages[2]) = stage(3.0, 5.0);
  llvm::Expected<schedule::Schedule> s = generate("1f1b", S, M);
  ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
  llvm::Expected<sim::Metrics> metrics =
      sim::simulateTable(*s, *t, machine::idealSystem());
  ASSERT_TRUE(static_cast<bool>(metrics))
      << llvm::toString(metrics.takeError());
  const double makespan = metrics->makespanSec;
  // The slow stage runs 6 x (3 + 5) = 48 s of work; the unit model would
  // give 2 (M + S - 1) = 18 slots.
  EXPECT_GE(makespan, 48.0);

  RunConfig c;
  c.method = Method::Sync;
  c.stages = S;
  c.syncMicrobatches = M;
  c.stepSize = 0.05;
  c.costs = t;
  c.budgetSec = 5 * makespan + 0.5; // 5 full steps and the start of a 6th
  c.recordUpdates = true;
  RunResult r = run(*obj, c);
  std::vector<std::vector<double>> perStage(S);
  for (const UpdateRecord &u : r.updates)
    perStage[u.stage].push_back(u.time);
  for (int st = 0; st < S; ++st) {
    ASSERT_EQ(perStage[st].size(), 5u) << "stage " << st;
    for (size_t k = 1; k < perStage[st].size(); ++k)
      EXPECT_DOUBLE_EQ(perStage[st][k] - perStage[st][k - 1], makespan);
  }
  EXPECT_EQ(r.blockUpdates, 5 * S);
  // Microbatches whose F started: 5 steps of M and the first of the 6th.
  EXPECT_EQ(r.microbatches, 5 * M + 1);
}

// PipeDream under a slow stage: M is the smallest microbatch count whose
// simulated (seconds) makespan reaches the budget, and the updates happen
// exactly at the table simulator's starts of the backwards, in time order.
TEST(ConvergeCost, PipeDreamUpdatesAtTheTableSimulatorTimes) {
  auto obj = quadratic();
  ASSERT_TRUE(obj);
  const int S = 4;
  auto t = std::make_shared<sim::CostTable>(*table(S, 1.0, 2.0));
  const_cast<sim::StageCost &>(t->stages[1]) = stage(2.0, 4.0);
  const double T = 150;
  llvm::Expected<int> M = pipeDreamMicrobatchesForTime(S, T, t.get());
  ASSERT_TRUE(static_cast<bool>(M)) << llvm::toString(M.takeError());
  auto makespan = [&](int m) {
    llvm::Expected<schedule::Schedule> s = generate("pipedream", S, m);
    EXPECT_TRUE(static_cast<bool>(s));
    llvm::Expected<sim::Metrics> x =
        sim::simulateTable(*s, *t, machine::idealSystem());
    EXPECT_TRUE(static_cast<bool>(x));
    return x->makespanSec;
  };
  EXPECT_GE(makespan(*M), T);
  EXPECT_LT(makespan(*M - 1), T);

  llvm::Expected<schedule::Schedule> s = generate("pipedream", S, *M);
  ASSERT_TRUE(static_cast<bool>(s));
  sim::Timeline tl;
  ASSERT_TRUE(static_cast<bool>(
      sim::simulateTable(*s, *t, machine::idealSystem(), &tl)));
  std::vector<double> expected;
  for (const sim::TimedCompute &tc : tl.compute)
    if (tc.action.phase == schedule::Phase::BW && tc.startSec < T)
      expected.push_back(tc.startSec);
  std::sort(expected.begin(), expected.end());

  RunConfig c;
  c.method = Method::PipeDream;
  c.stages = S;
  c.stepSize = 0.02;
  c.costs = t;
  c.budgetSec = T;
  c.recordUpdates = true;
  RunResult r = run(*obj, c);
  std::vector<double> got;
  for (const UpdateRecord &u : r.updates)
    got.push_back(u.time);
  EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
  EXPECT_EQ(got, expected);
  // The bottleneck (stage 1, 6 s per microbatch) sets the rate: about
  // T / 6 microbatches, far fewer than the unit model's T / 2.
  EXPECT_LE(r.blockUpdates, static_cast<long>(S * (T / 6 + S)));
  EXPECT_GE(r.blockUpdates, static_cast<long>(S * (T / 6 - 2 * S)));
}

TEST(ConvergeCost, BadTablesAndBudgetsAreErrors) {
  auto obj = quadratic();
  ASSERT_TRUE(obj);
  RunConfig c;
  c.method = Method::PipeDream;
  c.stages = 4;
  c.costs = table(4, 1.0, 0.0);
  c.budgetSec = 100;
  llvm::Expected<RunResult> r = runMethod(*obj, c);
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_NE(llvm::toString(r.takeError()).find("needs F > 0 and B + W > 0"),
            std::string::npos);
  c.costs = table(4, 1.0, 2.0);
  c.budgetSec = 0;
  r = runMethod(*obj, c);
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_NE(llvm::toString(r.takeError()).find("budget must be > 0 seconds"),
            std::string::npos);
  c.budgetSec = 1e9; // 3.3e8 microbatches of the fastest stage
  r = runMethod(*obj, c);
  ASSERT_FALSE(static_cast<bool>(r));
  llvm::consumeError(r.takeError());
}
