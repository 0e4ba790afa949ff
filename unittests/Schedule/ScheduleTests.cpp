//===- ScheduleTests.cpp - Tests for the schedule library -------*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Schedule/Schedule.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/FormatVariadic.h"
#include "gtest/gtest.h"

#include <algorithm>
#include <string>

using namespace pipeopt::schedule;

namespace {

/// Unwrap an Expected, failing the test with its message.
template <typename T>
T unwrap(llvm::Expected<T> v) {
  if (!v) {
    ADD_FAILURE() << llvm::toString(v.takeError());
    return T();
  }
  return std::move(*v);
}

/// The error message of `e` ("" on success).
std::string message(llvm::Error e) {
  if (!e)
    return "";
  return llvm::toString(std::move(e));
}
template <typename T>
std::string message(llvm::Expected<T> v) {
  if (v)
    return "";
  return llvm::toString(v.takeError());
}

ScheduleParams params(int ranks, int mbs, int chunks = 0, int waves = 1) {
  ScheduleParams p;
  p.numRanks = ranks;
  p.numMicrobatches = mbs;
  p.virtualStages = chunks;
  p.waves = waves;
  return p;
}

int countPhase(const Schedule &s, Phase ph) {
  int n = 0;
  for (const auto &row : s.actions)
    for (const Action &a : row)
      n += a.phase == ph;
  return n;
}

//===----------------------------------------------------------------------===//
// Sweep: every generator validates and lowers to a deadlock-free table.
//===----------------------------------------------------------------------===//

struct SweepCase {
  std::string name;
  int S, M, v, waves;
};

std::vector<SweepCase> sweepCases() {
  std::vector<SweepCase> out;
  for (const ScheduleInfo &info : listSchedules())
    for (int S : {1, 2, 3, 4, 6, 8})
      for (int M : {1, 2, 3, 4, 5, 8, 12, 16, 17})
        for (int v : {1, 2, 3})
          for (int w : {1, 2}) {
            std::string n = info.name.str();
            bool chunked = n == "interleaved-1f1b" || n == "looped-bfs" ||
                           n == "interleaved-zb";
            if (!chunked && v != 1)
              continue;
            if (n != "hanayo" && w != 1)
              continue;
            out.push_back({n, S, M, chunked ? v : 0, w});
          }
  return out;
}

TEST(ScheduleSweep, AllGeneratorsValidAndDeadlockFree) {
  int built = 0, rejected = 0;
  for (const SweepCase &c : sweepCases()) {
    SCOPED_TRACE(c.name + " S=" + std::to_string(c.S) +
                 " M=" + std::to_string(c.M) + " v=" + std::to_string(c.v) +
                 " waves=" + std::to_string(c.waves));
    auto sOr = makeSchedule(c.name, params(c.S, c.M, c.v, c.waves));
    if (!sOr) {
      // Rejections must be loud and specific.
      std::string msg = llvm::toString(sOr.takeError());
      EXPECT_NE(msg.find(c.name), std::string::npos) << msg;
      ++rejected;
      continue;
    }
    ++built;
    Schedule s = std::move(*sOr);
    EXPECT_EQ(s.name, c.name);
    EXPECT_EQ(s.numRanks, c.S);
    EXPECT_EQ(s.numMicrobatches, c.M);
    ASSERT_EQ(message(validate(s)), "");
    // Exact action counts.
    int NS = s.numStages, M = s.numMicrobatches;
    EXPECT_EQ(countPhase(s, Phase::F), NS * M);
    if (s.forwardOnly) {
      EXPECT_EQ(countPhase(s, Phase::BW) + countPhase(s, Phase::B), 0);
    } else {
      EXPECT_EQ(countPhase(s, Phase::BW) + countPhase(s, Phase::B), NS * M);
      EXPECT_EQ(countPhase(s, Phase::W), countPhase(s, Phase::B));
    }
    auto lowered = insertCommunication(s, StageGraph::chain(NS));
    ASSERT_TRUE(static_cast<bool>(lowered))
        << llvm::toString(lowered.takeError());
    EXPECT_EQ(message(checkDeadlockFree(*lowered)), "");
    EXPECT_EQ(message(validate(*lowered)), "");
    // Every compute action survives lowering in the same order per rank.
    for (int r = 0; r < s.numRanks; ++r) {
      std::vector<Action> compute;
      for (const Action &a : lowered->actions[r])
        if (a.isCompute())
          compute.push_back(a);
      EXPECT_EQ(compute, s.actions[r]);
    }
    // CSV round trip of both forms.
    for (const Schedule *t : {&s, &*lowered}) {
      std::string csv = exportCSV(*t);
      auto back = importCSV(csv);
      ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
      EXPECT_EQ(exportCSV(*back), csv);
    }
  }
  // The sweep must exercise both paths.
  EXPECT_GT(built, 400);
  EXPECT_GT(rejected, 50);
}

//===----------------------------------------------------------------------===//
// Generator specifics
//===----------------------------------------------------------------------===//

TEST(Generators, OneFOneBWarmupIsSMinus1MinusR) {
  for (int S : {2, 3, 4, 8})
    for (int M : {S + 1, 2 * S, 3 * S + 1}) {
      Schedule s = unwrap(makeSchedule("1f1b", params(S, M)));
      for (int r = 0; r < S; ++r)
        EXPECT_EQ(warmupCount(s, r), S - 1 - r) << "S=" << S << " M=" << M;
    }
  // Exact order on rank 1 of S=4, M=6: 2 warm-up F, 1F1B, cool-down.
  Schedule s = unwrap(makeSchedule("1f1b", params(4, 6)));
  std::vector<std::string> got;
  for (const Action &a : s.actions[1])
    got.push_back(formatAction(a));
  std::vector<std::string> want = {"1F0", "1F1", "1F2", "1B0", "1F3", "1B1",
                                   "1F4", "1B2", "1F5", "1B3", "1B4", "1B5"};
  EXPECT_EQ(got, want);
}

TEST(Generators, OneFOneBInFlightBound) {
  for (int S : {2, 4, 6})
    for (int M : {S, 2 * S + 1}) {
      Schedule s = unwrap(makeSchedule("1f1b", params(S, M)));
      for (int st = 0; st < S; ++st)
        EXPECT_EQ(maxInFlight(s, st), std::min(S - st, M));
      // GPipe holds all M everywhere.
      Schedule g = unwrap(makeSchedule("gpipe", params(S, M)));
      for (int st = 0; st < S; ++st)
        EXPECT_EQ(maxInFlight(g, st), M);
    }
}

TEST(Generators, InterleavedWarmupPerMegatron) {
  for (int S : {2, 4})
    for (int v : {2, 3})
      for (int M : {S, S + 1, 2 * S, 3 * S - 1}) {
        Schedule s = unwrap(makeSchedule("interleaved-1f1b", params(S, M, v)));
        EXPECT_EQ(s.numStages, S * v);
        for (int r = 0; r < S; ++r) {
          int total = M * v;
          // Megatron: 2(S-1-r) + (v-1) x group size; our first group takes
          // S + M mod S microbatches when S does not divide M.
          int group = M % S == 0 ? S : S + M % S;
          int w = std::min(2 * (S - 1 - r) + (v - 1) * group, total);
          // w = total - 1 is indistinguishable from "all warm-up".
          int expect = w >= total - 1 ? total : w;
          EXPECT_EQ(warmupCount(s, r), expect)
              << "S=" << S << " v=" << v << " M=" << M << " r=" << r;
        }
      }
  // Placement: virtual stage k on rank k % S; first forwards on rank 0 walk
  // microbatches 0..S-1 of chunk 0, then chunk 1.
  Schedule s = unwrap(makeSchedule("interleaved-1f1b", params(2, 4, 2)));
  EXPECT_EQ(s.stageRank[0], (std::vector<int>{0, 1, 0, 1}));
  std::vector<std::string> head;
  for (int i = 0; i < 5; ++i)
    head.push_back(formatAction(s.actions[0][i]));
  EXPECT_EQ(head,
            (std::vector<std::string>{"0F0", "0F1", "2F0", "2F1", "0F2"}));
}

TEST(Generators, ZBV_AndDualPipeVPlacementIsV) {
  for (const char *n : {"zb-v", "dualpipev"}) {
    Schedule s = unwrap(makeSchedule(n, params(4, 8)));
    EXPECT_EQ(s.numStages, 8);
    EXPECT_EQ(s.stageRank[0], (std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0}));
    EXPECT_TRUE(s.splitBackward);
    EXPECT_GT(countPhase(s, Phase::W), 0);
  }
  // ZB-H1 keeps 1F1B's warm-up and W count equals B count.
  Schedule z = unwrap(makeSchedule("zb-h1", params(4, 8)));
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(warmupCount(z, r), 3 - r);
  EXPECT_EQ(countPhase(z, Phase::W), 32);
  EXPECT_EQ(countPhase(z, Phase::BW), 0);
  // The last stage alternates F and B for its first S-1 steps (W deferred),
  // then adds one W per step (B, F, W), and ends with S deferred W's.
  std::vector<std::string> last;
  for (const Action &a : z.actions[3])
    last.push_back(formatAction(a));
  EXPECT_EQ(last, (std::vector<std::string>{
                      "3F0", "3I0", "3F1", "3I1", "3F2", "3I2", "3F3", "3I3",
                      "3F4", "3W0", "3I4", "3F5", "3W1", "3I5", "3F6", "3W2",
                      "3I6", "3F7", "3W3", "3I7", "3W4", "3W5", "3W6", "3W7"}));
}

