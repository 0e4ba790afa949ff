// A two-stage MLP scheduled by hand (GPipe-like, forward only) over two
// ranks and 4 microbatches: stage 0 = relu(x * w0) on rank 0, stage 1 =
// h * w1 on rank 1. @mlp is the stage graph; @mlp_ref the unpartitioned
// model used as the reference (pipeopt-compile --reference --function
// mlp_ref).

#id = affine_map<(d0, d1) -> (d0, d1)>

func.func @mlp_stage0(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>) -> tensor<4x8xf32>
    attributes {pipe.stage = 0 : i64} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = linalg.matmul ins(%x, %w : tensor<4x16xf32>, tensor<16x8xf32>)
                     outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = arith.maximumf %in, %zero : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

func.func @mlp_stage1(%h: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32>
    attributes {pipe.stage = 1 : i64} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = linalg.matmul ins(%h, %w : tensor<4x8xf32>, tensor<8x8xf32>)
                     outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %m : tensor<4x8xf32>
}

func.func @mlp(%x: tensor<4x16xf32>, %w0: tensor<16x8xf32>, %w1: tensor<8x8xf32>) -> tensor<4x8xf32>
    attributes {pipe.num_stages = 2 : i64} {
  %h = pipe.stage_call @mlp_stage0(%x, %w0) stage 0 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %y = pipe.stage_call @mlp_stage1(%h, %w1) stage 1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

func.func @mlp_ref(%x: tensor<4x16xf32>, %w0: tensor<16x8xf32>, %w1: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %h = func.call @mlp_stage0(%x, %w0) : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %y = func.call @mlp_stage1(%h, %w1) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

pipe.program @mlp_rank0 rank 0 of 2 microbatches 4 attributes {schedule = "gpipe"} {
  %x0 = pipe.input 0 microbatch 0 : tensor<4x16xf32>
  %w0 = pipe.input 1 microbatch 0 : tensor<16x8xf32>
  %h0 = pipe.forward @mlp_stage0(%x0, %w0) stage 0 microbatch 0 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  pipe.send %h0 to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4x8xf32>
  %x1 = pipe.input 0 microbatch 1 : tensor<4x16xf32>
  %w1 = pipe.input 1 microbatch 1 : tensor<16x8xf32>
  %h1 = pipe.forward @mlp_stage0(%x1, %w1) stage 0 microbatch 1 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  pipe.send %h1 to 1 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4x8xf32>
  %x2 = pipe.input 0 microbatch 2 : tensor<4x16xf32>
  %w2 = pipe.input 1 microbatch 2 : tensor<16x8xf32>
  %h2 = pipe.forward @mlp_stage0(%x2, %w2) stage 0 microbatch 2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  pipe.send %h2 to 1 <forward, stage 0 -> 1, microbatch 2, value 0> : tensor<4x8xf32>
  %x3 = pipe.input 0 microbatch 3 : tensor<4x16xf32>
  %w3 = pipe.input 1 microbatch 3 : tensor<16x8xf32>
  %h3 = pipe.forward @mlp_stage0(%x3, %w3) stage 0 microbatch 3 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  pipe.send %h3 to 1 <forward, stage 0 -> 1, microbatch 3, value 0> : tensor<4x8xf32>
}

pipe.program @mlp_rank1 rank 1 of 2 microbatches 4 attributes {schedule = "gpipe"} {
  %w = pipe.input 2 microbatch 0 : tensor<8x8xf32>
  %h0 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4x8xf32>
  %y0 = pipe.forward @mlp_stage1(%h0, %w) stage 1 microbatch 0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  pipe.output %y0 result 0 microbatch 0 : tensor<4x8xf32>
  %h1 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4x8xf32>
  %y1 = pipe.forward @mlp_stage1(%h1, %w) stage 1 microbatch 1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  pipe.output %y1 result 0 microbatch 1 : tensor<4x8xf32>
  %h2 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 2, value 0> : tensor<4x8xf32>
  %y2 = pipe.forward @mlp_stage1(%h2, %w) stage 1 microbatch 2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  pipe.output %y2 result 0 microbatch 2 : tensor<4x8xf32>
  %h3 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 3, value 0> : tensor<4x8xf32>
  %y3 = pipe.forward @mlp_stage1(%h3, %w) stage 1 microbatch 3 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  pipe.output %y3 result 0 microbatch 3 : tensor<4x8xf32>
}
