// A model returning one value twice.
func.func @dr(%x: tensor<1x64xf32>) -> (tensor<1x64xf32>, tensor<1x64xf32>) {
  %0 = tosa.tanh %x : (tensor<1x64xf32>) -> tensor<1x64xf32>
  return %0, %0 : tensor<1x64xf32>, tensor<1x64xf32>
}
