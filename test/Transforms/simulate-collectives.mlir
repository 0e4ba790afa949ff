// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-simulate="backward-cost=rule system=%S/Inputs/simulate-dp-system.json data-parallel=2" -o /dev/null | FileCheck %s --check-prefix=DP
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-simulate="backward-cost=rule system=%S/Inputs/simulate-dp-system.json data-parallel=2 report=%t.dp.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=DP-JSON < %t.dp.json
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-simulate="backward-cost=rule system=%S/Inputs/simulate-dp-system.json" -o /dev/null | FileCheck %s --check-prefix=NODP
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=chimera num-microbatches=4" --pipe-simulate="backward-cost=rule system=compute-medium/net-slow" -o /dev/null | FileCheck %s --check-prefix=CHIMERA
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-simulate="backward-cost=rule system=ideal optimizer-step=true" -o /dev/null | FileCheck %s --check-prefix=OPT
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=pipedream num-microbatches=12" --pipe-simulate="backward-cost=rule report=%t.pd.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=PD-JSON < %t.pd.json
// RUN: pipeopt %S/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=pipedream num-microbatches=12" --pipe-simulate="backward-cost=rule" -o /dev/null | FileCheck %s --check-prefix=PD
// RUN: pipeopt %S/Inputs/simulate-tied.mlir --pipeopt-pipeline="num-stages=2 num-microbatches=2 schedule=1f1b device=cpu training=true" --pipe-materialize-backward --pipe-simulate="system=%S/Inputs/simulate-tied-system.json report=%t.tied.json" -o /dev/null 2>/dev/null
// RUN: FileCheck %s --check-prefix=TIED < %t.tied.json

// After the backward pass (include/pipeopt/Simulate/Collectives.h) on the
// uniform 4-stage model: every stage has 64*64 = 4096 f32 parameters; the
// gradient exchanges move the runtime's double sums of them, 8 * 4096 =
// 32768 B (not the x4 with optimizer state).

// Data parallel D = 2 on a system with 4 ranks per node: replica 1 is
// global ranks 4..7 on node 1, so rank r's bucket (its one stage, far
// below 25 MiB: one bucket at the end of its schedule) goes over the ring
// {r, 4 + r}, across the inter-node link (1 ms, 16.384 MB/s): 2 * 1e-3 +
// 32768 / 16384000 = 0.004 s per rank. Rank 0 finishes its backward last,
// so the iteration gets 0.004 s longer; each rank sends 2 (p-1)/p * 32768
// = 32768 B, 131072 B in all.
// Point-to-point transfers inside the node are free: the event level
// equals the table.
// DP: level table: makespan [[MS:[0-9.e+-]+]] s
// DP-NEXT: note: schedule table, cost-model compute times, free point-to-point communication, gradient all-reduces without contention
// DP-NEXT: after backward: all-reduce 0.004 s, optimizer 0 s (largest rank), iteration lengthened by 0.004 s, all-reduce bytes sent 131072 B
// DP: level event: makespan [[MS]] s
// DP-NEXT: note:
// DP-NEXT: after backward: all-reduce 0.004 s, optimizer 0 s (largest rank), iteration lengthened by 0.004 s, all-reduce bytes sent 131072 B
// DP-JSON: "data_parallel": 2
// DP-JSON: "allreduce_s": 0.004
// DP-JSON: "collective_bytes": 131072
// DP-JSON: "post_backward_s": 0.004

// D = 1 (the default) and 1F1B: no replicas, nothing after the backward.
// NODP-NOT: after backward

// Chimera S = 4: stage k on ranks k and 3 - k; with 2 ranks per node
// (net-slow preset) both rings {0, 3} and {1, 2} cross nodes (30 us,
// 12.5 GB/s): 2 * 30e-6 + 32768 / 12.5e9 = 6.262144e-05 s per stage, two
// stages per rank. The formula level leaves the all-reduces out.
// CHIMERA: level formula:
// CHIMERA-NOT: after backward
// CHIMERA: level table:
// CHIMERA-NEXT: note: schedule table, cost-model compute times, free point-to-point communication, gradient all-reduces without contention
// CHIMERA-NEXT: after backward: all-reduce 0.000125243 s, optimizer 0 s (largest rank), iteration lengthened by {{[0-9.e+-]+}} s, all-reduce bytes sent 262144 B
// CHIMERA: level event:
// CHIMERA-NEXT: note:
// CHIMERA-NEXT: after backward: all-reduce 0.000125243 s

// optimizer-step: (2 * (1 + 3) - 1) * 16384 B / 3.35 TB/s (H100 HBM3) =
// 3.42352e-08 s per stage, after the rank's last backward.
// OPT: level table:
// OPT: after backward: all-reduce 0 s, optimizer 3.42352e-08 s (largest rank), iteration lengthened by 3.42352e-08 s

// PipeDream: the delay matrix (row = updating stage, column = read block)
// and the start-up maximum floor(5/4 S^2 - S) = 16.
// PD: staleness max 14 mean 7.500, start-up max 16
// PD: delay matrix (max; row = updating stage, column = read block):
// PD-NEXT: 0 14 11 9 6
// PD-NEXT: 1 12 9 7 4
// PD-NEXT: 2 11 8 6 3
// PD-NEXT: 3 9 6 4 1
// The formula level has no matrix; the table level's comes first.
// PD-JSON: "level": "formula"
// PD-JSON-NOT: "staleness_delay_matrix"
// PD-JSON: "staleness_delay_matrix": [
// PD-JSON-NEXT: [
// PD-JSON-NEXT: 14,
// PD-JSON-NEXT: 11,
// PD-JSON: "staleness_startup_max_delay": 16

// Tied weight (Inputs/simulate-tied.mlir): both stages' pipe.gradient ops
// contribute to argument 1 (4x4 f32, exchanged as 16 doubles = 128 B), so
// ranks 0 and 1 (one rank per node) all-reduce it after the backward:
// 2 * 1e-3 + 128 / 64000 = 0.004 s, at the end of rank 0's last backward.
// TIED: "tied": [
// TIED-NEXT: {
// TIED-NEXT: "bytes": 128,
// TIED-NEXT: "stages": [
// TIED-NEXT: 0,
// TIED-NEXT: 1
// TIED: "level": "formula"
// TIED: "allreduce_s": 0.0040000
// TIED: "level": "table"
// TIED: "post_backward_s": 0.0040000
// TIED: "allreduce_s": 0.0040000
// TIED: "level": "event"
// TIED: "post_backward_s": 0.0040000
