// RUN: pipeopt %s -convert-pipe-to-runtime="manifest=%t.json" -o /dev/null
// RUN: FileCheck %s < %t.json

// microbatch-args=auto: the arguments a stage function reading them
// classifies as data (cost::classifyArguments, the rule pipe-differentiate
// uses; TOSA is classified in its linalg form). The activation (argument
// 0) feeds the matmul's left-hand side and is per-microbatch; the [1, K, N]
// right-hand side (argument 1) and the [1, 1, N] bias (argument 2, broadcast
// along the rows of the matmul's result at the unit batch loop) are
// weights, shared by all microbatches.

// CHECK: "inputs": [
// CHECK:   "index": 0,
// CHECK:   "microbatched": true,
// CHECK:   "index": 1,
// CHECK:   "microbatched": false,
// CHECK:   "index": 2,
// CHECK:   "microbatched": false,

// Whole models through the front half: examples/mlp4.tosa.mlir shares its
// weights and biases (arguments 1-8), only x is per microbatch.
// RUN: pipeopt %pipeopt_src/examples/mlp4.tosa.mlir -pipeopt-pipeline="num-stages=2 num-microbatches=2 schedule=inference" \
// RUN:   | pipeopt -convert-pipe-to-runtime="manifest=%t.mlp4.json" -o /dev/null
// RUN: %python -c "import json; print('microbatched', [i['index'] for i in json.load(open('%t.mlp4.json'))['inputs'] if i['microbatched']])" | FileCheck %s --check-prefix=MLP4
// MLP4: microbatched [0]
//
// Batch 1 (Transforms/Inputs/classify-batch1.mlir): x only.
// RUN: pipeopt %S/../../Transforms/Inputs/classify-batch1.mlir -pipeopt-pipeline="num-stages=2 num-microbatches=2 schedule=inference" \
// RUN:   | pipeopt -convert-pipe-to-runtime="manifest=%t.batch1.json" -o /dev/null
// RUN: %python -c "import json; print('microbatched', [i['index'] for i in json.load(open('%t.batch1.json'))['inputs'] if i['microbatched']])" | FileCheck %s --check-prefix=BATCH1
// BATCH1: microbatched [0]
//
// An embedding (torch embedding_lm): the token ids (argument 3) are per
// microbatch, the table and the linear layer shared.
// RUN: pipeopt %S/../../Autodiff/Inputs/torch/embedding_lm/model.mb2.mlir -pipeopt-pipeline="num-stages=2 num-microbatches=2 schedule=inference" \
// RUN:   | pipeopt -convert-pipe-to-runtime="manifest=%t.emb.json" -o /dev/null
// RUN: %python -c "import json; print('microbatched', [i['index'] for i in json.load(open('%t.emb.json'))['inputs'] if i['microbatched']])" | FileCheck %s --check-prefix=EMB
// EMB: microbatched [3]

func.func @s0(%x: tensor<1x4x8xf32>, %w: tensor<1x8x8xf32>, %b: tensor<1x1x8xf32>) -> tensor<1x4x8xf32> attributes {pipe.stage = 0 : i64} {
  %z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %0 = tosa.matmul %x, %w, %z, %z : (tensor<1x4x8xf32>, tensor<1x8x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x8xf32>
  %1 = tosa.add %0, %b : (tensor<1x4x8xf32>, tensor<1x1x8xf32>) -> tensor<1x4x8xf32>
  return %1 : tensor<1x4x8xf32>
}
pipe.program @p rank 0 of 1 microbatches 2 {
  %w = pipe.input 1 microbatch 0 : tensor<1x8x8xf32>
  %x0 = pipe.input 0 microbatch 0 : tensor<1x4x8xf32>
  %b0 = pipe.input 2 microbatch 0 : tensor<1x1x8xf32>
  %y0 = pipe.forward @s0(%x0, %w, %b0) stage 0 microbatch 0 : (tensor<1x4x8xf32>, tensor<1x8x8xf32>, tensor<1x1x8xf32>) -> tensor<1x4x8xf32>
  pipe.output %y0 result 0 microbatch 0 : tensor<1x4x8xf32>
  %x1 = pipe.input 0 microbatch 1 : tensor<1x4x8xf32>
  %b1 = pipe.input 2 microbatch 1 : tensor<1x1x8xf32>
  %y1 = pipe.forward @s0(%x1, %w, %b1) stage 0 microbatch 1 : (tensor<1x4x8xf32>, tensor<1x8x8xf32>, tensor<1x1x8xf32>) -> tensor<1x4x8xf32>
  pipe.output %y1 result 0 microbatch 1 : tensor<1x4x8xf32>
}
