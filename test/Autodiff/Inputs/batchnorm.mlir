// A batch normalization with its statistics as arguments: y = (x - mean) *
// rsqrt(var + eps) * scale. Random inputs in [-0.5, 0.5) would give a
// negative variance and a NaN loss; pipeopt-gradcheck draws `var` from
// [0.5, 1.5) because it reaches the rsqrt.
func.func @bn(%x: tensor<4x3xf32>, %mean: tensor<3xf32>, %var: tensor<3xf32>, %scale: tensor<3xf32>) -> tensor<4x3xf32> {
  %e = tensor.empty() : tensor<4x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mean, %var, %scale : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%a: f32, %m: f32, %v: f32, %s: f32, %o: f32):
    %eps = arith.constant 1.0e-5 : f32
    %d = arith.subf %a, %m : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    %n = arith.mulf %d, %r : f32
    %y = arith.mulf %n, %s : f32
    linalg.yield %y : f32
  } -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}
