//===- MicrobatchPolicy.cpp - Which model arguments are per microbatch ---===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// convert-pipe-to-runtime's option microbatch-args: parsing, the check of
/// listed indices, and (for `auto`) what the stage functions say about each
/// model argument. See PipeToRuntimeInternal.h.
///
//===----------------------------------------------------------------------===//

#include "PipeToRuntimeInternal.h"

#include "pipeopt/Analysis/Parameters.h"
#include "pipeopt/Conversion/PipeToRuntime/PipeToRuntime.h"
#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace pipe = pipeopt::pipe;
using pipeopt::pipe_to_runtime::MicrobatchPolicy;

FailureOr<MicrobatchPolicy> MicrobatchPolicy::parse(StringRef text,
                                                    std::string &err) {
  MicrobatchPolicy p;
  text = text.trim();
  if (text.empty() || text == "auto")
    return p;
  if (text == "all") {
    p.kind = Kind::All;
    return p;
  }
  if (text == "none") {
    p.kind = Kind::None;
    return p;
  }
  p.kind = Kind::List;
  SmallVector<StringRef> parts;
  text.split(parts, ',', -1, /*KeepEmpty=*/true);
  for (StringRef part : parts) {
    int64_t v;
    if (part.trim().empty()) {
      err = "microbatch-args: empty entry in '" + text.str() +
            "' (expected a comma-separated list of argument indices such "
            "as '0,3')";
      return failure();
    }
    if (part.trim().getAsInteger(10, v) || v < 0) {
      err = "microbatch-args: expected 'auto', 'all', 'none' or a "
            "comma-separated list of argument indices, got '" +
            text.str() + "'";
      return failure();
    }
    if (!p.indices.insert(v).second) {
      err = "microbatch-args: argument index " + std::to_string(v) +
            " is listed twice in '" + text.str() + "'";
      return failure();
    }
  }
  return p;
}

LogicalResult
MicrobatchPolicy::checkIndices(const std::set<int64_t> &arguments,
                               std::string &err) const {
  if (kind != Kind::List)
    return success();
  for (int64_t v : indices) {
    if (arguments.count(v))
      continue;
    std::string valid;
    if (arguments.empty())
      valid = "the programs read no model argument";
    else if (int64_t(arguments.size()) == *arguments.rbegin() + 1)
      valid = "valid argument indices are 0 to " +
              std::to_string(*arguments.rbegin()) + " (the pipe.input "
              "indices of the programs)";
    else {
      valid = "the programs read model arguments ";
      llvm::raw_string_ostream os(valid);
      llvm::interleaveComma(arguments, os);
    }
    err = "microbatch-args: argument index " + std::to_string(v) +
          " is not an argument the programs read; " + valid;
    return failure();
  }
  return success();
}

bool MicrobatchPolicy::isMicrobatched(int64_t index,
                                      RankedTensorType type) const {
  if (forced.count(index))
    return true;
  switch (kind) {
  case Kind::All:
    return true;
  case Kind::None:
    return false;
  case Kind::List:
    return indices.count(index) != 0;
  case Kind::Auto:
    return data.count(index) != 0;
  }
  return false;
}

void pipeopt::pipe_to_runtime::classifyArguments(
    ArrayRef<pipe::ProgramOp> programs, MicrobatchPolicy &policy) {
  // `auto`: model arguments that some stage function reading them
  // classifies as data (cost::dataArguments, Analysis/Parameters.h).
  std::map<Operation *, std::set<unsigned>> dataArgsOf;
  auto dataArgs = [&](func::FuncOp fn) -> const std::set<unsigned> & {
    auto [it, inserted] = dataArgsOf.try_emplace(fn);
    if (inserted && policy.kind == MicrobatchPolicy::Kind::Auto)
      for (unsigned n : pipeopt::cost::dataArguments(fn))
        it->second.insert(n);
    return it->second;
  };
  for (pipe::ProgramOp p : programs)
    p.walk([&](pipe::ForwardOp fwd) {
      auto fn = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          fwd, fwd.getCalleeAttr());
      if (!fn)
        return;
      const std::set<unsigned> &d = dataArgs(fn);
      for (auto [k, v] : llvm::enumerate(fwd.getArgs()))
        if (auto in = v.getDefiningOp<pipe::InputOp>()) {
          if (d.count(k))
            policy.data.insert(in.getArgument());
          if (fn.getArgAttr(k, pipe::PipeDialect::getMicrobatchedAttrName()))
            policy.forced.insert(in.getArgument());
          if (auto c = fn.getArgAttrOfType<IntegerAttr>(
                  k, pipe::PipeDialect::getClassCountAttrName())) {
            policy.indexBounds[in.getArgument()] = c.getInt();
            policy.classIndices.insert(in.getArgument());
          }
          auto type = dyn_cast<RankedTensorType>(v.getType());
          if (fn.isExternal() || !type ||
              !type.getElementType().isSignlessInteger())
            continue;
          if (std::optional<int64_t> bound =
                  pipeopt::gatherIndexBound(fn.getArgument(k))) {
            auto [it, inserted] =
                policy.indexBounds.try_emplace(in.getArgument(), *bound);
            if (!inserted)
              it->second = std::min(it->second, *bound);
          }
        }
    });
}
