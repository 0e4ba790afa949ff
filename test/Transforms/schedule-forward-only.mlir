// RUN: pipeopt %s --pipe-schedule="schedule=forward-only num-microbatches=3" --pipe-verify-schedule | FileCheck %s

// Inference: forwards and activation transfers only, GPipe order; no
// pipe.backward and no gradient transfer.

func.func @m_stage0(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<2x4xf32>
}
func.func @m_stage1(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<2x4xf32>
}
func.func @m(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4xf32> attributes {pipe.num_stages = 2 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %b = pipe.stage_call @m_stage1(%a, %w) stage 1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %b : tensor<2x4xf32>
}

// CHECK-NOT: pipe.backward
// CHECK-NOT: backward,
// CHECK-LABEL: pipe.program @m_rank0 rank 0 of 2 microbatches 3 attributes {schedule = "forward-only"} {
// CHECK-NEXT: %[[X0:.*]] = pipe.input 0 microbatch 0 : tensor<2x4xf32>
// CHECK-NEXT: %[[A0:.*]] = pipe.forward @m_stage0(%[[X0]]) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: pipe.send %[[A0]] to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// CHECK-NEXT: %[[X1:.*]] = pipe.input 0 microbatch 1 : tensor<2x4xf32>
// CHECK-NEXT: %[[A1:.*]] = pipe.forward @m_stage0(%[[X1]]) stage 0 microbatch 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: pipe.send %[[A1]] to 1 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<2x4xf32>
// CHECK-NEXT: %[[X2:.*]] = pipe.input 0 microbatch 2 : tensor<2x4xf32>
// CHECK-NEXT: %[[A2:.*]] = pipe.forward @m_stage0(%[[X2]]) stage 0 microbatch 2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: pipe.send %[[A2]] to 1 <forward, stage 0 -> 1, microbatch 2, value 0> : tensor<2x4xf32>
// CHECK-NEXT: }
// CHECK-LABEL: pipe.program @m_rank1 rank 1 of 2 microbatches 3 attributes {schedule = "forward-only"} {
// CHECK-NEXT: %[[A0:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// CHECK-NEXT: %[[W0:.*]] = pipe.input 1 microbatch 0 : tensor<4x4xf32>
// CHECK-NEXT: %[[Y0:.*]] = pipe.forward @m_stage1(%[[A0]], %[[W0]]) stage 1 microbatch 0
// CHECK-NEXT: pipe.output %[[Y0]] result 0 microbatch 0 : tensor<2x4xf32>
// CHECK-NEXT: %[[A1:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<2x4xf32>
// CHECK-NEXT: %[[W1:.*]] = pipe.input 1 microbatch 1 : tensor<4x4xf32>
// CHECK-NEXT: %[[Y1:.*]] = pipe.forward @m_stage1(%[[A1]], %[[W1]]) stage 1 microbatch 1
// CHECK-NEXT: pipe.output %[[Y1]] result 0 microbatch 1 : tensor<2x4xf32>
// CHECK-NEXT: %[[A2:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 2, value 0> : tensor<2x4xf32>
// CHECK-NEXT: %[[W2:.*]] = pipe.input 1 microbatch 2 : tensor<4x4xf32>
// CHECK-NEXT: %[[Y2:.*]] = pipe.forward @m_stage1(%[[A2]], %[[W2]]) stage 1 microbatch 2
// CHECK-NEXT: pipe.output %[[Y2]] result 0 microbatch 2 : tensor<2x4xf32>
// CHECK-NEXT: }
// CHECK-NOT: pipe.backward
