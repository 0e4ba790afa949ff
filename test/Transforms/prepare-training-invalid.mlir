// Errors of pipe-prepare-training (the model differentiated before, with a
// pipe.gradient that does not fit its functions: Tools/Inputs/bad-gradient.mlir
// through pipeopt-compile).
// RUN: not pipeopt %s -pipe-prepare-training 2>&1 | FileCheck %s --check-prefix=NOFN
// NOFN: error: pipe-prepare-training: the option 'function' (the model function to train) is required
// RUN: not pipeopt %s -pipe-prepare-training=function=nope 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: pipe-prepare-training: no function @nope with a body to train
// RUN: not pipeopt %s -pipe-prepare-training=function=f 2>&1 | FileCheck %s --check-prefix=NOLOSS
// NOLOSS: :[[@LINE+20]]:1: error: @f has no loss to train: give loss=mse or loss=cross-entropy, or let the model return its loss as one f32 scalar (tensor<f32>)
// RUN: not pipeopt %s -pipe-prepare-training="function=f reference=true" 2>&1 | FileCheck %s --check-prefix=REFNOLOSS
// REFNOLOSS: error: the model has no loss to differentiate (pipe.gradient of @f names no 'grad' function): give loss=mse or loss=cross-entropy
// RUN: not pipeopt %s -pipe-prepare-training="function=f loss=mse trainable=none" 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: error: @f has no trainable argument (trainable none): training would change nothing
// RUN: not pipeopt %s -pipe-prepare-training="function=f loss=mse trainable=1" 2>&1 | FileCheck %s --check-prefix=DATA
// DATA: error: trainable argument 1 of @f is per-microbatch data (microbatch-args auto), not a parameter
// RUN: not pipeopt %s -pipe-prepare-training="function=f loss=mse reference=true trainable=none" 2>&1 | FileCheck %s --check-prefix=NONE
// Without an optimizer the reference computes the loss and gradients only.
// RUN: pipeopt %s -pipe-prepare-training="function=f loss=mse reference=true trainable=none optimizer=false" -o /dev/null
//
// A pipe.gradient that does not fit the module (the reference uses a model
// differentiated before as it is).
// RUN: not pipeopt %s -pipe-prepare-training="function=wrt2 reference=true" 2>&1 | FileCheck %s --check-prefix=SIGNATURE
// SIGNATURE: error: the gradient function @wrt2_grad has type '(tensor<4xf32>, tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)', but 3 arguments (the model's and a target) and 3 results (the loss and one gradient per 'wrt' index of pipe.gradient) were expected
// RUN: not pipeopt %s -pipe-prepare-training="function=missing reference=true" 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: pipe.gradient of @missing names @missing_grad as its gradient function, but the module has no function with a body of that name
// RUN: not pipeopt %s -pipe-prepare-training="function=external reference=true" 2>&1 | FileCheck %s --check-prefix=EXTERNAL
// EXTERNAL: error: pipe.gradient of @external names @external_grad as its gradient function, but the module has no function with a body of that name

func.func @f(%w: tensor<3x2xf32>, %x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x2xf32>)
                     outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

func.func @wrt2(%w: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32>
    attributes {pipe.gradient = #pipe.gradient<grad = @wrt2_grad, loss = mse,
                                 wrt = [0, 1]>} {
  return %w : tensor<4xf32>
}
func.func private @wrt2_grad(%w: tensor<4xf32>, %t: tensor<4xf32>)
    -> (tensor<f32>, tensor<4xf32>) {
  %l = arith.constant dense<0.0> : tensor<f32>
  return %l, %w : tensor<f32>, tensor<4xf32>
}

func.func @missing(%w: tensor<4xf32>) -> tensor<4xf32>
    attributes {pipe.gradient = #pipe.gradient<grad = @missing_grad, loss = self,
                                 wrt = [0]>} {
  return %w : tensor<4xf32>
}

func.func @external(%w: tensor<4xf32>) -> tensor<4xf32>
    attributes {pipe.gradient = #pipe.gradient<grad = @external_grad, loss = self,
                                 wrt = [0]>} {
  return %w : tensor<4xf32>
}
func.func private @external_grad(%w: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
