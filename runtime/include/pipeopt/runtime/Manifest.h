//===- Manifest.h - The <model>.manifest.json written by pipeopt -*- C++
//-*-===//
//
// Describes a compiled model shared object: ranks, stages, microbatches, its
// entry points, inputs and outputs. The format is documented in
// docs/Runtime.md ("Manifest"). Loading is tolerant of missing
// optional fields and unknown fields, strict (clear error) on wrong types or
// values.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_MANIFEST_H
#define PIPEOPT_RUNTIME_MANIFEST_H

#include "pipeopt/runtime/Types.h"

#include <optional>
#include <string>
#include <vector>

namespace pipeopt {
namespace rt {

/// One model input (a function argument of the original model).
struct ManifestInput {
  int index = 0; ///< argument index used by pipeopt_rt_input_*
  Shape shape;   ///< per-microbatch shape if microbatched
  DType dtype = DType::F32;
  bool microbatched = false; ///< one slice per microbatch vs. shared
  std::string name;          ///< optional, for messages
  /// For integer inputs used as gather indices ("index_bound"): the extent
  /// they index; random data is drawn from [0, indexBound). 0 if none.
  int64_t indexBound = 0;
  /// "class_indices": the values are class indices (a cross-entropy
  /// target) and must be in [0, indexBound); pipeopt-run checks every
  /// value it loads (a class out of range would silently drop out of the
  /// loss).
  bool classIndices = false;
};

/// How the values of one output's microbatches are combined.
enum class OutputReduce {
  None, ///< every microbatch's value is kept: written as [M, ...shape]
  Mean, ///< "reduce": "mean": the mean over all M microbatches, of shape
        ///< `shape` (a training build's loss and gradients)
};

/// One model output.
struct ManifestOutput {
  int index = 0; ///< result index used by pipeopt_rt_output_*
  Shape shape;   ///< per-microbatch shape if microbatched
  DType dtype = DType::F32;
  bool microbatched = true; ///< one value per microbatch vs. one in total
  /// Optional; "loss" and "grad_<i>" in training builds, where pipeopt-run
  /// --save-grads writes the output as <name>.npy.
  std::string name;
  /// Mean needs a floating-point dtype and microbatched = true (checked).
  OutputReduce reduce = OutputReduce::None;
};

/// One scheduled action of a rank (optional in the manifest).
struct ManifestAction {
  int kind = 0; ///< pipeopt_rt_action_kind
  int stage = 0;
  int microbatch = 0;
};

/// The optimizer of a training build ("training": {"optimizer": ...}).
enum class OptimizerKind { None, Sgd, Momentum, AdamW };

/// "training": the optimizer that pipeopt-run applies at the end of every
/// step, with its hyper-parameters (defaults as documented in docs/Runtime.md,
/// "Manifest").
struct TrainingConfig {
  OptimizerKind optimizer = OptimizerKind::None;
  double lr = 0;          ///< required unless optimizer is none
  double momentum = 0.9;  ///< momentum: the buffer's decay
  double beta1 = 0.9;     ///< adamw
  double beta2 = 0.999;   ///< adamw
  double eps = 1e-8;      ///< adamw
  double weightDecay = 0; ///< sgd/momentum: L2 added to g; adamw: decoupled
  /// 0: synchronous (flush) schedules, one update per step with the mean of
  /// all M microbatches' gradients. k >= 1: asynchronous schedules
  /// (PipeDream: 1, PipeDream-2BW: the number of stages, Narayanan et al.
  /// ICML'21 §3.1): a parameter is updated as soon as k microbatch
  /// gradients of it have been reported, with their mean, counted over the
  /// whole run; a read of the parameter returns the value at that moment
  /// (the program keeps the buffer it read for the microbatch's backward:
  /// weight stashing).
  int updateEvery = 0;
};

/// Where the stage bodies of a build run (manifest "target").
enum class Target {
  Cpu,  ///< "cpu" (the default when absent): host code, host memory
  Cuda, ///< "cuda": stage bodies on a GPU; every memref the program passes
        ///< to the runtime is device memory (docs/Runtime.md, "CUDA builds")
};

/// "cpu", "cuda".
const char *targetName(Target target);

/// "parameters[]": a trainable model argument and the ranks that read it,
/// each of which keeps a copy, reports its gradient and updates it.
struct ManifestParameter {
  int index = 0;          ///< an entry of "inputs" (not microbatched, float)
  std::vector<int> ranks; ///< ascending, distinct, non-empty
};

/// "model_file": what pipeopt-compile linked.
struct ModelFileDigest {
  uint64_t bytes = 0;   ///< the .so's size
  uint64_t fnv1a64 = 0; ///< 64-bit FNV-1a of its bytes (fnv1a64, Npy.h)
};

/// Parsed manifest.
struct Manifest {
  int formatVersion = 1;
  int numRanks = 0;
  int numStages = 0;
  int numMicrobatches = 0;
  std::string schedule; ///< e.g. "1f1b" ("" if absent)
  /// "target" ("cpu" when absent).
  Target target = Target::Cpu;
  std::vector<std::string> entryPoints; ///< defaults to pipeopt_rank_<k>
  /// "module_hash": the fingerprint of the module this manifest was built
  /// with, which the model .so returns from `pipeopt_module_hash()`; absent
  /// in hand-written manifests. pipeopt-run refuses a model whose hash
  /// differs, and then requires the entry points pipeopt_rank_<k>.
  std::optional<uint64_t> moduleHash;
  /// "model_file": the size and hash of the .so pipeopt-compile linked,
  /// compared with the file before it is loaded (checkModelFile); absent
  /// in hand-written manifests.
  std::optional<ModelFileDigest> modelFile;
  std::vector<ManifestInput> inputs;   ///< sorted by index
  std::vector<ManifestOutput> outputs; ///< sorted by index
  std::vector<int> stageRank;          ///< [stage] -> rank, or empty
  /// [pipeline][stage] -> rank: every pipeline of a nested stage_rank, the
  /// flat one as a single pipeline; empty without stage_rank.
  std::vector<std::vector<int>> stageRankPipelines;
  std::vector<std::vector<ManifestAction>> actions; ///< [rank], or empty
  /// "training" (absent: optimizer none).
  TrainingConfig training;
  /// "parameters", sorted by index; empty if absent.
  std::vector<ManifestParameter> parameters;
  /// True if "parameters" lists at least one parameter: a training build
  /// whose weights pipeopt-run keeps, reduces gradients for and updates
  /// (docs/Runtime.md, "Training builds with parameters"). An empty
  /// list, or "training" alone, changes nothing.
  bool hasParameters = false;
  /// Where the manifest came from (parseManifest's `what`), for messages.
  std::string source;

  const ManifestInput *findInput(int index) const;
  const ManifestOutput *findOutput(int index) const;
  const ManifestParameter *findParameter(int index) const;
};

/// "none", "sgd", "momentum", "adamw".
const char *optimizerName(OptimizerKind kind);

/// Parses manifest JSON text; `what` prefixes error messages. Throws
/// RuntimeError on a wrong type or value (an output's "reduce" other than
/// "mean"), and on fields that contradict each other: "reduce": "mean" on an
/// output that is not microbatched or not floating-point, a forward (F) action
/// on a rank that `stage_rank` does not give that stage, the same F action
/// (stage, microbatch) listed twice, or `actions` without any action for some
/// microbatch < num_microbatches.
Manifest parseManifest(const std::string &jsonText, const std::string &what);
/// Reads and parses a manifest file.
Manifest readManifest(const std::string &path);
/// "<dir>/<stem>.manifest.json" for "<dir>/<stem>.so".
std::string defaultManifestPath(const std::string &modelPath);
/// Parses an action kind name ("F", "B", "W", "BW") or returns -1.
int parseActionKind(const std::string &name);
/// "F", "B", "W", "BW" (or "?").
const char *actionKindName(int kind);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_MANIFEST_H
