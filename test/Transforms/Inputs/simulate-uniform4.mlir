// A uniform 4-stage model in stage graph form (pipe-outline-stages output
// shape): every stage is one 16x64 * 64x64 f32 matmul with its own weight,
// so F, B, W, activations and weights are equal on every stage.

func.func @u_stage0(%x: tensor<16x64xf32>, %w0: tensor<64x64xf32>) -> tensor<16x64xf32> attributes {pipe.stage = 0 : i64} {
  %e = tensor.empty() : tensor<16x64xf32>
  %y = linalg.matmul ins(%x, %w0 : tensor<16x64xf32>, tensor<64x64xf32>) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
func.func @u_stage1(%w1: tensor<64x64xf32>, %x: tensor<16x64xf32>) -> tensor<16x64xf32> attributes {pipe.stage = 1 : i64} {
  %e = tensor.empty() : tensor<16x64xf32>
  %y = linalg.matmul ins(%x, %w1 : tensor<16x64xf32>, tensor<64x64xf32>) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
func.func @u_stage2(%w2: tensor<64x64xf32>, %x: tensor<16x64xf32>) -> tensor<16x64xf32> attributes {pipe.stage = 2 : i64} {
  %e = tensor.empty() : tensor<16x64xf32>
  %y = linalg.matmul ins(%x, %w2 : tensor<16x64xf32>, tensor<64x64xf32>) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
func.func @u_stage3(%w3: tensor<64x64xf32>, %x: tensor<16x64xf32>) -> tensor<16x64xf32> attributes {pipe.stage = 3 : i64} {
  %e = tensor.empty() : tensor<16x64xf32>
  %y = linalg.matmul ins(%x, %w3 : tensor<16x64xf32>, tensor<64x64xf32>) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
func.func @u(%x: tensor<16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x64xf32>, %w2: tensor<64x64xf32>, %w3: tensor<64x64xf32>) -> tensor<16x64xf32> attributes {pipe.num_stages = 4 : i64} {
  %a = pipe.stage_call @u_stage0(%x, %w0) stage 0 : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  %b = pipe.stage_call @u_stage1(%w1, %a) stage 1 : (tensor<64x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  %c = pipe.stage_call @u_stage2(%w2, %b) stage 2 : (tensor<64x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  %d = pipe.stage_call @u_stage3(%w3, %c) stage 3 : (tensor<64x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  return %d : tensor<16x64xf32>
}
