//===- FreeBuffersEarly.cpp - pipeopt-free-buffers-early --------*- C++ -*-===//
//
// Part of pipeopt. Moves each memref.dealloc of a buffer allocated in the
// same block to just after the buffer's last use, so that a training
// step's temporaries stop living until the function returns. See the pass
// description in Backend/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Backend/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/DenseSet.h"

namespace pipeopt {
#define GEN_PASS_DEF_FREEBUFFERSEARLYPASS
#include "pipeopt/Backend/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;

/// Whether a result of this type can carry a buffer to a later use that
/// the pass would not see as a memref (a tensor of it, an LLVM struct or
/// pointer of its descriptor): anything but memrefs, integers, indices and
/// floats.
static bool mayHideBuffer(Type type) {
  return !isa<BaseMemRefType, IntegerType, IndexType, FloatType>(type);
}

/// The op of `block` after which `alloc`'s buffer is no longer used
/// (through any value that may alias it), or null when a use cannot be
/// followed: the buffer (or an alias) is passed to a terminator of the
/// block, freed elsewhere, stored into memory, turned into a pointer, an
/// LLVM value or any result that is not a memref or a number (a tensor,
/// a struct), or used outside the block.
static Operation *lastUseInBlock(memref::AllocOp alloc,
                                 memref::DeallocOp dealloc) {
  Block *block = alloc->getBlock();
  Operation *last = alloc;
  SmallVector<Value> worklist{alloc.getResult()};
  llvm::DenseSet<Value> seen;
  // Every memref result of an op that reads an alias (a view, a cast, a
  // loop that yields it, a call) may alias it too; so may every memref
  // block argument of the op's regions (a loop's iteration arguments).
  auto addAliases = [&](Operation *op) {
    for (Value r : op->getResults())
      if (isa<BaseMemRefType>(r.getType()))
        worklist.push_back(r);
    for (Region &region : op->getRegions())
      for (Block &b : region)
        for (BlockArgument a : b.getArguments())
          if (isa<BaseMemRefType>(a.getType()))
            worklist.push_back(a);
  };
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (user == dealloc.getOperation())
        continue;
      if (isa<memref::DeallocOp, memref::ExtractAlignedPointerAsIndexOp>(
              user) ||
          isa_and_nonnull<LLVM::LLVMDialect>(user->getDialect()) ||
          llvm::any_of(user->getResultTypes(), mayHideBuffer))
        return nullptr;
      // The buffer itself stored as a value (into a memref of memrefs).
      if (auto store = dyn_cast<memref::StoreOp>(user);
          store && store.getValueToStore() == v)
        return nullptr;
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (!ancestor)
        return nullptr;
      if (ancestor == user && user->hasTrait<OpTrait::IsTerminator>())
        return nullptr;
      if (last->isBeforeInBlock(ancestor))
        last = ancestor;
      addAliases(user);
      if (ancestor != user)
        addAliases(ancestor);
    }
  }
  return last;
}

namespace {

struct FreeBuffersEarlyPass
    : pipeopt::impl::FreeBuffersEarlyPassBase<FreeBuffersEarlyPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<memref::DeallocOp> deallocs;
    getOperation().walk([&](memref::DeallocOp d) { deallocs.push_back(d); });
    for (memref::DeallocOp dealloc : deallocs) {
      auto alloc = dealloc.getMemref().getDefiningOp<memref::AllocOp>();
      if (!alloc || alloc->getBlock() != dealloc->getBlock())
        continue;
      Operation *last = lastUseInBlock(alloc, dealloc);
      if (last && last->isBeforeInBlock(dealloc))
        dealloc->moveAfter(last);
    }
  }
};

} // namespace
