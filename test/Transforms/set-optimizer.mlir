// pipe-set-optimizer: the module's pipe.optimizer (written to the manifest's
// "training" field), with the update period of asynchronous schedules.
// RUN: pipeopt %s -pipe-set-optimizer="optimizer=adamw lr=0.001 weight-decay=0.01 beta2=0.99" | FileCheck %s --check-prefix=ADAMW
// RUN: pipeopt %s -pipe-set-optimizer | FileCheck %s --check-prefix=SGD
// RUN: pipeopt %s -pipe-set-optimizer="optimizer=momentum momentum=0.5" | FileCheck %s --check-prefix=MOMENTUM
// RUN: pipeopt %s -pipe-set-optimizer="optimizer=none" | FileCheck %s --check-prefix=NONE
// RUN: pipeopt %s -pipe-schedule="schedule=pipedream-2bw num-microbatches=4" -pipe-set-optimizer | FileCheck %s --check-prefix=BW
// RUN: pipeopt %s -pipe-schedule="schedule=pipedream num-microbatches=3" -pipe-set-optimizer | FileCheck %s --check-prefix=PD
// RUN: pipeopt %s -pipe-schedule="schedule=1f1b num-microbatches=3" -pipe-set-optimizer | FileCheck %s --check-prefix=SYNC

// ADAMW: module attributes {pipe.optimizer = #pipe.optimizer<adamw, lr = 1.000000e-03, weight_decay = 1.000000e-02, beta1 = 9.000000e-01, beta2 = 0.98999999999999999, eps = 1.000000e-08>}
// SGD: module attributes {pipe.optimizer = #pipe.optimizer<sgd, lr = 1.000000e-02, weight_decay = 0.000000e+00>}
// MOMENTUM: module attributes {pipe.optimizer = #pipe.optimizer<momentum, lr = 1.000000e-02, weight_decay = 0.000000e+00, momentum = 5.000000e-01>}
// NONE: module attributes {pipe.optimizer = #pipe.optimizer<none>}
// PipeDream-2BW updates once per S = 2 backwards, PipeDream after each.
// BW: pipe.optimizer = #pipe.optimizer<sgd, lr = 1.000000e-02, weight_decay = 0.000000e+00, update_every = 2>
// PD: pipe.optimizer = #pipe.optimizer<sgd, lr = 1.000000e-02, weight_decay = 0.000000e+00, update_every = 1>
// SYNC: pipe.optimizer = #pipe.optimizer<sgd, lr = 1.000000e-02, weight_decay = 0.000000e+00>

#id = affine_map<(d0) -> (d0)>
#sc = affine_map<(d0) -> ()>
func.func @g(%x: tensor<2xf32> {pipe.microbatched}, %w0: tensor<2xf32>, %w1: tensor<2xf32>) -> tensor<f32> {
  %h = pipe.stage_call @s0(%x, %w0) stage 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %l = pipe.stage_call @s1(%h, %w1) stage 1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  return %l : tensor<f32>
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
func.func @s1(%x: tensor<2xf32>, %w: tensor<2xf32>) -> tensor<f32> attributes {pipe.stage = 1 : i64} {
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
