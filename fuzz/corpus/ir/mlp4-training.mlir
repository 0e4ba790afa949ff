// training
// A 4-layer MLP (batch 8, 64->128->128->128->16) in TOSA 1.0, weights as arguments.
// Written for pipeopt's demo; small enough to compile and run on a CPU in seconds.
func.func @mlp4(%x: tensor<1x8x64xf32>, %w0: tensor<1x64x128xf32>, %b0: tensor<1x1x128xf32>, %w1: tensor<1x128x128xf32>, %b1: tensor<1x1x128xf32>, %w2: tensor<1x128x128xf32>, %b2: tensor<1x1x128xf32>, %w3: tensor<1x128x16xf32>, %b3: tensor<1x1x16xf32>) -> tensor<1x8x16xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %m0 = tosa.matmul %x, %w0, %zp, %zp : (tensor<1x8x64xf32>, tensor<1x64x128xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x128xf32>
  %a0 = tosa.add %m0, %b0 : (tensor<1x8x128xf32>, tensor<1x1x128xf32>) -> tensor<1x8x128xf32>
  %r0 = tosa.clamp %a0 {min_val = 0.0 : f32, max_val = 3.4e38 : f32} : (tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
  %m1 = tosa.matmul %r0, %w1, %zp, %zp : (tensor<1x8x128xf32>, tensor<1x128x128xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x128xf32>
  %a1 = tosa.add %m1, %b1 : (tensor<1x8x128xf32>, tensor<1x1x128xf32>) -> tensor<1x8x128xf32>
  %r1 = tosa.clamp %a1 {min_val = 0.0 : f32, max_val = 3.4e38 : f32} : (tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
  %m2 = tosa.matmul %r1, %w2, %zp, %zp : (tensor<1x8x128xf32>, tensor<1x128x128xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x128xf32>
  %a2 = tosa.add %m2, %b2 : (tensor<1x8x128xf32>, tensor<1x1x128xf32>) -> tensor<1x8x128xf32>
  %r2 = tosa.clamp %a2 {min_val = 0.0 : f32, max_val = 3.4e38 : f32} : (tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
  %m3 = tosa.matmul %r2, %w3, %zp, %zp : (tensor<1x8x128xf32>, tensor<1x128x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x16xf32>
  %a3 = tosa.add %m3, %b3 : (tensor<1x8x16xf32>, tensor<1x1x16xf32>) -> tensor<1x8x16xf32>
  return %a3 : tensor<1x8x16xf32>
}
