// training
// f(w, x) = x @ w: the model whose training step
// Inputs/linear-mse-grad.mlir writes by hand (with loss = mse).
func.func @f(%w: tensor<3x2xf32>, %x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x2xf32>)
                     outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}
