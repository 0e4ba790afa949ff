// Every diagnostic of -pipe-partition, one case per split-file part, each
// with the options that trigger it.
//
// RUN: rm -rf %t && split-file %s %t
// RUN: pipeopt %t/too-many-stages.mlir -pipe-partition="num-stages=3" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/memory.mlir -pipe-partition="num-stages=2 memory-limit=6kB" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/manual-missing.mlir -pipe-partition="num-stages=2 strategy=manual" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/manual-range.mlir -pipe-partition="num-stages=2 strategy=manual" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/manual-order.mlir -pipe-partition="num-stages=2 strategy=manual" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/manual-order-later.mlir -pipe-partition="num-stages=2 strategy=manual" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/num-stages.mlir -pipe-partition="num-stages=0" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/num-microbatches.mlir -pipe-partition="num-microbatches=0" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/num-stages-wide.mlir -pipe-partition="num-stages=4294967298" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/num-stages-huge.mlir -pipe-partition="num-stages=99999999999" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/num-stages-negative.mlir -pipe-partition="num-stages=-2" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/num-microbatches-wide.mlir -pipe-partition="num-microbatches=4294967297" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/schedule.mlir -pipe-partition="schedule=zigzag" -verify-diagnostics -o /dev/null
// RUN: not pipeopt %t/strategy.mlir -pipe-partition="strategy=random" -o /dev/null 2>&1 | FileCheck %s --check-prefix=STRATEGY
// RUN: pipeopt %t/device.mlir -pipe-partition="device=x100" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/memory-limit.mlir -pipe-partition="memory-limit=80XB" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/memory-limit-overflow.mlir -pipe-partition="memory-limit=99999999999999999999999GB" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/hardware-empty.mlir -pipe-partition="hardware=%t/empty.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/optimizer-factor.mlir -pipe-partition="optimizer-factor=-2" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/optimizer-factor-inf.mlir -pipe-partition="optimizer-factor=inf" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/hardware-missing.mlir -pipe-partition="hardware=%t/does-not-exist.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/hardware-syntax.mlir -pipe-partition="hardware=%t/syntax.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/hardware-key.mlir -pipe-partition="hardware=%t/typo.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/hardware-nested-key.mlir -pipe-partition="hardware=%t/nested-typo.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/hardware-value.mlir -pipe-partition="hardware=%t/negative.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/profile-syntax.mlir -pipe-partition="profile=%t/profile-bad.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/profile-stages.mlir -pipe-partition="profile=%t/profile-stages.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/profile-index.mlir -pipe-partition="profile=%t/profile-index.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/profile-count.mlir -pipe-partition="num-stages=2 profile=%t/profile-count.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/outlined.mlir -pipe-partition="num-stages=2" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/dup-key.mlir -pipe-partition="hardware=%t/dup-key.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/dup-stage.mlir -pipe-partition="profile=%t/dup-stage.json" -verify-diagnostics -o /dev/null
// RUN: pipeopt %t/calls.mlir -pipe-partition="num-stages=2" -verify-diagnostics -o /dev/null

//--- too-many-stages.mlir
// Two placeable ops (the constant is rematerialized) cannot fill 3 stages.
// expected-error @+1 {{pipe-partition: cannot split 2 ops into 3 stages (1 more op is rematerializable: cheap ops without weights, duplicated into the stages that use them rather than placed): use at most 2 stages (num-stages=2)}}
func.func @f(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %c = arith.constant dense<0.0> : tensor<4x4xf32>
  %0 = linalg.matmul ins(%x, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = arith.addf %0, %0 : tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}

//--- memory.mlir
// Three 4 kB weights over 2 stages: some stage holds 8 kB > 6 kB.
// expected-error @+1 {{pipe-partition: no split into 2 stages fits in memory; at best, stage 0 needs 9.2 kB (params 8.2 kB + activations 1.0 kB x 1 in flight) but the limit is 6.0 kB}}
func.func @f(%x: tensor<4x32xf32>, %w0: tensor<32x32xf32>, %w1: tensor<32x32xf32>, %w2: tensor<32x32xf32>) -> tensor<4x32xf32> {
  %c = arith.constant dense<0.0> : tensor<4x32xf32>
  %0 = linalg.matmul ins(%x, %w0 : tensor<4x32xf32>, tensor<32x32xf32>) outs(%c : tensor<4x32xf32>) -> tensor<4x32xf32>
  %1 = linalg.matmul ins(%0, %w1 : tensor<4x32xf32>, tensor<32x32xf32>) outs(%c : tensor<4x32xf32>) -> tensor<4x32xf32>
  %2 = linalg.matmul ins(%1, %w2 : tensor<4x32xf32>, tensor<32x32xf32>) outs(%c : tensor<4x32xf32>) -> tensor<4x32xf32>
  return %2 : tensor<4x32xf32>
}

//--- manual-order-later.mlir
// The same with the offending producer in the middle: the error is at that
// op (the partitioner's error names its node), not at the function.
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %x, %x {pipe.stage = 0 : i64} : tensor<4xf32>
  // expected-error @+1 {{pipe-partition: manual strategy: op 'arith.mulf#1' (stage 1) feeds op 'arith.subf#2' (stage 0): stages must not decrease along dependencies}}
  %1 = arith.mulf %0, %0 {pipe.stage = 1 : i64} : tensor<4xf32>
  %2 = arith.subf %1, %x {pipe.stage = 0 : i64} : tensor<4xf32>
  return %2 : tensor<4xf32>
}