/// Unit-time makespan: one past the last slot any compute action occupies.
int unitMakespan(const Schedule &s) {
  auto slots = unitTimeSlots(s);
  if (!slots) {
    ADD_FAILURE() << llvm::toString(slots.takeError());
    return -1;
  }
  int end = 0;
  for (size_t r = 0; r < s.actions.size(); ++r)
    for (size_t i = 0; i < s.actions[r].size(); ++i)
      if (s.actions[r][i].isCompute())
        end = std::max(end, (*slots)[r][i] + 1);
  return end;
}

TEST(Generators, ZBH1MakespanAndMemory) {
  // Qi et al. ICLR'24 §3.1: bubble (S-1)(F+B-W); with F = B = W = 1 slot the
  // batch takes 3M + S - 1 slots, and 1F1B's activation peak S - s holds.
  for (int S : {2, 3, 4, 8})
    for (int M : {S, 2 * S, 3 * S + 1}) {
      SCOPED_TRACE("S=" + std::to_string(S) + " M=" + std::to_string(M));
      Schedule z = unwrap(makeSchedule("zb-h1", params(S, M)));
      ASSERT_EQ(message(validate(z)), "");
      EXPECT_EQ(unitMakespan(z), 3 * M + S - 1);
      for (int st = 0; st < S; ++st) {
        EXPECT_EQ(maxInFlight(z, st), std::min(S - st, M)) << "stage " << st;
        // warmupCount() reads a warm-up of M - 1 as "all M" (M = S, rank 0).
        int w = S - 1 - st;
        EXPECT_EQ(warmupCount(z, st), w >= M - 1 ? M : w);
      }
      // Rank r ends with r + 1 W's (the W triangle) once M >= 2S - 1.
      if (M >= 2 * S - 1)
        for (int r = 0; r < S; ++r) {
          const auto &row = z.actions[r];
          int tailW = 0;
          for (auto it = row.rbegin();
               it != row.rend() && it->phase == Phase::W; ++it)
            ++tailW;
          EXPECT_EQ(tailW, r + 1) << "rank " << r;
        }
    }
  // The paper's S=4, M=8 example: 27 slots (the old greedy table took 30).
  EXPECT_EQ(unitMakespan(unwrap(makeSchedule("zb-h1", params(4, 8)))), 27);
}

