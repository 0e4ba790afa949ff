// logits = E[ids] w: an embedding lookup (E: 10x3, ids: 4 x i64, a gather
// through tensor.extract) and a projection (w: 3x5, C = 5 classes), with
// the loss=cross-entropy functions of pipe-differentiate's ABI written by
// hand (target: 4 x i64 class indices):
//   L = mean_b(logsumexp(logits[b]) - logits[b, t[b]]),
//   dlogits = (softmax(logits) - onehot(t)) / 4, dw = x^T dlogits,
//   dx = dlogits w^T, dE[r] = sum of dx[b] over b with ids[b] = r.
// The tests derive a wrong variant from the line marked "ce-softmax".
#bk = affine_map<(b, k) -> (b, k)>
#b_ = affine_map<(b, k) -> (b)>
#bc = affine_map<(b, c) -> (b, c)>
#bc_b = affine_map<(b, c) -> (b)>
#b1 = affine_map<(b) -> (b)>
#b0 = affine_map<(b) -> ()>
#rkb_b = affine_map<(r, k, b) -> (b)>
#rkb_bk = affine_map<(r, k, b) -> (b, k)>
#rkb_rk = affine_map<(r, k, b) -> (r, k)>
module {
  func.func @f(%E: tensor<10x3xf32> loc("embedding"), %ids: tensor<4xi64> loc("ids"),
               %w: tensor<3x5xf32> loc("proj")) -> tensor<4x5xf32>
      attributes {pipe.gradient = #pipe.gradient<wrt = [0, 2], trainable = [0, 2],
                                   loss = "cross-entropy", saved_bytes = 0,
                                   loss_fn = @f_loss, grad = @f_grad>} {
    %x = func.call @embed(%E, %ids) : (tensor<10x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
    %c0 = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x5xf32>
    %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x5xf32>) -> tensor<4x5xf32>
    %y = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x5xf32>)
                       outs(%z : tensor<4x5xf32>) -> tensor<4x5xf32>
    return %y : tensor<4x5xf32>
  }

  func.func private @embed(%E: tensor<10x3xf32>, %ids: tensor<4xi64>) -> tensor<4x3xf32> {
    %e = tensor.empty() : tensor<4x3xf32>
    %x = linalg.generic {indexing_maps = [#b_, #bk], iterator_types = ["parallel", "parallel"]}
        ins(%ids : tensor<4xi64>) outs(%e : tensor<4x3xf32>) {
    ^bb0(%id: i64, %out: f32):
      %i = arith.index_cast %id : i64 to index
      %k = linalg.index 1 : index
      %v = tensor.extract %E[%i, %k] : tensor<10x3xf32>
      linalg.yield %v : f32
    } -> tensor<4x3xf32>
    return %x : tensor<4x3xf32>
  }

  // logsumexp per row.
  func.func private @lse(%y: tensor<4x5xf32>) -> tensor<4xf32> {
    %ninf = arith.constant 0xFF800000 : f32
    %c0 = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4xf32>
    %m0 = linalg.fill ins(%ninf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %m = linalg.generic {indexing_maps = [#bc, #bc_b], iterator_types = ["parallel", "reduction"]}
        ins(%y : tensor<4x5xf32>) outs(%m0 : tensor<4xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %r = arith.maximumf %a, %acc : f32
      linalg.yield %r : f32
    } -> tensor<4xf32>
    %s0 = linalg.fill ins(%c0 : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %s = linalg.generic {indexing_maps = [#bc, #bc_b, #bc_b], iterator_types = ["parallel", "reduction"]}
        ins(%y, %m : tensor<4x5xf32>, tensor<4xf32>) outs(%s0 : tensor<4xf32>) {
    ^bb0(%a: f32, %mb: f32, %acc: f32):
      %d = arith.subf %a, %mb : f32
      %x = math.exp %d : f32
      %r = arith.addf %acc, %x : f32
      linalg.yield %r : f32
    } -> tensor<4xf32>
    %l = linalg.generic {indexing_maps = [#b1, #b1, #b1], iterator_types = ["parallel"]}
        ins(%s, %m : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%sb: f32, %mb: f32, %out: f32):
      %lg = math.log %sb : f32
      %r = arith.addf %lg, %mb : f32
      linalg.yield %r : f32
    } -> tensor<4xf32>
    return %l : tensor<4xf32>
  }

  func.func @f_loss(%E: tensor<10x3xf32>, %ids: tensor<4xi64>, %w: tensor<3x5xf32>,
                    %t: tensor<4xi64>) -> tensor<f32> {
    %y = func.call @f(%E, %ids, %w) : (tensor<10x3xf32>, tensor<4xi64>, tensor<3x5xf32>) -> tensor<4x5xf32>
    %lse = func.call @lse(%y) : (tensor<4x5xf32>) -> tensor<4xf32>
    %c0 = arith.constant 0.0 : f32
    %quarter = arith.constant 0.25 : f32
    %e = tensor.empty() : tensor<f32>
    %s0 = linalg.fill ins(%c0 : f32) outs(%e : tensor<f32>) -> tensor<f32>
    %s = linalg.generic {indexing_maps = [#b1, #b1, #b0], iterator_types = ["reduction"]}
        ins(%lse, %t : tensor<4xf32>, tensor<4xi64>) outs(%s0 : tensor<f32>) {
    ^bb0(%l: f32, %tb: i64, %acc: f32):
      %b = linalg.index 0 : index
      %ti = arith.index_cast %tb : i64 to index
      %zt = tensor.extract %y[%b, %ti] : tensor<4x5xf32>
      %nll = arith.subf %l, %zt : f32
      %m = arith.mulf %nll, %quarter : f32
      %r = arith.addf %acc, %m : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    return %s : tensor<f32>
  }

  func.func @f_grad(%E: tensor<10x3xf32>, %ids: tensor<4xi64>, %w: tensor<3x5xf32>,
                    %t: tensor<4xi64>) -> (tensor<f32>, tensor<10x3xf32>, tensor<3x5xf32>) {
    %l = func.call @f_loss(%E, %ids, %w, %t) : (tensor<10x3xf32>, tensor<4xi64>, tensor<3x5xf32>, tensor<4xi64>) -> tensor<f32>
    %x = func.call @embed(%E, %ids) : (tensor<10x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
    %y = func.call @f(%E, %ids, %w) : (tensor<10x3xf32>, tensor<4xi64>, tensor<3x5xf32>) -> tensor<4x5xf32>
    %lse = func.call @lse(%y) : (tensor<4x5xf32>) -> tensor<4xf32>
    %c0 = arith.constant 0.0 : f32
    %c1 = arith.constant 1.0 : f32
    %quarter = arith.constant 0.25 : f32
    %e = tensor.empty() : tensor<4x5xf32>
    // dlogits = (softmax - onehot(t)) / 4
    %dy = linalg.generic {indexing_maps = [#bc, #bc_b, #bc_b, #bc], iterator_types = ["parallel", "parallel"]}
        ins(%y, %lse, %t : tensor<4x5xf32>, tensor<4xf32>, tensor<4xi64>) outs(%e : tensor<4x5xf32>) {
    ^bb0(%a: f32, %lb: f32, %tb: i64, %out: f32):
      %d = arith.subf %a, %lb : f32
      %p = math.exp %d : f32
      %c = linalg.index 1 : index
      %ci = arith.index_cast %c : index to i64
      %hit = arith.cmpi eq, %ci, %tb : i64
      %oh = arith.select %hit, %c1, %c0 : f32
      %g = arith.subf %p, %oh : f32 // ce-softmax
      %r = arith.mulf %g, %quarter : f32
      linalg.yield %r : f32
    } -> tensor<4x5xf32>
    // dw = x^T dy
    %ew = tensor.empty() : tensor<3x5xf32>
    %zw = linalg.fill ins(%c0 : f32) outs(%ew : tensor<3x5xf32>) -> tensor<3x5xf32>
    %xt0 = tensor.empty() : tensor<3x4xf32>
    %xt = linalg.transpose ins(%x : tensor<4x3xf32>) outs(%xt0 : tensor<3x4xf32>) permutation = [1, 0]
    %dw = linalg.matmul ins(%xt, %dy : tensor<3x4xf32>, tensor<4x5xf32>)
                        outs(%zw : tensor<3x5xf32>) -> tensor<3x5xf32>
    // dx = dy w^T
    %ex = tensor.empty() : tensor<4x3xf32>
    %zx = linalg.fill ins(%c0 : f32) outs(%ex : tensor<4x3xf32>) -> tensor<4x3xf32>
    %wt0 = tensor.empty() : tensor<5x3xf32>
    %wt = linalg.transpose ins(%w : tensor<3x5xf32>) outs(%wt0 : tensor<5x3xf32>) permutation = [1, 0]
    %dx = linalg.matmul ins(%dy, %wt : tensor<4x5xf32>, tensor<5x3xf32>)
                        outs(%zx : tensor<4x3xf32>) -> tensor<4x3xf32>
    // dE[r, k] = sum_b (ids[b] == r) dx[b, k]
    %eE = tensor.empty() : tensor<10x3xf32>
    %zE = linalg.fill ins(%c0 : f32) outs(%eE : tensor<10x3xf32>) -> tensor<10x3xf32>
    %dE = linalg.generic {indexing_maps = [#rkb_b, #rkb_bk, #rkb_rk],
                          iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%ids, %dx : tensor<4xi64>, tensor<4x3xf32>) outs(%zE : tensor<10x3xf32>) {
    ^bb0(%id: i64, %g: f32, %acc: f32):
      %r = linalg.index 0 : index
      %ri = arith.index_cast %r : index to i64
      %hit = arith.cmpi eq, %ri, %id : i64
      %v = arith.select %hit, %g, %c0 : f32
      %n = arith.addf %acc, %v : f32
      linalg.yield %n : f32
    } -> tensor<10x3xf32>
    return %l, %dE, %dw : tensor<f32>, tensor<10x3xf32>, tensor<3x5xf32>
  }
}
