//===- Optimizer.h - The optimizers of training builds ----------*- C++ -*-===//
//
// The generic optimizer that pipeopt-run applies to every parameter of a
// training build at the end of a step (manifest "training"; docs/Runtime.md,
// "Training builds with parameters"). The update is computed in double from the
// stored weights, the stored state and the step's mean gradient; the caller
// rounds the result once to the parameter's dtype. The optimizer state is
// kept per element in f32 for the f32 parameters of cpu builds (as
// torch.optim does) and in f64 otherwise (optimizerStateDType). The formulas
// and their operation order follow torch.optim's single-tensor implementations
// (SGD, SGD with momentum, AdamW).
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

/// The dtype the optimizer state of a parameter of dtype `param` is kept in
/// on `target`: f32 for the f32 parameters of cpu builds (torch.optim keeps
/// its state in the parameter's dtype, and so halves the 16 bytes per
/// element of f64 AdamW moments); f64 for every other parameter and on
/// cuda builds (whose device kernels keep f64 state).
DType optimizerStateDType(DType param, Target target);

/// One buffer of optimizer state (the momentum buffer, AdamW's m or v): one
/// value per element of the parameter, stored in f32 or f64
/// (optimizerStateDType). The optimizers compute in double either way; an
/// f32 buffer rounds each stored value once (to nearest, ties to even), and
/// the next step reads that rounded value.
class StateBuffer {
public:
  StateBuffer() = default;
  /// `n` zeros stored in `dtype` (F32 or F64; anything else is F64).
  StateBuffer(size_t n, DType dtype);
  /// `values`, each rounded once to `dtype` (F32 or F64).
  StateBuffer(const std::vector<double> &values, DType dtype);

  bool empty() const { return size() == 0; }
  size_t size() const { return isF32 ? f32.size() : f64.size(); }
  DType dtype() const { return isF32 ? DType::F32 : DType::F64; }
  /// Bytes of the stored values.
  size_t bytes() const { return isF32 ? 4 * f32.size() : 8 * f64.size(); }
  double operator[](size_t i) const { return isF32 ? f32[i] : f64[i]; }
  /// The stored values, in double (exact).
  std::vector<double> toDoubles() const;
  /// The values of elements [lo, hi), in the same dtype.
  StateBuffer slice(size_t lo, size_t hi) const;
  /// The storage of an F32 (f32Data) or F64 (f64Data) buffer; null for
  /// the other dtype or an empty buffer.
  float *f32Data() { return isF32 && !f32.empty() ? f32.data() : nullptr; }
  double *f64Data() { return !isF32 && !f64.empty() ? f64.data() : nullptr; }

  /// Same dtype, same size and equal (==) elements.
  friend bool operator==(const StateBuffer &a, const StateBuffer &b) {
    return a.isF32 == b.isF32 && a.f32 == b.f32 && a.f64 == b.f64;
  }

private:
  bool isF32 = false;
  std::vector<float> f32;
  std::vector<double> f64;
};

/// The optimizer state of one parameter copy.
struct OptimizerState {
  /// momentum: the momentum buffer b; adamw: the first moment m. Empty
  /// until the first step.
  StateBuffer first;
  /// adamw: the second moment v. Empty until the first step.
  StateBuffer second;
  /// Steps applied so far (adamw's t; counted for every optimizer).
  int64_t step = 0;
  /// The dtype the first step makes `first` and `second` in (F32 or F64;
  /// optimizerStateDType).
  DType dtype = DType::F64;

  /// Back to the state before the first step, keeping `dtype`.
  void clear() {
    first = StateBuffer();
    second = StateBuffer();
    step = 0;
  }
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

/// An f32 gradient as the f64 sum that holds it alone does: 0 + x, which
/// makes -0 +0 (ParameterState::soleGradient in Context.h).
inline double sumOfOne(float x) { return 0.0 + double(x); }

/// optimizerStepTensor with the mean gradient in f32 (`g`): the same bits as
/// passing the doubles sumOfOne(g[i]). For a
/// parameter whose mean gradient is a sole f32 gradient
/// (ParameterState::soleGradient in Context.h).
void optimizerStepTensor(const TrainingConfig &config, HostTensor &value,
                         const std::vector<float> &g, OptimizerState &state,
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
