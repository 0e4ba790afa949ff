// RUN: pipeopt %s -split-input-file -pipe-prepare -pipe-partition="num-stages=2" | FileCheck %s
// RUN: pipeopt %s -split-input-file -pipe-prepare -pipe-partition="num-stages=3 annotate-costs" | FileCheck %s --check-prefix=THREE
// RUN: pipeopt %s -split-input-file -pipe-prepare -pipe-partition="num-stages=2 report=-" -o /dev/null | FileCheck %s --check-prefix=TABLE
// RUN: pipeopt %s -split-input-file -pipe-prepare -pipe-partition="num-stages=2 strategy=uniform" | FileCheck %s --check-prefix=UNIFORM

// A chain of four equal matmuls plus a residual add. The constant, the
// empty tensor and the fill are rematerialized (pipe.remat); matmuls are
// placed. With 3-microsecond link latency, the balanced split of two stages
// keeps one matmul on stage 0 (sending a single value) rather than two
// (which would also send the residual).

// CHECK-LABEL: func.func @chain
// CHECK-SAME: attributes {pipe.num_stages = 2 : i64}
// CHECK: arith.constant {pipe.remat, pipe.stage = 0 : i64}
// CHECK: tensor.empty() {pipe.remat, pipe.stage = 0 : i64}
// CHECK: linalg.fill {pipe.remat, pipe.stage = 0 : i64}
// CHECK: linalg.matmul {pipe.stage = 0 : i64}
// CHECK: linalg.matmul {pipe.stage = 1 : i64}
// CHECK: linalg.matmul {pipe.stage = 1 : i64}
// CHECK: linalg.matmul {pipe.stage = 1 : i64}
// CHECK: arith.addf {{.*}} {pipe.stage = 1 : i64}

// THREE-LABEL: func.func @chain
// THREE-SAME: attributes {pipe.num_stages = 3 : i64}
// THREE: linalg.fill {pipe.cost = #pipe.cost<flops = 0.000000e+00, bytes = 6.553600e+04, time = {{.*}}>, pipe.remat, pipe.stage = 0 : i64}
// THREE: linalg.matmul {pipe.cost = #pipe.cost<{{.*}}>, pipe.stage = 0 : i64}
// THREE: linalg.matmul {pipe.cost = #pipe.cost<{{.*}}>, pipe.stage = 0 : i64}
// THREE: linalg.matmul {pipe.cost = #pipe.cost<{{.*}}>, pipe.stage = 1 : i64}
// THREE: linalg.matmul {pipe.cost = #pipe.cost<{{.*}}>, pipe.stage = 1 : i64}
// THREE: arith.addf {{.*}}pipe.stage = 2 : i64}

// TABLE: pipe-partition @chain: 2 stages on h100, 1 microbatch, schedule 1f1b
// TABLE: stage    ops remat
// TABLE-NEXT: 0 1 3
// TABLE-NEXT: 1 4 3
// TABLE: strategy balanced: bottleneck
// TABLE: vs uniform: -{{[0-9.]+}}%
// TABLE: vs params: -{{[0-9.]+}}%
// TABLE: vs lower bound: +{{[0-9.]+}}%

// UNIFORM-LABEL: func.func @chain
// UNIFORM: linalg.matmul {pipe.stage = 0 : i64}
// UNIFORM: linalg.matmul {pipe.stage = 0 : i64}
// UNIFORM: linalg.matmul {pipe.stage = 0 : i64}
// UNIFORM: linalg.matmul {pipe.stage = 1 : i64}
// UNIFORM: arith.addf {{.*}} {pipe.stage = 1 : i64}
func.func @chain(%x: tensor<64x256xf32>, %w0: tensor<256x256xf32>, %w1: tensor<256x256xf32>,
                 %w2: tensor<256x256xf32>, %w3: tensor<256x256xf32>) -> tensor<64x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x256xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<64x256xf32>) -> tensor<64x256xf32>
  %0 = linalg.matmul ins(%x, %w0 : tensor<64x256xf32>, tensor<256x256xf32>) outs(%init : tensor<64x256xf32>) -> tensor<64x256xf32>
  %1 = linalg.matmul ins(%0, %w1 : tensor<64x256xf32>, tensor<256x256xf32>) outs(%init : tensor<64x256xf32>) -> tensor<64x256xf32>
  %2 = linalg.matmul ins(%1, %w2 : tensor<64x256xf32>, tensor<256x256xf32>) outs(%init : tensor<64x256xf32>) -> tensor<64x256xf32>
  %3 = linalg.matmul ins(%2, %w3 : tensor<64x256xf32>, tensor<256x256xf32>) outs(%init : tensor<64x256xf32>) -> tensor<64x256xf32>
  %4 = arith.addf %3, %0 : tensor<64x256xf32>
  return %4 : tensor<64x256xf32>
}

// -----

// Helper calls are inlined before partitioning (pipe-prepare), and a causal
// mask computed only from constants (linalg.index) is rematerialized, not
// placed.

#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @caller
// CHECK-NOT: call
// CHECK: tensor.empty() {pipe.remat, pipe.stage = 1 : i64}
// CHECK: linalg.generic {{.*}}attrs = {pipe.remat, pipe.stage = 1 : i64}
// CHECK: linalg.matmul {pipe.stage = 0 : i64}
// CHECK: linalg.matmul {pipe.stage = 0 : i64}
// CHECK: tosa.add {{.*}}{pipe.stage = 1 : i64}
// CHECK-NOT: func.func private @helper
func.func private @helper(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant dense<0.0> : tensor<8x8xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%zero : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
func.func @caller(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %e = tensor.empty() : tensor<8x8xf32>
  %mask = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<8x8xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %lt = arith.cmpi ult, %i, %j : index
    %neg = arith.constant -1.0e+30 : f32
    %z = arith.constant 0.0 : f32
    %v = arith.select %lt, %neg, %z : f32
    linalg.yield %v : f32
  } -> tensor<8x8xf32>
  %0 = call @helper(%x, %w) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = call @helper(%0, %w) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %2 = tosa.add %1, %mask : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}
