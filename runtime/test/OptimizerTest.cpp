//===- OptimizerTest.cpp - The optimizers of training builds ----*- C++ -*-===//
//
// Two steps of every optimizer on a 3-element vector against values
// computed independently (Python, in double, with the formulas as written
// in docs/Runtime.md: m = b1*m + (1-b1)*g, mhat = m/(1-b1^t), ...).
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Optimizer.h"
#include "pipeopt/runtime/Reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace pipeopt::rt;

namespace {

const std::vector<double> kW0 = {0.5, -1.0, 2.0};
const std::vector<std::vector<double>> kGrads = {{0.1, -0.2, 0.3},
                                                 {-0.4, 0.05, 0.25}};

std::vector<double> twoSteps(const TrainingConfig &c, OptimizerState &st) {
  std::vector<double> w = kW0;
  for (const auto &g : kGrads)
    optimizerStep(c, w, g, st);
  return w;
}

void expectNear(const std::vector<double> &got,
                const std::vector<double> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-15 * std::fabs(want[i])) << i;
}

TEST(Optimizer, Sgd) {
  TrainingConfig c;
  c.optimizer = OptimizerKind::Sgd;
  c.lr = 0.1;
  c.weightDecay = 0.01;
  OptimizerState st;
  expectNear(twoSteps(c, st), {0.5290105, -0.983021, 1.9410319999999999});
  EXPECT_EQ(st.step, 2);
  EXPECT_TRUE(st.first.empty());
}

TEST(Optimizer, Momentum) {
  TrainingConfig c;
  c.optimizer = OptimizerKind::Momentum;
  c.lr = 0.1;
  c.momentum = 0.9;
  c.weightDecay = 0.01;
  OptimizerState st;
  expectNear(twoSteps(c, st), {0.5195605, -0.964121, 1.912232});
  expectNear(st.first.toDoubles(), {-0.300605, -0.14879000000000003, 0.55768});
  // The first step's buffer is the gradient itself (no (1 - mu) factor,
  // no decay from zero): w = w - lr * (g + wd*w).
  OptimizerState one;
  std::vector<double> w = kW0;
  optimizerStep(c, w, kGrads[0], one);
  EXPECT_DOUBLE_EQ(one.first[0], 0.1 + 0.01 * 0.5);
}

TEST(Optimizer, AdamW) {
  TrainingConfig c;
  c.optimizer = OptimizerKind::AdamW;
  c.lr = 0.01;
  c.beta1 = 0.9;
  c.beta2 = 0.999;
  c.eps = 1e-8;
  c.weightDecay = 0.1;
  OptimizerState st;
  expectNear(twoSteps(c, st),
             {0.4946055357475128, -0.9833163191095446, 1.9761002719460945});
  expectNear(st.first.toDoubles(),
             {-0.030999999999999993, -0.013, 0.05199999999999999});
  expectNear(
      st.second.toDoubles(),
      {0.00016999000000000018, 4.2460000000000044e-05, 0.00015241000000000012});
  EXPECT_EQ(st.step, 2);
}

