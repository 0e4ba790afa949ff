//===- ScheduleErrorTests.cpp - Fields of schedule::ScheduleError -*- C++
//-*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// validate(), checkDeadlockFree(), insertCommunication() and importCSV()
// report where a violation is (rank, action index, the action, the cycle)
// besides the message; the passes place their diagnostics from these fields.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Schedule/Schedule.h"

#include "llvm/Support/Error.h"
#include "gtest/gtest.h"

#include <algorithm>
#include <optional>
#include <ostream>
#include <string>

namespace pipeopt {
namespace schedule {
// Readable gtest output for the fields compared below.
void PrintTo(const ActionRef &r, std::ostream *os) {
  *os << "{rank " << r.rank << ", index " << r.index << "}";
}
void PrintTo(const Action &a, std::ostream *os) { *os << describe(a); }
} // namespace schedule
} // namespace pipeopt

using namespace pipeopt::schedule;

namespace {

template <typename T>
T unwrap(llvm::Expected<T> v) {
  if (!v) {
    ADD_FAILURE() << llvm::toString(v.takeError());
    return T();
  }
  return std::move(*v);
}

ScheduleParams params(int ranks, int mbs) {
  ScheduleParams p;
  p.numRanks = ranks;
  p.numMicrobatches = mbs;
  return p;
}

/// The ScheduleError in `e`, taken out with llvm::handleErrors; fails the
/// test when `e` is success or holds another kind of error.
std::optional<ScheduleError> caught(llvm::Error e) {
  std::optional<ScheduleError> out;
  if (!e) {
    ADD_FAILURE() << "expected an error";
    return out;
  }
  llvm::Error rest = llvm::handleErrors(
      std::move(e), [&](const ScheduleError &se) { out = se; });
  if (rest)
    ADD_FAILURE() << "not a ScheduleError: " << llvm::toString(std::move(rest));
  return out;
}
template <typename T>
std::optional<ScheduleError> caught(llvm::Expected<T> v) {
  if (v) {
    ADD_FAILURE() << "expected an error";
    return std::nullopt;
  }
  return caught(v.takeError());
}

/// Index of the first `a` in `row` (-1 if absent).
int indexOf(const std::vector<Action> &row, const Action &a) {
  auto it = std::find(row.begin(), row.end(), a);
  return it == row.end() ? -1 : static_cast<int>(it - row.begin());
}

TEST(ScheduleError, WrongRank) {
  Schedule s = unwrap(makeSchedule("gpipe", params(3, 2)));
  s.actions[0].push_back(Action::compute(Phase::F, 1, 0));
  auto e = caught(validate(s));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ScheduleErrorKind::BadAction);
  EXPECT_EQ(
      e->text,
      "rank 0: F(stage 1, mb 0) belongs on rank 1 (stage 1 of pipeline 0)");
  EXPECT_EQ(e->at, (ActionRef{0, static_cast<int>(s.actions[0].size()) - 1}));
  ASSERT_TRUE(e->action);
  EXPECT_EQ(*e->action, Action::compute(Phase::F, 1, 0));
  EXPECT_EQ(e->related, ActionRef{});
  EXPECT_TRUE(e->cycle.empty());
}

TEST(ScheduleError, BackwardBeforeForward) {
  Schedule s = unwrap(makeSchedule("gpipe", params(4, 4)));
  auto &row = s.actions[2];
  auto bw = std::find(row.begin(), row.end(), Action::compute(Phase::BW, 2, 3));
  Action a = *bw;
  row.erase(bw);
  row.insert(row.begin(), a);
  int f = indexOf(row, Action::compute(Phase::F, 2, 3));
  ASSERT_GT(f, 0);
  auto e = caught(validate(s));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ScheduleErrorKind::Order);
  EXPECT_EQ(e->text,
            "rank 2: BW(stage 2, mb 3) appears before F(stage 2, mb 3)");
  EXPECT_EQ(e->at, (ActionRef{2, 0}));
  EXPECT_EQ(*e->action, a);
  EXPECT_EQ(e->related, (ActionRef{2, f}));
}

TEST(ScheduleError, MissingAction) {
  Schedule s = unwrap(makeSchedule("1f1b", params(4, 4)));
  auto &row = s.actions[1];
  row.erase(
      std::find(row.begin(), row.end(), Action::compute(Phase::BW, 1, 3)));
  auto e = caught(validate(s));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ScheduleErrorKind::Missing);
  EXPECT_EQ(e->text, "missing BW(stage 1, mb 3) (expected on rank 1)");
  // Not in the table: the rank that should hold it, no index.
  EXPECT_EQ(e->at, (ActionRef{1, -1}));
  ASSERT_TRUE(e->action);
  EXPECT_EQ(*e->action, Action::compute(Phase::BW, 1, 3));
}

