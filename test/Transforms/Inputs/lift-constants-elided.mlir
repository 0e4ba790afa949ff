func.func @model(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = arith.constant dense_resource<__elided__> : tensor<2xf32>
  %e = tensor.empty() : tensor<2xf32>
  %r = linalg.add ins(%x, %c : tensor<2xf32>, tensor<2xf32>) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}