TEST(Generators, ChimeraBasicUnitIs3SMinus2) {
  // Li & Hoefler SC'21 §3.2: with forward and backward one slot each the
  // basic unit (M = S) has S - 2 idle slots per rank: 3S - 2 slots.
  for (int S : {2, 4, 6, 8}) {
    Schedule c = unwrap(makeSchedule("chimera", params(S, S)));
    ASSERT_EQ(message(validate(c)), "");
    EXPECT_EQ(unitMakespan(c), 3 * S - 2) << "S=" << S;
  }
  // S = 4 is exactly the paper's Fig. 3 unit.
  Schedule c = unwrap(makeSchedule("chimera", params(4, 4)));
  EXPECT_EQ(exportCSV(c), "0F0,0F1,3F2,3B2,3F3,3B3,0B0,0B1\n"
                          "1F0,2F2,1F1,2F3,2B2,1B0,2B3,1B1\n"
                          "1F2,2F0,1F3,2F1,2B0,1B2,2B1,1B3\n"
                          "0F2,0F3,3F0,3B0,3F1,3B1,0B2,0B3\n");
  // Direct concatenation of k units: the next unit's forwards fill the
  // previous unit's bubbles, 2M + S - 2 slots (Table 2).
  for (int S : {2, 4, 6, 8})
    for (int k : {2, 3}) {
      Schedule ck = unwrap(makeSchedule("chimera", params(S, k * S)));
      ASSERT_EQ(message(validate(ck)), "");
      EXPECT_EQ(unitMakespan(ck), 2 * k * S + S - 2) << "S=" << S << " k=" << k;
      // Per (pipeline, stage) cap S - s: a rank holds at most
      // (S - r) + (r + 1) = S + 1 microbatches' activations.
      for (int peak : peakInFlightPerRank(ck))
        EXPECT_LE(peak, S + 1);
    }
}

