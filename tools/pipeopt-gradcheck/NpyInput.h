//===- NpyInput.h - .npy files as JIT host tensors --------------*- C++ -*-===//
//
// Part of pipeopt-gradcheck. A thin adapter from the runtime's .npy reader
// (pipeopt/runtime/Npy.h, which reports errors with exceptions) to the
// exception-free tool: this is the only translation unit of the tool that is
// compiled with -fexceptions.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_TOOLS_GRADCHECK_NPYINPUT_H
#define PIPEOPT_TOOLS_GRADCHECK_NPYINPUT_H

#include "pipeopt/JIT/JitModule.h"

#include <string>

namespace pipeopt {
namespace gradcheck {

/// Reads the .npy file `path` into `out`, a tensor of the file's own dtype
/// and shape (f32, f64, i64, i32, i8 or bool). Returns false and sets
/// `error` ("<path>: ...") if the file cannot be read or parsed, or holds
/// another dtype (f16, bf16).
bool readNpyTensor(const std::string &path, jit::Tensor &out,
                   std::string &error);

} // namespace gradcheck
} // namespace pipeopt

#endif // PIPEOPT_TOOLS_GRADCHECK_NPYINPUT_H
