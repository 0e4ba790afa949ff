// pipe-materialize-backward on a 2-stage training pipeline of a small MLP
// with its loss (x [2,4] -> matmul w1 -> relu -> matmul w2 -> sum of squared
// errors against t). The partitioner puts matmul+relu in stage 0 (w1) and the
// second matmul and the loss in stage 1 (w2, t).
//
// RUN: pipeopt %s --pipeopt-pipeline="num-stages=2 num-microbatches=2 schedule=zb-h1 device=cpu training=true" \
// RUN:   --pipe-materialize-backward | FileCheck %s --check-prefix=ZB
// RUN: pipeopt %s --pipeopt-pipeline="num-stages=2 num-microbatches=2 schedule=1f1b device=cpu training=true" \
// RUN:   --pipe-materialize-backward | FileCheck %s --check-prefix=FULL
// Nothing trainable: no pipe.gradient, the backward still passes gradients.
// RUN: pipeopt %s --pipeopt-pipeline="num-stages=2 num-microbatches=2 schedule=1f1b device=cpu training=true" \
// RUN:   --pipe-materialize-backward=trainable=none | FileCheck %s --check-prefix=FROZEN
// Only w2: stage 0 differentiates nothing (its input x is data).
// RUN: pipeopt %s --pipeopt-pipeline="num-stages=2 num-microbatches=2 schedule=1f1b device=cpu training=true" \
// RUN:   --pipe-materialize-backward=trainable=2 | FileCheck %s --check-prefix=W2

#id = affine_map<(d0, d1) -> (d0, d1)>
#sc = affine_map<(d0, d1) -> ()>
func.func @f(%x: tensor<2x4xf32> {pipe.microbatched}, %w1: tensor<4x4xf32>,
             %w2: tensor<4x3xf32>, %t: tensor<2x3xf32> {pipe.microbatched}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2x4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<2x4xf32>, tensor<4x4xf32>) outs(%f1 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<2x4xf32>) outs(%e1 : tensor<2x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2x4xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<2x4xf32>, tensor<4x3xf32>) outs(%f2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#id, #id, #sc], iterator_types = ["reduction", "reduction"]}
      ins(%y, %t : tensor<2x3xf32>, tensor<2x3xf32>) outs(%f3 : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %s = arith.mulf %d, %d : f32
    %n = arith.addf %o, %s : f32
    linalg.yield %n : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}

// The B of stage 1 seeds the loss with 1 and returns the gradient of its
// input activation, then the stash for W (the gradient of the matmul's
// output); W takes only the activation and the stash.
// ZB-LABEL: func.func private @f_stage1_train_w(%{{.*}}: tensor<2x4xf32>, %{{.*}}: tensor<2x3xf32>) -> tensor<4x3xf32>
// ZB: call @f_stage1_w
// ZB-LABEL: func.func private @f_stage1_train_b(%{{.*}}: tensor<4x3xf32>, %{{.*}}: tensor<2x3xf32>, %{{.*}}: tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x3xf32>)
// ZB: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// ZB: call @f_stage1_b(%{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]])
//
// Rank 0 (stage 0, no input gradient to compute: x is data). After F it
// holds x and the saved pre-ReLU matmul output (32 + 32 bytes); after its
// (empty) B, W's operands: x, the saved value and the incoming gradient (96).
// ZB-LABEL: pipe.program @f_rank0
// ZB: %[[X:.*]] = pipe.input 0 microbatch 0
// ZB: %[[F:.*]]:2 = pipe.forward @f_stage0_fwd(%[[X]], %{{.*}}) stage 0 microbatch 0 {pipe.stash_bytes = 64 : i64}
// ZB: %[[G:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 0, value 0>
// ZB: pipe.backward input @f_stage0_train_b stage 0 microbatch 0 {pipe.stash_bytes = 96 : i64}
// ZB: %[[W:.*]] = pipe.backward weight @f_stage0_train_w stage 0 microbatch 0 ins(%[[X]], %[[F]]#1, %[[G]] : {{.*}}) {pipe.stash_bytes = 0 : i64} -> tensor<4x4xf32>
// ZB: pipe.gradient %[[W]] argument 1 stage 0 microbatch 0 : tensor<4x4xf32>
//
// Rank 1: F holds the target, the saved matmul output and the received
// activation (24 + 24 + 32); after B the activation and the stash (32 + 24).
// ZB-LABEL: pipe.program @f_rank1
// ZB: %[[A:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0>
// ZB: %[[F1:.*]]:2 = pipe.forward @f_stage1_fwd(%{{.*}}, %{{.*}}, %[[A]]) stage 1 microbatch 0 {pipe.stash_bytes = 80 : i64}
// ZB: pipe.output %[[F1]]#0 result 0 microbatch 0 reduce mean name "loss" : tensor<f32>
// ZB: %[[B:.*]]:2 = pipe.backward input @f_stage1_train_b stage 1 microbatch 0 ins({{.*}}, %[[F1]]#1 : {{.*}}) {pipe.stash_bytes = 56 : i64} -> tensor<2x4xf32>, tensor<2x3xf32>
// ZB: pipe.send %[[B]]#0 to 0 <backward, stage 1 -> 0, microbatch 0, value 0>
// ZB: %[[W1:.*]] = pipe.backward weight @f_stage1_train_w stage 1 microbatch 0 ins(%[[A]], %[[B]]#1 : {{.*}}) {pipe.stash_bytes = 0 : i64}
// ZB: pipe.gradient %[[W1]] argument 2 stage 1 microbatch 0 : tensor<4x3xf32>
// ZB: pipe.backward weight @f_stage1_train_w stage 1 microbatch 1
// ZB: pipe.gradient {{.*}} argument 2 stage 1 microbatch 1

// FULL-LABEL: pipe.program @f_rank1
// FULL: %[[A:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0>
// FULL: %[[F:.*]]:2 = pipe.forward @f_stage1_fwd({{.*}}) stage 1 microbatch 0 {pipe.stash_bytes = 80 : i64}
// FULL: %[[B:.*]]:2 = pipe.backward full @f_stage1_train_bw stage 1 microbatch 0 ins(%{{.*}}, %{{.*}}, %[[A]], %[[F]]#1 : {{.*}}) {pipe.stash_bytes = 0 : i64} -> tensor<2x4xf32>, tensor<4x3xf32>
// FULL: pipe.gradient %[[B]]#1 argument 2 stage 1 microbatch 0
// FULL: pipe.send %[[B]]#0 to 0 <backward, stage 1 -> 0, microbatch 0, value 0>

// FROZEN-NOT: pipe.gradient
// FROZEN: pipe.backward full @f_stage1_train_bw stage 1 microbatch 0 {{.*}} -> tensor<2x4xf32>
// FROZEN-NOT: pipe.gradient

// W2-LABEL: pipe.program @f_rank0
// W2: pipe.forward @f_stage0(%{{.*}}, %{{.*}}) stage 0 microbatch 0 {pipe.stash_bytes = 0 : i64}
// W2: pipe.backward full @f_stage0_train_bw stage 0 microbatch 0 {pipe.stash_bytes = 0 : i64}
// W2-NOT: pipe.gradient {{.*}} argument 1
// W2-LABEL: pipe.program @f_rank1
// W2: pipe.gradient {{.*}} argument 2 stage 1 microbatch 0
