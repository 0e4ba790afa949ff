//===- CostModel.h - Per-op cost model and device specs -----*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The cost model: for every op of a model function, its floating-point
/// operations (FLOP), bytes read and written, and an estimated time on a
/// device spec; for training, the input-gradient (B) and weight-gradient (W)
/// times; parameter and saved-activation bytes. docs/CostModel.md gives every
/// formula with its source and the profile JSON; the device and its presets
/// are the machine model's (pipeopt/Machine/Machine.h).
///
/// Time of one op (roofline, Williams et al., CACM 2009):
///
///   time = max(flops / peak(dtype), bytes / bandwidth) + opOverhead
///
/// with bandwidth = the device's memory bandwidth, or its cache's bandwidth
/// when it gives one and the op's bytes fit the cache
/// (machine::Device::bytesPerSecondFor). A contraction on a device with a
/// contractionOperandBytesPerSecond takes at least flops / peak +
/// bytesRead / contractionOperandBytesPerSecond (+ opOverhead).
///
/// where `peak` is the matrix (tensor-core) peak for contractions and the
/// vector peak for everything else, and `bytes = bytesRead + bytesWritten`.
///
/// Units everywhere: seconds, bytes, FLOP, FLOP/s, bytes/s.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_ANALYSIS_COSTMODEL_H
#define PIPEOPT_ANALYSIS_COSTMODEL_H

#include "pipeopt/Analysis/Parameters.h"
#include "pipeopt/Machine/Machine.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Types.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pipeopt {
namespace cost {

//===----------------------------------------------------------------------===//
// Per-op cost
//===----------------------------------------------------------------------===//

/// How the cost of an op was derived.
enum class OpKind {
  /// No work: constants, tensor.empty, const_shape (rematerializable).
  Constant,
  /// Metadata-only: reshapes, expand/collapse_shape, casts of views,
  /// identity; also layout ops on parameters (folded, see docs).
  View,
  /// Fills / splats: writes its result only.
  Fill,
  /// Matmul, batch matmul, convolutions (matrix peak).
  Contraction,
  /// Pooling windows.
  Pooling,
  /// Elementwise arithmetic / math (incl. broadcasting).
  Elementwise,
  /// Reductions (sum, max, ...).
  Reduction,
  /// Copies: transpose, slice, insert_slice, concat, pad, gather, tile.
  DataMovement,
  /// Not recognized: conservative estimate (and a remark).
  Unknown,
};

/// "constant", "view", "fill", "contraction", "pooling", "elementwise",
/// "reduction", "data-movement", "unknown".
llvm::StringRef toString(OpKind kind);

/// The cost of one op, per microbatch (the op's tensor shapes).
struct OpCost {
  OpKind kind = OpKind::Unknown;
  /// Element type key used for the peak ("f32", "bf16", ...).
  std::string typeKey = "f32";
  /// Forward floating-point (or integer) operations.
  double flops = 0;
  /// Bytes read from and written to main memory.
  double bytesRead = 0, bytesWritten = 0;
  /// Forward time F (seconds), roofline + overhead, or measured.
  double forwardSeconds = 0;
  /// Backward input-gradient time B (seconds).
  double backwardInputSeconds = 0;
  /// Backward weight-gradient time W (seconds).
  double backwardWeightSeconds = 0;
  /// B and W floating-point operations (FLOP): the rule's B / F and W / F
  /// time ratios times `flops`, or the generated backward's own.
  double backwardInputFlops = 0, backwardWeightFlops = 0;
  /// Bytes of the parameters this op reads (function arguments or constants
  /// in weight positions, see parameterUses() in Parameters.h); shared
  /// weights are counted by every reader here, the partition pass
  /// attributes them once.
  double paramBytes = 0;
  /// Bytes this op stashes for backward per microbatch (its results; 0 for
  /// views, constants and fills).
  double savedActivationBytes = 0;
  /// True when a profile provided forwardSeconds.
  bool measured = false;

