//===- Inputs.h - model inputs of a run -------------------------*- C++ -*-===//
//
// The model inputs of a run: seeded random data, --input .npy files and
// tensors given in memory (Session::setInput), checked against the
// manifest. Runner.h includes it.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_INPUTS_H
#define PIPEOPT_RUNTIME_INPUTS_H

#include "pipeopt/runtime/Context.h"
#include "pipeopt/runtime/RunOptions.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace pipeopt {
namespace rt {

/// Builds the inputs for `manifest` from `options` (files or seeded random
/// data). Throws RuntimeError naming the input and file on bad data.
InputStore loadInputs(const Manifest &manifest, const RunOptions &options);

/// Tensors given in memory for model inputs, by input index: the tensor and
/// a label that error messages name in place of a file ("input 'x'").
using GivenInputs = std::map<int, std::pair<HostTensor, std::string>>;

/// loadInputs with inputs given in memory: an input in `given` takes that
/// tensor (in any form a single --input file may have: [M, ...shape],
/// [M*d0, d1, ...], a dataset [N, M, ...shape] with N = options.iterations,
/// or exactly the shape of a shared input), else its options.inputFiles,
/// else its entry of options.inputSet (readInputSet), else seeded random
/// data when `randomForMissing`, else RuntimeError
/// ("input 1 ('w') of f32[3] was not set ...").
InputStore loadInputs(const Manifest &manifest, const RunOptions &options,
                      const GivenInputs &given, bool randomForMissing);

/// The model input an entry of an input set names (readInputSet): its
/// name without a trailing ".npy" is the manifest's "name" of an input, or
/// its index as "<i>", "arg_<i>", "arg<i>" or "input_<i>" ("3.npy",
/// "arg_3.npy", "arg3", "input_3"); nullptr if it names none.
const ManifestInput *inputForEntryName(const Manifest &manifest,
                                       const std::string &entry);

/// Every model input at once: `path` is a directory, whose `*.npy` files
/// are read (other files are ignored), or an .npz archive (a zip file as
/// numpy.savez and numpy.savez_compressed write it: stored or deflated
/// entries, read with libzip), whose entries must all be `.npy` arrays.
/// Each is named as inputForEntryName says. Returns the tensors unchecked,
/// by input index, each labelled "<dir>/<file>" or "<archive>:<entry>"
/// for messages. Throws RuntimeError naming the path and entry: a path
/// that is neither, a damaged archive, an entry that names no input
/// (listing the accepted forms and the inputs), two entries for one
/// input, an entry that is not .npy, encrypted or compressed with a
/// method libzip cannot read, a malformed .npy, no entry at all.
GivenInputs readInputSet(const Manifest &manifest, const std::string &path);

/// Checks tensor `t` for model input `input` as a single --input file is
/// checked (dtype, the accepted shapes, a dataset's step count against
/// `iterations`) and returns it in the InputStore's layout; `dataSteps` is
/// set to the dataset's step count (0: not a dataset). Errors start with
/// `origin` (a file name or a label). Throws RuntimeError.
HostTensor checkInputTensor(const Manifest &manifest,
                            const ManifestInput &input, HostTensor t,
                            const std::string &origin, int iterations,
                            int &dataSteps);

/// For an input the manifest marks "class_indices" (a cross-entropy
/// target): every value of `t` must be in [0, index_bound). Throws
/// RuntimeError starting with `origin`, naming the element.
void checkClassIndices(const ManifestInput &input, const HostTensor &t,
                       const std::string &origin);

/// Deterministic pseudo-random data for model input `input` of a model with
/// `numMicrobatches` microbatches, from `seed`: shape [M, ...input.shape]
/// for a microbatched input, input.shape otherwise. The data depends only on
/// (input.dtype, input.shape, input.microbatched, numMicrobatches, seed), so
/// it is the same on every rank and in every build of the same model
/// (reference and pipelined, compiled with the same --microbatch-args).
///
/// Floating-point inputs:
///  - microbatched inputs (data: activations, images, embeddings) are
///    uniform in [-1, 1), unscaled, independently for every microbatch;
///  - other inputs (weights) are classified by their shape without its
///    leading size-1 dimensions (TOSA's rank-3 matmul operands [1, K, N],
///    broadcast biases [1, 1, N]): rank <= 1 after that (biases,
///    normalization scales, means and variances) is uniform in [0.5, 1.5),
///    so that variances stay positive; otherwise uniform in
///    [-sqrt(3 / fan_in), sqrt(3 / fan_in)) with fan_in = the product of all
///    dimensions but the first, which has variance 1 / fan_in (LeCun-style).
/// Integers are uniform in [0, 10), or in [0, index_bound) for the inputs
/// the manifest marks as gather indices (token ids of an embedding, whose
/// table has index_bound rows), i1 in {0, 1}.
///
/// Rationale: the runs that compare a pipelined build with the reference
/// must detect a microbatch mix-up (a stage that computes on, or a rank that
/// receives, another microbatch's data). That needs outputs that depend
/// clearly on the data: the data is O(1) and differs per microbatch, and the
/// weights preserve the variance of the activations through matmul and
/// convolution layers, so deep models neither overflow nor shrink to their
/// biases. fan_in is exact for weights stored output-dimension first
/// ([out, in] linear weights, OIHW and OHWI convolution kernels); for
/// [in, out] matrices it is `out`, which only changes the scale of that
/// layer by sqrt(in / out). Which inputs are data is the manifest's
/// "microbatched" flag (pipeopt-compile --microbatch-args).
HostTensor randomInput(const ManifestInput &input, int numMicrobatches,
                       uint64_t seed);

/// Data parallelism (--data-parallel D): sets input `meta` of replica
/// `replica`'s store `out` (a build of `numMicrobatches` = M) from `global`,
/// the store of the whole run, built for D x M microbatches (loadInputs
/// with the manifest's num_microbatches multiplied by D). A microbatched
/// input's [D*M, ...shape] gives the replica microbatches [replica*M,
/// (replica+1)*M); a dataset [N, D*M, ...shape] gives that part of every
/// step's slice. Other inputs are copied. Does nothing when `global` lacks
/// the input.
void setReplicaInput(InputStore &out, const InputStore &global,
                     const ManifestInput &meta, int numMicrobatches,
                     int replicas, int replica);

/// Seed of model input `index` for the run seed `seed` (pipeopt-run --seed).
uint64_t inputSeed(uint64_t seed, int64_t index);

/// Parses a --seed value: digits only, below 2^64; throws RuntimeError
/// naming the value otherwise ("-1" and "abc" are rejected).
uint64_t parseSeed(const std::string &value);

/// Creates `dir` and its missing parents (mkdir -p, std::filesystem: no
/// shell); throws RuntimeError naming the directory that cannot be created
/// and the reason.
void ensureDir(const std::string &dir);

/// Checks every input of `m` (with its microbatch dimension) for element
/// count / byte size overflow and against the runner's limit of 64 GiB per
/// input before anything is allocated; throws a RuntimeError naming the
/// input and its size.
void checkInputSizes(const Manifest &m);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_INPUTS_H
