// Frozen weights: a dense constant, a tosa.const and a splat.
func.func @f(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %t = "tosa.const"() {values = dense<[[0.5, 0.25, 0.125, 1.0],[1.0,1.0,2.0,3.0]]> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
  %z = arith.constant dense<0.0> : tensor<2x4xf32>
  %e = tensor.empty() : tensor<2x4xf32>
  %b = linalg.broadcast ins(%w : tensor<4xf32>) outs(%e : tensor<2x4xf32>) dimensions = [0]
  %m = arith.mulf %b, %x : tensor<2x4xf32>
  %a = arith.addf %m, %t : tensor<2x4xf32>
  %r = arith.addf %a, %z : tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}
