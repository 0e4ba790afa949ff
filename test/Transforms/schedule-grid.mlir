// RUN: pipeopt %s --pipe-schedule="schedule=1f1b num-microbatches=4 print-grid" -o /dev/null | FileCheck %s --check-prefix=ONEF
// RUN: pipeopt %s --pipe-schedule="schedule=interleaved-1f1b virtual-stages=2 num-microbatches=4 print-grid" -o /dev/null | FileCheck %s --check-prefix=INTER

// print-grid writes the ranks x unit-time-slot table of the schedule to
// stdout (compute actions only; "." = idle, "s<k>:" names the stage when a
// rank holds several).

// ONEF:      1f1b: 4 ranks, 4 stages, 4 microbatches, 14 unit-time slots
// ONEF-NEXT: rank 0 | F0  F1  F2  F3  .   .   .   BW0 .   BW1 .   BW2 .   BW3
// ONEF-NEXT: rank 1 | .   F0  F1  F2  .   .   BW0 F3  BW1 .   BW2 .   BW3 .
// ONEF-NEXT: rank 2 | .   .   F0  F1  .   BW0 F2  BW1 F3  BW2 .   BW3 .   .
// ONEF-NEXT: rank 3 | .   .   .   F0  BW0 F1  BW1 F2  BW2 F3  BW3 .   .   .
// ONEF-NOT: rank

// INTER:      interleaved-1f1b: 2 ranks, 4 stages, 4 microbatches, 18 unit-time slots
// INTER-NEXT: rank 0 | s0:F0 s0:F1 s2:F0 s2:F1 s0:F2 s2:BW0 s0:F3 s2:BW1 s2:F2 s0:BW0 s2:F3 s0:BW1 . s2:BW2 . s2:BW3 s0:BW2 s0:BW3
// INTER-NEXT: rank 1 | . s1:F0 s1:F1 s3:F0 s3:BW0 s3:F1 s3:BW1 s1:F2 s1:BW0 s1:F3 s1:BW1 s3:F2 s3:BW2 s3:F3 s3:BW3 s1:BW2 s1:BW3 .

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
