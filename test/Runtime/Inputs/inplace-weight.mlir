// Returns x + 3 w, where 2 w is written into w's own buffer first
// (linalg.generic with outs(%w); compiled with --fuse=false, so that
// element-wise fusion does not fold it into its user, one-shot
// bufferization writes it in place when the buffer is writable).
#id = affine_map<(d0) -> (d0)>
#row = affine_map<(d0, d1) -> (d0, d1)>
#bcast = affine_map<(d0, d1) -> (d1)>
func.func @f(%x: tensor<1x4xf32>, %w: tensor<4xf32>) -> tensor<1x4xf32> {
  %e = tensor.empty() : tensor<1x4xf32>
  %y = linalg.generic {indexing_maps = [#row, #bcast, #row], iterator_types = ["parallel", "parallel"]}
      ins(%x, %w : tensor<1x4xf32>, tensor<4xf32>) outs(%e : tensor<1x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<1x4xf32>
  %w2 = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%w : tensor<4xf32>) {
  ^bb0(%o: f32):
    %d = arith.addf %o, %o : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %z = linalg.generic {indexing_maps = [#row, #bcast, #row], iterator_types = ["parallel", "parallel"]}
      ins(%y, %w2 : tensor<1x4xf32>, tensor<4xf32>) outs(%e : tensor<1x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<1x4xf32>
  return %z : tensor<1x4xf32>
}