TEST(ScheduleError, DuplicateNamesBothOccurrences) {
  Schedule s = unwrap(makeSchedule("gpipe", params(3, 2)));
  s.actions[1].push_back(Action::compute(Phase::F, 1, 0));
  auto e = caught(validate(s));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ScheduleErrorKind::Duplicate);
  EXPECT_EQ(e->text,
            "rank 1: F(stage 1, mb 0) appears twice (first at position 0)");
  EXPECT_EQ(e->at, (ActionRef{1, static_cast<int>(s.actions[1].size()) - 1}));
  EXPECT_EQ(e->related, (ActionRef{1, 0}));
}

TEST(ScheduleError, ExecutionOrderCycle) {
  Schedule s = unwrap(makeSchedule("gpipe", params(2, 2)));
  s.actions[0] = {
      Action::compute(Phase::F, 0, 0), Action::compute(Phase::BW, 0, 0),
      Action::compute(Phase::F, 0, 1), Action::compute(Phase::BW, 0, 1)};
  s.actions[1] = {
      Action::compute(Phase::F, 1, 0), Action::compute(Phase::F, 1, 1),
      Action::compute(Phase::BW, 1, 0), Action::compute(Phase::BW, 1, 1)};
  auto e = caught(validate(s));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ScheduleErrorKind::Cycle);
  // Rank 0 is stuck at BW(0,0) (index 1), rank 1 at F(1,1) (index 1).
  EXPECT_EQ(e->cycle, (std::vector<ActionRef>{{0, 1}, {1, 1}}));
  EXPECT_EQ(e->at, (ActionRef{0, 1}));
  EXPECT_EQ(*e->action, Action::compute(Phase::BW, 0, 0));
}

/// 1F1B for 2 ranks with every Send right after its producer and every Recv
/// right before its consumer: deadlocks under rendezvous semantics.
Schedule naive1F1B(int mbs) {
  Schedule s = unwrap(makeSchedule("1f1b", params(2, mbs)));
  Schedule naive = s;
  for (int r = 0; r < 2; ++r) {
    naive.actions[r].clear();
    for (const Action &a : s.actions[r]) {
      bool fwd = a.phase == Phase::F;
      if (r == 1 && fwd)
        naive.actions[r].push_back(Action::recv(1, a.microbatch, 0, 0, false));
      if (r == 0 && !fwd)
        naive.actions[r].push_back(Action::recv(0, a.microbatch, 1, 1, true));
      naive.actions[r].push_back(a);
      if (r == 0 && fwd)
        naive.actions[r].push_back(Action::send(0, a.microbatch, 1, 1, false));
      if (r == 1 && !fwd)
        naive.actions[r].push_back(Action::send(1, a.microbatch, 0, 0, true));
    }
  }
  return naive;
}

TEST(ScheduleError, DeadlockCycleWithItsRanks) {
  Schedule s = naive1F1B(3);
  auto e = caught(checkDeadlockFree(s));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ScheduleErrorKind::Deadlock);
  EXPECT_EQ(e->text,
            "deadlock: rank 0 waits on send to rank 1 (F stage 0 mb 1) -> "
            "rank 1 waits on send to rank 0 (B stage 1 mb 0) -> rank 0");
  ASSERT_EQ(e->cycle.size(), 2u);
  EXPECT_EQ(e->cycle[0].rank, 0);
  EXPECT_EQ(e->cycle[1].rank, 1);
  EXPECT_EQ(e->cycle[0].index,
            indexOf(s.actions[0], Action::send(0, 1, 1, 1, false)));
  EXPECT_EQ(e->cycle[1].index,
            indexOf(s.actions[1], Action::send(1, 0, 0, 0, true)));
  EXPECT_EQ(e->at, e->cycle[0]);
  EXPECT_EQ(*e->action, Action::send(0, 1, 1, 1, false));
  // insertCommunication's table runs to completion.
  Schedule ok = unwrap(insertCommunication(
      unwrap(makeSchedule("1f1b", params(2, 3))), StageGraph::chain(2)));
  EXPECT_FALSE(static_cast<bool>(checkDeadlockFree(ok)));
}

