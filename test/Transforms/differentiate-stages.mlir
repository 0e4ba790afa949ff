// Stage functions are lowered and differentiated in parallel; the result
// is that of one stage after the other: each stage's functions follow it,
// the last stage (a scalar) is its own loss. (With several failing stages
// only the first one's error is reported: differentiate-invalid.mlir.)
//
// RUN: pipeopt %s -pipe-differentiate | FileCheck %s
// RUN: pipeopt %s -pipe-differentiate --mlir-disable-threading | FileCheck %s

// CHECK-LABEL: func.func @s0(
// CHECK-SAME: pipe.gradient = #pipe.gradient<{{.*}}fwd = @s0_fwd, bwd = @s0_bwd, b = @s0_b, w = @s0_w
// CHECK-NOT: tosa.
// CHECK: linalg.batch_matmul
// CHECK-LABEL: func.func @s0_fwd(
// CHECK-LABEL: func.func @s0_bwd(
// CHECK-LABEL: func.func @s0_b(
// CHECK-LABEL: func.func @s0_w(
// CHECK-LABEL: func.func @s1(
// CHECK-SAME: pipe.gradient = #pipe.gradient<{{.*}}fwd = @s1_fwd, bwd = @s1_bwd, b = @s1_b, w = @s1_w
// CHECK-LABEL: func.func @s1_fwd(
// CHECK-LABEL: func.func @s1_bwd(
// CHECK-LABEL: func.func @s1_b(
// CHECK-LABEL: func.func @s1_w(
// CHECK-LABEL: func.func @s2(
// CHECK-SAME: pipe.gradient = #pipe.gradient<{{.*}}fwd = @s2_fwd, bwd = @s2_bwd, b = @s2_b, w = @s2_w
// CHECK-LABEL: func.func @s2_loss(
// CHECK-LABEL: func.func @s2_grad(
// CHECK-LABEL: func.func @s2_fwd(
// CHECK-LABEL: func.func @s2_bwd(
// CHECK-LABEL: func.func @s2_b(
// CHECK-LABEL: func.func @s2_w(
func.func @s0(%x: tensor<2x3xf32>, %w: tensor<3x3xf32>) -> tensor<2x3xf32> attributes {pipe.stage = 0 : i64} {
  %s3 = tosa.const_shape {values = dense<[1, 2, 3]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %t3 = tosa.const_shape {values = dense<[1, 3, 3]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s2 = tosa.const_shape {values = dense<[2, 3]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %x3 = tosa.reshape %x, %s3 : (tensor<2x3xf32>, !tosa.shape<3>) -> tensor<1x2x3xf32>
  %w3 = tosa.reshape %w, %t3 : (tensor<3x3xf32>, !tosa.shape<3>) -> tensor<1x3x3xf32>
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %m = tosa.matmul %x3, %w3, %z, %z : (tensor<1x2x3xf32>, tensor<1x3x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x3xf32>
  %t = tosa.tanh %m : (tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %y = tosa.reshape %t, %s2 : (tensor<1x2x3xf32>, !tosa.shape<2>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
func.func @s1(%x: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> attributes {pipe.stage = 1 : i64} {
  %e = tensor.empty() : tensor<2x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<2x3xf32>, tensor<3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.mulf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
func.func @s2(%x: tensor<2x3xf32>) -> tensor<f32> attributes {pipe.stage = 2 : i64} {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<2x3xf32>) outs(%f : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    %t = arith.addf %o, %s : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
