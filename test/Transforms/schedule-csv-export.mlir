// pipe-schedule export-csv=<path> writes the schedule it emitted as a
// torch.distributed.pipelining action CSV; csv=<path> on the same stage graph
// brings back the same programs (only the `schedule` attribute reads "csv",
// which the sed below maps back to the generated schedule's name before the
// diff). Compute+comms form (default) and compute-only form.
//
// 1F1B, 4 ranks: the skip connection 0 -> 2 crosses ranks ("@2" suffix).
// RUN: pipeopt %s --pipe-schedule="schedule=1f1b num-microbatches=4 export-csv=%t.1f1b.csv" -o %t.1f1b.mlir
// RUN: FileCheck %s --check-prefix=CSV-1F1B < %t.1f1b.csv
// RUN: pipeopt %s --pipe-schedule="csv=%t.1f1b.csv" --pipe-verify-schedule -o %t.1f1b.re.mlir
// RUN: sed 's/{schedule = "csv"}/{schedule = "1f1b"}/' %t.1f1b.re.mlir | diff %t.1f1b.mlir -
// RUN: FileCheck %s --check-prefix=PROGRAMS < %t.1f1b.mlir
// RUN: pipeopt %s --pipe-schedule="schedule=1f1b num-microbatches=4 export-csv=%t.1f1b.c.csv export-csv-compute-only" -o /dev/null
// RUN: FileCheck %s --check-prefix=C-1F1B < %t.1f1b.c.csv
// RUN: pipeopt %s --pipe-schedule="csv=%t.1f1b.c.csv" | sed 's/{schedule = "csv"}/{schedule = "1f1b"}/' | diff %t.1f1b.mlir -
//
// pipe-verify-schedule reads the programs back and writes the same CSV.
// RUN: pipeopt %t.1f1b.mlir --pipe-verify-schedule="export-csv=%t.1f1b.v.csv" -o /dev/null
// RUN: diff %t.1f1b.csv %t.1f1b.v.csv
// RUN: pipeopt %t.1f1b.mlir --pipe-verify-schedule="export-csv=%t.1f1b.vc.csv export-csv-compute-only" -o /dev/null
// RUN: diff %t.1f1b.c.csv %t.1f1b.vc.csv
//
// Interleaved 1F1B, 2 ranks x 2 chunks (stages 0, 2 on rank 0: the skip
// connection stays on the rank).
// RUN: pipeopt %s --pipe-schedule="schedule=interleaved-1f1b virtual-stages=2 num-microbatches=4 export-csv=%t.i.csv" -o %t.i.mlir
// RUN: pipeopt %s --pipe-schedule="csv=%t.i.csv" --pipe-verify-schedule | sed 's/{schedule = "csv"}/{schedule = "interleaved-1f1b"}/' | diff %t.i.mlir -
// RUN: pipeopt %s --pipe-schedule="schedule=interleaved-1f1b virtual-stages=2 num-microbatches=4 export-csv=%t.i.c.csv export-csv-compute-only" -o /dev/null
// RUN: FileCheck %s --check-prefix=C-INTERLEAVED < %t.i.c.csv
// RUN: pipeopt %s --pipe-schedule="csv=%t.i.c.csv" | sed 's/{schedule = "csv"}/{schedule = "interleaved-1f1b"}/' | diff %t.i.mlir -
//
// ZB-H1: split backward (I = input gradient, W = weight gradient).
// RUN: pipeopt %s --pipe-schedule="schedule=zb-h1 num-microbatches=4 export-csv=%t.zb.csv" -o %t.zb.mlir
// RUN: pipeopt %s --pipe-schedule="csv=%t.zb.csv" --pipe-verify-schedule | sed 's/{schedule = "csv"}/{schedule = "zb-h1"}/' | diff %t.zb.mlir -
// RUN: pipeopt %s --pipe-schedule="schedule=zb-h1 num-microbatches=4 export-csv=%t.zb.c.csv export-csv-compute-only" -o /dev/null
// RUN: FileCheck %s --check-prefix=C-ZB < %t.zb.c.csv
// RUN: pipeopt %s --pipe-schedule="csv=%t.zb.c.csv" | sed 's/{schedule = "csv"}/{schedule = "zb-h1"}/' | diff %t.zb.mlir -
// RUN: FileCheck %s --check-prefix=ZB-PROGRAMS < %t.zb.mlir
//
// export-csv=- writes to stdout, before the module.
// RUN: pipeopt %s --pipe-schedule="schedule=gpipe num-microbatches=2 export-csv=- export-csv-compute-only" | FileCheck %s --check-prefix=STDOUT
//
// Errors: an unwritable file fails the pass.
// RUN: not pipeopt %s --pipe-schedule="export-csv=%t.nodir/s.csv" -o /dev/null 2>&1 | FileCheck %s --check-prefix=WRITE
// RUN: not pipeopt %t.1f1b.mlir --pipe-verify-schedule="export-csv=%t.nodir/v.csv" -o /dev/null 2>&1 | FileCheck %s --check-prefix=VWRITE

