//===- MpiCollectivesTest.cpp - MPI split + collectives (mpirun -np 4) ---===//
//
// Not a gtest binary: ctest runs `mpirun -np 4 MpiCollectivesTest`. Checks
//   1. split by parity with a reversing key: ranks, sizes, and that a
//      sub-communicator's messages do not match the world's;
//   2. all-reduce, reduce-scatter and all-gather with exact values, on the
//      world communicator and on a sub-communicator, several in flight;
//   3. an order-sensitive all-reduce of 4 ranks: every rank gets the same
//      bits, and a reduce-scatter of the same values the same bits (what
//      Open MPI 4.1 does, Communicator.h; not an MPI promise);
//   4. a timeout: rank 3 never joins an all-reduce of the others' 3-rank
//      sub-communicator; they get a TimeoutError within the 1 s timeout;
//   5. ZeRO-1 (ShardedOptimizer, AdamW, 3 steps) over MPI: D = 2 replicas of
//      2 pipeline ranks against the unsharded update computed here (the sum
//      of 2 numbers is exact whatever the order), and D = 4 against the
//      unsharded update with MPI's all-reduce.
// Exit status 0 on success on every rank.
//
//===----------------------------------------------------------------------===//

#include "../lib/ShardedOptimizer.h"
#include "pipeopt/runtime/Communicator.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace pipeopt::rt;

static int failures = 0;
static int rank = -1;
#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "rank %d: FAILED %s: ", rank, #cond);               \
      std::fprintf(stderr, __VA_ARGS__);                                       \
      std::fprintf(stderr, "\n");                                              \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

static MessageHeader control(int tag) {
  MessageHeader h;
  h.kind = MessageHeader::Control;
  h.tag = tag;
  h.seal();
  return h;
}

static uint64_t bits(double x) {
  uint64_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
}

/// Deterministic gradient values of mixed signs and magnitudes.
static double value(uint64_t seed) {
  seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  seed ^= seed >> 29;
  seed *= 0xbf58476d1ce4e5b9ULL;
  seed ^= seed >> 32;
  double unit = double(seed >> 11) / double(1ULL << 53) * 2 - 1;
  return unit * double(1 << (seed % 7)) / 8;
}

static std::vector<double> grads(int r, int d, int s, int p, size_t n) {
  std::vector<double> g(n);
  for (size_t i = 0; i < n; ++i)
    g[i] = value(uint64_t(7919 * r + 1009 * d + 101 * s + 13 * p) * 64 + i);
  return g;
}

/// 3 AdamW steps of ZeRO-1 on group `dp` (D replicas, this one d) of
/// pipeline rank r; the unsharded reference sums with `sumAll` (given this
/// replica's sums of one parameter, returns the sum over the group).
static void
zero1(Communicator &dp, int r,
      const std::function<std::vector<double>(int, int, std::vector<double>)>
          &sumAll) {
  int D = dp.size(), d = dp.rank();
  std::map<int, size_t> sizes = {{0, 5}, {1, 2}, {4, 6}}; // N = 13
  TrainingConfig c;
  c.optimizer = OptimizerKind::AdamW;
  c.lr = 0.01;
  c.weightDecay = 0.1;
  double scale = 1.0 / (3.0 * D); // M = 3 microbatches
  ShardedOptimizer opt(sizes, D, d);
  std::map<int, std::vector<double>> w, ref;
  std::map<int, OptimizerState> refState;
  for (auto &e : sizes)
    for (size_t i = 0; i < e.second; ++i)
      w[e.first].push_back(value(uint64_t(e.first) * 100 + i + 5000));
  ref = w;
  for (int s = 0; s < 3; ++s) {
    std::map<int, std::vector<double>> sums;
    for (auto &e : sizes) {
      sums[e.first] = grads(r, d, s, e.first, e.second);
      std::vector<double> total = sumAll(s, e.first, sums[e.first]);
      for (double &x : total)
        x *= scale;
      optimizerStep(c, ref[e.first], total, refState[e.first]);
    }
    opt.step(dp, c, sums, w, scale, 10.0);
    for (auto &e : sizes)
      for (size_t i = 0; i < e.second; ++i)
        EXPECT(bits(w[e.first][i]) == bits(ref[e.first][i]),
               "ZeRO-1 D=%d step %d parameter %d element %zu: %.17g, "
               "unsharded %.17g",
               D, s, e.first, i, w[e.first][i], ref[e.first][i]);
  }
  auto full = opt.gather(dp, 10.0);
  if (d == 0)
    for (auto &e : sizes) {
      const OptimizerState &got = full.at(e.first).first;
      EXPECT(got.step == 3, "step %lld", (long long)got.step);
      for (size_t i = 0; i < e.second; ++i)
        EXPECT(bits(got.second[i]) == bits(refState[e.first].second[i]),
               "ZeRO-1 D=%d gathered v of parameter %d element %zu", D, e.first,
               i);
    }
}

