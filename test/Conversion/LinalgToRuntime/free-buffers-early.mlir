// RUN: pipeopt %s -pipeopt-free-buffers-early -split-input-file | FileCheck %s

// Straight-line code: each dealloc moves to just after its buffer's last
// use. %a's last use is the call that reads it; %b's is the copy out of
// its subview (an alias), which comes after the call.

// CHECK-LABEL: func.func @straight_line
// CHECK:      %[[A:.*]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: %[[B:.*]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: call @use(%[[A]], %[[B]])
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: %[[V:.*]] = memref.subview %[[B]][0] [8] [1]
// CHECK-NEXT: memref.copy %[[V]], %{{.*}}
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: call @other()
// CHECK-NEXT: return
func.func private @use(memref<16xf32>, memref<16xf32>)
func.func private @other()
func.func @straight_line(%out: memref<8xf32>) {
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  call @use(%a, %b) : (memref<16xf32>, memref<16xf32>) -> ()
  %v = memref.subview %b[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
  memref.copy %v, %out : memref<8xf32, strided<[1]>> to memref<8xf32>
  call @other() : () -> ()
  memref.dealloc %a : memref<16xf32>
  memref.dealloc %b : memref<16xf32>
  return
}

// -----

// A use inside a loop counts at the loop; a loop that yields the buffer
// (its iteration argument) makes the loop's result an alias, whose last
// use is the copy after the loop.

// CHECK-LABEL: func.func @loops
// CHECK:      %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK:      %[[R:.*]] = scf.for
// CHECK:      }
// CHECK-NEXT: call @other()
// CHECK-NEXT: memref.copy %[[R]], %{{.*}}
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: call @other()
// CHECK-NEXT: return
func.func private @other()
func.func @loops(%out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %x = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<4xf32>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%buf = %a) -> (memref<4xf32>) {
    memref.store %x, %buf[%i] : memref<4xf32>
    scf.yield %buf : memref<4xf32>
  }
  call @other() : () -> ()
  memref.copy %r, %out : memref<4xf32> to memref<4xf32>
  call @other() : () -> ()
  memref.dealloc %a : memref<4xf32>
  return
}

// -----

// Uses that cannot be followed keep the dealloc where it is: the pointer
// is taken, or a cast of the buffer is passed to a successor block.

// CHECK-LABEL: func.func @pointer_taken
// CHECK:      memref.extract_aligned_pointer_as_index
// CHECK-NEXT: call @other()
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: return
func.func private @other()
func.func @pointer_taken() -> index {
  %a = memref.alloc() : memref<4xf32>
  %p = memref.extract_aligned_pointer_as_index %a : memref<4xf32> -> index
  call @other() : () -> ()
  memref.dealloc %a : memref<4xf32>
  return %p : index
}

// CHECK-LABEL: func.func @passed_to_a_successor
// CHECK:      call @other()
// CHECK-NEXT: memref.dealloc %{{.*}} : memref<4xf32>
// CHECK-NEXT: cf.br ^bb1
func.func @passed_to_a_successor() {
  %a = memref.alloc() : memref<4xf32>
  %c = memref.cast %a : memref<4xf32> to memref<?xf32>
  call @other() : () -> ()
  memref.dealloc %a : memref<4xf32>
  cf.br ^bb1(%c : memref<?xf32>)
^bb1(%x: memref<?xf32>):
  return
}

// -----

// A buffer that reaches a later read through a value that is not a memref
// keeps its dealloc: a tensor of it, a cast to its descriptor struct, or
// the buffer stored into a memref of memrefs.

// CHECK-LABEL: func.func @to_tensor
// CHECK:      tensor.extract
// CHECK-NEXT: memref.dealloc
func.func private @other()
func.func @to_tensor() -> f32 {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<4xf32>
  %t = bufferization.to_tensor %a restrict : memref<4xf32> to tensor<4xf32>
  call @other() : () -> ()
  %x = tensor.extract %t[%c0] : tensor<4xf32>
  memref.dealloc %a : memref<4xf32>
  return %x : f32
}

// CHECK-LABEL: func.func @descriptor_cast
// CHECK:      llvm.load
// CHECK-NEXT: memref.dealloc
func.func @descriptor_cast() -> i64 {
  %a = memref.alloc() : memref<4xf32>
  %d = builtin.unrealized_conversion_cast %a : memref<4xf32> to !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  call @other() : () -> ()
  %p = llvm.extractvalue %d[1] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %v = llvm.load %p : !llvm.ptr -> i64
  memref.dealloc %a : memref<4xf32>
  return %v : i64
}

// CHECK-LABEL: func.func @stored_as_a_value
// CHECK:      memref.load %{{.*}} : memref<4xf32>
// CHECK-NEXT: memref.dealloc
func.func @stored_as_a_value() -> f32 {
  %c0 = arith.constant 0 : index
  %mm = memref.alloca() : memref<1xmemref<4xf32>>
  %a = memref.alloc() : memref<4xf32>
  memref.store %a, %mm[%c0] : memref<1xmemref<4xf32>>
  call @other() : () -> ()
  %b = memref.load %mm[%c0] : memref<1xmemref<4xf32>>
  %x = memref.load %b[%c0] : memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  return %x : f32
}

// A dealloc in a loop body moves within the body.
// CHECK-LABEL: func.func @in_a_loop
// CHECK:      scf.for
// CHECK:        memref.alloc
// CHECK-NEXT:   call @use4
// CHECK-NEXT:   memref.dealloc
// CHECK-NEXT:   call @other()
func.func private @use4(memref<4xf32>)
func.func @in_a_loop() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.alloc() : memref<4xf32>
    func.call @use4(%a) : (memref<4xf32>) -> ()
    func.call @other() : () -> ()
    memref.dealloc %a : memref<4xf32>
  }
  return
}
