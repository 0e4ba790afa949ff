//===- Npy.cpp - Minimal NumPy .npy reader and writer -----------*- C++ -*-===//
//
// Format reference: the NumPy "npy" format specification (NEP 1): 6-byte
// magic "\x93NUMPY", major/minor version bytes, a little-endian header length
// (uint16 for 1.0, uint32 for 2.0/3.0), then a Python dict literal with keys
// 'descr', 'fortran_order' and 'shape', padded with spaces and '\n' so the
// data starts at a multiple of 64 bytes.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Npy.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace pipeopt {
namespace rt {

const char *npyDescr(DType type) {
  switch (type) {
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::F16:
    return "<f2";
  case DType::BF16:
    return "<u2";
  case DType::I64:
    return "<i8";
  case DType::I32:
    return "<i4";
  case DType::I8:
    return "|i1";
  case DType::I1:
    return "|b1";
  }
  return "?";
}

static bool descrToDType(std::string d, DType &type) {
  if (d.size() != 3)
    return false;
  char order = d[0];
  std::string code = d.substr(1);
  bool oneByte = code == "i1" || code == "b1";
  if (!(order == '<' || order == '=' || (oneByte && order == '|')))
    return false;
  static const struct {
    const char *code;
    DType type;
  } table[] = {{"f4", DType::F32},  {"f8", DType::F64}, {"f2", DType::F16},
               {"u2", DType::BF16}, {"i8", DType::I64}, {"i4", DType::I32},
               {"i1", DType::I8},   {"b1", DType::I1}};
  for (const auto &e : table)
    if (code == e.code) {
      type = e.type;
      return true;
    }
  return false;
}

namespace {
/// Tiny parser for the Python dict literal in an .npy header.
class HeaderParser {
public:
  HeaderParser(const std::string &text, const std::string &what)
      : s(text), what(what) {}

  void parse(std::string &descr, bool &fortran, Shape &shape) {
    bool haveDescr = false, haveFortran = false, haveShape = false;
    skipWs();
    expect('{');
    while (true) {
      skipWs();
      if (peek() == '}')
        break;
      std::string key = parseString();
      skipWs();
      expect(':');
      skipWs();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"')
          fail("structured or non-string 'descr' is not supported "
               "(unsupported dtype)");
        descr = parseString();
        haveDescr = true;
      } else if (key == "fortran_order") {
        fortran = parseBool();
        haveFortran = true;
      } else if (key == "shape") {
        shape = parseTuple();
        haveShape = true;
      } else {
        fail("unexpected header key '" + key + "'");
      }
      skipWs();
      if (peek() == ',') {
        ++pos;
        continue;
      }
      skipWs();
      if (peek() != '}')
        fail("expected ',' or '}' in header");
    }
    if (!haveDescr || !haveFortran || !haveShape)
      fail("header lacks one of 'descr', 'fortran_order', 'shape'");
  }

private:
  const std::string &s;
  const std::string &what;
  size_t pos = 0;

  [[noreturn]] void fail(const std::string &msg) {
    throw RuntimeError(what + ": malformed .npy header: " + msg);
  }
  char peek() const { return pos < s.size() ? s[pos] : '\0'; }
  void skipWs() {
    while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos])))
      ++pos;
  }
  void expect(char c) {
    if (peek() != c)
      fail(std::string("expected '") + c + "'");
    ++pos;
  }
  std::string parseString() {
    char q = peek();
    if (q != '\'' && q != '"')
      fail("expected a quoted string");
    ++pos;
    size_t end = s.find(q, pos);
    if (end == std::string::npos)
      fail("unterminated string");
    std::string r = s.substr(pos, end - pos);
    pos = end + 1;
    return r;
  }
  bool parseBool() {
    if (s.compare(pos, 4, "True") == 0) {
      pos += 4;
      return true;
    }
    if (s.compare(pos, 5, "False") == 0) {
      pos += 5;
      return false;
    }
    fail("expected True or False");
  }
  Shape parseTuple() {
    Shape r;
    expect('(');
    while (true) {
      skipWs();
      if (peek() == ')') {
        ++pos;
        return r;
      }
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        fail("expected a non-negative integer in 'shape'");
      int64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (v > (int64_t(1) << 50))
          fail("dimension too large in 'shape'");
        v = v * 10 + (s[pos++] - '0');
      }
      if (peek() == 'L') // Python 2 long suffix
        ++pos;
      r.push_back(v);
      skipWs();
      if (peek() == ',')
        ++pos;
      else if (peek() != ')')
        fail("expected ',' or ')' in 'shape'");
    }
  }
};
} // namespace