static void run() {
  auto world = createMpiCommunicator();
  const double t = 10.0;

  // 1. split: colors by parity, key -rank: {2, 0} and {3, 1}.
  int peer = rank ^ 2;
  world->send(peer, control(100 + rank), nullptr, 0, t);
  auto sub = world->split(rank % 2, -rank, t);
  EXPECT(sub->size() == 2, "size %d", sub->size());
  EXPECT(sub->rank() == (rank < 2 ? 1 : 0), "sub rank %d", sub->rank());
  sub->send(1 - sub->rank(), control(rank), nullptr, 0, t);
  int got = sub->recv(1 - sub->rank(), t).header.tag;
  EXPECT(got == peer, "sub-communicator message tag %d, expected %d", got,
         peer);
  int gotWorld = world->recv(peer, t).header.tag;
  EXPECT(gotWorld == 100 + peer, "world message tag %d", gotWorld);
  sub->flush(t);
  world->flush(t);

  // 2. exact values, several collectives in flight on both communicators.
  std::vector<double> a(5);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = double(rank + 1) * double(i) + 0.5 * rank;
  std::vector<double> send(8), recv(2, -1);
  for (size_t i = 0; i < send.size(); ++i)
    send[i] = 100.0 * rank + double(i);
  int32_t mine[2] = {rank, -10 * rank};
  std::vector<int32_t> all(8, 0);
  double s = rank + 1;
  auto r1 = world->startAllReduceSum(a.data(), a.size());
  auto r2 = sub->startAllReduceSum(&s, 1);
  auto r3 = world->startReduceScatterSum(send.data(), recv.data(), 2);
  auto r4 = world->startAllGather(mine, all.data(), sizeof(mine));
  r4->wait(t);
  r3->wait(t);
  r2->wait(t);
  r1->wait(t);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT(a[i] == 10.0 * double(i) + 3.0, "all-reduce [%zu] = %g", i, a[i]);
  // Ranks {0, 2} sum 1 + 3, ranks {1, 3} sum 2 + 4.
  EXPECT(s == (rank % 2 ? 6.0 : 4.0), "sub all-reduce %g", s);
  for (int j = 0; j < 2; ++j) {
    double want = 600.0 + 4.0 * (2 * rank + j);
    EXPECT(recv[size_t(j)] == want, "reduce-scatter [%d] = %g, expected %g", j,
           recv[size_t(j)], want);
  }
  EXPECT(all == (std::vector<int32_t>{0, 0, 1, -10, 2, -20, 3, -30}),
         "all-gather differs");

  // 3. order-sensitive values: 1e16 + 1 rounds back to 1e16.
  const double x[4] = {1e16, 1.0, -1e16, 1.0};
  double v = x[rank];
  world->startAllReduceSum(&v, 1)->wait(t);
  uint64_t mineBits = bits(v), everyBits[4];
  world->startAllGather(&mineBits, everyBits, sizeof(mineBits))->wait(t);
  for (int r = 0; r < 4; ++r)
    EXPECT(everyBits[r] == mineBits, "rank %d got other bits than rank %d", r,
           rank);
  // The reduce-scatter of the same values gives the all-reduce's bits
  // (Open MPI 4.1's libnbc reduces both along the same binomial tree).
  double blocks[4] = {x[rank], x[rank], x[rank], x[rank]}, mineRs = 0;
  world->startReduceScatterSum(blocks, &mineRs, 1)->wait(t);
  EXPECT(bits(mineRs) == mineBits,
         "reduce-scatter %.17g differs from the all-reduce %.17g", mineRs, v);
  std::printf("rank %d: order-sensitive 4-rank all-reduce = %.17g (ascending "
              "order gives %.17g)\n",
              rank, v, ((x[0] + x[1]) + x[2]) + x[3]);

  // 4. a member that never joins: ranks 0-2 form a group, rank 3 a group of
  // its own, which waits for the others to give up (a final all-reduce
  // on the world).
  auto three = world->split(rank == 3 ? 1 : 0, rank, t);
  if (rank != 3) {
    // 0-2 wait for rank 3 in a world all-reduce that it joins late.
    double w = 1;
    auto req = world->startAllReduceSum(&w, 1);
    auto start = std::chrono::steady_clock::now();
    std::string err;
    try {
      req->wait(1.0);
    } catch (const TimeoutError &e) {
      err = e.what();
    }
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    EXPECT(err.find("timed out after 1 s in all-reduce #") == 0, "got '%s'",
           err.c_str());
    EXPECT(secs >= 0.9 && secs < 8, "timeout took %.2f s", secs);
    // Rank 3 joins now; the request completes after all.
    three->startAllReduceSum(&w, 1)->wait(t); // a barrier of ranks 0-2
    double done = 0;
    world->startAllReduceSum(&done, 1)->wait(t);
  } else {
    // Joins the world all-reduce only after the others timed out, then the
    // final one.
    double only = 5;
    three->startAllReduceSum(&only, 1)->wait(t);
    EXPECT(only == 5, "1-rank all-reduce %g", only);
    double done = 0;
    std::vector<double> w(1, 1);
    // Stalled (no status answers either) until the others gave up.
    std::this_thread::sleep_for(std::chrono::seconds(4));
    world->startAllReduceSum(w.data(), 1)->wait(t);
    world->startAllReduceSum(&done, 1)->wait(t);
  }

  // 5. ZeRO-1: D = 2 replicas of P = 2 pipeline ranks (global rank
  // d*P + r), then D = 4 on the world.
  {
    int r = rank % 2, d = rank / 2;
    auto dp = world->split(r, d, t);
    zero1(*dp, r, [&](int s, int p, std::vector<double> mine) {
      std::vector<double> other = grads(r, 1 - d, s, p, mine.size());
      for (size_t i = 0; i < mine.size(); ++i)
        mine[i] += other[i];
      return mine;
    });
    zero1(*world, 0, [&](int, int, std::vector<double> mine) {
      world->startAllReduceSum(mine.data(), mine.size())->wait(t);
      return mine;
    });
  }
}

int main(int argc, char **argv) {
  mpiInitialize(&argc, &argv);
  rank = mpiWorldRank();
  if (mpiWorldSize() != 4) {
    std::fprintf(stderr, "run with mpirun -np 4\n");
    mpiFinalize();
    return 2;
  }
  try {
    run();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "rank %d: FAILED with an exception: %s\n", rank,
                 e.what());
    ++failures;
  }
  mpiFinalize();
  if (failures == 0)
    std::printf("rank %d: MPI COLLECTIVES PASS\n", rank);
  return failures ? 1 : 0;
}
