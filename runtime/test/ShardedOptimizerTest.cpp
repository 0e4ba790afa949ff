//===- ShardedOptimizerTest.cpp - ZeRO-1 against the unsharded update ----===//
//
// ShardedOptimizer (runtime/lib/ShardedOptimizer.h) on loopback threads:
// D replicas of P = 2 pipeline ranks (global rank d*P + r, the data-parallel
// groups made with split), compared bit for bit with the unsharded update
// computed here on one thread (the replicas' gradient sums added in
// ascending replica order, times the scale, optimizerStep on the full
// vectors).
//
//===----------------------------------------------------------------------===//

#include "../lib/ShardedOptimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <thread>

using namespace pipeopt::rt;

namespace {

using Vectors = std::map<int, std::vector<double>>;

uint64_t bits(double x) {
  uint64_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
}

/// Bitwise equality of two vectors (with the first differing element).
::testing::AssertionResult sameBits(const std::vector<double> &a,
                                    const std::vector<double> &b) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure()
           << "sizes " << a.size() << " and " << b.size();
  for (size_t i = 0; i < a.size(); ++i)
    if (bits(a[i]) != bits(b[i]))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " vs " << b[i];
  return ::testing::AssertionSuccess();
}

/// The same dtype and the same bits in every element.
::testing::AssertionResult sameState(const StateBuffer &a,
                                     const StateBuffer &b) {
  if (a.dtype() != b.dtype())
    return ::testing::AssertionFailure()
           << dtypeName(a.dtype()) << " and " << dtypeName(b.dtype());
  return sameBits(a.toDoubles(), b.toDoubles());
}

/// Deterministic values of mixed signs and magnitudes (1e-2 .. 1e2), so
/// that sums depend on their order.
double value(uint64_t seed) {
  seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  seed ^= seed >> 29;
  seed *= 0xbf58476d1ce4e5b9ULL;
  seed ^= seed >> 32;
  double unit = double(seed >> 11) / double(1ULL << 53) * 2 - 1; // [-1, 1)
  return unit * std::pow(10.0, double(int(seed % 5) - 2));
}

/// Parameter sizes of pipeline rank r: r = 0 has N = 20 elements (not
/// divisible by 3, a parameter of 2 elements, one of 1), r = 1 has 9.
std::map<int, size_t> sizesOf(int r) {
  if (r == 0)
    return {{0, 7}, {2, 2}, {5, 10}, {6, 1}};
  return {{1, 5}, {3, 4}};
}

/// The gradient sum of parameter p of replica d at step s of rank r.
std::vector<double> gradSum(int r, int d, int s, int p, size_t n) {
  std::vector<double> g(n);
  for (size_t i = 0; i < n; ++i)
    g[i] =
        value(uint64_t(1000003 * r + 10007 * d + 101 * s + 17 * p) * 131 + i);
  return g;
}

Vectors initialWeights(int r) {
  Vectors w;
  for (auto &e : sizesOf(r)) {
    auto &v = w[e.first];
    for (size_t i = 0; i < e.second; ++i)
      v.push_back(value(uint64_t(77 + r) * 1000 + uint64_t(e.first) * 50 + i));
  }
  return w;
}

/// The unsharded update: weights, states and mean gradients of rank r
/// after `steps` steps with D replicas.
struct Reference {
  Vectors weights, means;
  std::map<int, OptimizerState> states;
};
Reference reference(const TrainingConfig &c, int r, int D, int steps,
                    double scale, DType stateDType) {
  Reference ref;
  ref.weights = initialWeights(r);
  for (auto &e : sizesOf(r))
    ref.states[e.first].dtype = stateDType;
  for (int s = 0; s < steps; ++s)
    for (auto &e : sizesOf(r)) {
      int p = e.first;
      std::vector<double> total = gradSum(r, 0, s, p, e.second);
      for (int d = 1; d < D; ++d) {
        std::vector<double> g = gradSum(r, d, s, p, e.second);
        for (size_t i = 0; i < total.size(); ++i)
          total[i] += g[i];
      }
      for (double &x : total)
        x *= scale;
      optimizerStep(c, ref.weights[p], total, ref.states[p]);
      ref.means[p] = total;
    }
  return ref;
}

