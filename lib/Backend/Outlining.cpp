//===- Outlining.cpp - Shared functions of the outlining passes -*- C++ -*-===//

#include "Outlining.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include <limits>

using namespace mlir;

pipeopt::DistinctFunctions::DistinctFunctions(ModuleOp module,
                                              llvm::StringRef prefix,
                                              llvm::StringRef mark)
    : module(module), symbols(module), prefix(prefix.str()), mark(mark.str()) {}

func::FuncOp pipeopt::DistinctFunctions::create(Location loc,
                                                FunctionType type) {
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto fn = func::FuncOp::create(b, loc, prefix, type);
  fn.setPrivate();
  fn->setAttr("passthrough", b.getArrayAttr({b.getStringAttr("noinline")}));
  fn->setAttr(mark, b.getUnitAttr());
  fn->setAttr("llvm.linkage", LLVM::LinkageAttr::get(module.getContext(),
                                                     LLVM::Linkage::Internal));
  return fn;
}

func::FuncOp pipeopt::DistinctFunctions::intern(func::FuncOp fn) {
  // Every flag that could make two different functions print the same is
  // set here: OpPrintingFlags() starts from the command line's
  // --mlir-elide-elementsattrs-if-larger, --mlir-print-skip-regions, ...
  OpPrintingFlags flags;
  flags.elideLargeElementsAttrs(std::numeric_limits<int64_t>::max())
      .elideLargeResourceString(std::numeric_limits<int64_t>::max())
      .skipRegions(false)
      .enableDebugInfo(false)
      .printGenericOpForm(false)
      .printValueUsers(false)
      .useLocalScope();
  std::string text;
  {
    llvm::raw_string_ostream os(text);
    fn->print(os, flags);
  }
  auto [it, inserted] = byText.try_emplace(text, fn);
  if (!inserted) {
    fn.erase();
    return it->second;
  }
  std::string name;
  do
    name = (prefix + llvm::Twine(nextId++)).str();
  while (symbols.lookup(name));
  fn.setSymName(name);
  symbols.insert(fn);
  ++count;
  return fn;
}