// Rank 0 runs stage 0 and sends both values of microbatch m (to stage 1 and,
// over the skip connection, to stage 2) right after its forward; every send
// is followed by its WAIT_SEND (torch's compute_comms loader requires one;
// right after the send it is pipeopt's blocking send).
// CSV-1F1B: {{^}}0F0,0SEND_F0,0WAIT_SEND_F0,0SEND_F0@2,0WAIT_SEND_F0,0F1,0SEND_F1@2,0WAIT_SEND_F1,0SEND_F1,0WAIT_SEND_F1,0F2,0SEND_F2@2,0WAIT_SEND_F2,0SEND_F2,0WAIT_SEND_F2,0F3,0SEND_F3@2,0WAIT_SEND_F3,0SEND_F3,0WAIT_SEND_F3,0RECV_B0@2,0RECV_B0,0B0,0RECV_B1@2,0RECV_B1,0B1,0RECV_B2@2,0RECV_B2,0B2,0RECV_B3@2,0RECV_B3,0B3{{$}}
// CSV-1F1B-NEXT: {{^}}1RECV_F0,1F0,1SEND_F0,1WAIT_SEND_F0,1RECV_F1,1F1,1SEND_F1,1WAIT_SEND_F1,1RECV_F2,1F2,1SEND_F2,1WAIT_SEND_F2,1RECV_F3,1RECV_B0,1B0,1SEND_B0,1WAIT_SEND_B0,1F3,1SEND_F3,1WAIT_SEND_F3,1RECV_B1,1B1,1SEND_B1,1WAIT_SEND_B1,1RECV_B2,1B2,1SEND_B2,1WAIT_SEND_B2,1RECV_B3,1B3,1SEND_B3,1WAIT_SEND_B3{{$}}
// CSV-1F1B-NEXT: {{^}}2RECV_F0@0,2RECV_F1@0,2RECV_F0,2F0,2SEND_F0,2WAIT_SEND_F0,2RECV_F2@0,2RECV_F1,2F1,2SEND_F1,2WAIT_SEND_F1,2RECV_F3@0,2RECV_F2,2RECV_B0,2B0,2SEND_B0@0,2WAIT_SEND_B0,2SEND_B0,2WAIT_SEND_B0,2F2,2SEND_F2,2WAIT_SEND_F2,2RECV_B1,2B1,2SEND_B1@0,2WAIT_SEND_B1,2RECV_F3,2SEND_B1,2WAIT_SEND_B1,2F3,2SEND_F3,2WAIT_SEND_F3,2RECV_B2,2B2,2SEND_B2@0,2WAIT_SEND_B2,2SEND_B2,2WAIT_SEND_B2,2RECV_B3,2B3,2SEND_B3@0,2WAIT_SEND_B3,2SEND_B3,2WAIT_SEND_B3{{$}}
// CSV-1F1B-NEXT: {{^}}3RECV_F0,3F0,3RECV_F1,3B0,3SEND_B0,3WAIT_SEND_B0,3F1,3B1,3RECV_F2,3SEND_B1,3WAIT_SEND_B1,3F2,3B2,3RECV_F3,3SEND_B2,3WAIT_SEND_B2,3F3,3B3,3SEND_B3,3WAIT_SEND_B3{{$}}
// CSV-1F1B-NOT: {{.}}

// PROGRAMS-COUNT-4: pipe.program @m_rank{{[0-3]}} rank {{[0-3]}} of 4 microbatches 4 attributes {schedule = "1f1b"}
// PROGRAMS-NOT: pipe.program

// C-1F1B: {{^}}0F0,0F1,0F2,0F3,0B0,0B1,0B2,0B3{{$}}
// C-1F1B-NEXT: {{^}}1F0,1F1,1F2,1B0,1F3,1B1,1B2,1B3{{$}}
// C-1F1B-NEXT: {{^}}2F0,2F1,2B0,2F2,2B1,2F3,2B2,2B3{{$}}
// C-1F1B-NEXT: {{^}}3F0,3B0,3F1,3B1,3F2,3B2,3F3,3B3{{$}}
// C-1F1B-NOT: {{.}}

// C-INTERLEAVED: {{^}}0F0,0F1,2F0,2F1,0F2,2B0,0F3,2B1,2F2,0B0,2F3,0B1,2B2,2B3,0B2,0B3{{$}}
// C-INTERLEAVED-NEXT: {{^}}1F0,1F1,3F0,3B0,3F1,3B1,1F2,1B0,1F3,1B1,3F2,3B2,3F3,3B3,1B2,1B3{{$}}
// C-INTERLEAVED-NOT: {{.}}

// C-ZB: {{^}}0F0,0F1,0F2,0F3,0I0,0W0,0I1,0W1,0I2,0W2,0I3,0W3{{$}}
// C-ZB-NEXT: {{^}}1F0,1F1,1F2,1I0,1F3,1I1,1W0,1I2,1W1,1I3,1W2,1W3{{$}}
// C-ZB-NEXT: {{^}}2F0,2F1,2I0,2F2,2I1,2F3,2I2,2W0,2I3,2W1,2W2,2W3{{$}}
// C-ZB-NEXT: {{^}}3F0,3I0,3F1,3I1,3F2,3I2,3F3,3I3,3W0,3W1,3W2,3W3{{$}}
// C-ZB-NOT: {{.}}

// ZB-PROGRAMS-COUNT-4: pipe.backward weight stage 0 microbatch

// STDOUT: {{^}}0F0,0F1,0B0,0B1{{$}}
// STDOUT-NEXT: {{^}}1F0,1F1,1B0,1B1{{$}}
// STDOUT-NEXT: {{^}}2F0,2F1,2B0,2B1{{$}}
// STDOUT-NEXT: {{^}}3F0,3F1,3B0,3B1{{$}}
// STDOUT-NEXT: module {

// WRITE: error: pipe-schedule: export-csv: cannot write '{{.*}}nodir/s.csv'
// VWRITE: error: pipe-verify-schedule: export-csv: cannot write '{{.*}}nodir/v.csv'

func.func @m_stage0(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {pipe.stage = 0 : i64} {
  return %x, %x : tensor<2x4xf32>, tensor<2x4xf32>
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
  %a:2 = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  %b = pipe.stage_call @m_stage1(%a#0) stage 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c = pipe.stage_call @m_stage2(%b, %a#1) stage 2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %d = pipe.stage_call @m_stage3(%c) stage 3 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}
