// pipe-differentiate on a two-layer MLP (Inputs/differentiate-mlp.mlir):
// y = tanh(x w + b); x is data (its leading dimension is y's), w and b are
// the trainable weights, the i64 argument gets no gradient (an integer
// tensor is never a weight; it is data, as its leading dimension is the
// batch's, 4).
//
// RUN: pipeopt %S/Inputs/differentiate-mlp.mlir -pipe-differentiate | FileCheck %s
// RUN: pipeopt %S/Inputs/differentiate-mlp.mlir -pipe-differentiate=recompute=all | FileCheck %s --check-prefix=ALL
// RUN: pipeopt %S/Inputs/differentiate-mlp.mlir -pipe-differentiate=trainable=none | FileCheck %s --check-prefix=NONE
// RUN: pipeopt %S/Inputs/differentiate-mlp.mlir -pipe-differentiate=loss=mse | FileCheck %s --check-prefix=MSE

// The bookkeeping: x, w, b differentiated; w, b trainable; one saved value
// (the matmul result m, 80 bytes) plus x (48 bytes, data) kept for the backward;
// B stashes d m (80 bytes) for W.
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: pipe.gradient = #pipe.gradient<loss = none, wrt = [0, 1, 2], trainable = [1, 2], data = [0, 3], seeded = [0], num_saved = 1, saved_bytes = 128, num_stash = 1, stash_bytes = 80, fwd = @mlp_fwd, bwd = @mlp_bwd, b = @mlp_b, w = @mlp_w>

// F returns y and the saved m.
// CHECK-LABEL: func.func @mlp_fwd(
// CHECK-SAME: -> (tensor<4x5xf32>, tensor<4x5xf32>)
// CHECK: %[[M:.*]] = linalg.matmul
// CHECK: %[[Y:.*]] = linalg.generic
// CHECK: return %[[Y]], %[[M]]

// B+W: (args, saved m, dy) -> (dx, dw, db). The tanh adjoint recomputes
// tanh(m + b) and multiplies dy by 1 - tanh^2.
// CHECK-LABEL: func.func @mlp_bwd(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x3xf32>, %[[W:[a-z0-9]+]]: tensor<3x5xf32>, %[[B:[a-z0-9]+]]: tensor<5xf32>, %{{.*}}: tensor<4xi64>, %[[SM:[a-z0-9]+]]: tensor<4x5xf32>, %[[DY:[a-z0-9]+]]: tensor<4x5xf32>) -> (tensor<4x3xf32>, tensor<3x5xf32>, tensor<5xf32>)
// CHECK: %[[DM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%[[SM]], %[[B]], %[[DY]] :
// CHECK: math.tanh
// CHECK: arith.mulf
// CHECK: arith.subf
// db sums over the rows (reduction over d0).
// CHECK: %[[DB:.*]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]} ins(%[[SM]], %[[B]], %[[DY]] :
// dx = dm w^T: a two-input contraction over j.
// CHECK: %[[DX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[W]], %[[DM]] :
// dw = x^T dm: a contraction over the rows.
// CHECK: %[[DW:.*]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "parallel"]} ins(%[[X]], %[[DM]] :
// CHECK: return %[[DX]], %[[DW]], %[[DB]]

// B: the input gradient and the stash; no weight gradient.
// CHECK-LABEL: func.func @mlp_b(
// CHECK-SAME: -> (tensor<4x3xf32>, tensor<4x5xf32>)
// CHECK-NOT: iterator_types = ["reduction", "parallel", "parallel"]
// CHECK: return

// W: the weight gradients from the stashed dm (last argument).
// CHECK-LABEL: func.func @mlp_w(
// CHECK-SAME: %[[WX:[a-z0-9]+]]: tensor<4x3xf32>, {{.*}}, %[[STASH:[a-z0-9]+]]: tensor<4x5xf32>) -> (tensor<3x5xf32>, tensor<5xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "parallel"]} ins(%[[WX]], %[[STASH]] :

// Full recomputation: nothing saved; the backward recomputes the matmul.
// ALL: num_saved = 0, saved_bytes = 48,
// ALL-LABEL: func.func @mlp_fwd(
// ALL-SAME: -> tensor<4x5xf32>
// ALL-LABEL: func.func @mlp_bwd(
// ALL: linalg.matmul

// No weights: everything is B, W is empty.
// NONE: trainable = [],
// NONE: func.func @mlp_w(%{{.*}}: tensor<4x5xf32>) {
// NONE-NEXT: return

// With a loss: @mlp_loss appends mean((y - t)^2) and @mlp_grad returns the
// loss and the three gradients.
// MSE: loss = mse,
// MSE-SAME: loss_fn = @mlp_loss, grad = @mlp_grad>
// MSE-LABEL: func.func @mlp_loss(
// MSE-SAME: %{{.*}}: tensor<4x5xf32>) -> tensor<f32>
// MSE: arith.constant 5.000000e-02 : f32
// MSE-LABEL: func.func @mlp_grad(
// MSE-SAME: -> (tensor<f32>, tensor<4x3xf32>, tensor<3x5xf32>, tensor<5xf32>)
// MSE: arith.constant dense<1.000000e+00> : tensor<f32>
