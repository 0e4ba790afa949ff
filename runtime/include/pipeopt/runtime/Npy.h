//===- Npy.h - Minimal NumPy .npy reader and writer -------------*- C++ -*-===//
//
// Reads and writes the NumPy .npy format (format versions 1.0, 2.0 and 3.0
// headers; C order only). Supported descr strings and their runtime dtypes:
//   <f4 f32, <f8 f64, <f2 f16, <i8 i64, <i4 i32, |i1 i8, |b1 i1,
//   <u2 bf16 (raw bfloat16 bits: NumPy has no bfloat16; written as <u2).
// '<' may also be written '=' (native, little-endian hosts only); for the
// one-byte types '|' , '<' and '=' are all accepted.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_NPY_H
#define PIPEOPT_RUNTIME_NPY_H

#include "pipeopt/runtime/Types.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pipeopt {
namespace rt {

/// A dense row-major tensor held in host memory.
struct HostTensor {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<uint8_t> data; ///< numElements(shape) * dtypeSize(dtype) bytes

  size_t byteSize() const { return data.size(); }
};

/// Parses .npy bytes; `what` (e.g. the file name) prefixes error messages.
/// Throws RuntimeError on a bad magic, unsupported version, malformed header,
/// Fortran order, unsupported dtype or truncated/oversized data.
HostTensor parseNpy(const std::vector<uint8_t> &bytes, const std::string &what);
/// Reads a .npy file (see parseNpy).
HostTensor readNpy(const std::string &path);
/// Serializes a tensor as .npy (format 1.0, or 2.0 if the header needs it).
std::vector<uint8_t> serializeNpy(const HostTensor &tensor);
/// How writeFileAtomic treats a `path` that is a symbolic link.
enum class FollowLinks {
  /// A file the runtime names itself inside a directory (an --output-dir or
  /// checkpoint file, `latest`, an id file): a symbolic link there is never
  /// followed; the new file is renamed over the link itself, so a link
  /// planted in the directory cannot redirect the write elsewhere. An
  /// existing device or FIFO at that name is opened in place with
  /// O_NOFOLLOW.
  Never,
  /// A single file the user named directly (--trace FILE, --profile FILE,
  /// pipeopt-calibrate -o FILE): a symbolic link is written through, opened
  /// in place with O_TRUNC (e.g. /dev/stdout -> /proc/self/fd/1, which
  /// must never be renamed over even when it leads to a regular file);
  /// a device or FIFO is written in place too.
  UserNamedPath,
};

/// Writes a .npy file through writeFileAtomic (the file is replaced whole
/// or not at all); throws RuntimeError on I/O errors. `follow` as for
/// writeFileAtomic (Never: the safe choice for files inside a directory).
void writeNpy(const std::string &path, const HostTensor &tensor,
              FollowLinks follow = FollowLinks::Never);
/// The .npy descr string for a dtype ("<f4", ...).
const char *npyDescr(DType type);

//===----------------------------------------------------------------------===//
// Checked, atomic file writing (every file the runtime writes goes through
// writeFileAtomic).
//===----------------------------------------------------------------------===//

/// A piece of a file's contents.
struct ByteRange {
  const void *data;
  size_t size;
};

/// Writes `parts` (concatenated) as the file `path`, atomically: into a
/// temporary file in the same directory (".<name>.tmp.<pid>.<n>"), with a
/// write(2) loop that handles short writes and EINTR, then fsync, close
/// (whose result is checked), rename over `path`, and fsync of the
/// directory (skipped with `syncDir` false, for a caller that syncs the
/// directory itself). A reader sees the old file or the complete new one,
/// never a partial or empty one. Any failure throws RuntimeError
/// "<path>: cannot write: <strerror(errno)>" naming `path` (not the
/// temporary), after the temporary is removed. A `path` that exists and is
/// not a regular file (a device such as /dev/null or /dev/full, a FIFO) is
/// written in place, with the same checks. A symbolic link at `path` is
/// handled as `follow` says (chosen at each call site): FollowLinks::Never
/// replaces the link itself; FollowLinks::UserNamedPath writes through it,
/// in place (not atomically), never renaming over it.
void writeFileAtomic(const std::string &path,
                     const std::vector<ByteRange> &parts, FollowLinks follow,
                     bool syncDir = true);
/// writeFileAtomic of one string.
void writeFileAtomic(const std::string &path, const std::string &text,
                     FollowLinks follow, bool syncDir = true);
/// fsync(2) of the directory `dir`; throws RuntimeError naming it and the
/// reason (file systems that cannot sync a directory, EINVAL, are accepted).
void syncDirectory(const std::string &dir);

/// 64-bit FNV-1a of `size` bytes (offset basis 0xcbf29ce484222325, prime
/// 0x100000001b3), continuing from `hash`. The checkpoint checksum.
uint64_t fnv1a64(const void *data, size_t size,
                 uint64_t hash = 0xcbf29ce484222325ull);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_NPY_H
