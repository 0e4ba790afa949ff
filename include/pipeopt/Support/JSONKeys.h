//===- JSONKeys.h - reject unknown keys in JSON config objects ---*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Configuration files (hardware, system, cost tables) are hand-written; a
/// misspelled key would otherwise be ignored silently and the default used.
/// Readers list the keys an object may have and call unknownKey().
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_SUPPORT_JSONKEYS_H
#define PIPEOPT_SUPPORT_JSONKEYS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace pipeopt {

/// Returns "<where>: unknown key 'k' (expected one of: a, b, ...)" for the
/// first key of `object` that is not in `known`, or std::nullopt.
inline std::optional<std::string>
unknownKey(const llvm::json::Object &object,
           llvm::ArrayRef<llvm::StringRef> known, llvm::StringRef where) {
  for (const auto &kv : object) {
    llvm::StringRef key = kv.first;
    if (llvm::is_contained(known, key))
      continue;
    std::string list;
    for (llvm::StringRef k : known)
      list += (list.empty() ? "" : ", ") + k.str();
    return (where.empty() ? std::string() : where.str() + ": ") +
           "unknown key '" + key.str() + "' (expected one of: " + list + ")";
  }
  return std::nullopt;
}

} // namespace pipeopt

#endif // PIPEOPT_SUPPORT_JSONKEYS_H
