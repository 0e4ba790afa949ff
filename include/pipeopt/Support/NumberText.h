//===- NumberText.h - a number as errors print it ---------------*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_SUPPORT_NUMBERTEXT_H
#define PIPEOPT_SUPPORT_NUMBERTEXT_H

#include <charconv>
#include <string>

namespace pipeopt {

/// `value` in its shortest form that reads back exactly (1e-09, 1.0000001,
/// inf, -0): an out-of-range value in an error message is never rounded
/// into one that looks valid.
inline std::string numberText(double value) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

} // namespace pipeopt

#endif // PIPEOPT_SUPPORT_NUMBERTEXT_H
