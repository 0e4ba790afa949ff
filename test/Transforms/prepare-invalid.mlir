// RUN: pipeopt %s -split-input-file -pipe-prepare -verify-diagnostics

func.func private @external(tensor<4xf32>) -> tensor<4xf32>
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot inline call to @external: the callee has no body, so its cost and stage cannot be determined (add its definition to the module)}}
  %a = call @external(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

func.func @rec(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot inline recursive call to @rec}}
  %a = call @rec(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}
