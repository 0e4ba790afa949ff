//===- Types.h - pipeopt runtime element types, shapes, errors --*- C++ -*-===//
//
// Basic vocabulary of the MLIR-free runtime (namespace pipeopt::rt): element
// types, shapes and the exception type used *inside* the runtime (exceptions
// never cross the C ABI in pipeopt_runtime.h).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_TYPES_H
#define PIPEOPT_RUNTIME_TYPES_H

#include "pipeopt/runtime/pipeopt_runtime.h"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace pipeopt {
namespace rt {

/// Element type of a tensor; values equal the PIPEOPT_RT_DTYPE_* codes.
enum class DType : uint8_t {
  F32 = PIPEOPT_RT_DTYPE_F32,
  F64 = PIPEOPT_RT_DTYPE_F64,
  F16 = PIPEOPT_RT_DTYPE_F16,
  BF16 = PIPEOPT_RT_DTYPE_BF16,
  I64 = PIPEOPT_RT_DTYPE_I64,
  I32 = PIPEOPT_RT_DTYPE_I32,
  I8 = PIPEOPT_RT_DTYPE_I8,
  I1 = PIPEOPT_RT_DTYPE_I1,
};

/// Size of one element in bytes (i1 is stored as one byte).
size_t dtypeSize(DType type);
/// Short name as used in manifests and messages: "f32", "bf16", "i1", ...
const char *dtypeName(DType type);
/// Parses a dtype name ("f32", ...); returns false if unknown.
bool parseDType(const std::string &name, DType &type);
/// Returns true if `code` is a valid PIPEOPT_RT_DTYPE_* value.
bool isValidDType(int code);

/// A tensor shape (sizes in elements, row-major).
using Shape = std::vector<int64_t>;

/// Number of elements of `shape` (1 for rank 0); throws on negative sizes or
/// overflow.
int64_t numElements(const Shape &shape);
/// "4x8" (empty string for rank 0).
std::string shapeString(const Shape &shape);
/// "f32[4x8]".
std::string typeString(DType type, const Shape &shape);

/// Error thrown inside the runtime; converted to a return code and a recorded
/// message at the C ABI.
class RuntimeError : public std::runtime_error {
public:
  explicit RuntimeError(const std::string &message)
      : std::runtime_error(message) {}
};

/// Reads the whole file at `path`. Throws RuntimeError "<path>: is a
/// directory", "<path>: is a FIFO (named pipe), not a regular file; ..."
/// (any other non-regular file likewise, without blocking on it),
/// "<path>: cannot open <what>: <reason>" or "<path>: read error: <reason>"
/// (never a std::ios_base::failure).
std::vector<uint8_t> readFileBytes(const std::string &path,
                                   const std::string &what);

/// "a FIFO (named pipe)", "a socket", "a character device", ... for the
/// st_mode of a file that is not a regular file.
std::string fileKindName(unsigned mode);

/// Opens the regular file `path` (a `what`, e.g. "model .so") read-only,
/// without blocking: a blocking open of a FIFO waits for a writer forever.
/// Returns the descriptor (the caller closes it) and stores the file size in
/// `*size`. Throws RuntimeError "<path>: cannot open <what>: <reason>",
/// "<path>: is a directory, not a <what>" or "<path>: is a FIFO (named
/// pipe), not a regular file; a <what> must be one" (any other non-regular
/// file likewise).
int openRegularFile(const std::string &path, const std::string &what,
                    uint64_t *size);

/// Error for a communication timeout (a peer stalled or died).
class TimeoutError : public RuntimeError {
public:
  explicit TimeoutError(const std::string &message) : RuntimeError(message) {}
};

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_TYPES_H
