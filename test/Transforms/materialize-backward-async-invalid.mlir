// The rules of asynchronous weight updates (ProgramChecks.h,
// checkAsynchronousUpdates), which every training build gets: also
// pipe-set-optimizer's (set-optimizer-invalid.mlir).
// RUN: pipeopt %s --split-input-file --pipe-materialize-backward -verify-diagnostics

// PipeDream-2BW updates the weights once per 2 backwards (2 stages); an
// update may not straddle two steps of 3 microbatches.
#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0) -> ()>
module {
  func.func @g(%arg0: tensor<2xf32> {pipe.microbatched}, %arg1: tensor<2xf32>, %arg2: tensor<2xf32>) -> tensor<f32> {
    %0 = pipe.stage_call @s0(%arg0, %arg1) stage 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %1 = pipe.stage_call @s1(%0, %arg2) stage 1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
  func.func @s0(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>) -> tensor<2xf32> attributes {pipe.stage = 0 : i64} {
    %0 = tensor.empty() : tensor<2xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]} ins(%arg0, %arg1 : tensor<2xf32>, tensor<2xf32>) outs(%0 : tensor<2xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %2 = arith.mulf %in, %in_0 : f32
      linalg.yield %2 : f32
    } -> tensor<2xf32>
    return %1 : tensor<2xf32>
  }
  func.func @s1(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>) -> tensor<f32> attributes {pipe.stage = 1 : i64} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<f32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<f32>) -> tensor<f32>
    %2 = linalg.generic {indexing_maps = [#map, #map, #map1], iterator_types = ["reduction"]} ins(%arg0, %arg1 : tensor<2xf32>, tensor<2xf32>) outs(%1 : tensor<f32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %3 = arith.mulf %in, %in_0 : f32
      %4 = arith.addf %out, %3 : f32
      linalg.yield %4 : f32
    } -> tensor<f32>
    return %2 : tensor<f32>
  }
  // expected-error @below {{the schedule pipedream-2bw updates the weights every 2 microbatches (one per stage), which must divide the number of microbatches (3)}}
  pipe.program @g_rank0 rank 0 of 2 microbatches 3 attributes {schedule = "pipedream-2bw"} {
    %0 = pipe.input 0 microbatch 0 : tensor<2xf32>
    %1 = pipe.input 1 microbatch 0 : tensor<2xf32>
    %2 = pipe.forward @s0(%0, %1) stage 0 microbatch 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    pipe.send %2 to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<2xf32>
    %3 = pipe.input 0 microbatch 1 : tensor<2xf32>
    %4 = pipe.input 1 microbatch 1 : tensor<2xf32>
    %5 = pipe.forward @s0(%3, %4) stage 0 microbatch 1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    pipe.send %5 to 1 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<2xf32>
    %6 = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<2xf32>
    pipe.backward full stage 0 microbatch 0 ins(%6 : tensor<2xf32>)
    %7 = pipe.input 0 microbatch 2 : tensor<2xf32>
    %8 = pipe.input 1 microbatch 2 : tensor<2xf32>
    %9 = pipe.forward @s0(%7, %8) stage 0 microbatch 2 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    pipe.send %9 to 1 <forward, stage 0 -> 1, microbatch 2, value 0> : tensor<2xf32>
    %10 = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 1, value 0> : tensor<2xf32>
    pipe.backward full stage 0 microbatch 1 ins(%10 : tensor<2xf32>)
    %11 = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 2, value 0> : tensor<2xf32>
    pipe.backward full stage 0 microbatch 2 ins(%11 : tensor<2xf32>)
  }
  pipe.program @g_rank1 rank 1 of 2 microbatches 3 attributes {schedule = "pipedream-2bw"} {
    %0 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<2xf32>
    %1 = pipe.input 2 microbatch 0 : tensor<2xf32>
    %2 = pipe.forward @s1(%0, %1) stage 1 microbatch 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
    pipe.output %2 result 0 microbatch 0 : tensor<f32>
    %3 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<2xf32>
    %4 = pipe.backward full stage 1 microbatch 0 -> tensor<2xf32>
    pipe.send %4 to 0 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<2xf32>
    %5 = pipe.input 2 microbatch 1 : tensor<2xf32>
    %6 = pipe.forward @s1(%3, %5) stage 1 microbatch 1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
    pipe.output %6 result 0 microbatch 1 : tensor<f32>
    %7 = pipe.backward full stage 1 microbatch 1 -> tensor<2xf32>
    %8 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 2, value 0> : tensor<2xf32>
    pipe.send %7 to 0 <backward, stage 1 -> 0, microbatch 1, value 0> : tensor<2xf32>
    %9 = pipe.input 2 microbatch 2 : tensor<2xf32>
    %10 = pipe.forward @s1(%8, %9) stage 1 microbatch 2 : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
    pipe.output %10 result 0 microbatch 2 : tensor<f32>
    %11 = pipe.backward full stage 1 microbatch 2 -> tensor<2xf32>
    pipe.send %11 to 0 <backward, stage 1 -> 0, microbatch 2, value 0> : tensor<2xf32>
  }
}


