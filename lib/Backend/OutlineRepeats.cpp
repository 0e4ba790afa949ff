//===- OutlineRepeats.cpp - pipeopt-outline-repeats -------------*- C++ -*-===//
//
// Part of pipeopt. Finds runs of repeated op sequences in a function's body
// (the layers of a transformer, forward and backward) and moves each
// repetition into a function, one function per distinct repetition, so that
// LLVM compiles a layer's glue code once. See the pass description in
// Backend/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "Outlining.h"
#include "pipeopt/Backend/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/SetVector.h"

namespace pipeopt {
#define GEN_PASS_DEF_OUTLINEREPEATSPASS
#include "pipeopt/Backend/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;

/// Marks the functions this pass creates (a second run leaves them alone).
static constexpr llvm::StringLiteral kRepeatAttr = "pipeopt.repeat";
static constexpr llvm::StringLiteral kNamePrefix = "pipeopt_repeat_";

namespace {

/// A run of `copies` consecutive repetitions of `period` ops starting at op
/// index `start` of a block.
struct Run {
  size_t start = 0, period = 0, copies = 0;
  size_t covered() const { return period * copies; }
};

/// The signature of an op for finding repetitions: its name, attributes,
/// properties, result types and operand types, and the same of the ops in
/// its regions (with their blocks' argument types), not which values it
/// uses. Two repetitions of a layer have the same signatures; whether their
/// data flow is the same too is decided later, by the outlined functions'
/// text.
uint64_t signatureOf(Operation *op) {
  auto typeHash = [](Value v) {
    return llvm::hash_value(v.getType().getAsOpaquePointer());
  };
  llvm::hash_code h = OperationEquivalence::computeHash(
      op, typeHash, typeHash, OperationEquivalence::IgnoreLocations);
  for (Region &region : op->getRegions())
    for (Block &block : region) {
      h = llvm::hash_combine(h, block.getNumArguments());
      for (BlockArgument a : block.getArguments())
        h = llvm::hash_combine(h, typeHash(a));
      for (Operation &nested : block)
        h = llvm::hash_combine(h, signatureOf(&nested));
    }
  return h;
}

/// The longest run (most ops covered, then the shortest period) of at
/// least two consecutive repetitions of a sequence of `minPeriod` or more
/// signatures. O(N^2) comparisons of hashes for N ops: N is a few thousand
/// for a 16-layer transformer's training step.
Run findRun(llvm::ArrayRef<uint64_t> sig, size_t minPeriod) {
  Run best;
  const size_t n = sig.size();
  for (size_t p = minPeriod; p <= n / 2; ++p) {
    size_t run = 0;
    for (size_t i = 0; i + p < n; ++i) {
      run = sig[i] == sig[i + p] ? run + 1 : 0;
      // [i - run + 1, i + p] repeats with period p: (run + p) / p copies.
      size_t copies = (run + p) / p;
      if (copies < 2)
        continue;
      Run r{i + 1 - run, p, copies};
      if (r.covered() > best.covered() ||
          (r.covered() == best.covered() && p < best.period))
        best = r;
    }
  }
  return best;
}

/// Interrupts a walk at an op that allocates on its function's stack
/// (memref.alloca, llvm.alloca, ...): its buffer would not outlive an
/// outlined function.
WalkResult allocatesOnStack(Operation *op) {
  if (isa<LLVM::AllocaOp>(op))
    return WalkResult::interrupt();
  if (auto effects = dyn_cast<MemoryEffectOpInterface>(op)) {
    llvm::SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const MemoryEffects::EffectInstance &e : list)
      if (isa<MemoryEffects::Allocate>(e.getEffect()) &&
          e.getResource() ==
              SideEffects::AutomaticAllocationScopeResource::get())
        return WalkResult::interrupt();
  }
  return WalkResult::advance();
}

struct OutlineRepeatsPass
    : pipeopt::impl::OutlineRepeatsPassBase<OutlineRepeatsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // A repetition of one op would become one call, found again.
    if (minOps < 2) {
      module.emitError() << "pipeopt-outline-repeats: min-ops must be at "
                            "least 2, got "
                         << unsigned(minOps);
      return signalPassFailure();
    }
    pipeopt::DistinctFunctions functions(module, kNamePrefix, kRepeatAttr);
    llvm::SmallVector<func::FuncOp> fns;
    // The functions of this pass (this run's and an earlier one's): a call
    // of one is never part of a repetition, so that 32 layers become 32
    // calls of one function, not 2 calls of a function of 16 calls.
    llvm::DenseSet<StringAttr> outlined;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn->hasAttr(kRepeatAttr))
        outlined.insert(fn.getSymNameAttr());
      if (!fn.isExternal() && !fn->hasAttr(kRepeatAttr) &&
          fn.getBody().hasOneBlock())
        fns.push_back(fn);
    }
    for (func::FuncOp fn : fns) {
      // Outline the longest run, then look again (a transformer's backward
      // layers, then its forward ones). Each outlined repetition becomes
      // one call, which no later run includes: the ops left decrease with
      // every run outlined, and the loop ends.
      for (;;) {
        Block &block = fn.getBody().front();
        llvm::SmallVector<Operation *> ops;
        for (Operation &op : block.without_terminator())
          ops.push_back(&op);
        if (ops.size() < 2 * size_t(minOps))
          break;
        llvm::SmallVector<uint64_t> sig;
        for (Operation *op : ops) {
          auto call = dyn_cast<func::CallOp>(op);
          // A signature no other op has (the op's address).
          sig.push_back(
              call && outlined.contains(call.getCalleeAttr().getAttr())
                  ? uint64_t(reinterpret_cast<uintptr_t>(op))
                  : signatureOf(op));
        }
        Run run = findRun(sig, size_t(minOps));
        if (run.copies < 2)
          break;
        bool any = false;
        for (size_t c = 0; c < run.copies; ++c) {
          llvm::ArrayRef<Operation *> chunk(
              ops.data() + run.start + c * run.period, run.period);
          if (func::FuncOp callee = outline(chunk, functions)) {
            outlined.insert(callee.getSymNameAttr());
            any = true;
          }
        }
        if (!any)
          break;
      }
    }
    numFunctions = functions.size();
  }

  /// Moves the ops of `chunk` (consecutive ops of one block) into a
  /// function, or calls an identical one made before, and returns the
  /// function called; returns null (and changes nothing) where a chunk
  /// cannot leave its function.
  func::FuncOp outline(llvm::ArrayRef<Operation *> chunk,
                       pipeopt::DistinctFunctions &functions) {
    llvm::DenseSet<Operation *> inside;
    for (Operation *op : chunk) {
      // A stack buffer does not outlive the function it is made in.
      if (op->walk(allocatesOnStack).wasInterrupted())
        return nullptr;
      inside.insert(op);
    }
    // Arguments: the values the chunk uses from outside, in first-use
    // order (so that two repetitions agree), except constants, which are
    // cloned in. Results: the values it defines that are used after it,
    // in definition order.
    llvm::SetVector<Value> args;
    llvm::SetVector<Operation *> constants;
    auto use = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (def && inside.contains(def))
        return;
      if (pipeopt::DistinctFunctions::isClonedConstant(v))
        constants.insert(def);
      else
        args.insert(v);
    };
    for (Operation *op : chunk) {
      for (Value v : op->getOperands())
        use(v);
      llvm::SetVector<Value> above;
      getUsedValuesDefinedAbove(op->getRegions(), above);
      for (Value v : above)
        use(v);
    }
    llvm::SmallVector<Value> results;
    for (Operation *op : chunk)
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation *user) {
              return !inside.contains(
                  chunk.front()->getBlock()->findAncestorOpInBlock(*user));
            }))
          results.push_back(r);

    func::FuncOp fn = functions.outline(chunk, args.getArrayRef(),
                                        constants.getArrayRef(), results);
    ++numOutlined;
    return fn;
  }
};

} // namespace
