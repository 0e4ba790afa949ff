// A loop with a loop-carried tensor (a recurrent update) around a matmul
// that the BLAS kernel computes: 10 iterations, one library call each.
func.func @loop(%x: tensor<1x64xf32>, %w: tensor<64x64xf32>) -> tensor<1x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 10 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %x) -> (tensor<1x64xf32>) {
    %e = tensor.empty() : tensor<1x64xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x64xf32>) -> tensor<1x64xf32>
    %y = linalg.matmul ins(%acc, %w : tensor<1x64xf32>, tensor<64x64xf32>) outs(%f : tensor<1x64xf32>) -> tensor<1x64xf32>
    scf.yield %y : tensor<1x64xf32>
  }
  return %r : tensor<1x64xf32>
}
