//===- Plural.h - "1 microbatch", "2 microbatches" in messages ---*- C++
//-*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Counts in diagnostics and reports, with the noun in the singular for one
/// and in the plural otherwise.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_SUPPORT_PLURAL_H
#define PIPEOPT_SUPPORT_PLURAL_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace pipeopt {

/// "<n> <singular>" when n is 1, else "<n> <plural>"; `plural` defaults to
/// `singular` + "s": countOf(1, "rank") = "1 rank", countOf(4, "microbatch",
/// "microbatches") = "4 microbatches".
inline std::string countOf(int64_t n, llvm::StringRef singular,
                           llvm::StringRef plural = "") {
  std::string noun = n == 1           ? singular.str()
                     : plural.empty() ? singular.str() + "s"
                                      : plural.str();
  return std::to_string(n) + " " + noun;
}

} // namespace pipeopt

#endif // PIPEOPT_SUPPORT_PLURAL_H