TEST(ScheduleError, ValuesOfOneTransferMatchByIndex) {
  // Rank 0 sends values 0 and 1 of one activation transfer; rank 1 posts
  // the recv of value 1 first: under rendezvous semantics that blocks.
  auto with = [](Action a, int value) {
    a.value = value;
    return a;
  };
  Schedule s;
  s.name = "two-values";
  s.numRanks = 2;
  s.numStages = 2;
  s.numMicrobatches = 1;
  s.stageRank = {{0, 1}};
  s.microbatchPipeline = {0};
  s.forwardOnly = true;
  s.actions = {{Action::compute(Phase::F, 0, 0),
                with(Action::send(0, 0, 1, 1, false), 0),
                with(Action::send(0, 0, 1, 1, false), 1)},
               {with(Action::recv(1, 0, 0, 0, false), 1),
                with(Action::recv(1, 0, 0, 0, false), 0),
                Action::compute(Phase::F, 1, 0)}};
  auto e = caught(checkDeadlockFree(s));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ScheduleErrorKind::Mismatched);
  EXPECT_EQ(e->text, "mismatched send/recv: rank 0 posts SEND_F(stage 0 -> 1, "
                     "mb 0) to rank 1, but rank 1 posts RECV_F(stage 1 <- 0, "
                     "mb 0, value 1) from rank 0");
  EXPECT_EQ(e->at, (ActionRef{0, 1}));
  EXPECT_EQ(e->related, (ActionRef{1, 0}));
  // In the order they are sent, both values pass.
  std::swap(s.actions[1][0], s.actions[1][1]);
  EXPECT_FALSE(static_cast<bool>(checkDeadlockFree(s)));
}

TEST(ScheduleError, MismatchedAndUnmatched) {
  Schedule c = unwrap(insertCommunication(
      unwrap(makeSchedule("gpipe", params(2, 2))), StageGraph::chain(2)));
  Schedule swapped = c;
  auto &r1 = swapped.actions[1];
  std::vector<int> recvPos;
  for (int i = 0; i < static_cast<int>(r1.size()); ++i)
    if (r1[i].phase == Phase::Recv && !r1[i].backward)
      recvPos.push_back(i);
  ASSERT_EQ(recvPos.size(), 2u);
  std::swap(r1[recvPos[0]], r1[recvPos[1]]);
  auto e = caught(checkDeadlockFree(swapped));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ScheduleErrorKind::Mismatched);
  EXPECT_EQ(e->at, (ActionRef{0, indexOf(c.actions[0],
                                         Action::send(0, 0, 1, 1, false))}));
  EXPECT_EQ(e->related, (ActionRef{1, recvPos[0]}));
  EXPECT_EQ(*e->action, Action::send(0, 0, 1, 1, false));

  // Rank 0's last gradient recv dropped: rank 1's send waits on a finished
  // rank 0.
  Schedule tail = c;
  tail.actions[0].erase(tail.actions[0].end() - 2);
  e = caught(checkDeadlockFree(tail));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ScheduleErrorKind::Unmatched);
  EXPECT_EQ(e->at, (ActionRef{1, indexOf(c.actions[1],
                                         Action::send(1, 1, 0, 0, true))}));
  EXPECT_EQ(e->related, (ActionRef{0, -1}));

  // The same table through validate(): the missing Recv, on rank 0.
  e = caught(validate(tail));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ScheduleErrorKind::Missing);
  EXPECT_EQ(e->text, "rank 0: missing RECV_B(stage 0 <- 1, mb 1)");
  EXPECT_EQ(e->at, (ActionRef{0, -1}));
  EXPECT_EQ(*e->action, Action::recv(0, 1, 1, 1, true));
}

TEST(ScheduleError, InsertCommunication) {
  Schedule c = unwrap(insertCommunication(
      unwrap(makeSchedule("gpipe", params(2, 2))), StageGraph::chain(2)));
  auto e = caught(insertCommunication(c, StageGraph::chain(2)));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ScheduleErrorKind::Table);
  EXPECT_EQ(e->at, ActionRef{});
  EXPECT_FALSE(e->action);
  // An invalid compute table: validate()'s error, fields included.
  Schedule bad = unwrap(makeSchedule("gpipe", params(2, 2)));
  bad.actions[1].push_back(Action::compute(Phase::F, 0, 1));
  e = caught(insertCommunication(bad, StageGraph::chain(2)));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ScheduleErrorKind::BadAction);
  EXPECT_EQ(e->at, (ActionRef{1, static_cast<int>(bad.actions[1].size()) - 1}));
}

TEST(ScheduleError, ImportCSVKeepsFieldsWithTorchNames) {
  // W before I on rank 1: the message names actions as the CSV does, the
  // fields point into the imported table.
  auto e = caught(importCSV("0F0,0I0,0W0\n1F0,1W0,1I0\n"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ScheduleErrorKind::Order);
  EXPECT_EQ(e->text, "rank 1: 1W0 (weight gradient, stage 1, mb 0) appears "
                     "before 1I0 (input gradient, stage 1, mb 0)");
  EXPECT_EQ(e->at, (ActionRef{1, 1}));
  EXPECT_EQ(e->related, (ActionRef{1, 2}));
}

} // namespace
