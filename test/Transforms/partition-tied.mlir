// RUN: pipeopt %s -pipe-partition="num-stages=2 report=%t.json" -verify-diagnostics -o /dev/null
// RUN: FileCheck %s < %t.json
// RUN: pipeopt %s -pipe-partition="num-stages=2 report=-" -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=TABLE

// A weight used by both stages (tied input and output embedding) is reported
// with a warning and in the JSON report; each stage holds a copy, so both
// stages hold two 4 kB weights (stage 1: %w2 and its copy of %emb).
// TABLE: stage    ops remat      time_s   compute_s      comm_s     params
// TABLE-NEXT: 0   2     1 {{.*}} 8.2 kB
// TABLE-NEXT: 1   2     1 {{.*}} 8.2 kB
// TABLE: tied weight 0 '%arg1' (4.1 kB) used by stages 0 1

// CHECK: "tied_weights": [
// CHECK-NEXT: {
// CHECK-NEXT: "bytes": 4096,
// CHECK-NEXT: "name": "%arg1",
// CHECK-NEXT: "stages": [
// CHECK-NEXT: 0,
// CHECK-NEXT: 1
// CHECK-NEXT: ],
// CHECK-NEXT: "weight": 0

// expected-warning @+1 {{pipe-partition: weight '%arg1' (4.1 kB) is used by stages 0, 1 (tied weights): each of them holds a copy, and training must sum its gradients across them}}
func.func @tied(%x: tensor<4x32xf32>, %emb: tensor<32x32xf32>, %w1: tensor<32x32xf32>, %w2: tensor<32x32xf32>) -> tensor<4x32xf32> {
  %c = arith.constant dense<0.0> : tensor<4x32xf32>
  %0 = linalg.matmul ins(%x, %emb : tensor<4x32xf32>, tensor<32x32xf32>) outs(%c : tensor<4x32xf32>) -> tensor<4x32xf32>
  %1 = linalg.matmul ins(%0, %w1 : tensor<4x32xf32>, tensor<32x32xf32>) outs(%c : tensor<4x32xf32>) -> tensor<4x32xf32>
  %2 = linalg.matmul ins(%1, %w2 : tensor<4x32xf32>, tensor<32x32xf32>) outs(%c : tensor<4x32xf32>) -> tensor<4x32xf32>
  %3 = linalg.matmul ins(%2, %emb : tensor<4x32xf32>, tensor<32x32xf32>) outs(%c : tensor<4x32xf32>) -> tensor<4x32xf32>
  return %3 : tensor<4x32xf32>
}
