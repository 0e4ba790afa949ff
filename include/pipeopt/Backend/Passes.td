//===- Passes.td - pipeopt back-end passes -----------------*- tablegen -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
//
// The back end's own passes, which pipeopt-lower-to-llvm and
// pipeopt-lower-to-cuda (include/pipeopt/Pipelines/Pipelines.h) run between
// convert-pipe-to-runtime and LLVM: rewrites of linalg and bufferized code
// (fusion, pads, aliasing, math expansion), checks (gather indices, host
// code of GPU builds) and GPU module plumbing. None of them converts between
// dialects; the conversions are in include/pipeopt/Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_BACKEND_PASSES_TD
#define PIPEOPT_BACKEND_PASSES_TD

include "mlir/Pass/PassBase.td"

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

def FreeBuffersEarlyPass
    : Pass<"pipeopt-free-buffers-early", "::mlir::ModuleOp"> {
  let summary = "Free each temporary buffer right after its last use.";
  let description = [{
    Upstream's ownership-based buffer deallocation frees a buffer at the
    end of the block that allocated it. In a function without control flow
    (a stage's training step) every temporary then lives until the
    function returns, and the step's peak memory is the sum of all of its
    buffers (GPT-2 8 x 512: 1.1 GB of activations, gradients and scratch
    at once, where the live set is a fraction of it).

    This pass moves each `memref.dealloc` of a buffer that a `memref.alloc`
    of the same block created to just after the buffer's last use in that
    block. A use inside a nested region (a loop) counts at the op of the
    block that holds it. Every memref result of an op that uses the buffer
    or an alias (a view, a cast, a loop that yields it, a call), and every
    memref block argument of its regions, is taken as an alias and its uses
    count too. A dealloc stays where it is when a use cannot be followed:
    the buffer or an alias reaches a terminator of the block (returned,
    passed to a successor block), is freed elsewhere, is stored as a value
    (into a memref of memrefs), becomes a pointer
    (`memref.extract_aligned_pointer_as_index`, LLVM ops) or a result that
    is neither a memref nor a number (`bufferization.to_tensor`, an
    unrealized cast to a descriptor struct), or is used outside the block.
    Runs after buffer deallocation and before the conversion to LLVM. A
    dealloc inside a nested block (a loop body) moves within that block
    the same way; deallocs of buffers allocated in another block stay.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def OutlineLoopNestsPass
    : Pass<"pipeopt-outline-loop-nests", "::mlir::ModuleOp"> {
  let summary = "Compile each distinct linalg loop nest once, as a function.";
  let description = [{
    Moves every linalg op on buffers that is left for
    `convert-linalg-to-loops` (what `convert-linalg-to-runtime-kernels` did
    not turn into a library call) out of its function into a private
    function of its own, `@pipeopt_loop_nest_<N>`, and calls it there. Two
    ops that would give the same function (the same op, attributes, body,
    constants and operand types, printed without locations) share one: the
    identical blocks of a transformer (and their generated backward code)
    then call the same loop nests with different buffers, so LLVM
    optimizes and generates code for each distinct loop nest once and a
    deeper model adds calls, not code. Before this pass a training step was
    one function whose size grew with the number of layers, and LLVM's time
    with it (GPT-2 8 x 512: 67,748 lines of LLVM dialect in one function).

    The function's arguments are the op's operands followed by the values
    its regions use from above, except constants, which are cloned into it
    (so the scale of an attention block is part of what two loop nests must
    share). The functions are `no_inline` with internal linkage: inlining
    them back would undo the sharing, and the call costs nothing next to a
    loop nest. Buffers passed to them may alias (an in-place element-wise
    op writes its input), so no `noalias` is claimed; LLVM's vectorizer
    checks overlap at run time where it needs to. Ops in functions without
    a body, and ops already in an outlined function, are left alone. Runs
    after bufferization, before `convert-linalg-to-loops`.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect"];
  let statistics = [
    Statistic<"numOutlined", "num-outlined", "Loop nests outlined">,
    Statistic<"numFunctions", "num-functions",
              "Distinct loop-nest functions created">,
  ];
}

def OutlineRepeatsPass : Pass<"pipeopt-outline-repeats", "::mlir::ModuleOp"> {
  let summary = "Compile each distinct repeated op sequence (a layer) once.";
  let description = [{
    Finds, in the body of every function with one block, the longest run of
    at least two consecutive repetitions of a sequence of `min-ops` or more
    ops (the layers of a transformer: its forward blocks, then the
    backward blocks that differentiation generated), and moves each
    repetition into a private function, `@pipeopt_repeat_<N>`, called where
    the repetition was; then looks again in what is left. Ops repeat when
    they print the same without SSA names (op, attributes, callee, types,
    regions). Two repetitions share one function where their functions
    print the same (the same data flow): LLVM then optimizes and generates
    code for a layer's glue code (buffer allocation, views, the calls of
    the loop nests and kernels) once, and a deeper model adds calls, not
    code. With `pipeopt-outline-loop-nests` this makes the time of LLVM's
    optimization and code generation nearly independent of depth.

    A repetition's arguments are the values it uses from outside, in the
    order of their first use, except constants, which are cloned into the
    function; its results are the values it defines that are used after
    it, in the order of their definition. Buffers it allocates and returns,
    and buffers it frees that were allocated before it, keep their meaning:
    buffer deallocation has already run. A repetition that contains an op
    that allocates on the function's stack (`memref.alloca`, `llvm.alloca`,
    any op with an allocation effect on the automatic allocation scope:
    its buffer would not outlive the call) is left in place. Two
    repetitions share a function only where their functions print the same
    with every attribute element and region printed, whatever the command
    line's printing flags. `min-ops` below 2 is an error (a one-op
    repetition would become one call, found again). The functions are `noinline` with internal linkage (inlining
    would undo the sharing). Runs after `pipeopt-free-buffers-early` and
    `pipeopt-outline-loop-nests`, before the conversion to LLVM; functions
    this pass made are left alone.
  }];
  let options = [
    Option<"minOps", "min-ops", "unsigned", /*default=*/"16",
           "The fewest ops a repeated sequence has, at least 2 (shorter "
           "ones stay)">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect"];
  let statistics = [
    Statistic<"numOutlined", "num-outlined", "Repetitions outlined">,
    Statistic<"numFunctions", "num-functions",
              "Distinct repetition functions created">,
  ];
}

def ExpandMathPass : Pass<"pipeopt-expand-math", "::mlir::ModuleOp"> {
  let summary = "Lower math functions that have no LLVM intrinsic.";
  let description = [{
    `math.erf` and `math.erfc` (GELU in BERT and torch-mlir exports) have no
    LLVM lowering. On f32 they become upstream MLIR's polynomial
    approximations (vectorizable, absolute error below 1e-6 on erf); on
    other float types they become calls of the C library's `erf` / `erfc`
    (`-lm` is linked into every model). f32 `math.tanh` (GPT-2's GELU) is
    always approximated too: LLVM's loop vectorizer knows no vector `tanhf`
    to call, so libm's would be a scalar call per element (a fifth of a
    small GPT-2's training step); upstream's rational approximation is
    within 2.9e-7 relative of tanh on [-5, 5] (libm's `tanhf`: 1.7e-7).
    With `approximate-all`, every f32 math function upstream approximates
    (exp, log, ...) is approximated too, instead of calling libm through
    LLVM intrinsics.
  }];
  let options = [
    Option<"approximateAll", "approximate-all", "bool", /*default=*/"false",
           "Also approximate exp, log, ... on f32 (faster, "
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

#endif // PIPEOPT_BACKEND_PASSES_TD
