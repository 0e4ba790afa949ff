// RUN: pipeopt %s -convert-pipe-to-runtime="manifest=%t.json" -o /dev/null
// RUN: FileCheck %s < %t.json

// microbatch-args=auto: rank >= 2 with a leading 1 is per-microbatch data,
// except an argument a stage reads as a weight: the [1, K, N] right-hand
// side of tosa.matmul (argument 1) is shared; the activation (argument 0)
// and the [1, 1, N] bias (argument 2, an element-wise operand of rank 3)
// are per-microbatch.

// CHECK: "inputs": [
// CHECK:   "index": 0,
// CHECK:   "microbatched": true,
// CHECK:   "index": 1,
// CHECK:   "microbatched": false,
// CHECK:   "index": 2,
// CHECK:   "microbatched": true,

func.func @s0(%x: tensor<1x4x8xf32>, %w: tensor<1x8x8xf32>, %b: tensor<1x1x8xf32>) -> tensor<1x4x8xf32> attributes {pipe.stage = 0 : i64} {
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %x, %w, %z, %z : (tensor<1x4x8xf32>, tensor<1x8x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x8xf32>
  %1 = tosa.add %0, %b : (tensor<1x4x8xf32>, tensor<1x1x8xf32>) -> tensor<1x4x8xf32>
  return %1 : tensor<1x4x8xf32>
}
pipe.program @p rank 0 of 1 microbatches 2 {
  %w = pipe.input 1 microbatch 0 : tensor<1x8x8xf32>
  %x0 = pipe.input 0 microbatch 0 : tensor<1x4x8xf32>
  %b0 = pipe.input 2 microbatch 0 : tensor<1x1x8xf32>
  %y0 = pipe.forward @s0(%x0, %w, %b0) stage 0 microbatch 0 : (tensor<1x4x8xf32>, tensor<1x8x8xf32>, tensor<1x1x8xf32>) -> tensor<1x4x8xf32>
  pipe.output %y0 result 0 microbatch 0 : tensor<1x4x8xf32>
  %x1 = pipe.input 0 microbatch 1 : tensor<1x4x8xf32>
  %b1 = pipe.input 2 microbatch 1 : tensor<1x1x8xf32>
  %y1 = pipe.forward @s0(%x1, %w, %b1) stage 0 microbatch 1 : (tensor<1x4x8xf32>, tensor<1x8x8xf32>, tensor<1x1x8xf32>) -> tensor<1x4x8xf32>
  pipe.output %y1 result 0 microbatch 1 : tensor<1x4x8xf32>
}
