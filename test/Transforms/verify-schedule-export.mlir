// pipe-verify-schedule export-csv=<path>: a hand-written schedule (not one
// of the generators': two microbatches at a time, and rank 1 splits its
// backward into input (I) and weight (W) gradients, delaying every W to the
// end) is verified and written as a torch.distributed.pipelining action
// CSV. pipe-schedule csv=<that file> on the stage graph alone (the programs
// stripped from this file with sed) emits the same programs, from both the
// compute+comms and the compute-only form.
//
// RUN: pipeopt %s --pipe-verify-schedule="export-csv=%t.csv" -o %t.hand.mlir
// RUN: FileCheck %s --check-prefix=CSV < %t.csv
// RUN: pipeopt %s --pipe-verify-schedule="export-csv=%t.c.csv export-csv-compute-only" -o /dev/null
// RUN: FileCheck %s --check-prefix=C-CSV < %t.c.csv
// RUN: sed '/^pipe.program/,/^}/d' %s | pipeopt --pipe-schedule="csv=%t.csv" --pipe-verify-schedule | sed 's/{schedule = "csv"}/{schedule = "hand"}/' | diff %t.hand.mlir -
// RUN: sed '/^pipe.program/,/^}/d' %s | pipeopt --pipe-schedule="csv=%t.c.csv" --pipe-verify-schedule | sed 's/{schedule = "csv"}/{schedule = "hand"}/' | diff %t.hand.mlir -
// RUN: FileCheck %s --check-prefix=HAND < %t.hand.mlir
//
// Errors: export-csv with no programs, with programs of several functions
// (schedule-csv-export-invalid.mlir), and an unwritable file
// (schedule-csv-export.mlir). Nothing is written when the check fails.
// RUN: rm -f %t.none.csv
// RUN: sed '/^pipe.program/,/^}/d' %s | not pipeopt --pipe-verify-schedule="export-csv=%t.none.csv" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not test -e %t.none.csv
// RUN: rm -f %t.bad.csv
// RUN: sed 's/pipe.backward weight stage 1 microbatch 2/pipe.backward weight stage 1 microbatch 1/' %s | not pipeopt --pipe-verify-schedule="export-csv=%t.bad.csv" -o /dev/null 2>&1 | FileCheck %s --check-prefix=INVALID
// RUN: not test -e %t.bad.csv

// CSV: {{^}}0F0,0SEND_F0,0WAIT_SEND_F0,0F1,0SEND_F1,0WAIT_SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0F2,0SEND_F2,0WAIT_SEND_F2,0RECV_B2,0B2{{$}}
// CSV-NEXT: {{^}}1RECV_F0,1F0,1RECV_F1,1F1,1I0,1SEND_B0,1WAIT_SEND_B0,1I1,1SEND_B1,1WAIT_SEND_B1,1RECV_F2,1F2,1I2,1SEND_B2,1WAIT_SEND_B2,1W0,1W1,1W2{{$}}
// CSV-NOT: {{.}}

// C-CSV: {{^}}0F0,0F1,0B0,0B1,0F2,0B2{{$}}
// C-CSV-NEXT: {{^}}1F0,1F1,1I0,1I1,1F2,1I2,1W0,1W1,1W2{{$}}
// C-CSV-NOT: {{.}}

// HAND-COUNT-2: pipe.program @h_rank{{[01]}} rank {{[01]}} of 2 microbatches 3 attributes {schedule = "hand"}

// NONE: error: pipe-verify-schedule: export-csv: no pipe.program in the module, no schedule to export

// INVALID: error: invalid schedule:
// INVALID-NOT: export-csv

func.func @h_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @h_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
func.func @h(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 2 : i64} {
  %a = pipe.stage_call @h_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @h_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

pipe.program @h_rank0 rank 0 of 2 microbatches 3 attributes {schedule = "hand"} {
  %x0 = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a0 = pipe.forward @h_stage0(%x0) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.send %a0 to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  %x1 = pipe.input 0 microbatch 1 : tensor<4xf32>
  %a1 = pipe.forward @h_stage0(%x1) stage 0 microbatch 1 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.send %a1 to 1 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4xf32>
  %g0 = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<4xf32>
  pipe.backward full stage 0 microbatch 0 ins(%g0 : tensor<4xf32>)
  %g1 = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 1, value 0> : tensor<4xf32>
  pipe.backward full stage 0 microbatch 1 ins(%g1 : tensor<4xf32>)
  %x2 = pipe.input 0 microbatch 2 : tensor<4xf32>
  %a2 = pipe.forward @h_stage0(%x2) stage 0 microbatch 2 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.send %a2 to 1 <forward, stage 0 -> 1, microbatch 2, value 0> : tensor<4xf32>
  %g2 = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 2, value 0> : tensor<4xf32>
  pipe.backward full stage 0 microbatch 2 ins(%g2 : tensor<4xf32>)
}

pipe.program @h_rank1 rank 1 of 2 microbatches 3 attributes {schedule = "hand"} {
  %a0 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  %y0 = pipe.forward @h_stage1(%a0) stage 1 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.output %y0 result 0 microbatch 0 : tensor<4xf32>
  %a1 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4xf32>
  %y1 = pipe.forward @h_stage1(%a1) stage 1 microbatch 1 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.output %y1 result 0 microbatch 1 : tensor<4xf32>
  %g0 = pipe.backward input stage 1 microbatch 0 -> tensor<4xf32>
  pipe.send %g0 to 0 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<4xf32>
  %g1 = pipe.backward input stage 1 microbatch 1 -> tensor<4xf32>
  pipe.send %g1 to 0 <backward, stage 1 -> 0, microbatch 1, value 0> : tensor<4xf32>
  %a2 = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 2, value 0> : tensor<4xf32>
  %y2 = pipe.forward @h_stage1(%a2) stage 1 microbatch 2 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.output %y2 result 0 microbatch 2 : tensor<4xf32>
  %g2 = pipe.backward input stage 1 microbatch 2 -> tensor<4xf32>
  pipe.send %g2 to 0 <backward, stage 1 -> 0, microbatch 2, value 0> : tensor<4xf32>
  pipe.backward weight stage 1 microbatch 0
  pipe.backward weight stage 1 microbatch 1
  pipe.backward weight stage 1 microbatch 2
}
