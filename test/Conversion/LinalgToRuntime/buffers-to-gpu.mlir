// RUN: pipeopt %s -pipeopt-buffers-to-gpu | FileCheck %s --implicit-check-not=memref.alloc --implicit-check-not=memref.dealloc --implicit-check-not=memref.copy

// Allocations and frees become gpu.alloc / gpu.dealloc; a contiguous copy
// is one gpu.memcpy.
// CHECK-LABEL: func.func @alloc_copy
// CHECK-SAME: (%[[IN:.*]]: memref<4x8xf32>, %[[N:.*]]: index)
// CHECK: %[[A:.*]] = gpu.alloc () : memref<4x8xf32>
// CHECK: gpu.memcpy %[[A]], %[[IN]] : memref<4x8xf32>, memref<4x8xf32>
// CHECK: %[[D:.*]] = gpu.alloc (%[[N]]) : memref<?xf32>
// CHECK: gpu.dealloc %[[D]] : memref<?xf32>
// CHECK: gpu.dealloc %[[A]] : memref<4x8xf32>
func.func @alloc_copy(%in: memref<4x8xf32>, %n: index) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
  memref.copy %in, %a : memref<4x8xf32> to memref<4x8xf32>
  %d = memref.alloc(%n) : memref<?xf32>
  memref.dealloc %d : memref<?xf32>
  memref.dealloc %a : memref<4x8xf32>
  return
}

// A copy out of a strided view becomes a copy kernel (linalg.copy).
// CHECK-LABEL: func.func @strided_copy
// CHECK: %[[V:.*]] = memref.subview
// CHECK: linalg.copy ins(%[[V]] : memref<4x4xf32, strided<[8, 1]>>) outs(%{{.*}} : memref<4x4xf32>)
func.func @strided_copy(%in: memref<4x8xf32>, %out: memref<4x4xf32>) {
  %v = memref.subview %in[0, 0] [4, 4] [1, 1] : memref<4x8xf32> to memref<4x4xf32, strided<[8, 1]>>
  memref.copy %v, %out : memref<4x4xf32, strided<[8, 1]>> to memref<4x4xf32>
  return
}

// A constant: one device copy per function at its top, freed before every
// return, used in place of every memref.get_global of it.
memref.global "private" constant @cst : memref<8xf32> = dense<1.0>
// CHECK-LABEL: func.func @global
// CHECK: %[[H:.*]] = memref.get_global @cst : memref<8xf32>
// CHECK: %[[G:.*]] = gpu.alloc () : memref<8xf32>
// CHECK: gpu.memcpy %[[G]], %[[H]] : memref<8xf32>, memref<8xf32>
// CHECK-NOT: memref.get_global
// CHECK: cf.cond_br
// CHECK: ^bb1:
// CHECK: linalg.add ins(%[[G]], %[[G]] : memref<8xf32>, memref<8xf32>)
// CHECK: gpu.dealloc %[[G]] : memref<8xf32>
// CHECK-NEXT: return
// CHECK: ^bb2:
// CHECK: gpu.dealloc %[[G]] : memref<8xf32>
// CHECK-NEXT: return
func.func @global(%c: i1, %out: memref<8xf32>) {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %g = memref.get_global @cst : memref<8xf32>
  %g2 = memref.get_global @cst : memref<8xf32>
  linalg.add ins(%g, %g2 : memref<8xf32>, memref<8xf32>) outs(%out : memref<8xf32>)
  return
^bb2:
  return
}

// A reduction to a scalar has no parallel loop: it gets a one-iteration
// scf.parallel (a one-thread kernel); parallel ops are left alone.
// CHECK-LABEL: func.func @scalar_reduction
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: scf.parallel (%{{.*}}) = (%[[C0]]) to (%[[C1]]) step (%[[C1]]) {
// CHECK-NEXT: linalg.reduce
// CHECK: scf.reduce
// CHECK: }
// CHECK-NEXT: linalg.exp
func.func @scalar_reduction(%in: memref<8xf32>, %out: memref<f32>, %e: memref<8xf32>) {
  linalg.reduce ins(%in : memref<8xf32>) outs(%out : memref<f32>) dimensions = [0]
    (%x: f32, %acc: f32) {
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
    }
  linalg.exp ins(%in : memref<8xf32>) outs(%e : memref<8xf32>)
  return
}

// An alloca in a function body: device memory freed at the end of the body.
// CHECK-LABEL: func.func @alloca
// CHECK: %[[S:.*]] = gpu.alloc () : memref<4xf32>
// CHECK: linalg.fill
// CHECK: gpu.dealloc %[[S]] : memref<4xf32>
// CHECK-NEXT: return
func.func @alloca(%x: f32) {
  %s = memref.alloca() : memref<4xf32>
  linalg.fill ins(%x : f32) outs(%s : memref<4xf32>)
  return
}

// A host loop nest of scalar code over buffers (the gradient of a gather: a
// scatter-add whose iterations may hit the same element) becomes a
// one-thread kernel that keeps the order of its iterations; a loop that
// calls a function or holds a linalg op is left on the host.
// CHECK-LABEL: func.func @scatter_add
// CHECK: scf.parallel (%{{.*}}) = (%[[Z:.*]]) to (%[[O:.*]]) step (%[[O]])
// CHECK-NEXT: scf.for
// CHECK-NEXT: scf.for
// CHECK: memref.load %{{.*}} : memref<3xi32>
// CHECK: memref.store
// CHECK: scf.reduce
// CHECK-LABEL: func.func @loop_of_linalg
// CHECK-NOT: scf.parallel
// CHECK: scf.for
// CHECK-NEXT: linalg.fill
func.func @scatter_add(%idx: memref<3xi32>, %dy: memref<3x4xf32>, %table: memref<10x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  scf.for %p = %c0 to %c3 step %c1 {
    scf.for %d = %c0 to %c4 step %c1 {
      %i = memref.load %idx[%p] : memref<3xi32>
      %row = arith.index_cast %i : i32 to index
      %g = memref.load %dy[%p, %d] : memref<3x4xf32>
      %t = memref.load %table[%row, %d] : memref<10x4xf32>
      %s = arith.addf %t, %g : f32
      memref.store %s, %table[%row, %d] : memref<10x4xf32>
    }
  }
  return
}
func.func @loop_of_linalg(%out: memref<4xf32>, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  scf.for %p = %c0 to %c3 step %c1 {
    linalg.fill ins(%x : f32) outs(%out : memref<4xf32>)
  }
  return
}
