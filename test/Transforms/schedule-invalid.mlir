// Every diagnostic of pipe-schedule. Each part of this file is one case with
// its own options (split-file keeps the line numbers).
//
// RUN: split-file %s %t
// RUN: pipeopt %t/no-graph.mlir --pipe-schedule -verify-diagnostics
// RUN: pipeopt %t/not-a-call.mlir --pipe-schedule -verify-diagnostics
// RUN: pipeopt %t/out-of-order.mlir --pipe-schedule -verify-diagnostics
// RUN: pipeopt %t/num-stages.mlir --pipe-schedule -verify-diagnostics
// RUN: pipeopt %t/returns-argument.mlir --pipe-schedule -verify-diagnostics
// RUN: pipeopt %t/not-a-tensor.mlir --pipe-schedule -verify-diagnostics
// RUN: pipeopt %t/unknown.mlir --pipe-schedule="schedule=gpipe-2" -verify-diagnostics
// RUN: pipeopt %t/few-microbatches.mlir --pipe-schedule="schedule=1f1b num-microbatches=2" -verify-diagnostics
// RUN: pipeopt %t/chimera-odd.mlir --pipe-schedule="schedule=chimera num-microbatches=4" -verify-diagnostics
// RUN: pipeopt %t/chunks.mlir --pipe-schedule="schedule=interleaved-1f1b virtual-stages=2 num-microbatches=4" -verify-diagnostics
// RUN: pipeopt %t/chunks-single.mlir --pipe-schedule="schedule=1f1b virtual-stages=3" -verify-diagnostics
// RUN: pipeopt %t/non-dividing.mlir --pipe-schedule="schedule=chimera num-microbatches=3" -verify-diagnostics
// RUN: pipeopt %t/num-ranks.mlir --pipe-schedule="schedule=1f1b num-ranks=3" -verify-diagnostics
// RUN: pipeopt %t/microbatches-wide.mlir --pipe-schedule="schedule=forward-only num-microbatches=4294967297" -verify-diagnostics
// RUN: pipeopt %t/microbatches-negative.mlir --pipe-schedule="schedule=1f1b num-microbatches=-2" -verify-diagnostics
// RUN: pipeopt %t/virtual-stages-wide.mlir --pipe-schedule="schedule=1f1b virtual-stages=4294967297" -verify-diagnostics
// RUN: pipeopt %t/num-ranks-negative.mlir --pipe-schedule="schedule=1f1b num-ranks=-1" -verify-diagnostics
// RUN: pipeopt %t/waves-zero.mlir --pipe-schedule="schedule=hanayo waves=0" -verify-diagnostics
// RUN: pipeopt %t/memory-limit-negative.mlir --pipe-schedule="schedule=zb-auto memory-limit=-1" -verify-diagnostics
// RUN: pipeopt %t/memory-limit-not-auto.mlir --pipe-schedule="schedule=1f1b memory-limit=2" -verify-diagnostics
// RUN: pipeopt %t/comm-time-negative.mlir --pipe-schedule="schedule=zb-auto comm-time=-0.5" -verify-diagnostics
// RUN: pipeopt %t/auto-device.mlir --pipe-schedule="schedule=zb-auto device=abacus" -verify-diagnostics
// RUN: pipeopt %t/bad-path.mlir --pipe-schedule="csv=%S/Inputs/does-not-exist.csv" -verify-diagnostics
// RUN: pipeopt %t/malformed.mlir --pipe-schedule="csv=%S/Inputs/schedule-malformed.csv" -verify-diagnostics
// RUN: pipeopt %t/csv-stages.mlir --pipe-schedule="csv=%S/Inputs/schedule-zb-2stages.csv" -verify-diagnostics
// RUN: pipeopt %t/deadlock.mlir --pipe-schedule="csv=%S/Inputs/schedule-deadlock-2stages.csv" -verify-diagnostics
// RUN: pipeopt %t/csv-huge-index.mlir --pipe-schedule="csv=%S/Inputs/schedule-huge-microbatch.csv" -verify-diagnostics
// RUN: pipeopt %t/exists.mlir --pipe-schedule="schedule=gpipe num-microbatches=1" -verify-diagnostics
// RUN: pipeopt %t/csv-and-schedule.mlir --pipe-schedule="csv=%S/Inputs/schedule-zb-2stages.csv schedule=gpipe" -verify-diagnostics
// RUN: pipeopt %t/csv-and-default-schedule.mlir --pipe-schedule="schedule=1f1b csv=%S/Inputs/schedule-zb-2stages.csv" -verify-diagnostics
// RUN: pipeopt %t/csv-and-options.mlir --pipe-schedule="csv=%S/Inputs/schedule-zb-2stages.csv virtual-stages=2 waves=2" -verify-diagnostics
//
// Failure is a non-zero exit status with the diagnostic on stderr.
// RUN: not pipeopt %t/unknown.mlir --pipe-schedule="schedule=gpipe-2" -o /dev/null 2>&1 | FileCheck %s
// RUN: not pipeopt %t/csv-and-schedule.mlir --pipe-schedule="csv=%S/Inputs/schedule-zb-2stages.csv schedule=gpipe" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: error: pipe-schedule: csv='{{.*}}schedule-zb-2stages.csv' imports the whole schedule table, so schedule=gpipe would be ignored; give either csv or the schedule options
// CHECK: unknown.mlir:{{[0-9]+}}:1: error: cannot schedule @m: unknown schedule 'gpipe-2' (known: gpipe, 1f1b, interleaved-1f1b, looped-bfs, zb-h1, zb-h2, zb-v, interleaved-zb, zb-auto, chimera, hanayo, dualpipev, pipedream, pipedream-2bw, forward-only)

