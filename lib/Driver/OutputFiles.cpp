//===- OutputFiles.cpp - the files a compilation writes -------------------===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//

#include "OutputFiles.h"

#include "mlir/Support/FileUtilities.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace pipeopt::driver;

static llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// The parent directory of `path` ("." for a bare file name).
static std::string parentOf(llvm::StringRef path) {
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  return dir.empty() ? std::string(".") : dir.str();
}

/// `path` with its directory resolved (symlinks, "..", "."): two paths that
/// name the same file give the same string even when the file does not exist
/// yet. The directory must exist (checked before).
static std::string canonicalPath(llvm::StringRef path) {
  llvm::SmallString<256> dir;
  if (llvm::sys::fs::real_path(parentOf(path), dir)) {
    // Not resolvable: fall back to the normalized absolute path.
    llvm::SmallString<256> abs(path);
    llvm::sys::fs::make_absolute(abs);
    llvm::sys::path::remove_dots(abs, /*remove_dot_dot=*/true);
    return std::string(abs);
  }
  llvm::sys::path::append(dir, llvm::sys::path::filename(path));
  return std::string(dir);
}

/// True if `a` and `b` name the same file: the same inode when both exist
/// (hard links, symlinks), else the same canonical path.
static bool sameFile(llvm::StringRef a, llvm::StringRef b) {
  bool equivalent = false;
  if (llvm::sys::fs::exists(a) && llvm::sys::fs::exists(b) &&
      !llvm::sys::fs::equivalent(a, b, equivalent))
    return equivalent;
  return canonicalPath(a) == canonicalPath(b);
}

llvm::Error pipeopt::driver::checkOutputs(llvm::StringRef tool,
                                          llvm::StringRef input,
                                          llvm::ArrayRef<OutputFile> outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const OutputFile &o = outputs[i];
    if (o.path == "-")
      continue;
    auto error = [&](const llvm::Twine &msg) {
      return makeError("cannot write the " + o.role + " '" + o.path +
                       "': " + msg);
    };
    std::string dir = parentOf(o.path);
    if (!llvm::sys::fs::is_directory(dir))
      return error(llvm::sys::fs::exists(dir)
                       ? "'" + dir + "' is not a directory"
                       : "directory '" + dir + "' does not exist (" + tool +
                             " does not create directories; create it "
                             "first)");
    if (llvm::sys::fs::is_directory(o.path))
      return error("it is a directory");
    if (input != "-" && sameFile(o.path, input))
      return error("it is the input file '" + input +
                   "' (the input would be overwritten); choose another "
                   "output path");
    for (size_t j = 0; j < i; ++j)
      if (outputs[j].path != "-" && sameFile(o.path, outputs[j].path))
        return error("it is also the " + outputs[j].role + " ('" +
                     outputs[j].path +
                     "'); the two outputs need different paths");
  }
  return llvm::Error::success();
}

llvm::Error
pipeopt::driver::writeText(llvm::StringRef path,
                           llvm::function_ref<void(llvm::raw_ostream &)> fn) {
  std::string err;
  auto out = mlir::openOutputFile(path, &err);
  if (!out)
    return makeError(err);
  fn(out->os());
  out->keep();
  return llvm::Error::success();
}

std::string pipeopt::driver::stemOf(llvm::StringRef path) {
  llvm::SmallString<256> s(path);
  llvm::sys::path::replace_extension(s, "");
  return std::string(s);
}

PendingManifest::~PendingManifest() {
  if (!tmp.empty()) {
    llvm::sys::fs::remove(tmp);
    llvm::sys::DontRemoveFileOnSignal(tmp);
  }
}

llvm::Expected<std::string> PendingManifest::start(llvm::StringRef path) {
  // A symbolic link (/dev/stdout redirected to a file) is written
  // through: renaming over it would replace the link itself.
  if (path == "-" || llvm::sys::fs::is_symlink_file(path) ||
      (llvm::sys::fs::exists(path) && !llvm::sys::fs::is_regular_file(path)))
    return path.str();
  llvm::SmallString<256> unique;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", unique))
    return makeError("cannot create a temporary file next to the manifest '" +
                     path + "': " + ec.message());
  tmp = std::string(unique);
  final = path.str();
  // Also gone when a signal (Ctrl-C, SIGPIPE, SIGTERM) ends the build.
  llvm::sys::RemoveFileOnSignal(tmp);
  return tmp;
}

std::optional<std::string> PendingManifest::pendingPath() const {
  if (tmp.empty())
    return std::nullopt;
  return tmp;
}

llvm::Error PendingManifest::commit() {
  if (tmp.empty())
    return llvm::Error::success();
  std::error_code ec = llvm::sys::fs::rename(tmp, final);
  llvm::sys::DontRemoveFileOnSignal(tmp);
  if (ec)
    return makeError("cannot write the manifest '" + final +
                     "': " + ec.message());
  tmp.clear();
  return llvm::Error::success();
}
