// Measured profiles and hardware files steer pipe-partition.
//
// RUN: rm -rf %t && split-file %s %t
// RUN: pipeopt %t/chain.mlir -pipe-partition="num-stages=2" | FileCheck %s --check-prefix=EST
// RUN: pipeopt %t/chain.mlir -pipe-partition="num-stages=2 profile=%t/ops.json" | FileCheck %s --check-prefix=OPS
// RUN: pipeopt %t/chain.mlir -pipe-partition="num-stages=2" \
// RUN:   | pipeopt -pipe-partition="num-stages=2 profile=%t/stages.json" | FileCheck %s --check-prefix=STAGES
// RUN: pipeopt %t/chain.mlir -pipe-partition="num-stages=2 hardware=%t/device.json report=%t/report.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=JSON < %t/report.json

// Estimates: four equal matmuls, two per stage.
// EST: linalg.matmul {pipe.stage = 0 : i64}
// EST-NEXT: linalg.matmul {pipe.stage = 0 : i64}
// EST-NEXT: linalg.matmul {pipe.stage = 1 : i64}
// EST-NEXT: linalg.matmul {pipe.stage = 1 : i64}

// Op #1 (the first matmul) measured at 1 ms: it gets stage 0 to itself.
// OPS: linalg.matmul {pipe.stage = 0 : i64}
// OPS-NEXT: linalg.matmul {pipe.stage = 1 : i64}
// OPS-NEXT: linalg.matmul {pipe.stage = 1 : i64}
// OPS-NEXT: linalg.matmul {pipe.stage = 1 : i64}

// Stage 0 of the first partition measured 20x slower than stage 1: its two
// matmuls take 1 ms each, so one of them moves to stage 1.
// STAGES: linalg.matmul {pipe.stage = 0 : i64}
// STAGES-NEXT: linalg.matmul {pipe.stage = 1 : i64}
// STAGES-NEXT: linalg.matmul {pipe.stage = 1 : i64}
// STAGES-NEXT: linalg.matmul {pipe.stage = 1 : i64}

// JSON: "device": "my-cpu"
// JSON: "capacity_bytes": 1000000000

//--- chain.mlir
func.func @chain(%x: tensor<64x256xf32>, %w0: tensor<256x256xf32>, %w1: tensor<256x256xf32>,
                 %w2: tensor<256x256xf32>, %w3: tensor<256x256xf32>) -> tensor<64x256xf32> {
  %c = arith.constant dense<0.0> : tensor<64x256xf32>
  %0 = linalg.matmul ins(%x, %w0 : tensor<64x256xf32>, tensor<256x256xf32>) outs(%c : tensor<64x256xf32>) -> tensor<64x256xf32>
  %1 = linalg.matmul ins(%0, %w1 : tensor<64x256xf32>, tensor<256x256xf32>) outs(%c : tensor<64x256xf32>) -> tensor<64x256xf32>
  %2 = linalg.matmul ins(%1, %w2 : tensor<64x256xf32>, tensor<256x256xf32>) outs(%c : tensor<64x256xf32>) -> tensor<64x256xf32>
  %3 = linalg.matmul ins(%2, %w3 : tensor<64x256xf32>, tensor<256x256xf32>) outs(%c : tensor<64x256xf32>) -> tensor<64x256xf32>
  return %3 : tensor<64x256xf32>
}

//--- ops.json
{"ops": [{"index": 1, "forward_s": 0.001}]}

//--- stages.json
{"format": "pipeopt-profile", "version": 1,
 "stages": [{"stage": 0, "ranks": [0], "forward_s": 0.002, "backward_s": null},
            {"stage": 1, "ranks": [1], "forward_s": 0.0001, "backward_s": null}]}

//--- device.json
{"base": "cpu", "name": "my-cpu", "memory_capacity": "1GB",
 "topology": {"ranks_per_node": 1,
              "inter_node": {"latency_s": 1e-5, "bandwidth": 1e9}}}
