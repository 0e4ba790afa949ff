//===- PipeToRuntime.h - pipe programs -> runtime calls ----------*- C++
//-*-===//
//
// Part of pipeopt. Helpers around convert-pipe-to-runtime (the pass itself is
// declared in pipeopt/Conversion/Passes.h).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_CONVERSION_PIPETORUNTIME_PIPETORUNTIME_H
#define PIPEOPT_CONVERSION_PIPETORUNTIME_PIPETORUNTIME_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace pipeopt {

/// Attribute of the placeholder `memref.global`s through which
/// convert-pipe-to-runtime (option input-views) reads model inputs in place:
/// `pipeopt.input_view = array<i64: argIndex, microbatch>`. Each
/// `memref.get_global` of such a global stands for a read-only view of the
/// runtime's data of that input (pipeopt_rt_input_view_<T>); the globals
/// are declarations with no storage, and pipeopt-materialize-input-views
/// replaces them, after buffer deallocation, by the view calls.
inline constexpr llvm::StringLiteral kInputViewAttrName = "pipeopt.input_view";

/// Name of the entry point of rank `rank` in a compiled model
/// ("pipeopt_rank_<rank>"), as listed in the manifest's `entry_points`.
std::string runtimeEntryPointName(int64_t rank);

/// Turns an unpartitioned model into a single-rank, single-stage forward
/// program: the model function `function` (or, if empty, the module's only
/// public function with a body) gets `pipe.stage = 0`, and a
/// `pipe.program @<function>_rank0 rank 0 of 1 microbatches <numMicrobatches>`
/// with `schedule = "unpartitioned"` is added that, for every microbatch in
/// order, reads all model arguments (pipe.input), calls the function once
/// (pipe.forward ... stage 0) and writes all its results (pipe.output).
///
/// A model result with the result attributes `pipe.reduce = "mean"` and / or
/// `pipe.output_name = "<name>"` gets `reduce mean` / `name "<name>"` on its
/// pipe.output ops (the attributes are moved there, off the function): the
/// runtime then writes the mean over microbatches instead of the stacked
/// values (a training build's loss and gradients; pipeopt-compile --train
/// sets them on `@f_grad`). Another `pipe.reduce` value, or an empty name, is
/// an error.
///
/// This is the reference build `pipeopt-compile --reference` lowers through
/// convert-pipe-to-runtime exactly like a pipelined program, so pipelined
/// outputs can be compared with the unpartitioned model's. It does not use
/// the partitioner or the scheduler. Errors (no or several candidate
/// functions, arguments or results that are not ranked tensors) are emitted
/// as diagnostics and reported as failure.
mlir::LogicalResult buildSingleStageProgram(mlir::ModuleOp module,
                                            llvm::StringRef function,
                                            int64_t numMicrobatches);

/// Keeps `roots` and what they reach: functions they call (transitively)
/// become private, so that pipe-prepare's inliner folds them in and removes
/// them; functions with a body they do not reach (other models, unused
/// helpers) are erased, so that they are neither partitioned nor compiled.
/// The roots keep their visibility; declarations are kept.
void keepReachedFunctions(mlir::ModuleOp module,
                          llvm::ArrayRef<mlir::func::FuncOp> roots);

/// The model function of `module`: the function named `function` (which must
/// have a body), or, if `function` is empty, the only public function with a
/// body. Errors are diagnostics: no such function, or zero / several
/// candidates (each listed in a note; `hint` says how to name one, e.g.
/// "pass --function=NAME").
mlir::FailureOr<mlir::func::FuncOp> findModelFunction(mlir::ModuleOp module,
                                                      llvm::StringRef function,
                                                      llvm::StringRef hint);

/// The smallest extent that `root` (a function argument of integer tensor
/// type, or any value) indexes through a data-dependent tensor.extract (a
/// gather, e.g. an embedding lookup or a lowered tosa.gather): the value,
/// followed through linalg regions (as an input operand, and back out
/// through linalg.yield), integer casts and tensor reshapes, ends up as index
/// `d` of a `tensor.extract` from a tensor whose dimension `d` is static.
/// nullopt if `root` reaches no such index. Works on linalg-on-tensors
/// (after TOSA lowering). Random inputs in [0, bound) stay in range;
/// convert-pipe-to-runtime writes it to the manifest as "index_bound".
std::optional<int64_t> gatherIndexBound(mlir::Value root);

} // namespace pipeopt

#endif // PIPEOPT_CONVERSION_PIPETORUNTIME_PIPETORUNTIME_H
