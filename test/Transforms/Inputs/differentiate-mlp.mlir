// A two-layer MLP: x [4, 3] (data), w1 [3, 5], b1 [5], ids [4] (unused
// integer argument), returns tanh(x w1 + b1) [4, 5].
func.func @mlp(%x: tensor<4x3xf32>, %w: tensor<3x5xf32>, %b: tensor<5xf32>, %ids: tensor<4xi64>) -> tensor<4x5xf32> {
  %e = tensor.empty() : tensor<4x5xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x5xf32>) -> tensor<4x5xf32>
  %m = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x5xf32>) outs(%f : tensor<4x5xf32>) -> tensor<4x5xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%m, %b : tensor<4x5xf32>, tensor<5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %t = math.tanh %s : f32
    linalg.yield %t : f32
  } -> tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}
