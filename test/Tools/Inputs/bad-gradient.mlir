// Models whose pipe.gradient does not fit their gradient function
// (pipeopt-compile-train.test).

// wrt lists two arguments, but @wrt2_grad takes no target and returns one
// gradient.
func.func @wrt2(%w: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32>
    attributes {pipe.gradient = #pipe.gradient<grad = @wrt2_grad, loss = mse,
                                 wrt = [0, 1]>} {
  return %w : tensor<4xf32>
}
func.func private @wrt2_grad(%w: tensor<4xf32>, %t: tensor<4xf32>)
    -> (tensor<f32>, tensor<4xf32>) {
  %l = arith.constant dense<0.0> : tensor<f32>
  return %l, %w : tensor<f32>, tensor<4xf32>
}

// No gradient function at all.
func.func @noloss(%w: tensor<4xf32>) -> tensor<4xf32>
    attributes {pipe.gradient = #pipe.gradient<loss = none, wrt = []>} {
  return %w : tensor<4xf32>
}
