//===- Optimizer.cpp - The optimizers of training builds --------*- C++ -*-===//

#include "pipeopt/runtime/Optimizer.h"
#include "pipeopt/runtime/Reduce.h"

#include <cmath>
#include <cstring>

namespace pipeopt {
namespace rt {

namespace {

/// torch.lerp(start, end, weight) for one element, in the form torch's CPU
/// kernel uses (the two branches round differently).
double lerp(double start, double end, double weight) {
  return std::fabs(weight) < 0.5 ? start + weight * (end - start)
                                 : end - (end - start) * (1 - weight);
}

} // namespace

void optimizerStep(const TrainingConfig &c, std::vector<double> &w,
                   const std::vector<double> &g, OptimizerState &state) {
  if (w.size() != g.size())
    throw RuntimeError("optimizer step: " + std::to_string(g.size()) +
                       " gradient elements for " + std::to_string(w.size()) +
                       " weights");
  size_t n = w.size();
  ++state.step;
  switch (c.optimizer) {
  case OptimizerKind::None:
    return;
  case OptimizerKind::Sgd:
    // torch.optim.SGD (momentum 0): grad = grad.add(param, alpha=wd);
    // param.add_(grad, alpha=-lr).
    for (size_t i = 0; i < n; ++i) {
      double gi = c.weightDecay != 0 ? g[i] + c.weightDecay * w[i] : g[i];
      w[i] = w[i] + -c.lr * gi;
    }
    return;
  case OptimizerKind::Momentum: {
    // torch.optim.SGD(momentum=mu, dampening=0, nesterov=False): the buffer
    // is a clone of the first gradient, then buf.mul_(mu).add_(grad).
    bool first = state.first.empty();
    if (first)
      state.first.assign(n, 0.0);
    for (size_t i = 0; i < n; ++i) {
      double gi = c.weightDecay != 0 ? g[i] + c.weightDecay * w[i] : g[i];
      double &b = state.first[i];
      b = first ? gi : b * c.momentum + gi;
      w[i] = w[i] + -c.lr * b;
    }
    return;
  }
  case OptimizerKind::AdamW: {
    // torch.optim.AdamW, single-tensor, amsgrad False:
    //   param.mul_(1 - lr * wd); exp_avg.lerp_(grad, 1 - beta1);
    //   exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2);
    //   step_size = lr / (1 - beta1^t);
    //   denom = (exp_avg_sq.sqrt() / sqrt(1 - beta2^t)).add_(eps);
    //   param.addcdiv_(exp_avg, denom, value=-step_size).
    if (state.first.empty())
      state.first.assign(n, 0.0);
    if (state.second.empty())
      state.second.assign(n, 0.0);
    double t = double(state.step);
    double stepSize = c.lr / (1 - std::pow(c.beta1, t));
    double bc2Sqrt = std::sqrt(1 - std::pow(c.beta2, t));
    double decay = 1 - c.lr * c.weightDecay;
    for (size_t i = 0; i < n; ++i) {
      double &m = state.first[i];
      double &v = state.second[i];
      if (c.weightDecay != 0)
        w[i] = w[i] * decay;
      m = lerp(m, g[i], 1 - c.beta1);
      v = v * c.beta2 + (1 - c.beta2) * g[i] * g[i];
      double denom = std::sqrt(v) / bc2Sqrt + c.eps;
      w[i] = w[i] + -stepSize * (m / denom);
    }
    return;
  }
  }
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
