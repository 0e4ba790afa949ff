// RUN: pipeopt %s -split-input-file -pipe-outline-stages | FileCheck %s
// RUN: pipeopt %s -split-input-file -pipe-outline-stages | pipeopt -split-input-file -verify-roundtrip -o /dev/null

// Three stages with a skip connection (%a, stage 0 -> stage 2), a
// rematerialized fill used by stages 0 and 1 (cloned into both, never
// passed), and a scalar constant captured by a linalg.generic body.

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: %[[X:[^:]+]]: tensor<4x8xf32>, %[[W0:[^:]+]]: tensor<8x8xf32>, %[[W1:[^:]+]]: tensor<8x8xf32>)
// CHECK-SAME: attributes {pipe.num_stages = 3 : i64}
// CHECK-NEXT: %[[S0:.*]]:2 = pipe.stage_call @mlp_stage0(%[[X]], %[[W0]]) stage 0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-NEXT: %[[S1:.*]] = pipe.stage_call @mlp_stage1(%[[W1]], %[[S0]]#1) stage 1 : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[S2:.*]] = pipe.stage_call @mlp_stage2(%[[S0]]#0, %[[S1]]) stage 2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %[[S2]] : tensor<4x8xf32>

// CHECK-LABEL: func.func @mlp_stage0(
// CHECK-SAME: %[[X:[^:]+]]: tensor<4x8xf32>, %[[W0:[^:]+]]: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {pipe.stage = 0 : i64}
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT: %[[F:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<4x8xf32>)
// CHECK-NEXT: %[[A:.*]] = linalg.matmul ins(%[[X]], %[[W0]] : {{.*}}) outs(%[[F]] : tensor<4x8xf32>)
// CHECK-NEXT: %[[B:.*]] = arith.mulf %[[A]], %[[A]] : tensor<4x8xf32>
// CHECK-NEXT: return %[[A]], %[[B]] : tensor<4x8xf32>, tensor<4x8xf32>

// CHECK-LABEL: func.func @mlp_stage1(
// CHECK-SAME: %[[W1:[^:]+]]: tensor<8x8xf32>, %[[B:[^:]+]]: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {pipe.stage = 1 : i64}
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT: %[[F:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<4x8xf32>)
// CHECK-NEXT: %[[C:.*]] = linalg.matmul ins(%[[B]], %[[W1]] : {{.*}}) outs(%[[F]] : tensor<4x8xf32>)
// CHECK-NEXT: return %[[C]] : tensor<4x8xf32>

// CHECK-LABEL: func.func @mlp_stage2(
// CHECK-SAME: %[[A:[^:]+]]: tensor<4x8xf32>, %[[C:[^:]+]]: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {pipe.stage = 2 : i64}
// CHECK: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[A]], %[[C]] : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: arith.mulf %{{.*}}, %[[HALF]] : f32
// CHECK-NOT: pipe.stage =
// CHECK: return
func.func @mlp(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>) -> tensor<4x8xf32>
    attributes {pipe.num_stages = 3 : i64} {
  %zero = arith.constant {pipe.remat, pipe.stage = 0 : i64} 0.0 : f32
  %half = arith.constant {pipe.remat, pipe.stage = 2 : i64} 0.5 : f32
  %e = tensor.empty() {pipe.remat, pipe.stage = 0 : i64} : tensor<4x8xf32>
  %init = linalg.fill {pipe.remat, pipe.stage = 0 : i64} ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = linalg.matmul {pipe.stage = 0 : i64} ins(%x, %w0 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = arith.mulf %a, %a {pipe.stage = 0 : i64} : tensor<4x8xf32>
  %c = linalg.matmul {pipe.stage = 1 : i64} ins(%b, %w1 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %c : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) attrs = {pipe.stage = 2 : i64} {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %s = arith.addf %p, %q : f32
    %m = arith.mulf %s, %half : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// A weight used by both stages is passed to both stage calls, and a function
// argument returned directly is returned by the stage graph as is.

// CHECK-LABEL: func.func @flow(
// CHECK-SAME: %[[X:[^:]+]]: tensor<16x16xf32>, %[[W:[^:]+]]: tensor<16x16xf32>)
// CHECK-NEXT: %[[S0:.*]] = pipe.stage_call @flow_stage0(%[[X]], %[[W]]) stage 0
// CHECK-NEXT: %[[S1:.*]] = pipe.stage_call @flow_stage1(%[[W]], %[[S0]]) stage 1
// CHECK-NEXT: return %[[S1]], %[[X]]
// CHECK-LABEL: func.func @flow_stage0(
// CHECK-LABEL: func.func @flow_stage1(
func.func @flow(%x: tensor<16x16xf32>, %w: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>) {
  %c = arith.constant {pipe.remat, pipe.stage = 0 : i64} dense<0.0> : tensor<16x16xf32>
  %0 = linalg.matmul {pipe.stage = 0 : i64} ins(%x, %w : tensor<16x16xf32>, tensor<16x16xf32>) outs(%c : tensor<16x16xf32>) -> tensor<16x16xf32>
  %1 = linalg.matmul {pipe.stage = 1 : i64} ins(%0, %w : tensor<16x16xf32>, tensor<16x16xf32>) outs(%c : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %1, %x : tensor<16x16xf32>, tensor<16x16xf32>
}
