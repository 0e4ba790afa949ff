// pipe-schedule csv= reads torch 2.15's own dumps (written by
// scripts/export-torch-schedules.py into test/Schedule/Inputs/torch): the
// compute-only form and the lowered form with SEND/RECV, WAIT_SEND,
// UNSHARD/RESHARD, REDUCE_GRAD and DualPipeV's (a;b)OVERLAP_F_B cells
// (docs/TorchCSV.md). Every dump of the sweep is imported and verified by
// unittests/Schedule/TorchCSVTests.cpp; this checks the pass end to end.
//
// RUN: pipeopt %s --pipe-schedule="csv=%S/../Schedule/Inputs/torch/ScheduleDualPipeV-S2-M4.csv" --pipe-verify-schedule | FileCheck %s --check-prefix=PROGRAMS
// RUN: pipeopt %s --pipe-schedule="csv=%S/../Schedule/Inputs/torch/ScheduleDualPipeV-S2-M4.comms.csv" --pipe-verify-schedule | FileCheck %s --check-prefix=PROGRAMS
// RUN: pipeopt %s --pipe-schedule="csv=%S/../Schedule/Inputs/torch/ScheduleInterleavedZeroBubble-S2-M4.comms.csv" --pipe-verify-schedule | FileCheck %s --check-prefix=PROGRAMS
//
// The export of an imported torch schedule reads back to the same programs.
// RUN: pipeopt %s --pipe-schedule="csv=%S/../Schedule/Inputs/torch/ScheduleZBVZeroBubble-S2-M4.comms.csv export-csv=%t.zbv.csv" -o %t.zbv.mlir
// RUN: FileCheck %s --check-prefix=WAITS < %t.zbv.csv
// RUN: pipeopt %s --pipe-schedule="csv=%t.zbv.csv" | diff %t.zbv.mlir -
//
// Input errors and what is tolerated: a blank line between rows, an unknown
// type; a BOM, CRLF and blank lines at the end are read as usual.
// RUN: printf '\xef\xbb\xbf 0F0, 1F0,2F0 ,3F0,3B0,2B0,1B0,0B0,0REDUCE_GRAD\r\n\r\n\n' > %t.bom.csv
// RUN: pipeopt %s --pipe-schedule="csv=%t.bom.csv" | FileCheck %s --check-prefix=BOM
// RUN: printf '0F0,0F1,3F0,3F1,3B0,3B1,0B0,0B1\n\n1F0,2F0,1F1,2F1,2B0,1B0,2B1,1B1\n' > %t.blank.csv
// RUN: not pipeopt %s --pipe-schedule="csv=%t.blank.csv" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BLANK
// RUN: printf '0F0,0F1,3F0,3F1,3B0,3B1,0B0,0B1\n1F0,2F0,1F1,2F1,2B0,1B0,2B1,1WAIT_RECV_B1\n' > %t.unknown.csv
// RUN: not pipeopt %s --pipe-schedule="csv=%t.unknown.csv" -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: printf '0F0,0F1,3F0,3F1,3B0,3W1,3I1,0B0,0B1\n1F0,2F0,1F1,2F1,2B0,1B0,2B1,1B1\n' > %t.order.csv
// RUN: not pipeopt %s --pipe-schedule="csv=%t.order.csv" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ORDER

// PROGRAMS: pipe.program @m_rank0 rank 0 of 2 microbatches 4 attributes {schedule = "csv"}
// PROGRAMS: pipe.program @m_rank1 rank 1 of 2 microbatches 4 attributes {schedule = "csv"}

// WAITS: {{^}}0F0,0SEND_F0,0WAIT_SEND_F0,

// One rank runs all four stages; the BOM, spaces, REDUCE_GRAD and the blank
// lines at the end do not become actions or ranks.
// BOM: pipe.program @m_rank0 rank 0 of 1 microbatches 1
// BOM-NOT: pipe.program

// BLANK: error: invalid schedule CSV '{{.*}}blank.csv': line 2 is blank: every line of a schedule CSV is one rank's actions, so it would be an idle rank 1 and shift the ranks after it

// UNKNOWN: error: invalid schedule CSV '{{.*}}unknown.csv': line 2 (rank 1), cell 8: invalid action '1WAIT_RECV_B1': unknown type 'WAIT_RECV_B' (torch 2.15 types, case-sensitive: F, I (input gradient), W, B (full backward),

// ORDER: error: invalid schedule CSV '{{.*}}order.csv': rank 0: 3W1 (weight gradient, stage 3, mb 1) appears before 3I1 (input gradient, stage 3, mb 1)

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage2(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 2 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage3(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 3 : i64} {
  return %x : tensor<4xf32>
}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 4 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  %c = pipe.stage_call @m_stage2(%b) stage 2 : (tensor<4xf32>) -> tensor<4xf32>
  %d = pipe.stage_call @m_stage3(%c) stage 3 : (tensor<4xf32>) -> tensor<4xf32>
  return %d : tensor<4xf32>
}
