//===- ArgParser.h - The command-line parser of the runtime tools -*- C++
//-*-===//
//
// One small parser for pipeopt-run, pipeopt-calibrate and pipeopt-npy-diff
// (the runtime does not link LLVM, so not llvm::cl). An option is a name
// such as "--steps" or "-o"; one that takes a value accepts it as the next
// argument ("--steps 4") or, for names starting with "--", after '='
// ("--steps=4"). Every other argument that starts with '-' is an unknown
// option; the rest are positional.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_ARGPARSER_H
#define PIPEOPT_RUNTIME_ARGPARSER_H

#include <functional>
#include <string>
#include <vector>

namespace pipeopt {
namespace rt {

class ArgParser {
public:
  /// Called with the option's name (the spelling used) and its value.
  using ValueHandler =
      std::function<void(const std::string &name, const std::string &value)>;
  using FlagHandler = std::function<void(const std::string &name)>;
  using PositionalHandler = std::function<void(const std::string &arg)>;

  /// `rejectEmptyValues`: an empty value ("--out ''", "--out=") is an error
  /// for every option (an unset shell variable), "NAME needs a value, got an
  /// empty string (an unset shell variable?)"; otherwise the handler gets
  /// it and decides.
  explicit ArgParser(bool rejectEmptyValues = false)
      : rejectEmpty(rejectEmptyValues) {}

  /// An option with a value, under each of `names`. `missing`: the error
  /// when no value follows (default: "<name> needs a value").
  void value(std::vector<std::string> names, ValueHandler handler,
             std::string missing = "");
  /// An option without a value; "--flag=x" is an error ("--flag takes no
  /// value").
  void flag(std::vector<std::string> names, FlagHandler handler);

  /// Parses argv[1..argc-1] in order, calling the handlers (which may
  /// throw). Non-option arguments go to `positional` (an empty argument
  /// too). Throws RuntimeError: "unknown option '--x'" (the name before any
  /// '='), a missing or empty value, a value given to a flag.
  void parse(int argc, char **argv, const PositionalHandler &positional) const;

private:
  struct Option {
    std::vector<std::string> names;
    bool takesValue = false;
    ValueHandler onValue;
    FlagHandler onFlag;
    std::string missing;
  };
  const Option *find(const std::string &name) const;

  bool rejectEmpty;
  std::vector<Option> options;
};

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_ARGPARSER_H
