// RUN: pipeopt %s -split-input-file -pipe-prepare | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-NOT: call
// CHECK: %[[A:.*]] = arith.addf %{{.*}}, %{{.*}} : tensor<4xf32>
// CHECK: arith.mulf %[[A]], %[[A]] : tensor<4xf32>
// CHECK-NOT: func.func private @helper
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = arith.addf %x, %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = arith.mulf %a, %a : tensor<4xf32>
  return %b : tensor<4xf32>
}
