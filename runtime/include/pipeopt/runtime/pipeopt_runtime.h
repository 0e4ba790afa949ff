/*===- pipeopt_runtime.h - C ABI called by compiled per-rank programs -----===*\
|*                                                                            *|
|* The MLIR-free pipeopt runtime (C++ namespace pipeopt::rt, C prefix *|
|* pipeopt_rt_). This header is plain C99 and C++ compatible; it is what the *|
|* compiler's convert-pipe-to-runtime lowering targets. The function list *|
|* itself lives in RuntimeFunctions.def (single source of truth). *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
/*
 * OVERVIEW
 * ========
 * A compiled model is one shared object `<model>.so` with one entry point per
 * rank,
 *
 *     int32_t pipeopt_rank_<k>(void);      // k = 0 .. num_ranks-1
 *
 * plus a JSON manifest `<model>.manifest.json` next to it (format in
 * docs/Runtime.md). A launcher (pipeopt-run) loads both, creates one
 * communicator per rank, installs the rank's *context* as the calling thread's
 * current context, and calls the rank's entry point once per iteration of the
 * schedule. The entry point returns 0 on success, nonzero on error.
 *
 * Inside an entry point the generated code calls the functions below. There is
 * no context pointer in the ABI: the rank's context is thread-local (loopback
 * runs ranks as threads of one process; MPI and NCCL run one rank per process).
 *
 * CALLING CONVENTION
 * ==================
 * The typed functions are declared in MLIR with `llvm.emit_c_interface`, so
 * generated code calls `_mlir_ciface_<name>_<dtype>` with each memref argument
 * passed as a pointer to an *unranked* memref descriptor:
 *
 *     struct { int64_t rank; void *descriptor; }
 *
 * where `descriptor` points at the ranked descriptor
 *
 *     struct { T *allocated; T *aligned; int64_t offset;
 *              int64_t sizes[rank]; int64_t strides[rank]; }
 *
 * Element (i0, ..., i{r-1}) lives at aligned + offset + sum_k i_k*strides[k]
 * (units: elements). Strides are honoured: non-contiguous buffers are packed
 * and unpacked element by element. At most PIPEOPT_RT_MAX_RANK dimensions.
 *
 * Element types (suffix: C storage type): f32: float, f64: double,
 * f16: uint16_t (IEEE half bits), bf16: uint16_t (bfloat16 bits),
 * i64: int64_t, i32: int32_t, i8: int8_t, i1: int8_t (one byte, 0 or 1).
 *
 * ERRORS
 * ======
 * Every function returns 0 on success and nonzero on error. The first error
 * is recorded in the rank's context with a message naming the rank, stage and
 * microbatch (e.g. "rank 1: recv for stage 1 microbatch 2 value 0 expected
 * f32[4x8] (128 bytes) but rank 0 sent f32[4x16] (256 bytes)"); from then on
 * the context is *poisoned* and every later call returns nonzero immediately.
 * Generated code is expected to return early (propagating the nonzero value)
 * when any call fails. Calling any function on a thread with no current
 * context is an error too (the message goes to stderr). No C++ exception ever
 * crosses this ABI.
 *
 * Communication never hangs forever: a recv waits at most the configured
 * timeout (pipeopt-run --timeout-s, default 60 s) and a peer that exits makes
 * a waiting recv fail (immediately on loopback, after the timeout elsewhere).
 */
#ifndef PIPEOPT_RUNTIME_PIPEOPT_RUNTIME_H
#define PIPEOPT_RUNTIME_PIPEOPT_RUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define PIPEOPT_RT_EXPORT __declspec(dllexport)
#else
#define PIPEOPT_RT_EXPORT __attribute__((visibility("default")))
#endif

/** Maximum memref rank (number of dimensions) a message can carry. */
#define PIPEOPT_RT_MAX_RANK 8

/** Version of this ABI; bumped on any incompatible change. */
#define PIPEOPT_RT_ABI_VERSION 1

/** Element type codes (stable; also used on the wire and in manifests). */
enum pipeopt_rt_dtype {
  PIPEOPT_RT_DTYPE_F32 = 1,
  PIPEOPT_RT_DTYPE_F64 = 2,
  PIPEOPT_RT_DTYPE_F16 = 3,
  PIPEOPT_RT_DTYPE_BF16 = 4,
  PIPEOPT_RT_DTYPE_I64 = 5,
  PIPEOPT_RT_DTYPE_I32 = 6,
  PIPEOPT_RT_DTYPE_I8 = 7,
  PIPEOPT_RT_DTYPE_I1 = 8
};

