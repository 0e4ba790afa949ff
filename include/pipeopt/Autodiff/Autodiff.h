//===- Autodiff.h - reverse-mode AD of linalg-on-tensors functions -*- C++
//-*-===//
//
// Part of pipeopt. Reverse-mode automatic differentiation of a func.func over
// linalg on tensors (+ tensor, arith, math), the transformation behind
// pipe-differentiate (docs/Training.md). It is pure IR-to-IR code with no
// pass machinery, so other compilers can call it on their own functions.
//
// Given @f(args...) -> (results...) it builds, next to @f in its module:
//
//   @<p>_fwd(args...)                          -> (results..., saved...)
//   @<p>_bwd(args..., saved..., d_results...)  -> (d_wrt...)        B+W fused
//   @<p>_b  (args..., saved..., d_results...)  -> (d_inputs..., stash...)
//   @<p>_w  (args..., saved..., d_results..., stash...) -> (d_weights...)
//
// where <p> is the prefix (default: f's name), `d_results` has one tensor per
// *seeded* result (a floating-point result that depends on a differentiated
// argument), `d_wrt` one gradient per differentiated argument in ascending
// argument order (same type as the argument), d_inputs / d_weights are d_wrt
// split into non-weights (B, on the pipeline's critical path) and weights (W,
// deferrable; Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, §2),
// `saved` are the forward values the backward reads (chosen by Recompute),
// and `stash` are the values B computes that W needs (the gradients of the
// outputs of the ops that read weights).
//
// Supported ops (anything else on a path from a differentiated argument to a
// seeded result is an error at that op, never a wrong gradient):
//   - every linalg structured op: linalg.generic whose outputs are either
//     element-wise (the output map is a permutation of all loops; the output
//     operand may be read) or reductions `acc = combine(acc, h(ins))` with
//     combine in {addf, maximumf, minimumf, maxnumf, minnumf}; named ops
//     (matmul, batch_matmul, matvec, conv_*, depthwise, pooling_*, fill,
//     copy, map, reduce, broadcast, transpose, ...) are differentiated
//     through their generic form; inputs may use any affine map (strided
//     convolutions), and a tensor read inside the body with tensor.extract
//     (a gather: embeddings) gets its gradient by a scatter-add loop;
//   - scalar arith/math inside bodies and at top level: addf subf mulf divf
//     negf, maximumf minimumf maxnumf minnumf (ties split the gradient half
//     and half, as torch.maximum), select, extf truncf, exp exp2 expm1 log
//     log1p log2 log10 tanh sin cos erf erfc sqrt rsqrt powf fpowi absf
//     (gradient 0 at 0, as torch.abs), fma;
//   - tensor.expand_shape, collapse_shape, extract_slice, insert_slice, pad
//     (static low/high, inactive padding value), concat, cast, extract.
// Integer, index and boolean values carry no gradient; comparisons and
// integer-to-float casts have none.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_AUTODIFF_AUTODIFF_H
#define PIPEOPT_AUTODIFF_AUTODIFF_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LLVM.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace pipeopt::autodiff {

/// What the forward saves for the backward versus what the backward
/// recomputes from the arguments and the saved values.
enum class Recompute {
  /// Save every forward value the backward reads, except what is always
  /// recomputed: constants, values that depend on no argument, and layout
  /// ops (transpose, broadcast, reshape) that read only weights, whose
  /// value is the same for every microbatch (saving a tied embedding's
  /// transpose per microbatch cost 103 MB each and a copy).
  None,
  /// Recompute values produced by cheap element-wise or data-movement ops
  /// (all-parallel linalg ops, reshapes, slices, pads) from their operands;
  /// save the results of contractions, reductions and convolutions.
  Elementwise,
  /// Save nothing: the backward recomputes the whole forward from the
  /// arguments (full activation recomputation per stage; Chen et al.,
  /// "Training Deep Nets with Sublinear Memory Cost", 2016).
  All,
};

/// Parses "none" | "elementwise" | "all".
std::optional<Recompute> parseRecompute(llvm::StringRef text);

/// What to differentiate and how.
struct Options {
  /// Arguments whose gradients are wanted, ascending. Non-float arguments
  /// are an error.
  llvm::SmallVector<unsigned> wrt;
  /// The subset of `wrt` that are weights: their gradients are W; the
  /// others' are B.
  llvm::SmallVector<unsigned> weights;
  Recompute recompute = Recompute::None;
  /// Prefix of the generated functions (default: the function's name).
  std::string prefix;
  /// Remove the common subexpressions of B+W before B and W are sliced
  /// from it, so that none of the three has any. differentiateOp turns it
  /// off: the cost model costs each op's B and W slices as they come, as
  /// it did before this clean-up moved here from pipe-differentiate, so
  /// that the partitions it gives stay the same.
  bool eliminateCommonSubexpressions = true;
};

