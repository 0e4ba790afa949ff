// RUN: pipeopt %s --pipe-schedule="schedule=gpipe num-microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefixes=CHECK,GPIPE
// RUN: pipeopt %s --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefixes=CHECK,ONEF
// RUN: pipeopt %s --pipe-schedule="schedule=interleaved-1f1b virtual-stages=2 num-microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefixes=CHECK,INTER

// Exact per-rank action order of GPipe, 1F1B and interleaved 1F1B on a
// 4-stage chain, 4 microbatches. Stage k consumes the activation of stage
// k - 1; stage 0 reads model argument 0, stage 3 also reads the weight
// (argument 1); stage 3's result is the model result.
//
// GPipe: all forwards, then all backwards (microbatch order).
// 1F1B: rank r runs S-1-r warm-up forwards, then alternates F and BW.
// Interleaved (2 ranks, 2 chunks each: rank 0 holds stages 0 and 2, rank 1
// holds 1 and 3): every hop crosses ranks.

// The stage graph and the stage functions are kept.
// CHECK-LABEL: func.func @m(
// CHECK: pipe.stage_call @m_stage0
// CHECK: pipe.stage_call @m_stage3

func.func @m_stage0(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<2x4xf32>
}
func.func @m_stage1(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<2x4xf32>
}
func.func @m_stage2(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = 2 : i64} {
  return %x : tensor<2x4xf32>
}
func.func @m_stage3(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = 3 : i64} {
  return %x : tensor<2x4xf32>
}
func.func @m(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4xf32> attributes {pipe.num_stages = 4 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c = pipe.stage_call @m_stage2(%b) stage 2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %d = pipe.stage_call @m_stage3(%c, %w) stage 3 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}

// GPipe ------------------------------------------------------------------
// GPIPE-LABEL: pipe.program @m_rank0 rank 0 of 4 microbatches 4 attributes {schedule = "gpipe"} {
// GPIPE-NEXT: %[[G0_0:.*]] = pipe.input 0 microbatch 0 : tensor<2x4xf32>
// GPIPE-NEXT: %[[G0_1:.*]] = pipe.forward @m_stage0(%[[G0_0]]) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G0_1]] to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G0_2:.*]] = pipe.input 0 microbatch 1 : tensor<2x4xf32>
// GPIPE-NEXT: %[[G0_3:.*]] = pipe.forward @m_stage0(%[[G0_2]]) stage 0 microbatch 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G0_3]] to 1 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G0_4:.*]] = pipe.input 0 microbatch 2 : tensor<2x4xf32>
// GPIPE-NEXT: %[[G0_5:.*]] = pipe.forward @m_stage0(%[[G0_4]]) stage 0 microbatch 2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G0_5]] to 1 <forward, stage 0 -> 1, microbatch 2, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G0_6:.*]] = pipe.input 0 microbatch 3 : tensor<2x4xf32>
// GPIPE-NEXT: %[[G0_7:.*]] = pipe.forward @m_stage0(%[[G0_6]]) stage 0 microbatch 3 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G0_7]] to 1 <forward, stage 0 -> 1, microbatch 3, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G0_8:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: pipe.backward full stage 0 microbatch 0 ins(%[[G0_8]] : tensor<2x4xf32>)
// GPIPE-NEXT: %[[G0_9:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 1, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: pipe.backward full stage 0 microbatch 1 ins(%[[G0_9]] : tensor<2x4xf32>)
// GPIPE-NEXT: %[[G0_10:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 2, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: pipe.backward full stage 0 microbatch 2 ins(%[[G0_10]] : tensor<2x4xf32>)
// GPIPE-NEXT: %[[G0_11:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 3, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: pipe.backward full stage 0 microbatch 3 ins(%[[G0_11]] : tensor<2x4xf32>)
// GPIPE-NEXT: }
// GPIPE-LABEL: pipe.program @m_rank1 rank 1 of 4 microbatches 4 attributes {schedule = "gpipe"} {
// GPIPE-NEXT: %[[G1_0:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G1_1:.*]] = pipe.forward @m_stage1(%[[G1_0]]) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G1_1]] to 2 <forward, stage 1 -> 2, microbatch 0, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G1_2:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G1_3:.*]] = pipe.forward @m_stage1(%[[G1_2]]) stage 1 microbatch 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G1_3]] to 2 <forward, stage 1 -> 2, microbatch 1, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G1_4:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 2, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G1_5:.*]] = pipe.forward @m_stage1(%[[G1_4]]) stage 1 microbatch 2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G1_5]] to 2 <forward, stage 1 -> 2, microbatch 2, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G1_6:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 3, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G1_7:.*]] = pipe.forward @m_stage1(%[[G1_6]]) stage 1 microbatch 3 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G1_7]] to 2 <forward, stage 1 -> 2, microbatch 3, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G1_8:.*]] = pipe.recv from 2 <backward, stage 2 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G1_9:.*]] = pipe.backward full stage 1 microbatch 0 ins(%[[G1_8]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G1_9]] to 0 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G1_10:.*]] = pipe.recv from 2 <backward, stage 2 -> 1, microbatch 1, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G1_11:.*]] = pipe.backward full stage 1 microbatch 1 ins(%[[G1_10]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G1_11]] to 0 <backward, stage 1 -> 0, microbatch 1, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G1_12:.*]] = pipe.recv from 2 <backward, stage 2 -> 1, microbatch 2, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G1_13:.*]] = pipe.backward full stage 1 microbatch 2 ins(%[[G1_12]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G1_13]] to 0 <backward, stage 1 -> 0, microbatch 2, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G1_14:.*]] = pipe.recv from 2 <backward, stage 2 -> 1, microbatch 3, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G1_15:.*]] = pipe.backward full stage 1 microbatch 3 ins(%[[G1_14]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G1_15]] to 0 <backward, stage 1 -> 0, microbatch 3, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: }
// GPIPE-LABEL: pipe.program @m_rank2 rank 2 of 4 microbatches 4 attributes {schedule = "gpipe"} {
// GPIPE-NEXT: %[[G2_0:.*]] = pipe.recv from 1 <forward, stage 1 -> 2, microbatch 0, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G2_1:.*]] = pipe.forward @m_stage2(%[[G2_0]]) stage 2 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G2_1]] to 3 <forward, stage 2 -> 3, microbatch 0, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G2_2:.*]] = pipe.recv from 1 <forward, stage 1 -> 2, microbatch 1, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G2_3:.*]] = pipe.forward @m_stage2(%[[G2_2]]) stage 2 microbatch 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G2_3]] to 3 <forward, stage 2 -> 3, microbatch 1, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G2_4:.*]] = pipe.recv from 1 <forward, stage 1 -> 2, microbatch 2, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G2_5:.*]] = pipe.forward @m_stage2(%[[G2_4]]) stage 2 microbatch 2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G2_5]] to 3 <forward, stage 2 -> 3, microbatch 2, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G2_6:.*]] = pipe.recv from 1 <forward, stage 1 -> 2, microbatch 3, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G2_7:.*]] = pipe.forward @m_stage2(%[[G2_6]]) stage 2 microbatch 3 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G2_7]] to 3 <forward, stage 2 -> 3, microbatch 3, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G2_8:.*]] = pipe.recv from 3 <backward, stage 3 -> 2, microbatch 0, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G2_9:.*]] = pipe.backward full stage 2 microbatch 0 ins(%[[G2_8]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G2_9]] to 1 <backward, stage 2 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G2_10:.*]] = pipe.recv from 3 <backward, stage 3 -> 2, microbatch 1, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G2_11:.*]] = pipe.backward full stage 2 microbatch 1 ins(%[[G2_10]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G2_11]] to 1 <backward, stage 2 -> 1, microbatch 1, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G2_12:.*]] = pipe.recv from 3 <backward, stage 3 -> 2, microbatch 2, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G2_13:.*]] = pipe.backward full stage 2 microbatch 2 ins(%[[G2_12]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G2_13]] to 1 <backward, stage 2 -> 1, microbatch 2, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G2_14:.*]] = pipe.recv from 3 <backward, stage 3 -> 2, microbatch 3, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G2_15:.*]] = pipe.backward full stage 2 microbatch 3 ins(%[[G2_14]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G2_15]] to 1 <backward, stage 2 -> 1, microbatch 3, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: }
// GPIPE-LABEL: pipe.program @m_rank3 rank 3 of 4 microbatches 4 attributes {schedule = "gpipe"} {
// GPIPE-NEXT: %[[G3_0:.*]] = pipe.recv from 2 <forward, stage 2 -> 3, microbatch 0, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G3_1:.*]] = pipe.input 1 microbatch 0 : tensor<4x4xf32>
// GPIPE-NEXT: %[[G3_2:.*]] = pipe.forward @m_stage3(%[[G3_0]], %[[G3_1]]) stage 3 microbatch 0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.output %[[G3_2]] result 0 microbatch 0 : tensor<2x4xf32>
// GPIPE-NEXT: %[[G3_3:.*]] = pipe.recv from 2 <forward, stage 2 -> 3, microbatch 1, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G3_4:.*]] = pipe.input 1 microbatch 1 : tensor<4x4xf32>
// GPIPE-NEXT: %[[G3_5:.*]] = pipe.forward @m_stage3(%[[G3_3]], %[[G3_4]]) stage 3 microbatch 1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.output %[[G3_5]] result 0 microbatch 1 : tensor<2x4xf32>
// GPIPE-NEXT: %[[G3_6:.*]] = pipe.recv from 2 <forward, stage 2 -> 3, microbatch 2, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G3_7:.*]] = pipe.input 1 microbatch 2 : tensor<4x4xf32>
// GPIPE-NEXT: %[[G3_8:.*]] = pipe.forward @m_stage3(%[[G3_6]], %[[G3_7]]) stage 3 microbatch 2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.output %[[G3_8]] result 0 microbatch 2 : tensor<2x4xf32>
// GPIPE-NEXT: %[[G3_9:.*]] = pipe.recv from 2 <forward, stage 2 -> 3, microbatch 3, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G3_10:.*]] = pipe.input 1 microbatch 3 : tensor<4x4xf32>
// GPIPE-NEXT: %[[G3_11:.*]] = pipe.forward @m_stage3(%[[G3_9]], %[[G3_10]]) stage 3 microbatch 3 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.output %[[G3_11]] result 0 microbatch 3 : tensor<2x4xf32>
// GPIPE-NEXT: %[[G3_12:.*]] = pipe.backward full stage 3 microbatch 0 -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G3_12]] to 2 <backward, stage 3 -> 2, microbatch 0, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G3_13:.*]] = pipe.backward full stage 3 microbatch 1 -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G3_13]] to 2 <backward, stage 3 -> 2, microbatch 1, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G3_14:.*]] = pipe.backward full stage 3 microbatch 2 -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G3_14]] to 2 <backward, stage 3 -> 2, microbatch 2, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: %[[G3_15:.*]] = pipe.backward full stage 3 microbatch 3 -> tensor<2x4xf32>
// GPIPE-NEXT: pipe.send %[[G3_15]] to 2 <backward, stage 3 -> 2, microbatch 3, value 0> : tensor<2x4xf32>
// GPIPE-NEXT: }

// 1F1B -------------------------------------------------------------------
// ONEF-LABEL: pipe.program @m_rank0 rank 0 of 4 microbatches 4 attributes {schedule = "1f1b"} {
// ONEF-NEXT: %[[O0_0:.*]] = pipe.input 0 microbatch 0 : tensor<2x4xf32>
// ONEF-NEXT: %[[O0_1:.*]] = pipe.forward @m_stage0(%[[O0_0]]) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O0_1]] to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O0_2:.*]] = pipe.input 0 microbatch 1 : tensor<2x4xf32>
// ONEF-NEXT: %[[O0_3:.*]] = pipe.forward @m_stage0(%[[O0_2]]) stage 0 microbatch 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O0_3]] to 1 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O0_4:.*]] = pipe.input 0 microbatch 2 : tensor<2x4xf32>
// ONEF-NEXT: %[[O0_5:.*]] = pipe.forward @m_stage0(%[[O0_4]]) stage 0 microbatch 2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O0_5]] to 1 <forward, stage 0 -> 1, microbatch 2, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O0_6:.*]] = pipe.input 0 microbatch 3 : tensor<2x4xf32>
// ONEF-NEXT: %[[O0_7:.*]] = pipe.forward @m_stage0(%[[O0_6]]) stage 0 microbatch 3 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O0_7]] to 1 <forward, stage 0 -> 1, microbatch 3, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O0_8:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<2x4xf32>
// ONEF-NEXT: pipe.backward full stage 0 microbatch 0 ins(%[[O0_8]] : tensor<2x4xf32>)
// ONEF-NEXT: %[[O0_9:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 1, value 0> : tensor<2x4xf32>
// ONEF-NEXT: pipe.backward full stage 0 microbatch 1 ins(%[[O0_9]] : tensor<2x4xf32>)
// ONEF-NEXT: %[[O0_10:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 2, value 0> : tensor<2x4xf32>
// ONEF-NEXT: pipe.backward full stage 0 microbatch 2 ins(%[[O0_10]] : tensor<2x4xf32>)
// ONEF-NEXT: %[[O0_11:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 3, value 0> : tensor<2x4xf32>
// ONEF-NEXT: pipe.backward full stage 0 microbatch 3 ins(%[[O0_11]] : tensor<2x4xf32>)
// ONEF-NEXT: }
// ONEF-LABEL: pipe.program @m_rank1 rank 1 of 4 microbatches 4 attributes {schedule = "1f1b"} {
// ONEF-NEXT: %[[O1_0:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O1_1:.*]] = pipe.forward @m_stage1(%[[O1_0]]) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O1_1]] to 2 <forward, stage 1 -> 2, microbatch 0, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O1_2:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O1_3:.*]] = pipe.forward @m_stage1(%[[O1_2]]) stage 1 microbatch 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O1_3]] to 2 <forward, stage 1 -> 2, microbatch 1, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O1_4:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 2, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O1_5:.*]] = pipe.forward @m_stage1(%[[O1_4]]) stage 1 microbatch 2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O1_5]] to 2 <forward, stage 1 -> 2, microbatch 2, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O1_6:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 3, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O1_7:.*]] = pipe.recv from 2 <backward, stage 2 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O1_8:.*]] = pipe.backward full stage 1 microbatch 0 ins(%[[O1_7]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O1_8]] to 0 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O1_9:.*]] = pipe.forward @m_stage1(%[[O1_6]]) stage 1 microbatch 3 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O1_9]] to 2 <forward, stage 1 -> 2, microbatch 3, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O1_10:.*]] = pipe.recv from 2 <backward, stage 2 -> 1, microbatch 1, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O1_11:.*]] = pipe.backward full stage 1 microbatch 1 ins(%[[O1_10]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O1_11]] to 0 <backward, stage 1 -> 0, microbatch 1, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O1_12:.*]] = pipe.recv from 2 <backward, stage 2 -> 1, microbatch 2, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O1_13:.*]] = pipe.backward full stage 1 microbatch 2 ins(%[[O1_12]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O1_13]] to 0 <backward, stage 1 -> 0, microbatch 2, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O1_14:.*]] = pipe.recv from 2 <backward, stage 2 -> 1, microbatch 3, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O1_15:.*]] = pipe.backward full stage 1 microbatch 3 ins(%[[O1_14]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O1_15]] to 0 <backward, stage 1 -> 0, microbatch 3, value 0> : tensor<2x4xf32>
// ONEF-NEXT: }
// ONEF-LABEL: pipe.program @m_rank2 rank 2 of 4 microbatches 4 attributes {schedule = "1f1b"} {
// ONEF-NEXT: %[[O2_0:.*]] = pipe.recv from 1 <forward, stage 1 -> 2, microbatch 0, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O2_1:.*]] = pipe.forward @m_stage2(%[[O2_0]]) stage 2 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O2_1]] to 3 <forward, stage 2 -> 3, microbatch 0, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O2_2:.*]] = pipe.recv from 1 <forward, stage 1 -> 2, microbatch 1, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O2_3:.*]] = pipe.forward @m_stage2(%[[O2_2]]) stage 2 microbatch 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O2_3]] to 3 <forward, stage 2 -> 3, microbatch 1, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O2_4:.*]] = pipe.recv from 1 <forward, stage 1 -> 2, microbatch 2, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O2_5:.*]] = pipe.recv from 3 <backward, stage 3 -> 2, microbatch 0, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O2_6:.*]] = pipe.backward full stage 2 microbatch 0 ins(%[[O2_5]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O2_6]] to 1 <backward, stage 2 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O2_7:.*]] = pipe.forward @m_stage2(%[[O2_4]]) stage 2 microbatch 2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O2_7]] to 3 <forward, stage 2 -> 3, microbatch 2, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O2_8:.*]] = pipe.recv from 3 <backward, stage 3 -> 2, microbatch 1, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O2_9:.*]] = pipe.backward full stage 2 microbatch 1 ins(%[[O2_8]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: %[[O2_10:.*]] = pipe.recv from 1 <forward, stage 1 -> 2, microbatch 3, value 0> : tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O2_9]] to 1 <backward, stage 2 -> 1, microbatch 1, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O2_11:.*]] = pipe.forward @m_stage2(%[[O2_10]]) stage 2 microbatch 3 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O2_11]] to 3 <forward, stage 2 -> 3, microbatch 3, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O2_12:.*]] = pipe.recv from 3 <backward, stage 3 -> 2, microbatch 2, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O2_13:.*]] = pipe.backward full stage 2 microbatch 2 ins(%[[O2_12]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O2_13]] to 1 <backward, stage 2 -> 1, microbatch 2, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O2_14:.*]] = pipe.recv from 3 <backward, stage 3 -> 2, microbatch 3, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O2_15:.*]] = pipe.backward full stage 2 microbatch 3 ins(%[[O2_14]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O2_15]] to 1 <backward, stage 2 -> 1, microbatch 3, value 0> : tensor<2x4xf32>
// ONEF-NEXT: }
// ONEF-LABEL: pipe.program @m_rank3 rank 3 of 4 microbatches 4 attributes {schedule = "1f1b"} {
// ONEF-NEXT: %[[O3_0:.*]] = pipe.recv from 2 <forward, stage 2 -> 3, microbatch 0, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O3_1:.*]] = pipe.input 1 microbatch 0 : tensor<4x4xf32>
// ONEF-NEXT: %[[O3_2:.*]] = pipe.forward @m_stage3(%[[O3_0]], %[[O3_1]]) stage 3 microbatch 0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.output %[[O3_2]] result 0 microbatch 0 : tensor<2x4xf32>
// ONEF-NEXT: %[[O3_3:.*]] = pipe.recv from 2 <forward, stage 2 -> 3, microbatch 1, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O3_4:.*]] = pipe.backward full stage 3 microbatch 0 -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O3_4]] to 2 <backward, stage 3 -> 2, microbatch 0, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O3_5:.*]] = pipe.input 1 microbatch 1 : tensor<4x4xf32>
// ONEF-NEXT: %[[O3_6:.*]] = pipe.forward @m_stage3(%[[O3_3]], %[[O3_5]]) stage 3 microbatch 1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.output %[[O3_6]] result 0 microbatch 1 : tensor<2x4xf32>
// ONEF-NEXT: %[[O3_7:.*]] = pipe.backward full stage 3 microbatch 1 -> tensor<2x4xf32>
// ONEF-NEXT: %[[O3_8:.*]] = pipe.recv from 2 <forward, stage 2 -> 3, microbatch 2, value 0> : tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O3_7]] to 2 <backward, stage 3 -> 2, microbatch 1, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O3_9:.*]] = pipe.input 1 microbatch 2 : tensor<4x4xf32>
// ONEF-NEXT: %[[O3_10:.*]] = pipe.forward @m_stage3(%[[O3_8]], %[[O3_9]]) stage 3 microbatch 2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.output %[[O3_10]] result 0 microbatch 2 : tensor<2x4xf32>
// ONEF-NEXT: %[[O3_11:.*]] = pipe.backward full stage 3 microbatch 2 -> tensor<2x4xf32>
// ONEF-NEXT: %[[O3_12:.*]] = pipe.recv from 2 <forward, stage 2 -> 3, microbatch 3, value 0> : tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O3_11]] to 2 <backward, stage 3 -> 2, microbatch 2, value 0> : tensor<2x4xf32>
// ONEF-NEXT: %[[O3_13:.*]] = pipe.input 1 microbatch 3 : tensor<4x4xf32>
// ONEF-NEXT: %[[O3_14:.*]] = pipe.forward @m_stage3(%[[O3_12]], %[[O3_13]]) stage 3 microbatch 3 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// ONEF-NEXT: pipe.output %[[O3_14]] result 0 microbatch 3 : tensor<2x4xf32>
// ONEF-NEXT: %[[O3_15:.*]] = pipe.backward full stage 3 microbatch 3 -> tensor<2x4xf32>
// ONEF-NEXT: pipe.send %[[O3_15]] to 2 <backward, stage 3 -> 2, microbatch 3, value 0> : tensor<2x4xf32>
// ONEF-NEXT: }

// Interleaved 1F1B -------------------------------------------------------
// INTER-LABEL: pipe.program @m_rank0 rank 0 of 2 microbatches 4 attributes {schedule = "interleaved-1f1b"} {
// INTER-NEXT: %[[I0_0:.*]] = pipe.input 0 microbatch 0 : tensor<2x4xf32>
// INTER-NEXT: %[[I0_1:.*]] = pipe.forward @m_stage0(%[[I0_0]]) stage 0 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I0_1]] to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_2:.*]] = pipe.input 0 microbatch 1 : tensor<2x4xf32>
// INTER-NEXT: %[[I0_3:.*]] = pipe.forward @m_stage0(%[[I0_2]]) stage 0 microbatch 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I0_3]] to 1 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_4:.*]] = pipe.recv from 1 <forward, stage 1 -> 2, microbatch 0, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_5:.*]] = pipe.forward @m_stage2(%[[I0_4]]) stage 2 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I0_5]] to 1 <forward, stage 2 -> 3, microbatch 0, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_6:.*]] = pipe.recv from 1 <forward, stage 1 -> 2, microbatch 1, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_7:.*]] = pipe.forward @m_stage2(%[[I0_6]]) stage 2 microbatch 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I0_7]] to 1 <forward, stage 2 -> 3, microbatch 1, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_8:.*]] = pipe.input 0 microbatch 2 : tensor<2x4xf32>
// INTER-NEXT: %[[I0_9:.*]] = pipe.forward @m_stage0(%[[I0_8]]) stage 0 microbatch 2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I0_9]] to 1 <forward, stage 0 -> 1, microbatch 2, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_10:.*]] = pipe.recv from 1 <backward, stage 3 -> 2, microbatch 0, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_11:.*]] = pipe.backward full stage 2 microbatch 0 ins(%[[I0_10]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I0_11]] to 1 <backward, stage 2 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_12:.*]] = pipe.input 0 microbatch 3 : tensor<2x4xf32>
// INTER-NEXT: %[[I0_13:.*]] = pipe.forward @m_stage0(%[[I0_12]]) stage 0 microbatch 3 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I0_13]] to 1 <forward, stage 0 -> 1, microbatch 3, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_14:.*]] = pipe.recv from 1 <backward, stage 3 -> 2, microbatch 1, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_15:.*]] = pipe.backward full stage 2 microbatch 1 ins(%[[I0_14]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I0_15]] to 1 <backward, stage 2 -> 1, microbatch 1, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_16:.*]] = pipe.recv from 1 <forward, stage 1 -> 2, microbatch 2, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_17:.*]] = pipe.forward @m_stage2(%[[I0_16]]) stage 2 microbatch 2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I0_17]] to 1 <forward, stage 2 -> 3, microbatch 2, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_18:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<2x4xf32>
// INTER-NEXT: pipe.backward full stage 0 microbatch 0 ins(%[[I0_18]] : tensor<2x4xf32>)
// INTER-NEXT: %[[I0_19:.*]] = pipe.recv from 1 <forward, stage 1 -> 2, microbatch 3, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_20:.*]] = pipe.forward @m_stage2(%[[I0_19]]) stage 2 microbatch 3 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I0_20]] to 1 <forward, stage 2 -> 3, microbatch 3, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_21:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 1, value 0> : tensor<2x4xf32>
// INTER-NEXT: pipe.backward full stage 0 microbatch 1 ins(%[[I0_21]] : tensor<2x4xf32>)
// INTER-NEXT: %[[I0_22:.*]] = pipe.recv from 1 <backward, stage 3 -> 2, microbatch 2, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_23:.*]] = pipe.backward full stage 2 microbatch 2 ins(%[[I0_22]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I0_23]] to 1 <backward, stage 2 -> 1, microbatch 2, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_24:.*]] = pipe.recv from 1 <backward, stage 3 -> 2, microbatch 3, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_25:.*]] = pipe.backward full stage 2 microbatch 3 ins(%[[I0_24]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I0_25]] to 1 <backward, stage 2 -> 1, microbatch 3, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I0_26:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 2, value 0> : tensor<2x4xf32>
// INTER-NEXT: pipe.backward full stage 0 microbatch 2 ins(%[[I0_26]] : tensor<2x4xf32>)
// INTER-NEXT: %[[I0_27:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 3, value 0> : tensor<2x4xf32>
// INTER-NEXT: pipe.backward full stage 0 microbatch 3 ins(%[[I0_27]] : tensor<2x4xf32>)
// INTER-NEXT: }
// INTER-LABEL: pipe.program @m_rank1 rank 1 of 2 microbatches 4 attributes {schedule = "interleaved-1f1b"} {
// INTER-NEXT: %[[I1_0:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I1_1:.*]] = pipe.forward @m_stage1(%[[I1_0]]) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: %[[I1_2:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I1_1]] to 0 <forward, stage 1 -> 2, microbatch 0, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I1_3:.*]] = pipe.forward @m_stage1(%[[I1_2]]) stage 1 microbatch 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: %[[I1_4:.*]] = pipe.recv from 0 <forward, stage 2 -> 3, microbatch 0, value 0> : tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I1_3]] to 0 <forward, stage 1 -> 2, microbatch 1, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I1_5:.*]] = pipe.input 1 microbatch 0 : tensor<4x4xf32>
// INTER-NEXT: %[[I1_6:.*]] = pipe.forward @m_stage3(%[[I1_4]], %[[I1_5]]) stage 3 microbatch 0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.output %[[I1_6]] result 0 microbatch 0 : tensor<2x4xf32>
// INTER-NEXT: %[[I1_7:.*]] = pipe.recv from 0 <forward, stage 2 -> 3, microbatch 1, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I1_8:.*]] = pipe.backward full stage 3 microbatch 0 -> tensor<2x4xf32>
// INTER-NEXT: %[[I1_9:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 2, value 0> : tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I1_8]] to 0 <backward, stage 3 -> 2, microbatch 0, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I1_10:.*]] = pipe.input 1 microbatch 1 : tensor<4x4xf32>
// INTER-NEXT: %[[I1_11:.*]] = pipe.forward @m_stage3(%[[I1_7]], %[[I1_10]]) stage 3 microbatch 1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.output %[[I1_11]] result 0 microbatch 1 : tensor<2x4xf32>
// INTER-NEXT: %[[I1_12:.*]] = pipe.recv from 0 <backward, stage 2 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I1_13:.*]] = pipe.backward full stage 3 microbatch 1 -> tensor<2x4xf32>
// INTER-NEXT: %[[I1_14:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 3, value 0> : tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I1_13]] to 0 <backward, stage 3 -> 2, microbatch 1, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I1_15:.*]] = pipe.forward @m_stage1(%[[I1_9]]) stage 1 microbatch 2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: %[[I1_16:.*]] = pipe.recv from 0 <backward, stage 2 -> 1, microbatch 1, value 0> : tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I1_15]] to 0 <forward, stage 1 -> 2, microbatch 2, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I1_17:.*]] = pipe.backward full stage 1 microbatch 0 ins(%[[I1_12]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: %[[I1_18:.*]] = pipe.recv from 0 <forward, stage 2 -> 3, microbatch 2, value 0> : tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I1_17]] to 0 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I1_19:.*]] = pipe.forward @m_stage1(%[[I1_14]]) stage 1 microbatch 3 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I1_19]] to 0 <forward, stage 1 -> 2, microbatch 3, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I1_20:.*]] = pipe.backward full stage 1 microbatch 1 ins(%[[I1_16]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: %[[I1_21:.*]] = pipe.recv from 0 <forward, stage 2 -> 3, microbatch 3, value 0> : tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I1_20]] to 0 <backward, stage 1 -> 0, microbatch 1, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I1_22:.*]] = pipe.input 1 microbatch 2 : tensor<4x4xf32>
// INTER-NEXT: %[[I1_23:.*]] = pipe.forward @m_stage3(%[[I1_18]], %[[I1_22]]) stage 3 microbatch 2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.output %[[I1_23]] result 0 microbatch 2 : tensor<2x4xf32>
// INTER-NEXT: %[[I1_24:.*]] = pipe.backward full stage 3 microbatch 2 -> tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I1_24]] to 0 <backward, stage 3 -> 2, microbatch 2, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I1_25:.*]] = pipe.input 1 microbatch 3 : tensor<4x4xf32>
// INTER-NEXT: %[[I1_26:.*]] = pipe.forward @m_stage3(%[[I1_21]], %[[I1_25]]) stage 3 microbatch 3 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.output %[[I1_26]] result 0 microbatch 3 : tensor<2x4xf32>
// INTER-NEXT: %[[I1_27:.*]] = pipe.recv from 0 <backward, stage 2 -> 1, microbatch 2, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I1_28:.*]] = pipe.backward full stage 3 microbatch 3 -> tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I1_28]] to 0 <backward, stage 3 -> 2, microbatch 3, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I1_29:.*]] = pipe.backward full stage 1 microbatch 2 ins(%[[I1_27]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: %[[I1_30:.*]] = pipe.recv from 0 <backward, stage 2 -> 1, microbatch 3, value 0> : tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I1_29]] to 0 <backward, stage 1 -> 0, microbatch 2, value 0> : tensor<2x4xf32>
// INTER-NEXT: %[[I1_31:.*]] = pipe.backward full stage 1 microbatch 3 ins(%[[I1_30]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// INTER-NEXT: pipe.send %[[I1_31]] to 0 <backward, stage 1 -> 0, microbatch 3, value 0> : tensor<2x4xf32>
// INTER-NEXT: }
