//===- MergeGpuModules.cpp - pipeopt-merge-gpu-modules --------------------===//
//
// Part of pipeopt. gpu-kernel-outlining makes one gpu.module per kernel; a
// stage function of a real model has hundreds of kernels, and
// gpu-module-to-binary runs ptxas and fatbinary once per module (1,262 times,
// 50 s, for the BERT-base training step). This pass moves every kernel into
// one gpu.module, so that the toolkit runs once and the runtime loads one
// image per device. See the pass description in Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Backend/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/DenseMap.h"

namespace pipeopt {
#define GEN_PASS_DEF_MERGEGPUMODULESPASS
#include "pipeopt/Backend/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;

namespace {

struct MergeGpuModulesPass
    : pipeopt::impl::MergeGpuModulesPassBase<MergeGpuModulesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> kernels(module.getOps<gpu::GPUModuleOp>());
    if (kernels.size() < 2)
      return;
    for (gpu::GPUModuleOp m : kernels) {
      // Targets and offloading handlers are attached after this pass; a
      // module that already has its own cannot share an image.
      if (m.getTargetsAttr() || m.getOffloadingHandlerAttr()) {
        m.emitError() << "pipeopt-merge-gpu-modules: gpu.module @"
                      << m.getName()
                      << " already has targets or an offloading handler; "
                         "merge the kernel modules before nvvm-attach-target";
        return signalPassFailure();
      }
    }

    SymbolTable topSymbols(module);
    OpBuilder b(kernels.front());
    auto merged = gpu::GPUModuleOp::create(b, kernels.front().getLoc(),
                                           moduleName.getValue());
    // Unique among the module's symbols (renamed on a clash).
    topSymbols.insert(merged);
    SymbolTable mergedSymbols(merged);

    // (old module, old kernel) -> new kernel name.
    llvm::DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> renamed;
    for (gpu::GPUModuleOp m : kernels) {
      StringAttr oldModule = m.getNameAttr();
      for (Operation &op :
           llvm::make_early_inc_range(m.getBodyRegion().front())) {
        auto symbol = dyn_cast<SymbolOpInterface>(&op);
        StringAttr oldName = symbol ? symbol.getNameAttr() : StringAttr();
        op.remove();
        if (symbol) {
          StringAttr newName = mergedSymbols.insert(&op);
          renamed[{oldModule, oldName}] = newName;
        } else {
          merged.getBodyRegion().front().push_back(&op);
        }
      }
      m.erase();
      ++numMerged;
    }

    module.walk([&](gpu::LaunchFuncOp launch) {
      SymbolRefAttr kernel = launch.getKernel();
      auto it =
          renamed.find({kernel.getRootReference(), kernel.getLeafReference()});
      if (it != renamed.end())
        launch.setKernelAttr(SymbolRefAttr::get(
            merged.getNameAttr(), {FlatSymbolRefAttr::get(it->second)}));
    });
  }
};

} // namespace
