//===- Passes.td - pipeopt conversion passes ---------------*- tablegen -*-===//
//
// Part of pipeopt. Conversions out of the pipe dialect (DESIGN.md §2, last
// step): per-rank programs become functions that call the runtime C ABI.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_CONVERSION_PASSES_TD
#define PIPEOPT_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// PipeToRuntime
//===----------------------------------------------------------------------===//

def ConvertPipeToRuntimePass
    : Pass<"convert-pipe-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Lower per-rank pipe.programs to calls into the pipeopt runtime.";
  let description = [{
    Every `pipe.program @x rank r of R microbatches M` becomes a public
    entry point `func.func @pipeopt_rank_<r>() -> i32` that performs the
    program's actions in order and returns 0, or the first nonzero status a
    runtime call returned (the remaining actions are skipped):

    * `pipe.input a microbatch m : tensor<S x T>`: allocates a buffer of
      type `memref<S x T>`, calls `pipeopt_rt_input_<T>(a, m, buf)` and
      wraps the buffer with `bufferization.to_tensor restrict writable`.
      An argument that is shared by all microbatches (see
      `microbatch-args`) is read once per entry point and reused.
    * `pipe.recv from p <dir, stage i -> j, microbatch m, value k>`: the same
      with `pipeopt_rt_recv_<T>(p, i, j, m, k, dir == backward, buf)`.
    * `pipe.send %v to p <tag>`: `bufferization.to_buffer %v read_only`,
      cast to `memref<*xT>`, `pipeopt_rt_send_<T>(p, i, j, m, k, dir, buf)`.
    * `pipe.output %v result i microbatch m`: `pipeopt_rt_output_<T>(i, m,
      buf)` on the buffer of `%v`.
    * `pipe.forward @f(...) stage s microbatch m`:
      `pipeopt_rt_action_begin(0, s, m)`, `func.call @f(...)`,
      `pipeopt_rt_action_end(0, s, m)`.

    After every runtime call the `i32` status is compared with 0 and a
    nonzero status is returned at once (`cf.cond_br` to a block that
    returns it), so the entry point has unstructured control flow that the
    rest of the CPU lowering (`pipeopt-lower-to-llvm`) handles.

    The runtime functions are declared `private` with
    `llvm.emit_c_interface`; their names and signatures are generated from
    `runtime/include/pipeopt/runtime/RuntimeFunctions.def`, the runtime's
    single source of truth. Only the functions used are declared.

    Functions that contain `pipe.stage_call` (the stage graph) are removed;
    every other function with a body becomes private, so that only the
    entry points are exported and unused functions can be dropped by
    `symbol-dce`.

    With `manifest=<path>`, the JSON manifest that `pipeopt-run` reads is
    written to `<path>` (format: docs/Runtime.md, parsed by
    runtime/lib/Manifest.cpp): ranks, stages, microbatches, schedule, entry
    points, inputs and outputs (shape, dtype, microbatched), stage -> rank
    and the forward actions of every rank.

    `ml_program.global_load_const` becomes `arith.constant` of the global's
    initial value (bufferization has no model for it); `global_load` is left
    to bufferization (`memref.global`).

    Errors (at the op): `pipe.backward` ("training (backward) actions cannot
    be executed yet; use a forward-only schedule"), tensors with dynamic
    shapes or element types the runtime does not carry (f32, f64, f16, bf16,
    i64, i32, i8, i1 are supported), two programs for one rank, a rank
    without a program, programs that disagree on the number of ranks or
    microbatches, an input or output read or written with two types, and
    `ml_program.global_store` (state cannot be split across ranks).
    A `microbatch-args` list with an empty entry, a repeated index, or an
    index that is not a model argument the programs read (`pipe.input`;
    the valid range is named) is an error at the first program.
  }];
  let options = [
    Option<"manifestPath", "manifest", "std::string", /*default=*/"\"\"",
           "Write the runtime manifest JSON to this file (nothing if empty)">,
    Option<"microbatchArgs", "microbatch-args", "std::string",
           /*default=*/"\"auto\"",
           "Model arguments that differ per microbatch: 'auto' (arguments "
           "of rank >= 2 whose leading dimension is 1, i.e. the batch of a "
           "batch-1 export, except those a stage reads as a weight: a "
           "contraction's right-hand side or filter, a gather table), "
           "'all', 'none', or a comma-separated list of argument indices "
           "such as '0,3'">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect",
  ];
  let statistics = [
    Statistic<"numPrograms", "num-programs", "pipe.program ops converted">,
    Statistic<"numRuntimeCalls", "num-runtime-calls",
              "Runtime calls emitted (each followed by a status check)">,
  ];
}

#endif // PIPEOPT_CONVERSION_PASSES_TD
