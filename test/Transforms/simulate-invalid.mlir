// RUN: pipeopt %s -split-input-file --pipe-simulate -verify-diagnostics -o /dev/null
// RUN: not pipeopt %s -split-input-file --pipe-simulate="trace=%t.trace.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TWO
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=4" -o %t.scheduled.mlir
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="device=tpu" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DEVICE
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="hardware=%t.missing.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=HW-MISSING
// RUN: echo '{' > %t.bad.json
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="hardware=%t.bad.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=HW-BAD
// RUN: echo '{"memory_bandwith": 1}' > %t.badkey.json
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="hardware=%t.badkey.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=HW-KEY
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="system=compute-huge/net-slow" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SYSTEM
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="system=%t.missing.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SYS-MISSING
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="system=%t.bad.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SYS-BAD
// RUN: echo '[{"name": "a"}, {"name": "b"}]' > %t.two.json
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="system=%t.two.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SYS-TWO
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="optimizer-factor=-2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="data-parallel=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DP
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="data-parallel=-3" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DP-NEG
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="trace-level=gantt svg=%t.svg" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LEVEL
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="report=%t.nodir/r.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=WRITE-REPORT
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="trace=%t.nodir/t.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=WRITE-TRACE
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="svg=%t.nodir/t.svg" -o /dev/null 2>&1 | FileCheck %s --check-prefix=WRITE-SVG
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="profile=%t.missing.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROF-MISSING
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="profile=%t.bad.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROF-BAD
// RUN: echo '{"num_stages": 4}' > %t.prof-empty.json
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="profile=%t.prof-empty.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROF-EMPTY
// RUN: echo '{"stages": [{"stage": 0, "forward_s": -1}]}' > %t.prof-neg.json
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="profile=%t.prof-neg.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROF-NEG
// RUN: echo '{"stages": [{"stage": 0, "forward_s": 1e-3}, {"stage": 1, "forward_s": 1e-3}]}' > %t.prof-2.json
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="profile=%t.prof-2.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROF-FEWER
// RUN: echo '{"stages": [{"stage": 0, "forward_s": 1e-3}, {"stage": 1, "forward_s": 1e-3}, {"stage": 2, "forward_s": 1e-3}, {"stage": 3, "forward_s": 1e-3}, {"stage": 4, "forward_s": 1e-3}]}' > %t.prof-5.json
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="profile=%t.prof-5.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROF-MORE
// RUN: echo '{"ops": [{"index": 1, "forward_s": 1e-3}]}' > %t.prof-ops.json
// RUN: not pipeopt %t.scheduled.mlir --pipe-simulate="profile=%t.prof-ops.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROF-OPS

// Option errors point at the first program.
// DEVICE: error: pipe-simulate: unknown device 'tpu' (expected one of h100, h200, a100, cpu
// DEVICE-NEXT: pipe.program @u_rank0
// HW-MISSING: error: pipe-simulate: cannot read hardware file '{{.*}}missing.json'
// HW-BAD: error: pipe-simulate: invalid JSON in hardware file '{{.*}}bad.json'
// HW-KEY: error: pipe-simulate: {{.*}}badkey.json: hardware JSON: unknown key 'memory_bandwith'
// SYSTEM: error: pipe-simulate: system: unknown system preset 'compute-huge/net-slow' (known: ideal, compute-slow/net-slow,
// SYS-MISSING: error: pipe-simulate: system: cannot read '{{.*}}missing.json'
// SYS-BAD: error: pipe-simulate: system: {{.*}}bad.json: system config: invalid JSON
// SYS-TWO: error: pipe-simulate: system file '{{.*}}two.json' defines 2 systems; give a file with exactly one
// OPT: error: pipe-simulate: optimizer-factor must be a finite number between 0 and 1e6 (or -1 for the default), got -2
// DP: error: pipe-simulate: data-parallel must be an integer in [1, 1048576], got 0
// DP-NEG: error: pipe-simulate: data-parallel must be an integer in [1, 1048576], got -3
// LEVEL: for the --trace-level option: Cannot find option named 'gantt'!
// WRITE-REPORT: error: pipe-simulate: report: cannot write '{{.*}}nodir/r.json'
// WRITE-TRACE: error: pipe-simulate: trace: cannot write '{{.*}}nodir/t.json'
// WRITE-SVG: error: pipe-simulate: svg: cannot write '{{.*}}nodir/t.svg'
// Profiles (profile=): unreadable, malformed, and stages that do not match
// the programs' 4 stages.
// PROF-MISSING: error: pipe-simulate: cannot read profile file '{{.*}}missing.json'
// PROF-MISSING-NEXT: pipe.program @u_rank0
// PROF-BAD: error: pipe-simulate: invalid JSON in profile file '{{.*}}bad.json'
// PROF-EMPTY: error: pipe-simulate: {{.*}}prof-empty.json: profile JSON: no "stages" or "ops" entries
// PROF-NEG: error: pipe-simulate: {{.*}}prof-neg.json: profile JSON: stages[0].forward_s: expected a number of seconds >= 0
// PROF-FEWER: error: pipe-simulate: profile '{{.*}}prof-2.json' has no times for stage 2 of @u (4 stages)
// PROF-MORE: error: pipe-simulate: profile '{{.*}}prof-5.json' has stage 4, but the programs of @u have 4 stages
// PROF-OPS: error: pipe-simulate: profile '{{.*}}prof-ops.json' has per-op entries ("ops"); their indices name ops of the model function before outlining: apply them with pipe-partition profile=, or give per-stage entries ("stages")

// expected-error@+1 {{pipe-simulate: no pipe.program in the module (run pipe-schedule on a stage graph first)}}
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// Rank 0 runs the backward of microbatch 0 before its forward.

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{pipe-simulate: the programs of @m are not a valid schedule (run pipe-verify-schedule for the offending op): }}
pipe.program @m_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  pipe.backward full stage 0 microbatch 0
  %a = pipe.forward @m_stage0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.output %a result 0 microbatch 0 : tensor<4xf32>
}

// -----

// The stage function is a declaration: no ops to cost.

func.func private @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64}
// expected-error@+1 {{pipe-simulate: stage 0 of @m has no stage function with a body to take its costs from}}
pipe.program @m_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a = pipe.forward @m_stage0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.output %a result 0 microbatch 0 : tensor<4xf32>
  pipe.backward full stage 0 microbatch 0
}

// -----

// Rank 1 has no program.

func.func @m_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{no program for rank 1 of 2 (programs of @m)}}
pipe.program @m_rank0 rank 0 of 2 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %a = pipe.forward @m_stage0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.output %a result 0 microbatch 0 : tensor<4xf32>
}

// -----

// Two scheduled functions: fine without trace= / svg=, an error with them
// (second RUN line, checked with TWO).

func.func @a_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @a_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %y = pipe.forward @a_stage0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.output %y result 0 microbatch 0 : tensor<4xf32>
}
pipe.program @b_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %y = pipe.forward @a_stage0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.output %y result 0 microbatch 0 : tensor<4xf32>
}

// TWO: error: pipe-simulate: trace= and svg= need exactly one scheduled function, the module has 2
