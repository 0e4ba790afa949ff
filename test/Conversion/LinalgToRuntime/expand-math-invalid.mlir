// RUN: pipeopt %s -split-input-file -pipeopt-expand-math -verify-diagnostics

func.func @tensor_erf(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'math.erf' on a tensor: lower it to linalg first (convert-elementwise-to-linalg; pipeopt-lower-to-llvm does)}}
  %y = math.erf %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
