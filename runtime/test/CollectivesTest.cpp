//===- CollectivesTest.cpp - split and collectives over loopback --------===//
//
// Communicator::split, startAllReduceSum, startReduceScatterSum and
// startAllGather of the loopback communicator, on 4 ranks (threads).
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Communicator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

using namespace pipeopt::rt;

namespace {

/// What a rank's body threw, if anything.
struct Outcome {
  std::string error;
  bool timeout = false, peerExited = false;
};

/// Runs `body(rank, comm)` on `n` loopback ranks (threads); a rank's
/// communicator is closed when its body returns or throws.
std::vector<Outcome>
runRanks(int n, const std::function<void(int, Communicator &)> &body) {
  LoopbackWorld world(n);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < n; ++r)
    comms.push_back(world.communicator(r));
  std::vector<Outcome> out(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      Outcome &o = out[size_t(r)];
      try {
        body(r, *comms[size_t(r)]);
      } catch (const TimeoutError &e) {
        o.error = e.what();
        o.timeout = true;
      } catch (const PeerExitedError &e) {
        o.error = e.what();
        o.peerExited = true;
      } catch (const std::exception &e) {
        o.error = e.what();
      }
      comms[size_t(r)]->close();
    });
  for (auto &t : threads)
    t.join();
  return out;
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

uint64_t bits(double x) {
  uint64_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
}

MessageHeader control(int tag) {
  MessageHeader h;
  h.kind = MessageHeader::Control;
  h.tag = tag;
  h.seal();
  return h;
}

void expectAllOk(const std::vector<Outcome> &out) {
  for (size_t r = 0; r < out.size(); ++r)
    EXPECT_EQ(out[r].error, "") << "rank " << r;
}

TEST(LoopbackCollectives, SplitRanksByKeyAndKeepsMessagesApart) {
  // Colors 0/1 by parity; key -r reverses the order: world ranks {2, 0}
  // form the first group, {3, 1} the second.
  std::vector<int> subRank(4, -1), subSize(4, -1), got(4, -1), gotWorld(4);
  auto out = runRanks(4, [&](int r, Communicator &world) {
    int peerWorld = r ^ 2; // the other member of the group
    // A world message to the same peer, sent before the split: it must not
    // be received by the sub-communicator.
    world.send(peerWorld, control(100 + r), nullptr, 0, 5);
    auto sub = world.split(r % 2, -r, 5);
    subRank[size_t(r)] = sub->rank();
    subSize[size_t(r)] = sub->size();
    sub->send(1 - sub->rank(), control(r), nullptr, 0, 5);
    got[size_t(r)] = sub->recv(1 - sub->rank(), 5).header.tag;
    gotWorld[size_t(r)] = world.recv(peerWorld, 5).header.tag;
  });
  expectAllOk(out);
  EXPECT_EQ(subRank, (std::vector<int>{1, 1, 0, 0}));
  EXPECT_EQ(subSize, (std::vector<int>{2, 2, 2, 2}));
  EXPECT_EQ(got, (std::vector<int>{2, 3, 0, 1}));
  EXPECT_EQ(gotWorld, (std::vector<int>{102, 103, 100, 101}));
}

