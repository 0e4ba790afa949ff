// RUN: pipeopt %s -split-input-file -pipeopt-check-gather-indices -verify-diagnostics
// RUN: pipeopt %s -split-input-file -pipeopt-check-gather-indices=target=cuda -verify-diagnostics
// RUN: not pipeopt %s -split-input-file -pipeopt-check-gather-indices=target=tpu 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: error: unknown target 'tpu' (expected cpu or cuda)

func.func @empty_table(%ids: tensor<4xi64>, %table: tensor<0x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi64>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%id: i64, %out: f32):
    %i = arith.index_cast %id : i64 to index
    %j = linalg.index 1 : index
    // expected-error @+1 {{gathers from dimension 0 of 'tensor<0x8xf32>', which is empty: every index is out of range}}
    %v = tensor.extract %table[%i, %j] : tensor<0x8xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
