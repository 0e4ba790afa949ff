//===- Optimizer.h - The optimizers of training builds ----------*- C++ -*-===//
//
// The generic optimizer that pipeopt-run applies to every parameter of a
// training build at the end of a step (manifest "training"; docs/Runtime.md,
// "Training builds with parameters"). The update is computed in double from the
// stored weights and the step's mean gradient; the caller rounds the result
// once to the parameter's dtype. The optimizer state is kept in double per
// element. The formulas and their operation order follow torch.optim's
// single-tensor implementations (SGD, SGD with momentum, AdamW).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_OPTIMIZER_H
#define PIPEOPT_RUNTIME_OPTIMIZER_H

#include "pipeopt/runtime/Manifest.h"
#include "pipeopt/runtime/Npy.h"

#include <cstdint>
#include <vector>

namespace pipeopt {
namespace rt {

/// The optimizer state of one parameter copy.
struct OptimizerState {
  /// momentum: the momentum buffer b; adamw: the first moment m. Empty
  /// until the first step.
  std::vector<double> first;
  /// adamw: the second moment v. Empty until the first step.
  std::vector<double> second;
  /// Steps applied so far (adamw's t; counted for every optimizer).
  int64_t step = 0;
};

/// One optimizer step of `config` on the weights `w` (in double) with the
/// mean gradient `g` (same size), updating `state`:
///   sgd:      g' = g + wd*w;  w = w - lr*g'
///   momentum: g' = g + wd*w;  b = g' (first step) or mu*b + g';  w = w - lr*b
///   adamw:    t += 1; w = w*(1 - lr*wd); m = lerp(m, g, 1-b1);
///             v = v*b2 + (1-b2)*g*g;
///             w = w - (lr/(1-b1^t)) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
///   none:     nothing changes (the step is still counted).
void optimizerStep(const TrainingConfig &config, std::vector<double> &w,
                   const std::vector<double> &g, OptimizerState &state);

/// optimizerStep on the weights stored in `value` (f32, f64, f16 or bf16),
/// rounded back to value.dtype once (to nearest, ties to even): the same
/// bits as tensorToDoubles + optimizerStep + doublesToTensor, without the
/// f64 copy of the weights, element-wise in one pass, split over
/// `threads` threads (>= 1; an element's result does not depend on the
/// split) for large tensors. `g` holds value's element count.
void optimizerStepTensor(const TrainingConfig &config, HostTensor &value,
                         const std::vector<double> &g, OptimizerState &state,
                         int threads = 1);

/// The elements of a floating-point tensor, in double. Throws RuntimeError
/// for other dtypes.
std::vector<double> tensorToDoubles(const HostTensor &t);
/// Stores `values` into the floating-point tensor `t` (numElements(t.shape)
/// elements), each rounded once to t.dtype (to nearest, ties to even).
void doublesToTensor(const std::vector<double> &values, HostTensor &t);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_OPTIMIZER_H
