// zb-auto (docs/Schedules.md): the zero-bubble paper's automatic scheduler.
// These stage functions have no costed ops, so the times are unit times.
// RUN: pipeopt %s --pipe-schedule="schedule=zb-auto num-microbatches=4 print-grid" -o /dev/null | FileCheck %s --check-prefix=DEF
// RUN: pipeopt %s --pipe-schedule="schedule=zb-auto num-microbatches=4 memory-limit=1 print-grid" -o /dev/null | FileCheck %s --check-prefix=ONE
// RUN: pipeopt %s --pipe-schedule="schedule=zb-auto num-microbatches=4 memory-limit=8 comm-time=0.5" --pipe-verify-schedule -o - | FileCheck %s --check-prefix=PROG

// Limit S = 4: 3M + S - 1 = 15 slots, zb-h1's makespan.
// DEF: zb-auto: 4 ranks, 4 stages, 4 microbatches, 15 unit-time slots

// Limit 1: every rank holds one activation at a time, so each microbatch
// goes down and back up alone: 33 slots.
// ONE:      zb-auto: 4 ranks, 4 stages, 4 microbatches, 33 unit-time slots
// ONE-NEXT: rank 0 | F0 .  .  .  .  .  .  B0 F1 W0 .  .  .  .  .  B1 F2 W1 .  .  .  .  .  B2 F3 W2 .  .  .  .  .  B3 W3

// PROG: pipe.program @m_rank0 rank 0 of 4 microbatches 4 attributes {schedule = "zb-auto"}
// PROG: pipe.backward weight stage 0 microbatch 3
// PROG: pipe.program @m_rank3 rank 3 of 4

func.func @m_stage0(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<2x4xf32>
}
func.func @m_stage1(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<2x4xf32>
}
func.func @m_stage2(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = 2 : i64} {
  return %x : tensor<2x4xf32>
}
func.func @m_stage3(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = 3 : i64} {
  return %x : tensor<2x4xf32>
}
func.func @m(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.num_stages = 4 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c = pipe.stage_call @m_stage2(%b) stage 2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %d = pipe.stage_call @m_stage3(%c) stage 3 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}
