//===- BuffersToGpu.cpp - pipeopt-buffers-to-gpu --------------------------===//
//
// Part of pipeopt. The memory model of a --target=cuda build on bufferized,
// deallocated code: every buffer is device memory (gpu.alloc), copies are
// gpu.memcpy or a linalg.copy kernel, constants are copied to the device, and
// linalg ops without a parallel dimension get a one-iteration parallel loop so
// that they become (one-thread) kernels instead of host loops. See the pass
// description in Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Backend/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace pipeopt {
#define GEN_PASS_DEF_BUFFERSTOGPUPASS
#include "pipeopt/Backend/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;

namespace {

/// True if `op` runs on the host: not inside a loop nest that becomes a
/// kernel (scf.parallel) or a kernel itself.
bool onHost(Operation *op) {
  return !op->getParentOfType<scf::ParallelOp>() &&
         !op->getParentOfType<gpu::LaunchOp>() &&
         !op->getParentOfType<gpu::GPUModuleOp>();
}

/// memref.get_global @g -> a device copy made once at the top of the
/// function (the global is constant, so one copy serves every use) and
/// freed before every return.
LogicalResult copyGlobalsToDevice(func::FuncOp fn) {
  SmallVector<memref::GetGlobalOp> gets;
  fn.walk([&](memref::GetGlobalOp op) {
    if (onHost(op))
      gets.push_back(op);
  });
  if (gets.empty())
    return success();
  SmallVector<func::ReturnOp> returns;
  fn.walk([&](func::ReturnOp r) { returns.push_back(r); });
  Block &entry = fn.getBody().front();
  // One device copy per global and function.
  llvm::StringMap<Value> copies;
  for (memref::GetGlobalOp op : gets) {
    auto type = cast<MemRefType>(op.getType());
    if (!type.getLayout().isIdentity() || !type.hasStaticShape())
      return op.emitError() << "--target=cuda: cannot copy the global @"
                            << op.getName() << " of type " << type
                            << " to the device (static identity layout "
                               "expected)";
    Value &copy = copies[op.getName()];
    if (!copy) {
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      Value host =
          memref::GetGlobalOp::create(b, op.getLoc(), type, op.getNameAttr());
      copy = gpu::AllocOp::create(b, op.getLoc(), type, Type(), ValueRange(),
                                  ValueRange(), ValueRange())
                 .getMemref();
      gpu::MemcpyOp::create(b, op.getLoc(), Type(), ValueRange(), copy, host);
      for (func::ReturnOp r : returns) {
        OpBuilder rb(r);
        gpu::DeallocOp::create(rb, op.getLoc(), Type(), ValueRange(), copy);
      }
    }
    op.replaceAllUsesWith(copy);
    op.erase();
  }
  return success();
}

/// The block that frees `alloca`'s memory: the alloca's own block when its
/// parent is an automatic allocation scope (func.func, memref.alloca_scope),
/// else null.
Block *allocaScopeBlock(memref::AllocaOp alloca) {
  Operation *parent = alloca->getParentOp();
  if (parent && parent->hasTrait<OpTrait::AutomaticAllocationScope>())
    return alloca->getBlock();
  return nullptr;
}

/// True if `loop` is a host loop nest of scalar code over buffers (what the
/// gradient of a gather, a scatter-add, lowers to): every op nested in it is
/// an scf loop/branch, an arith / math / affine / index op, or a
/// memref.load / store, and at least one memory access. Such a nest reads
/// and writes device memory, so it must run as a kernel; its iterations may
/// depend on each other (a scatter-add accumulates into the same element),
/// so it becomes a one-thread kernel that keeps their order.
bool isScalarBufferLoopNest(scf::ForOp loop) {
  bool accessesMemory = false;
  WalkResult r = loop.getBody()->walk([&](Operation *op) {
    if (isa<memref::LoadOp, memref::StoreOp>(op)) {
      accessesMemory = true;
      return WalkResult::advance();
    }
    if (isa<scf::ForOp, scf::IfOp, scf::YieldOp>(op))
      return WalkResult::advance();
    StringRef ns = op->getDialect() ? op->getDialect()->getNamespace() : "";
    if (ns == "arith" || ns == "math" || ns == "affine" || ns == "index")
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  return !r.wasInterrupted() && accessesMemory;
}

/// True if `op` must run as a one-thread kernel on the host side of the
/// module: a linalg op on buffers without a parallel dimension (a reduction
/// to a scalar, a 0-d op), which convert-linalg-to-parallel-loops would
/// leave as host loops over device memory, or an outermost result-less host
/// loop nest of scalar code (isScalarBufferLoopNest).
bool isSerialKernel(Operation *op) {
  if (!onHost(op))
    return false;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return linalgOp.hasPureBufferSemantics() &&
           linalgOp.getNumParallelLoops() == 0;
  auto loop = dyn_cast<scf::ForOp>(op);
  return loop && !op->getParentOfType<scf::ForOp>() &&
         loop.getNumResults() == 0 && isScalarBufferLoopNest(loop);
}

/// Moves `op` (which has no results) into a new scf.parallel of one
/// iteration at its place: a one-thread kernel after
/// convert-parallel-loops-to-gpu.
void wrapInOneIterationLoop(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ParallelOp::create(b, loc, ValueRange{zero}, ValueRange{one},
                                      ValueRange{one});
  op->moveBefore(loop.getBody()->getTerminator());
}

struct BuffersToGpuPass
    : pipeopt::impl::BuffersToGpuPassBase<BuffersToGpuPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Ops of nested modules (gpu.module, a nested builtin.module) are not
    // host code of this module.
    auto inThisModule = [&](Operation *op) {
      return op->getParentOfType<ModuleOp>() == module &&
             !op->getParentOfType<gpu::GPUModuleOp>();
    };
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal() && failed(copyGlobalsToDevice(fn)))
        return signalPassFailure();

    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (!inThisModule(op))
        return;
      if (isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp,
              memref::CopyOp>(op) ||
          isSerialKernel(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        // The alignment attribute has no device counterpart: cudaMalloc
        // memory is aligned to at least 256 bytes.
        auto dev = gpu::AllocOp::create(b, loc, alloc.getType(), Type(),
                                        ValueRange(), alloc.getDynamicSizes(),
                                        alloc.getSymbolOperands());
        alloc.replaceAllUsesWith(dev.getMemref());
        alloc.erase();
        ++numAllocs;
      } else if (auto alloca = dyn_cast<memref::AllocaOp>(op)) {
        Block *scope = allocaScopeBlock(alloca);
        if (!scope) {
          alloca.emitError() << "--target=cuda: a memref.alloca whose parent "
                                "is not an allocation scope cannot be "
                                "placed in device memory";
          return signalPassFailure();
        }
        auto dev = gpu::AllocOp::create(b, loc, alloca.getType(), Type(),
                                        ValueRange(), alloca.getDynamicSizes(),
                                        alloca.getSymbolOperands());
        OpBuilder end(scope->getTerminator());
        gpu::DeallocOp::create(end, loc, Type(), ValueRange(), dev.getMemref());
        alloca.replaceAllUsesWith(dev.getMemref());
        alloca.erase();
        ++numAllocs;
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        gpu::DeallocOp::create(b, loc, Type(), ValueRange(),
                               dealloc.getMemref());
        dealloc.erase();
      } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        auto src = cast<MemRefType>(copy.getSource().getType());
        auto dst = cast<MemRefType>(copy.getTarget().getType());
        if (src.getLayout().isIdentity() && dst.getLayout().isIdentity() &&
            src.getShape() == dst.getShape()) {
          // One contiguous device-to-device copy (cudaMemcpyAsync).
          gpu::MemcpyOp::create(b, loc, Type(), ValueRange(), copy.getTarget(),
                                copy.getSource());
          ++numMemcpys;
        } else {
          // Strided views: a copy kernel (lowered with the other linalg
          // ops).
          linalg::CopyOp::create(b, loc, copy.getSource(), copy.getTarget());
          ++numCopyKernels;
        }
        copy.erase();
      } else {
        // isSerialKernel(op).
        wrapInOneIterationLoop(b, op);
        ++numSerialKernels;
      }
    }
  }
};

} // namespace
