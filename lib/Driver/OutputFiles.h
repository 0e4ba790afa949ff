//===- OutputFiles.h - the files a compilation writes ------------*- C++
//-*-===//
//
// Part of pipeopt. Internal to the driver: checks of output paths before any
// work, and the manifest written to a temporary that is renamed into place
// only when the build has succeeded.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_LIB_DRIVER_OUTPUTFILES_H
#define PIPEOPT_LIB_DRIVER_OUTPUTFILES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace pipeopt::driver {

/// A file a compilation writes, with the option that names it (for errors).
struct OutputFile {
  std::string role;
  std::string path;
};

/// Checks, before any work, that every file in `outputs` can be written
/// without destroying another: its directory exists (`tool` does not create
/// directories), it is not a directory, and it is neither `input` nor
/// another output. "-" (stdout) is exempt.
llvm::Error checkOutputs(llvm::StringRef tool, llvm::StringRef input,
                         llvm::ArrayRef<OutputFile> outputs);

/// Writes what `fn` prints to `path` ("-": stdout).
llvm::Error writeText(llvm::StringRef path,
                      llvm::function_ref<void(llvm::raw_ostream &)> fn);

/// `<dir>/<stem>` of `path` without its last extension.
std::string stemOf(llvm::StringRef path);

/// The manifest is written to a unique temporary file next to it and
/// renamed into place only when the build has succeeded, so a failed build
/// (a failed link, ...) never leaves a fresh manifest next to an old or
/// missing shared object. The temporary file is removed otherwise.
class PendingManifest {
public:
  PendingManifest() = default;
  PendingManifest(const PendingManifest &) = delete;
  PendingManifest &operator=(const PendingManifest &) = delete;
  ~PendingManifest();

  /// Creates the temporary file for the manifest `path`; returns the path
  /// convert-pipe-to-runtime writes ("-", stdout, a symbolic link and an
  /// existing file that is not a regular one, such as /dev/stdout, are
  /// written directly).
  llvm::Expected<std::string> start(llvm::StringRef path);

  /// The temporary the manifest is being written to, if it is a file that
  /// will be renamed into place (not "-" or a device).
  std::optional<std::string> pendingPath() const;

  /// Moves the manifest into place (after the last step succeeded).
  llvm::Error commit();

private:
  std::string tmp, final;
};

} // namespace pipeopt::driver

#endif // PIPEOPT_LIB_DRIVER_OUTPUTFILES_H