TEST(LoopbackCollectives, SplitTiesAreRankOrderAndSiblingsDoNotCross) {
  // Equal keys: ranks keep their order. Both groups run an all-reduce as
  // their collective #0 at the same time and send 0 -> 1 messages.
  std::vector<double> sums(4);
  std::vector<int> tags(4, -1), ranks(4, -1);
  auto out = runRanks(4, [&](int r, Communicator &world) {
    auto sub = world.split(r / 2, 7, 5); // {0,1} and {2,3}
    ranks[size_t(r)] = sub->rank();
    double x = double(r + 1) * 10;
    sub->startAllReduceSum(&x, 1)->wait(5);
    sums[size_t(r)] = x;
    if (sub->rank() == 0)
      sub->send(1, control(r), nullptr, 0, 5);
    else
      tags[size_t(r)] = sub->recv(0, 5).header.tag;
  });
  expectAllOk(out);
  EXPECT_EQ(ranks, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(sums, (std::vector<double>{30, 30, 70, 70}));
  EXPECT_EQ(tags[1], 0);
  EXPECT_EQ(tags[3], 2);
}

TEST(LoopbackCollectives, AllReduceReduceScatterAllGatherExact) {
  // Small integers and halves: every float sum is exact.
  const size_t block = 3;
  std::vector<std::vector<double>> ar(4), rs(4);
  std::vector<std::vector<int32_t>> ag(4);
  auto out = runRanks(4, [&](int r, Communicator &c) {
    std::vector<double> a(5);
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = double(r + 1) * double(i) + 0.5 * r;
    c.startAllReduceSum(a.data(), a.size())->wait(5);
    ar[size_t(r)] = a;

    std::vector<double> send(4 * block), recv(block, -1);
    for (size_t i = 0; i < send.size(); ++i)
      send[i] = double(100 * r) + double(i);
    c.startReduceScatterSum(send.data(), recv.data(), block)->wait(5);
    rs[size_t(r)] = recv;

    int32_t mine[2] = {r, -10 * r};
    std::vector<int32_t> all(8, 0);
    c.startAllGather(mine, all.data(), sizeof(mine))->wait(5);
    ag[size_t(r)] = all;
  });
  expectAllOk(out);
  for (int r = 0; r < 4; ++r) {
    // sum_r ((r+1) i + r/2) = 10 i + 3.
    for (size_t i = 0; i < 5; ++i)
      EXPECT_EQ(ar[size_t(r)][i], 10.0 * double(i) + 3.0) << r << " " << i;
    // Block r, element j: sum_q (100 q + 3 r + j) = 600 + 4 (3 r + j).
    for (size_t j = 0; j < block; ++j)
      EXPECT_EQ(rs[size_t(r)][j], 600.0 + 4.0 * double(3 * r + int(j)))
          << r << " " << j;
    EXPECT_EQ(ag[size_t(r)],
              (std::vector<int32_t>{0, 0, 1, -10, 2, -20, 3, -30}));
  }
}

TEST(LoopbackCollectives, SumsInAscendingRankOrderWithIdenticalBits) {
  // Order matters here: 1e16 + 1 rounds back to 1e16 (the spacing of
  // doubles at 1e16 is 2), so the sum depends on the order of additions.
  const double x[4] = {1e16, 1.0, -1e16, 1.0};
  double ascending = ((x[0] + x[1]) + x[2]) + x[3];
  double descending = ((x[3] + x[2]) + x[1]) + x[0];
  ASSERT_NE(bits(ascending), bits(descending)); // the case is order-sensitive
  std::vector<double> ar(4), rs(4);
  auto out = runRanks(4, [&](int r, Communicator &c) {
    double v = x[r];
    c.startAllReduceSum(&v, 1)->wait(5);
    ar[size_t(r)] = v;
    // Every block carries the same values: every rank's result is the
    // same sum of the same four numbers.
    double send[4] = {x[r], x[r], x[r], x[r]};
    double recv = 0;
    c.startReduceScatterSum(send, &recv, 1)->wait(5);
    rs[size_t(r)] = recv;
  });
  expectAllOk(out);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(bits(ar[size_t(r)]), bits(ascending)) << r;
    EXPECT_EQ(bits(rs[size_t(r)]), bits(ascending)) << r;
  }
}

TEST(LoopbackCollectives, InPlaceReduceScatterAndAllGather) {
  std::vector<std::vector<double>> res(3);
  auto out = runRanks(3, [&](int r, Communicator &c) {
    // Reduce-scatter into this rank's own block of the input, then an
    // all-gather from that block in place: an all-reduce in two steps.
    std::vector<double> buf = {double(r), double(2 * r), double(4 * r + 1)};
    c.startReduceScatterSum(buf.data(), buf.data() + r, 1)->wait(5);
    c.startAllGather(buf.data() + r, buf.data(), sizeof(double))->wait(5);
    res[size_t(r)] = buf;
  });
  expectAllOk(out);
  for (auto &v : res)
    EXPECT_EQ(v, (std::vector<double>{3, 6, 15}));
}

TEST(LoopbackCollectives, SeveralInFlightComplete) {
  // Every rank starts three collectives before waiting for any; rank 3
  // joins late, so the others' requests are not complete until it has.
  std::atomic<int> earlyComplete{0};
  std::vector<std::vector<double>> res(4);
  auto out = runRanks(4, [&](int r, Communicator &c) {
    if (r == 3)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    double a = r, b = 10.0 * r;
    double send[4] = {1, 2, 3, 4}, recv = 0;
    auto ra = c.startAllReduceSum(&a, 1);
    auto rb = c.startAllReduceSum(&b, 1);
    auto rc = c.startReduceScatterSum(send, &recv, 1);
    if (r != 3 && (ra->test() || rb->test() || rc->test()))
      ++earlyComplete;
    rc->wait(5); // out of order: the last first
    ra->wait(5);
    rb->wait(5);
    EXPECT_TRUE(ra->test());
    res[size_t(r)] = {a, b, recv};
  });
  expectAllOk(out);
  EXPECT_EQ(earlyComplete.load(), 0);
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(res[size_t(r)], (std::vector<double>{6, 60, 4.0 * (r + 1)}));
}