// -----

// PipeDream updates each weight on its one rank; %w0 is read by both
// stages (a tied weight). The error is at the second rank's first
// backward, where its pipe.gradient is.
#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0) -> ()>
module {
  func.func @g(%arg0: tensor<2xf32> {pipe.microbatched}, %arg1: tensor<2xf32>, %arg2: tensor<2xf32>) -> tensor<f32> {
    %0 = pipe.stage_call @s0(%arg0, %arg1) stage 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %1 = pipe.stage_call @s1(%0, %arg1) stage 1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
  func.func @s0(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>) -> tensor<2xf32> attributes {pipe.stage = 0 : i64} {
    %0 = tensor.empty() : tensor<2xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]} ins(%arg0, %arg1 : tensor<2xf32>, tensor<2xf32>) outs(%0 : tensor<2xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %2 = arith.mulf %in, %in_0 : f32
      linalg.yield %2 : f32
    } -> tensor<2xf32>
    return %1 : tensor<2xf32>
  }
  func.func @s1(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>) -> tensor<f32> attributes {pipe.stage = 1 : i64} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<f32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<f32>) -> tensor<f32>
    %2 = linalg.generic {indexing_maps = [#map, #map, #map1], iterator_types = ["reduction"]} ins(%arg0, %arg1 : tensor<2xf32>, tensor<2xf32>) outs(%1 : tensor<f32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %3 = arith.mulf %in, %in_0 : f32
      %4 = arith.addf %out, %3 : f32
      linalg.yield %4 : f32
    } -> tensor<f32>
    return %2 : tensor<f32>
  }
  pipe.program @g_rank0 rank 0 of 2 microbatches 2 attributes {schedule = "pipedream"} {
    %0 = pipe.input 0 microbatch 0 : tensor<2xf32>
    %1 = pipe.input 1 microbatch 0 : tensor<2xf32>
    %2 = pipe.forward @s0(%0, %1) stage 0 microbatch 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    pipe.send %2 to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<2xf32>
    %3 = pipe.input 0 microbatch 1 : tensor<2xf32>
    %4 = pipe.input 1 microbatch 1 : tensor<2xf32>
    %5 = pipe.forward @s0(%3, %4) stage 0 microbatch 1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    pipe.send %5 to 1 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<2xf32>
    %6 = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<2xf32>
    pipe.backward full stage 0 microbatch 0 ins(%6 : tensor<2xf32>)
    %7 = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 1, value 0> : tensor<2xf32>
    pipe.backward full stage 0 microbatch 1 ins(%7 : tensor<2xf32>)
  }
  pipe.program @g_rank1 rank 1 of 2 microbatches 2 attributes {schedule = "pipedream"} {
    %0 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<2xf32>
    %1 = pipe.input 1 microbatch 0 : tensor<2xf32>
    %2 = pipe.forward @s1(%0, %1) stage 1 microbatch 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
    pipe.output %2 result 0 microbatch 0 : tensor<f32>
    %3 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<2xf32>
    // expected-error @below {{the schedule pipedream updates each weight on its own rank as its gradients arrive, but argument 1 is read by stages on 2 ranks (a tied weight); use a synchronous schedule such as 1f1b}}
    %4 = pipe.backward full stage 1 microbatch 0 -> tensor<2xf32>
    pipe.send %4 to 0 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<2xf32>
    %5 = pipe.input 1 microbatch 1 : tensor<2xf32>
    %6 = pipe.forward @s1(%3, %5) stage 1 microbatch 1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
    pipe.output %6 result 0 microbatch 1 : tensor<f32>
    %7 = pipe.backward full stage 1 microbatch 1 -> tensor<2xf32>
    pipe.send %7 to 0 <backward, stage 1 -> 0, microbatch 1, value 0> : tensor<2xf32>
  }
}
