// A model for the data-vs-parameter classification (cost::classifyArguments)
// of pipe-differentiate and convert-pipe-to-runtime.

// Batch 4: a [1, 8] bias broadcast along the batch dimension (map (0, j))
// does not reach it: a parameter; x is data.
#bcast = affine_map<(d0, d1) -> (0, d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @batch4(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>, %b: tensor<1x8xf32>) -> tensor<4x8xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = linalg.matmul ins(%x, %w : tensor<4x16xf32>, tensor<16x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id2, #bcast, #id2], iterator_types = ["parallel", "parallel"]} ins(%m, %b : tensor<4x8xf32>, tensor<1x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
