// The hardware JSON keys that pipeopt-calibrate writes beyond the presets'
// (docs/CostModel.md "Machine JSON"): cache_bytes / cache_bandwidth (an
// op whose bytes fit the cache moves them at the cache's bandwidth) and
// topology.cores_per_node (pipe-simulate's event level shares a node's
// cores among its busy ranks). Absent, they change nothing; wrong types
// and out-of-range values are errors naming the key.
//
// RUN: rm -rf %t && split-file %s %t
//
// Each one-op stage reads 32 B and writes 16 B. Within a 48 B cache at
// 48 B/s it takes 1 s; with a 47 B cache the 48 B go at the memory
// bandwidth of 1 B/s: 48 s.
// RUN: pipeopt %t/ok.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/cache-fits.json report=-" -o /dev/null | FileCheck %s --check-prefix=FITS
// FITS: 0 1 0 1.000E+00 1.000E+00 0.000E+00
// FITS: 1 1 0 1.000E+00 1.000E+00 0.000E+00
// RUN: pipeopt %t/ok.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/cache-small.json report=-" -o /dev/null | FileCheck %s --check-prefix=SMALL
// SMALL: 0 1 0 4.800E+01 4.800E+01 0.000E+00
// SMALL: 1 1 0 4.800E+01 4.800E+01 0.000E+00
//
// Four equal stages (F = 1.06222 us each), forward-only, 4 microbatches,
// free links: the table level (a processor per rank) takes 7 F; with 4
// ranks on 2 cores the event level runs 3 busy ranks at 2/3 and 4 at 1/2
// of their speed and takes 9 F (the unit case of SimulatorTest's
// RanksSharingCoresRunAtCoresOverBusy).
// RUN: pipeopt %S/../Transforms/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=forward-only num-microbatches=4" --pipe-simulate="hardware=%t/cores.json" -o /dev/null | FileCheck %s --check-prefix=CORES
// CORES: level table: makespan 7.43556e-06 s
// CORES: level event: makespan 9.56e-06 s
// CORES-NEXT: note: {{.*}}; the ranks of a node share 2 core(s) (processor sharing)
// RUN: pipeopt %S/../Transforms/Inputs/simulate-uniform4.mlir --pipe-schedule="schedule=forward-only num-microbatches=4" --pipe-simulate="hardware=%t/cores-enough.json" -o /dev/null | FileCheck %s --check-prefix=ENOUGH
// ENOUGH: level event: makespan 7.43556e-06 s
// ENOUGH-NOT: processor sharing
//
// RUN: pipeopt %t/cores-string.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/cores-string.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/idle-latency-negative.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/idle-latency-negative.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/idle-send-string.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/idle-send-string.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/cores-tiny.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/cores-tiny.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/cache-bandwidth-negative.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/cache-bandwidth-negative.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/cache-bandwidth-tiny.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/cache-bandwidth-tiny.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/cache-bytes-negative.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/cache-bytes-negative.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/cache-bytes-bool.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/cache-bytes-bool.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/operand-bandwidth-zero-point.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/operand-bandwidth-zero-point.json" -verify-diagnostics -o /dev/null
//
// contraction_operand_bandwidth: a 1 x 4 x 4 matmul per stage (32 FLOP)
// at a peak of 32 FLOP/s takes 1 s of compute; it reads 16 + 64 B of
// operands and 16 B of its init, 96 B at 96 B/s: 1 s more, 2 s (the
// memory traffic at 1e12 B/s is nothing). Without the key, 1 s.
// RUN: pipeopt %t/matmul.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/operand.json report=-" -o /dev/null | FileCheck %s --check-prefix=OPERAND
// OPERAND: 0 1 1 2.000E+00 2.000E+00 0.000E+00
// OPERAND: 1 1 1 2.000E+00 2.000E+00 0.000E+00
// RUN: pipeopt %t/matmul.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/no-operand.json report=-" -o /dev/null | FileCheck %s --check-prefix=NO-OPERAND
// NO-OPERAND: 0 1 1 1.000E+00 1.000E+00 0.000E+00

//--- ok.mlir
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %x, %x : tensor<4xf32>
  %1 = arith.mulf %0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

//--- cache-fits.json
{"base": "cpu", "name": "cached", "op_overhead_s": 0, "memory_bandwidth": 1,
 "cache_bytes": "48B", "cache_bandwidth": 48,
 "topology": {"intra_node": {"latency_s": 0, "bandwidth": 0}}}