// optimizerStepTensor's AdamW on f32 weights runs a vectorized loop (one
// clone per x86-64 vector width); it must give the bits of the scalar
// path (weights widened to double, optimizerStep, rounded once), for both
// of torch's lerp branches, with and without weight decay, on several
// threads, over steps whose state the loop carries, with f32 state (cpu
// builds) and f64 state (cuda builds' host path).
TEST(Optimizer, AdamWOnF32TensorsMatchesScalarPath) {
  const size_t n = 200003; // vector tails; 3 ranges of 2^16 for 2 threads
  std::vector<float> w0(n);
  std::vector<std::vector<double>> grads(3, std::vector<double>(n));
  uint64_t x = 88172645463325252ull;
  auto next = [&x] { // xorshift64: values in [-1, 1)
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return double(x >> 11) / double(1ull << 52) - 1.0;
  };
  for (size_t i = 0; i < n; ++i)
    w0[i] = float(next());
  for (auto &g : grads)
    for (double &gi : g)
      gi = next() * 1e-3;
  for (DType stateDType : {DType::F32, DType::F64})
    for (double beta1 : {0.9, 0.3})
      for (double decay : {0.0, 0.01}) {
        TrainingConfig c;
        c.optimizer = OptimizerKind::AdamW;
        c.lr = 1e-3;
        c.beta1 = beta1;
        c.beta2 = 0.999;
        c.eps = 1e-8;
        c.weightDecay = decay;
        HostTensor t;
        t.dtype = DType::F32;
        t.shape = {int64_t(n)};
        t.data.resize(n * 4);
        std::memcpy(t.data.data(), w0.data(), n * 4);
        std::vector<float> want = w0;
        OptimizerState fast, scalar;
        fast.dtype = scalar.dtype = stateDType;
        for (const auto &g : grads) {
          optimizerStepTensor(c, t, g, fast, /*threads=*/2);
          std::vector<double> w(want.begin(), want.end());
          optimizerStep(c, w, g, scalar);
          for (size_t i = 0; i < n; ++i)
            want[i] = float(w[i]);
        }
        std::vector<float> got(n);
        std::memcpy(got.data(), t.data.data(), n * 4);
        size_t differ = 0;
        for (size_t i = 0; i < n; ++i)
          differ += std::memcmp(&got[i], &want[i], 4) != 0;
        EXPECT_EQ(differ, 0u) << "beta1 " << beta1 << ", weight decay " << decay
                              << ", state " << dtypeName(stateDType);
        EXPECT_EQ(fast.first.dtype(), stateDType);
        EXPECT_EQ(fast.first, scalar.first);
        EXPECT_EQ(fast.second, scalar.second);
        EXPECT_EQ(fast.step, 3);
      }
}

// f32 optimizer state (the f32 parameters of cpu builds, as torch.optim
// keeps it): after the first step m and v are the f64 state's values
// rounded once; the weights stay within what that rounding can move them.
// Bound: AdamW's step is stepSize * m / (sqrt(v)/bc2 + eps), and rounding m
// and v to f32 changes m/denom by at most 2^-24 (m) + 2^-25 (the root of
// v) relative, so from the same state a step moves a weight by at most
// lr/(1-b1^t) * |m/denom| * 1.5 * 2^-24 more. With these random gradients
// |m/denom| stays below 1 and 1/(1-b1^t) <= 1/(1-b1), so three steps stay
// within 3 * lr/(1-b1) * 1.5 * 2^-24, plus one f32 rounding of the weight
// (growing gradients could make |m/denom| larger: this is a check of these
// steps, not a bound for every input).
TEST(Optimizer, F32StateIsTheF64StateRoundedOnce) {
  EXPECT_EQ(optimizerStateDType(DType::F32, Target::Cpu), DType::F32);
  EXPECT_EQ(optimizerStateDType(DType::F32, Target::Cuda), DType::F64);
  EXPECT_EQ(optimizerStateDType(DType::F64, Target::Cpu), DType::F64);
  EXPECT_EQ(optimizerStateDType(DType::BF16, Target::Cpu), DType::F64);
  const size_t n = 4099;
  uint64_t x = 0x9e3779b97f4a7c15ull;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return double(x >> 11) / double(1ull << 52) - 1.0;
  };
  HostTensor t32;
  t32.dtype = DType::F32;
  t32.shape = {int64_t(n)};
  t32.data.resize(n * 4);
  for (size_t i = 0; i < n; ++i) {
    float w = float(next());
    std::memcpy(t32.data.data() + 4 * i, &w, 4);
  }
  HostTensor t64 = t32;
  TrainingConfig c;
  c.optimizer = OptimizerKind::AdamW;
  c.lr = 1e-2;
  c.weightDecay = 0.01;
  OptimizerState s32, s64;
  s32.dtype = DType::F32;
  s64.dtype = DType::F64;
  const int steps = 3;
  for (int step = 1; step <= steps; ++step) {
    std::vector<double> g(n);
    for (double &gi : g)
      gi = next() * std::pow(10.0, -1 - 4 * std::fabs(next()));
    optimizerStepTensor(c, t32, g, s32);
    optimizerStepTensor(c, t64, g, s64);
    ASSERT_EQ(s32.first.dtype(), DType::F32);
    ASSERT_EQ(s32.first.bytes(), 4 * n);
    ASSERT_EQ(s64.first.bytes(), 8 * n);
    if (step == 1)
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(s32.first[i], double(float(s64.first[i]))) << i;
        ASSERT_EQ(s32.second[i], double(float(s64.second[i]))) << i;
      }
  }
  std::vector<double> w32 = tensorToDoubles(t32), w64 = tensorToDoubles(t64);
  double differ = 0;
  for (size_t i = 0; i < n; ++i) {
    double bound = steps * c.lr / (1 - c.beta1) * 1.5 * std::ldexp(1.0, -24) +
                   std::ldexp(std::fabs(w64[i]), -23);
    EXPECT_LE(std::fabs(w32[i] - w64[i]), bound) << i;
    differ += w32[i] != w64[i];
  }
  // The rounding does change some weights (the state is really f32).
  EXPECT_GT(differ, 0);
}

