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
// CPU code generation of stage bodies (pipeopt-lower-to-llvm, in flow order)
//===----------------------------------------------------------------------===//

def FuseElementwisePass
    : Pass<"pipeopt-fuse-elementwise", "::mlir::ModuleOp"> {
  let summary = "Fuse chains of element-wise linalg ops on tensors.";
  let description = [{
    Turns the element-wise named ops (`linalg.map`, `linalg.elementwise`,
    `linalg.broadcast`, `linalg.transpose`) and batch-1 `batch_matmul`s into
    `linalg.generic`, drops unit dimensions from the generics (upstream
    fold-unit-extent-dims: TOSA gives every tensor a leading 1, and the
    reshapes it puts between a transposed weight and its matmul then fold
    away), and fuses
    element-wise producers into their consumers with upstream linalg
    element-wise fusion, so that a chain such as bias-add + GELU is one loop
    nest over memory instead of one per op. A producer is fused only into its
    single user, and into a contraction or a convolution only if it is a
    pure transpose (its body yields its input, its input map is a
    permutation): the contraction then reads the untransposed tensor through
    a permuted map, which `convert-linalg-to-runtime-kernels` passes to the
    BLAS kernel as a transposed operand, so the transpose is never
    materialized (BERT transposes every weight matrix before its matmul).
    Any other producer would make the contraction unrecognizable for the
    library. Runs on tensors, before bufferization.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
  let statistics = [
    Statistic<"numGeneralized", "num-generalized",
              "Element-wise named ops turned into linalg.generic">,
  ];
}

def DecomposePadsPass
    : Pass<"pipeopt-decompose-pads", "::mlir::ModuleOp"> {
  let summary = "Split tensor.pad into a fill and an insert_slice.";
  let description = [{
    Rewrites every `tensor.pad` (upstream `linalg::DecomposePadOpPattern`)
    into a `tensor.empty` of the padded shape, a `linalg.fill` with the
    padding value (`tensor.generate` for a padding value computed per
    element) and a `tensor.insert_slice` of the unpadded tensor into it.
    Then, where the unpadded tensor is the result of a linalg op whose init
    is a `tensor.empty` used only there (or a `linalg.fill` of one, as a
    max-pool's), and the fill's operands dominate that op, the fill moves
    before it and the op (or its init's fill) writes into a
    `tensor.extract_slice` of the fill at the insert_slice's position. After
    one-shot bufferization the producer of a convolution's input (TOSA pads
    every `conv2d` and `max_pool2d` input) writes straight into the interior
    of the padded buffer, instead of into a buffer of its own that
    `tensor.pad`'s bufferization copies into the padded one with a strided
    `memref.copy` (an element-by-element `memrefCopy` call: 13% of
    ResNet-18's time before this pass). That is the rewrite upstream
    `eliminate-empty-tensors` does in general, which corrupted the heap on
    a generated training module here. Runs on tensors, before
    bufferization; it folds nothing, so the canonicalizer cannot put the
    pad back together first.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def CopyAliasedResultsPass
    : Pass<"pipeopt-copy-aliased-results", "::mlir::ModuleOp"> {
  let summary = "Give every function result its own tensor before bufferization.";
  let description = [{
    `buffer-results-to-out-params` (which makes stage functions
    destination-passing) crashes on a function that returns one of its
    arguments or the same tensor twice (upstream MLIR 22). Generated
    backward functions do both once canonicalization has folded them (the
    gradient of `x * 1` is the incoming gradient itself; one value is the
    gradient of two inputs). This pass copies such results
    (`linalg.copy` into a fresh `tensor.empty`) in every function with a
    body except the entry points, so each returned buffer is allocated by
    its function. Runs right before `one-shot-bufferize`, after the last
    canonicalization, which would fold the copies away.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ExpandMathPass : Pass<"pipeopt-expand-math", "::mlir::ModuleOp"> {
  let summary = "Lower math functions that have no LLVM intrinsic.";
  let description = [{
    `math.erf` and `math.erfc` (GELU in BERT and torch-mlir exports) have no
    LLVM lowering. On f32 they become upstream MLIR's polynomial
    approximations (vectorizable, absolute error below 1e-6 on erf); on
    other float types they become calls of the C library's `erf` / `erfc`
    (`-lm` is linked into every model). With `approximate-all`, every f32
    math function upstream approximates (exp, log, tanh, ...) is
    approximated too, instead of calling libm through LLVM intrinsics.
  }];
  let options = [
    Option<"approximateAll", "approximate-all", "bool", /*default=*/"false",
           "Also approximate exp, log, tanh, ... on f32 (faster, "
           "vectorizable, a few ulp less accurate than libm)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::math::MathDialect", "::mlir::vector::VectorDialect",
  ];
}

def CheckGatherIndicesPass
    : Pass<"pipeopt-check-gather-indices", "::mlir::ModuleOp"> {
  let summary = "Guard data-dependent tensor.extract indices at run time.";
  let description = [{
    A gather (an embedding lookup from torch-mlir, a lowered `tosa.gather`)
    is a `tensor.extract` whose index was computed from data, i.e. comes from
    `arith.index_cast` / `arith.index_castui` of an integer. Each such index
    is compared with the extent of the dimension it indexes; when it is
    negative or too large, `pipeopt_rt_index_error(index, size, dim)` is
    called (the run fails with an error naming rank, stage, microbatch and
    the bad index) and a clamped index is read instead, so that no memory
    outside the tensor is touched. Indices derived only from loop indices
    are in range by construction and are not checked.

    With `target=cuda` the gather runs inside a GPU kernel, which cannot
    call the host runtime: the index is clamped the same way, but not
    reported (a bad index reads the nearest element of the dimension
    instead of failing the run). An unknown `target` is an error at the
    module.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "cpu: report and clamp bad indices; cuda: clamp only (device "
           "code has no runtime to report to)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
  ];
  let statistics = [
    Statistic<"numChecks", "num-checks", "Gather indices guarded">,
  ];
}

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

//===----------------------------------------------------------------------===//
// GPU code generation of stage bodies (pipeopt-lower-to-cuda, in flow order)
//===----------------------------------------------------------------------===//

def BuffersToGpuPass : Pass<"pipeopt-buffers-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Put every buffer of a --target=cuda build in device memory.";
  let description = [{
    Runs on bufferized code after buffer deallocation and
    `convert-linalg-to-runtime-kernels{target=cuda}`, before the linalg ops
    are lowered to parallel loops and GPU kernels (pipeopt-lower-to-cuda).
    It implements the memory model of a cuda build: every memref the
    generated code allocates is device memory.

    * `memref.alloc` -> `gpu.alloc` (same type, dynamic sizes and symbols;
      the alignment is dropped: device allocations are 256-byte aligned);
      `memref.dealloc` -> `gpu.dealloc`.
    * `memref.alloca` directly in an allocation scope (a function body, a
      `memref.alloca_scope`) -> `gpu.alloc` plus a `gpu.dealloc` before the
      scope's terminator. An alloca nested deeper is an error at the op.
    * `memref.copy` between identity-layout memrefs of one shape ->
      `gpu.memcpy` (one contiguous device-to-device copy); any other copy
      (strided views) -> `linalg.copy`, which becomes a copy kernel.
    * `memref.get_global` (the constants of the model: bufferized
      `arith.constant` tensors, which stay host globals) -> one device copy
      per global and function, made at the top of the function
      (`gpu.alloc` + `gpu.memcpy` from the host global) and freed before
      every `func.return`. A global of dynamic shape or non-identity
      layout is an error at the op.
    * A linalg op on buffers without a parallel loop dimension (a reduction
      to a scalar, a 0-d op) outside any `scf.parallel` is wrapped in a
      one-iteration `scf.parallel`, so that it becomes a one-thread kernel
      instead of a host loop over device memory.
    * An outermost host `scf.for` nest without results whose body is only
      scalar code over buffers (scf loops and branches, arith / math /
      affine / index ops, `memref.load` / `store`): the gradient of a
      gather, a scatter-add whose iterations may update one element, is
      wrapped the same way, so it runs as a one-thread kernel that keeps the
      order of its iterations. A loop that holds anything else (a linalg
      op, a call) stays on the host.

    Ops inside `gpu.module`s and nested modules are left alone.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
  ];
  let statistics = [
    Statistic<"numAllocs", "num-allocs", "Allocations moved to the device">,
    Statistic<"numMemcpys", "num-memcpys", "Copies made gpu.memcpy">,
    Statistic<"numCopyKernels", "num-copy-kernels",
              "Strided copies made linalg.copy kernels">,
    Statistic<"numSerialKernels", "num-serial-kernels",
              "Linalg ops without parallel dimensions made one-thread "
              "kernels">,
  ];
}

def CheckGpuHostPass : Pass<"pipeopt-check-gpu-host", "::mlir::ModuleOp"> {
  let summary = "Reject host code of a --target=cuda build that the host "
                "cannot run.";
  let description = [{
    Runs after `gpu-kernel-outlining` in pipeopt-lower-to-cuda. In a cuda
    build every buffer is device memory (pipeopt-buffers-to-gpu), so the
    host side of the program (entry points, stage functions outside their
    kernels) may only allocate and free (`gpu.alloc` / `gpu.dealloc`),
    copy (`gpu.memcpy`), launch kernels (`gpu.launch_func`), call the
    functions of the model and the runtime ABI (`pipeopt_rt_*`, including
    the device kernels `pipeopt_rt_gpu_*`), and compute on scalars. The
    `gpu.*` ops become the `mgpu*` calls of libpipeopt_rt_cuda.so.

    Errors, at the op, each saying that --target=cuda cannot run it on the
    host: a `memref.load` / `store` / atomic or a `vector` load, store or
    transfer on a memref that is not a host global (the typical case is
    data-dependent host control flow: an `scf.if` or `scf.while` whose
    condition is read from a tensor); a `func.call` of an external function
    that is not in the runtime ABI (e.g. a libm function outside a kernel);
    a `memref.alloc` / `alloca` / `copy` / `dealloc` or `gpu.launch` left
    (pipeopt-buffers-to-gpu or gpu-kernel-outlining did not run). Every
    such op is reported, then the pass fails.
  }];
}

def MergeGpuModulesPass
    : Pass<"pipeopt-merge-gpu-modules", "::mlir::ModuleOp"> {
  let summary = "Move every kernel of a module into one gpu.module.";
  let description = [{
    Runs after `gpu-kernel-outlining` in pipeopt-lower-to-cuda, before
    `nvvm-attach-target`. The outliner makes one `gpu.module` per kernel,
    and `gpu-module-to-binary` runs the toolkit's `ptxas` and `fatbinary`
    once per module: for a real model, hundreds of processes (1,262 for the
    BERT-base training step, 50 s of its 100 s compile). This pass creates
    one `gpu.module` (named by `module-name`, renamed if that symbol is
    taken) where the first kernel module was, moves every symbol of every
    top-level `gpu.module` into it (a kernel whose name is taken is renamed)
    and points each `gpu.launch_func` at its kernel's new place. The build
    then holds one fatbin, `<module-name>_binary`, which the runtime loads
    once per device.

    A `gpu.module` that already has targets or an offloading handler is an
    error at that module (it was serialized for its own target). With fewer
    than two kernel modules the pass does nothing.
  }];
  let options = [
    Option<"moduleName", "module-name", "std::string",
           /*default=*/"\"pipeopt_kernels\"",
           "Name of the merged gpu.module">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
  let statistics = [
    Statistic<"numMerged", "num-merged", "Kernel modules merged">,
  ];
}

#endif // PIPEOPT_CONVERSION_PASSES_TD