/** Action kinds for pipeopt_rt_action_begin/end. */
enum pipeopt_rt_action_kind {
  PIPEOPT_RT_ACTION_F = 0, /**< forward */
  PIPEOPT_RT_ACTION_B = 1, /**< backward, input gradient only */
  PIPEOPT_RT_ACTION_W = 2, /**< backward, weight gradient only */
  PIPEOPT_RT_ACTION_BW = 3 /**< full backward (B + W) */
};

/** Layouts of pipeopt_rt_conv2d_<T> (as the linalg.conv_2d_* op names). */
enum pipeopt_rt_conv_layout {
  PIPEOPT_RT_CONV_NCHW_FCHW = 0, /**< in [N,C,H,W], filter [F,C,KH,KW] */
  PIPEOPT_RT_CONV_NHWC_HWCF = 1, /**< in [N,H,W,C], filter [KH,KW,C,F] */
  PIPEOPT_RT_CONV_NHWC_FHWC = 2, /**< in [N,H,W,C], filter [F,KH,KW,C] */
  /** in [N,H,W,C], filter [F,C,KH,KW]: no linalg op has it; it is what
      convert-linalg-to-runtime-kernels calls for a conv_2d_nhwc_fhwc whose
      filter is a transpose of an FCHW tensor (TOSA's conv2d of PyTorch
      weights), so that the transpose is not materialized per call. */
  PIPEOPT_RT_CONV_NHWC_FCHW = 3
};

/** Unranked memref descriptor as passed by `llvm.emit_c_interface`. */
typedef struct pipeopt_rt_unranked_memref {
  int64_t rank;     /**< number of dimensions of *descriptor */
  void *descriptor; /**< points at a pipeopt_rt_memref_head + sizes/strides */
} pipeopt_rt_unranked_memref;

/**
 * Leading part of a ranked memref descriptor. It is immediately followed in
 * memory by `int64_t sizes[rank]` and then `int64_t strides[rank]` (elements).
 */
typedef struct pipeopt_rt_memref_head {
  void *allocated; /**< pointer returned by the allocator (unused here) */
  void *aligned;   /**< base of the data */
  int64_t offset;  /**< offset of element 0 from aligned, in elements */
} pipeopt_rt_memref_head;

/* Parameter kinds of RuntimeFunctions.def -> C types. */
#define PIPEOPT_RT_KIND_I32 int32_t
#define PIPEOPT_RT_KIND_I64 int64_t
#define PIPEOPT_RT_KIND_MemRef pipeopt_rt_unranked_memref *
#define PIPEOPT_RT_KIND_Dims pipeopt_rt_unranked_memref *

#define PIPEOPT_RT_CAT_(A, B) A##B
#define PIPEOPT_RT_CAT(A, B) PIPEOPT_RT_CAT_(A, B)
#define PIPEOPT_RT_CALL(M, ...) M(__VA_ARGS__)
#define PIPEOPT_RT_UNPACK(...) __VA_ARGS__
#define PIPEOPT_RT_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, N, ...) N
#define PIPEOPT_RT_NARGS(...)                                                  \
  PIPEOPT_RT_NARGS_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define PIPEOPT_RT_P1(a) PIPEOPT_RT_KIND_##a
#define PIPEOPT_RT_P2(a, b) PIPEOPT_RT_P1(a), PIPEOPT_RT_KIND_##b
#define PIPEOPT_RT_P3(a, b, c) PIPEOPT_RT_P2(a, b), PIPEOPT_RT_KIND_##c
#define PIPEOPT_RT_P4(a, b, c, d) PIPEOPT_RT_P3(a, b, c), PIPEOPT_RT_KIND_##d
#define PIPEOPT_RT_P5(a, b, c, d, e)                                           \
  PIPEOPT_RT_P4(a, b, c, d), PIPEOPT_RT_KIND_##e
#define PIPEOPT_RT_P6(a, b, c, d, e, f)                                        \
  PIPEOPT_RT_P5(a, b, c, d, e), PIPEOPT_RT_KIND_##f
#define PIPEOPT_RT_P7(a, b, c, d, e, f, g)                                     \
  PIPEOPT_RT_P6(a, b, c, d, e, f), PIPEOPT_RT_KIND_##g
#define PIPEOPT_RT_P8(a, b, c, d, e, f, g, h)                                  \
  PIPEOPT_RT_P7(a, b, c, d, e, f, g), PIPEOPT_RT_KIND_##h
