// RUN: pipeopt %s -convert-linalg-to-runtime-kernels | FileCheck %s

// A nested module is its own symbol table: its ops are left to a run on it,
// since the declarations go into the module the pass runs on.
// CHECK: module @inner
// CHECK: linalg.matmul
// CHECK-NOT: pipeopt_rt_matmul
module {
  module @inner {
    func.func @m(%a: memref<16x32xf32>, %b: memref<32x8xf32>, %c: memref<16x8xf32>) {
      linalg.matmul ins(%a, %b : memref<16x32xf32>, memref<32x8xf32>) outs(%c : memref<16x8xf32>)
      return
    }
  }
}