//--- manual-missing.mlir
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %x, %x {pipe.stage = 0 : i64} : tensor<4xf32>
  // expected-error @+1 {{pipe-partition: strategy=manual needs a 'pipe.stage' attribute on every op, and this op has none}}
  %1 = arith.mulf %0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

//--- manual-range.mlir
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %x, %x {pipe.stage = 0 : i64} : tensor<4xf32>
  // expected-error @+1 {{pipe-partition: pipe.stage = 2 is out of range for num-stages=2}}
  %1 = arith.mulf %0, %0 {pipe.stage = 2 : i64} : tensor<4xf32>
  return %1 : tensor<4xf32>
}

//--- manual-order.mlir
// A consumer on an earlier stage than its producer; the error points at the
// first op it names.
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{pipe-partition: manual strategy: op 'arith.addf#0' (stage 1) feeds op 'arith.mulf#1' (stage 0): stages must not decrease along dependencies}}
  %0 = arith.addf %x, %x {pipe.stage = 1 : i64} : tensor<4xf32>
  %1 = arith.mulf %0, %0 {pipe.stage = 0 : i64} : tensor<4xf32>
  return %1 : tensor<4xf32>
}

//--- num-stages.mlir
// expected-error @+1 {{pipe-partition: num-stages must be between 1 and 65536, got 0}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- num-microbatches.mlir
// expected-error @+1 {{pipe-partition: num-microbatches must be between 1 and 65536, got 0}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// Integer options are range-checked before they are narrowed to int (no
// silent truncation of 4294967298 to 2).
//--- num-stages-wide.mlir
// expected-error @+1 {{pipe-partition: num-stages must be between 1 and 65536, got 4294967298}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- num-stages-huge.mlir
// expected-error @+1 {{pipe-partition: num-stages must be between 1 and 65536, got 99999999999}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- num-stages-negative.mlir
// expected-error @+1 {{pipe-partition: num-stages must be between 1 and 65536, got -2}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- num-microbatches-wide.mlir
// expected-error @+1 {{pipe-partition: num-microbatches must be between 1 and 65536, got 4294967297}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- schedule.mlir
// expected-error @+1 {{pipe-partition: unknown schedule 'zigzag' (known: gpipe, 1f1b, interleaved-1f1b, looped-bfs, zb-h1, zb-h2, zb-v, interleaved-zb, zb-auto, chimera, hanayo, dualpipev, pipedream, pipedream-2bw, forward-only)}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// strategy is an enum option: the option parser rejects an unknown value
// before the pass runs.
// STRATEGY: for the --strategy option: Cannot find option named 'random'!
//--- strategy.mlir
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- device.mlir
// expected-error @+1 {{pipe-partition: unknown device 'x100' (expected one of h100, h200, a100, cpu, or a JSON file via hardware=<path>)}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- memory-limit.mlir
// expected-error @+1 {{pipe-partition: memory-limit: invalid byte size '80XB': unknown suffix 'XB'}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- optimizer-factor.mlir
// expected-error @+1 {{pipe-partition: optimizer-factor must be a finite number between 0 and 1e6 (or -1 for the default), got -2}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- hardware-missing.mlir
// expected-error @+1 {{pipe-partition: cannot read hardware file}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- hardware-syntax.mlir
// expected-error @+1 {{pipe-partition: invalid JSON in hardware file}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- syntax.json
{"base": "h100", "memory_bandwidth": }

