//===- ShardedOptimizer.h - ZeRO-1 optimizer-state sharding ------*- C++
//-*-===//
//
// The optimizer step of a data-parallel group with the optimizer state
// partitioned across its replicas: ZeRO stage 1 (P_os, optimizer-state
// partitioning; Rajbhandari et al., "ZeRO: Memory Optimizations Toward
// Training Trillion Parameter Models", SC 2020, §5). Internal to the
// runtime: pure logic over a Communicator (the data-parallel group), with no
// knowledge of the launcher.
//
// Layout. The parameters of one pipeline rank are concatenated in ascending
// parameter index (N elements in all) and padded to D * S elements, S =
// ceil(N / D); replica d owns elements [d*S, (d+1)*S) of the concatenation
// (the padding, at the end, is never read). A parameter may straddle
// replicas; one smaller than D, or one outside a replica's range, has an
// empty slice there.
//
// One step: reduce-scatter of the D replicas' gradient sums (blocks of S
// doubles; replica d receives the sum of block d), times `scale`; each
// replica updates the weights of the elements it owns with optimizerStep
// on its slice of the state; an all-gather of the updated slices gives
// every replica all the weights.
//
// Why it is exact. Every optimizer of Optimizer.h (SGD, SGD with momentum,
// AdamW) is element-wise: element i of the new weight and state depends
// only on element i of the weight, the gradient and the state, and on the
// step count t (AdamW's bias corrections), which every replica counts for
// every parameter (also where its slice is empty: optimizerStep counts a
// step of zero elements). So updating a slice gives the bits of the same
// elements of the full update, provided the gradient sums have the same
// bits: the loopback communicator sums a reduce-scatter and an all-reduce
// alike, once per element in ascending rank order (Communicator.h), so the
// sharded step is bit-identical to the unsharded one (all-reduce the sums,
// scale, optimizerStep on the full vectors). With MPI the order of the
// additions is the library's: Open MPI 4.1 sums a reduce-scatter and an
// in-place all-reduce alike (Communicator.h), so the step is bit-identical
// there too, but no MPI promises it; NCCL's orders are its own. Every
// replica ends with the same weights in any case (the all-gather copies
// the owner's bits).
//
// Memory. The state of AdamW is two values per element (m and v), 16*N
// bytes per rank unsharded in f64 (8*N in f32: optimizerStateDType);
// sharded, a rank keeps 16*S = 16*ceil(N/D) bytes (8*S in f32; momentum:
// half of that; SGD keeps none), plus the owned
// part of the mean gradient, 8*S bytes instead of 8*N. A step needs
// transient buffers of (D + 2) * S doubles (the padded gradient sums, the
// owned sums, the gathered weights).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_SHARDEDOPTIMIZER_H
#define PIPEOPT_RUNTIME_SHARDEDOPTIMIZER_H

#include "pipeopt/runtime/Communicator.h"
#include "pipeopt/runtime/Optimizer.h"

#include <map>
#include <utility>
#include <vector>

namespace pipeopt {
namespace rt {

/// The optimizer state of one rank's parameters sharded across the D ranks
/// of its data-parallel group (replica d owns a contiguous 1/D of the
/// concatenation of the parameters, in ascending parameter index; the
/// padding at the end is never read).
class ShardedOptimizer {
public:
  /// `sizes`: parameter index -> number of elements. `replicas` = D,
  /// `replica` = d. Throws RuntimeError if D < 1 or d is not in [0, D).
  ShardedOptimizer(const std::map<int, size_t> &sizes, int replicas,
                   int replica);

  /// One ZeRO-1 step over the data-parallel group `dp` (size D, this rank
  /// = d): `gradSums[p]` holds this replica's gradient sum of parameter p
  /// (count = sizes[p]); the sums are reduce-scattered over `dp`,
  /// multiplied by `scale` (the caller passes 1/(D*M)), the owned elements
  /// are updated with optimizerStep(config, ...) using this replica's shard
  /// of the state, and the updated weights are all-gathered into
  /// `weights[p]` (doubles; the caller rounds them to the parameter dtype).
  /// `weights[p]` holds the current weights of parameter p on entry (every
  /// replica the same). Also keeps the owned part of the mean gradient (for
  /// checkpoints). Collective over `dp`: every replica calls it at the same
  /// steps. Throws RuntimeError if `dp` is not the D-rank group with this
  /// rank d, or a parameter is missing from `gradSums`/`weights` or has the
  /// wrong size (naming the parameter and the replica), TimeoutError /
  /// PeerExitedError from the collectives (`timeoutS` seconds each).
  void step(Communicator &dp, const TrainingConfig &config,
            std::map<int, std::vector<double>> &gradSums,
            std::map<int, std::vector<double>> &weights, double scale,
            double timeoutS);

  /// Collective over `dp`: dp rank 0 receives every parameter's full
  /// optimizer state and mean gradient (for a checkpoint or --output-dir);
  /// other ranks get an empty map. A part of the state that does not exist
  /// yet (before the first step; `second` but for AdamW; `first` for SGD)
  /// is an empty vector, as in the unsharded OptimizerState. Every other
  /// replica sends its block of 3*S + 4*P doubles (P parameters) to dp rank
  /// 0, which alone holds all D of them (an all-gather would give every
  /// replica the full state that ZeRO-1 saves). Throws RuntimeError if the
  /// replicas counted different numbers of steps or a block is malformed;
  /// TimeoutError / PeerExitedError from the messages.
  std::map<int, std::pair<OptimizerState, std::vector<double>>>
  gather(Communicator &dp, double timeoutS);

  /// Takes this replica's shard of full per-parameter states (a resumed
  /// checkpoint, gathered with any number of replicas): for each parameter
  /// its step count and the owned elements of `first` and `second` (each
  /// empty or sizes[p] long); and of `meanGrads[p]` if given (the mean
  /// gradient that gather then returns until the next step). Throws
  /// RuntimeError naming the parameter if one is missing from `full` or a
  /// vector has the wrong size.
  void load(const std::map<int, OptimizerState> &full,
            const std::map<int, std::vector<double>> &meanGrads = {});

  /// S = ceil(N / D): the elements each replica owns (the last ones may be
  /// padding).
  size_t shardElements() const { return shard; }
  /// Parameter p's elements owned by this replica: [first, second) of its
  /// own numbering (first == second if none).
  std::pair<size_t, size_t> ownedRange(int p) const;
  /// Bytes of optimizer state this replica holds (the `first` and `second`
  /// buffers of its slices): at most 16*S for AdamW (8*S in f32).
  size_t stateBytes() const;

private:
  struct Slice {
    size_t size = 0;              ///< the parameter's elements
    size_t offset = 0;            ///< of its first element in the concatenation
    size_t lo = 0, hi = 0;        ///< owned elements of the parameter
    OptimizerState state;         ///< of elements [lo, hi)
    std::vector<double> meanGrad; ///< of elements [lo, hi); empty before
                                  ///< the first step
  };
  void checkGroup(const Communicator &dp, const char *what) const;

  std::map<int, Slice> slices;
  int replicas, replica;
  size_t total = 0; ///< N
  size_t shard = 0; ///< S
};

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_SHARDEDOPTIMIZER_H
