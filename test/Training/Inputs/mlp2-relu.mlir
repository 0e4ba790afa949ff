// x [4, 8] -> matmul w1 [8, 8] -> relu -> matmul w2 [8, 4]: two weight
// blocks for the asynchronous-schedule tests (Inputs/async-reference.py
// recomputes its gradients in numpy).
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @mlp(%x: tensor<4x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x8xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4x8xf32>) outs(%e1 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<4x8xf32>, tensor<8x4xf32>) outs(%f2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}
