// Every generated schedule passes pipe-verify-schedule (4 stages, a skip
// connection 0 -> 2, 4 microbatches).
// RUN: pipeopt %s --pipe-schedule="schedule=gpipe num-microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefix=R4
// RUN: pipeopt %s --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefix=R4
// RUN: pipeopt %s --pipe-schedule="schedule=zb-h1 num-microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefix=R4
// RUN: pipeopt %s --pipe-schedule="schedule=chimera num-microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefix=R4
// RUN: pipeopt %s --pipe-schedule="schedule=pipedream num-microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefix=R4
// RUN: pipeopt %s --pipe-schedule="schedule=pipedream-2bw num-microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefix=R4
// RUN: pipeopt %s --pipe-schedule="schedule=forward-only num-microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefix=R4
// RUN: pipeopt %s --pipe-schedule="schedule=interleaved-1f1b virtual-stages=2 num-microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefix=R2
// RUN: pipeopt %s --pipe-schedule="schedule=looped-bfs virtual-stages=2 num-microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefix=R2
// RUN: pipeopt %s --pipe-schedule="schedule=hanayo num-microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefix=R2
// RUN: pipeopt %s --pipe-schedule="schedule=dualpipev num-microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefix=R2
// RUN: pipeopt %s --pipe-schedule="schedule=zb-v num-microbatches=2" --pipe-verify-schedule | FileCheck %s --check-prefix=ZBV
//
// Hand-written programs with no stage graph function (the graph is then the
// chain plus the edges named by tags) are accepted and left unchanged.
// RUN: pipeopt %S/Inputs/verify-schedule-programs.mlir --pipe-verify-schedule | FileCheck %s --check-prefix=HAND

// R4-COUNT-4: pipe.program @m_rank{{[0-3]}} rank {{[0-3]}} of 4 microbatches
// R4-NOT: pipe.program
// R2-COUNT-2: pipe.program @m_rank{{[01]}} rank {{[01]}} of 2 microbatches
// R2-NOT: pipe.program

// HAND-LABEL: pipe.program @n_rank0 rank 0 of 2 microbatches 2
// HAND-COUNT-4: pipe.send
// HAND-LABEL: pipe.program @n_rank1 rank 1 of 2 microbatches 2
// HAND-COUNT-4: pipe.send

// ZB-V (2 ranks) places stages 1 and 2 on rank 1: the forward of stage 2 takes the
// result of the forward of stage 1 directly, and the input-gradient backward
// of stage 1 takes the result of stage 2's, with no transfer in between.
// ZBV-LABEL: pipe.program @m_rank1 rank 1 of 2 microbatches 2
// ZBV: %[[A:.*]] = pipe.forward @m_stage1(%{{.*}}) stage 1 microbatch 0
// ZBV: pipe.forward @m_stage2(%[[A]], %{{.*}}) stage 2 microbatch 0
// ZBV: %[[G:.*]]:2 = pipe.backward input stage 2 microbatch 0
// ZBV-NOT: pipe.recv {{.*}}stage 2 -> 1
// ZBV: pipe.backward input stage 1 microbatch 0 ins(%[[G]]#1 : tensor<2x4xf32>) -> tensor<2x4xf32>

func.func @m_stage0(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<2x4xf32>
}
func.func @m_stage1(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<2x4xf32>
}
func.func @m_stage2(%x: tensor<2x4xf32>, %skip: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = 2 : i64} {
  return %x : tensor<2x4xf32>
}
func.func @m_stage3(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = 3 : i64} {
  return %x : tensor<2x4xf32>
}
func.func @m(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.num_stages = 4 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c = pipe.stage_call @m_stage2(%b, %a) stage 2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %d = pipe.stage_call @m_stage3(%c) stage 3 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}
