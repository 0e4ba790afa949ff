// A model that returns its own scalar loss (transformers' labels=ids): an
// embedding of token ids [2, 4] (argument 1) and a sum of the embedded
// values as its loss, with the table (argument 0) and a weight (argument 2).
// No argument reaches a result along a batch dimension (the result has
// rank 0); the only integer tensor, the ids, is data all the same.
#ids = affine_map<(b, s, d) -> (b, s)>
#out = affine_map<(b, s, d) -> (b, s, d)>
#w = affine_map<(b, s, d) -> (d)>
#all = affine_map<(b, s, d) -> ()>
func.func @forward(%table: tensor<8x3xf32>, %ids: tensor<2x4xi64>, %w: tensor<3xf32>) -> tensor<f32> {
  %e = tensor.empty() : tensor<2x4x3xf32>
  %emb = linalg.generic {indexing_maps = [#ids, #out], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<2x4xi64>) outs(%e : tensor<2x4x3xf32>) {
  ^bb0(%i: i64, %o: f32):
    %r = arith.index_cast %i : i64 to index
    %d = linalg.index 2 : index
    %v = tensor.extract %table[%r, %d] : tensor<8x3xf32>
    linalg.yield %v : f32
  } -> tensor<2x4x3xf32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [#out, #w, #all], iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%emb, %w : tensor<2x4x3xf32>, tensor<3xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %loss : tensor<f32>
}
