//===- OpRules.h - The cost model's table of op kinds ------------*- C++
//-*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Internal to PipeoptAnalysis: the one place that maps an op class to what
/// the cost model and the parameter analysis know about it. describeOp()
/// dispatches on the op's class (llvm::TypeSwitch over tosa::*, linalg::*,
/// tensor::*, memref / bufferization / ml_program ops, the arith and math
/// dialects, and the linalg Contraction / Convolution interfaces); each case
/// is one op kind with its OpKind, FLOPs, bytes, whether a parameter may pass
/// through it (layout op) and which of its operands hold weights.
/// backwardRatios() is the table of B / F and W / F per OpKind.
/// Formulas and sources: docs/CostModel.md.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_LIB_ANALYSIS_OPRULES_H
#define PIPEOPT_LIB_ANALYSIS_OPRULES_H

#include "pipeopt/Analysis/CostModel.h"

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

namespace pipeopt {
namespace cost {
namespace rules {

/// Which operands of an op may hold a weight (they are parameters when they
/// trace to a parameter source, see tracesToParameterSource()).
enum class WeightOperands {
  /// No operand (data movement, reductions, pooling, views, ...).
  None,
  /// The operands listed in OpRule::weightOperands (the right-hand side /
  /// filter and bias of a contraction, the table of a gather).
  Listed,
  /// Every one of the first OpRule::numCandidates operands whose source is
  /// a function argument of rank <= 1 (norm scales, biases of element-wise
  /// ops; constants do not count here).
  VectorArguments,
};

/// One entry of the op table: what the cost model knows about an op.
struct OpRule {
  OpKind kind = OpKind::Unknown;
  /// Forward FLOP and main-memory bytes per execution (one microbatch).
  /// Unknown ops get the conservative estimate in estimateOp() instead.
  double flops = 0, bytesRead = 0, bytesWritten = 0;
  /// A layout op (view, transpose, cast, slice, broadcast, copy): a
  /// parameter passes through it to its consumer; operand 0 carries the
  /// data.
  bool layout = false;
  WeightOperands weights = WeightOperands::None;
  /// For WeightOperands::Listed: the operand indices (may exceed the
  /// operand count; callers check).
  llvm::SmallVector<unsigned, 2> weightOperands;
  /// For WeightOperands::VectorArguments: operands 0..numCandidates-1 are
  /// considered (a linalg op's DPS inputs, not its inits).
  unsigned numCandidates = 0;
};

/// The table entry of `op` (dispatch on its class; see OpRules.cpp).
OpRule describeOp(mlir::Operation *op);

/// Ops that do no work: ConstantLike ops (arith.constant, tosa.const,
/// tosa.const_shape), tensor.empty and ml_program.global_load_const.
bool isConstantOp(mlir::Operation *op);

/// Scalar operations per execution of `block` (one iteration of a
/// structured op): every non-cast arith / math / complex op counts 1;
/// constants, casts (CastOpInterface), index computations, tensor ops and
/// terminators count 0; nested regions add their own count.
double scalarOpsPerIteration(mlir::Block &block);

/// Backward time per forward time, per op kind (docs/CostModel.md
/// "Training"). `withWeight` applies when the op reads a parameter.
struct BackwardRatios {
  double inputWithWeight, weightWithWeight;       ///< B / F, W / F
  double inputWithoutWeight, weightWithoutWeight; ///< B / F, W / F
};
BackwardRatios backwardRatios(OpKind kind);

} // namespace rules
} // namespace cost
} // namespace pipeopt

#endif // PIPEOPT_LIB_ANALYSIS_OPRULES_H
