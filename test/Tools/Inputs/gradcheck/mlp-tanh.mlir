// A two-layer tanh MLP, about 1.1 MFLOP per evaluation:
//   h = tanh(x w1) (x: 32x256, w1: 256x64), y = h w2 (w2: 64x10),
//   L = sum(y^2) / 320,
// with a hand-written gradient: dy = y / 160, dw2 = h^T dy, dh = dy w2^T,
// dz = dh (1 - h^2), dw1 = x^T dz, dx = dz w1^T. 25,216 differentiated
// elements: --mode auto picks directional. The tests derive a wrong
// variant (the tanh derivative 1 - h^2 dropped) from the line marked
// "tanh-derivative".
#id2 = affine_map<(i, j) -> (i, j)>
#red = affine_map<(i, j) -> ()>
module {
  func.func @mlp(%x: tensor<32x256xf32> loc("x"), %w1: tensor<256x64xf32> loc("w1"),
                 %w2: tensor<64x10xf32> loc("w2")) -> tensor<f32>
      attributes {pipe.gradient = #pipe.gradient<wrt = [0, 1, 2], trainable = [1, 2],
                                   loss = self, saved_bytes = 0,
                                   loss_fn = @mlp, grad = @mlp_grad>} {
    %h = func.call @hidden(%x, %w1) : (tensor<32x256xf32>, tensor<256x64xf32>) -> tensor<32x64xf32>
    %y = func.call @mm_64_10(%h, %w2) : (tensor<32x64xf32>, tensor<64x10xf32>) -> tensor<32x10xf32>
    %c0 = arith.constant 0.0 : f32
    %k = arith.constant 0.003125 : f32
    %s0 = tensor.empty() : tensor<f32>
    %s1 = linalg.fill ins(%c0 : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
    %s = linalg.generic {indexing_maps = [#id2, #red], iterator_types = ["reduction", "reduction"]}
        ins(%y : tensor<32x10xf32>) outs(%s1 : tensor<f32>) {
    ^bb0(%a: f32, %acc: f32):
      %sq = arith.mulf %a, %a : f32
      %q = arith.mulf %sq, %k : f32
      %n = arith.addf %acc, %q : f32
      linalg.yield %n : f32
    } -> tensor<f32>
    return %s : tensor<f32>
  }

  func.func private @hidden(%x: tensor<32x256xf32>, %w1: tensor<256x64xf32>) -> tensor<32x64xf32> {
    %c0 = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<32x64xf32>
    %z0 = linalg.fill ins(%c0 : f32) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
    %z = linalg.matmul ins(%x, %w1 : tensor<32x256xf32>, tensor<256x64xf32>)
                       outs(%z0 : tensor<32x64xf32>) -> tensor<32x64xf32>
    %h = math.tanh %z : tensor<32x64xf32>
    return %h : tensor<32x64xf32>
  }

  func.func private @mm_64_10(%h: tensor<32x64xf32>, %w2: tensor<64x10xf32>) -> tensor<32x10xf32> {
    %c0 = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<32x10xf32>
    %y0 = linalg.fill ins(%c0 : f32) outs(%e : tensor<32x10xf32>) -> tensor<32x10xf32>
    %y = linalg.matmul ins(%h, %w2 : tensor<32x64xf32>, tensor<64x10xf32>)
                       outs(%y0 : tensor<32x10xf32>) -> tensor<32x10xf32>
    return %y : tensor<32x10xf32>
  }

  func.func @mlp_grad(%x: tensor<32x256xf32>, %w1: tensor<256x64xf32>, %w2: tensor<64x10xf32>)
      -> (tensor<f32>, tensor<32x256xf32>, tensor<256x64xf32>, tensor<64x10xf32>) {
    %l = func.call @mlp(%x, %w1, %w2) : (tensor<32x256xf32>, tensor<256x64xf32>, tensor<64x10xf32>) -> tensor<f32>
    %h = func.call @hidden(%x, %w1) : (tensor<32x256xf32>, tensor<256x64xf32>) -> tensor<32x64xf32>
    %y = func.call @mm_64_10(%h, %w2) : (tensor<32x64xf32>, tensor<64x10xf32>) -> tensor<32x10xf32>
    %c0 = arith.constant 0.0 : f32
    %c1 = arith.constant 1.0 : f32
    %k = arith.constant 0.00625 : f32
    %ey = tensor.empty() : tensor<32x10xf32>
    %dy = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%y : tensor<32x10xf32>) outs(%ey : tensor<32x10xf32>) {
    ^bb0(%a: f32, %o: f32):
      %r = arith.mulf %a, %k : f32
      linalg.yield %r : f32
    } -> tensor<32x10xf32>
    // dw2 = h^T dy
    %ht0 = tensor.empty() : tensor<64x32xf32>
    %ht = linalg.transpose ins(%h : tensor<32x64xf32>) outs(%ht0 : tensor<64x32xf32>) permutation = [1, 0]
    %e2 = tensor.empty() : tensor<64x10xf32>
    %z2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<64x10xf32>) -> tensor<64x10xf32>
    %dw2 = linalg.matmul ins(%ht, %dy : tensor<64x32xf32>, tensor<32x10xf32>) outs(%z2 : tensor<64x10xf32>) -> tensor<64x10xf32>
    // dz = (dy w2^T) (1 - h^2)
    %w2t0 = tensor.empty() : tensor<10x64xf32>
    %w2t = linalg.transpose ins(%w2 : tensor<64x10xf32>) outs(%w2t0 : tensor<10x64xf32>) permutation = [1, 0]
    %eh = tensor.empty() : tensor<32x64xf32>
    %zh = linalg.fill ins(%c0 : f32) outs(%eh : tensor<32x64xf32>) -> tensor<32x64xf32>
    %dh = linalg.matmul ins(%dy, %w2t : tensor<32x10xf32>, tensor<10x64xf32>) outs(%zh : tensor<32x64xf32>) -> tensor<32x64xf32>
    %dz = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%dh, %h : tensor<32x64xf32>, tensor<32x64xf32>) outs(%eh : tensor<32x64xf32>) {
    ^bb0(%g: f32, %hv: f32, %o: f32):
      %h2 = arith.mulf %hv, %hv : f32
      %d = arith.subf %c1, %h2 : f32
      %r = arith.mulf %g, %d : f32 // tanh-derivative
      linalg.yield %r : f32
    } -> tensor<32x64xf32>
    // dw1 = x^T dz
    %xt0 = tensor.empty() : tensor<256x32xf32>
    %xt = linalg.transpose ins(%x : tensor<32x256xf32>) outs(%xt0 : tensor<256x32xf32>) permutation = [1, 0]
    %e1 = tensor.empty() : tensor<256x64xf32>
    %z1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<256x64xf32>) -> tensor<256x64xf32>
    %dw1 = linalg.matmul ins(%xt, %dz : tensor<256x32xf32>, tensor<32x64xf32>) outs(%z1 : tensor<256x64xf32>) -> tensor<256x64xf32>
    // dx = dz w1^T
    %w1t0 = tensor.empty() : tensor<64x256xf32>
    %w1t = linalg.transpose ins(%w1 : tensor<256x64xf32>) outs(%w1t0 : tensor<64x256xf32>) permutation = [1, 0]
    %ex = tensor.empty() : tensor<32x256xf32>
    %zx = linalg.fill ins(%c0 : f32) outs(%ex : tensor<32x256xf32>) -> tensor<32x256xf32>
    %dx = linalg.matmul ins(%dz, %w1t : tensor<32x64xf32>, tensor<64x256xf32>) outs(%zx : tensor<32x256xf32>) -> tensor<32x256xf32>
    return %l, %dx, %dw1, %dw2 : tensor<f32>, tensor<32x256xf32>, tensor<256x64xf32>, tensor<64x10xf32>
  }
}
