// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=gpipe num-microbatches=4" --pipe-simulate=backward-cost=rule -o /dev/null | FileCheck %s --check-prefix=GPIPE
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=gpipe num-microbatches=4" --pipe-simulate="backward-cost=rule report=%t.gpipe.json" -o /dev/null
// RUN: %python %S/Inputs/simulate-check.py %t.gpipe.json "bubble.table=3/7" "bubble.formula=3/7" "event>table" "formula=table" weights=65536 ranks=4 stages=4 microbatches=4 schedule=gpipe | FileCheck %s --check-prefix=CHECK-PASS
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=8" --pipe-simulate="backward-cost=rule system=ideal report=%t.ideal.json" -o /dev/null
// RUN: %python %S/Inputs/simulate-check.py %t.ideal.json "bubble.table=3/11" "event=table" "formula=table" schedule=1f1b | FileCheck %s --check-prefix=CHECK-PASS
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=8" --pipe-simulate="backward-cost=rule system=compute-medium/net-slow" -o /dev/null | FileCheck %s --check-prefix=ONEF
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=zb-h1 num-microbatches=8" --pipe-simulate=backward-cost=rule -o /dev/null | FileCheck %s --check-prefix=ZBH1
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=pipedream num-microbatches=12" --pipe-simulate=backward-cost=rule -o /dev/null | FileCheck %s --check-prefix=PD
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=interleaved-1f1b virtual-stages=2 num-microbatches=4" --pipe-simulate="backward-cost=rule optimizer-factor=0" -o /dev/null | FileCheck %s --check-prefix=INTER
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=forward-only num-microbatches=4" --pipe-simulate=backward-cost=rule -o /dev/null | FileCheck %s --check-prefix=FWD
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-simulate="backward-cost=rule trace=%t.trace.json svg=%t.svg" -o /dev/null
// RUN: FileCheck %s --check-prefix=TRACE < %t.trace.json
// RUN: FileCheck %s --check-prefix=SVG < %t.svg
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-simulate="backward-cost=rule report=- trace-level=table trace=%t.table.json" | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s --check-prefix=TTRACE < %t.table.json
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=forward-only num-microbatches=4" --pipe-simulate="backward-cost=rule profile=%S/Inputs/simulate-profile-fwd4.json" -o /dev/null | FileCheck %s --check-prefix=PROF-FWD
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-simulate="backward-cost=rule profile=%S/Inputs/simulate-profile-1f1b4.json" -o /dev/null | FileCheck %s --check-prefix=PROF-1F1B
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-simulate="backward-cost=rule profile=%S/Inputs/simulate-profile-1f1b4.json report=%t.prof.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROF-JSON < %t.prof.json
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-simulate -o /dev/null | FileCheck %s --check-prefix=GENERATED
// RUN: not pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-simulate=backward-cost=measured -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADCOST

// pipe-simulate on a uniform 4-stage model (every stage one 16x64 * 64x64
// f32 matmul, Inputs/simulate-uniform4.mlir): the cost model gives every
// stage the same F = B = W, so at the table level GPipe and 1F1B have the
// bubble (S-1)/(M+S-1), ZB-H1 (S-1)(F+B-W) / (M(F+B+W) + (S-1)(F+B-W)) =
// 3/27, and the formula level agrees with the table. Activations: 16*64*4 =
// 4096 B per microbatch and stage; weights 64*64*4 = 16384 B x (1 + 3).

// GPIPE: pipe-simulate: @u: schedule gpipe, 4 ranks, 4 stages, 4 microbatches, device h100, system h100 topology
// GPIPE: stage costs
// GPIPE:  0 [[T:[0-9.e+-]+]] [[T]] [[T]] 4096 65536 4096
// GPIPE:  1 [[T]] [[T]] [[T]] 4096 65536 4096
// GPIPE:  2 [[T]] [[T]] [[T]] 4096 65536 4096
// GPIPE:  3 [[T]] [[T]] [[T]] 4096 65536 0
// GPIPE: level formula: makespan [[MS:[0-9.e+-]+]] s, bubble 0.428571, peak activation 16384 B, weights 65536 B, communication 98304 B
// GPIPE: level table: makespan [[MS]] s, bubble 0.428571, peak activation 16384 B, weights 65536 B, communication 98304 B
// GPIPE-NEXT: note: schedule table
// GPIPE-NEXT: rank bubble
// GPIPE-NEXT: 0 0.428571 16384 65536
// GPIPE-NEXT: 1 0.428571 16384 65536
// GPIPE-NEXT: 2 0.428571 16384 65536
// GPIPE-NEXT: 3 0.428571 16384 65536
// GPIPE: level event: makespan {{.*}} s, bubble 0.{{[5-9]}}
// GPIPE-NOT: staleness

// CHECK-PASS-NOT: FAIL
// CHECK-PASS: PASS

// 1F1B keeps min(S - r, M) activations on rank r.
// ONEF: system compute-medium/net-slow
// ONEF: level table: makespan {{.*}} s, bubble 0.272727, peak activation 16384 B
// ONEF-NEXT: note:
// ONEF-NEXT: rank bubble
// ONEF-NEXT: 0 0.272727 16384 65536
// ONEF-NEXT: 1 0.272727 12288 65536
// ONEF-NEXT: 2 0.272727 8192 65536
// ONEF-NEXT: 3 0.272727 4096 65536
// ONEF: level event: makespan {{.*}} s, bubble 0.{{[5-9]}}

// ZBH1: schedule zb-h1, 4 ranks, 4 stages, 8 microbatches
// ZBH1: level formula: makespan [[MS:[0-9.e+-]+]] s, bubble 0.111111,
// ZBH1: level table: makespan [[MS]] s, bubble 0.111111,