/** Maps a parenthesised kind list (I64, MemRef) to a C parameter list. */
#define PIPEOPT_RT_PARAMS(...)                                                 \
  (PIPEOPT_RT_CAT(PIPEOPT_RT_P, PIPEOPT_RT_NARGS(__VA_ARGS__))(__VA_ARGS__))

/* Declarations generated from RuntimeFunctions.def. */
#define PIPEOPT_RT_DECL_TYPED2_(Suffix, Name, Ret, Params)                     \
  PIPEOPT_RT_EXPORT PIPEOPT_RT_KIND_##Ret _mlir_ciface_##Name##_##Suffix       \
      PIPEOPT_RT_PARAMS Params;
#define PIPEOPT_RT_DECL_TYPED_(Suffix, CType, DTypeEnum, Bytes, Ctx)           \
  PIPEOPT_RT_CALL(PIPEOPT_RT_DECL_TYPED2_, Suffix, PIPEOPT_RT_UNPACK Ctx)
#define PIPEOPT_RT_TYPED_FN(Name, Ret, Params)                                 \
  PIPEOPT_RT_DTYPE_LIST(PIPEOPT_RT_DECL_TYPED_, (Name, Ret, Params))
#define PIPEOPT_RT_DECL_FLOAT_(Suffix, CType, Ctx)                             \
  PIPEOPT_RT_CALL(PIPEOPT_RT_DECL_TYPED2_, Suffix, PIPEOPT_RT_UNPACK Ctx)
#define PIPEOPT_RT_FLOAT_FN(Name, Ret, Params)                                 \
  PIPEOPT_RT_FLOAT_DTYPE_LIST(PIPEOPT_RT_DECL_FLOAT_, (Name, Ret, Params))
#define PIPEOPT_RT_FN(Name, Ret, Params)                                       \
  PIPEOPT_RT_EXPORT PIPEOPT_RT_KIND_##Ret Name PIPEOPT_RT_PARAMS Params;       \
  PIPEOPT_RT_EXPORT PIPEOPT_RT_KIND_##Ret _mlir_ciface_##Name                  \
      PIPEOPT_RT_PARAMS Params;
/* A view function's C form takes the result descriptor first. */
#define PIPEOPT_RT_VIEW_PARAMS(...)                                            \
  (pipeopt_rt_unranked_memref * result,                                        \
   PIPEOPT_RT_CAT(PIPEOPT_RT_P, PIPEOPT_RT_NARGS(__VA_ARGS__))(__VA_ARGS__))
#define PIPEOPT_RT_DECL_VIEW2_(Suffix, Name, Params)                           \
  PIPEOPT_RT_EXPORT void _mlir_ciface_##Name##_##Suffix PIPEOPT_RT_VIEW_PARAMS \
      Params;
#define PIPEOPT_RT_DECL_VIEW_(Suffix, CType, DTypeEnum, Bytes, Ctx)            \
  PIPEOPT_RT_CALL(PIPEOPT_RT_DECL_VIEW2_, Suffix, PIPEOPT_RT_UNPACK Ctx)
#define PIPEOPT_RT_VIEW_FN(Name, Params)                                       \
  PIPEOPT_RT_DTYPE_LIST(PIPEOPT_RT_DECL_VIEW_, (Name, Params))
#include "pipeopt/runtime/RuntimeFunctions.def"

