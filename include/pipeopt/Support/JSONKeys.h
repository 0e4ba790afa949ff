//===- JSONKeys.h - reject unknown keys in JSON config objects ---*- C++
//-*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Configuration files (hardware, system, cost tables, profiles) are
/// hand-written; a misspelled key would otherwise be ignored silently and
/// the default used. Readers list the keys an object may have and call
/// unknownKey(). llvm::json::parse keeps one of two equal keys of an object
/// without a word, so readers parse with parseJSONRejectingDuplicates().
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_SUPPORT_JSONKEYS_H
#define PIPEOPT_SUPPORT_JSONKEYS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <vector>

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

/// llvm::json::parse, plus an error "line N: duplicate key 'k'" when an
/// object has the same key twice (compared after decoding escapes).
inline llvm::Expected<llvm::json::Value>
parseJSONRejectingDuplicates(llvm::StringRef text) {
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (!value)
    return value.takeError();
  // `text` is valid JSON here: a scan of brackets, commas and strings finds
  // every key.
  struct Frame {
    bool object;
    bool expectKey;
    llvm::StringSet<> keys;
  };
  std::vector<Frame> stack;
  unsigned line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == '{' || c == '[') {
      stack.push_back(Frame{c == '{', c == '{', {}});
    } else if (c == '}' || c == ']') {
      stack.pop_back();
    } else if (c == ',') {
      if (!stack.empty() && stack.back().object)
        stack.back().expectKey = true;
    } else if (c == '"') {
      size_t start = ++i;
      while (i < text.size() && text[i] != '"')
        i += text[i] == '\\' ? 2 : 1;
      if (!stack.empty() && stack.back().object && stack.back().expectKey) {
        std::string key = text.slice(start, i).str();
        if (key.find('\\') != std::string::npos) {
          // Decode escapes ("op\u005fx" is "op_x"): parse the quoted key.
          llvm::Expected<llvm::json::Value> decoded =
              llvm::json::parse(text.slice(start - 1, i + 1));
          if (decoded && decoded->getAsString())
            key = decoded->getAsString()->str();
          else
            llvm::consumeError(decoded.takeError());
        }
        stack.back().expectKey = false;
        if (!stack.back().keys.insert(key).second)
          return llvm::createStringError("line " + std::to_string(line) +
                                         ": duplicate key '" + key + "'");
      }
    }
  }
  return value;
}

} // namespace pipeopt

#endif // PIPEOPT_SUPPORT_JSONKEYS_H
