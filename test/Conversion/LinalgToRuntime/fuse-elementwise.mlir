// RUN: pipeopt %s -pipeopt-fuse-elementwise | FileCheck %s

// A bias add (linalg.broadcast + linalg.map) followed by a ReLU generic
// becomes one generic; the matmul that produces the input is not fused into
// and stays a named op for the BLAS kernels.

// CHECK-LABEL: func.func @mlp_layer
// CHECK: %[[MM:.*]] = linalg.matmul
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: ins(%[[MM]], %arg2
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.map
// CHECK-NOT: linalg.broadcast
// CHECK: return %[[R]]
func.func @mlp_layer(%x: tensor<16x32xf32>, %w: tensor<32x8xf32>, %b: tensor<8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<16x32xf32>, tensor<32x8xf32>) outs(%f : tensor<16x8xf32>) -> tensor<16x8xf32>
  %bb = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e : tensor<16x8xf32>) dimensions = [0]
  %s = linalg.map { arith.addf } ins(%mm, %bb : tensor<16x8xf32>, tensor<16x8xf32>) outs(%e : tensor<16x8xf32>)
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<16x8xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// An element-wise producer of a contraction's operand is not fused into it.
// CHECK-LABEL: func.func @scaled_operand
// CHECK: %[[S:.*]] = linalg.generic
// CHECK: arith.mulf
// CHECK: linalg.matmul ins(%[[S]], %arg1
func.func @scaled_operand(%x: tensor<16x32xf32>, %w: tensor<32x8xf32>, %out: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.mulf %v, %two : f32
    linalg.yield %m : f32
  } -> tensor<16x32xf32>
  %mm = linalg.matmul ins(%s, %w : tensor<16x32xf32>, tensor<32x8xf32>) outs(%out : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %mm : tensor<16x8xf32>
}

// A transposed weight (linalg.transpose, as tosa.transpose lowers) feeding a
// matmul is folded into the contraction's operand map: no transpose is left,
// and the contraction reads %w through (m, n, k) -> (n, k).
// CHECK-LABEL: func.func @transposed_weight
// CHECK-NOT: linalg.transpose
// CHECK: %[[C:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #[[NK:map[0-9]*]], #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%arg0, %arg1 : tensor<16x32xf32>, tensor<8x32xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: return %[[C]]
func.func @transposed_weight(%x: tensor<16x32xf32>, %w: tensor<8x32xf32>, %out: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %e = tensor.empty() : tensor<32x8xf32>
  %wt = linalg.transpose ins(%w : tensor<8x32xf32>) outs(%e : tensor<32x8xf32>) permutation = [1, 0]
  %mm = linalg.matmul ins(%x, %wt : tensor<16x32xf32>, tensor<32x8xf32>) outs(%out : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %mm : tensor<16x8xf32>
}

// A transpose that moves the batch dimension (attention's [1, 0, 2]) is not
// fused: the kernel needs the batch dimension first.
// CHECK-LABEL: func.func @head_transpose
// CHECK: %[[T:.*]] = linalg.generic
// CHECK: linalg.yield
// CHECK: linalg.batch_matmul ins(%[[T]], %arg1
func.func @head_transpose(%x: tensor<16x4x32xf32>, %w: tensor<4x32x8xf32>, %out: tensor<4x16x8xf32>) -> tensor<4x16x8xf32> {
  %e = tensor.empty() : tensor<4x16x32xf32>
  %t = linalg.transpose ins(%x : tensor<16x4x32xf32>) outs(%e : tensor<4x16x32xf32>) permutation = [1, 0, 2]
  %mm = linalg.batch_matmul ins(%t, %w : tensor<4x16x32xf32>, tensor<4x32x8xf32>) outs(%out : tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  return %mm : tensor<4x16x8xf32>
}

// The TOSA form of a linear layer: the weight is transposed, reshaped to
// [1, K, N] and read by a batch-1 batch_matmul. Unit dimensions are dropped
// (collapse_shape / expand_shape around a 2-D contraction), the reshape
// between the transpose and the contraction folds away, and the transpose
// is fused: the contraction reads the [N, K] weight directly.
// CHECK-LABEL: func.func @tosa_linear
// CHECK-NOT: linalg.transpose
// CHECK: %[[X:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]] : tensor<1x5x32xf32> into tensor<5x32xf32>
// CHECK: %[[C:.*]] = linalg.generic
// CHECK-SAME: ins(%[[X]], %arg1 : tensor<5x32xf32>, tensor<8x32xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tensor.expand_shape %[[C]]
func.func @tosa_linear(%x: tensor<1x5x32xf32>, %w: tensor<8x32xf32>, %out: tensor<1x5x8xf32>) -> tensor<1x5x8xf32> {
  %e = tensor.empty() : tensor<32x8xf32>
  %wt = linalg.transpose ins(%w : tensor<8x32xf32>) outs(%e : tensor<32x8xf32>) permutation = [1, 0]
  %w3 = tensor.expand_shape %wt [[0, 1], [2]] output_shape [1, 32, 8] : tensor<32x8xf32> into tensor<1x32x8xf32>
  %mm = linalg.batch_matmul ins(%x, %w3 : tensor<1x5x32xf32>, tensor<1x32x8xf32>) outs(%out : tensor<1x5x8xf32>) -> tensor<1x5x8xf32>
  return %mm : tensor<1x5x8xf32>
}

// A producer that reads its own outs (2 w computed in w's buffer) is not
// fused into a consumer: fused, the init stays the output operand under the
// producer's map, and the broadcast re-read the updated element on every
// row (row 1 of x + bcast(2 w) came out as x + 4 w).
// CHECK-LABEL: func.func @reads_its_outs
// CHECK: %[[W2:.*]] = linalg.generic {{.*}} outs(%arg1 : tensor<4xf32>)
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[W2]] : tensor<2x4xf32>, tensor<4xf32>)
#rio_id = affine_map<(d0) -> (d0)>
#rio_row = affine_map<(d0, d1) -> (d0, d1)>
#rio_bcast = affine_map<(d0, d1) -> (d1)>
func.func @reads_its_outs(%x: tensor<2x4xf32>, %w: tensor<4xf32>) -> tensor<2x4xf32> {
  %e = tensor.empty() : tensor<2x4xf32>
  %w2 = linalg.generic {indexing_maps = [#rio_id], iterator_types = ["parallel"]} outs(%w : tensor<4xf32>) {
  ^bb0(%o: f32):
    %d = arith.addf %o, %o : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %z = linalg.generic {indexing_maps = [#rio_row, #rio_bcast, #rio_row], iterator_types = ["parallel", "parallel"]}
      ins(%x, %w2 : tensor<2x4xf32>, tensor<4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  return %z : tensor<2x4xf32>
}
