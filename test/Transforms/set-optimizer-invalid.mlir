// Errors of pipe-set-optimizer: options out of the ranges the runtime
// accepts, programs that disagree, and the rules of asynchronous updates
// (which materialize-backward-async-invalid.mlir checks in
// pipe-materialize-backward).
// RUN: not pipeopt %s -split-input-file -pipe-set-optimizer="optimizer=adam" 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not pipeopt %s -split-input-file -pipe-set-optimizer="lr=-1" 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not pipeopt %s -split-input-file -pipe-set-optimizer="weight-decay=inf" 2>&1 | FileCheck %s --check-prefix=WD
// RUN: not pipeopt %s -split-input-file -pipe-set-optimizer="momentum=1.5" 2>&1 | FileCheck %s --check-prefix=MU
// RUN: not pipeopt %s -split-input-file -pipe-set-optimizer="beta1=-0.1" 2>&1 | FileCheck %s --check-prefix=B1
// RUN: not pipeopt %s -split-input-file -pipe-set-optimizer="beta2=1" 2>&1 | FileCheck %s --check-prefix=B2
// RUN: not pipeopt %s -split-input-file -pipe-set-optimizer="eps=0" 2>&1 | FileCheck %s --check-prefix=EPS
// KIND: for the --optimizer option: Cannot find option named 'adam'!
// LR: error: pipe-set-optimizer: lr: expected a finite value >= 0, got -1
// WD: error: pipe-set-optimizer: weight-decay: expected a finite value >= 0, got inf
// MU: error: pipe-set-optimizer: momentum: expected a value in [0, 1], got 1.5
// B1: error: pipe-set-optimizer: beta1: expected a value in [0, 1), got -0.1
// B2: error: pipe-set-optimizer: beta2: expected a value in [0, 1), got 1
// EPS: error: pipe-set-optimizer: eps: expected a finite value > 0, got 0
// RUN: not pipeopt %s -split-input-file -pipe-set-optimizer="optimizer=sgd momentum=0.5" 2>&1 | FileCheck %s --check-prefix=SGDMU
// RUN: not pipeopt %s -split-input-file -pipe-set-optimizer="optimizer=momentum beta1=0.5" 2>&1 | FileCheck %s --check-prefix=MUB1
// RUN: not pipeopt %s -split-input-file -pipe-set-optimizer="optimizer=none lr=5" 2>&1 | FileCheck %s --check-prefix=NONELR
// SGDMU: error: pipe-set-optimizer: momentum does not apply to optimizer=sgd
// MUB1: error: pipe-set-optimizer: beta1 does not apply to optimizer=momentum
// NONELR: error: pipe-set-optimizer: lr does not apply to optimizer=none
// RUN: pipeopt %s -split-input-file -pipe-set-optimizer -verify-diagnostics

module {
}

// -----

// Programs that name two schedules.
module {
  pipe.program @g_rank0 rank 0 of 2 microbatches 1 attributes {schedule = "1f1b"} {
  }
  // expected-error @below {{'pipe.program' op names the schedule 'gpipe', but @g_rank0 names '1f1b'; the pipe.programs must name one schedule}}
  pipe.program @g_rank1 rank 1 of 2 microbatches 1 attributes {schedule = "gpipe"} {
  }
  // expected-note @-5 {{@g_rank0 is here}}
}

// -----

// Programs that run different microbatch counts.
module {
  // expected-note @below {{@g_rank0 is here}}
  pipe.program @g_rank0 rank 0 of 2 microbatches 1 attributes {schedule = "1f1b"} {
  }
  // expected-error @below {{'pipe.program' op runs 2 microbatches, but @g_rank0 runs 1; the pipe.programs must run one count}}
  pipe.program @g_rank1 rank 1 of 2 microbatches 2 attributes {schedule = "1f1b"} {
  }
}

// -----

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


