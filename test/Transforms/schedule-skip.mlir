// RUN: pipeopt %s --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-verify-schedule | FileCheck %s

// A skip connection: stage 0 produces two values, one for stage 1 and one
// (%a#1) for stage 2. Stage 0 sends it directly to stage 2's rank; nothing
// is relayed through rank 1. Stage 1 -> 2 carries two values: value index =
// order of first use in @s (stage 2 uses %b#1 before %b#0). A value used
// twice by one stage is sent once. Gradients flow back along the same edges;
// the backward of stage 2 returns one gradient per incoming value (edge
// 0 -> 2 first, then 1 -> 2 value 0 and 1).

func.func @s_stage0(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x8xf32>) attributes {pipe.stage = 0 : i64} {
  %e = tensor.empty() : tensor<2x8xf32>
  return %x, %e : tensor<2x4xf32>, tensor<2x8xf32>
}
func.func @s_stage1(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = 1 : i64} {
  return %x, %x : tensor<2x4xf32>, tensor<2x4xf32>
}
func.func @s_stage2(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>, %skip: tensor<2x8xf32>, %again: tensor<2x8xf32>) -> tensor<2x4xf32> attributes {pipe.stage = 2 : i64} {
  return %a : tensor<2x4xf32>
}
func.func @s_stage3(%a: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = 3 : i64} {
  return %a : tensor<2x4xf32>
}
func.func @s(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.num_stages = 4 : i64} {
  %a:2 = pipe.stage_call @s_stage0(%x) stage 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x8xf32>)
  %b:2 = pipe.stage_call @s_stage1(%a#0) stage 1 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  %c = pipe.stage_call @s_stage2(%b#1, %b#0, %a#1, %a#1) stage 2 : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x4xf32>
  %d = pipe.stage_call @s_stage3(%c) stage 3 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}

// CHECK-LABEL: pipe.program @s_rank0 rank 0 of 4 microbatches 4
// CHECK: %[[X:.*]] = pipe.input 0 microbatch 0
// CHECK-NEXT: %[[F:.*]]:2 = pipe.forward @s_stage0(%[[X]]) stage 0 microbatch 0
// CHECK-NEXT: pipe.send %[[F]]#0 to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// CHECK-NEXT: pipe.send %[[F]]#1 to 2 <forward, stage 0 -> 2, microbatch 0, value 0> : tensor<2x8xf32>
// CHECK: %[[G2:.*]] = pipe.recv from 2 <backward, stage 2 -> 0, microbatch 0, value 0> : tensor<2x8xf32>
// CHECK-NEXT: %[[G1:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<2x4xf32>
// CHECK-NEXT: pipe.backward full stage 0 microbatch 0 ins(%[[G1]], %[[G2]] : tensor<2x4xf32>, tensor<2x8xf32>){{$}}

// CHECK-LABEL: pipe.program @s_rank1 rank 1 of 4 microbatches 4
// CHECK: %[[X:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// CHECK-NEXT: %[[F:.*]]:2 = pipe.forward @s_stage1(%[[X]]) stage 1 microbatch 0
// CHECK-NOT: pipe.program
// CHECK: pipe.send %[[F]]#1 to 2 <forward, stage 1 -> 2, microbatch 0, value 0> : tensor<2x4xf32>
// CHECK-NEXT: pipe.send %[[F]]#0 to 2 <forward, stage 1 -> 2, microbatch 0, value 1> : tensor<2x4xf32>
// CHECK-NOT: stage 0 -> 2
// CHECK: %[[G0:.*]] = pipe.recv from 2 <backward, stage 2 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// CHECK-NEXT: %[[G1:.*]] = pipe.recv from 2 <backward, stage 2 -> 1, microbatch 0, value 1> : tensor<2x4xf32>
// CHECK-NEXT: %[[GX:.*]] = pipe.backward full stage 1 microbatch 0 ins(%[[G0]], %[[G1]] : tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: pipe.send %[[GX]] to 0 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<2x4xf32>

// CHECK-LABEL: pipe.program @s_rank2 rank 2 of 4 microbatches 4
// CHECK-DAG: %[[SKIP:.*]] = pipe.recv from 0 <forward, stage 0 -> 2, microbatch 0, value 0> : tensor<2x8xf32>
// CHECK-DAG: %[[B1:.*]] = pipe.recv from 1 <forward, stage 1 -> 2, microbatch 0, value 0> : tensor<2x4xf32>
// CHECK-DAG: %[[B0:.*]] = pipe.recv from 1 <forward, stage 1 -> 2, microbatch 0, value 1> : tensor<2x4xf32>
// CHECK: pipe.forward @s_stage2(%[[B1]], %[[B0]], %[[SKIP]], %[[SKIP]]) stage 2 microbatch 0
// CHECK: %[[GB:.*]]:3 = pipe.backward full stage 2 microbatch 0 ins(%{{.*}} : tensor<2x4xf32>) -> tensor<2x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>
// CHECK-NEXT: pipe.send %[[GB]]#0 to 0 <backward, stage 2 -> 0, microbatch 0, value 0> : tensor<2x8xf32>
// CHECK-NEXT: pipe.send %[[GB]]#1 to 1 <backward, stage 2 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// CHECK-NEXT: pipe.send %[[GB]]#2 to 1 <backward, stage 2 -> 1, microbatch 0, value 1> : tensor<2x4xf32>

// CHECK-LABEL: pipe.program @s_rank3 rank 3 of 4 microbatches 4
// CHECK-NOT: stage 0 -> 2
// CHECK: pipe.output
