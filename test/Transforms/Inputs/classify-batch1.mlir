// A model for the data-vs-parameter classification (cost::classifyArguments)
// of pipe-differentiate and convert-pipe-to-runtime.

// Batch 1 in TOSA's rank-3 form: every leading dimension is 1. x feeds the
// matmul's left-hand side (data); w is its right-hand side; the bias b and
// the scale g ([1, 1, 8]) are broadcast along the 4 rows of a computed
// value at the unit batch loop: parameters.
func.func @batch1(%x: tensor<1x4x8xf32>, %w: tensor<1x8x8xf32>, %b: tensor<1x1x8xf32>, %g: tensor<1x1x8xf32>) -> tensor<1x4x8xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %sh = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %m = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x8xf32>
  %a = tosa.add %m, %b : (tensor<1x4x8xf32>, tensor<1x1x8xf32>) -> tensor<1x4x8xf32>
  %s = tosa.mul %a, %g, %sh : (tensor<1x4x8xf32>, tensor<1x1x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %r = tosa.clamp %s {min_val = 0.0 : f32, max_val = 3.4e38 : f32} : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %r : tensor<1x4x8xf32>
}
