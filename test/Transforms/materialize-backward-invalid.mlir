// Errors of pipe-materialize-backward (options: materialize-backward-options.test).
// RUN: pipeopt %s --split-input-file --pipe-materialize-backward -verify-diagnostics

#id = affine_map<(d0) -> (d0)>
#sc = affine_map<(d0) -> ()>
// A forward-only schedule has nothing to materialize.
func.func @g(%x: tensor<2xf32> {pipe.microbatched}, %w: tensor<2xf32>) -> tensor<f32> {
  %0 = pipe.stage_call @s0(%x, %w) stage 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @s0(%x: tensor<2xf32>, %w: tensor<2xf32>) -> tensor<f32> attributes {pipe.stage = 0 : i64} {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#id, #id, #sc], iterator_types = ["reduction"]}
      ins(%x, %w : tensor<2xf32>, tensor<2xf32>) outs(%f : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
// expected-error @below {{pipe-materialize-backward: the schedule has no backward actions (schedule 'forward-only'); training needs a training schedule such as 1f1b}}
pipe.program @g_rank0 rank 0 of 1 microbatches 1 attributes {schedule = "forward-only"} {
  %x = pipe.input 0 microbatch 0 : tensor<2xf32>
  %w = pipe.input 1 microbatch 0 : tensor<2xf32>
  %l = pipe.forward @s0(%x, %w) stage 0 microbatch 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  pipe.output %l result 0 microbatch 0 : tensor<f32>
}

// -----

#id = affine_map<(d0) -> (d0)>
// The stage graph must return the loss, one scalar.
// expected-error @below {{pipe-materialize-backward: @g has type '(tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>', but training needs a model whose only result is its loss, one floating-point scalar (pipeopt-compile --train --loss=mse|cross-entropy appends one)}}
func.func @g(%x: tensor<2xf32> {pipe.microbatched}, %w: tensor<2xf32>) -> tensor<2xf32> {
  %0 = pipe.stage_call @s0(%x, %w) stage 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func @s0(%x: tensor<2xf32>, %w: tensor<2xf32>) -> tensor<2xf32> attributes {pipe.stage = 0 : i64} {
  %e = tensor.empty() : tensor<2xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %w : tensor<2xf32>, tensor<2xf32>) outs(%e : tensor<2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<2xf32>
  return %r : tensor<2xf32>
}
pipe.program @g_rank0 rank 0 of 1 microbatches 1 attributes {schedule = "gpipe"} {
  %x = pipe.input 0 microbatch 0 : tensor<2xf32>
  %w = pipe.input 1 microbatch 0 : tensor<2xf32>
  %l = pipe.forward @s0(%x, %w) stage 0 microbatch 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  pipe.output %l result 0 microbatch 0 : tensor<2xf32>
  pipe.backward full stage 0 microbatch 0
}

// -----

// Programs without the stage graph they came from.
func.func @s0(%x: tensor<2xf32>) -> tensor<f32> attributes {pipe.stage = 0 : i64} {
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}
// expected-error @below {{pipe-materialize-backward: no stage graph function (pipe.stage_call) found; the programs must come from pipe-schedule of this module}}
pipe.program @g_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<2xf32>
  %l = pipe.forward @s0(%x) stage 0 microbatch 0 : (tensor<2xf32>) -> tensor<f32>
  pipe.backward full stage 0 microbatch 0
}

// -----

#id = affine_map<(d0) -> (d0)>
#sc = affine_map<(d0) -> ()>
func.func @g(%x: tensor<2xf32> {pipe.microbatched}, %w: tensor<2xf32>) -> tensor<f32> {
  %0 = pipe.stage_call @s0(%x, %w) stage 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @s0(%x: tensor<2xf32>, %w: tensor<2xf32>) -> tensor<f32> attributes {pipe.stage = 0 : i64} {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#id, #id, #sc], iterator_types = ["reduction"]}
      ins(%x, %w : tensor<2xf32>, tensor<2xf32>) outs(%f : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
pipe.program @g_rank0 rank 0 of 1 microbatches 1 attributes {schedule = "gpipe"} {
  // expected-error @below {{pipe-materialize-backward: backward of stage 0 microbatch 0 comes before its forward on rank 0}}
  pipe.backward full stage 0 microbatch 0
  %x = pipe.input 0 microbatch 0 : tensor<2xf32>
  %w = pipe.input 1 microbatch 0 : tensor<2xf32>
  %l = pipe.forward @s0(%x, %w) stage 0 microbatch 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  pipe.output %l result 0 microbatch 0 : tensor<f32>
}

// -----

#id = affine_map<(d0) -> (d0)>
#sc = affine_map<(d0) -> ()>
func.func @g(%x: tensor<2xf32> {pipe.microbatched}, %w: tensor<2xf32>) -> tensor<f32> {
  %0 = pipe.stage_call @s0(%x, %w) stage 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @s0(%x: tensor<2xf32>, %w: tensor<2xf32>) -> tensor<f32> attributes {pipe.stage = 0 : i64} {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#id, #id, #sc], iterator_types = ["reduction"]}
      ins(%x, %w : tensor<2xf32>, tensor<2xf32>) outs(%f : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
func.func private @s0_train_w(%x: tensor<2xf32>) -> tensor<2xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<2xf32>
}
pipe.program @g_rank0 rank 0 of 1 microbatches 1 attributes {schedule = "zb-h1"} {
  %x = pipe.input 0 microbatch 0 : tensor<2xf32>
  %w = pipe.input 1 microbatch 0 : tensor<2xf32>
  %l = pipe.forward @s0(%x, %w) stage 0 microbatch 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  pipe.output %l result 0 microbatch 0 : tensor<f32>
  pipe.backward input stage 0 microbatch 0
  // expected-error @below {{pipe-materialize-backward: is already materialized (it calls @s0_train_w)}}
  %g = pipe.backward weight @s0_train_w stage 0 microbatch 0 ins(%x : tensor<2xf32>) -> tensor<2xf32>
  pipe.gradient %g argument 1 stage 0 microbatch 0 : tensor<2xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>
#sc = affine_map<(d0) -> ()>
func.func @g(%x: tensor<2xf32> {pipe.microbatched}, %w: tensor<2xf32>) -> tensor<f32> {
  %0 = pipe.stage_call @s0(%x, %w) stage 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @s0(%x: tensor<2xf32>, %w: tensor<2xf32>) -> tensor<f32> attributes {pipe.stage = 0 : i64} {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#id, #id, #sc], iterator_types = ["reduction"]}
      ins(%x, %w : tensor<2xf32>, tensor<2xf32>) outs(%f : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
pipe.program @g_rank0 rank 0 of 1 microbatches 1 attributes {schedule = "zb-h1"} {
  %x = pipe.input 0 microbatch 0 : tensor<2xf32>
  %w = pipe.input 1 microbatch 0 : tensor<2xf32>
  %l = pipe.forward @s0(%x, %w) stage 0 microbatch 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  pipe.output %l result 0 microbatch 0 : tensor<f32>
  // expected-error @below {{pipe-materialize-backward: weight gradient (W) of stage 0 microbatch 0 comes before its input gradient (B)}}
  pipe.backward weight stage 0 microbatch 0
  pipe.backward input stage 0 microbatch 0
}
