// A TOSA model y = x w (x: 1x4x3, w: 1x3x2) with the loss=mse functions of
// pipe-differentiate's ABI written by hand, in TOSA:
//   L = mean((y - t)^2) = sum((y - t)^2) / 8,
//   dL/dy = (y - t) / 4, dL/dw = x^T dy, dL/dx = dy w^T.
// The tests derive a wrong variant from the line marked "grad-residual".
module {
  func.func @f(%w: tensor<1x3x2xf32> loc("w"), %x: tensor<1x4x3xf32> loc("x")) -> tensor<1x4x2xf32>
      attributes {pipe.gradient = #pipe.gradient<wrt = [0, 1], trainable = [0],
                                   loss = mse, saved_bytes = 0,
                                   loss_fn = @f_loss, grad = @f_grad>} {
    %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %y = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4x3xf32>, tensor<1x3x2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x2xf32>
    return %y : tensor<1x4x2xf32>
  }

  func.func @f_loss(%w: tensor<1x3x2xf32>, %x: tensor<1x4x3xf32>, %t: tensor<1x4x2xf32>) -> tensor<f32> {
    %y = func.call @f(%w, %x) : (tensor<1x3x2xf32>, tensor<1x4x3xf32>) -> tensor<1x4x2xf32>
    %sh = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %d = tosa.sub %y, %t : (tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
    %sq = tosa.mul %d, %d, %sh : (tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<1xi8>) -> tensor<1x4x2xf32>
    %s1 = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<1x4x2xf32>) -> tensor<1x1x2xf32>
    %s2 = tosa.reduce_sum %s1 {axis = 2 : i32} : (tensor<1x1x2xf32>) -> tensor<1x1x1xf32>
    %n = "tosa.const"() <{values = dense<0.125> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
    %m = tosa.mul %s2, %n, %sh : (tensor<1x1x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x1x1xf32>
    %l = tensor.collapse_shape %m [] : tensor<1x1x1xf32> into tensor<f32>
    return %l : tensor<f32>
  }

  func.func @f_grad(%w: tensor<1x3x2xf32>, %x: tensor<1x4x3xf32>, %t: tensor<1x4x2xf32>)
      -> (tensor<f32>, tensor<1x3x2xf32>, tensor<1x4x3xf32>) {
    %l = func.call @f_loss(%w, %x, %t) : (tensor<1x3x2xf32>, tensor<1x4x3xf32>, tensor<1x4x2xf32>) -> tensor<f32>
    %y = func.call @f(%w, %x) : (tensor<1x3x2xf32>, tensor<1x4x3xf32>) -> tensor<1x4x2xf32>
    %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %sh = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %d = tosa.sub %y, %t : (tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32> // grad-residual
    %q = "tosa.const"() <{values = dense<0.25> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
    %dy = tosa.mul %d, %q, %sh : (tensor<1x4x2xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4x2xf32>
    %xt = tosa.transpose %x {perms = array<i32: 0, 2, 1>} : (tensor<1x4x3xf32>) -> tensor<1x3x4xf32>
    %dw = tosa.matmul %xt, %dy, %zp, %zp : (tensor<1x3x4xf32>, tensor<1x4x2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x2xf32>
    %wt = tosa.transpose %w {perms = array<i32: 0, 2, 1>} : (tensor<1x3x2xf32>) -> tensor<1x2x3xf32>
    %dx = tosa.matmul %dy, %wt, %zp, %zp : (tensor<1x4x2xf32>, tensor<1x2x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x3xf32>
    return %l, %dw, %dx : tensor<f32>, tensor<1x3x2xf32>, tensor<1x4x3xf32>
  }
}
