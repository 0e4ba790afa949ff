//===- NpyInput.cpp - .npy files as JIT host tensors ----------------------===//
//
// Part of pipeopt-gradcheck. See NpyInput.h.
//
//===----------------------------------------------------------------------===//

#include "NpyInput.h"

#include "pipeopt/runtime/Npy.h"

#include <cstring>
#include <exception>

bool pipeopt::gradcheck::readNpyTensor(const std::string &path,
                                       jit::Tensor &out, std::string &error) {
  try {
    rt::HostTensor host = rt::readNpy(path);
    jit::ElementKind kind;
    switch (host.dtype) {
    case rt::DType::F32:
      kind = jit::ElementKind::F32;
      break;
    case rt::DType::F64:
      kind = jit::ElementKind::F64;
      break;
    case rt::DType::I64:
      kind = jit::ElementKind::I64;
      break;
    case rt::DType::I32:
      kind = jit::ElementKind::I32;
      break;
    case rt::DType::I8:
      kind = jit::ElementKind::I8;
      break;
    case rt::DType::I1:
      kind = jit::ElementKind::I1;
      break;
    default:
      error = path + ": holds " + rt::dtypeName(host.dtype) +
              " data; pipeopt-gradcheck reads f32, f64, i64, i32, i8 and "
              "bool arrays";
      return false;
    }
    out = jit::Tensor(kind, host.shape);
    if (out.byteSize() != host.byteSize()) {
      error = path + ": data size does not match its shape";
      return false;
    }
    std::memcpy(out.data(), host.data.data(), host.byteSize());
    return true;
  } catch (const std::exception &e) {
    error = e.what();
    return false;
  }
}
