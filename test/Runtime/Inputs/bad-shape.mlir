// Rank 0 sends a tensor<4x16xf32> that rank 1 expects as tensor<4x8xf32>:
// both programs compile, the runtime must reject the message at rank 1.

func.func @s0(%x: tensor<4x16xf32>) -> tensor<4x16xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4x16xf32>
}

func.func @s1(%h: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {pipe.stage = 1 : i64} {
  return %h : tensor<4x8xf32>
}

pipe.program @bad_rank0 rank 0 of 2 microbatches 2 attributes {schedule = "forward-only"} {
  %x0 = pipe.input 0 microbatch 0 : tensor<4x16xf32>
  %h0 = pipe.forward @s0(%x0) stage 0 microbatch 0 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  pipe.send %h0 to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4x16xf32>
  %x1 = pipe.input 0 microbatch 1 : tensor<4x16xf32>
  %h1 = pipe.forward @s0(%x1) stage 0 microbatch 1 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  pipe.send %h1 to 1 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4x16xf32>
}

pipe.program @bad_rank1 rank 1 of 2 microbatches 2 attributes {schedule = "forward-only"} {
  %h0 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4x8xf32>
  %y0 = pipe.forward @s1(%h0) stage 1 microbatch 0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.output %y0 result 0 microbatch 0 : tensor<4x8xf32>
  %h1 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4x8xf32>
  %y1 = pipe.forward @s1(%h1) stage 1 microbatch 1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.output %y1 result 0 microbatch 1 : tensor<4x8xf32>
}
