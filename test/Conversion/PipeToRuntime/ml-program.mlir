// RUN: pipeopt %s -convert-pipe-to-runtime | FileCheck %s
// RUN: pipeopt %s -pipeopt-lower-to-llvm | FileCheck %s --check-prefix=LLVM

// Constant loads of ml_program globals become arith.constant; a mutable
// global that is read is bufferized to a memref.global; an unused one is
// dropped by the pipeline's symbol-dce.

ml_program.global private @bias(dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>) : tensor<4xf32>
ml_program.global private mutable @scale(dense<2.0> : tensor<4xf32>) : tensor<4xf32>
ml_program.global private mutable @global_seed(dense<0> : tensor<i64>) : tensor<i64>

// CHECK-LABEL: func.func private @f
// CHECK:         arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK:         ml_program.global_load @scale
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  %b = ml_program.global_load_const @bias : tensor<4xf32>
  %s = ml_program.global_load @scale : tensor<4xf32>
  %y = arith.addf %x, %b : tensor<4xf32>
  %z = arith.mulf %y, %s : tensor<4xf32>
  return %z : tensor<4xf32>
}

pipe.program @f_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %y = pipe.forward @f(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  pipe.output %y result 0 microbatch 0 : tensor<4xf32>
}

// LLVM-NOT: global_seed
// LLVM: llvm.mlir.global private @scale
// LLVM-NOT: global_seed
// LLVM: llvm.func @pipeopt_rank_0
