// Inputs/linear.mlir as pipe-differentiate{loss=mse trainable=0} leaves it
// (the ABI of docs/Runtime.md, "Training reference"), written by hand: the
// model @f with its pipe.gradient attribute, and @f_grad(w, x, target) ->
// (loss, grad_w) from Inputs/linear-mse-grad.mlir, without the attributes
// pipeopt-compile --train adds. pipeopt-compile --reference --train uses
// such a model as it is (it does not run the pass again).
func.func @f(%w: tensor<3x2xf32>, %x: tensor<4x3xf32>) -> tensor<4x2xf32>
    attributes {pipe.gradient = #pipe.gradient<grad = @f_grad, loss = mse,
                                 trainable = [0],
                                 wrt = [0], saved_bytes = 0>} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x2xf32>)
                     outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

#sum = affine_map<(m, n) -> (m, n)>
#scalar = affine_map<(m, n) -> ()>
#xt = affine_map<(k, n, m) -> (m, k)>
#g = affine_map<(k, n, m) -> (m, n)>
#out = affine_map<(k, n, m) -> (k, n)>
func.func private @f_grad(%w: tensor<3x2xf32>, %x: tensor<4x3xf32>,
                          %t: tensor<4x2xf32>)
    -> (tensor<f32>, tensor<3x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.125 : f32 // 1 / 8 elements
  %e42 = tensor.empty() : tensor<4x2xf32>
  %z42 = linalg.fill ins(%zero : f32) outs(%e42 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x2xf32>)
                     outs(%z42 : tensor<4x2xf32>) -> tensor<4x2xf32>
  // d = y - t; loss = sum(d^2) / 8; g = 2 d / 8.
  %el = tensor.empty() : tensor<f32>
  %zl = linalg.fill ins(%zero : f32) outs(%el : tensor<f32>) -> tensor<f32>
  %loss_sum = linalg.generic
      {indexing_maps = [#sum, #sum, #scalar],
       iterator_types = ["reduction", "reduction"]}
      ins(%y, %t : tensor<4x2xf32>, tensor<4x2xf32>) outs(%zl : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %d = arith.subf %a, %b : f32
    %d2 = arith.mulf %d, %d : f32
    %s = arith.addf %acc, %d2 : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %loss = linalg.generic
      {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>],
       iterator_types = []}
      ins(%loss_sum : tensor<f32>) outs(%el : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %scale : f32
    linalg.yield %m : f32
  } -> tensor<f32>
  %g = linalg.generic
      {indexing_maps = [#sum, #sum, #sum],
       iterator_types = ["parallel", "parallel"]}
      ins(%y, %t : tensor<4x2xf32>, tensor<4x2xf32>) outs(%e42 : tensor<4x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %d2 = arith.addf %d, %d : f32
    %s = arith.mulf %d2, %scale : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  // grad_w[k][n] = sum_m x[m][k] * g[m][n].
  %e32 = tensor.empty() : tensor<3x2xf32>
  %z32 = linalg.fill ins(%zero : f32) outs(%e32 : tensor<3x2xf32>) -> tensor<3x2xf32>
  %gw = linalg.generic
      {indexing_maps = [#xt, #g, #out],
       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %g : tensor<4x3xf32>, tensor<4x2xf32>) outs(%z32 : tensor<3x2xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<3x2xf32>
  return %loss, %gw : tensor<f32>, tensor<3x2xf32>
}
