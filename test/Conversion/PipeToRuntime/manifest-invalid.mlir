// RUN: pipeopt %s -convert-pipe-to-runtime="manifest=%t.missing-dir/m.json" -verify-diagnostics

// The manifest's directory does not exist: an error at the module, after
// the lowering.

// expected-error @+1 {{cannot write manifest '}}
module {
  func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
    return %x : tensor<4xf32>
  }
  pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
    %x = pipe.input 0 microbatch 0 : tensor<4xf32>
    %y = pipe.forward @s0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
    pipe.output %y result 0 microbatch 0 : tensor<4xf32>
  }
}