TEST(LoopbackCollectives, TimeoutWhenAMemberNeverJoins) {
  std::atomic<int> gaveUp{0};
  auto start = std::chrono::steady_clock::now();
  auto out = runRanks(4, [&](int r, Communicator &c) {
    if (r == 3) { // alive, but never starts the collective
      while (gaveUp < 3)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return;
    }
    double v = 1;
    auto req = c.startAllReduceSum(&v, 1);
    try {
      req->wait(0.3);
    } catch (...) {
      ++gaveUp;
      throw;
    }
  });
  double s = seconds(start);
  EXPECT_LT(s, 5.0);
  EXPECT_GE(s, 0.25);
  int timeouts = 0;
  for (int r = 0; r < 3; ++r) {
    ASSERT_NE(out[size_t(r)].error, "") << r;
    timeouts += out[size_t(r)].timeout;
    // The first to time out says so; the others may learn it from it.
    EXPECT_NE(out[size_t(r)].error.find("rank 3"), std::string::npos)
        << out[size_t(r)].error;
  }
  EXPECT_GE(timeouts, 1);
  EXPECT_EQ(out[3].error, "");
  bool named = false;
  for (int r = 0; r < 3; ++r)
    named |= out[size_t(r)].error.find(
                 "timed out after 0.3 s in collective #0 (an all-reduce of 1 "
                 "doubles) waiting for rank 3") != std::string::npos;
  EXPECT_TRUE(named) << out[0].error;
}

TEST(LoopbackCollectives, AClosedMemberFailsTheOthersAtOnce) {
  auto start = std::chrono::steady_clock::now();
  auto out = runRanks(4, [&](int r, Communicator &c) {
    if (r == 2)
      return; // exits without joining; runRanks closes its communicator
    double v = 1;
    c.startAllReduceSum(&v, 1)->wait(30);
  });
  EXPECT_LT(seconds(start), 5.0); // not the 30 s timeout
  for (int r : {0, 1, 3}) {
    EXPECT_TRUE(out[size_t(r)].peerExited) << out[size_t(r)].error;
    EXPECT_NE(out[size_t(r)].error.find(
                  "rank 2 exited (finished or failed) without taking part in "
                  "collective #0"),
              std::string::npos)
        << out[size_t(r)].error;
  }
}

TEST(LoopbackCollectives, AClosedMemberFailsItsSubCommunicator) {
  // World rank 3 (rank 1 of {1, 3}) fails after the split; rank 1 waits in
  // the sub-communicator's all-reduce and fails at once. The other group
  // is unaffected.
  auto start = std::chrono::steady_clock::now();
  std::vector<double> sums(4, 0);
  auto out = runRanks(4, [&](int r, Communicator &c) {
    auto sub = c.split(r % 2, r, 5);
    if (r == 3)
      throw RuntimeError("rank 3 failed");
    double v = r + 1;
    sub->startAllReduceSum(&v, 1)->wait(30);
    sums[size_t(r)] = v;
  });
  EXPECT_LT(seconds(start), 5.0);
  EXPECT_EQ(out[0].error, "");
  EXPECT_EQ(out[2].error, "");
  EXPECT_EQ(sums[0], 4.0);
  EXPECT_EQ(sums[2], 4.0);
  EXPECT_TRUE(out[1].peerExited) << out[1].error;
  EXPECT_NE(out[1].error.find("rank 1 (world rank 3) exited"),
            std::string::npos)
      << out[1].error;
  EXPECT_NE(out[1].error.find("of a 2-rank sub-communicator"),
            std::string::npos)
      << out[1].error;
}

TEST(LoopbackCollectives, MismatchedCollectivesAreAnError) {
  auto out = runRanks(2, [&](int r, Communicator &c) {
    std::vector<double> v(4 + size_t(r), 1.0);
    c.startAllReduceSum(v.data(), v.size())->wait(5);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(out[size_t(r)].error.find("every rank must start the same "
                                        "collectives in the same order"),
              std::string::npos)
        << out[size_t(r)].error;
    EXPECT_NE(out[size_t(r)].error.find("an all-reduce of 5 doubles"),
              std::string::npos)
        << out[size_t(r)].error;
  }
}

TEST(LoopbackCollectives, NegativeColorIsAnError) {
  auto out = runRanks(1, [&](int, Communicator &c) { c.split(-1, 0, 1); });
  EXPECT_NE(out[0].error.find("split with color -1 (colors must be >= 0"),
            std::string::npos)
      << out[0].error;
}

} // namespace
