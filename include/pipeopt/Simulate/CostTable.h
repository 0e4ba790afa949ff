//===- CostTable.h - Per-stage cost tables for simulation -------*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Plain data the simulator consumes besides the machine
/// (pipeopt/Machine/Machine.h): a per-stage cost table (compute times,
/// memory, boundary sizes). It can be read from JSON; the format is
/// documented on parseCostTable() and in tools/pipeopt-explore/README.md.
///
/// Units everywhere: seconds, bytes, bytes per second.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_SIMULATE_COSTTABLE_H
#define PIPEOPT_SIMULATE_COSTTABLE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace pipeopt {
namespace sim {

//===----------------------------------------------------------------------===//
// Cost table
//===----------------------------------------------------------------------===//

/// Costs of one entry of a cost table (a stage, or a layer that the
/// simulator groups into stages, see CostTable::resample()).
struct StageCost {
  double forwardSec = 0;        ///< F time on the reference device (s).
  double backwardInputSec = 0;  ///< B (input gradient) time (s).
  double backwardWeightSec = 0; ///< W (weight gradient) time (s).
  /// Activation memory kept from F until the backward of the same
  /// microbatch (bytes per microbatch).
  double activationBytes = 0;
  /// Split-backward schedules only: bytes of the activation that stay live
  /// after B until W (bytes per microbatch). 0 by default, i.e. B frees the
  /// activation, which matches schedule::maxInFlight().
  double weightGradHoldBytes = 0;
  /// Parameters (and whatever the table author counts with them, e.g.
  /// gradients and optimizer state) of this entry (bytes).
  double weightBytes = 0;
  /// Bytes sent to the next entry per microbatch (activation forward; the
  /// gradient sent back has the same size). Ignored for the last entry.
  double boundaryBytes = 0;
  /// Optimizer step of this entry once per batch, after its weight
  /// gradients are reduced (s on the reference device; 0 = not modeled).
  double optimizerSec = 0;
  /// Bytes of this entry's weight gradient that the gradient all-reduces
  /// move (Chimera replicas, data parallelism). Negative (the default):
  /// weightBytes, i.e. the table counts parameters only.
  double gradientBytes = -1;
  /// Bytes the runtime's gradient exchanges (data-parallel buckets, Chimera
  /// replicas) move for this entry. pipeopt's runtime keeps each
  /// parameter's per-step gradient sum in double, 8 bytes per element, and
  /// exchanges those (pipe-simulate sets 8 x the parameter elements).
  /// Negative (the default): reducedGradientBytes().
  double exchangedGradientBytes = -1;
  /// Runtime time of accumulating this entry's weight gradients of one
  /// microbatch into the per-step sums (s on the reference device; added
  /// to every W and BW action of the entry; machine::Device::
  /// gradientAccumulateSecondsPerElement x parameter elements). 0: none.
  double gradientAccumulateSec = 0;
  /// Parameter elements of this entry (what the runtime's optimizer loop
  /// and gradient sums run over; 0 = not known).
  double parameterElements = 0;

  /// Full backward (BW = B + W) time (s).
  double backwardSec() const { return backwardInputSec + backwardWeightSec; }
  /// Bytes a gradient all-reduce of this entry moves (bytes).
  double reducedGradientBytes() const {
    return gradientBytes >= 0 ? gradientBytes : weightBytes;
  }
  /// Bytes a gradient exchange of this entry moves: exchangedGradientBytes
  /// when set (>= 0), else reducedGradientBytes().
  double exchangeBytes() const {
    return exchangedGradientBytes >= 0 ? exchangedGradientBytes
                                       : reducedGradientBytes();
  }
  /// The parameters alone, without the gradients and optimizer state that
  /// weightBytes may count (bytes): gradientBytes where the table sets it
  /// (pipe-simulate's and pipe-partition's tables with an optimizer
  /// factor), else weightBytes.
  double parameterBytes() const { return reducedGradientBytes(); }
};

/// A parameter shared by several entries (tied weights, e.g. a language
/// model's token embedding and LM head): every rank that holds one of the
/// entries computes a partial gradient, and those partial gradients are
/// summed by an all-reduce among these ranks after the backward pass.
struct TiedGroup {
  std::vector<int> stages; ///< Entry indices (>= 2 distinct).
  double bytes = 0;        ///< Bytes of the shared parameter's gradient.
};

/// A cost table: one StageCost per entry in model order.
struct CostTable {
  std::string name;
  std::vector<StageCost> stages;
  /// Tied parameters (empty: none).
  std::vector<TiedGroup> tied;

  int size() const { return static_cast<int>(stages.size()); }

  /// `n` identical entries: F = `stageSec`, B = `stageSec`, W = `stageSec`
  /// (so a full backward is 2F, the usual assumption; Qi et al. ICLR'24 use
  /// T_F = T_B = T_W for their hand-crafted schedules).
  static CostTable uniform(int n, double stageSec, double activationBytes = 0,
                           double weightBytes = 0, double boundaryBytes = 0);

  /// Map this table onto `n` stages. When size() == n the table is returned
  /// as is. Otherwise entry costs are spread evenly: stage s covers the
  /// fractional entry range [s*L/n, (s+1)*L/n) (L = size()), times, memory
  /// and weights are summed with fractional weights, and the boundary of a
  /// stage is the boundary of the entry that contains its right cut (for
  /// L a multiple of n: plain grouping of L/n consecutive layers). A
  /// balanced partition is the partitioner's job; this keeps the explorer
  /// usable with a per-layer table for any stage count. Optimizer times
  /// and gradient bytes are summed like the other costs (an entry without
  /// gradient_bytes counts its weight bytes); a tied group's entry e maps
  /// to the stage that holds e's first part, duplicates merged.
  CostTable resample(int n) const;
};

/// Parse a cost table from JSON text. Format:
/// \code
///   { "name": "llama2-7b-synthetic",            // optional
///     "stages": [                               // one object per entry
///       { "forward_s": 3.3e-3,                  // F time (s), required
///         "backward_input_s": 3.3e-3,           // B time (s)
///         "backward_weight_s": 3.3e-3,          // W time (s)
///         "backward_s": 6.6e-3,                 // alternative: full BW (s),
///                                               //  split as B = W = BW/2
///         "activation_bytes": 5.7e8,            // per microbatch
///         "weight_grad_hold_bytes": 0,          // optional, see StageCost
///         "weight_bytes": 3.2e9,
///         "gradient_bytes": 8.0e8,              // optional, see StageCost
///         "optimizer_s": 1.0e-3,                // optional, see StageCost
///         "boundary_bytes": 3.4e7 } ],          // to the next entry
///     "tied": [                                 // optional, see TiedGroup
///       { "stages": [0, 31], "bytes": 5.2e8 } ] }
/// \endcode
/// A top-level array of stage objects is accepted too. Negative or
/// non-finite numbers, missing forward times and tied groups with fewer
/// than two distinct entries or an entry index out of range are errors.
llvm::Expected<CostTable> parseCostTable(llvm::StringRef json);
/// Read and parse a cost table file.
llvm::Expected<CostTable> loadCostTable(llvm::StringRef path);
/// The JSON form parseCostTable() reads (round-trips).
std::string costTableToJSON(const CostTable &t);

} // namespace sim
} // namespace pipeopt

#endif // PIPEOPT_SIMULATE_COSTTABLE_H
