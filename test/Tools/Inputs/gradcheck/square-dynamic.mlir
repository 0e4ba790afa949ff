// square.mlir with a dynamic batch: x is tensor<?x3xf32> (the batch comes
// from --input), L(w, x) = sum((x w)^2) / 8.
#id2 = affine_map<(i, j) -> (i, j)>
#red = affine_map<(i, j) -> ()>
module {
  func.func @f(%w: tensor<3x2xf32> loc("w"), %x: tensor<?x3xf32> loc("x")) -> tensor<f32>
      attributes {pipe.gradient = #pipe.gradient<wrt = [0, 1], trainable = [0],
                                   loss = self, saved_bytes = 0,
                                   loss_fn = @f, grad = @f_grad>} {
    %y = func.call @fwd(%w, %x) : (tensor<3x2xf32>, tensor<?x3xf32>) -> tensor<?x2xf32>
    %c0 = arith.constant 0.0 : f32
    %s0 = tensor.empty() : tensor<f32>
    %s1 = linalg.fill ins(%c0 : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
    %s = linalg.generic {indexing_maps = [#id2, #red], iterator_types = ["reduction", "reduction"]}
        ins(%y : tensor<?x2xf32>) outs(%s1 : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %sq = arith.mulf %a, %a : f32
      %n = arith.addf %acc, %sq : f32
      linalg.yield %n : f32
    } -> tensor<f32>
    %inv = arith.constant dense<0.125> : tensor<f32>
    %l = arith.mulf %s, %inv : tensor<f32>
    return %l : tensor<f32>
  }

  func.func private @fwd(%w: tensor<3x2xf32>, %x: tensor<?x3xf32>) -> tensor<?x2xf32> {
    %c0 = arith.constant 0.0 : f32
    %i0 = arith.constant 0 : index
    %b = tensor.dim %x, %i0 : tensor<?x3xf32>
    %e = tensor.empty(%b) : tensor<?x2xf32>
    %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<?x2xf32>) -> tensor<?x2xf32>
    %y = linalg.matmul ins(%x, %w : tensor<?x3xf32>, tensor<3x2xf32>)
                       outs(%z : tensor<?x2xf32>) -> tensor<?x2xf32>
    return %y : tensor<?x2xf32>
  }

  func.func @f_grad(%w: tensor<3x2xf32>, %x: tensor<?x3xf32>)
      -> (tensor<f32>, tensor<3x2xf32>, tensor<?x3xf32>) {
    %l = func.call @f(%w, %x) : (tensor<3x2xf32>, tensor<?x3xf32>) -> tensor<f32>
    %y = func.call @fwd(%w, %x) : (tensor<3x2xf32>, tensor<?x3xf32>) -> tensor<?x2xf32>
    %c0 = arith.constant 0.0 : f32
    %quarter = arith.constant 0.25 : f32
    %i0 = arith.constant 0 : index
    %b = tensor.dim %x, %i0 : tensor<?x3xf32>
    %e = tensor.empty(%b) : tensor<?x2xf32>
    %dy = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%y : tensor<?x2xf32>) outs(%e : tensor<?x2xf32>) {
    ^bb0(%a: f32, %out: f32):
      %r = arith.mulf %a, %quarter : f32
      linalg.yield %r : f32
    } -> tensor<?x2xf32>
    %zw0 = tensor.empty() : tensor<3x2xf32>
    %zw = linalg.fill ins(%c0 : f32) outs(%zw0 : tensor<3x2xf32>) -> tensor<3x2xf32>
    %xt0 = tensor.empty(%b) : tensor<3x?xf32>
    %xt = linalg.transpose ins(%x : tensor<?x3xf32>) outs(%xt0 : tensor<3x?xf32>) permutation = [1, 0]
    %dw = linalg.matmul ins(%xt, %dy : tensor<3x?xf32>, tensor<?x2xf32>)
                        outs(%zw : tensor<3x2xf32>) -> tensor<3x2xf32>
    %zx0 = tensor.empty(%b) : tensor<?x3xf32>
    %zx = linalg.fill ins(%c0 : f32) outs(%zx0 : tensor<?x3xf32>) -> tensor<?x3xf32>
    %wt0 = tensor.empty() : tensor<2x3xf32>
    %wt = linalg.transpose ins(%w : tensor<3x2xf32>) outs(%wt0 : tensor<2x3xf32>) permutation = [1, 0]
    %dx = linalg.matmul ins(%dy, %wt : tensor<?x2xf32>, tensor<2x3xf32>)
                        outs(%zx : tensor<?x3xf32>) -> tensor<?x3xf32>
    return %l, %dw, %dx : tensor<f32>, tensor<3x2xf32>, tensor<?x3xf32>
  }
}
