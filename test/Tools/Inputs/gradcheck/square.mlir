// L(w, x) = sum((x w)^2) / 8 with x: 4x3, w: 3x2 (8 = the elements of x w),
// with a hand-written gradient following pipe-differentiate's ABI:
//   dL/dy = y / 4,  dL/dw = x^T dy,  dL/dx = dy w^T.
// The tests derive deliberately wrong variants with sed from the lines
// marked "dw-scale" and "dx-transpose".
#id2 = affine_map<(i, j) -> (i, j)>
#red = affine_map<(i, j) -> ()>
module {
  func.func @f(%w: tensor<3x2xf32> loc("w"), %x: tensor<4x3xf32> loc("x")) -> tensor<f32>
      attributes {pipe.gradient = #pipe.gradient<wrt = [0, 1], trainable = [0],
                                   loss = self, saved_bytes = 0,
                                   loss_fn = @f_loss, grad = @f_grad>} {
    %r = func.call @f_loss(%w, %x) : (tensor<3x2xf32>, tensor<4x3xf32>) -> tensor<f32>
    return %r : tensor<f32>
  }

  func.func @f_loss(%w: tensor<3x2xf32>, %x: tensor<4x3xf32>) -> tensor<f32> {
    %c0 = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x2xf32>
    %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
    %y = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x2xf32>)
                       outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
    %s0 = tensor.empty() : tensor<f32>
    %s1 = linalg.fill ins(%c0 : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
    %s = linalg.generic {indexing_maps = [#id2, #red],
                         iterator_types = ["reduction", "reduction"]}
        ins(%y : tensor<4x2xf32>) outs(%s1 : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %sq = arith.mulf %a, %a : f32
      %n = arith.addf %acc, %sq : f32
      linalg.yield %n : f32
    } -> tensor<f32>
    %inv = arith.constant dense<0.125> : tensor<f32>
    %l = arith.mulf %s, %inv : tensor<f32>
    return %l : tensor<f32>
  }

  func.func @f_grad(%w: tensor<3x2xf32>, %x: tensor<4x3xf32>)
      -> (tensor<f32>, tensor<3x2xf32>, tensor<4x3xf32>) {
    %l = func.call @f_loss(%w, %x) : (tensor<3x2xf32>, tensor<4x3xf32>) -> tensor<f32>
    %c0 = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x2xf32>
    %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
    %y = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x2xf32>)
                       outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
    %q = arith.constant dense<0.25> : tensor<4x2xf32>
    %dy = arith.mulf %y, %q : tensor<4x2xf32>
    %qw = arith.constant dense<1.0> : tensor<4x2xf32> // dw-scale
    %dyw = arith.mulf %dy, %qw : tensor<4x2xf32>
    %zw0 = tensor.empty() : tensor<3x2xf32>
    %zw = linalg.fill ins(%c0 : f32) outs(%zw0 : tensor<3x2xf32>) -> tensor<3x2xf32>
    %xt0 = tensor.empty() : tensor<3x4xf32>
    %xt = linalg.transpose ins(%x : tensor<4x3xf32>) outs(%xt0 : tensor<3x4xf32>) permutation = [1, 0]
    %dw = linalg.matmul ins(%xt, %dyw : tensor<3x4xf32>, tensor<4x2xf32>)
                        outs(%zw : tensor<3x2xf32>) -> tensor<3x2xf32>
    %zx0 = tensor.empty() : tensor<4x3xf32>
    %zx = linalg.fill ins(%c0 : f32) outs(%zx0 : tensor<4x3xf32>) -> tensor<4x3xf32>
    %wt0 = tensor.empty() : tensor<2x3xf32>
    %wt = linalg.transpose ins(%w : tensor<3x2xf32>) outs(%wt0 : tensor<2x3xf32>) permutation = [1, 0]
    %dx = linalg.matmul ins(%dy, %wt : tensor<4x2xf32>, tensor<2x3xf32>)
                        outs(%zx : tensor<4x3xf32>) -> tensor<4x3xf32>
    return %l, %dw, %dx : tensor<f32>, tensor<3x2xf32>, tensor<4x3xf32>
  }
}
