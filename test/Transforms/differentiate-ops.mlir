// The adjoint IR of each op kind the differentiation library supports, on
// the functions of ../Autodiff/Inputs/ops.mlir (which
// ../Autodiff/gradcheck-ops.test checks against finite differences).
//
// RUN: pipeopt %S/../Autodiff/Inputs/ops.mlir -pipe-differentiate=functions=elementwise | FileCheck %s --check-prefix=EW
// RUN: pipeopt %S/../Autodiff/Inputs/ops.mlir -pipe-differentiate=functions=broadcast_reduce | FileCheck %s --check-prefix=BR
// RUN: pipeopt %S/../Autodiff/Inputs/ops.mlir -pipe-differentiate=functions=max_transpose | FileCheck %s --check-prefix=MAX
// RUN: pipeopt %S/../Autodiff/Inputs/ops.mlir -pipe-differentiate=functions=contractions | FileCheck %s --check-prefix=MM
// RUN: pipeopt %S/../Autodiff/Inputs/ops.mlir -pipe-differentiate=functions=convolutions | FileCheck %s --check-prefix=CONV
// RUN: pipeopt %S/../Autodiff/Inputs/ops.mlir -pipe-differentiate=functions=data_movement | FileCheck %s --check-prefix=MOVE
// RUN: pipeopt %S/../Autodiff/Inputs/ops.mlir -pipe-differentiate=functions=gather | FileCheck %s --check-prefix=GATHER
// RUN: pipeopt %S/../Autodiff/Inputs/ops.mlir -pipe-differentiate=functions=mixed_precision | FileCheck %s --check-prefix=MIXED
// RUN: pipeopt %S/../Autodiff/Inputs/ops.mlir -pipe-differentiate=functions=scalar_loss | FileCheck %s --check-prefix=SELF

// Element-wise: one generic per operand, recomputing the body; d/dx of
// erf is 2/sqrt(pi) exp(-x^2), of rsqrt -v^3/2, max splits ties in halves.
// EW-LABEL: func.func @elementwise_bwd(
// EW-SAME: -> (tensor<2x3xf32>, tensor<2x3xf32>)
// EW-DAG: arith.constant 1.12837{{[0-9]*}} : f32
// EW-DAG: arith.constant -5.000000e-01 : f32
// EW-DAG: arith.constant 5.000000e-01 : f32
// EW: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// EW: arith.cmpf oeq
// EW: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// EW: return

// Broadcast + sum of squares: d s = 2 s dy, d bias = column sums of d s.
// BR-LABEL: func.func @broadcast_reduce_bwd(
// BR: %[[DS:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// BR: %[[DB:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["reduction", "parallel"]} ins(%[[DS]] : tensor<4x3xf32>)
// BR: return %[[DS]], %[[DB]]

// Max reduction: the gradient goes where the element equals the maximum;
// the transpose's adjoint is the inverse transpose.
// MAX-LABEL: func.func @max_transpose_bwd(
// MAX: arith.cmpf oeq
// MAX: arith.select
// MAX: linalg.generic {{.*}}ins(%{{.*}} : tensor<4x3xf32>) outs(%{{.*}} : tensor<3x4xf32>)
// MAX-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// MAX-NEXT: linalg.yield

// Contractions: each operand's gradient is a contraction of the result's
// gradient with the other operand; an operand read at a constant index
// (i, k, 0) gets an all-reduction generic writing that index only.
// MM-LABEL: func.func @contractions_bwd(
// MM: iterator_types = ["reduction", "reduction", "reduction"]} ins(%{{.*}} : tensor<3x4xf32>, tensor<2x4xf32>) outs(%{{.*}} : tensor<2x3x5xf32>)
// MM: iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%{{.*}} : tensor<2x4x5xf32>, tensor<2x3x5xf32>) outs(%{{.*}} : tensor<2x3x4xf32>)
// MM: iterator_types = ["parallel", "reduction", "parallel", "parallel"]} ins(%{{.*}} : tensor<2x3x4xf32>, tensor<2x3x5xf32>) outs(%{{.*}} : tensor<2x4x5xf32>)

// Convolutions: the input gradient of a strided convolution accumulates
// through the strided map with every loop a reduction; the filter
// gradient keeps the filter's loops parallel; the pad's adjoint is a slice.
// CONV-DAG: #[[$STRIDED:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 * 2 + d5, d3 * 2 + d6)>
// CONV-DAG: #[[$FILTER:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
// CONV-LABEL: func.func @convolutions_bwd(
// CONV: %[[DPAD:.*]] = linalg.generic {indexing_maps = [#[[$FILTER]], #{{.*}}, #[[$STRIDED]]], iterator_types = ["reduction", "reduction", "reduction", "reduction", "reduction", "reduction", "reduction"]}
// CONV: linalg.generic {indexing_maps = [#[[$STRIDED]], #{{.*}}, #[[$FILTER]]], iterator_types = ["reduction", "parallel", "reduction", "reduction", "parallel", "parallel", "parallel"]}
// CONV: tensor.extract_slice %[[DPAD]][0, 0, 1, 1] [1, 2, 7, 7] [1, 1, 1, 1] : tensor<1x2x9x9xf32> to tensor<1x2x7x7xf32>

// Data movement: expand <-> collapse, extract_slice -> insert_slice into
// zeros, insert_slice -> extract_slice (source) and zeroed slot (dest),
// concat -> one slice per operand.
// MOVE-LABEL: func.func @data_movement_bwd(
// MOVE-DAG: tensor.collapse_shape %{{.*}} {{\[}}[0, 1]] : tensor<2x2xf32> into tensor<4xf32>
// MOVE-DAG: tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : tensor<3x2x6xf32> into tensor<6x6xf32>
// MOVE-DAG: tensor.extract_slice %{{.*}}[0, 0] [2, 6] [1, 1] : tensor<6x6xf32> to tensor<2x6xf32>
// MOVE-DAG: tensor.extract_slice %{{.*}}[2, 0] [4, 6] [1, 1] : tensor<6x6xf32> to tensor<4x6xf32>
// MOVE-DAG: tensor.insert_slice %{{.*}} into %{{.*}}[0, 1] [4, 1] [1, 2] : tensor<4xf32> into tensor<4x6xf32>
// MOVE-DAG: tensor.insert_slice %{{.*}} into %{{.*}}[1, 0] [2, 6] [1, 1] : tensor<2x6xf32> into tensor<4x6xf32>

// Gather: a scatter-add loop nest over the generic's loops; the integer
// ids get no gradient (only the table's is returned).
// GATHER-LABEL: func.func @gather_bwd(
// GATHER-SAME: -> tensor<5x3xf32>
// GATHER: scf.for
// GATHER: scf.for
// GATHER: %[[ROW:.*]] = arith.index_cast
// GATHER: tensor.extract %{{.*}}[%[[ROW]], %{{.*}}] : tensor<5x3xf32>
// GATHER: tensor.insert %{{.*}} into %{{.*}}[%[[ROW]], %{{.*}}] : tensor<5x3xf32>

// Mixed precision: the f64 part of the chain is differentiated in f64.
// MIXED-LABEL: func.func @mixed_precision_bwd(
// MIXED: arith.extf %{{.*}} : f32 to f64
// MIXED: arith.truncf %{{.*}} : f64 to f32

// A model returning one scalar is its own loss: @scalar_loss_grad seeds 1.
// SELF: loss = self,
// SELF-LABEL: func.func @scalar_loss_grad(
// SELF-SAME: -> (tensor<f32>, tensor<3xf32>, tensor<3xf32>)
