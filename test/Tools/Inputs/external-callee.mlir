// A model that calls a function without a body.
func.func private @custom_op(tensor<4xf32>) -> tensor<4xf32>
func.func @model(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = func.call @custom_op(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
