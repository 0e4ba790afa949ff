// Rank 0 computes but never sends; rank 1 waits for a message that never
// comes. The runtime must turn this into an error (peer gone or timeout)
// instead of hanging.

func.func @s0(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4x8xf32>
}

func.func @s1(%h: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {pipe.stage = 1 : i64} {
  return %h : tensor<4x8xf32>
}

pipe.program @mute_rank0 rank 0 of 2 microbatches 1 attributes {schedule = "forward-only"} {
  %x = pipe.input 0 microbatch 0 : tensor<4x8xf32>
  %h = pipe.forward @s0(%x) stage 0 microbatch 0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
}

pipe.program @mute_rank1 rank 1 of 2 microbatches 1 attributes {schedule = "forward-only"} {
  %h = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4x8xf32>
  %y = pipe.forward @s1(%h) stage 1 microbatch 0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  pipe.output %y result 0 microbatch 0 : tensor<4x8xf32>
}
