// Input of verify-schedule.mlir: 1F1B on 2 ranks, 2 microbatches, two
// values crossing stage 0 -> 1, written by hand without a stage graph
// function.

func.func @n_stage0(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<2xf32>) attributes {pipe.stage = 0 : i64} {
  %e = tensor.empty() : tensor<2xf32>
  return %x, %e : tensor<4xf32>, tensor<2xf32>
}
func.func @n_stage1(%x: tensor<4xf32>, %y: tensor<2xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}

pipe.program @n_rank0 rank 0 of 2 microbatches 2 {
  %x0 = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a0:2 = pipe.forward @n_stage0(%x0) stage 0 microbatch 0 : (tensor<4xf32>) -> (tensor<4xf32>, tensor<2xf32>)
  pipe.send %a0#0 to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  pipe.send %a0#1 to 1 <forward, stage 0 -> 1, microbatch 0, value 1> : tensor<2xf32>
  %x1 = pipe.input 0 microbatch 1 : tensor<4xf32>
  %a1:2 = pipe.forward @n_stage0(%x1) stage 0 microbatch 1 : (tensor<4xf32>) -> (tensor<4xf32>, tensor<2xf32>)
  pipe.send %a1#0 to 1 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4xf32>
  pipe.send %a1#1 to 1 <forward, stage 0 -> 1, microbatch 1, value 1> : tensor<2xf32>
  %g0 = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<4xf32>
  %h0 = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 0, value 1> : tensor<2xf32>
  pipe.backward full stage 0 microbatch 0 ins(%g0, %h0 : tensor<4xf32>, tensor<2xf32>)
  %g1 = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 1, value 0> : tensor<4xf32>
  %h1 = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 1, value 1> : tensor<2xf32>
  pipe.backward full stage 0 microbatch 1 ins(%g1, %h1 : tensor<4xf32>, tensor<2xf32>)
}

pipe.program @n_rank1 rank 1 of 2 microbatches 2 {
  %a0 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  %b0 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 1> : tensor<2xf32>
  %y0 = pipe.forward @n_stage1(%a0, %b0) stage 1 microbatch 0 : (tensor<4xf32>, tensor<2xf32>) -> tensor<4xf32>
  pipe.output %y0 result 0 microbatch 0 : tensor<4xf32>
  %a1 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4xf32>
  %b1 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 1, value 1> : tensor<2xf32>
  %g0:2 = pipe.backward full stage 1 microbatch 0 -> tensor<4xf32>, tensor<2xf32>
  pipe.send %g0#0 to 0 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<4xf32>
  pipe.send %g0#1 to 0 <backward, stage 1 -> 0, microbatch 0, value 1> : tensor<2xf32>
  %y1 = pipe.forward @n_stage1(%a1, %b1) stage 1 microbatch 1 : (tensor<4xf32>, tensor<2xf32>) -> tensor<4xf32>
  pipe.output %y1 result 0 microbatch 1 : tensor<4xf32>
  %g1:2 = pipe.backward full stage 1 microbatch 1 -> tensor<4xf32>, tensor<2xf32>
  pipe.send %g1#0 to 0 <backward, stage 1 -> 0, microbatch 1, value 0> : tensor<4xf32>
  pipe.send %g1#1 to 0 <backward, stage 1 -> 0, microbatch 1, value 1> : tensor<2xf32>
}
