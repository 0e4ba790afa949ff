// A linear layer whose weight is a frozen dense constant and whose bias is
// a dense_resource blob (torch-mlir's default export); the zero init is a
// splat and stays a constant.
func.func @frozen(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %w = arith.constant dense<[[1.0, -2.0], [0.5, 4.0], [-1.5, 3.0]]> : tensor<3x2xf32>
  %b = arith.constant dense_resource<bias> : tensor<2xf32>
  %z = arith.constant dense<0.0> : tensor<2x2xf32>
  %m = linalg.matmul ins(%x, %w : tensor<2x3xf32>, tensor<3x2xf32>) outs(%z : tensor<2x2xf32>) -> tensor<2x2xf32>
  %e = tensor.empty() : tensor<2x2xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%m, %b : tensor<2x2xf32>, tensor<2xf32>) outs(%e : tensor<2x2xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      bias: "0x040000000000803F000000C0"
    }
  }
#-}