/// The generated functions and their bookkeeping.
struct Gradient {
  mlir::func::FuncOp fwd, bwd, b, w;
  /// Results of the original function that take a gradient argument
  /// (d_results), ascending.
  llvm::SmallVector<unsigned> seeded;
  unsigned numSaved = 0;
  unsigned numStash = 0;
  /// Bytes per call (one microbatch) the backward keeps from the forward:
  /// the saved values plus the non-weight arguments the backward reads
  /// (activation memory; what the cost model and simulator use).
  int64_t savedBytes = 0;
  /// Bytes per call of the B -> W stash.
  int64_t stashBytes = 0;
};

/// Differentiates `f` (one block, ops as listed above; TOSA must already be
/// lowered to linalg) and inserts the four functions of the file comment
/// after it. B+W, B and W have no dead code and (with
/// options.eliminateCommonSubexpressions) no common subexpressions: B and
/// W are sliced from B+W after CSE. F is f's body as it is, plus the saved
/// results. On failure an error is emitted at the offending op and nothing
/// is left in the module.
mlir::FailureOr<Gradient> differentiate(mlir::func::FuncOp f,
                                        const Options &options);

/// Loss appended to a model's first result.
enum class Loss {
  /// The model's only result is a floating-point scalar (tensor<f32>,
  /// tensor<1xf32> or f32): it is the loss.
  Self,
  /// mean((y - t)^2) over all elements (torch.nn.MSELoss, mean); the target
  /// t has y's type.
  MSE,
  /// Cross entropy over the last dimension of y (logits [..., C]) with
  /// integer class indices t of shape [...]: the mean over positions of
  /// logsumexp(y) - y[t] (torch.nn.CrossEntropyLoss, mean).
  CrossEntropy,
};

/// Parses "mse" | "cross-entropy".
std::optional<Loss> parseLoss(llvm::StringRef text);

/// Argument attribute (i64) that buildLossFunction puts on a cross-entropy
/// target: its values are class indices in [0, value). The same name as the
/// pipe dialect's PipeDialect::getClassCountAttrName() (this library does
/// not depend on the dialect).
inline constexpr llvm::StringLiteral kClassCountAttr = "pipe.class_count";

/// Builds `@<name>(args..., [target]) -> tensor<f32>`: f's body followed by
/// the loss over its first result (Self: f's result as tensor<f32>). The
/// target is the last argument for MSE and CrossEntropy (with
/// kClassCountAttr = C for CrossEntropy). Errors (no result,
/// an integer result, a non-scalar result for Self, an integer target type)
/// are emitted at f.
mlir::FailureOr<mlir::func::FuncOp>
buildLossFunction(mlir::func::FuncOp f, Loss loss, llvm::StringRef name);

/// Builds `@<name>(args...) -> (tensor<f32> loss, d_wrt...)` for a loss
/// function (one tensor<f32> result): the forward, then the backward seeded
/// with d loss = 1, in one function.
mlir::FailureOr<mlir::func::FuncOp>
buildGradientFunction(mlir::func::FuncOp lossFn, const Options &options,
                      llvm::StringRef name);

/// Adds to `funcPM` (a func.func pass manager) what differentiate() needs
/// first: TOSA -> linalg/tensor/arith, element-wise arith/math on tensors ->
/// linalg.generic, canonicalization (cost::buildLowerTosaForAnalysis, the
/// form cost::classifyArguments analyses).
void buildPrepareForDifferentiation(mlir::OpPassManager &funcPM);

/// The backward of one op on its own, for the cost model.
struct OpBackward {
  /// Bytes the op's backward keeps from its forward (saved values and the
  /// non-weight operands it reads), per call.
  int64_t savedBytes = 0;
  /// Bytes B stashes for W.
  int64_t stashBytes = 0;
  /// Per operand of the op: whether its backward reads it.
  llvm::SmallVector<bool> readsOperand;
  /// Per result of the op: whether its backward reads it (saved).
  llvm::SmallVector<bool> readsResult;
  /// Bytes of saved values that are neither operands nor results (the
  /// intermediates of a TOSA op lowered to several linalg ops).
  int64_t internalSavedBytes = 0;
};

/// Differentiates a copy of `op` alone: a temporary function whose
/// arguments are op's operands (and the values its regions capture), with
/// the operands `weightOperands` as weights; TOSA ops are lowered to linalg
/// first. Calls `visit(generated, isW)` for every op of the generated B
/// (isW = false) and W (isW = true) functions, so that a caller can cost
/// them, then erases everything. Failure (no diagnostic): `op` has no
/// derivative rule, or is not worth one (no float operand).
/// The temporary IR uses op's context: the linalg, tensor, arith, math,
/// scf and affine dialects must be loaded.
mlir::FailureOr<OpBackward>
differentiateOp(mlir::Operation *op, llvm::ArrayRef<unsigned> weightOperands,
                llvm::function_ref<void(mlir::Operation *, bool)> visit);

} // namespace pipeopt::autodiff

#endif // PIPEOPT_AUTODIFF_AUTODIFF_H
