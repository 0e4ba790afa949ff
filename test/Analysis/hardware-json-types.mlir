// Machine JSON as the cost model reads it (machine::parseMachine,
// docs/CostModel.md "Machine JSON"):
// every key is type-checked, with an error naming the key and the expected
// type; numbers are range-checked so that every derived time stays finite.
// A wrong-typed "base" used to be skipped silently (the device= preset was
// used instead) and "op_overhead_s": 1e308 made every stage time infinite,
// reported as "no split ... satisfies the fixed stages and memory limits".
//
// RUN: rm -rf %t && split-file %s %t
// RUN: pipeopt %t/base-number.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/base-number.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/base-null.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/base-null.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/base-array.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/base-array.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/name-number.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/name-number.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/name-empty.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/name-empty.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/description-object.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/description-object.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/bandwidth-bool.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/bandwidth-bool.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/flops-string.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/flops-string.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/flops-array.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/flops-array.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/topology-string.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/topology-string.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/ranks-fraction.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/ranks-fraction.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/latency-string.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/latency-string.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/overhead-huge.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/overhead-huge.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/overhead-negative.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/overhead-negative.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/bandwidth-tiny.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/bandwidth-tiny.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/flops-tiny.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/flops-tiny.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/flops-zero.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/flops-zero.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/latency-huge.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/latency-huge.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/link-tiny.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/link-tiny.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/escaped-dup.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/escaped-dup.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/synonyms.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/synonyms.json" -verify-diagnostics -o /dev/null
//
// The limits themselves are accepted: with an overhead of one hour and a
// memory bandwidth of 1 B/s, each one-op stage computes 3600 s + 48 B / 1 B/s
// = 3648 s; the 16 B transfer takes the latency of 3600 s (bandwidth 0 =
// unlimited), so a stage's time is 3648 + 3600 = 7248 s.
// RUN: pipeopt %t/ok.mlir -pipe-partition="num-stages=2 device=cpu hardware=%t/limits.json report=-" -o /dev/null | FileCheck %s
// CHECK: pipe-partition @f: 2 stages on hour-overhead
// CHECK: 0 1 0 7.248E+03 3.648E+03 3.600E+03
// CHECK: 1 1 0 7.248E+03 3.648E+03 3.600E+03

