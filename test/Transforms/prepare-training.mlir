// pipe-prepare-training: the function a training build compiles.
// RUN: pipeopt %s -pipe-prepare-training="function=f loss=mse" | FileCheck %s --check-prefix=PIPE
// RUN: pipeopt %s -pipe-prepare-training="function=f loss=mse reference=true" | FileCheck %s --check-prefix=REF
// RUN: pipeopt %s -pipe-prepare-training="function=f loss=mse reference=true optimizer=false" | FileCheck %s --check-prefix=NOOPT
// RUN: pipeopt %s -pipe-prepare-training="function=f loss=mse trainable=all microbatch-args=none" | FileCheck %s --check-prefix=ALL
// The step can be differentiated again (its result attributes are not
// copied onto the derived functions, whose results differ).
// RUN: pipeopt %s -pipe-prepare-training="function=f loss=mse reference=true" | pipeopt -pipe-differentiate="functions=f_grad" | FileCheck %s --check-prefix=AGAIN
// AGAIN-LABEL: func.func @f_grad_fwd(
// AGAIN-SAME: -> (tensor<f32>, tensor<3x2xf32>, tensor<4x2xf32>
// AGAIN-NOT: pipe.output_name
// AGAIN: func.func @f_grad_bwd(

// Pipelined: the loss function is what the front half partitions; its data
// argument (%x, the batch dimension of the result) and its target are per
// microbatch, and @w is recorded as trainable.
// PIPE-LABEL: func.func @f_loss(
// PIPE-SAME: %arg0: tensor<3x2xf32>, %arg1: tensor<4x3xf32> {pipe.microbatched}, %arg2: tensor<4x2xf32> {pipe.microbatched}) -> tensor<f32>
// PIPE-SAME: attributes {pipe.trainable = array<i64: 0>}
// PIPE-LABEL: func.func @f_grad(
// PIPE-SAME: -> (tensor<f32>, tensor<3x2xf32>, tensor<4x3xf32>) {

// Reference: the one-microbatch step returns the loss and the trainable
// argument's gradient (the data's is dropped), named and averaged, and hands
// the gradient to the runtime's optimizer (pipe.gradient_of).
// REF-LABEL: func.func @f_grad(
// REF-SAME: %arg0: tensor<3x2xf32>, %arg1: tensor<4x3xf32> {pipe.microbatched}, %arg2: tensor<4x2xf32> {pipe.microbatched})
// REF-SAME: -> (tensor<f32> {pipe.output_name = "loss", pipe.reduce = "mean"}, tensor<3x2xf32> {pipe.gradient_of = 0 : i64, pipe.output_name = "grad_0", pipe.reduce = "mean"})
// NOOPT-LABEL: func.func @f_grad(
// NOOPT-SAME: -> (tensor<f32> {pipe.output_name = "loss", pipe.reduce = "mean"}, tensor<3x2xf32> {pipe.output_name = "grad_0", pipe.reduce = "mean"})

// trainable=all with no data: both arguments are weights.
// ALL-LABEL: func.func @f_loss(
// ALL-SAME: %arg0: tensor<3x2xf32>, %arg1: tensor<4x3xf32>, %arg2: tensor<4x2xf32> {pipe.microbatched}) -> tensor<f32>
// ALL-SAME: attributes {pipe.trainable = array<i64: 0, 1>}

func.func @f(%w: tensor<3x2xf32>, %x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x2xf32>)
                     outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}