  double bytes() const { return bytesRead + bytesWritten; }
};

/// Options of the estimator.
struct CostOptions {
  /// Treat layout ops (transpose/reshape/cast/broadcast/slice) whose input is
  /// a parameter as free: GEMM libraries take transposed operands, and the
  /// rest can be done once per iteration instead of once per microbatch.
  bool foldParameterLayout = true;
};

/// Bytes of a ranked tensor / memref / vector / scalar type (elements ×
/// element bits / 8, rounded up per element to whole bytes for i1); dynamic
/// dimensions count as 1. 0 for other types (e.g. !tosa.shape).
double typeBytes(mlir::Type type);
/// Elements of a shaped type (dynamic dims count 1); 1 for scalars.
double numElements(mlir::Type type);
/// The peak-table key of an element type: f64, f32, bf16, f16, f8, i8
/// (integers <= 8 bits), i32 (wider integers, index); others "f32".
std::string typeKey(mlir::Type elementType);

/// Estimates the cost of `op` on `device` (no profile). `remark`, when
/// non-null, receives a note for unknown ops ("unknown op ...") instead of
/// the caller having to detect them.
OpCost estimateOp(mlir::Operation *op, const machine::Device &device,
                  const CostOptions &options = {},
                  std::string *remark = nullptr);

/// Roofline time (s) of `flops` and `bytes` on `device`.
double rooflineSeconds(const machine::Device &device, double flops,
                       double bytes, llvm::StringRef typeKey, bool matrix);

//===----------------------------------------------------------------------===//
// Measured profiles
//===----------------------------------------------------------------------===//

/// Measured times; see docs/CostModel.md "Profile JSON".
struct Profile {
  /// Seconds; negative = not measured. `backwardFull` (B + W measured as
  /// one action) is split into B and W in the ratio of the estimates.
  struct Times {
    double forward = -1, backwardInput = -1, backwardWeight = -1,
           backwardFull = -1;
  };
  /// Per stage k: measured times of the whole stage (the partition the
  /// profile was measured with must be present as pipe.stage attributes).
  std::map<int, Times> stages;
  /// Per op index (position among the function's top-level ops).
  std::map<int, Times> ops;
  bool empty() const { return stages.empty() && ops.empty(); }
};

/// Parses {"stages":[{"stage":k,"forward_s":t,...}], "ops":[{"index":i,
/// "forward_s":t,...}]} (either array may be absent). Per entry:
/// "forward_s", "backward_input_s", "backward_weight_s", "backward_full_s"
/// and "backward_s" (B + W), each a number or null; other keys (e.g. the
/// runtime's "ranks", "count") are ignored, so `pipeopt-run --profile`
/// output is accepted as is. Errors name the entry.
llvm::Expected<Profile> parseProfile(const llvm::json::Value &value);
/// Reads and parses a profile file; errors name the file.
llvm::Expected<Profile> loadProfile(llvm::StringRef path);
/// Replaces the times of `cost` (seconds) by the measured `times`: a
/// forward time given replaces F; B and W given replace B and W; a
/// `backwardFull` (B + W as one action) is split in the ratio of the
/// estimates B : W; a backward time not given is scaled with the forward
/// measurement (F_measured / F_estimated). Sets `cost.measured`. The rule of
/// CostAnalysis::setMeasured, also used for whole stages by pipe-simulate.
void applyMeasuredTimes(OpCost &cost, const Profile::Times &times);

//===----------------------------------------------------------------------===//
// MLIR analysis
//===----------------------------------------------------------------------===//

/// Costs of every op nested under a root op (usually a func.func or a
/// module), computed lazily and cached. Usable as an MLIR analysis
/// (`getAnalysis<cost::CostAnalysis>()`, then H100 defaults) or constructed
/// with an explicit device.
class CostAnalysis {
public:
  explicit CostAnalysis(mlir::Operation *root);
  CostAnalysis(mlir::Operation *root, machine::Machine machine,
               CostOptions options = {});

  /// The machine whose device the estimates use.
  const machine::Machine &getMachine() const { return machine; }
  /// The (cached) cost of `op`; unknown ops get a remark on first query
  /// (once per op name) when `emitRemarks` is set.
  const OpCost &get(mlir::Operation *op);
  /// Overrides the measured times of `op`; a backward time that is not
  /// given is scaled with the forward measurement (or split from
  /// `backwardFull` in the ratio of the B and W estimates).
  void setMeasured(mlir::Operation *op, const Profile::Times &times);
  /// Replaces the estimated backward times of `op` (seconds), e.g. with
  /// the cost of its generated B and W ops; measured times are kept.
  void setBackward(mlir::Operation *op, double backwardInputSeconds,
                   double backwardWeightSeconds, double backwardInputFlops,
                   double backwardWeightFlops);
  /// Replaces the estimated saved-activation bytes of `op` (per
  /// microbatch), e.g. with what its generated backward reads.
  void setSavedActivationBytes(mlir::Operation *op, double bytes);
  /// Scales forward, B and W times of `op` by `factor`, marking it measured.
  void scale(mlir::Operation *op, double factor);

  /// Emit a remark on the first unknown op of each name.
  bool emitRemarks = true;

private:
  mlir::Operation *root;
  machine::Machine machine;
  CostOptions options;
  llvm::DenseMap<mlir::Operation *, OpCost> cache;
  llvm::StringMap<bool> remarked;
};

/// Applies `profile` to the top-level ops of `body` (a func body block):
/// per-op entries set that op's times; per-stage entries scale the estimates
/// of the ops whose pipe.stage is k so that they sum to the measured stage
/// time. Errors for per-stage profiles on ops without pipe.stage, for stage
/// entries that match no op, and for op indices out of range.
llvm::Error applyProfile(CostAnalysis &analysis, mlir::Block &body,
                         const Profile &profile);

} // namespace cost
} // namespace pipeopt

#endif // PIPEOPT_ANALYSIS_COSTMODEL_H
