//===- StalenessTest.cpp - Delay matrices of asynchronous schedules -------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// Per-(updating stage j, read block i) delay matrices and the start-up
// maximum of PipeDream (Staleness in Simulator.h; Ilin & Richtarik, arXiv
// 2606.03498), against matrices derived by hand from the definition.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Simulate/CostTable.h"
#include "pipeopt/Simulate/Simulator.h"

#include "llvm/Support/JSON.h"

#include "gtest/gtest.h"

using namespace pipeopt;
using namespace pipeopt::sim;
using namespace pipeopt::machine;
using schedule::Schedule;

namespace {

Staleness pipeDream(int S, int M) {
  schedule::ScheduleParams p;
  p.numRanks = S;
  p.numMicrobatches = M;
  llvm::Expected<Schedule> s = schedule::makeSchedule("pipedream", p);
  if (!s) {
    ADD_FAILURE() << llvm::toString(s.takeError());
    return Staleness();
  }
  llvm::Expected<Staleness> st = computeStaleness(*s);
  if (!st) {
    ADD_FAILURE() << llvm::toString(st.takeError());
    return Staleness();
  }
  return *st;
}

// S = 2 by hand. Unit slots, free communication, PipeDream's 1F1B table:
//   stage 0: F0 F1 .  B0 F2 B1 F3 B2 ...   (F of m >= 2 in slot 2m, B in 2m+3)
//   stage 1: .  F0 B0 F1 B1 F2 B2 F3 ...   (F of m in slot 2m+1, B in 2m+2)
// Block updates (the B ops) in the global (slot, stage) order: slot 2k holds
// stage 1's B of k-1, slot 2k+1 stage 0's B of k-2, one update a slot.
// Steady-state microbatch m reads block 0 at (2m, 0) and block 1 at
// (2m+1, 1), and writes block 1 at (2m+2, 1) and block 0 at (2m+3, 0). The
// delay of (read i, write j) counts the updates strictly between:
//   j = 0, i = 0: (2m, 1), (2m+1, 0), (2m+2, 1)  -> 3
//   j = 0, i = 1: (2m+2, 1)                      -> 1
//   j = 1, i = 0: (2m, 1), (2m+1, 0)             -> 2
//   j = 1, i = 1: none (slot 2m+2 has no stage-0 update before stage 1) -> 0
// Start-up (m < 2): microbatch 1 reads block 0 at (1, 0) and writes it at
// (5, 0): (2, 1), (3, 0), (4, 1) -> 3 updates; microbatch 0 reads at (0, 0)
// and writes at (3, 0): only (2, 1) -> 1. Maximum 3.
TEST(StalenessMatrix, PipeDreamTwoStages) {
  Staleness st = pipeDream(2, 6);
  ASSERT_TRUE(st.steadyState);
  EXPECT_EQ(st.maxDelayMatrix, (std::vector<std::vector<int>>{{3, 1}, {2, 0}}));
  EXPECT_EQ(st.meanDelayMatrix,
            (std::vector<std::vector<double>>{{3, 1}, {2, 0}}));
  EXPECT_EQ(st.startupMaxDelay, 3);
  EXPECT_EQ(st.maxDelay, 3);
}

// S = 3 and S = 4 by the same counting (steady state: F of microbatch m on
// stage i in slot t0 + i, B on stage j in slot t0 + 2S - 1 - j; stage
// sigma runs B in slots of parity (sigma + 1) mod 2). They equal the
// tau(s, s') tables of the paper's authors' scheduler (row s updating,
// column s' read; docs/PipeDreamTheory.md §1.4).
TEST(StalenessMatrix, PipeDreamThreeStages) {
  Staleness st = pipeDream(3, 9);
  EXPECT_EQ(st.maxDelayMatrix,
            (std::vector<std::vector<int>>{{7, 5, 3}, {6, 4, 2}, {5, 3, 1}}));
  // Start-up: microbatch 2 reads block 0 in slot 2 (the third warm-up F)
  // and writes it in slot 9; slots 3..8 hold 1, 1, 2, 1, 2, 1 updates:
  // 8 = floor(5/4 S^2 - S), more than the steady-state 7.
  EXPECT_EQ(st.startupMaxDelay, 8);
}

TEST(StalenessMatrix, PipeDreamFourStages) {
  Staleness st = pipeDream(4, 12);
  EXPECT_EQ(st.maxDelayMatrix,
            (std::vector<std::vector<int>>{
                {14, 11, 9, 6}, {12, 9, 7, 4}, {11, 8, 6, 3}, {9, 6, 4, 1}}));
  // The steady state is the same for every microbatch: mean = max.
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(st.meanDelayMatrix[j][i], st.maxDelayMatrix[j][i]);
  // floor(5/4 S^2 - S) = 16 (the note's start-up maximum for S = 4).
  EXPECT_EQ(st.startupMaxDelay, 16);
  EXPECT_EQ(st.maxDelay, 14);
}

TEST(StalenessMatrix, InTheJSONRow) {
  schedule::ScheduleParams p;
  p.numRanks = 2;
  p.numMicrobatches = 6;
  llvm::Expected<Schedule> s = schedule::makeSchedule("pipedream", p);
  ASSERT_TRUE(static_cast<bool>(s));
  llvm::Expected<Metrics> m =
      simulateTable(*s, CostTable::uniform(2, 1.0), idealSystem());
  ASSERT_TRUE(static_cast<bool>(m));
  llvm::json::Object row;
  addMetricsJSON(row, *m);
  EXPECT_EQ(*row.getInteger("staleness_startup_max_delay"), 3);
  const llvm::json::Array *rows = row.getArray("staleness_delay_matrix");
  ASSERT_NE(rows, nullptr);
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ(*(*rows)[0].getAsArray()->front().getAsInteger(), 3);
  EXPECT_EQ(*(*rows)[1].getAsArray()->back().getAsInteger(), 0);
  ASSERT_NE(row.getArray("staleness_mean_delay_matrix"), nullptr);
}

} // namespace