// A sole f32 gradient (ParameterState::soleGradient) gives the bits of the
// f64 sum that would hold it (0 + x), for every optimizer, f32 and f64
// state, including -0 gradients next to -0 weights (where 0 + x matters).
TEST(Optimizer, F32GradientGivesTheBitsOfItsF64Sum) {
  const std::vector<float> w0 = {0.5f, -0.0f, -0.0f, 2.0f, -3.0f};
  const std::vector<std::vector<float>> grads = {
      {0.1f, -0.0f, 0.25f, -0.0f, 1e-30f}, {-0.4f, -0.0f, -0.0f, 0.5f, 0.0f}};
  for (OptimizerKind kind :
       {OptimizerKind::Sgd, OptimizerKind::Momentum, OptimizerKind::AdamW})
    for (DType stateDType : {DType::F32, DType::F64}) {
      SCOPED_TRACE(std::to_string(int(kind)) + " " + dtypeName(stateDType));
      TrainingConfig c;
      c.optimizer = kind;
      c.lr = 0.1;
      HostTensor a;
      a.dtype = DType::F32;
      a.shape = {int64_t(w0.size())};
      a.data.resize(4 * w0.size());
      std::memcpy(a.data.data(), w0.data(), a.data.size());
      HostTensor b = a;
      OptimizerState sa, sb;
      sa.dtype = sb.dtype = stateDType;
      for (const auto &g : grads) {
        std::vector<double> sum(g.size(), 0.0);
        for (size_t i = 0; i < g.size(); ++i)
          sum[i] += double(g[i]);
        optimizerStepTensor(c, a, g, sa);
        optimizerStepTensor(c, b, sum, sb);
      }
      EXPECT_EQ(a.data, b.data);
      EXPECT_EQ(sa.first, sb.first);
      EXPECT_EQ(sa.second, sb.second);
    }
}

TEST(Optimizer, NoneChangesNothing) {
  TrainingConfig c;
  OptimizerState st;
  EXPECT_EQ(twoSteps(c, st), kW0);
  EXPECT_EQ(st.step, 2);
  std::vector<double> w = kW0;
  EXPECT_THROW(optimizerStep(c, w, {1.0}, st), RuntimeError);
}

TEST(Optimizer, TensorConversionsRoundOnce) {
  HostTensor t;
  t.dtype = DType::F32;
  t.shape = {3};
  t.data.assign(12, 0);
  // 1 + 2^-24 is a tie between 1 and 1 + 2^-23: to even (1); -0 stays -0.
  doublesToTensor({1.0 + std::ldexp(1.0, -24), -0.0, 0.1}, t);
  float v[3];
  std::memcpy(v, t.data.data(), 12);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_TRUE(std::signbit(v[1]));
  EXPECT_EQ(v[2], 0.1f);
  std::vector<double> back = tensorToDoubles(t);
  EXPECT_EQ(back[2], double(0.1f));
  EXPECT_TRUE(std::signbit(back[1]));

  HostTensor b;
  b.dtype = DType::BF16;
  b.shape = {1};
  b.data.assign(2, 0);
  doublesToTensor({1.00390625}, b); // 1 + 2^-8: a tie, to even (1)
  EXPECT_EQ(tensorToDoubles(b)[0], 1.0);
  HostTensor i;
  i.dtype = DType::I32;
  i.shape = {1};
  i.data.assign(4, 0);
  EXPECT_THROW(tensorToDoubles(i), RuntimeError);
}

} // namespace
