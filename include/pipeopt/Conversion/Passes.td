//===- Passes.td - pipeopt conversion passes ---------------*- tablegen -*-===//
//
// Part of pipeopt. Conversions out of the pipe dialect (docs/Design.md §2,
// last step): per-rank programs become functions that call the runtime C ABI.
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

    * `pipe.input a microbatch m : tensor<S x T>`: with `input-views` (the
      default on the cpu target), a read-only view of the runtime's data,
      with no copy: `memref.get_global` of a placeholder declaration
      `@pipeopt_input_view_a<a>_m<m>_r<rank> : memref<S x T>` marked
      `pipeopt.input_view = array<i64: a, m>`, wrapped with
      `bufferization.to_tensor restrict` (not `writable`: bufferization
      copies the buffer before any in-place write, so the runtime's data
      is never written). `pipeopt-materialize-input-views` turns it into
      the call `pipeopt_rt_input_view_<T>(a, m, shape)` after buffer
      deallocation (a buffer returned by a call would be freed by it).
      Otherwise (`input-views=false`, the cuda target, or asynchronous
      training, which updates weights within a call): allocates a buffer
      of type `memref<S x T>`, calls `pipeopt_rt_input_<T>(a, m, buf)`
      and wraps the buffer with `bufferization.to_tensor restrict
      writable`. An argument that is shared by all microbatches (see
      `microbatch-args`) is read once per entry point and reused, and so
      is each view.
    * `pipe.recv from p <dir, stage i -> j, microbatch m, value k>`: the same
      with `pipeopt_rt_recv_<T>(p, i, j, m, k, dir == backward, buf)`.
    * `pipe.send %v to p <tag>`: `bufferization.to_buffer %v read_only`,
      cast to `memref<*xT>`, `pipeopt_rt_send_<T>(p, i, j, m, k, dir, buf)`.
    * `pipe.output %v result i microbatch m`: `pipeopt_rt_output_<T>(i, m,
      buf)` on the buffer of `%v`. Its `reduce mean` and `name` go to the
      manifest's output entry (`"reduce": "mean"`, `"name"`): the runtime
      then writes the mean over microbatches (a training step's loss and
      gradients). Every `pipe.output` of one result, in every program, must
      agree on both, names are unique, and a `mean` result must be written
      exactly once for every microbatch over all programs (errors at the
      op).
    * `pipe.forward @f(...) stage s microbatch m`:
      `pipeopt_rt_action_begin(0, s, m)`, `func.call @f(...)`,
      `pipeopt_rt_action_end(0, s, m)`.

    The `i32` status of every runtime call is folded into the first
    nonzero status since the last check; after every action's
    `pipeopt_rt_action_end` (and at the end) a nonzero status is returned
    at once (`cf.cond_br` to a block that returns it), so the remaining
    actions are skipped. Calls between two checks need no check of their
    own: after an error the rank's context is poisoned and every later
    runtime call returns at once without doing anything. (A check after
    every call would make each early exit free every buffer live there: O(calls x
    live buffers) frees, which dominate the LLVM time of large models.)
    The entry point has unstructured control flow that the rest of the CPU
    lowering (`pipeopt-lower-to-llvm`) handles.

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

    Every run ties the module to its manifest (docs/Runtime.md, "Loading
    the model"): `func.func @pipeopt_module_hash() -> i64` returns the
    first 8 bytes of the BLAKE3 hash of the lowered module (generic form)
    and the manifest, which the manifest records as `"module_hash"`; and
    `memref.global "public" constant @pipeopt_manifest` holds the manifest
    JSON itself. pipeopt-run compares both with the manifest file it is
    given and refuses a mismatch. The hash is deterministic (the same input
    and options give the same value).

    `ml_program.global_load_const` becomes `arith.constant` of the global's
    initial value (bufferization has no model for it); `global_load` is left
    to bufferization (`memref.global`).

    The pass runs in three parts (lib/Conversion/PipeToRuntime): checks
    that reject bad input before the IR is changed (Checks.cpp), a
    pattern-based lowering under a ConversionTarget for which the pipe
    dialect is illegal (Lowering.cpp; a pipe op left anywhere in the module
    is reported by the conversion framework at the op: "failed to legalize
    operation"), and the manifest (Manifest.cpp).

    Errors (at the op): all programs of the module must form one pipeline,
    checked by pipe-verify-schedule's structural check (ProgramChecks.h):
    rank and microbatch counts in 1..65536 and equal in every program, one
    program per rank and one for every rank. Transfers, the schedule and
    deadlocks are not checked here (pipe-verify-schedule does; the pipelines
    and pipeopt-compile run it), so that deliberately broken programs can
    test the runtime's own checks. Further errors: a `pipe.backward` without
    a callee (run pipe-materialize-backward), tensors with dynamic shapes or
    element types the runtime does not carry (f32, f64, f16, bf16, i64, i32,
    i8, i1 are supported), an input or output read or written with two
    types, a forward scheduled on two ranks, a function named like an entry
    point or carrying `pipe.rank`, a symbol named `pipeopt_module_hash` or
    `pipeopt_manifest`, `ml_program.global_store` (state cannot
    be split across ranks) and `ml_program.global_load_const` of a global
    without a dense initial value.
    A `microbatch-args` list with an empty entry, a keyword among other
    entries, a repeated index, or an
    index that is not a model argument the programs read (`pipe.input`;
    the valid range is named) is an error at the first program.
  }];
  let options = [
    Option<"manifestPath", "manifest", "std::string", /*default=*/"\"\"",
           "Write the runtime manifest JSON to this file (nothing if empty)">,
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "Code generation target the manifest names: cpu (no \"target\" "
           "key) or cuda (\"target\": \"cuda\": every buffer the program "
           "passes to the runtime is device memory)">,
    Option<"inputViews", "input-views", "bool", /*default=*/"true",
           "Read model inputs (weights, microbatch slices) in place through "
           "pipeopt_rt_input_view_<T> instead of copying them into new "
           "buffers at every call (cpu target only; asynchronous training "
           "always copies). Needs pipeopt-materialize-input-views after "
           "buffer deallocation">,
    ListOption<"microbatchArgs", "microbatch-args", "std::string",
           "Model arguments that differ per microbatch: 'auto' (the "
           "default; also an empty list: arguments "
           "of rank >= 2 whose leading dimension is 1, i.e. the batch of a "
           "batch-1 export, except those a stage reads as a weight: a "
           "contraction's right-hand side or filter, a gather table), "
           "'all', 'none', or a comma-separated list of argument indices "
           "such as '0,3' (pipeopt/Analysis/ArgumentSelection.h). A model "
           "argument that a stage function's "
           "parameter marks 'pipe.microbatched' (a training target) is "
           "per microbatch in every case">,
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

def MaterializeInputViewsPass
    : Pass<"pipeopt-materialize-input-views", "::mlir::ModuleOp"> {
  let summary = "Replace convert-pipe-to-runtime's input placeholders by "
                "pipeopt_rt_input_view_<T> calls (after buffer deallocation).";
  let description = [{
    convert-pipe-to-runtime (option `input-views`) reads a model input as
    `memref.get_global` of a placeholder declaration marked
    `pipeopt.input_view = array<i64: argIndex, microbatch>`. Bufferization
    treats it as a read-only buffer that no one owns, so ownership-based
    deallocation leaves it alone. This pass runs after deallocation: every
    `memref.get_global` of a placeholder becomes

    ```mlir
    %shape = memref.alloca() : memref<R x i64>   // the dimensions, stored
    %v = func.call @pipeopt_rt_input_view_<T>(%arg, %mb, %shape_unranked)
        : (i64, i64, memref<*xi64>) -> memref<*xT>
    %m = memref.cast %v : memref<*xT> to memref<S x T>
    ```

    and the placeholders are erased (they never had storage). The runtime
    returns a contiguous row-major view of its own copy of the input
    (pipeopt_runtime.h); on an error it poisons the rank, so the next
    status check of the entry point returns it.

    Errors (at the placeholder): a `pipeopt.input_view` that is not two
    integers (argument >= 0, microbatch >= 0), a placeholder that is not a
    private declaration of a statically shaped memref with the identity
    layout, or an element type the runtime has no functions for.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect",
  ];
  let statistics = [
    Statistic<"numViews", "num-views", "Input reads turned into view calls">,
  ];
}

//===----------------------------------------------------------------------===//
// Contractions and convolutions as calls of the runtime's kernels (the
// other back-end passes: include/pipeopt/Backend/Passes.td)
//===----------------------------------------------------------------------===//

def ConvertLinalgToRuntimeKernelsPass
    : Pass<"convert-linalg-to-runtime-kernels", "::mlir::ModuleOp"> {
  let summary = "Call the runtime's BLAS kernels for contractions and "
                "convolutions.";
  let description = [{
    On bufferized code (memrefs), replaces every f32/f64 linalg op that is a
    GEMM-shaped contraction by a call of
    `pipeopt_rt_matmul_<T>(lhs, rhs, out, transLhs, transRhs)`, and every
    `linalg.conv_2d_nchw_fchw`, `conv_2d_nhwc_hwcf` and `conv_2d_nhwc_fhwc`
    by `pipeopt_rt_conv2d_<T>(in, filter, out, layout, strides...,
    dilations...)` (runtime/include/pipeopt/runtime/pipeopt_runtime.h,
    "KERNELS": OpenBLAS GEMM, im2col for convolutions).

    A contraction qualifies when `linalg::inferContractionDims` finds at most
    one batch, one M, one N and exactly one K dimension, the body is a
    multiply-accumulate, every operand is indexed by a permutation of its
    dimensions with the batch dimension first, and it is not a batched
    matrix-vector product. That covers `linalg.matmul` and `batch_matmul`
    with any transposed operands (named or through `indexing_maps`),
    `matvec`, `vecmat`, and `linalg.generic` contractions of that shape.
    Everything else (integer, f16 and bf16 contractions, depthwise and
    pooling ops, contractions over several K dimensions) keeps its loops,
    which stay correct. Operands may have any strided layout; the runtime
    packs those BLAS cannot read in place.

    A `conv_2d_nhwc_fhwc` whose filter is a buffer of its own, written only
    by a transpose (a copy-like linalg op) of a function argument from
    [F, C, KH, KW] to [F, KH, KW, C], reads the argument in place instead
    (layout `PIPEOPT_RT_CONV_NHWC_FCHW`), and the transpose, the buffer and
    its deallocs go: that is how TOSA's `conv2d` takes PyTorch's OIHW
    weights, one transpose of every weight per call (12% of ResNet-18's
    time). It is done only when nothing between the transpose and the
    convolution may write to or free the argument (ops of unknown effect,
    such as calls, count as writes; other arguments are distinct buffers),
    the convolution reads the buffer only as its filter and does not write
    a view of the argument, and only for the CPU target.

    Contractions whose static iteration space has fewer than `min-flops`
    floating-point operations (2 x M x N x K) keep their loops too: there a
    library call costs more than it saves.

    With `target=cuda` the same ops (matched by the same rules) become
    calls of `pipeopt_rt_gpu_matmul_<T>` / `pipeopt_rt_gpu_conv2d_<T>`
    instead: the same operands and semantics on device memory, run with
    cuBLAS / cuDNN on the calling rank's compute stream
    (libpipeopt_rt_cuda.so). In both cases every operand must be in the
    default memory space (0): on the CPU that is host memory; a cuda build
    allocates every buffer of the program with `gpu.alloc`, whose memrefs
    are in space 0 too. An unknown `target` is an error at the module.
  }];
  let options = [
    Option<"minFlops", "min-flops", "int64_t", /*default=*/"4096",
           "Smallest static contraction (FLOP) sent to the library">,
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "cpu: pipeopt_rt_matmul / conv2d (host memory, OpenBLAS); cuda: "
           "pipeopt_rt_gpu_matmul / conv2d (device memory, cuBLAS / cuDNN)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect",
  ];
  let statistics = [
    Statistic<"numMatmuls", "num-matmuls", "Contractions sent to the library">,
    Statistic<"numConvs", "num-convs", "Convolutions sent to the library">,
    Statistic<"numFoldedTransposes", "num-folded-transposes",
              "Filter transposes read in place by the convolution kernel">,
  ];
}

#endif // PIPEOPT_CONVERSION_PASSES_TD