//--- hardware-key.mlir
// expected-error @+1 {{hardware JSON: unknown key 'memory_bandwith'}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- typo.json
{"base": "h100", "memory_bandwith": 3e12}

//--- hardware-value.mlir
// expected-error @+1 {{hardware JSON: device 'neg': memory_bandwidth must be a positive number of bytes/s}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- negative.json
{"base": "a100", "name": "neg", "memory_bandwidth": -1}

//--- profile-syntax.mlir
// expected-error @+1 {{profile JSON: stages[0]: 'stage' must be a whole number >= 0 (it is missing)}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- profile-bad.json
{"stages": [{"forward_s": 0.1}]}

//--- profile-stages.mlir
// A per-stage profile needs the partition it was measured with.
// expected-error @+1 {{pipe-partition: a per-stage profile needs the partition it was measured with: no op carries a 'pipe.stage' attribute}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

//--- profile-stages.json
{"stages": [{"stage": 0, "forward_s": 0.1}]}

//--- profile-count.mlir
// A 1-stage profile cannot describe a 2-stage partition.
// expected-error @+1 {{pipe-partition: the profile has times for 1 stage(s) but the partition has 2: it was measured with another partition}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %x, %x {pipe.stage = 0 : i64} : tensor<4xf32>
  %1 = arith.mulf %0, %0 {pipe.stage = 1 : i64} : tensor<4xf32>
  return %1 : tensor<4xf32>
}

//--- profile-count.json
{"stages": [{"stage": 0, "forward_s": 0.1}]}

//--- profile-index.mlir
// expected-error @+1 {{pipe-partition: profile op index 7 is out of range: the function has 1 op}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

//--- profile-index.json
{"ops": [{"index": 7, "forward_s": 0.1}]}

//--- memory-limit-overflow.mlir
// expected-error @+1 {{pipe-partition: memory-limit: invalid byte size '99999999999999999999999GB': too large (the limit is 2^63 bytes)}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// A hardware file must define a device: `{}` is not the device= preset.
//--- empty.json
{}
//--- hardware-empty.mlir
// expected-error @+1 {{hardware JSON: the file defines no device: give 'base' (a preset) or device keys}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- optimizer-factor-inf.mlir
// expected-error @+1 {{pipe-partition: optimizer-factor must be a finite number between 0 and 1e6 (or -1 for the default), got INF}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- hardware-nested-key.mlir
// Keys inside nested objects are checked too (a typo would silently keep
// the preset's value).
// expected-error @+1 {{hardware JSON: topology.intra_node: unknown key 'bw' (expected one of: latency_s, bandwidth, sender_overhead_s, idle_receiver_latency_s, idle_receiver_sender_overhead_s)}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- nested-typo.json
{"base": "h100", "topology": {"intra_node": {"bw": 1e9}}}

//--- outlined.mlir
// An already outlined module has no model function left to partition.
func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  %0 = arith.addf %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
// expected-error @+1 {{pipe-partition: no model function to partition: every function with a body is a stage function or a stage graph (the module is already partitioned and outlined; partition the original model)}}
func.func @model(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 1 : i64} {
  %0 = pipe.stage_call @s0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

//--- dup-key.mlir
// A key given twice in a hand-written file is an error, not "the last wins".
// expected-error-re @+1 {{pipe-partition: invalid JSON in hardware file '{{.*}}dup-key.json': line 3: duplicate key 'memory_bandwidth'}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- dup-key.json
{"base": "h100",
 "memory_bandwidth": 1e12, "topology": {"gpus_per_node": 8, "intra_node": {"latency_s": 1e-6}},
 "memory_bandwidth": 2e12}

//--- dup-stage.mlir
// expected-error @+1 {{profile JSON: stages[1]: stage 0 is listed twice}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

//--- dup-stage.json
{"stages": [{"stage": 0, "forward_s": 0.1}, {"stage": 0, "forward_s": 0.2}]}

//--- calls.mlir
// The pass partitions flat functions; helper calls are inlined by
// pipe-prepare (which pipeopt-pipeline runs first), not by pipe-partition.
func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'func.call' op pipe-partition: @f calls @helper; inline the calls first with pipe-prepare (pipeopt-pipeline runs it)}}
  %0 = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
