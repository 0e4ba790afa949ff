// RUN: pipeopt %s -pipe-partition="num-stages=2" -pipe-outline-stages | FileCheck %s

// A model with a constant among its results. The constant stays
// rematerializable (it is materialized where it is returned) rather than
// being placed alone in a stage that outlining would find empty; the
// element-wise ops on the input are placed, one per stage.

// CHECK: func.func @cr(
// CHECK:   pipe.stage_call @cr_stage0
// CHECK:   pipe.stage_call @cr_stage1
// CHECK: func.func @cr_stage0({{.*}}attributes {pipe.stage = 0 : i64}
// CHECK:   tosa.tanh
// CHECK: func.func @cr_stage1({{.*}}attributes {pipe.stage = 1 : i64}
// CHECK:   tosa.exp
func.func @cr(%x: tensor<1x64xf32>) -> (tensor<1x64xf32>, tensor<1x64xf32>) {
  %c = "tosa.const"() <{values = dense<1.0> : tensor<1x64xf32>}> : () -> tensor<1x64xf32>
  %0 = tosa.tanh %x : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %1 = tosa.exp %0 : (tensor<1x64xf32>) -> tensor<1x64xf32>
  return %1, %c : tensor<1x64xf32>, tensor<1x64xf32>
}
