// A batch-1 linear layer (heir_resnet_like_jax's head): the bias reaches the
// result through expand_shape 10 -> 1x10, a unit dimension in front, which
// is not the bias's dimension 0: the bias is a weight, x is the data.
#id = affine_map<(d0) -> (d0)>
func.func @f(%w: tensor<4x10xf32>, %b: tensor<10xf32>, %x: tensor<1x4xf32>) -> tensor<1x10xf32> {
  %c0 = arith.constant 0.0 : f32
  %one = arith.constant dense<1.0> : tensor<10xf32>
  %e = tensor.empty() : tensor<1x10xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x10xf32>) -> tensor<1x10xf32>
  %m = linalg.matmul ins(%x, %w : tensor<1x4xf32>, tensor<4x10xf32>) outs(%z : tensor<1x10xf32>) -> tensor<1x10xf32>
  %bs = arith.mulf %b, %one : tensor<10xf32>
  %be = tensor.expand_shape %bs [[0, 1]] output_shape [1, 10] : tensor<10xf32> into tensor<1x10xf32>
  %r = arith.addf %be, %m : tensor<1x10xf32>
  return %r : tensor<1x10xf32>
}
