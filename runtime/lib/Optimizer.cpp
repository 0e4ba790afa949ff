//===- Optimizer.cpp - The optimizers of training builds --------*- C++ -*-===//

#include "pipeopt/runtime/Optimizer.h"
#include "pipeopt/runtime/Reduce.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <type_traits>

namespace pipeopt {
namespace rt {

namespace {

/// The per-step constants of torch.optim.AdamW (single-tensor, amsgrad
/// False) at step t (from 1):
///   param.mul_(1 - lr * wd); exp_avg.lerp_(grad, 1 - beta1);
///   exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2);
///   step_size = lr / (1 - beta1^t);
///   denom = (exp_avg_sq.sqrt() / sqrt(1 - beta2^t)).add_(eps);
///   param.addcdiv_(exp_avg, denom, value=-step_size).
struct AdamWConstants {
  AdamWConstants(const TrainingConfig &c, double t)
      : stepSize(c.lr / (1 - std::pow(c.beta1, t))),
        bc2Sqrt(std::sqrt(1 - std::pow(c.beta2, t))),
        decay(1 - c.lr * c.weightDecay), weight(1 - c.beta1), beta2(c.beta2),
        eps(c.eps), decays(c.weightDecay != 0),
        // torch.lerp(start, end, weight) in the form of torch's CPU
        // kernel, whose two branches round differently; the branch is
        // decided once.
        small(std::fabs(weight) < 0.5) {}
  double stepSize, bc2Sqrt, decay, weight, beta2, eps;
  bool decays, small;
};

/// One AdamW element in double: weight w, gradient gi, state m and v
/// (updated, stored as S: float or double); returns the new weight. The
/// update reads the stored (for f32 state: rounded) m and v, as torch's
/// f32 state does. `Small` and `Decays` are k.small and k.decays (template
/// arguments, so that the loops have no branch: withAdamWBranches).
template <bool Small, bool Decays, typename S>
inline double adamwElementOf(const AdamWConstants &k, double w, double gi, S &m,
                             S &v) {
  if (Decays)
    w = w * k.decay;
  double mi = m;
  mi = Small ? mi + k.weight * (gi - mi) : gi - (gi - mi) * (1 - k.weight);
  m = S(mi);
  v = S(double(v) * k.beta2 + (1 - k.beta2) * gi * gi);
  double denom = std::sqrt(double(v)) / k.bc2Sqrt + k.eps;
  return w + -k.stepSize * (double(m) / denom);
}

/// A gradient element in double: an f32 one as the f64 sum that holds it
/// alone would (sumOfOne).
inline double gradientValue(double x) { return x; }
inline double gradientValue(float x) { return sumOfOne(x); }

/// Calls fn(small, decays) with k.small and k.decays as
/// std::integral_constant<bool, ...> arguments, so that fn's loop can
/// instantiate adamwElementOf without a branch per element.
template <typename Fn>
inline void withAdamWBranches(const AdamWConstants &k, Fn &&fn) {
  using T = std::true_type;
  using F = std::false_type;
  if (k.small) {
    if (k.decays)
      fn(T(), T());
    else
      fn(T(), F());
  } else {
    if (k.decays)
      fn(F(), T());
    else
      fn(F(), F());
  }
}

/// AdamW on elements [begin, end) of f32 weights: adamwElementOf's
/// arithmetic (the file is compiled with -ffp-contract=off, so no clone
/// fuses a multiply-add and every clone gives the same bits), in loops
/// the compiler vectorizes; on x86-64 one clone per vector width, picked
/// for the CPU at load time. Most of a transformer's weights take this
/// path (the scalar loop took 10% of a GPT-2 training step).
/// `G` is the gradient's and `S` the state's storage (float or double).
template <typename G, typename S>
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
inline void
adamwF32Loop(const AdamWConstants &k, float *__restrict w,
             const G *__restrict g, S *__restrict m, S *__restrict v,
             size_t begin, size_t end) {
  withAdamWBranches(k, [&](auto small, auto decays) {
    for (size_t i = begin; i < end; ++i)
      w[i] = float(adamwElementOf<small.value, decays.value>(
          k, double(w[i]), gradientValue(g[i]), m[i], v[i]));
  });
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PIPEOPT_ADAMW_CLONES                                                   \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PIPEOPT_ADAMW_CLONES
#endif

/// With f32 state (cpu builds).
PIPEOPT_ADAMW_CLONES
void adamwF32(const AdamWConstants &k, float *w, const double *g, float *m,
              float *v, size_t begin, size_t end) {
  adamwF32Loop(k, w, g, m, v, begin, end);
}

/// With f64 state (cuda builds' host path).
PIPEOPT_ADAMW_CLONES
void adamwF32(const AdamWConstants &k, float *w, const double *g, double *m,
              double *v, size_t begin, size_t end) {
  adamwF32Loop(k, w, g, m, v, begin, end);
}

/// With an f32 gradient and f32 state (a sole f32 gradient, cpu builds).
PIPEOPT_ADAMW_CLONES
void adamwF32(const AdamWConstants &k, float *w, const float *g, float *m,
              float *v, size_t begin, size_t end) {
  adamwF32Loop(k, w, g, m, v, begin, end);
}

/// With an f32 gradient and f64 state (the public API allows it).
PIPEOPT_ADAMW_CLONES
void adamwF32(const AdamWConstants &k, float *w, const float *g, double *m,
              double *v, size_t begin, size_t end) {
  adamwF32Loop(k, w, g, m, v, begin, end);
}

/// One optimizer step of elements [begin, end) of weights read by `load`
/// and written by `store` (both take the element index), the same
/// arithmetic as optimizerStep's loops (which it serves too). `first` /
/// `second` are the state's buffers (null when the optimizer keeps none;
/// S: float or double), `firstStep`: the momentum buffer is created by this
/// step.
template <typename G, typename S, typename Load, typename Store>
void updateRange(const TrainingConfig &c, size_t begin, size_t end,
                 const G *grad, S *first, S *second, bool firstStep, double t,
                 Load load, Store store) {
  // The gradient in double (exact for an f32 one).
  auto g = [grad](size_t i) { return gradientValue(grad[i]); };
  switch (c.optimizer) {
  case OptimizerKind::None:
    return;
  case OptimizerKind::Sgd:
    // torch.optim.SGD (momentum 0): grad = grad.add(param, alpha=wd);
    // param.add_(grad, alpha=-lr).
    for (size_t i = begin; i < end; ++i) {
      double w = load(i);
      double gi = c.weightDecay != 0 ? g(i) + c.weightDecay * w : g(i);
      store(i, w + -c.lr * gi);
    }
    return;
  case OptimizerKind::Momentum:
    // torch.optim.SGD(momentum=mu, dampening=0, nesterov=False): the buffer
    // is a clone of the first gradient, then buf.mul_(mu).add_(grad).
    for (size_t i = begin; i < end; ++i) {
      double w = load(i);
      double gi = c.weightDecay != 0 ? g(i) + c.weightDecay * w : g(i);
      double b = firstStep ? gi : double(first[i]) * c.momentum + gi;
      first[i] = S(b);
      store(i, w + -c.lr * double(first[i]));
    }
    return;
  case OptimizerKind::AdamW: {
    const AdamWConstants k(c, t);
    withAdamWBranches(k, [&](auto small, auto decays) {
      for (size_t i = begin; i < end; ++i)
        store(i, adamwElementOf<small.value, decays.value>(
                     k, load(i), g(i), first[i], second[i]));
    });
    return;
  }
  }
}

/// Runs fn(begin, end) over [0, n) split into `threads` contiguous parts
/// (in this thread alone below 2^16 elements per thread).
template <typename Fn>
void parallelRanges(size_t n, int threads, Fn fn) {
  size_t parts = std::max<size_t>(
      1, std::min<size_t>(size_t(std::max(1, threads)), n >> 16));
  if (parts == 1) {
    fn(size_t(0), n);
    return;
  }
  std::vector<std::thread> pool;
  size_t chunk = (n + parts - 1) / parts;
  for (size_t k = 1; k < parts; ++k)
    pool.emplace_back(fn, k * chunk, std::min(n, (k + 1) * chunk));
  fn(size_t(0), std::min(n, chunk));
  for (std::thread &th : pool)
    th.join();
}

/// Makes the state's buffers of `c` (zeros until the first step) and says
/// whether the momentum buffer is new.
bool prepareState(const TrainingConfig &c, size_t n, OptimizerState &state) {
  bool firstStep = false;
  if (c.optimizer == OptimizerKind::Momentum ||
      c.optimizer == OptimizerKind::AdamW) {
    firstStep = state.first.empty();
    if (firstStep)
      state.first = StateBuffer(n, state.dtype);
  }
  if (c.optimizer == OptimizerKind::AdamW && state.second.empty())
    state.second = StateBuffer(n, state.first.dtype());
  return firstStep;
}

/// Calls fn(first, second) with the state's buffers as float* (f32 state)
/// or double* (f64 state), null where the optimizer keeps none. Throws
/// RuntimeError if they differ in dtype or size from `n`.
template <typename Fn>
void withStatePointers(OptimizerState &state, size_t n, Fn &&fn) {
  for (const StateBuffer *b : {&state.first, &state.second})
    if (!b->empty() && b->size() != n)
      throw RuntimeError("optimizer step: " + std::to_string(b->size()) +
                         " optimizer state elements for " + std::to_string(n) +
                         " weights");
  if (!state.first.empty() && !state.second.empty() &&
      state.first.dtype() != state.second.dtype())
    throw RuntimeError("optimizer step: the two state buffers differ in dtype");
  if (state.first.dtype() == DType::F32)
    fn(state.first.f32Data(), state.second.f32Data());
  else
    fn(state.first.f64Data(), state.second.f64Data());
}

/// optimizerStepTensor for a gradient of doubles or floats (G).
template <typename G>
void stepTensor(const TrainingConfig &c, HostTensor &value,
                const std::vector<G> &g, OptimizerState &state, int threads) {
  const size_t n = size_t(numElements(value.shape));
  if (value.dtype != DType::F32 && value.dtype != DType::F64) {
    std::vector<double> w = tensorToDoubles(value);
    std::vector<double> gd(g.size());
    for (size_t i = 0; i < g.size(); ++i)
      gd[i] = gradientValue(g[i]);
    optimizerStep(c, w, gd, state);
    doublesToTensor(w, value);
    return;
  }
  if (g.size() != n || value.data.size() != n * dtypeSize(value.dtype))
    throw RuntimeError("optimizer step: " + std::to_string(g.size()) +
                       " gradient elements for " +
                       typeString(value.dtype, value.shape));
  ++state.step;
  if (c.optimizer == OptimizerKind::None)
    return;
  const bool firstStep = prepareState(c, n, state);
  const double t = double(state.step);
  withStatePointers(state, n, [&](auto *first, auto *second) {
    if (value.dtype == DType::F32 && c.optimizer == OptimizerKind::AdamW) {
      float *w = reinterpret_cast<float *>(value.data.data());
      const AdamWConstants k(c, t);
      parallelRanges(n, threads, [&](size_t b, size_t e) {
        adamwF32(k, w, g.data(), first, second, b, e);
      });
    } else if (value.dtype == DType::F32) {
      float *w = reinterpret_cast<float *>(value.data.data());
      parallelRanges(n, threads, [&](size_t b, size_t e) {
        updateRange(
            c, b, e, g.data(), first, second, firstStep, t,
            [w](size_t i) { return double(w[i]); },
            [w](size_t i, double x) { w[i] = float(x); });
      });
    } else {
      double *w = reinterpret_cast<double *>(value.data.data());
      parallelRanges(n, threads, [&](size_t b, size_t e) {
        updateRange(
            c, b, e, g.data(), first, second, firstStep, t,
            [w](size_t i) { return w[i]; },
            [w](size_t i, double x) { w[i] = x; });
      });
    }
  });
}

} // namespace

void optimizerStepTensor(const TrainingConfig &c, HostTensor &value,
                         const std::vector<double> &g, OptimizerState &state,
                         int threads) {
  stepTensor(c, value, g, state, threads);
}

void optimizerStepTensor(const TrainingConfig &c, HostTensor &value,
                         const std::vector<float> &g, OptimizerState &state,
                         int threads) {
  stepTensor(c, value, g, state, threads);
}

void optimizerStep(const TrainingConfig &c, std::vector<double> &w,
                   const std::vector<double> &g, OptimizerState &state) {
  if (w.size() != g.size())
    throw RuntimeError("optimizer step: " + std::to_string(g.size()) +
                       " gradient elements for " + std::to_string(w.size()) +
                       " weights");
  ++state.step;
  if (c.optimizer == OptimizerKind::None)
    return;
  const bool firstStep = prepareState(c, w.size(), state);
  double *data = w.data();
  withStatePointers(state, w.size(), [&](auto *first, auto *second) {
    updateRange(
        c, 0, w.size(), g.data(), first, second, firstStep, double(state.step),
        [data](size_t i) { return data[i]; },
        [data](size_t i, double x) { data[i] = x; });
  });
}

DType optimizerStateDType(DType param, Target target) {
  return param == DType::F32 && target == Target::Cpu ? DType::F32 : DType::F64;
}

StateBuffer::StateBuffer(size_t n, DType dtype) : isF32(dtype == DType::F32) {
  if (isF32)
    f32.assign(n, 0.0f);
  else
    f64.assign(n, 0.0);
}

StateBuffer::StateBuffer(const std::vector<double> &values, DType dtype)
    : isF32(dtype == DType::F32) {
  if (isF32)
    f32.assign(values.begin(), values.end());
  else
    f64 = values;
}

std::vector<double> StateBuffer::toDoubles() const {
  return isF32 ? std::vector<double>(f32.begin(), f32.end()) : f64;
}

StateBuffer StateBuffer::slice(size_t lo, size_t hi) const {
  StateBuffer out;
  out.isF32 = isF32;
  if (isF32)
    out.f32.assign(f32.begin() + long(lo), f32.begin() + long(hi));
  else
    out.f64.assign(f64.begin() + long(lo), f64.begin() + long(hi));
  return out;
}

std::vector<double> tensorToDoubles(const HostTensor &t) {
  size_t n = size_t(numElements(t.shape));
  if (!isFloatDType(t.dtype))
    throw RuntimeError(std::string("a parameter needs a floating-point "
                                   "dtype, not ") +
                       dtypeName(t.dtype));
  if (t.data.size() != n * dtypeSize(t.dtype))
    throw RuntimeError("tensor " + typeString(t.dtype, t.shape) + " holds " +
                       std::to_string(t.data.size()) + " bytes");
  // Element by element (not added to a zero sum, which would turn -0 into
  // +0).
  std::vector<double> v(n);
  const uint8_t *p = t.data.data();
  for (size_t i = 0; i < n; ++i) {
    switch (t.dtype) {
    case DType::F32: {
      float x;
      std::memcpy(&x, p + 4 * i, 4);
      v[i] = x;
      break;
    }
    case DType::F64:
      std::memcpy(&v[i], p + 8 * i, 8);
      break;
    default: {
      uint16_t x;
      std::memcpy(&x, p + 2 * i, 2);
      v[i] = t.dtype == DType::F16 ? halfToDouble(x) : bf16ToDouble(x);
    }
    }
  }
  return v;
}

void doublesToTensor(const std::vector<double> &values, HostTensor &t) {
  HostTensor rounded = meanFromSum(values, 1, t.dtype, t.shape);
  t.data = std::move(rounded.data);
}

} // namespace rt
} // namespace pipeopt
