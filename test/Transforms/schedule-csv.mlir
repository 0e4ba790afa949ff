// RUN: pipeopt %s --pipe-schedule="csv=%S/Inputs/schedule-zb-2stages.csv" --pipe-verify-schedule | FileCheck %s --check-prefix=ZB
// RUN: pipeopt %s --pipe-schedule="csv=%S/Inputs/schedule-comm-2stages.csv" --pipe-verify-schedule | FileCheck %s --check-prefix=COMM

// Schedules imported from torch.distributed.pipelining action CSVs (one row
// per rank, "<stage><type><microbatch>", I = input gradient, W = weight
// gradient, B = full backward, empty cell = idle slot).
//
// schedule-zb-2stages.csv has compute actions only, with B/W split; the pass
// inserts the send/recv and keeps the CSV's order of compute actions.

func.func @t_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @t_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
func.func @t(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 2 : i64} {
  %a = pipe.stage_call @t_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @t_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// ZB-LABEL: pipe.program @t_rank0 rank 0 of 2 microbatches 2 attributes {schedule = "csv"} {
// ZB-NEXT: %[[X0:.*]] = pipe.input 0 microbatch 0 : tensor<4xf32>
// ZB-NEXT: %[[A0:.*]] = pipe.forward @t_stage0(%[[X0]]) stage 0 microbatch 0
// ZB-NEXT: pipe.send %[[A0]] to 1 <forward, stage 0 -> 1, microbatch 0, value 0>
// ZB-NEXT: %[[X1:.*]] = pipe.input 0 microbatch 1 : tensor<4xf32>
// ZB-NEXT: %[[A1:.*]] = pipe.forward @t_stage0(%[[X1]]) stage 0 microbatch 1
// ZB-NEXT: pipe.send %[[A1]] to 1 <forward, stage 0 -> 1, microbatch 1, value 0>
// ZB-NEXT: %[[G0:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<4xf32>
// ZB-NEXT: pipe.backward input stage 0 microbatch 0 ins(%[[G0]] : tensor<4xf32>){{$}}
// ZB-NEXT: pipe.backward weight stage 0 microbatch 0{{$}}
// ZB-NEXT: %[[G1:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 1, value 0> : tensor<4xf32>
// ZB-NEXT: pipe.backward input stage 0 microbatch 1 ins(%[[G1]] : tensor<4xf32>){{$}}
// ZB-NEXT: pipe.backward weight stage 0 microbatch 1{{$}}
// ZB-NEXT: }
// ZB-LABEL: pipe.program @t_rank1 rank 1 of 2 microbatches 2 attributes {schedule = "csv"} {
// ZB-NEXT: %[[A0:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
// ZB-NEXT: %[[Y0:.*]] = pipe.forward @t_stage1(%[[A0]]) stage 1 microbatch 0
// ZB-NEXT: pipe.output %[[Y0]] result 0 microbatch 0 : tensor<4xf32>
// ZB-NEXT: %[[A1:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4xf32>
// ZB-NEXT: %[[G0:.*]] = pipe.backward input stage 1 microbatch 0 -> tensor<4xf32>
// ZB-NEXT: pipe.send %[[G0]] to 0 <backward, stage 1 -> 0, microbatch 0, value 0>
// ZB-NEXT: %[[Y1:.*]] = pipe.forward @t_stage1(%[[A1]]) stage 1 microbatch 1
// ZB-NEXT: pipe.output %[[Y1]] result 0 microbatch 1 : tensor<4xf32>
// ZB-NEXT: %[[G1:.*]] = pipe.backward input stage 1 microbatch 1 -> tensor<4xf32>
// ZB-NEXT: pipe.send %[[G1]] to 0 <backward, stage 1 -> 0, microbatch 1, value 0>
// ZB-NEXT: pipe.backward weight stage 1 microbatch 0{{$}}
// ZB-NEXT: pipe.backward weight stage 1 microbatch 1{{$}}
// ZB-NEXT: }

// schedule-comm-2stages.csv already holds SEND/RECV actions: they are
// checked against the stage graph and kept in the CSV's order.

// COMM-LABEL: pipe.program @t_rank0 rank 0 of 2 microbatches 1 attributes {schedule = "csv"} {
// COMM-NEXT: pipe.input 0 microbatch 0
// COMM-NEXT: %[[A:.*]] = pipe.forward @t_stage0
// COMM-NEXT: pipe.send %[[A]] to 1 <forward, stage 0 -> 1, microbatch 0, value 0>
// COMM-NEXT: %[[G:.*]] = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 0, value 0>
// COMM-NEXT: pipe.backward full stage 0 microbatch 0 ins(%[[G]] : tensor<4xf32>)
// COMM-NEXT: }
// COMM-LABEL: pipe.program @t_rank1 rank 1 of 2 microbatches 1 attributes {schedule = "csv"} {
// COMM-NEXT: %[[A:.*]] = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0>
// COMM-NEXT: %[[Y:.*]] = pipe.forward @t_stage1(%[[A]])
// COMM-NEXT: pipe.output %[[Y]] result 0 microbatch 0
// COMM-NEXT: %[[G:.*]] = pipe.backward full stage 1 microbatch 0 -> tensor<4xf32>
// COMM-NEXT: pipe.send %[[G]] to 0 <backward, stage 1 -> 0, microbatch 0, value 0>
// COMM-NEXT: }
