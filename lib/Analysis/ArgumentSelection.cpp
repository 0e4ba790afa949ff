//===- ArgumentSelection.cpp - Options that select function arguments ----===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// See include/pipeopt/Analysis/ArgumentSelection.h.
///
//===----------------------------------------------------------------------===//

#include "pipeopt/Analysis/ArgumentSelection.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace pipeopt;
using Kind = ArgumentSelection::Kind;

static llvm::StringRef keywordName(Kind kind) {
  switch (kind) {
  case Kind::Auto:
    return "auto";
  case Kind::All:
    return "all";
  case Kind::None:
    return "none";
  case Kind::List:
    break;
  }
  return "";
}

std::string pipeopt::formatArgumentList(llvm::ArrayRef<std::string> entries) {
  return entries.empty() ? std::string("auto") : llvm::join(entries, ",");
}

bool ArgumentSelection::lists(int64_t index) const {
  return kind == Kind::List && llvm::is_contained(indices, index);
}

llvm::Expected<ArgumentSelection>
ArgumentSelection::parse(llvm::ArrayRef<std::string> entries,
                         llvm::StringRef option,
                         llvm::ArrayRef<Kind> keywords) {
  ArgumentSelection sel;
  if (entries.empty())
    return sel;
  std::string text = formatArgumentList(entries);
  auto error = [&](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   option + ": " + msg);
  };
  auto expected = [&] {
    std::string names = "'auto'";
    for (Kind k : keywords)
      if (k != Kind::Auto && k != Kind::List)
        names += ", '" + keywordName(k).str() + "'";
    return error("expected " + names +
                 " or a comma-separated list of argument indices, got '" +
                 text + "'");
  };
  // One keyword.
  if (entries.size() == 1) {
    llvm::StringRef only = llvm::StringRef(entries.front()).trim();
    if (only == "auto")
      return sel;
    for (Kind k : keywords)
      if (k != Kind::List && only == keywordName(k)) {
        sel.kind = k;
        return sel;
      }
  }
  // Indices.
  sel.kind = Kind::List;
  for (llvm::StringRef entry : entries) {
    entry = entry.trim();
    if (entry.empty())
      return error("empty entry in '" + text +
                   "' (expected a comma-separated list of argument indices "
                   "such as '0,3')");
    int64_t index;
    if (entry.getAsInteger(10, index) || index < 0)
      return expected();
    if (llvm::is_contained(sel.indices, index))
      return error("argument index " + llvm::Twine(index) +
                   " is listed twice in '" + text + "'");
    sel.indices.push_back(index);
  }
  llvm::sort(sel.indices);
  return sel;
}