// PipeDream: S^2 - S/2 = 14 and (S^2 - 1)/2 = 7.5 block updates; 4 weight
// versions stashed on rank 0.
// PD: level table: makespan {{.*}} s, bubble 0.200000, peak activation 16384 B, weights 262144 B, communication 294912 B, staleness max 14 mean 7.500

// Two chunks per rank: bubble (S-1)/(vM+S-1) = 1/9 with S = 2 ranks.
// INTER: schedule interleaved-1f1b, 2 ranks, 4 stages, 4 microbatches
// INTER: level formula: makespan [[MS:[0-9.e+-]+]] s, bubble 0.111111, {{.*}} weights 32768 B
// INTER: level table: makespan [[MS]] s, bubble 0.111111, {{.*}} weights 32768 B

// Forward only: GPipe order, F only, no optimizer state.
// FWD: schedule forward-only, 4 ranks
// FWD: 0 {{[0-9.e+-]+}} {{[0-9.e+-]+}} {{[0-9.e+-]+}} 4096 16384 4096
// Forward-only: activations cross the 3 cuts once per microbatch
// (4 x 3 x 4096 B) at every level; no gradients come back.
// FWD: level formula: makespan [[FWDMS:[0-9.e+-]+]] s, bubble 0.428571, peak activation 4096 B, weights 16384 B, communication 49152 B
// FWD: level table: makespan [[FWDMS]] s, bubble 0.428571, peak activation 4096 B, weights 16384 B, communication 49152 B
// FWD: level event: {{.*}} communication 49152 B

// Event-level trace: compute and transfer events, and a flow arrow from the
// start of each send ("s") to the end of its recv ("f").
// TRACE: "level":"event"
// TRACE-SAME: "title":"@u: 1f1b, 4 ranks, 4 microbatches, h100 topology, event level"
// TRACE-SAME: {"args":{"name":"compute"},"name":"thread_name"
// TRACE-SAME: "name":"F0","ph":"X","pid":0
// TRACE-SAME: "name":"send act s0->s1 mb0","ph":"X","pid":0
// TRACE-SAME: "name":"recv act s0->s1 mb0","ph":"X","pid":1
// TRACE-SAME: "id":1,"name":"transfer","ph":"s","pid":0,"tid":1
// TRACE-SAME: "id":1,"name":"transfer","ph":"f","pid":1,"tid":2
// TRACE-SAME: "name":"send grad s1->s0 mb3"
// SVG: <svg
// SVG: 1f1b, 4 ranks, 4 microbatches, h100 topology, event level
// SVG: </svg>

// The IR is not modified.
// IR: pipe-simulate: @u: schedule 1f1b
// IR: pipe.program @u_rank0 rank 0 of 4 microbatches 4
// TTRACE: "level":"table"

// Measured times (profile=): a pipeopt-run --profile file with forward times
// a = (0.25, 0.5, 0.125, 0.25) s replaces the estimated F of the 4 stages.
// Forward-only with free communication is a flow shop of M identical
// microbatches through a chain: the last stage finishes at
// sum(a) + (M - 1) * max(a) = 1.125 + 3 * 0.5 = 2.625 s; ranks are busy
// M * sum(a) = 4.5 of 4 * 2.625 rank-seconds, bubble 1 - 4.5 / 10.5.
// PROF-FWD: schedule forward-only, 4 ranks, 4 stages, 4 microbatches
// PROF-FWD: stage costs (per microbatch; F/B/W measured; weights only: no gradients or optimizer state):
// PROF-FWD-NEXT: stage
// PROF-FWD-NEXT: 0 0.25 {{.*}} 4096 16384 4096
// PROF-FWD-NEXT: 1 0.5 {{.*}} 4096 16384 4096
// PROF-FWD-NEXT: 2 0.125 {{.*}} 4096 16384 4096
// PROF-FWD-NEXT: 3 0.25 {{.*}} 4096 16384 0
// PROF-FWD: level table: makespan 2.625 s, bubble 0.571429,

// 1F1B with F = 0.25 s and BW ("backward_s") = 0.5 s per stage, split into
// B = W = 0.25 s in the ratio of the estimates (B = W for a weight matmul):
// (M + S - 1) * (F + B + W) = 7 * 0.75 = 5.25 s at the formula and table
// levels.
// PROF-1F1B: stage costs (per microbatch; F/B/W measured; weights include gradients and optimizer state: x4):
// PROF-1F1B-NEXT: stage
// PROF-1F1B-NEXT: 0 0.25 0.25 0.25 4096 65536 4096
// PROF-1F1B: level formula: makespan 5.25 s, bubble 0.428571,
// PROF-1F1B: level table: makespan 5.25 s, bubble 0.428571,
// PROF-JSON: "name": "@u on h100, measured ({{.*}}simulate-profile-1f1b4.json)"
// PROF-JSON: "forward_s": 0.25
// PROF-JSON: "measured": true

// The default B and W times cost each op's generated backward: B of a
// matmul with a weight is one matmul (dx = dy w^T), F's time exactly; W
// (dw = x^T dy) reads its zero-initialized accumulator too, so it is a
// little more. The per-op-class rule (above) says B = W = F. The
// activation is what the backward reads: the stage input x (16x64 f32 =
// 4096 B), not the matmul's result (the rule's 4096 B by coincidence).
// GENERATED: stage costs
// GENERATED-NEXT: F (s)
// GENERATED-NEXT: 0 [[F:[0-9.e+-]+]] [[F]] 2.01223e-06 4096 65536 4096
// BADCOST: for the --backward-cost option: Cannot find option named 'measured'!
