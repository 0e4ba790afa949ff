//===- FileOutput.h - Checked, atomic writes of small files ----*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// llvm::writeToOutput renames a temporary into place, but it does not check
// the stream after closing it: a write that fails at the end (a full disk)
// ends in raw_fd_ostream's fatal "IO failure on output stream" instead of
// an error. writeFileAtomically checks every step and returns the reason.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_SUPPORT_FILEOUTPUT_H
#define PIPEOPT_SUPPORT_FILEOUTPUT_H

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

namespace pipeopt {

/// Writes `text` as the file `path`: into a unique temporary next to it,
/// fsync'ed, closed (each checked) and renamed over `path`, so that a reader
/// sees the old file or the whole new one. Returns the error of the step
/// that failed (the temporary is then removed), for the caller's message. For
/// regular files only: a device or a symbolic link (/dev/stdout) must be
/// written in place, not replaced.
inline std::error_code writeFileAtomically(llvm::StringRef path,
                                           llvm::StringRef text) {
  llvm::SmallString<256> tmp;
  int fd = -1;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", fd, tmp))
    return ec;
  std::error_code ec;
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/false);
    os << text;
    os.flush();
    ec = os.error();
    os.clear_error();
  }
  if (!ec && ::fsync(fd) != 0)
    ec = std::error_code(errno, std::generic_category());
  if (::close(fd) != 0 && !ec)
    ec = std::error_code(errno, std::generic_category());
  if (!ec)
    ec = llvm::sys::fs::rename(tmp, path);
  if (ec)
    llvm::sys::fs::remove(tmp);
  return ec;
}

} // namespace pipeopt

#endif // PIPEOPT_SUPPORT_FILEOUTPUT_H
