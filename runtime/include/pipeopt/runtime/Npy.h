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
/// Writes a .npy file; throws RuntimeError on I/O errors.
void writeNpy(const std::string &path, const HostTensor &tensor);
/// The .npy descr string for a dtype ("<f4", ...).
const char *npyDescr(DType type);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_NPY_H