HostTensor parseNpy(const std::vector<uint8_t> &bytes,
                    const std::string &what) {
  static const char magic[] = "\x93NUMPY";
  if (bytes.size() < 10 || std::memcmp(bytes.data(), magic, 6) != 0)
    throw RuntimeError(what + ": not a .npy file (bad magic)");
  int major = bytes[6], minor = bytes[7];
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = bytes[8] | (size_t(bytes[9]) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      throw RuntimeError(what + ": truncated .npy header");
    headerLen = bytes[8] | (size_t(bytes[9]) << 8) | (size_t(bytes[10]) << 16) |
                (size_t(bytes[11]) << 24);
    headerStart = 12;
  } else {
    throw RuntimeError(what + ": unsupported .npy format version " +
                       std::to_string(major) + "." + std::to_string(minor));
  }
  if (bytes.size() < headerStart + headerLen)
    throw RuntimeError(what + ": truncated .npy header");
  std::string header(bytes.begin() + headerStart,
                     bytes.begin() + headerStart + headerLen);
  std::string descr;
  bool fortran = false;
  HostTensor t;
  HeaderParser(header, what).parse(descr, fortran, t.shape);
  if (fortran)
    throw RuntimeError(what +
                       ": Fortran-order arrays are not supported; save a "
                       "C-order array (numpy.ascontiguousarray)");
  if (!descrToDType(descr, t.dtype))
    throw RuntimeError(what + ": unsupported dtype '" + descr +
                       "' (supported: <f4 <f8 <f2 <i8 <i4 |i1 |b1, and <u2 "
                       "for bfloat16 bits; little-endian only)");
  // The shape comes from the file: name the file when it cannot be real
  // (an element count or byte size beyond 64 bits; the data check below
  // catches every shape that is merely larger than the file).
  int64_t n;
  try {
    n = numElements(t.shape);
  } catch (const RuntimeError &e) {
    throw RuntimeError(what + ": " + e.what());
  }
  if (uint64_t(n) > std::numeric_limits<uint64_t>::max() / dtypeSize(t.dtype))
    throw RuntimeError(what + ": " + typeString(t.dtype, t.shape) +
                       " is too large (more than 2^64 bytes)");
  if (uint64_t(n) * dtypeSize(t.dtype) > std::numeric_limits<size_t>::max())
    throw RuntimeError(what + ": " + typeString(t.dtype, t.shape) +
                       " is too large for this machine");
  size_t need = size_t(n) * dtypeSize(t.dtype);
  size_t have = bytes.size() - headerStart - headerLen;
  if (have < need)
    throw RuntimeError(
        what + ": truncated .npy data: " + typeString(t.dtype, t.shape) +
        " needs " + std::to_string(need) + " bytes but the file has " +
        std::to_string(have));
  if (have > need)
    throw RuntimeError(what + ": .npy file has " + std::to_string(have - need) +
                       " unexpected trailing bytes after the " +
                       typeString(t.dtype, t.shape) + " data");
  t.data.assign(bytes.begin() + headerStart + headerLen, bytes.end());
  return t;
}

HostTensor readNpy(const std::string &path) {
  return parseNpy(readFileBytes(path, ".npy file"), path);
}

std::vector<uint8_t> serializeNpy(const HostTensor &t) {
  std::string dict = std::string("{'descr': '") + npyDescr(t.dtype) +
                     "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.shape.size(); ++i)
    dict += std::to_string(t.shape[i]) +
            (t.shape.size() == 1 ? "," : (i + 1 < t.shape.size() ? ", " : ""));
  dict += "), }";
  bool v2 = dict.size() + 11 + 64 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = prefix + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::vector<uint8_t> out;
  out.reserve(padded + t.data.size());
  static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  for (uint8_t b : magic)
    out.push_back(b);
  out.push_back(v2 ? 2 : 1);
  out.push_back(0);
  uint32_t len = static_cast<uint32_t>(dict.size());
  out.push_back(len & 0xff);
  out.push_back((len >> 8) & 0xff);
  if (v2) {
    out.push_back((len >> 16) & 0xff);
    out.push_back((len >> 24) & 0xff);
  }
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), t.data.begin(), t.data.end());
  return out;
}

void writeNpy(const std::string &path, const HostTensor &t,
              FollowLinks follow) {
  HostTensor header = t;
  header.data.clear();
  std::vector<uint8_t> head = serializeNpy(header);
  writeFileAtomic(path,
                  {{head.data(), head.size()}, {t.data.data(), t.data.size()}},
                  follow);
}

//===----------------------------------------------------------------------===//
// Checked, atomic file writing
//===----------------------------------------------------------------------===//

