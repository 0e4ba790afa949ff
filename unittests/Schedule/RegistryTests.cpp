//===- RegistryTests.cpp - Tests for the schedule registry ------*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Schedule/Schedule.h"

#include "llvm/Support/Error.h"
#include "gtest/gtest.h"

#include <algorithm>
#include <set>
#include <string>

using namespace pipeopt::schedule;

namespace {

ScheduleParams params(int ranks, int mbs) {
  ScheduleParams p;
  p.numRanks = ranks;
  p.numMicrobatches = mbs;
  return p;
}

/// (S, M) pairs every registered schedule accepts (Chimera: M a multiple of
/// even S; DualPipeV: M >= 2S).
const std::pair<int, int> kShapes[] = {{2, 4}, {2, 8}, {4, 8}, {4, 16}};

TEST(Registry, EveryGeneratorValidates) {
  for (const ScheduleInfo &row : listSchedules()) {
    ASSERT_NE(row.generate, nullptr) << row.name.str();
    for (auto [S, M] : kShapes) {
      SCOPED_TRACE(row.name.str() + " S=" + std::to_string(S) +
                   " M=" + std::to_string(M));
      ScheduleParams p = params(S, M);
      llvm::Expected<Schedule> s = row.generate(p);
      ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
      EXPECT_FALSE(static_cast<bool>(validate(*s)));
      // The table is of the row's kind.
      EXPECT_EQ(s->name, row.name.str());
      EXPECT_EQ(s->numRanks, S);
      EXPECT_EQ(s->numMicrobatches, M);
      EXPECT_EQ(s->splitBackward, row.splitBackward);
      EXPECT_EQ(s->async, row.async());
      EXPECT_EQ(s->forwardOnly, row.forwardOnly);
      EXPECT_EQ(s->stagesOnRank(0), row.chunksPerRank(p));
      EXPECT_EQ(s->numStages, S * row.chunksPerRank(p));
      // Weight versions exactly for the asynchronous rows.
      bool versioned = false;
      for (const auto &actions : s->actions)
        for (const Action &a : actions)
          versioned |= a.weightVersion >= 0;
      EXPECT_EQ(versioned, row.async());
      // Lowering to send/recv keeps it valid and deadlock-free.
      llvm::Expected<Schedule> lowered =
          insertCommunication(*s, StageGraph::chain(s->numStages));
      ASSERT_TRUE(static_cast<bool>(lowered))
          << llvm::toString(lowered.takeError());
      EXPECT_FALSE(static_cast<bool>(checkDeadlockFree(*lowered)));
    }
  }
}

TEST(Registry, InFlightRulesMatchTheTables) {
  // The closed-form rules of the partitioner's memory model hold exactly
  // for the one-chunk schedules that use them.
  for (const ScheduleInfo &row : listSchedules()) {
    if (row.chunks.kind != ChunkRule::Fixed || row.chunks.count != 1)
      continue;
    for (auto [S, M] : kShapes) {
      SCOPED_TRACE(row.name.str() + " S=" + std::to_string(S) +
                   " M=" + std::to_string(M));
      llvm::Expected<Schedule> s = row.generate(params(S, M));
      ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
      for (int st = 0; st < S; ++st) {
        int measured = maxInFlight(*s, st);
        switch (row.inFlight) {
        case InFlightRule::All:
          EXPECT_EQ(measured, M);
          break;
        case InFlightRule::OneFOneB:
          EXPECT_EQ(measured, std::min(S - st, M));
          break;
        case InFlightRule::One:
          EXPECT_LE(measured, 1);
          break;
        case InFlightRule::Measured:
          break;
        }
      }
    }
  }
}

TEST(Registry, MakeScheduleUsesTheRow) {
  for (const ScheduleInfo &row : listSchedules()) {
    llvm::Expected<Schedule> byName = makeSchedule(row.name, params(4, 8));
    ASSERT_TRUE(static_cast<bool>(byName))
        << llvm::toString(byName.takeError());
    EXPECT_EQ(byName->name, row.name.str());
    for (llvm::StringRef alias : row.aliases) {
      llvm::Expected<Schedule> byAlias = makeSchedule(alias, params(4, 8));
      ASSERT_TRUE(static_cast<bool>(byAlias))
          << llvm::toString(byAlias.takeError());
      // An alias builds the row's schedule, under the canonical name.
      EXPECT_EQ(byAlias->name, row.name.str());
      EXPECT_EQ(byAlias->actions, byName->actions);
    }
  }
}

TEST(Registry, NamesAndAliasesResolve) {
  std::set<std::string> seen;
  for (const ScheduleInfo &row : listSchedules()) {
    EXPECT_TRUE(seen.insert(row.name.str()).second) << row.name.str();
    EXPECT_EQ(findSchedule(row.name), &row);
    EXPECT_EQ(findScheduleByKey(row.name), &row);
    for (llvm::StringRef alias : row.aliases) {
      EXPECT_TRUE(seen.insert(alias.str()).second) << alias.str();
      EXPECT_EQ(findSchedule(alias), &row) << alias.str();
      EXPECT_EQ(findScheduleByKey(alias), &row) << alias.str();
    }
    llvm::Expected<const ScheduleInfo &> looked = lookupSchedule(row.name);
    ASSERT_TRUE(static_cast<bool>(looked));
    EXPECT_EQ(&*looked, &row);
    // A closed form always names its source.
    EXPECT_EQ(row.closedForm == ClosedForm::None, row.closedFormSource.empty())
        << row.name.str();
    EXPECT_FALSE(row.summary.empty());
    EXPECT_FALSE(row.constraints.empty());
  }
  EXPECT_EQ(findSchedule("dapple")->name, "1f1b");
  EXPECT_EQ(findSchedule("inference")->name, "forward-only");
  EXPECT_EQ(findSchedule("interleaved")->name, "interleaved-1f1b");
  // Exact names for makeSchedule; the key lookup ignores case, '-', '_'.
  EXPECT_EQ(findSchedule("ZB_H1"), nullptr);
  EXPECT_EQ(findScheduleByKey("ZB_H1")->name, "zb-h1");
  EXPECT_EQ(findScheduleByKey("PipeDream 2BW")->name, "pipedream-2bw");
  EXPECT_EQ(findScheduleByKey("csv"), nullptr);
  // The defaults are rows.
  ASSERT_NE(findSchedule(kDefaultSchedule), nullptr);
  ASSERT_NE(findSchedule(kInferenceSchedule), nullptr);
  EXPECT_TRUE(findSchedule(kInferenceSchedule)->forwardOnly);
  EXPECT_FALSE(findSchedule(kDefaultSchedule)->forwardOnly);
}

TEST(Registry, UnknownNameListsTheValidNames) {
  llvm::Expected<const ScheduleInfo &> row = lookupSchedule("zigzag");
  ASSERT_FALSE(static_cast<bool>(row));
  std::string msg = llvm::toString(row.takeError());
  EXPECT_EQ(msg, "unknown schedule 'zigzag' (known: " + scheduleNames() + ")");
  for (const ScheduleInfo &r : listSchedules())
    EXPECT_NE(msg.find(r.name.str()), std::string::npos) << r.name.str();
  EXPECT_EQ(scheduleNames(),
            "gpipe, 1f1b, interleaved-1f1b, looped-bfs, zb-h1, zb-h2, zb-v, "
            "interleaved-zb, chimera, hanayo, dualpipev, pipedream, "
            "pipedream-2bw, forward-only");
  llvm::Expected<Schedule> s = makeSchedule("zigzag", params(2, 2));
  ASSERT_FALSE(static_cast<bool>(s));
  EXPECT_EQ(llvm::toString(s.takeError()), msg);
}

TEST(Registry, ChunksPerRank) {
  ScheduleParams p = params(4, 8);
  EXPECT_EQ(findSchedule("1f1b")->chunksPerRank(p), 1);
  EXPECT_EQ(findSchedule("zb-v")->chunksPerRank(p), 2);
  EXPECT_EQ(findSchedule("interleaved-1f1b")->chunksPerRank(p), 2);
  p.virtualStages = 3;
  EXPECT_EQ(findSchedule("interleaved-1f1b")->chunksPerRank(p), 3);
  p.waves = 2;
  EXPECT_EQ(findSchedule("hanayo")->chunksPerRank(p), 4);
  p.waves = 0;
  EXPECT_EQ(findSchedule("hanayo")->chunksPerRank(p), 0);
}

TEST(Registry, WeightVersions) {
  llvm::Expected<Schedule> s = makeSchedule("1f1b", params(2, 4));
  ASSERT_TRUE(static_cast<bool>(s));
  Schedule copy = *s;
  assignWeightVersions(copy, WeightVersions::None);
  EXPECT_EQ(copy.actions, s->actions);
  // The generator's versions are the ones assignWeightVersions gives.
  for (llvm::StringRef name : {"pipedream", "pipedream-2bw"}) {
    llvm::Expected<Schedule> a = makeSchedule(name, params(4, 8));
    ASSERT_TRUE(static_cast<bool>(a));
    Schedule cleared = *a;
    for (auto &row : cleared.actions)
      for (Action &act : row)
        act.weightVersion = -1;
    assignWeightVersions(cleared, findSchedule(name)->weightVersions);
    EXPECT_EQ(cleared.actions, a->actions) << name.str();
  }
}

} // namespace