//--- no-graph.mlir
// expected-error@+1 {{no stage graph found: expected a func.func whose body is pipe.stage_call ops (run pipe-outline-stages first)}}
module {
  func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

//--- not-a-call.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 1 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error@+1 {{a stage graph may only contain pipe.stage_call and func.return, found 'arith.addf'}}
  %b = arith.addf %a, %a : tensor<4xf32>
  return %b : tensor<4xf32>
}

//--- out-of-order.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 2 : i64} {
  // expected-error@+1 {{stage calls must appear once per stage in stage order: expected stage 0, found stage 1}}
  %a = pipe.stage_call @m_stage1(%x) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @m_stage0(%a) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

//--- num-stages.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{pipe.num_stages = 2 but the stage graph has 1 stage calls}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 2 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

//--- returns-argument.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) attributes {pipe.num_stages = 1 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error@+1 {{result #1 returns a model argument directly; every result must be produced by a stage}}
  return %a, %x : tensor<4xf32>, tensor<4xf32>
}

//--- not-a-tensor.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> (tensor<4xf32>, i32) attributes {pipe.stage = 0 : i64} {
  %c = arith.constant 0 : i32
  return %x, %c : tensor<4xf32>, i32
}
func.func @m_stage1(%x: tensor<4xf32>, %n: i32) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 2 : i64} {
  %a:2 = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> (tensor<4xf32>, i32)
  // expected-error@+1 {{the value from stage 0 (operand #1) has type 'i32'; values crossing stages, model arguments and results must be ranked tensors}}
  %b = pipe.stage_call @m_stage1(%a#0, %a#1) stage 1 : (tensor<4xf32>, i32) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

//--- unknown.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{cannot schedule @m: unknown schedule 'gpipe-2' (known: gpipe, 1f1b, interleaved-1f1b, looped-bfs, zb-h1, zb-h2, zb-v, interleaved-zb, zb-auto, chimera, hanayo, dualpipev, pipedream, pipedream-2bw, forward-only)}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 1 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

//--- few-microbatches.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage2(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 2 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{cannot schedule @m: 1f1b needs num-microbatches >= the number of ranks (3), got 2}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 3 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  %c = pipe.stage_call @m_stage2(%b) stage 2 : (tensor<4xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}

//--- chimera-odd.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage2(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 2 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{cannot schedule @m: chimera needs an even num-stages (two bidirectional pipelines), got 3}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 3 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  %c = pipe.stage_call @m_stage2(%b) stage 2 : (tensor<4xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}

//--- chunks.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage2(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 2 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{cannot schedule @m: interleaved-1f1b: num-stages (3) must be a multiple of the chunks per rank (2)}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 3 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  %c = pipe.stage_call @m_stage2(%b) stage 2 : (tensor<4xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}

//--- chunks-single.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage2(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 2 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{cannot schedule @m: 1f1b uses 1 chunk(s) per rank; virtual-stages must be 1, got 3}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 3 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  %c = pipe.stage_call @m_stage2(%b) stage 2 : (tensor<4xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}

//--- non-dividing.mlir
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
// expected-error@+1 {{cannot schedule @m: chimera needs num-microbatches to be a multiple of num-stages (4) (basic units of 4 microbatches), got 3}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 4 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  %c = pipe.stage_call @m_stage2(%b) stage 2 : (tensor<4xf32>) -> tensor<4xf32>
  %d = pipe.stage_call @m_stage3(%c) stage 3 : (tensor<4xf32>) -> tensor<4xf32>
  return %d : tensor<4xf32>
}

//--- num-ranks.mlir
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
// expected-error@+1 {{cannot schedule @m: 1f1b: num-stages (4) must equal num-ranks (3) x chunks per rank (1)}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 4 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  %c = pipe.stage_call @m_stage2(%b) stage 2 : (tensor<4xf32>) -> tensor<4xf32>
  %d = pipe.stage_call @m_stage3(%c) stage 3 : (tensor<4xf32>) -> tensor<4xf32>
  return %d : tensor<4xf32>
}

