//===- Parameters.h - Which values are model parameters ----------*- C++
//-*-===//
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
/// The same file classifies a function's arguments into per-example data
/// and parameters (classifyArguments below), for pipe-differentiate (which
/// arguments are data and which are trainable) and convert-pipe-to-runtime
/// (which model arguments `microbatch-args=auto` splits per microbatch).
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_ANALYSIS_PARAMETERS_H
#define PIPEOPT_ANALYSIS_PARAMETERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace mlir {
class OpPassManager;
} // namespace mlir

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

/// What an argument of a function is (classifyArguments).
enum class ArgumentKind {
  /// Per-example data: differs per microbatch (activations, token ids,
  /// labels).
  Data,
  /// A floating-point tensor that is not data: a weight, trainable by
  /// default, the same for every microbatch.
  Parameter,
  /// Neither: an integer or non-tensor argument that does not carry the
  /// batch dimension (never a parameter).
  Other,
};

/// Classifies the arguments of `f` (one entry per argument, in order).
/// `f`'s results are taken to be per-example values (a model's outputs, a
/// stage function's activations); a function returning gradients of its
/// weights is not one to classify. A function with no body, or with more
/// than one block, has no data: its float tensor arguments are parameters.
///
/// The rule (a batch-dimension analysis): an argument is **data** when it
/// carries the batch dimension to the results, i.e. its dimension r reaches
/// dimension 0 of some result of rank >= 1, followed backwards through
///   - linalg ops: from the loop at the result's position to every operand
///     position indexed by that loop (the indexing maps); a broadcast
///     operand (constant 0 or no such loop in its map) is not reached;
///   - reshapes (expand / collapse_shape; not through a unit dimension an
///     expand adds in front: [N] -> [1, N]), slices, pads, casts, concats,
///     insert_slice and element-wise arith / math on tensors;
/// with two exceptions, which make weights that share a unit batch loop
/// with the data weights:
///   - an operand in a weight position of parameterUses (a contraction's
///     right-hand side or filter, a gathered table, a rank <= 1 element-wise
///     argument) is never followed;
///   - at a batch loop of extent 1, a floating-point operand of an
///     all-parallel (element-wise) op that traces to a function argument and
///     is broadcast against another input of that op (a loop of extent
///     != 1 that the other input indexes and the operand does not) is not
///     followed: it is combined with the data by broadcast.
/// A function holding TOSA ops is classified on a copy lowered to linalg
/// (buildLowerTosaForAnalysis), as pipe-differentiate sees it.
///
/// When no argument is reached (a batch-1 model whose batch dimension is
/// squeezed away, or results of rank 0 such as a loss), the data are the
/// arguments of rank >= 2 with a leading 1 that no op reads as a parameter
/// (weight position or broadcast operand as above, seen through reshapes
/// and casts).
///
/// Integer tensors are never parameters (nothing is trained in an integer
/// type): an integer tensor argument of rank >= 1 is **data** when its
/// (static) dimension 0 is the batch's extent: dimension 0 of some data
/// argument found above, or, when none was found (a model that returns its
/// own scalar loss, whose token ids and labels are its only data),
/// dimension 0 of the integer tensor arguments themselves when they all
/// agree. When they do not, the integer arguments stay **other** and
/// `undecided` (if given) receives why: pipe-differentiate makes that an
/// error asking for `microbatch-args`.
///
/// Every other floating-point tensor argument is a **parameter**;
/// everything else (integers that are not data) is **other**.
///
/// Examples:
///   - examples/mlp4.tosa.mlir, `x: [1, 8, 64]`, `w0: [1, 64, 128]`,
///     `b0: [1, 1, 128]` (`tosa.add %m0, %b0`): x is data (the matmul's
///     left-hand side at its batch position), w0 a parameter (right-hand
///     side), b0 a parameter (broadcast along the 8 rows of the computed
///     `%m0`, at the unit batch loop; in a stage function where `%m0` is
///     an argument, too);
///   - linalg `x: [4, 16]`, `w: [16, 8]`, `b: [1, 8]` broadcast as `(0, j)`:
///     x is data, w and b parameters (b's map does not reach the batch);
///   - an embedding: token ids `i64 [1, 40]` indexing a gather are data,
///     the table `[32000, 4096]` a parameter;
///   - a language model that returns its loss, `(table, ..., ids: i64
///     [2, 32]) -> tensor<f32>` (transformers' `labels=ids`): ids is data
///     (the only integer tensor; its dimension 0 is the batch);
///   - a batch-1 model whose batch dimension is squeezed away
///     (`x: [1, 784]` reshaped to `[784]`): x is data by the fallback;
///   - a loss target appended by pipe-differentiate is data (it is marked
///     `pipe.microbatched` by the pass that appends it).
/// Ambiguity at batch 1: a per-example value of size 1 on every dimension
/// it is broadcast along (an attention mask `[1, 1, 1, S]` added to scores
/// `[1, H, S, S]`) is indistinguishable from a parameter and is classified
/// as one; name the data (`microbatch-args`) for such a model.
llvm::SmallVector<ArgumentKind>
classifyArguments(mlir::func::FuncOp f, std::string *undecided = nullptr);

/// The arguments classifyArguments(f) calls data, ascending.
llvm::SmallVector<unsigned> dataArguments(mlir::func::FuncOp f,
                                          std::string *undecided = nullptr);

/// Adds the passes that lower TOSA (and element-wise arith / math on
/// tensors) to linalg on tensors, followed by canonicalization, to a
/// pass manager on func.func: the form pipe-differentiate differentiates
/// and classifyArguments analyses.
void buildLowerTosaForAnalysis(mlir::OpPassManager &pm);

} // namespace cost
} // namespace pipeopt

#endif // PIPEOPT_ANALYSIS_PARAMETERS_H
