//===- ArgumentSelection.h - Options that select function arguments -*- C++
//-*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The value of a list option that selects arguments of a model function:
/// pipe-differentiate's `trainable` and `microbatch-args`,
/// pipe-materialize-backward's `trainable`, convert-pipe-to-runtime's and
/// pipeopt-lower-to-llvm's `microbatch-args`, pipeopt-compile's
/// `--microbatch-args`. Each is a `ListOption<std::string>` (MLIR splits
/// `microbatch-args=0,3` into the entries "0" and "3"), whose entries are
/// one keyword or argument indices:
///
///   - no entry (the default, also `microbatch-args=`) or the one entry
///     `auto`: the option's automatic rule (documented on each pass);
///   - the one entry `all` or `none` (where the option accepts it);
///   - non-negative decimal argument indices, each at most once, in any
///     order.
///
/// Whether an index names an argument is the pass's check (its valid range
/// depends on the IR).
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_ANALYSIS_ARGUMENTSELECTION_H
#define PIPEOPT_ANALYSIS_ARGUMENTSELECTION_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace pipeopt {

/// A parsed argument-selection option (see the file comment).
struct ArgumentSelection {
  enum class Kind { Auto, All, None, List };
  Kind kind = Kind::Auto;
  /// Kind::List: the listed indices, ascending and distinct.
  llvm::SmallVector<int64_t> indices;

  /// True when `index` is listed (Kind::List only).
  bool lists(int64_t index) const;

  /// Parses the entries of option `option` (its name, for messages), which
  /// accepts the keywords `keywords` besides indices (`auto` is always
  /// accepted). Errors (llvm::StringError; `<text>` is the entries joined
  /// by commas, formatArgumentList):
  ///   - "<option>: empty entry in '<text>' (expected a comma-separated
  ///     list of argument indices such as '0,3')";
  ///   - "<option>: expected 'auto', [...] or a comma-separated list of
  ///     argument indices, got '<text>'" for an entry that is neither an
  ///     accepted keyword nor a non-negative decimal integer, or a keyword
  ///     with other entries (the accepted keywords are listed);
  ///   - "<option>: argument index <i> is listed twice in '<text>'".
  static llvm::Expected<ArgumentSelection>
  parse(llvm::ArrayRef<std::string> entries, llvm::StringRef option,
        llvm::ArrayRef<Kind> keywords = {Kind::All, Kind::None});
};

/// The entries as the option's text: joined by commas; "auto" for no entry.
std::string formatArgumentList(llvm::ArrayRef<std::string> entries);

} // namespace pipeopt

#endif // PIPEOPT_ANALYSIS_ARGUMENTSELECTION_H