uint64_t fnv1a64(const void *data, size_t size, uint64_t hash) {
  const uint8_t *p = static_cast<const uint8_t *>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

namespace {
[[noreturn]] void writeError(const std::string &path, int err,
                             const std::string &what = "cannot write") {
  throw RuntimeError(path + ": " + what + ": " + std::strerror(err));
}

std::string dirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

/// Writes every part to `fd` (short writes and EINTR handled); returns 0 or
/// the errno of the failure.
int writeAll(int fd, const std::vector<ByteRange> &parts) {
  for (const ByteRange &part : parts) {
    const char *p = static_cast<const char *>(part.data);
    size_t left = part.size;
    while (left > 0) {
      size_t chunk = std::min<size_t>(left, size_t(1) << 30);
      ssize_t n = ::write(fd, p, chunk);
      if (n < 0) {
        if (errno == EINTR)
          continue;
        return errno;
      }
      if (n == 0) // no progress and no error: treat as a full device
        return ENOSPC;
      p += n;
      left -= size_t(n);
    }
  }
  return 0;
}
} // namespace

void syncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    writeError(dir, errno, "cannot open the directory to sync it");
  int rc;
  do
    rc = ::fsync(fd);
  while (rc != 0 && errno == EINTR);
  int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL && err != ENOTSUP && err != EROFS)
    writeError(dir, err, "cannot sync the directory");
}

namespace {
/// Writes `parts` into the existing non-regular file (or, for a user-named
/// link, whatever it leads to) `path` in place: O_TRUNC, every part, fsync,
/// close, each checked. `extraFlags` adds O_NOFOLLOW or O_CREAT.
void writeInPlace(const std::string &path, const std::vector<ByteRange> &parts,
                  int extraFlags) {
  int fd =
      ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | extraFlags, 0666);
  if (fd < 0)
    writeError(path, errno, "cannot open for writing");
  int err = writeAll(fd, parts);
  if (err == 0 && ::fsync(fd) != 0 && errno != EINVAL && errno != EROFS &&
      errno != ENOTSUP && errno != EINTR)
    err = errno;
  if (::close(fd) != 0 && err == 0 && errno != EINTR)
    err = errno;
  if (err)
    writeError(path, err);
}
} // namespace

void writeFileAtomic(const std::string &pathIn,
                     const std::vector<ByteRange> &parts, FollowLinks follow,
                     bool syncDir) {
  if (pathIn.empty())
    throw RuntimeError("cannot write a file with an empty name");
  const std::string &path = pathIn;
  struct stat st;
  bool exists = ::lstat(path.c_str(), &st) == 0;
  if (exists && S_ISLNK(st.st_mode)) {
    if (follow == FollowLinks::UserNamedPath) {
      // Written through, in place: renaming over the link would replace it
      // (e.g. /dev/stdout) with a regular file. A dangling link is created
      // through as well.
      struct stat target;
      if (::stat(path.c_str(), &target) == 0 && S_ISDIR(target.st_mode))
        writeError(pathIn, EISDIR);
      writeInPlace(path, parts, O_CREAT);
      return;
    }
    // FollowLinks::Never: the link itself is replaced by the new file
    // (rename(2) does not follow a link at the destination).
    exists = false;
  }
  if (exists && S_ISDIR(st.st_mode))
    writeError(pathIn, EISDIR);
  if (exists && !S_ISREG(st.st_mode)) {
    // A device, FIFO or terminal: written in place (renaming over it would
    // replace the device node). O_NOFOLLOW: never a link swapped in since.
    writeInPlace(path, parts, follow == FollowLinks::Never ? O_NOFOLLOW : 0);
    return;
  }
  static std::atomic<unsigned> counter{0};
  std::string dir = dirOf(path);
  std::string base = path.substr(
      path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  std::string tmp = (dir == "/" ? std::string("/") : dir + "/") + "." + base +
                    ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0)
    writeError(pathIn, errno, "cannot create");
  int err = writeAll(fd, parts);
  if (err == 0) {
    int rc;
    do
      rc = ::fsync(fd);
    while (rc != 0 && errno == EINTR);
    if (rc != 0 && errno != EINVAL)
      err = errno;
  }
  // close(2) reports deferred write errors (NFS, quotas): checked too.
  if (::close(fd) != 0 && err == 0 && errno != EINTR)
    err = errno;
  if (err == 0 && exists)
    ::chmod(tmp.c_str(), st.st_mode & 07777); // keep the old file's mode
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0)
    err = errno;
  if (err) {
    ::unlink(tmp.c_str());
    writeError(pathIn, err);
  }
  if (syncDir) {
    try {
      syncDirectory(dir);
    } catch (const RuntimeError &e) {
      throw RuntimeError(pathIn + ": written, but " + e.what());
    }
  }
}

void writeFileAtomic(const std::string &path, const std::string &text,
                     FollowLinks follow, bool syncDir) {
  writeFileAtomic(path, {{text.data(), text.size()}}, follow, syncDir);
}

} // namespace rt
} // namespace pipeopt
