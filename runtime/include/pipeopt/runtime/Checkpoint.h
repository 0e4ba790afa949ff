//===- Checkpoint.h - training checkpoints ----------------------*- C++ -*-===//
//
// Training checkpoints: the format (docs/Runtime.md, "Checkpoints"),
// reading and verifying them for --resume / Session::resume, and writing
// them atomically. Runner.h includes it.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_CHECKPOINT_H
#define PIPEOPT_RUNTIME_CHECKPOINT_H

#include "pipeopt/runtime/Manifest.h"
#include "pipeopt/runtime/Npy.h"
#include "pipeopt/runtime/Types.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pipeopt {
namespace rt {

//===----------------------------------------------------------------------===//
// Checkpoints (docs/Runtime.md, "Checkpoints")
//===----------------------------------------------------------------------===//

/// A parameter as rank 0 gathers it (from the lowest rank of its list), or
/// as a checkpoint holds it.
struct GatheredParameter {
  HostTensor value;
  std::vector<double> meanGrad, first, second;
  int64_t step = 0; ///< optimizer updates applied so far
};

/// A checkpoint read back for --resume.
struct Checkpoint {
  int step = 0;     ///< training steps done
  std::string path; ///< the step directory read (<dir>/step-<k>)
  std::vector<float> losses;
  std::map<int, GatheredParameter> parameters;
  /// The checkpoints that were skipped before this one, and why (a missing
  /// or damaged `latest`, a corrupt or incomplete step directory); the
  /// caller prints them.
  std::vector<std::string> notes;
};

/// The checkpoint format version written and read (checkpoint.json
/// "format_version").
constexpr int kCheckpointFormatVersion = 1;

/// Reads the checkpoint in `dir` (a --checkpoint-dir) for the manifest `m`:
/// the one `dir`/latest names, or, when `latest` is missing, empty, or names
/// a missing, incomplete or corrupt checkpoint, the newest step-<k> that
/// verifies (Checkpoint::notes say which were skipped and why). Every file
/// is checked against the size and FNV-1a checksum in checkpoint.json, and
/// every field is range-checked. Throws RuntimeError naming the file, the
/// field and the reason when no checkpoint verifies, and at once when a
/// verified checkpoint does not fit the manifest (other optimizer,
/// microbatches, parameters).
Checkpoint readCheckpoint(const Manifest &m, const std::string &dir);

/// Reads and verifies the one checkpoint directory `stepDir` (see
/// readCheckpoint); throws RuntimeError naming the file and field.
Checkpoint readCheckpointStep(const Manifest &m, const std::string &stepDir);

/// Writes the checkpoint of step `step` into `dir`/step-<step> atomically:
/// every file into `dir`/tmp-<step> (each written with writeFileAtomic and
/// listed with its size and checksum in checkpoint.json, written last), the
/// directory synced and renamed, then `dir`/latest replaced atomically. On
/// any failure the temporary directory is removed, `latest` still names the
/// previous complete checkpoint, and RuntimeError names the file and the
/// reason.
void writeCheckpoint(const Manifest &m, const std::string &dir, int step,
                     const std::vector<float> &losses,
                     const std::map<int, GatheredParameter> &params);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_CHECKPOINT_H
