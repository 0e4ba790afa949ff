// RUN: pipeopt %s -split-input-file -convert-pipe-to-runtime=input-views=false -verify-diagnostics

func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %y = pipe.forward @s0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'pipe.backward' op has no callee: run pipe-materialize-backward first (it generates the functions backward actions call; pipeopt-compile --train does)}}
  pipe.backward full stage 0 microbatch 0
}

// -----

pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
  // expected-error @+1 {{'pipe.input' op cannot be executed: element type 'ui8' is not supported by the runtime (supported: f32, f64, f16, bf16, i64, i32, i8, i1)}}
  %x = pipe.input 0 microbatch 0 : tensor<4xui8>
}

// -----

pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
  // expected-error @+1 {{'pipe.input' op cannot be executed: element type 'complex<f32>' is not supported by the runtime}}
  %x = pipe.input 0 microbatch 0 : tensor<4xcomplex<f32>>
}

// -----

pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
  // expected-error @+1 {{'pipe.input' op cannot be executed: 'tensor<?x4xf32>' has a dynamic shape; the runtime needs static shapes (export the model for one concrete input shape)}}
  %x = pipe.input 0 microbatch 0 : tensor<?x4xf32>
}

// -----

// expected-error @+1 {{no program for rank 1 of 2 (programs of @p)}}
pipe.program @p_rank0 rank 0 of 2 microbatches 1 {
}

// -----

pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
}
// expected-error @+1 {{rank 0 has two programs: @p_rank0 and @p_rank0b}}
pipe.program @p_rank0b rank 0 of 1 microbatches 1 {
}

// -----

pipe.program @p_rank0 rank 0 of 2 microbatches 1 {
}
// expected-error @+1 {{program @p_rank1 is rank 1 of 2 with 2 microbatches, but @p_rank0 is one of 2 ranks with 1 microbatch}}
pipe.program @p_rank1 rank 1 of 2 microbatches 2 {
}

// -----

pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
  // expected-error @+1 {{'pipe.input' op cannot be executed: 'tensor<4xf32, "enc">' has an encoding}}
  %x = pipe.input 0 microbatch 0 : tensor<4xf32, "enc">
}

// -----

pipe.program @p_rank0 rank 0 of 2 microbatches 1 {
  // expected-note @+1 {{first seen here}}
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  pipe.send %x to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
}
pipe.program @p_rank1 rank 1 of 2 microbatches 1 {
  // expected-error @+1 {{model argument 0 is 'tensor<8xf32>' here but 'tensor<4xf32>' elsewhere}}
  %x = pipe.input 0 microbatch 0 : tensor<8xf32>
}

// -----

// expected-error @+1 {{'func.func' op uses the name @pipeopt_rank_0, which is reserved for the entry point of rank 0}}
func.func @pipeopt_rank_0() {
  return
}
pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
}

// -----

// expected-error @+1 {{'func.func' op uses the name @pipeopt_module_hash, which is reserved for what ties the model to its manifest}}
func.func @pipeopt_module_hash() -> i64 {
  %c = arith.constant 0 : i64
  return %c : i64
}
pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
}

// -----

// expected-error @+1 {{'memref.global' op uses the name @pipeopt_manifest, which is reserved for what ties the model to its manifest}}
memref.global "private" constant @pipeopt_manifest : memref<2xi8> = dense<[123, 125]>
pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
}

// -----

// expected-error @+1 {{no pipe.program to convert; run pipe-schedule first}}
module {
}

// -----

ml_program.global private mutable @state(dense<0.0> : tensor<4xf32>) : tensor<4xf32>
func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  // expected-error @+1 {{'ml_program.global_store' op writes model state, which cannot be split across pipeline ranks; only reading ml_program globals is supported}}
  ml_program.global_store @state = %x : tensor<4xf32>
  return %x : tensor<4xf32>
}
pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %y = pipe.forward @s0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
}

// -----

// A per-microbatch argument (here with microbatch-args=auto: rank 2 with a
// leading 1) read for microbatch 1 but used by microbatch 0's forward.

func.func @s0(%x: tensor<1x4xf32>, %w: tensor<4x4xf32>) -> tensor<1x4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<1x4xf32>
}
pipe.program @p rank 0 of 1 microbatches 2 {
  // expected-note @+1 {{read here}}
  %x1 = pipe.input 0 microbatch 1 : tensor<1x4xf32>
  %w = pipe.input 1 microbatch 0 : tensor<4x4xf32>
  // expected-error @+1 {{'pipe.forward' op is for microbatch 0, but operand #0 is model argument 0 of microbatch 1, which differs per microbatch (microbatch-args=auto)}}
  %y0 = pipe.forward @s0(%x1, %w) stage 0 microbatch 0 : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
  pipe.output %y0 result 0 microbatch 0 : tensor<1x4xf32>
  %y1 = pipe.forward @s0(%x1, %w) stage 0 microbatch 1 : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
  pipe.output %y1 result 0 microbatch 1 : tensor<1x4xf32>
}

// -----

// A weight (not per-microbatch) may be read once and shared by every
// microbatch; an input argument used directly as an output must be that
// microbatch's.

func.func @s0(%x: tensor<1x4xf32>, %w: tensor<4x4xf32>) -> tensor<1x4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<1x4xf32>
}
pipe.program @p rank 0 of 1 microbatches 2 {
  // expected-note @+1 {{read here}}
  %x0 = pipe.input 0 microbatch 0 : tensor<1x4xf32>
  %x1 = pipe.input 0 microbatch 1 : tensor<1x4xf32>
  %w = pipe.input 1 microbatch 0 : tensor<4x4xf32>
  %y0 = pipe.forward @s0(%x0, %w) stage 0 microbatch 0 : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
  pipe.output %y0 result 0 microbatch 0 : tensor<1x4xf32>
  // expected-error @+1 {{'pipe.output' op is for microbatch 1, but operand #0 is model argument 0 of microbatch 0, which differs per microbatch (microbatch-args=auto)}}
  pipe.output %x0 result 0 microbatch 1 : tensor<1x4xf32>
}