//--- base-number.json
{"base": 5}
//--- base-number.mlir
// expected-error @+1 {{hardware JSON: base: expected a string (a preset name: h100, h200, a100, cpu), got a number}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- base-null.json
{"base": null}
//--- base-null.mlir
// expected-error @+1 {{hardware JSON: base: expected a string (a preset name: h100, h200, a100, cpu), got null}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- base-array.json
{"base": ["h100"]}
//--- base-array.mlir
// expected-error @+1 {{hardware JSON: base: expected a string (a preset name: h100, h200, a100, cpu), got an array}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- name-number.json
{"base": "h100", "name": 7}
//--- name-number.mlir
// expected-error @+1 {{hardware JSON: name: expected a string, got a number}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- name-empty.json
{"base": "h100", "name": " "}
//--- name-empty.mlir
// expected-error @+1 {{hardware JSON: name: expected a non-empty string}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- description-object.json
{"base": "h100", "description": {"text": "x"}}
//--- description-object.mlir
// expected-error @+1 {{hardware JSON: description: expected a string, got an object}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- bandwidth-bool.json
{"base": "h100", "memory_bandwidth": true}
//--- bandwidth-bool.mlir
// expected-error @+1 {{hardware JSON: memory_bandwidth: expected a number or a size string (e.g. "80GB"), got a boolean}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- flops-string.json
{"base": "h100", "peak_flops": {"f32": "fast"}}
//--- flops-string.mlir
// expected-error @+1 {{hardware JSON: peak_flops.f32: expected a number (FLOP/s), got a string}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- flops-array.json
{"base": "h100", "vector_flops": [1e12]}
//--- flops-array.mlir
// expected-error @+1 {{hardware JSON: vector_flops: expected an object {"f32": FLOP/s, ...}, got an array}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- topology-string.json
{"base": "h100", "topology": "dgx"}
//--- topology-string.mlir
// expected-error @+1 {{hardware JSON: topology: expected an object, got a string}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- ranks-fraction.json
{"base": "h100", "topology": {"ranks_per_node": 2.5}}
//--- ranks-fraction.mlir
// expected-error @+1 {{hardware JSON: topology.ranks_per_node: expected an integer, got a non-integral number}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- latency-string.json
{"base": "h100", "topology": {"inter_node": {"latency_s": "5us"}}}
//--- latency-string.mlir
// expected-error @+1 {{hardware JSON: topology.inter_node.latency_s: expected a number, got a string}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- overhead-huge.json
{"base": "cpu", "op_overhead_s": 1e308}
//--- overhead-huge.mlir
// expected-error @+1 {{hardware JSON: device 'cpu': op_overhead_s must be a number of seconds between 0 and 3600 (1 hour), got 1e+308}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- overhead-negative.json
{"base": "cpu", "op_overhead_s": -1e-6}
//--- overhead-negative.mlir
// expected-error @+1 {{hardware JSON: device 'cpu': op_overhead_s must be a number of seconds between 0 and 3600 (1 hour), got -1e-06}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- bandwidth-tiny.json
{"base": "cpu", "memory_bandwidth": 1e-300}
//--- bandwidth-tiny.mlir
// expected-error @+1 {{hardware JSON: device 'cpu': memory_bandwidth must be a positive number of bytes/s (finite, at least 1), got 1e-300}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- flops-tiny.json
{"base": "cpu", "peak_flops": {"f32": 1e-300}}
//--- flops-tiny.mlir
// expected-error @+1 {{hardware JSON: device 'cpu': peak_flops.f32 must be positive (a finite number of FLOP/s, at least 1), got 1e-300}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- flops-zero.json
{"base": "cpu", "vector_flops": {"bf16": 0}}
//--- flops-zero.mlir
// expected-error @+1 {{hardware JSON: device 'cpu': vector_flops.bf16 must be positive (a finite number of FLOP/s, at least 1), got 0}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- latency-huge.json
{"base": "cpu", "topology": {"intra_node": {"latency_s": 1e308}}}
//--- latency-huge.mlir
// expected-error @+1 {{hardware JSON: topology.intra_node.latency_s must be a number of seconds between 0 and 3600 (1 hour), got 1e+308}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- link-tiny.json
{"base": "cpu", "topology": {"inter_node": {"bandwidth": 1e-9}}}
//--- link-tiny.mlir
// expected-error @+1 {{hardware JSON: topology.inter_node.bandwidth must be 0 (unlimited) or a positive number of bytes/s (finite, at least 1), got 1e-09}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- limits.json
{"base": "cpu", "name": "hour-overhead", "description": "limits",
 "op_overhead_s": 3600, "memory_bandwidth": 1,
 "topology": {"intra_node": {"latency_s": 3600, "bandwidth": 0}}}
//--- ok.mlir
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %x, %x : tensor<4xf32>
  %1 = arith.mulf %0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

//--- escaped-dup.json
{"base": "h100", "op_overhead_s": 0, "op\u005foverhead_s": 100}
//--- escaped-dup.mlir
// A key given twice, once with an escape, is still a duplicate.
// expected-error-re @+1 {{invalid JSON in hardware file '{{.*}}escaped-dup.json': line 1: duplicate key 'op_overhead_s'}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- synonyms.json
{"base": "h100", "topology": {"ranks_per_node": 4, "gpus_per_node": 8}}
//--- synonyms.mlir
// expected-error @+1 {{hardware JSON: topology: give 'ranks_per_node' or its synonym 'gpus_per_node', not both}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
