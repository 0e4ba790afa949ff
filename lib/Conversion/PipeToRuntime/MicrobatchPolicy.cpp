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

#include "pipeopt/Analysis/ArgumentSelection.h"
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

FailureOr<MicrobatchPolicy>
MicrobatchPolicy::parse(ArrayRef<std::string> entries, std::string &err) {
  llvm::Expected<pipeopt::ArgumentSelection> sel =
      pipeopt::ArgumentSelection::parse(entries, "microbatch-args");
  if (!sel) {
    err = llvm::toString(sel.takeError());
    return failure();
  }
  MicrobatchPolicy p;
  switch (sel->kind) {
  case pipeopt::ArgumentSelection::Kind::Auto:
    p.kind = Kind::Auto;
    break;
  case pipeopt::ArgumentSelection::Kind::All:
    p.kind = Kind::All;
    break;
  case pipeopt::ArgumentSelection::Kind::None:
    p.kind = Kind::None;
    break;
  case pipeopt::ArgumentSelection::Kind::List:
    p.kind = Kind::List;
    p.indices.insert(sel->indices.begin(), sel->indices.end());
    break;
  }
  return p;
}

LogicalResult MicrobatchPolicy::checkIndices(const std::set<int64_t> &arguments,
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
              std::to_string(*arguments.rbegin()) +
              " (the pipe.input "
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
