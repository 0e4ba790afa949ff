// RUN: pipeopt %s -pipeopt-check-gather-indices | FileCheck %s
// RUN: pipeopt %s -pipeopt-check-gather-indices=target=cuda | FileCheck %s --check-prefix=CUDA --implicit-check-not=pipeopt_rt_index_error --implicit-check-not=scf.if

// An embedding lookup as torch-mlir writes it: the token id (i64 data) is
// cast to an index and extracted from the table. The index is compared with
// the table's extent, reported when out of range, and clamped.

// CHECK-LABEL: func.func @embedding
// CHECK: linalg.generic
// CHECK:   %[[I:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK:   %[[J:.*]] = linalg.index 1 : index
// CHECK:   %[[N:.*]] = tensor.dim %arg1, %{{.*}} : tensor<100x8xf32>
// CHECK:   %[[ZERO:.*]] = arith.constant 0 : index
// CHECK:   %[[ONE:.*]] = arith.constant 1 : index
// CHECK:   %[[NEG:.*]] = arith.cmpi slt, %[[I]], %[[ZERO]]
// CHECK:   %[[BIG:.*]] = arith.cmpi sge, %[[I]], %[[N]]
// CHECK:   %[[BAD:.*]] = arith.ori %[[NEG]], %[[BIG]]
// CHECK:   scf.if %[[BAD]] {
// CHECK:     %[[I64:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK:     %[[N64:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK:     %[[D:.*]] = arith.constant 0 : i64
// CHECK:     func.call @pipeopt_rt_index_error(%[[I64]], %[[N64]], %[[D]])
// CHECK:   }
// CHECK:   %[[LAST:.*]] = arith.subi %[[N]], %[[ONE]]
// CHECK:   %[[MIN:.*]] = arith.minsi %[[I]], %[[LAST]]
// CHECK:   %[[CL:.*]] = arith.maxsi %[[MIN]], %[[ZERO]]
// CHECK:   tensor.extract %arg1[%[[CL]], %[[J]]] : tensor<100x8xf32>
// target=cuda: the same clamp, nothing reported (device code).
// CUDA-LABEL: func.func @embedding
// CUDA:   %[[I:.*]] = arith.index_cast %{{.*}} : i64 to index
// CUDA:   %[[J:.*]] = linalg.index 1 : index
// CUDA:   %[[N:.*]] = tensor.dim %arg1, %{{.*}} : tensor<100x8xf32>
// CUDA:   %[[ZERO:.*]] = arith.constant 0 : index
// CUDA:   %[[ONE:.*]] = arith.constant 1 : index
// CUDA:   %[[LAST:.*]] = arith.subi %[[N]], %[[ONE]]
// CUDA:   %[[MIN:.*]] = arith.minsi %[[I]], %[[LAST]]
// CUDA:   %[[CL:.*]] = arith.maxsi %[[MIN]], %[[ZERO]]
// CUDA:   tensor.extract %arg1[%[[CL]], %[[J]]] : tensor<100x8xf32>
func.func @embedding(%ids: tensor<4xi64>, %table: tensor<100x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi64>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%id: i64, %out: f32):
    %i = arith.index_cast %id : i64 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%i, %j] : tensor<100x8xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// Indices from loop indices only are in range by construction.
// CHECK-LABEL: func.func @loop_index
// CHECK-NOT: pipeopt_rt_index_error
// CHECK: tensor.extract %arg0[%{{.*}}] : tensor<8xf32>
func.func @loop_index(%t: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      outs(%e : tensor<8xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %v = tensor.extract %t[%i] : tensor<8xf32>
    linalg.yield %v : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// CHECK: func.func private @pipeopt_rt_index_error(i64, i64, i64) -> i32 attributes {llvm.emit_c_interface}
