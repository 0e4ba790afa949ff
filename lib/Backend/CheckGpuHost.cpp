//===- CheckGpuHost.cpp - pipeopt-check-gpu-host --------------------------===//
//
// Part of pipeopt. After kernel outlining, the host code of a --target=cuda
// build must not touch device memory nor call anything but the runtime ABI.
// See the pass description in Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Backend/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace pipeopt {
#define GEN_PASS_DEF_CHECKGPUHOSTPASS
#include "pipeopt/Backend/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;

namespace {

constexpr const char *kCannotRun = "--target=cuda cannot run it on the host";

/// The memref a host memory access reads or writes, or null if `op` is none.
Value accessedMemref(Operation *op) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return load.getMemref();
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return store.getMemref();
  if (auto rmw = dyn_cast<memref::AtomicRMWOp>(op))
    return rmw.getMemref();
  if (auto rmw = dyn_cast<memref::GenericAtomicRMWOp>(op))
    return rmw.getMemref();
  if (auto load = dyn_cast<vector::LoadOp>(op))
    return load.getBase();
  if (auto store = dyn_cast<vector::StoreOp>(op))
    return store.getBase();
  if (auto read = dyn_cast<vector::TransferReadOp>(op))
    return isa<MemRefType>(read.getBase().getType()) ? read.getBase() : Value();
  if (auto write = dyn_cast<vector::TransferWriteOp>(op))
    return isa<MemRefType>(write.getBase().getType()) ? write.getBase()
                                                      : Value();
  return {};
}

/// True if `memref` is (a view of) a host global: the only host memory of a
/// cuda build.
bool isHostGlobal(Value memref) {
  while (Operation *def = memref.getDefiningOp()) {
    if (isa<memref::GetGlobalOp>(def))
      return true;
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return false;
    memref = view.getViewSource();
  }
  return false;
}

struct CheckGpuHostPass
    : pipeopt::impl::CheckGpuHostPassBase<CheckGpuHostPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    bool failed = false;
    for (auto fn : module.getOps<func::FuncOp>()) {
      fn.walk([&](Operation *op) {
        if (op->getParentOfType<gpu::GPUModuleOp>())
          return WalkResult::skip();
        if (Value m = accessedMemref(op); m && !isHostGlobal(m)) {
          op->emitError()
              << (isa<memref::LoadOp, vector::LoadOp, vector::TransferReadOp>(
                      op)
                      ? "reads"
                      : "writes")
              << " device memory on the host, and " << kCannotRun
              << " (a tensor element used outside a kernel: the condition "
                 "of an scf.if or scf.while, or a single element read with "
                 "tensor.extract or written with tensor.insert into host "
                 "code; compute it with linalg ops on tensors, or compile "
                 "with --target=cpu)";
          failed = true;
        } else if (isa<memref::AllocOp, memref::AllocaOp, memref::CopyOp,
                       memref::DeallocOp>(op)) {
          op->emitError() << "host memory operation left in a --target=cuda "
                             "build (run pipeopt-buffers-to-gpu first); "
                          << kCannotRun;
          failed = true;
        } else if (isa<gpu::LaunchOp>(op)) {
          op->emitError() << "gpu.launch not outlined (run "
                             "gpu-kernel-outlining first); "
                          << kCannotRun;
          failed = true;
        } else if (auto call = dyn_cast<func::CallOp>(op)) {
          auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
          bool allowed =
              callee && (!callee.isExternal() ||
                         call.getCallee().starts_with("pipeopt_rt_"));
          if (!allowed) {
            op->emitError() << "calls @" << call.getCallee()
                            << ", which is neither a function of the model "
                               "nor the pipeopt runtime ABI, and "
                            << kCannotRun;
            failed = true;
          }
        }
        return WalkResult::advance();
      });
    }
    if (failed)
      signalPassFailure();
  }
};

} // namespace
