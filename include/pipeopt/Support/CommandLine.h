//===- CommandLine.h - Guards around llvm::cl for pipeopt's tools -*- C++
//-*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// llvm::cl treats an unknown option whose name starts with "h" as a grouped
/// "-h" (help): `pipeopt-compile --hardwre=x.json` prints the help text and
/// exits 0, so a typo looks like success. rejectHelpTypos() runs before
/// cl::ParseCommandLineOptions and turns such an argument into the usual
/// unknown-option error.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_SUPPORT_COMMANDLINE_H
#define PIPEOPT_SUPPORT_COMMANDLINE_H

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

namespace pipeopt {

/// Returns false (after printing "<tool>: Unknown command line argument
/// '<arg>'..." to stderr) when an argument of argv[1..argc) names an option
/// that starts with "h", is not a registered option of the top-level
/// command and is not one of llvm::cl's help options; true otherwise. Stops
/// at "--"; skips the value of a registered option that takes one as the
/// next argument. Call it after every option is registered (the tool's
/// static cl::opt objects) and before cl::ParseCommandLineOptions.
/// `isKnown(name)` may accept further names (e.g. pass flags, which
/// MlirOptMain parses as values of one list option); `valueOptions` names
/// options that take the next argument as their value but are registered
/// only later (MlirOptMain's -o).
inline bool
rejectHelpTypos(int argc, const char *const *argv, llvm::StringRef tool,
                llvm::function_ref<bool(llvm::StringRef)> isKnown = nullptr,
                llvm::ArrayRef<llvm::StringRef> valueOptions = {}) {
  auto &options = llvm::cl::getRegisteredOptions();
  static const llvm::StringRef help[] = {"h",
                                         "help",
                                         "help-hidden",
                                         "help-list",
                                         "help-list-hidden",
                                         "print-all-options",
                                         "print-options"};
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (arg == "--")
      return true;
    if (!arg.starts_with("-") || arg == "-")
      continue;
    llvm::StringRef name = arg.ltrim('-');
    bool inlineValue = name.contains('=');
    name = name.split('=').first;
    if (!inlineValue && llvm::is_contained(valueOptions, name)) {
      ++i;
      continue;
    }
    auto it = options.find(name);
    if (it != options.end()) {
      // "-o file": the next argument is the value, whatever it looks like.
      if (!inlineValue &&
          it->second->getValueExpectedFlag() == llvm::cl::ValueRequired)
        ++i;
      continue;
    }
    if (!name.starts_with("h") || llvm::is_contained(help, name) ||
        (isKnown && isKnown(name)))
      continue;
    llvm::errs() << tool << ": Unknown command line argument '" << arg
                 << "'.  Try: '" << tool << " --help'\n";
    return false;
  }
  return true;
}

/// Returns false (after printing "<tool>: error: --<name> needs a value
/// (got an empty one)" to stderr) when an option of the top-level command
/// that requires a value is given an empty one (`--lr=` or `--lr ""`):
/// llvm::cl parses "" as 0 for a number and keeps "" for a string, so
/// `--lr "$LR"` with LR unset would silently train with lr 0. `exempt`
/// names options whose empty value the tool reports itself. Stops at "--".
/// Call it, like rejectHelpTypos, before cl::ParseCommandLineOptions.
inline bool rejectEmptyValues(int argc, const char *const *argv,
                              llvm::StringRef tool,
                              llvm::ArrayRef<llvm::StringRef> exempt = {}) {
  auto &options = llvm::cl::getRegisteredOptions();
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (arg == "--")
      return true;
    if (!arg.starts_with("-") || arg == "-")
      continue;
    auto [name, value] = arg.ltrim('-').split('=');
    bool inlineValue = arg.contains('=');
    auto it = options.find(name);
    if (it == options.end() ||
        it->second->getValueExpectedFlag() != llvm::cl::ValueRequired)
      continue;
    bool empty =
        inlineValue ? value.empty() : (i + 1 < argc && argv[i + 1][0] == '\0');
    if (!inlineValue)
      ++i;
    if (empty && !llvm::is_contained(exempt, name)) {
      llvm::errs() << tool << ": error: " << arg.split('=').first
                   << " needs a value (got an empty one)\n";
      return false;
    }
  }
  return true;
}

} // namespace pipeopt

#endif // PIPEOPT_SUPPORT_COMMANDLINE_H
