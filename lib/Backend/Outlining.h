//===- Outlining.h - Shared functions of the outlining passes ---*- C++ -*-===//
//
// Part of pipeopt. What pipeopt-outline-loop-nests and
// pipeopt-outline-repeats share: a function made from moved ops is marked
// for LLVM (noinline, internal linkage) and kept once per distinct printed
// form, so that ops that would give the same function call one.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_LIB_BACKEND_OUTLINING_H
#define PIPEOPT_LIB_BACKEND_OUTLINING_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

#include <string>

namespace pipeopt {

/// The functions one outlining pass made in a module, one per distinct
/// printed form (without locations, with the placeholder name), named
/// `<prefix><N>` with N counted from 0 (skipping names already taken).
class DistinctFunctions {
public:
  /// `mark`: the unit attribute that tells the pass's functions apart (a
  /// second run of the pass leaves functions with it alone).
  DistinctFunctions(mlir::ModuleOp module, llvm::StringRef prefix,
                    llvm::StringRef mark);

  /// Moves `ops` (consecutive ops of one block) into a private function
  /// that takes `args`, clones `constants` first and returns `results`
  /// (values `ops` define), or finds an identical one made before; calls
  /// it in their place (the call's results replace `results`) and returns
  /// the function called. A new function is named `<prefix><N>`, has
  /// LLVM's `noinline` (func.func's own does not reach llvm.func) and
  /// internal linkage (inlining it back would undo the sharing), and the
  /// mark. Two functions are the same where they print the same with
  /// every element of every attribute and region, whatever the command
  /// line's printing flags say.
  mlir::func::FuncOp outline(llvm::ArrayRef<mlir::Operation *> ops,
                             llvm::ArrayRef<mlir::Value> args,
                             llvm::ArrayRef<mlir::Operation *> constants,
                             llvm::ArrayRef<mlir::Value> results);

  /// Whether an outlined function clones `v` (defined outside the ops it
  /// holds) instead of taking it as an argument: the one result of a
  /// constant-like op without operands or regions, so that constants are
  /// part of what two functions must share.
  static bool isClonedConstant(mlir::Value v);

  /// Distinct functions interned so far.
  unsigned size() const { return count; }

private:
  /// `fn` if no function with the same printed form was interned before,
  /// then named; otherwise that earlier function, and `fn` is erased.
  mlir::func::FuncOp intern(mlir::func::FuncOp fn);

  mlir::ModuleOp module;
  mlir::SymbolTable symbols;
  std::string prefix;
  std::string mark;
  llvm::StringMap<mlir::func::FuncOp> byText;
  unsigned nextId = 0;
  unsigned count = 0;
};

} // namespace pipeopt

#endif // PIPEOPT_LIB_BACKEND_OUTLINING_H
