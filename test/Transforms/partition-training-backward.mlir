// With training, pipe-partition's B and W times come from each op's
// generated backward (backward-cost=generated, the default): for a matmul
// with a weight, B (dx = dy w^T) costs exactly F, W (dw = x^T dy) a little
// more (it also reads its zero-initialized accumulator); with
// backward-cost=rule the per-op-class rule gives B = W = F. The report
// shows every stage's F, B and W times and FLOPs.
//
// RUN: pipeopt %s --pipe-partition="num-stages=1 training=true report=%t.json" -o /dev/null
// RUN: FileCheck %s --input-file=%t.json
// RUN: pipeopt %s --pipe-partition="num-stages=1 training=true backward-cost=rule report=%t.rule.json" -o /dev/null
// RUN: FileCheck %s --input-file=%t.rule.json --check-prefix=RULE
// RUN: not pipeopt %s --pipe-partition="num-stages=1 backward-cost=none" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// The MLP of differentiate.mlir keeps 128 B per microbatch, what
// pipe-differentiate's saved_bytes says for it (the matmul's result, 80 B,
// and the data x, 48 B; not tanh's result); the rule counts both results.
// RUN: pipeopt %S/Inputs/differentiate-mlp.mlir --pipe-partition="num-stages=1 training=true report=%t.mlp.json" -o /dev/null
// RUN: FileCheck %s --input-file=%t.mlp.json --check-prefix=MLP
// MLP: "activation_bytes": 128,

// The backward of y = x w reads x and w, not y: what is kept is the data
// x (16x64 f32, 4096 B); the rule counts y (also 4096 B).
// B and W each do the forward's 2 x 16 x 64 x 64 = 131072 FLOP.
// CHECK: "activation_bytes": 4096,
// CHECK: "backward_input_flops": 131072,
// CHECK-NEXT: "backward_input_s": [[F:[0-9.e+-]+]],
// CHECK-NEXT: "backward_weight_flops": 131072,
// CHECK-NEXT: "backward_weight_s": 2.0122{{[0-9]*}}e-06,
// CHECK: "flops": 131072,
// CHECK: "forward_s": [[F]],
// RULE: "activation_bytes": 4096,
// RULE: "backward_input_flops": 131072,
// RULE-NEXT: "backward_input_s": [[F:[0-9.e+-]+]],
// RULE-NEXT: "backward_weight_flops": 131072,
// RULE-NEXT: "backward_weight_s": [[F]],
// RULE: "forward_s": [[F]],
// BAD: for the --backward-cost option: Cannot find option named 'none'!

func.func @m(%x: tensor<16x64xf32>, %w: tensor<64x64xf32>) -> tensor<16x64xf32> {
  %e = tensor.empty() : tensor<16x64xf32>
  %y = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x64xf32>) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