//--- bad-path.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{cannot read schedule CSV '}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 1 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

//--- malformed.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{line 1 (rank 0), cell 2: invalid action '0X1': unknown type 'X' (torch 2.15 types}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 2 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

//--- csv-stages.mlir
// The CSV describes 2 stages; the model has 3.
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage2(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 2 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{stage 2 has no compute action in the CSV; cannot infer its rank}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 3 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  %c = pipe.stage_call @m_stage2(%b) stage 2 : (tensor<4xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}

//--- deadlock.mlir
// Rank 0 posts RECV_B before SEND_F, rank 1 waits in RECV_F: a cycle.
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{deadlock: rank 0 waits on recv from rank 1: 0RECV_B0 (gradient, stage 0 <- 1, mb 0) -> rank 1 waits on recv from rank 0: 1RECV_F0 (activation, stage 1 <- 0, mb 0) -> rank 0}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 2 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

//--- csv-huge-index.mlir
// A microbatch index far beyond any real pipeline is rejected before the
// importer sizes its tables by it (it used to abort with "out of memory").
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
// expected-error@+1 {{line 1 (rank 0), cell 2: action '0F2000000000' has microbatch index 2000000000, more than the largest supported microbatch index 65535}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 4 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  %c = pipe.stage_call @m_stage2(%b) stage 2 : (tensor<4xf32>) -> tensor<4xf32>
  %d = pipe.stage_call @m_stage3(%c) stage 3 : (tensor<4xf32>) -> tensor<4xf32>
  return %d : tensor<4xf32>
}

//--- exists.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{cannot create program @m_rank0: the symbol already exists (already scheduled?)}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 1 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}
pipe.program @m_rank0 rank 0 of 1 microbatches 1 {
}

// Integer options are range-checked before they are narrowed to int: no
// silent truncation to 32 bits, and negative values are not the default.
//--- microbatches-wide.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{pipe-schedule: num-microbatches must be between 0 and 65536, got 4294967297}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 1 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

//--- microbatches-negative.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{pipe-schedule: num-microbatches must be between 0 and 65536, got -2}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 1 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

//--- virtual-stages-wide.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{pipe-schedule: virtual-stages must be between 0 and 65536, got 4294967297}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 1 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

//--- num-ranks-negative.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{pipe-schedule: num-ranks must be between 0 and 65536, got -1}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 1 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

//--- waves-zero.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{pipe-schedule: waves must be between 1 and 65536, got 0}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 1 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// zb-auto's options: a memory limit below 0 (0 = the default), the options
// with another schedule, a negative communication time, an unknown device.
//--- memory-limit-negative.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{pipe-schedule: memory-limit must be between 0 and 65536, got -1}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 1 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

//--- memory-limit-not-auto.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{pipe-schedule: memory-limit and comm-time apply to schedule=zb-auto only, not to schedule=1f1b}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 1 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

//--- comm-time-negative.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{cannot schedule @m: zb-auto: communication time must be finite and >= 0 seconds, got -0.5}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 1 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

//--- auto-device.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{pipe-schedule: unknown device 'abacus' (expected one of h100, h200, a100, cpu}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 1 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// csv imports the whole table: the generator's options would be silently
// ignored, so giving both is an error (an explicit schedule=1f1b too).
//--- csv-and-schedule.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{pipe-schedule: csv='}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 2 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

//--- csv-and-default-schedule.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{' imports the whole schedule table, so schedule=1f1b would be ignored; give either csv or the schedule options}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 2 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

//--- csv-and-options.mlir
func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @m_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{so virtual-stages=2, waves=2 would be ignored}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 2 : i64} {
  %a = pipe.stage_call @m_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @m_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}
