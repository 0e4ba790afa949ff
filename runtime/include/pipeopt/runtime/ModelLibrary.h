//===- ModelLibrary.h - Symbols of a loaded model .so -----------*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// pipeopt-run calls functions of the model's shared object by the names the
// manifest gives. dlsym(handle, name) also searches the object's
// dependencies, so a manifest naming `exit`, `abort` or `stdout` would call
// into the C library. These functions only accept functions that the model
// .so defines itself, and tie the manifest to the build that wrote it.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_MODELLIBRARY_H
#define PIPEOPT_RUNTIME_MODELLIBRARY_H

#include "pipeopt/runtime/Manifest.h"

#include <string>

namespace pipeopt {
namespace rt {

/// The function `name` defined by the shared object `handle` (from dlopen)
/// itself: an exported symbol of type STT_FUNC whose address lies in that
/// object, not in one of its dependencies. Returns nullptr and sets `why`
/// ("is not defined in <model>", "is defined in /lib/.../libc.so.6, not in
/// <model>", "is not a function (an object symbol)") otherwise.
void *findModelFunction(void *handle, const std::string &name,
                        const std::string &modelPath, std::string &why);

/// When the manifest `m` records "model_file", checks that the file
/// `modelPath` has that size and 64-bit FNV-1a hash, before it is loaded: a
/// bit flip or a short copy of the .so, or a manifest of another build, is
/// then an error naming both files instead of a crash or wrong results.
/// Throws RuntimeError.
void checkModelFile(const Manifest &m, const std::string &modelPath,
                    const std::string &manifestPath);

/// Checks that the manifest `m` (read from `manifestPath`) belongs to the
/// model `handle` (loaded from `modelPath`): when the manifest records a
/// module_hash, the model must define `int64_t pipeopt_module_hash(void)`
/// returning the same value, and the manifest file must equal the manifest
/// built into the model (`pipeopt_manifest`, the JSON the compiler wrote,
/// compared field by field, "model_file" aside; the error names the first
/// field that differs). A manifest without module_hash is refused for a
/// model that defines pipeopt_module_hash (the manifest of another build,
/// or edited). Throws RuntimeError naming both files, before any step runs.
void checkModelMatchesManifest(void *handle, const Manifest &m,
                               const std::string &modelPath,
                               const std::string &manifestPath);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_MODELLIBRARY_H
