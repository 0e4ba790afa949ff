//===- ArgParser.cpp - The command-line parser of the runtime tools -------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/ArgParser.h"
#include "pipeopt/runtime/Types.h"

namespace pipeopt {
namespace rt {

void ArgParser::value(std::vector<std::string> names, ValueHandler handler,
                      std::string missing) {
  Option o;
  o.names = std::move(names);
  o.takesValue = true;
  o.onValue = std::move(handler);
  o.missing = std::move(missing);
  options.push_back(std::move(o));
}

void ArgParser::flag(std::vector<std::string> names, FlagHandler handler) {
  Option o;
  o.names = std::move(names);
  o.onFlag = std::move(handler);
  options.push_back(std::move(o));
}

const ArgParser::Option *ArgParser::find(const std::string &name) const {
  for (const Option &o : options)
    for (const std::string &n : o.names)
      if (n == name)
        return &o;
  return nullptr;
}

void ArgParser::parse(int argc, char **argv,
                      const PositionalHandler &positional) const {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i], value;
    bool hasValue = false;
    if (a.rfind("--", 0) == 0) {
      size_t eq = a.find('=');
      if (eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        hasValue = true;
      }
    }
    const Option *o = find(a);
    if (!o) {
      if (a.rfind("-", 0) == 0)
        throw RuntimeError("unknown option '" + a + "'");
      positional(a);
      continue;
    }
    if (!o->takesValue) {
      if (hasValue)
        throw RuntimeError(a + " takes no value");
      o->onFlag(a);
      continue;
    }
    if (!hasValue) {
      if (i + 1 >= args.size())
        throw RuntimeError(o->missing.empty() ? a + " needs a value"
                                              : o->missing);
      value = args[++i];
    }
    if (value.empty() && rejectEmpty)
      throw RuntimeError(a + " needs a value, got an empty string (an "
                             "unset shell variable?)");
    o->onValue(a, value);
  }
}

} // namespace rt
} // namespace pipeopt
