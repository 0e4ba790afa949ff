//===- Parameters.h - Which values are model parameters ----------*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Parameter (weight) detection, shared by the cost model (OpCost::
/// paramBytes), the partitioner's graph builder (pipe-partition: which
/// weights each node reads, attributed once), pipe-simulate (each stage's
/// weight bytes) and convert-pipe-to-runtime (microbatch-args=auto: model
/// arguments read as weights are not split per microbatch).
///
/// A *parameter source* is a function argument (an argument of the entry
/// block of a FunctionOpInterface op) or a constant tensor (ConstantLike,
/// ml_program.global_load_const; not tensor.empty). A value *traces to* a
/// source when it is the source or the result of a layout op (a view:
/// reshape, expand/collapse_shape, tensor/memref casts, tosa.identity; a
/// transpose, tosa.cast, slice, linalg.broadcast / copy, a yield-only
/// linalg.generic) whose data operand traces to it.
///
/// An operand of an op is a *parameter* when it traces to a source and is in
/// a weight position of the op's kind (the table in lib/Analysis/
/// OpRules.cpp):
///   - contractions (linalg matmul / convolution / any generic that is one,
///     tosa.matmul): the right-hand side / filter (the second input);
///     tosa.conv2d, conv3d, depthwise_conv2d, transpose_conv2d also the bias;
///   - tosa.gather: the table (an embedding);
///   - element-wise ops (TOSA element-wise, arith / math, and every other
///     linalg structured op, its DPS inputs only): an input whose source is
///     a function argument of rank <= 1 (norm scales, biases); a constant
///     does not count here;
///   - nothing else (data movement, reductions, pooling, views, unknown ops).
///
/// The users differ only in which sources they keep: the cost model and the
/// partitioner count function arguments and constants;
/// convert-pipe-to-runtime lists function arguments only (a constant is not
/// a model input).
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_ANALYSIS_PARAMETERS_H
#define PIPEOPT_ANALYSIS_PARAMETERS_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <vector>

namespace pipeopt {
namespace cost {

/// True if `value` traces to a parameter source (see the file comment):
/// a function argument or a constant tensor, possibly seen through layout
/// ops. Returns the source (the block argument or the constant's result) in
/// `root`.
bool tracesToParameterSource(mlir::Value value, mlir::Value *root = nullptr);

/// One parameter read by an op: operand `operand` of `user` is a weight
/// whose source is `root`.
struct ParameterUse {
  mlir::Operation *user = nullptr;
  unsigned operand = 0;
  mlir::Value root;
};

/// The parameters `op` reads, in operand order (see the file comment for
/// the weight positions of each op kind).
llvm::SmallVector<ParameterUse, 2> parameterUses(mlir::Operation *op);

/// The operand indices of parameterUses(op).
llvm::SmallVector<unsigned> parameterOperands(mlir::Operation *op);

/// The parameters of every op nested under a root op (usually a function),
/// found once. Usable as an MLIR analysis (`getAnalysis<
/// cost::ParameterAnalysis>()`).
class ParameterAnalysis {
public:
  explicit ParameterAnalysis(mlir::Operation *root);

  /// The parameters `op` reads (empty for ops outside the root).
  llvm::ArrayRef<ParameterUse> usesBy(mlir::Operation *op) const;
  /// Every distinct source, in the order of its first use (ops in pre-order).
  llvm::ArrayRef<mlir::Value> sources() const { return roots; }
  /// The numbers of the arguments of function `fn` (an entry-block argument
  /// of `fn`) that some op reads as a parameter, ascending.
  llvm::SmallVector<unsigned> argumentNumbers(mlir::Operation *fn) const;

private:
  llvm::DenseMap<mlir::Operation *, llvm::SmallVector<ParameterUse, 2>> uses;
  std::vector<mlir::Value> roots;
};

} // namespace cost
} // namespace pipeopt

#endif // PIPEOPT_ANALYSIS_PARAMETERS_H
