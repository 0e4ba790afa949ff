// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-simulate="backward-cost=rule hardware=%S/Inputs/simulate-host-work.json optimizer-step=true" -o /dev/null | FileCheck %s --check-prefix=HOST
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-simulate="backward-cost=rule device=cpu optimizer-step=true" -o /dev/null | FileCheck %s --check-prefix=PRESET
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-simulate="backward-cost=rule hardware=%S/Inputs/simulate-host-work.json optimizer-step=true data-parallel=2 zero-stage=1 report=%t.zero.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=ZERO < %t.zero.json
// RUN: not pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-simulate="zero-stage=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADZERO
// RUN: not pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-simulate="bucket-mb=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADBUCKET

// The runtime's host work of a training step (docs/CostModel.md "Training
// steps"), from a machine file with exaggerated rates so that it dominates
// the cost model's microsecond stage times: every stage has one 64 x 64
// f32 weight, 4096 elements.
//  - gradient accumulation, 1e-3 s per element: 4.096 s added to every
//    BW action (1F1B, M = 4, S = 4: (M + S - 1) = 7 backwards on the
//    critical path: 28.672 s plus 7 (F + B + W));
//  - the optimizer (sgd, no pipe.optimizer in the module), 1e-3 s per
//    element: 4.096 s per stage after its rank's last backward.
// HOST: level table: makespan 32.7{{[0-9]+}} s
// HOST: after backward: all-reduce 0 s, optimizer 4.096 s (largest rank), iteration lengthened by 4.096 s

// The cpu preset has neither key: the memory-bound optimizer formula
// (2 (1 + 3) - 1) x 16384 B / 460.8 GB/s and no accumulation (microseconds).
// PRESET: level table: makespan 2.{{[0-9]+}}e-05 s
// PRESET: after backward: all-reduce 0 s, optimizer 2.48889e-07 s

// D = 2 with ZeRO-1: each rank reduce-scatters its 8-byte sums at the end
// of its schedule and updates half of the elements: 2.048 s.
// ZERO: "optimizer": "sgd"
// ZERO: "zero_stage": 1
// ZERO: "level": "table"
// ZERO: "optimizer_s": 2.048

// BADZERO: zero-stage must be 0 (all-reduce), 1 (ZeRO-1: reduce-scatter, sharded optimizer, all-gather) or -1 (the machine's zero_stage), got 2
// BADBUCKET: bucket-mb must be a capacity in MiB > 0