TEST(Generators, ChimeraTwoPipelines) {
  Schedule s = unwrap(makeSchedule("chimera", params(4, 8)));
  ASSERT_EQ(s.numPipelines(), 2);
  EXPECT_EQ(s.stageRank[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(s.stageRank[1], (std::vector<int>{3, 2, 1, 0}));
  EXPECT_EQ(s.microbatchPipeline, (std::vector<int>{0, 0, 1, 1, 0, 0, 1, 1}));
  EXPECT_EQ(s.rankOf(0, 2), 3);
  EXPECT_EQ(s.rankOf(0, 0), 0);
  // Every rank runs both its down-stage and up-stage.
  for (int r = 0; r < 4; ++r) {
    bool down = false, up = false;
    for (const Action &a : s.actions[r]) {
      down |= s.pipelineOf(a.microbatch) == 0;
      up |= s.pipelineOf(a.microbatch) == 1;
    }
    EXPECT_TRUE(down && up) << r;
  }
}

TEST(Generators, HanayoWaves) {
  Schedule s = unwrap(makeSchedule("hanayo", params(3, 6, 0, 2)));
  EXPECT_EQ(s.numStages, 12);
  EXPECT_EQ(s.stageRank[0],
            (std::vector<int>{0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0}));
  EXPECT_EQ(s.stagesOnRank(0), 4);
}

TEST(Generators, PipeDreamWeightVersions) {
  Schedule s = unwrap(makeSchedule("pipedream", params(4, 8)));
  EXPECT_TRUE(s.async);
  // Rank 0: F0..F3 use version 0; after B0 the next F (mb 4) uses version 1;
  // B1 uses the stashed version of F1 (0).
  auto find = [&](int r, Phase ph, int mb) {
    for (const Action &a : s.actions[r])
      if (a.phase == ph && a.microbatch == mb)
        return a.weightVersion;
    return -2;
  };
  EXPECT_EQ(find(0, Phase::F, 3), 0);
  EXPECT_EQ(find(0, Phase::F, 4), 1);
  EXPECT_EQ(find(0, Phase::BW, 1), 0);
  EXPECT_EQ(find(0, Phase::F, 5), 2);
  EXPECT_EQ(find(0, Phase::BW, 5), 2);
  // Last stage: F k runs after k backwards.
  EXPECT_EQ(find(3, Phase::F, 6), 6);
  // 2BW: a version per batch of S=4 microbatches.
  Schedule t = unwrap(makeSchedule("pipedream-2bw", params(4, 12)));
  int maxV = 0;
  for (const Action &a : t.actions[3])
    maxV = std::max(maxV, a.weightVersion);
  EXPECT_EQ(maxV, 2); // 11 backwards before F11 -> floor(11/4)
  for (const auto &row : t.actions)
    for (const Action &a : row)
      EXPECT_GE(a.weightVersion, 0);
}

TEST(Generators, ForwardOnly) {
  Schedule s = unwrap(makeSchedule("forward-only", params(3, 4)));
  EXPECT_TRUE(s.forwardOnly);
  EXPECT_EQ(countPhase(s, Phase::F), 12);
  EXPECT_EQ(countPhase(s, Phase::BW), 0);
  auto low = unwrap(insertCommunication(s, StageGraph::chain(3)));
  for (const auto &row : low.actions)
    for (const Action &a : row)
      EXPECT_FALSE(a.isComm() && a.backward);
}

TEST(Generators, ImpossibleParametersFailLoudly) {
  EXPECT_EQ(message(makeSchedule("1f1b", params(4, 2))),
            "1f1b needs num-microbatches >= the number of ranks (4), got 2");
  EXPECT_EQ(message(makeSchedule("interleaved-1f1b", params(4, 3, 2))),
            "interleaved-1f1b needs num-microbatches >= the number of ranks "
            "(4), got 3");
  EXPECT_EQ(message(makeSchedule("chimera", params(3, 6))),
            "chimera needs an even num-stages (two bidirectional pipelines), "
            "got 3");
  EXPECT_EQ(message(makeSchedule("chimera", params(4, 6))),
            "chimera needs num-microbatches to be a multiple of num-stages (4) "
            "(basic units of 4 microbatches), got 6");
  EXPECT_EQ(message(makeSchedule("dualpipev", params(4, 7))),
            "dualpipev needs num-microbatches >= 2 x num-ranks (8), got 7");
  EXPECT_EQ(message(makeSchedule("zb-h1", params(4, 3))),
            "zb-h1 needs num-microbatches >= the number of ranks (4), got 3");
  EXPECT_EQ(message(makeSchedule("gpipe", params(4, 0))),
            "gpipe needs num-microbatches >= 1, got 0");
  EXPECT_EQ(message(makeSchedule("1f1b", params(4, 8, 2))),
            "1f1b uses 1 chunk(s) per rank; virtual-stages must be 1, got 2");
  ScheduleParams p;
  p.numStages = 7;
  p.virtualStages = 2;
  p.numMicrobatches = 8;
  EXPECT_EQ(message(makeSchedule("interleaved-1f1b", p)),
            "interleaved-1f1b: num-stages (7) must be a multiple of the chunks "
            "per rank (2)");
  p.numRanks = 4;
  EXPECT_EQ(
      message(makeSchedule("interleaved-1f1b", p)),
      "interleaved-1f1b: num-stages (7) must equal num-ranks (4) x chunks "
      "per rank (2)");
  EXPECT_NE(message(makeSchedule("nope", params(2, 2)))
                .find("unknown schedule 'nope'"),
            std::string::npos);
  EXPECT_EQ(message(makeSchedule("zb-h2", params(4, 3))),
            "zb-h2 needs num-microbatches >= the number of ranks (4), got 3");
  EXPECT_EQ(message(makeSchedule("interleaved-zb", params(4, 9, 2))),
            "interleaved-zb needs num-microbatches to be a multiple of the "
            "number of rounds max(1, floor(M / S)) = 2 (S = 4), got 9");
  EXPECT_EQ(listSchedules().size(), 15u);
}

TEST(Generators, NumStagesAloneWorks) {
  ScheduleParams p;
  p.numStages = 8;
  p.virtualStages = 2;
  p.numMicrobatches = 8;
  Schedule s = unwrap(makeSchedule("interleaved-1f1b", p));
  EXPECT_EQ(s.numRanks, 4);
  p.virtualStages = 0;
  Schedule g = unwrap(makeSchedule("gpipe", p));
  EXPECT_EQ(g.numRanks, 8);
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

TEST(Validate, MissingBackward) {
  Schedule s = unwrap(makeSchedule("1f1b", params(4, 4)));
  // Drop BW(stage 1, mb 3) from rank 1.
  auto &row = s.actions[1];
  row.erase(
      std::find(row.begin(), row.end(), Action::compute(Phase::BW, 1, 3)));
  EXPECT_EQ(message(validate(s)),
            "missing BW(stage 1, mb 3) (expected on rank 1)");
}

TEST(Validate, BackwardBeforeForward) {
  Schedule s = unwrap(makeSchedule("gpipe", params(4, 4)));
  auto &row = s.actions[2];
  // Move BW(2,3) in front of F(2,3).
  auto bw = std::find(row.begin(), row.end(), Action::compute(Phase::BW, 2, 3));
  Action a = *bw;
  row.erase(bw);
  row.insert(row.begin(), a);
  EXPECT_EQ(message(validate(s)),
            "rank 2: BW(stage 2, mb 3) appears before F(stage 2, mb 3)");
}

TEST(Validate, WrongRankDuplicateAndCycle) {
  Schedule s = unwrap(makeSchedule("gpipe", params(3, 2)));
  Schedule wrong = s;
  wrong.actions[0].push_back(Action::compute(Phase::F, 1, 0));
  EXPECT_EQ(
      message(validate(wrong)),
      "rank 0: F(stage 1, mb 0) belongs on rank 1 (stage 1 of pipeline 0)");
  Schedule dup = s;
  dup.actions[1].push_back(Action::compute(Phase::F, 1, 0));
  EXPECT_EQ(message(validate(dup)),
            "rank 1: F(stage 1, mb 0) appears twice (first at position 0)");
  // Cross-rank cycle: rank 0 runs BW(0,0) before F(0,1); rank 1 runs
  // F(1,1) before BW(1,0). BW(1,0) is needed by BW(0,0), and F(0,1) by F(1,1).
  Schedule cyc = unwrap(makeSchedule("gpipe", params(2, 2)));
  cyc.actions[0] = {
      Action::compute(Phase::F, 0, 0), Action::compute(Phase::BW, 0, 0),
      Action::compute(Phase::F, 0, 1), Action::compute(Phase::BW, 0, 1)};
  cyc.actions[1] = {
      Action::compute(Phase::F, 1, 0), Action::compute(Phase::F, 1, 1),
      Action::compute(Phase::BW, 1, 0), Action::compute(Phase::BW, 1, 1)};
  EXPECT_EQ(
      message(validate(cyc)),
      "no consistent execution order (cross-rank dependency cycle): "
      "rank 0 waits at BW(stage 0, mb 0) for BW(stage 1, mb 0) on rank 1; "
      "rank 1 waits at F(stage 1, mb 1) for F(stage 0, mb 1) on rank 0");
  // Forward-only tables may not hold backward actions.
  Schedule fo = unwrap(makeSchedule("forward-only", params(2, 2)));
  fo.actions[1].push_back(Action::compute(Phase::BW, 1, 0));
  EXPECT_EQ(message(validate(fo)),
            "rank 1: BW(stage 1, mb 0) in a forward-only schedule");
}

//===----------------------------------------------------------------------===//
// Communication
//===----------------------------------------------------------------------===//

TEST(Communication, OneFOneBPairs) {
  Schedule s = unwrap(makeSchedule("1f1b", params(2, 2)));
  Schedule c = unwrap(insertCommunication(s, StageGraph::chain(2)));
  std::vector<std::string> r0, r1;
  for (const Action &a : c.actions[0])
    r0.push_back(formatAction(a));
  for (const Action &a : c.actions[1])
    r1.push_back(formatAction(a));
  EXPECT_EQ(r0,
            (std::vector<std::string>{"0F0", "0SEND_F0", "0F1", "0SEND_F1",
                                      "0RECV_B0", "0B0", "0RECV_B1", "0B1"}));
  EXPECT_EQ(r1,
            (std::vector<std::string>{"1RECV_F0", "1F0", "1RECV_F1", "1B0",
                                      "1SEND_B0", "1F1", "1B1", "1SEND_B1"}));
  EXPECT_EQ(c.actions[0][1].peerRank, 1);
  EXPECT_EQ(c.actions[1][0].peerRank, 0);
}

TEST(Communication, ForwardChainSendsBeforeTheNextRecv) {
  // A middle rank of a forward chain forwards microbatch m before it waits
  // for microbatch m + 1 (both transfers happen at the same unit-time slot;
  // the other order made it hold m until m + 1 had arrived).
  for (const char *name : {"forward-only", "gpipe", "1f1b"}) {
    SCOPED_TRACE(name);
    Schedule s = unwrap(makeSchedule(name, params(4, 8)));
    Schedule c = unwrap(insertCommunication(s, StageGraph::chain(4)));
    for (int r = 1; r < 3; ++r) {
      std::vector<std::string> row;
      for (const Action &a : c.actions[r])
        row.push_back(formatAction(a));
      auto at = [&](const std::string &what) {
        auto it = llvm::find(row, what);
        EXPECT_NE(it, row.end()) << what;
        return it - row.begin();
      };
      for (int m = 0; m + 1 < 8; ++m) {
        std::string send = llvm::formatv("{0}SEND_F{1}", r, m).str();
        std::string recv = llvm::formatv("{0}RECV_F{1}", r, m + 1).str();
        if (std::string(name) == "1f1b" && m + 1 >= 4 - r)
          break; // steady state: the 1F1B table orders them itself
        EXPECT_LT(at(send), at(recv)) << "rank " << r << " mb " << m;
      }
    }
  }
  // The exact rows of forward-only on 3 ranks.
  Schedule f = unwrap(makeSchedule("forward-only", params(3, 2)));
  Schedule fc = unwrap(insertCommunication(f, StageGraph::chain(3)));
  std::vector<std::string> r1;
  for (const Action &a : fc.actions[1])
    r1.push_back(formatAction(a));
  EXPECT_EQ(r1, (std::vector<std::string>{"1RECV_F0", "1F0", "1SEND_F0",
                                          "1RECV_F1", "1F1", "1SEND_F1"}));
}

TEST(Communication, NaivePlacementDeadlockIsNamed) {
  // Sends right after the producer, recvs right before the consumer: the
  // classic 1F1B deadlock under rendezvous semantics.
  Schedule s = unwrap(makeSchedule("1f1b", params(2, 3)));
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
  EXPECT_EQ(message(validate(naive)), "");
  EXPECT_EQ(message(checkDeadlockFree(naive)),
            "deadlock: rank 0 waits on send to rank 1 (F stage 0 mb 1) -> "
            "rank 1 waits on send to rank 0 (B stage 1 mb 0) -> rank 0");
}

TEST(Communication, SwappedPairAndUnmatched) {
  Schedule s = unwrap(makeSchedule("gpipe", params(2, 2)));
  Schedule c = unwrap(insertCommunication(s, StageGraph::chain(2)));
  // Swap the order of the two forward recvs on rank 1: the sends of rank 0
  // now meet the wrong recv.
  Schedule swapped = c;
  auto &r1 = swapped.actions[1];
  std::vector<size_t> recvPos;
  for (size_t i = 0; i < r1.size(); ++i)
    if (r1[i].phase == Phase::Recv && !r1[i].backward)
      recvPos.push_back(i);
  ASSERT_EQ(recvPos.size(), 2u);
  std::swap(r1[recvPos[0]], r1[recvPos[1]]);
  EXPECT_EQ(message(checkDeadlockFree(swapped)),
            "mismatched send/recv: rank 0 posts SEND_F(stage 0 -> 1, mb 0) to "
            "rank 1, but rank 1 posts RECV_F(stage 1 <- 0, mb 1) from rank 0");
  // Drop a forward recv: rank 1 runs ahead to its gradient send while
  // rank 0 still blocks in the unmatched forward send.
  Schedule dropped = c;
  auto &d1 = dropped.actions[1];
  d1.erase(d1.begin() + recvPos[1]);
  EXPECT_EQ(message(checkDeadlockFree(dropped)),
            "deadlock: rank 0 waits on send to rank 1 (F stage 0 mb 1) -> "
            "rank 1 waits on send to rank 0 (B stage 1 mb 0) -> rank 0");
  EXPECT_EQ(message(validate(dropped)),
            "rank 1: missing RECV_F(stage 1 <- 0, mb 1)");
  // Drop rank 0's last gradient recv: rank 1's send has no partner left.
  Schedule tail = c;
  ASSERT_EQ(tail.actions[0][tail.actions[0].size() - 2].phase, Phase::Recv);
  tail.actions[0].erase(tail.actions[0].end() - 2);
  EXPECT_EQ(message(checkDeadlockFree(tail)),
            "unmatched send: rank 1 waits on send to rank 0 (B stage 1 mb 1), "
            "but rank 0 has finished its actions");
}

TEST(Communication, SkipConnectionsAndSameRankStages) {
  // 4 stages on 2 ranks (looped: 0,2 on rank 0; 1,3 on rank 1), skip edges
  // 0 -> 2 (same rank: no transfer) and 0 -> 3 (cross rank).
  Schedule s = unwrap(makeSchedule("interleaved-1f1b", params(2, 2, 2)));
  StageGraph g = StageGraph::chain(4, 1024);
  g.edges.push_back({0, 2, 8});
  g.edges.push_back({0, 3, 8});
  Schedule c = unwrap(insertCommunication(s, g));
  int skipF = 0, skipB = 0, sameRank = 0;
  for (const auto &row : c.actions)
    for (const Action &a : row) {
      if (!a.isComm())
        continue;
      int lo = std::min(a.stage, a.peerStage),
          hi = std::max(a.stage, a.peerStage);
      if (lo == 0 && hi == 3)
        (a.backward ? skipB : skipF)++;
      if (lo == 0 && hi == 2)
        ++sameRank;
    }
  EXPECT_EQ(skipF, 4); // send + recv per microbatch
  EXPECT_EQ(skipB, 4);
  EXPECT_EQ(sameRank, 0);
  EXPECT_EQ(message(checkDeadlockFree(c)), "");
  // Skip edges survive CSV with the "@" suffix.
  std::string csv = exportCSV(c);
  EXPECT_NE(csv.find("0SEND_F0@3"), std::string::npos);
  EXPECT_NE(csv.find("3RECV_F0@0"), std::string::npos);
  Schedule back = unwrap(importCSV(csv));
  EXPECT_EQ(exportCSV(back), csv);
}

//===----------------------------------------------------------------------===//
// CSV
//===----------------------------------------------------------------------===//

TEST(CSV, TorchActionStrings) {
  EXPECT_EQ(formatAction(Action::compute(Phase::F, 0, 0)), "0F0");
  EXPECT_EQ(formatAction(Action::compute(Phase::BW, 1, 3)), "1B3");
  EXPECT_EQ(formatAction(Action::compute(Phase::B, 1, 3)), "1I3");
  EXPECT_EQ(formatAction(Action::compute(Phase::W, 2, 1)), "2W1");
  EXPECT_EQ(formatAction(Action::send(0, 1, 1, 1, false)), "0SEND_F1");
  EXPECT_EQ(formatAction(Action::recv(1, 0, 2, 2, true)), "1RECV_B0");
  auto a = unwrap(parseAction(" 12RECV_F7 "));
  EXPECT_EQ(a.phase, Phase::Recv);
  EXPECT_EQ(a.stage, 12);
  EXPECT_EQ(a.microbatch, 7);
  EXPECT_EQ(a.peerStage, 11);
  EXPECT_FALSE(a.backward);
  EXPECT_EQ(unwrap(parseAction("3I2")).phase, Phase::B);
  EXPECT_EQ(unwrap(parseAction("3B2")).phase, Phase::BW);
  // torch-only types are named as such (importCSV skips them).
  EXPECT_NE(message(parseAction("0UNSHARD"))
                .find("UNSHARD (FSDP unshard) is a torch-only action"),
            std::string::npos);
  EXPECT_NE(message(parseAction("0X1")).find("unknown type 'X'"),
            std::string::npos);
  EXPECT_NE(message(parseAction("F0")).find("invalid action 'F0'"),
            std::string::npos);
  // Negative indices are invalid actions, not an empty schedule.
  EXPECT_NE(message(parseAction("0F-1"))
                .find("invalid action '0F-1': missing or bad microbatch index"),
            std::string::npos);
  EXPECT_NE(message(parseAction("0SEND_F1@-2"))
                .find("invalid action '0SEND_F1@-2': bad peer stage"),
            std::string::npos);
}

TEST(CSV, RoundTripAndTorchInput) {
  Schedule s = unwrap(makeSchedule("1f1b", params(2, 3)));
  std::string csv = exportCSV(s);
  EXPECT_EQ(csv, "0F0,0F1,0B0,0F2,0B1,0B2\n1F0,1B0,1F1,1B1,1F2,1B2\n");
  Schedule back = unwrap(importCSV(csv));
  EXPECT_EQ(back.actions, s.actions);
  EXPECT_EQ(back.stageRank, s.stageRank);
  EXPECT_FALSE(back.splitBackward);
  // torch's writer: "\r\n" rows and empty cells for idle steps.
  Schedule t = unwrap(
      importCSV("0F0,0F1,,0B0,0F2,0B1,0B2\r\n,1F0,1B0,1F1,1B1,1F2,1B2\r\n"));
  EXPECT_EQ(t.actions, s.actions);
  // Chimera: two placements are inferred from where the computes run.
  Schedule ch = unwrap(makeSchedule("chimera", params(2, 4)));
  Schedule chBack = unwrap(importCSV(exportCSV(ch)));
  EXPECT_EQ(chBack.stageRank, ch.stageRank);
  EXPECT_EQ(chBack.microbatchPipeline, ch.microbatchPipeline);
  // Split backward is recognised from I/W.
  Schedule zb =
      unwrap(importCSV(exportCSV(unwrap(makeSchedule("zb-h1", params(2, 2))))));
  EXPECT_TRUE(zb.splitBackward);
}

TEST(CSV, DeadlockingHandWrittenCSVIsRejected) {
  // Both ranks send first: rank 0 sends F of mb 0 while rank 1 sends the
  // gradient of mb 0 before posting its recv.
  std::string csv = "0F0,0SEND_F0,0RECV_B0,0B0\n"
                    "1SEND_B0,1RECV_F0,1F0,1B0\n";
  // (That table is also invalid dataflow: the gradient is sent before B.)
  EXPECT_NE(message(importCSV(csv)), "");
  std::string dl = "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n"
                   "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1\n";
  // Swap rank 1 to recv mb 1 only after sending B0 -- fine; make it wait on
  // B of mb 1 first instead, which deadlocks.
  EXPECT_EQ(message(importCSV(dl)),
            "deadlock: rank 0 waits on send to rank 1: 0SEND_F1 (activation, "
            "stage 0 -> 1, mb 1) -> rank 1 waits on send to rank 0: 1SEND_B0 "
            "(gradient, stage 1 -> 0, mb 0) -> rank 0");
}

TEST(CSV, HugeIndicesAreRejectedBeforeAllocating) {
  // Used to size per-microbatch tables by the index: "out of memory" abort.
  EXPECT_EQ(message(importCSV("0F0,0F2000000000\n1F0\n2F0\n3F0\n")),
            "line 1 (rank 0), cell 2: action '0F2000000000' has microbatch "
            "index 2000000000, more than the largest supported microbatch "
            "index 65535");
  EXPECT_NE(message(importCSV("0F0\n1F0\n70000F0\n"))
                .find("line 3 (rank 2), cell 1: action '70000F0' has stage "
                      "index 70000"),
            std::string::npos);
  EXPECT_NE(message(importCSV("0F0,0SEND_F0@99999\n1F0\n"))
                .find("peer stage index 99999"),
            std::string::npos);
  // 65535 is within the bound (whatever else is wrong with this table).
  EXPECT_EQ(message(importCSV("0F0,0F65535\n")).find("largest supported"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Views
//===----------------------------------------------------------------------===//

TEST(Views, GridOf1F1B) {
  Schedule s = unwrap(makeSchedule("1f1b", params(2, 2)));
  EXPECT_EQ(renderGrid(s),
            "1f1b: 2 ranks, 2 stages, 2 microbatches, 6 unit-time slots\n"
            "rank 0 | F0  F1  .   BW0 .   BW1\n"
            "rank 1 | .   F0  BW0 F1  BW1 .\n");
  auto slots = unwrap(unitTimeSlots(s));
  EXPECT_EQ(slots[1], (std::vector<int>{1, 2, 3, 4}));
}

TEST(Views, PeakInFlightPerRank) {
  Schedule s = unwrap(makeSchedule("interleaved-1f1b", params(2, 4, 2)));
  auto peak = peakInFlightPerRank(s);
  ASSERT_EQ(peak.size(), 2u);
  // Rank 0 warm-up: min(2*1 + 1*2, 8) = 4, then one more F before its first
  // backward -> 5 chunk-activations.
  EXPECT_EQ(peak[0], 5);
  EXPECT_EQ(numComputeActions(s, 0), 16);
}

} // namespace
