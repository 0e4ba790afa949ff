//===- Outlining.cpp - Shared functions of the outlining passes -*- C++ -*-===//

#include "Outlining.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

#include <limits>

using namespace mlir;

pipeopt::DistinctFunctions::DistinctFunctions(ModuleOp module,
                                              llvm::StringRef prefix,
                                              llvm::StringRef mark)
    : module(module), symbols(module), prefix(prefix.str()), mark(mark.str()) {}

bool pipeopt::DistinctFunctions::isClonedConstant(Value v) {
  Operation *def = v.getDefiningOp();
  return def && def->getNumResults() == 1 && def->getNumOperands() == 0 &&
         def->getNumRegions() == 0 && matchPattern(v, m_Constant());
}

func::FuncOp pipeopt::DistinctFunctions::outline(
    llvm::ArrayRef<Operation *> ops, llvm::ArrayRef<Value> args,
    llvm::ArrayRef<Operation *> constants, llvm::ArrayRef<Value> results) {
  Operation *first = ops.front();
  llvm::SmallVector<Type> argTypes, resultTypes;
  for (Value v : args)
    argTypes.push_back(v.getType());
  for (Value v : results)
    resultTypes.push_back(v.getType());
  OpBuilder moduleBuilder = OpBuilder::atBlockEnd(module.getBody());
  auto fn = func::FuncOp::create(
      moduleBuilder, first->getLoc(), prefix,
      FunctionType::get(module.getContext(), argTypes, resultTypes));
  fn.setPrivate();
  fn->setAttr("passthrough", moduleBuilder.getArrayAttr(
                                 {moduleBuilder.getStringAttr("noinline")}));
  fn->setAttr(mark, moduleBuilder.getUnitAttr());
  fn->setAttr("llvm.linkage", LLVM::LinkageAttr::get(module.getContext(),
                                                     LLVM::Linkage::Internal));
  Block *entry = fn.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockBegin(entry);
  IRMapping map;
  map.map(args, entry->getArguments());
  for (Operation *c : constants)
    b.clone(*c, map);
  for (Operation *op : ops)
    b.clone(*op, map);
  llvm::SmallVector<Value> returned;
  for (Value r : results)
    returned.push_back(map.lookup(r));
  func::ReturnOp::create(b, first->getLoc(), returned);
  fn = intern(fn);

  OpBuilder callBuilder(first);
  auto call = func::CallOp::create(callBuilder, first->getLoc(), fn, args);
  for (auto [r, c] : llvm::zip(results, call.getResults()))
    Value(r).replaceAllUsesWith(c);
  for (Operation *op : llvm::reverse(ops)) {
    op->dropAllUses();
    op->erase();
  }
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
