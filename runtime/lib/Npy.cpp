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

#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

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
  } table[] = {{"f4", DType::F32}, {"f8", DType::F64}, {"f2", DType::F16},
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

HostTensor parseNpy(const std::vector<uint8_t> &bytes, const std::string &what) {
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
    throw RuntimeError(what + ": truncated .npy data: " +
                       typeString(t.dtype, t.shape) + " needs " +
                       std::to_string(need) + " bytes but the file has " +
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
    dict += std::to_string(t.shape[i]) + (t.shape.size() == 1 ? "," : (i + 1 < t.shape.size() ? ", " : ""));
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

void writeNpy(const std::string &path, const HostTensor &t) {
  std::vector<uint8_t> bytes = serializeNpy(t);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw RuntimeError(path + ": cannot open for writing: " +
                       std::strerror(errno));
  out.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out)
    throw RuntimeError(path + ": write failed");
}

} // namespace rt
} // namespace pipeopt
