// RUN: pipeopt %pipeopt_src/examples/mlp4.tosa.mlir --pipe-prepare --pipe-partition="num-stages=4" --pipe-outline-stages --pipe-schedule="schedule=1f1b num-microbatches=4" --pipe-verify-schedule | FileCheck %s
// RUN: pipeopt %pipeopt_src/examples/mlp4.tosa.mlir --pipe-prepare --pipe-partition="num-stages=4" --pipe-outline-stages --pipe-schedule="schedule=interleaved-1f1b virtual-stages=2 num-microbatches=4" --pipe-verify-schedule | FileCheck %s --check-prefix=INTER

// pipe-schedule on the output of pipe-outline-stages (not hand-written):
// one program per rank, each running its stage's forward for every
// microbatch, and the programs pass pipe-verify-schedule.

// CHECK-LABEL: pipe.program @mlp4_rank0 rank 0 of 4 microbatches 4 attributes {schedule = "1f1b"}
// CHECK-COUNT-4: pipe.forward @mlp4_stage0
// CHECK-LABEL: pipe.program @mlp4_rank1 rank 1 of 4 microbatches 4
// CHECK-COUNT-4: pipe.forward @mlp4_stage1
// CHECK-LABEL: pipe.program @mlp4_rank2 rank 2 of 4 microbatches 4
// CHECK-COUNT-4: pipe.forward @mlp4_stage2
// CHECK-LABEL: pipe.program @mlp4_rank3 rank 3 of 4 microbatches 4
// CHECK-COUNT-4: pipe.output

// INTER-LABEL: pipe.program @mlp4_rank0 rank 0 of 2 microbatches 4 attributes {schedule = "interleaved-1f1b"}
// INTER: pipe.forward @mlp4_stage0
// INTER: pipe.forward @mlp4_stage2
// INTER-LABEL: pipe.program @mlp4_rank1 rank 1 of 2 microbatches 4
// INTER: pipe.forward @mlp4_stage1
// INTER: pipe.forward @mlp4_stage3
