//===- ManifestKeys.h - The manifest's JSON keys ----------------*- C++ -*-===//
//
// Part of pipeopt. `pipeopt::manifest::k<Identifier>` for every key of
// ManifestKeys.def. Header-only and dependency-free, so that both the
// compiler (MLIR) and the runtime (no MLIR) include it.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_MANIFESTKEYS_H
#define PIPEOPT_RUNTIME_MANIFESTKEYS_H

namespace pipeopt {
namespace manifest {
#define PIPEOPT_MANIFEST_KEY(Identifier, Key)                                  \
  inline constexpr const char k##Identifier[] = Key;
#include "pipeopt/runtime/ManifestKeys.def"

/// The one value of outputs[].reduce: the mean over all microbatches.
inline constexpr const char kReduceMean[] = "mean";
} // namespace manifest
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_MANIFESTKEYS_H
