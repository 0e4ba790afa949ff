// RUN: pipeopt %s | pipeopt | FileCheck %s
// RUN: pipeopt %s --mlir-print-op-generic | pipeopt | FileCheck %s
// RUN: pipeopt %s --verify-roundtrip

// Round-trips every pipe op and attribute.

// CHECK-LABEL: func.func @mlp_stage0
// CHECK-SAME: pipe.stage = 0
func.func @mlp_stage0(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32>
    attributes {pipe.stage = 0 : i64} {
  %e = tensor.empty() {pipe.stage = 0 : i64} : tensor<4x8xf32>
  // CHECK: linalg.matmul
  // CHECK-SAME: pipe.cost = #pipe.cost<flops = 5.120000e+02, bytes = 4.000000e+02, time = 9.9999999999999995E-7>
  %y = linalg.matmul {pipe.stage = 0 : i64, pipe.cost = #pipe.cost<flops = 512.0, bytes = 400.0, time = 1.0e-6>}
      ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

func.func @mlp_stage1(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32>
    attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @mlp
// CHECK: %[[H:.*]] = pipe.stage_call @mlp_stage0(%{{.*}}, %{{.*}}) stage 0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: pipe.stage_call @mlp_stage1(%[[H]], %{{.*}}) stage 1
func.func @mlp(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %h = pipe.stage_call @mlp_stage0(%x, %w0) stage 0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %y = pipe.stage_call @mlp_stage1(%h, %w1) stage 1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// CHECK-LABEL: pipe.program @mlp_rank0 rank 0 of 2 microbatches 2 attributes {schedule = "gpipe"}
pipe.program @mlp_rank0 rank 0 of 2 microbatches 2 attributes {schedule = "gpipe"} {
  // CHECK: %[[X:.*]] = pipe.input 0 microbatch 1 : tensor<4x8xf32>
  %x = pipe.input 0 microbatch 1 : tensor<4x8xf32>
  %w = pipe.input 1 microbatch 1 : tensor<8x8xf32>
  // CHECK: %[[Y:.*]] = pipe.forward @mlp_stage0(%[[X]], %{{.*}}) stage 0 microbatch 1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %y = pipe.forward @mlp_stage0(%x, %w) stage 0 microbatch 1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  // CHECK: pipe.send %[[Y]] to 1 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4x8xf32>
  pipe.send %y to 1 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4x8xf32>
  // CHECK: %[[G:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 1, value 0> : tensor<4x8xf32>
  %g = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 1, value 0> : tensor<4x8xf32>
  // CHECK: pipe.backward input stage 0 microbatch 1 ins(%[[G]] : tensor<4x8xf32>) -> tensor<4x8xf32>
  %gx = pipe.backward input stage 0 microbatch 1 ins(%g : tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: pipe.backward weight stage 0 microbatch 1
  pipe.backward weight stage 0 microbatch 1
  // CHECK: %[[G0:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<4x8xf32>
  %g0 = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<4x8xf32>
  // CHECK: pipe.backward full stage 0 microbatch 0 ins(%[[G0]] : tensor<4x8xf32>)
  pipe.backward full stage 0 microbatch 0 ins(%g0 : tensor<4x8xf32>)
}

// CHECK-LABEL: pipe.program @mlp_rank1 rank 1 of 2 microbatches 2
pipe.program @mlp_rank1 rank 1 of 2 microbatches 2 {
  %x = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4x8xf32>
  %w = pipe.input 2 microbatch 0 : tensor<8x8xf32>
  %y = pipe.forward @mlp_stage1(%x, %w) stage 1 microbatch 0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  // CHECK: pipe.output %{{.*}} result 0 microbatch 0 : tensor<4x8xf32>
  pipe.output %y result 0 microbatch 0 : tensor<4x8xf32>
}

// A training step's results: averaged over microbatches and named.
// CHECK-LABEL: func.func @step
// CHECK-SAME: %{{.*}}: tensor<4xf32> {pipe.microbatched}
// CHECK-SAME: (tensor<f32> {pipe.output_name = "loss", pipe.reduce = "mean"}, tensor<4xf32> {pipe.output_name = "grad_0", pipe.reduce = "mean"})
func.func @step(%w: tensor<4xf32>, %t: tensor<4xf32> {pipe.microbatched})
    -> (tensor<f32> {pipe.output_name = "loss", pipe.reduce = "mean"},
        tensor<4xf32> {pipe.output_name = "grad_0", pipe.reduce = "mean"})
    attributes {pipe.stage = 0 : i64} {
  %l = tensor.empty() : tensor<f32>
  return %l, %w : tensor<f32>, tensor<4xf32>
}

// CHECK-LABEL: pipe.program @step_rank0 rank 0 of 1 microbatches 2
pipe.program @step_rank0 rank 0 of 1 microbatches 2 {
  %w = pipe.input 0 microbatch 0 : tensor<4xf32>
  %t0 = pipe.input 1 microbatch 0 : tensor<4xf32>
  %l0, %g0 = pipe.forward @step(%w, %t0) stage 0 microbatch 0 : (tensor<4xf32>, tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
  // CHECK: pipe.output %{{.*}} result 0 microbatch 0 reduce mean name "loss" : tensor<f32>
  pipe.output %l0 result 0 microbatch 0 reduce mean name "loss" : tensor<f32>
  // CHECK: pipe.output %{{.*}} result 1 microbatch 0 reduce mean : tensor<4xf32>
  pipe.output %g0 result 1 microbatch 0 reduce mean : tensor<4xf32>
  %t1 = pipe.input 1 microbatch 1 : tensor<4xf32>
  %l1, %g1 = pipe.forward @step(%w, %t1) stage 0 microbatch 1 : (tensor<4xf32>, tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
  pipe.output %l1 result 0 microbatch 1 reduce mean name "loss" : tensor<f32>
  pipe.output %g1 result 1 microbatch 1 reduce mean : tensor<4xf32>
  // CHECK: pipe.output %{{.*}} result 2 microbatch 1 name "w" : tensor<4xf32>
  pipe.output %w result 2 microbatch 1 name "w" : tensor<4xf32>
}
