// RUN: pipeopt %s -split-input-file -pipe-differentiate=loss=mse -verify-diagnostics

// An integer result has no loss.
// expected-error @+1 {{pipe-differentiate: result 0 of type 'tensor<4xi32>' has no loss: expected a floating-point tensor of static shape}}
func.func @int_result(%x: tensor<4xf32>) -> tensor<4xi32> {
  %e = tensor.empty() : tensor<4xi32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xi32>) {
  ^bb0(%a: f32, %o: i32):
    %t = arith.fptosi %a : f32 to i32
    linalg.yield %t : i32
  } -> tensor<4xi32>
  return %r : tensor<4xi32>
}

// -----

// No result at all.
// expected-error @+1 {{pipe-differentiate: the model has no result to take a loss of}}
func.func @no_result(%x: tensor<4xf32>) {
  return
}
