//===- Passes.td - pipeopt transformation passes -----------*- tablegen -*-===//
//
// Part of pipeopt. Passes are grouped by the step of the flow they implement
// (DESIGN.md §2); flags are prefixed `pipe-`.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_TRANSFORMS_PASSES_TD
#define PIPEOPT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Preparation
//===----------------------------------------------------------------------===//

def PreparePass : Pass<"pipe-prepare", "::mlir::ModuleOp"> {
  let summary = "Inline helper calls so each model function is one flat graph.";
  let description = [{
    Partitioning works on one function body. Frontends such as JAX emit
    helper functions called with `func.call` (see
    `heir_resnet_like_jax.linalg.mlir`). This pass inlines every `func.call`
    into its caller (MLIR's inliner), removes private functions that are no
    longer referenced, and canonicalizes. TOSA ops stay TOSA.

    Errors: a recursive call chain cannot be inlined and is reported at the
    call site; a call to an external declaration (no body) is reported too,
    since the partitioner cannot see its cost.

    Postcondition: no `func.call` remains in a function with a body.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let statistics = [
    Statistic<"numInlined", "num-inlined", "Number of func.call ops inlined">
  ];
}

#endif // PIPEOPT_TRANSFORMS_PASSES_TD
