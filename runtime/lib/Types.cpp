//===- Types.cpp - Element types, shapes and message headers ----*- C++ -*-===//

#include "pipeopt/runtime/Types.h"
#include "pipeopt/runtime/Communicator.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace pipeopt {
namespace rt {

size_t dtypeSize(DType type) {
  switch (type) {
#define PIPEOPT_RT_DTYPE(Suffix, CType, DTypeEnum, Bytes)                      \
  case DType::DTypeEnum:                                                       \
    return Bytes;
#include "pipeopt/runtime/RuntimeFunctions.def"
  }
  return 0;
}

const char *dtypeName(DType type) {
  switch (type) {
#define PIPEOPT_RT_DTYPE(Suffix, CType, DTypeEnum, Bytes)                      \
  case DType::DTypeEnum:                                                       \
    return #Suffix;
#include "pipeopt/runtime/RuntimeFunctions.def"
  }
  return "?";
}

bool parseDType(const std::string &name, DType &type) {
#define PIPEOPT_RT_DTYPE(Suffix, CType, DTypeEnum, Bytes)                      \
  if (name == #Suffix) {                                                       \
    type = DType::DTypeEnum;                                                   \
    return true;                                                               \
  }
#include "pipeopt/runtime/RuntimeFunctions.def"
  return false;
}

bool isValidDType(int code) {
  return code >= PIPEOPT_RT_DTYPE_F32 && code <= PIPEOPT_RT_DTYPE_I1;
}

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      throw RuntimeError("negative dimension in shape [" + shapeString(shape) +
                         "]");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      throw RuntimeError("shape [" + shapeString(shape) + "] is too large");
    n *= d;
  }
  return n;
}

std::string shapeString(const Shape &shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

std::string typeString(DType type, const Shape &shape) {
  return std::string(dtypeName(type)) + "[" + shapeString(shape) + "]";
}

//===----------------------------------------------------------------------===//
// MessageHeader
//===----------------------------------------------------------------------===//

static uint64_t fnv1a(const void *data, size_t n) {
  const auto *p = static_cast<const uint8_t *>(data);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

void MessageHeader::setShape(const Shape &s) {
  if (s.size() > PIPEOPT_RT_MAX_RANK)
    throw RuntimeError("tensor of rank " + std::to_string(s.size()) +
                       " exceeds the maximum of " +
                       std::to_string(PIPEOPT_RT_MAX_RANK) + " dimensions");
  ndims = static_cast<uint8_t>(s.size());
  for (int i = 0; i < PIPEOPT_RT_MAX_RANK; ++i)
    shape[i] = i < static_cast<int>(s.size()) ? s[i] : 0;
}

void MessageHeader::seal() {
  checksum = fnv1a(this, offsetof(MessageHeader, checksum));
}

std::string MessageHeader::validate() const {
  if (magic != kMagic)
    return "bad magic (not a pipeopt runtime message)";
  if (version != kVersion)
    return "unsupported message version " + std::to_string(version);
  if (checksum != fnv1a(this, offsetof(MessageHeader, checksum)))
    return "header checksum mismatch (corrupt message)";
  if (kind == Tensor && !isValidDType(dtype))
    return "invalid dtype code " + std::to_string(dtype);
  if (ndims > PIPEOPT_RT_MAX_RANK)
    return "invalid rank " + std::to_string(ndims);
  if (bytes < 0)
    return "negative payload size";
  return "";
}

std::string MessageHeader::describeType() const {
  std::string t = isValidDType(dtype)
                      ? typeString(static_cast<DType>(dtype), getShape())
                      : "?[" + shapeString(getShape()) + "]";
  return t + " (" + std::to_string(bytes) + " bytes)";
}

std::string fileKindName(unsigned mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO (named pipe)";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  return "not a regular file (st_mode " + std::to_string(mode) + ")";
}

int openRegularFile(const std::string &path, const std::string &what,
                    uint64_t *size) {
  // O_NONBLOCK: no effect on a regular file; fstat then rejects the rest.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw RuntimeError(path + ": cannot open " + what + ": " +
                       std::strerror(errno));
  struct stat st;
  std::string problem;
  if (::fstat(fd, &st) != 0)
    problem = path + ": cannot open " + what + ": " + std::strerror(errno);
  else if (S_ISDIR(st.st_mode))
    problem = path + ": is a directory, not a " + what;
  else if (!S_ISREG(st.st_mode))
    problem = path + ": is " + fileKindName(st.st_mode) +
              ", not a regular file; a " + what + " must be one";
  if (!problem.empty()) {
    ::close(fd);
    throw RuntimeError(problem);
  }
  *size = uint64_t(st.st_size);
  return fd;
}

std::vector<uint8_t> readFileBytes(const std::string &path,
                                   const std::string &what) {
  // std::ifstream would also open a directory and then throw
  // std::ios_base::failure from the first read.
  uint64_t size = 0;
  int fd = openRegularFile(path, what, &size);
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  std::vector<uint8_t> bytes;
  bytes.reserve(size_t(size));
  uint8_t buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      throw RuntimeError(path + ": read error: " + std::strerror(errno));
    if (n == 0)
      break;
    bytes.insert(bytes.end(), buf, buf + n);
  }
  return bytes;
}

} // namespace rt
} // namespace pipeopt
