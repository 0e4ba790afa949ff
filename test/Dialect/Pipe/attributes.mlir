// RUN: pipeopt %s | FileCheck %s
// RUN: pipeopt %s | pipeopt | FileCheck %s
// RUN: pipeopt %s --mlir-print-op-generic | pipeopt | FileCheck %s
// RUN: pipeopt %s --verify-roundtrip

// Round-trips the attributes of the training contract: #pipe.gradient,
// #pipe.optimizer and #pipe.auto_schedule (pipe.gradient, pipe.optimizer and
// pipe.auto_schedule), in their printed form.

// CHECK-LABEL: module attributes
// CHECK-SAME: pipe.auto_schedule = #pipe.auto_schedule<schedule = "zb-v", num_microbatches = 16, virtual_stages = 2, num_stages = 4, makespan_s = 1.3109414999999994E-4>
// CHECK-SAME: pipe.optimizer = #pipe.optimizer<adamw, lr = 1.000000e-03, weight_decay = 1.000000e-01, beta1 = 9.000000e-01, beta2 = 0.99899999999999999, eps = 1.000000e-08>
module attributes {
    pipe.optimizer = #pipe.optimizer<adamw, lr = 1.0e-3, weight_decay = 0.1,
                                     beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8>,
    pipe.auto_schedule = #pipe.auto_schedule<schedule = "zb-v",
        num_microbatches = 16, virtual_stages = 2, num_stages = 4,
        makespan_s = 1.3109414999999994E-4>} {

// Every field pipe-differentiate writes, with a loss; fields in any order.
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: pipe.gradient = #pipe.gradient<loss = mse, wrt = [0, 1, 2], trainable = [1, 2], data = [0], seeded = [0], num_saved = 1, saved_bytes = 128, num_stash = 1, stash_bytes = 80, fwd = @mlp_fwd, bwd = @mlp_bwd, b = @mlp_b, w = @mlp_w, loss_fn = @mlp_loss, grad = @mlp_grad>
func.func @mlp(%x: tensor<4xf32>, %w1: tensor<4xf32>, %w2: tensor<4xf32>) -> tensor<4xf32>
    attributes {pipe.gradient = #pipe.gradient<wrt = [0, 1, 2], loss = mse,
        trainable = [1, 2], data = [0], seeded = [0], num_saved = 1,
        saved_bytes = 128, num_stash = 1, stash_bytes = 80, fwd = @mlp_fwd,
        bwd = @mlp_bwd, b = @mlp_b, w = @mlp_w, loss_fn = @mlp_loss,
        grad = @mlp_grad>} {
  return %x : tensor<4xf32>
}

// The loss kinds: "cross-entropy" is not a keyword, so it prints as a string;
// empty lists print as [].
// CHECK-LABEL: func.func @ce(
// CHECK-SAME: pipe.gradient = #pipe.gradient<loss = "cross-entropy", wrt = [], trainable = [], loss_fn = @ce_loss, grad = @ce_grad>
func.func @ce() attributes {pipe.gradient = #pipe.gradient<loss = "cross-entropy",
    wrt = [], trainable = [], loss_fn = @ce_loss, grad = @ce_grad>} {
  return
}
// CHECK-LABEL: func.func @self(
// CHECK-SAME: pipe.gradient = #pipe.gradient<loss = self, wrt = [0], loss_fn = @self, grad = @self_grad>
func.func @self(%a: f32) attributes {pipe.gradient = #pipe.gradient<loss = self,
    wrt = [0], loss_fn = @self, grad = @self_grad>} {
  return
}
// CHECK-LABEL: func.func @none(
// CHECK-SAME: pipe.gradient = #pipe.gradient<loss = none, wrt = [0, 3]>
func.func @none(%a: f32, %b: f32, %c: f32, %d: f32) attributes {pipe.gradient = #pipe.gradient<loss = none, wrt = [0, 3]>} {
  return
}

// Each optimizer kind with the hyper-parameters that apply to it, the range
// bounds that are inside, and update_every.
// CHECK-LABEL: func.func private @opt_none()
// CHECK-SAME: pipe.optimizer = #pipe.optimizer<none>
func.func private @opt_none() attributes {pipe.optimizer = #pipe.optimizer<none>}
// CHECK-LABEL: func.func private @opt_none_async()
// CHECK-SAME: pipe.optimizer = #pipe.optimizer<none, update_every = 1>
func.func private @opt_none_async() attributes {pipe.optimizer = #pipe.optimizer<none, update_every = 1>}
// CHECK-LABEL: func.func private @opt_sgd()
// CHECK-SAME: pipe.optimizer = #pipe.optimizer<sgd, lr = 1.000000e-01, weight_decay = 0.000000e+00, update_every = 2>
func.func private @opt_sgd() attributes {pipe.optimizer = #pipe.optimizer<sgd, update_every = 2, weight_decay = 0.0, lr = 0.1>}
// CHECK-LABEL: func.func private @opt_momentum()
// CHECK-SAME: pipe.optimizer = #pipe.optimizer<momentum, lr = 0.000000e+00, weight_decay = 0.000000e+00, momentum = 1.000000e+00>
func.func private @opt_momentum() attributes {pipe.optimizer = #pipe.optimizer<momentum, lr = 0.0, weight_decay = 0.0, momentum = 1.0>}
// CHECK-LABEL: func.func private @opt_adamw()
// CHECK-SAME: pipe.optimizer = #pipe.optimizer<adamw, lr = 1.000000e-03, weight_decay = 0.000000e+00, beta1 = 0.000000e+00, beta2 = 0.000000e+00, eps = 4.940660e-324, update_every = 1048576>
func.func private @opt_adamw() attributes {pipe.optimizer = #pipe.optimizer<adamw, lr = 1.0e-3, weight_decay = 0.0, beta1 = 0.0, beta2 = 0.0, eps = 4.9406564584124654E-324, update_every = 1048576>}

}