/// Runs `body(d, r, dp)` on D*P loopback ranks; dp is the data-parallel
/// group of pipeline rank r (split of the world by r, ranked by d).
void runGroups(int D, int P,
               const std::function<void(int, int, Communicator &)> &body) {
  LoopbackWorld world(D * P);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int g = 0; g < D * P; ++g)
    comms.push_back(world.communicator(g));
  std::vector<std::string> errors(size_t(D * P));
  std::vector<std::thread> threads;
  for (int g = 0; g < D * P; ++g)
    threads.emplace_back([&, g] {
      try {
        int d = g / P, r = g % P;
        auto dp = comms[size_t(g)]->split(r, d, 10);
        body(d, r, *dp);
      } catch (const std::exception &e) {
        errors[size_t(g)] = e.what();
      }
      comms[size_t(g)]->close();
    });
  for (auto &t : threads)
    t.join();
  for (int g = 0; g < D * P; ++g)
    EXPECT_EQ(errors[size_t(g)], "") << "global rank " << g;
}

TrainingConfig sgd() {
  TrainingConfig c;
  c.optimizer = OptimizerKind::Sgd;
  c.lr = 0.1;
  return c;
}
TrainingConfig momentum() {
  TrainingConfig c;
  c.optimizer = OptimizerKind::Momentum;
  c.lr = 0.05;
  c.momentum = 0.9;
  c.weightDecay = 0.01;
  return c;
}
TrainingConfig adamw() {
  TrainingConfig c;
  c.optimizer = OptimizerKind::AdamW;
  c.lr = 0.01;
  c.weightDecay = 0.1;
  return c;
}

/// 3 steps of ZeRO-1 on D replicas of 2 pipeline ranks; after every step
/// every replica's weights, and after the last the state gathered on dp
/// rank 0, must have the bits of the unsharded update. `stateDType`: the
/// dtype of the optimizer state (F32 for the f32 parameters of cpu builds),
/// given to the shards by load() as pipeopt-run does.
void checkAgainstUnsharded(const TrainingConfig &c, int D,
                           DType stateDType = DType::F64) {
  SCOPED_TRACE(std::to_string(D) + " replicas, state " + dtypeName(stateDType));
  const int P = 2, steps = 3, M = 4;
  const double scale = 1.0 / double(D * M);
  std::vector<Reference> refs;
  std::vector<std::vector<Vectors>> refWeightsPerStep(P);
  for (int r = 0; r < P; ++r) {
    refs.push_back(reference(c, r, D, steps, scale, stateDType));
    for (int s = 1; s <= steps; ++s)
      refWeightsPerStep[size_t(r)].push_back(
          reference(c, r, D, s, scale, stateDType).weights);
  }
  std::vector<size_t> stateBytes(size_t(D * P));
  runGroups(D, P, [&](int d, int r, Communicator &dp) {
    ShardedOptimizer opt(sizesOf(r), D, d);
    std::map<int, OptimizerState> empty;
    for (auto &e : sizesOf(r))
      empty[e.first].dtype = stateDType;
    opt.load(empty);
    Vectors w = initialWeights(r);
    for (int s = 0; s < steps; ++s) {
      Vectors sums;
      for (auto &e : sizesOf(r))
        sums[e.first] = gradSum(r, d, s, e.first, e.second);
      opt.step(dp, c, sums, w, scale, 10);
      for (auto &e : w)
        EXPECT_TRUE(sameBits(e.second,
                             refWeightsPerStep[size_t(r)][size_t(s)][e.first]))
            << "replica " << d << " rank " << r << " step " << s
            << " parameter " << e.first;
    }
    stateBytes[size_t(d * P + r)] = opt.stateBytes();
    EXPECT_LE(opt.stateBytes(),
              opt.shardElements() * dtypeSize(stateDType) *
                  (c.optimizer == OptimizerKind::AdamW ? 2 : 1));
    auto full = opt.gather(dp, 10);
    if (d != 0) {
      EXPECT_TRUE(full.empty());
      return;
    }
    const Reference &ref = refs[size_t(r)];
    ASSERT_EQ(full.size(), sizesOf(r).size());
    for (auto &e : full) {
      int p = e.first;
      const OptimizerState &want = ref.states.at(p);
      EXPECT_EQ(e.second.first.step, want.step) << p;
      EXPECT_TRUE(sameState(e.second.first.first, want.first)) << p;
      EXPECT_TRUE(sameState(e.second.first.second, want.second)) << p;
      EXPECT_TRUE(sameBits(e.second.second, ref.means.at(p))) << p;
    }
  });
  // The shards of the state add up to the full state.
  for (int r = 0; r < P; ++r) {
    size_t sum = 0, want = 0;
    for (int d = 0; d < D; ++d)
      sum += stateBytes[size_t(d * P + r)];
    for (auto &e : refs[size_t(r)].states)
      want += e.second.first.bytes() + e.second.second.bytes();
    EXPECT_EQ(sum, want) << "rank " << r;
  }
}

