//===- OptionRange.h - Range checks for numeric pass options -*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Helper of the pipe-* passes and the program bridge (lib/Programs): integer
/// pass options and integer attributes are int64_t, the schedule and partition
/// libraries take int. Every such value is checked against a range here before
/// it is narrowed, so an out-of-range value is an error instead of being
/// silently truncated to 32 bits or taken for a default.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_SUPPORT_OPTIONRANGE_H
#define PIPEOPT_SUPPORT_OPTIONRANGE_H

#include "pipeopt/Schedule/Schedule.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace pipeopt {

/// Largest count a pass accepts (pipeopt/Schedule/Schedule.h).
constexpr int64_t kMaxPipelineCount = schedule::kMaxPipelineCount;

/// Emits "<pass>: <name> must be between <lo> and <hi>, got <value>" at
/// `loc` and fails when `value` is outside [lo, hi].
inline mlir::LogicalResult checkIntRange(mlir::Location loc,
                                         llvm::StringRef pass,
                                         llvm::StringRef name, int64_t value,
                                         int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi)
    return mlir::success();
  return mlir::emitError(loc) << pass << ": " << name << " must be between "
                              << lo << " and " << hi << ", got " << value;
}

/// Checks an `optimizer-factor` option (extra bytes per parameter byte for
/// gradients and optimizer state): a finite number >= 0, or -1 for the
/// pass's default. Emits "<pass>: optimizer-factor must be ..." at `loc`.
inline mlir::LogicalResult
checkOptimizerFactor(mlir::Location loc, llvm::StringRef pass, double value) {
  if (value == -1 || (value >= 0 && value <= 1e6))
    return mlir::success();
  return mlir::emitError(loc)
         << pass
         << ": optimizer-factor must be a finite number between 0 and 1e6 "
            "(or -1 for the default), got "
         << value;
}

} // namespace pipeopt

#endif // PIPEOPT_SUPPORT_OPTIONRANGE_H
