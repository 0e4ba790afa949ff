// A model function that calls itself.
func.func @model(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = func.call @model(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