TEST(ShardedOptimizer, SgdMatchesUnshardedBitForBit) {
  checkAgainstUnsharded(sgd(), 2);
  checkAgainstUnsharded(sgd(), 3);
}

TEST(ShardedOptimizer, MomentumWithWeightDecayMatchesUnshardedBitForBit) {
  checkAgainstUnsharded(momentum(), 2);
  checkAgainstUnsharded(momentum(), 3);
}

TEST(ShardedOptimizer, AdamWMatchesUnshardedBitForBit) {
  checkAgainstUnsharded(adamw(), 2);
  checkAgainstUnsharded(adamw(), 3);
}

// The f32 state of f32 parameters (cpu builds): the shards round their
// state as the unsharded update does, and gather() returns it as f32.
TEST(ShardedOptimizer, F32StateMatchesUnshardedBitForBit) {
  checkAgainstUnsharded(momentum(), 2, DType::F32);
  checkAgainstUnsharded(adamw(), 2, DType::F32);
  checkAgainstUnsharded(adamw(), 3, DType::F32);
}

TEST(ShardedOptimizer, LayoutAndStateBytes) {
  // N = 20, D = 3: S = 7; replica 1 owns elements 7..13: parameter 2
  // (elements 7, 8) and parameter 5's first 5 elements, none of 0 or 6.
  ShardedOptimizer opt(sizesOf(0), 3, 1);
  EXPECT_EQ(opt.shardElements(), 7u);
  EXPECT_EQ(opt.ownedRange(0).first, opt.ownedRange(0).second); // none
  EXPECT_EQ(opt.ownedRange(2), (std::pair<size_t, size_t>(0, 2)));
  EXPECT_EQ(opt.ownedRange(5), (std::pair<size_t, size_t>(0, 5)));
  EXPECT_EQ(opt.ownedRange(6).first, opt.ownedRange(6).second); // none
  ShardedOptimizer last(sizesOf(0), 3, 2); // 14..19 and one padding element
  EXPECT_EQ(last.ownedRange(5), (std::pair<size_t, size_t>(5, 10)));
  EXPECT_EQ(last.ownedRange(6), (std::pair<size_t, size_t>(0, 1)));
  // AdamW after one step: 16 bytes per owned element (7 of 20).
  runGroups(3, 1, [&](int d, int, Communicator &dp) {
    ShardedOptimizer o(sizesOf(0), 3, d);
    Vectors w = initialWeights(0), sums;
    for (auto &e : sizesOf(0))
      sums[e.first] = gradSum(0, d, 0, e.first, e.second);
    o.step(dp, adamw(), sums, w, 1.0, 10);
    EXPECT_EQ(o.stateBytes(), size_t(d == 2 ? 6 : 7) * 16) << d;
  });
}