//--- cache-small.json
{"base": "cpu", "name": "cached", "op_overhead_s": 0, "memory_bandwidth": 1,
 "cache_bytes": 47, "cache_bandwidth": 48,
 "topology": {"intra_node": {"latency_s": 0, "bandwidth": 0}}}

//--- cores.json
{"base": "cpu", "name": "shared",
 "topology": {"ranks_per_node": 4, "cores_per_node": 2,
              "intra_node": {"latency_s": 0, "bandwidth": 0}}}
//--- cores-enough.json
{"base": "cpu", "name": "shared",
 "topology": {"ranks_per_node": 4, "cores_per_node": 4,
              "intra_node": {"latency_s": 0, "bandwidth": 0}}}

//--- cores-string.json
{"base": "cpu", "topology": {"cores_per_node": "2"}}
//--- cores-string.mlir
// expected-error @+1 {{hardware JSON: topology.cores_per_node: expected a number, got a string}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- cores-tiny.json
{"base": "cpu", "topology": {"cores_per_node": 0.001}}
//--- cores-tiny.mlir
// expected-error @+1 {{hardware JSON: topology.cores_per_node must be 0 (a processor per rank) or a number of cores between 0.01 and 1048576, got 0.001}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- cache-bandwidth-negative.json
{"base": "cpu", "cache_bandwidth": -5}
//--- cache-bandwidth-negative.mlir
// expected-error @+1 {{hardware JSON: device 'cpu': cache_bandwidth must be 0 (no cache) or a number of bytes/s (finite, at least 1), got -5}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- cache-bandwidth-tiny.json
{"base": "cpu", "cache_bandwidth": 0.5}
//--- cache-bandwidth-tiny.mlir
// expected-error @+1 {{hardware JSON: device 'cpu': cache_bandwidth must be 0 (no cache) or a number of bytes/s (finite, at least 1), got 0.5}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- cache-bytes-negative.json
{"base": "cpu", "cache_bytes": "-1MB"}
//--- cache-bytes-negative.mlir
// expected-error @+1 {{hardware JSON: cache_bytes: invalid byte size '-1MB': must be >= 0}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- cache-bytes-bool.json
{"base": "cpu", "cache_bytes": true}
//--- cache-bytes-bool.mlir
// expected-error @+1 {{hardware JSON: cache_bytes: expected a number or a size string (e.g. "80GB"), got a boolean}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- operand-bandwidth-zero-point.json
{"base": "cpu", "contraction_operand_bandwidth": 0.5}
//--- operand-bandwidth-zero-point.mlir
// expected-error @+1 {{hardware JSON: device 'cpu': contraction_operand_bandwidth must be 0 (not modeled) or a number of bytes/s (finite, at least 1), got 0.5}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- operand.json
{"base": "cpu", "name": "packing", "op_overhead_s": 0,
 "peak_flops": {"f32": 32}, "memory_bandwidth": 1e12,
 "contraction_operand_bandwidth": 96,
 "topology": {"intra_node": {"latency_s": 0, "bandwidth": 0}}}
//--- no-operand.json
{"base": "cpu", "name": "packing", "op_overhead_s": 0,
 "peak_flops": {"f32": 32}, "memory_bandwidth": 1e12,
 "topology": {"intra_node": {"latency_s": 0, "bandwidth": 0}}}
//--- matmul.mlir
func.func @f(%x: tensor<1x4xf32>, %w0: tensor<4x4xf32>, %w1: tensor<4x4xf32>) -> tensor<1x4xf32> {
  %e = tensor.empty() : tensor<1x4xf32>
  %0 = linalg.matmul ins(%x, %w0 : tensor<1x4xf32>, tensor<4x4xf32>) outs(%e : tensor<1x4xf32>) -> tensor<1x4xf32>
  %1 = linalg.matmul ins(%0, %w1 : tensor<1x4xf32>, tensor<4x4xf32>) outs(%e : tensor<1x4xf32>) -> tensor<1x4xf32>
  return %1 : tensor<1x4xf32>
}

//--- idle-latency-negative.json
{"base": "cpu", "topology": {"intra_node": {"idle_receiver_latency_s": -1e-6}}}
//--- idle-latency-negative.mlir
// expected-error @+1 {{hardware JSON: topology.intra_node.idle_receiver_latency_s must be a number of seconds between 0 and 3600 (1 hour), got -1e-06}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- idle-send-string.json
{"base": "cpu", "topology": {"inter_node": {"idle_receiver_sender_overhead_s": "2us"}}}
//--- idle-send-string.mlir
// expected-error @+1 {{hardware JSON: topology.inter_node.idle_receiver_sender_overhead_s: expected a number, got a string}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
