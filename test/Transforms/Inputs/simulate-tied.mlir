// A 2-layer model whose two matmuls share one weight %w (a tied weight):
// x [2,4] -> matmul w -> relu -> matmul w -> sum of squared errors
// against t. Partitioned into 2 stages, both stages read %w.
#id = affine_map<(d0, d1) -> (d0, d1)>
#sc = affine_map<(d0, d1) -> ()>
func.func @f(%x: tensor<2x4xf32> {pipe.microbatched}, %w: tensor<4x4xf32>,
             %t: tensor<2x4xf32> {pipe.microbatched}) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2x4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %h = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x4xf32>) outs(%f1 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<2x4xf32>) outs(%e1 : tensor<2x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2x4xf32>
  %y = linalg.matmul ins(%r, %w : tensor<2x4xf32>, tensor<4x4xf32>) outs(%f1 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %e3 = tensor.empty() : tensor<f32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<f32>) -> tensor<f32>
  %l = linalg.generic {indexing_maps = [#id, #id, #sc], iterator_types = ["reduction", "reduction"]}
      ins(%y, %t : tensor<2x4xf32>, tensor<2x4xf32>) outs(%f3 : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %s = arith.mulf %d, %d : f32
    %n = arith.addf %o, %s : f32
    linalg.yield %n : f32
  } -> tensor<f32>
  return %l : tensor<f32>
}