// -----

// Reduced (mean) outputs across the programs of a pipeline.

func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @p_rank0 rank 0 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %y = pipe.forward @s0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  // expected-note @+1 {{first seen here}}
  pipe.output %y result 0 microbatch 0 reduce mean name "loss" : tensor<4xf32>
}
pipe.program @p_rank1 rank 1 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 1 : tensor<4xf32>
  %y = pipe.forward @s0(%x) stage 0 microbatch 1 : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'pipe.output' op writes model result 0 with no reduction, name "loss", but another program writes it with reduce mean, name "loss"; every pipe.output of one result must agree}}
  pipe.output %y result 0 microbatch 1 name "loss" : tensor<4xf32>
}

// -----

func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @p_rank0 rank 0 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %y = pipe.forward @s0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  // expected-note @+1 {{result 0}}
  pipe.output %y result 0 microbatch 0 name "y" : tensor<4xf32>
}
pipe.program @p_rank1 rank 1 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 1 : tensor<4xf32>
  %y = pipe.forward @s0(%x) stage 0 microbatch 1 : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'pipe.output' op names model result 1 "y", but result 0 has that name already; result names must be unique}}
  pipe.output %y result 1 microbatch 1 name "y" : tensor<4xf32>
}

// -----

func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @p_rank0 rank 0 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %y = pipe.forward @s0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.output %y result 0 microbatch 0 reduce mean : tensor<4xf32>
}
pipe.program @p_rank1 rank 1 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  // expected-error @+1 {{'pipe.output' op writes model result 0 (reduce mean) for microbatch 0, which another program writes too; a mean counts every microbatch once}}
  pipe.output %x result 0 microbatch 0 reduce mean : tensor<4xf32>
}

// -----

func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @p_rank0 rank 0 of 1 microbatches 3 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %y = pipe.forward @s0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{model result 0 ("grad_0") is averaged over microbatches (reduce mean), but no program writes it for microbatch 1 of 3}}
  pipe.output %y result 0 microbatch 0 reduce mean name "grad_0" : tensor<4xf32>
  %x2 = pipe.input 0 microbatch 2 : tensor<4xf32>
  %y2 = pipe.forward @s0(%x2) stage 0 microbatch 2 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.output %y2 result 0 microbatch 2 reduce mean name "grad_0" : tensor<4xf32>
}

// -----

// pipe.rank is this pass's own mark on the entry points it generates.
// expected-error @+1 {{'pipe.rank' is set by convert-pipe-to-runtime on the per-rank entry points it generates; remove it from @m}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.rank = 3 : i64} {
  return %x : tensor<4xf32>
}
func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %y = pipe.forward @s0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.output %y result 0 microbatch 0 : tensor<4xf32>
}

// -----

// The structural check is pipe-verify-schedule's: counts are range-checked
// before anything is sized by them.

// expected-error @+1 {{program @p_rank0: num_ranks must be between 1 and 65536, got 4294967297}}
pipe.program @p_rank0 rank 0 of 4294967297 microbatches 1 {
}

// -----

func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @p_rank0 rank 0 of 2 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %y = pipe.forward @s0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
}
pipe.program @p_rank1 rank 1 of 2 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  // expected-error @+1 {{'pipe.forward' op forward of stage 0 microbatch 0 is scheduled on ranks 0 and 1}}
  %y = pipe.forward @s0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
}

// -----

ml_program.global private @table(#ml_program.extern : tensor<4xf32>) : tensor<4xf32>
func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  // expected-error @+1 {{'ml_program.global_load_const' op reads a global without a dense initial value of its type; it cannot be turned into a constant}}
  %t = ml_program.global_load_const @table : tensor<4xf32>
  return %t : tensor<4xf32>
}
pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %y = pipe.forward @s0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
}

// -----

// A pipe op that no pattern lowers is reported by the conversion framework
// where it is (here a stage-graph call in a function of a nested module,
// which is not a stage graph of this module).

func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %y = pipe.forward @s0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.output %y result 0 microbatch 0 : tensor<4xf32>
}
module @inner {
  func.func @t0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
    return %x : tensor<4xf32>
  }
  func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{failed to legalize operation 'pipe.stage_call' that was explicitly marked illegal}}
    %y = pipe.stage_call @t0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

pipe.program @p_rank0 rank 0 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  // expected-note @+1 {{first seen here}}
  pipe.output %x result 0 microbatch 0 : tensor<4xf32>
}
pipe.program @p_rank1 rank 1 of 2 microbatches 2 {
  %x = pipe.input 1 microbatch 1 : tensor<8xf32>
  // expected-error @+1 {{model result 0 is 'tensor<8xf32>' here but 'tensor<4xf32>' elsewhere}}
  pipe.output %x result 0 microbatch 1 : tensor<8xf32>
}

// -----

// A runtime function declared with another signature: the lowering's
// error at the op that needs it, then the framework's for that op.

func.func private @pipeopt_rt_input_f32(i64) -> i32
pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
  // expected-error @+2 {{runtime function @pipeopt_rt_input_f32 is already declared as '(i64) -> i32', expected '(i64, i64, memref<*xf32>) -> i32'}}
  // expected-error @+1 {{failed to legalize operation 'pipe.input' that was explicitly marked illegal}}
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
}
