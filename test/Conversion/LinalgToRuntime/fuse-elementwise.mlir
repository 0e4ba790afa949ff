// RUN: pipeopt %s -pipeopt-fuse-elementwise | FileCheck %s
// RUN: pipeopt %s -pipeopt-fuse-elementwise -mlir-print-local-scope | FileCheck %s --check-prefix=LOCAL

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

// A tied embedding table read transposed by two contractions (the LM
// head's forward and its input gradient): the transpose is copied for each
// and folded into both operand maps; no transpose is left.
// CHECK-LABEL: func.func @tied_head
// CHECK-NOT: linalg.transpose
// CHECK: %[[LOGITS:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<16x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%arg2, %arg1 : tensor<4x16xf32>, tensor<16x8xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return
// The table is read as [j, k] by the logits and as [k, j] by dh.
// LOCAL-LABEL: func.func @tied_head
// LOCAL: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
// LOCAL: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
func.func @tied_head(%h: tensor<4x8xf32>, %table: tensor<16x8xf32>, %dlogits: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<8x16xf32>
  %t = linalg.transpose ins(%table : tensor<16x8xf32>) outs(%et : tensor<8x16xf32>) permutation = [1, 0]
  %e1 = tensor.empty() : tensor<4x16xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %logits = linalg.matmul ins(%h, %t : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  // dh = dlogits x table = dlogits x t^T.
  %e2 = tensor.empty() : tensor<4x8xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %dh = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dlogits, %t : tensor<4x16xf32>, tensor<8x16xf32>) outs(%f2 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %logits, %dh : tensor<4x16xf32>, tensor<4x8xf32>
}

// The gradient of a transposed weight, dW^T = X^T dY, transposed back into
// W's layout (written through a permuted output map, as the differentiated
// code does): the contraction writes W's layout itself, into a fill of the
// transpose's init; the transpose is gone.
// CHECK-LABEL: func.func @transposed_gradient
// CHECK: %[[E:.*]] = tensor.empty() : tensor<16x8xf32>
// CHECK: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<16x8xf32>)
// CHECK: %[[DW:.*]] = linalg.generic {indexing_maps = [#[[XM:.*]], #[[DYM:.*]], #[[OUTM:.*]]], iterator_types = ["reduction", "parallel", "parallel"]} ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<4x16xf32>) outs(%[[F]] : tensor<16x8xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return %[[DW]]
// dW[j, i] = sum_k X[k, i] dY[k, j]: the output map is (k, i, j) -> (j, i).
// LOCAL-LABEL: func.func @transposed_gradient
// LOCAL: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>], iterator_types = ["reduction", "parallel", "parallel"]}
func.func @transposed_gradient(%x: tensor<4x8xf32>, %dy: tensor<4x16xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %dwt = linalg.generic {indexing_maps = [affine_map<(k, i, j) -> (k, i)>, affine_map<(k, i, j) -> (k, j)>, affine_map<(k, i, j) -> (i, j)>],
                         iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x, %dy : tensor<4x8xf32>, tensor<4x16xf32>) outs(%f : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %e2 = tensor.empty() : tensor<16x8xf32>
  %dw = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j, i)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%dwt : tensor<8x16xf32>) outs(%e2 : tensor<16x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<16x8xf32>
  return %dw : tensor<16x8xf32>
}

// A named matmul whose only user transposes its result: generalized, and
// the transpose becomes its output map.
// LOCAL-LABEL: func.func @named_transposed_result
// LOCAL: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d1, d0)>], iterator_types = ["parallel", "parallel", "reduction"]}
// LOCAL-SAME: outs(%{{.*}} : tensor<16x4xf32>)
// LOCAL-NOT: linalg.transpose
// LOCAL-NOT: linalg.generic
// LOCAL: return
func.func @named_transposed_result(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<16x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %et = tensor.empty() : tensor<16x4xf32>
  %t = linalg.transpose ins(%mm : tensor<4x16xf32>) outs(%et : tensor<16x4xf32>) permutation = [1, 0]
  return %t : tensor<16x4xf32>
}