TEST(ShardedOptimizer, GatherLoadRoundTripAcrossReplicaCounts) {
  // 3 AdamW steps with D = 2, gathered; loaded by D = 3 replicas, gathered
  // again (the same bits), then a 4th step with D = 3 equals the unsharded
  // 4th step from the same state.
  const TrainingConfig c = adamw();
  const double scale = 0.125;
  std::map<int, std::pair<OptimizerState, std::vector<double>>> first;
  Vectors weights;
  runGroups(2, 1, [&](int d, int, Communicator &dp) {
    ShardedOptimizer opt(sizesOf(0), 2, d);
    Vectors w = initialWeights(0);
    for (int s = 0; s < 3; ++s) {
      Vectors sums;
      for (auto &e : sizesOf(0))
        sums[e.first] = gradSum(0, d, s, e.first, e.second);
      opt.step(dp, c, sums, w, scale, 10);
    }
    auto full = opt.gather(dp, 10);
    if (d == 0) {
      first = full;
      weights = w;
    }
  });
  ASSERT_EQ(first.size(), 4u);
  std::map<int, OptimizerState> states;
  Vectors means;
  for (auto &e : first) {
    states[e.first] = e.second.first;
    means[e.first] = e.second.second;
    EXPECT_EQ(e.second.first.step, 3);
  }
  // The unsharded 4th step (D = 3 replicas' sums).
  Vectors refW = weights;
  std::map<int, OptimizerState> refStates = states;
  for (auto &e : sizesOf(0)) {
    std::vector<double> total = gradSum(0, 0, 3, e.first, e.second);
    for (int d = 1; d < 3; ++d) {
      auto g = gradSum(0, d, 3, e.first, e.second);
      for (size_t i = 0; i < total.size(); ++i)
        total[i] += g[i];
    }
    for (double &x : total)
      x *= scale;
    optimizerStep(c, refW[e.first], total, refStates[e.first]);
  }
  runGroups(3, 1, [&](int d, int, Communicator &dp) {
    ShardedOptimizer opt(sizesOf(0), 3, d);
    opt.load(states, means);
    auto again = opt.gather(dp, 10);
    if (d == 0)
      for (auto &e : again) {
        const auto &want = first.at(e.first);
        EXPECT_EQ(e.second.first.step, want.first.step);
        EXPECT_TRUE(sameState(e.second.first.first, want.first.first));
        EXPECT_TRUE(sameState(e.second.first.second, want.first.second));
        EXPECT_TRUE(sameBits(e.second.second, want.second));
      }
    Vectors w = weights, sums;
    for (auto &e : sizesOf(0))
      sums[e.first] = gradSum(0, d, 3, e.first, e.second);
    opt.step(dp, c, sums, w, scale, 10);
    for (auto &e : w)
      EXPECT_TRUE(sameBits(e.second, refW[e.first])) << d << " " << e.first;
    auto after = opt.gather(dp, 10);
    if (d == 0)
      for (auto &e : after) {
        EXPECT_EQ(e.second.first.step, 4);
        EXPECT_TRUE(
            sameState(e.second.first.second, refStates[e.first].second));
      }
  });
}

TEST(ShardedOptimizer, BadInputIsAClearError) {
  EXPECT_THROW(ShardedOptimizer(sizesOf(0), 0, 0), RuntimeError);
  EXPECT_THROW(ShardedOptimizer(sizesOf(0), 2, 2), RuntimeError);
  runGroups(2, 1, [&](int d, int, Communicator &dp) {
    ShardedOptimizer opt(sizesOf(0), 2, d);
    Vectors w = initialWeights(0), sums;
    for (auto &e : sizesOf(0))
      sums[e.first] = std::vector<double>(e.second, 1.0);
    sums[5].pop_back();
    try {
      opt.step(dp, sgd(), sums, w, 1.0, 10);
      ADD_FAILURE() << "no error";
    } catch (const RuntimeError &e) {
      EXPECT_EQ(std::string(e.what()),
                "ZeRO-1 step of replica " + std::to_string(d) +
                    ": the gradient sum of parameter 5 has 9 elements, "
                    "expected 10");
    }
    ShardedOptimizer wrong(sizesOf(0), 3, d);
    try {
      wrong.gather(dp, 10);
      ADD_FAILURE() << "no error";
    } catch (const RuntimeError &e) {
      EXPECT_NE(std::string(e.what()).find("the data-parallel communicator "
                                           "has 2 ranks"),
                std::string::npos)
          << e.what();
    }
    std::map<int, OptimizerState> bad;
    for (auto &e : sizesOf(0))
      bad[e.first].first = StateBuffer(e.second, DType::F64);
    bad[2].first = StateBuffer(3, DType::F64);
    try {
      opt.load(bad);
      ADD_FAILURE() << "no error";
    } catch (const RuntimeError &e) {
      EXPECT_EQ(std::string(e.what()),
                "ZeRO-1 load: the optimizer state (first) of parameter 2 has "
                "3 elements, expected 2");
    }
  });
}

} // namespace