/*
 * What the declarations above are, per element type T (suffix shown as <T>):
 *
 * int32_t _mlir_ciface_pipeopt_rt_send_<T>(int64_t peerRank,
 *     int64_t srcStage, int64_t dstStage, int64_t microbatch,
 *     int64_t valueIndex, int64_t backward, pipeopt_rt_unranked_memref *buf);
 *   Sends the contents of buf to rank peerRank, tagged with its metadata
 *   (dtype, shape, byte size, this rank, srcStage -> dstStage, microbatch,
 *   valueIndex = which value of the stage boundary, backward = 0 for an
 *   activation, 1 for a gradient). Loopback and MPI sends are eager (buffered;
 *   they return before the matching recv); NCCL sends complete when the peer
 *   receives. buf may be reused as soon as the call returns.
 *
 * int32_t _mlir_ciface_pipeopt_rt_recv_<T>(same arguments,
 *     pipeopt_rt_unranked_memref *buf);
 *   Receives the next message from peerRank into buf, which the caller
 *   preallocated with the expected shape. The arriving metadata must match
 *   exactly (dtype, rank, shape, bytes, stages, microbatch, valueIndex,
 *   direction); messages from one peer arrive in send order. Errors name the
 *   rank, stage (dstStage) and microbatch and show both sides.
 *
 * int32_t _mlir_ciface_pipeopt_rt_input_<T>(int64_t argIndex,
 *     int64_t microbatch, pipeopt_rt_unranked_memref *buf);
 *   Fills buf with model input argIndex. Inputs marked "microbatched" in the
 *   manifest give microbatch `microbatch`'s slice (shape = the manifest shape);
 *   other inputs are shared by all microbatches: their data does not depend
 *   on `microbatch`, but within one call of the entry point every read of a
 *   shared input must pass the same `microbatch` (the compiler reads it once,
 *   at its first use). Reads for two microbatches are an error: the program
 *   takes one slice per microbatch, so the manifest's flag is wrong. dtype
 *   and shape are checked against the manifest.
 *
 * void _mlir_ciface_pipeopt_rt_input_view_<T>(
 *     pipeopt_rt_unranked_memref *result, int64_t argIndex,
 *     int64_t microbatch, pipeopt_rt_unranked_memref *shape);
 *   The same data as pipeopt_rt_input_<T> (same arguments, same checks;
 *   `shape` is a rank-1 i64 memref holding the shape the program reads), but
 *   without a copy: *result becomes a contiguous row-major view of the
 *   runtime's own storage (the loaded input, its microbatch slice, or the
 *   rank's current copy of a training parameter). The descriptor is
 *   malloc'ed; the caller copies and frees it (MLIR's convention for
 *   unranked memref results). The data stays valid and unchanged until the
 *   entry point returns (an optimizer updates parameters only after the
 *   call); the program must not write to it: convert-pipe-to-runtime marks
 *   the tensor read-only, so bufferization copies before writing in place.
 *   It returns no status: on an error the rank's context is poisoned (the
 *   next call that returns a status fails with the message) and the view
 *   shows zeros of `shape`. Host memory only: --target=cuda builds, and
 *   asynchronous training (which rereads weights within a call), use
 *   pipeopt_rt_input_<T>.
 *
 * int32_t _mlir_ciface_pipeopt_rt_output_<T>(int64_t resultIndex,
 *     int64_t microbatch, pipeopt_rt_unranked_memref *buf);
 *   Copies model output resultIndex out of buf. Microbatched outputs (the
 *   default) are stored per microbatch and written stacked [M, ...shape];
 *   outputs with "microbatched": false are stored once: all writes of one
 *   call must pass the same `microbatch`; writes for two microbatches are an
 *   error (the program writes one value per microbatch, so the manifest's
 *   flag is wrong). dtype and shape are checked against the manifest.
 *
 * int32_t pipeopt_rt_action_begin(int64_t kind, int64_t stage,
 *     int64_t microbatch);
 * int32_t pipeopt_rt_action_end(int64_t kind, int64_t stage,
 *     int64_t microbatch);
 *   Bracket one schedule action (kind: pipeopt_rt_action_kind) for the
 *   measured Chrome trace and the per-stage profile. Nesting is not allowed;
 *   an end that does not match the open begin is an error. When the
 *   manifest lists "actions", the begins of one call must be exactly that
 *   rank's list, in order; when it has "stage_rank", a forward action must
 *   run on a rank that it gives the stage.
 *
 * TRAINING BUILDS (manifest "parameters"; docs/Runtime.md)
 *
 * int32_t _mlir_ciface_pipeopt_rt_gradient_<T>(int64_t argIndex,
 *     int64_t stage, int64_t microbatch, pipeopt_rt_unranked_memref *buf);
 *   Adds buf, this (stage, microbatch)'s contribution to the weight
 *   gradient of parameter argIndex (a model input listed in the manifest's
 *   "parameters"), to the rank's accumulator of that parameter, in double.
 *   Several calls for the same (argIndex, microbatch) add up (a weight that
 *   two stages read, e.g. a tied embedding). After the entry point returns
 *   (one call = one training step), the ranks in the parameter's "ranks"
 *   sum their accumulators in ascending rank order, divide by M and apply
 *   the optimizer to their copies; every rank of the list must have
 *   reported at least one microbatch, and together they must have reported
 *   all M. Errors: argIndex is not a parameter; this rank is not in its
 *   "ranks"; an integer or i1 T; a dtype or shape other than the manifest
 *   input's; a microbatch outside [0, M). Reading a parameter with
 *   pipeopt_rt_input_<T> gives the rank's current copy (the value before
 *   this step's update); a rank not in its "ranks" may not read it.
 *
 * int32_t pipeopt_rt_stash(int64_t stage, int64_t microbatch, int64_t bytes);
 *   Sets the activation bytes this rank holds for (stage, microbatch) for
 *   later backward actions to `bytes` (called after each F with what the
 *   backward reads, after a split B with what W still needs, and with 0
 *   after W or a full backward). The runtime keeps the rank's total and its
 *   peak over the run (pipeopt-run prints it, and the profile has
 *   "peak_stash_bytes_per_rank"). Negative bytes, or a stage or microbatch
 *   out of range, is an error.
 */

