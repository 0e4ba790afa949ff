func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32> {pipe.reduce = "sum"}) {
  return %x, %x : tensor<4xf32>, tensor<4xf32>
}