/*
 * KERNELS
 * =======
 * Library kernels that compiled stage bodies call instead of loop nests
 * (pass convert-linalg-to-runtime-kernels), for f32 and f64 (<T>). They are
 * pure computations: they need no rank context, but when the calling thread
 * has one, an error is recorded in it (naming the open action's stage and
 * microbatch) and poisons it, so the next communication call of the program
 * fails and the run stops with that message. Generated code ignores their
 * return value for that reason.
 *
 * int32_t _mlir_ciface_pipeopt_rt_matmul_<T>(pipeopt_rt_unranked_memref *lhs,
 *     pipeopt_rt_unranked_memref *rhs, pipeopt_rt_unranked_memref *out,
 *     int64_t transLhs, int64_t transRhs);
 *   out += op(lhs) x op(rhs), where op transposes the last two dimensions of
 *   a matrix operand when its flag is nonzero. Ranks: out [b, m, n] from
 *   [b, m, k] x [b, k, n]; out [m, n] from [m, k] x [k, n]; out [m] from
 *   [m, k] x [k] (matvec) or [k] x [k, n] (vecmat). Any strides: operands
 *   with a unit stride in one of their last two dimensions are used in place,
 *   others are packed first. Computed by CBLAS ?gemm (OpenBLAS) with beta = 1.
 *
 * int32_t _mlir_ciface_pipeopt_rt_conv2d_<T>(pipeopt_rt_unranked_memref *in,
 *     pipeopt_rt_unranked_memref *filter, pipeopt_rt_unranked_memref *out,
 *     int64_t layout, int64_t strideH, int64_t strideW, int64_t dilationH,
 *     int64_t dilationW);
 *   out += the unpadded 2-D convolution (cross-correlation, as
 *   linalg.conv_2d_*) of in with filter, layout one of
 *   pipeopt_rt_conv_layout; out[n, oy, ox, f] (NHWC) sums
 *   in[n, oy*strideH + i*dilationH, ox*strideW + j*dilationW, c] *
 *   filter[i, j, c, f]. Computed as im2col + GEMM; 1x1 stride-1 convolutions
 *   skip the im2col copy. For NHWC_FCHW the CPU kernel orders each im2col
 *   row as the filter's (c, i, j), so the filter is read in place as the
 *   matrix [F, C*KH*KW]; cuDNN takes it as a strided KCRS tensor.
 *
 * int32_t pipeopt_rt_index_error(int64_t index, int64_t size, int64_t dim);
 *   Records "index <index> is out of range [0, <size>) in dimension <dim>":
 *   generated gather code calls it when a data-dependent index (an embedding
 *   token id, a tosa.gather index) is out of range, then reads a clamped
 *   index so that nothing outside the tensor is read.
 */

#undef PIPEOPT_RT_DECL_TYPED2_
#undef PIPEOPT_RT_DECL_TYPED_
#undef PIPEOPT_RT_DECL_VIEW2_
#undef PIPEOPT_RT_DECL_VIEW_
#undef PIPEOPT_RT_VIEW_PARAMS
#undef PIPEOPT_RT_DECL_FLOAT_
#undef PIPEOPT_RT_FLOAT_FN
#undef PIPEOPT_RT_TYPED_FN
#undef PIPEOPT_RT_FN

/**
 * Returns the first error message recorded in the calling thread's rank
 * context, or NULL when there is no context or no error. The pointer stays
 * valid until the context is destroyed. For launchers and tests.
 */
PIPEOPT_RT_EXPORT const char *pipeopt_rt_last_error(void);

/** Returns PIPEOPT_RT_ABI_VERSION of the loaded runtime. */
PIPEOPT_RT_EXPORT int32_t pipeopt_rt_abi_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PIPEOPT_RUNTIME_PIPEOPT_RUNTIME_H */
