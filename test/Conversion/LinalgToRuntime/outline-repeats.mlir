// RUN: pipeopt %s -pipeopt-outline-repeats=min-ops=3 -split-input-file | FileCheck %s
// RUN: pipeopt %s -pipeopt-outline-repeats=min-ops=3 -pipeopt-outline-repeats=min-ops=3 -split-input-file | FileCheck %s --check-prefix=TWICE
// RUN: pipeopt %s -pipeopt-outline-repeats=min-ops=3 -split-input-file --mlir-elide-elementsattrs-if-larger=2 | FileCheck %s --check-prefix=ELIDE

// Three layers of the same seven ops on different weights: one function,
// three calls, each layer's output the next one's input. The constants
// the layers use are cloned into the function; a layer frees its own
// temporary and its input, and returns its output.

// CHECK-LABEL: func.func @layers(
// CHECK-SAME:    %[[W0:[a-z0-9]+]]: memref<4xf32>, %[[W1:[a-z0-9]+]]: memref<4xf32>, %[[W2:[a-z0-9]+]]: memref<4xf32>)
// CHECK:         %[[X:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    call @init(%[[X]])
// CHECK-NEXT:    %[[Y0:.*]] = call @pipeopt_repeat_0(%[[X]], %[[W0]]) : (memref<4xf32>, memref<4xf32>) -> memref<4xf32>
// CHECK-NEXT:    %[[Y1:.*]] = call @pipeopt_repeat_0(%[[Y0]], %[[W1]])
// CHECK-NEXT:    %[[Y2:.*]] = call @pipeopt_repeat_0(%[[Y1]], %[[W2]])
// CHECK-NEXT:    return %[[Y2]]
// CHECK:       func.func private @pipeopt_repeat_0(%[[A:.*]]: memref<4xf32>, %[[W:.*]]: memref<4xf32>) -> memref<4xf32> attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"], pipeopt.repeat}
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG:     %[[I:.*]] = arith.constant 0 : index
// CHECK:         %[[T:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    memref.store %[[ONE]], %[[T]][%[[I]]]
// CHECK-NEXT:    call @k(%[[A]], %[[W]], %[[T]])
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    call @k(%[[T]], %[[W]], %[[OUT]])
// CHECK-NEXT:    memref.dealloc %[[T]]
// CHECK-NEXT:    memref.dealloc %[[A]]
// CHECK-NEXT:    return %[[OUT]]
// CHECK-NOT:   func.func private @pipeopt_repeat

// A second run leaves the functions it made alone, and finds nothing new.
// TWICE-COUNT-1: func.func private @pipeopt_repeat_
// TWICE-NOT: func.func private @pipeopt_repeat_
// TWICE: func.func @different_flow

func.func private @init(memref<4xf32>)
func.func private @k(memref<4xf32>, memref<4xf32>, memref<4xf32>)

func.func @layers(%w0: memref<4xf32>, %w1: memref<4xf32>,
                  %w2: memref<4xf32>) -> memref<4xf32> {
  %one = arith.constant 1.0 : f32
  %i = arith.constant 0 : index
  %x = memref.alloc() : memref<4xf32>
  call @init(%x) : (memref<4xf32>) -> ()
  %t0 = memref.alloc() : memref<4xf32>
  memref.store %one, %t0[%i] : memref<4xf32>
  call @k(%x, %w0, %t0) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  %y0 = memref.alloc() : memref<4xf32>
  call @k(%t0, %w0, %y0) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  memref.dealloc %t0 : memref<4xf32>
  memref.dealloc %x : memref<4xf32>
  %t1 = memref.alloc() : memref<4xf32>
  memref.store %one, %t1[%i] : memref<4xf32>
  call @k(%y0, %w1, %t1) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  %y1 = memref.alloc() : memref<4xf32>
  call @k(%t1, %w1, %y1) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  memref.dealloc %t1 : memref<4xf32>
  memref.dealloc %y0 : memref<4xf32>
  %t2 = memref.alloc() : memref<4xf32>
  memref.store %one, %t2[%i] : memref<4xf32>
  call @k(%y1, %w2, %t2) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  %y2 = memref.alloc() : memref<4xf32>
  call @k(%t2, %w2, %y2) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  memref.dealloc %t2 : memref<4xf32>
  memref.dealloc %y1 : memref<4xf32>
  return %y2 : memref<4xf32>
}

// -----

// The same ops twice, but the second repetition passes its operands in
// another order: outlined, as two functions (sharing one would change
// what the second computes).

// CHECK-LABEL: func.func @different_flow(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: memref<4xf32>, %[[W:[a-z0-9]+]]: memref<4xf32>, %[[Y:[a-z0-9]+]]: memref<4xf32>, %[[Z:[a-z0-9]+]]: memref<4xf32>)
// CHECK-NEXT:    call @pipeopt_repeat_0(%[[X]], %[[W]], %[[Y]])
// CHECK-NEXT:    call @pipeopt_repeat_1(%[[W]], %[[Y]], %[[Z]])
// CHECK-NEXT:    return
// CHECK:       func.func private @pipeopt_repeat_0(%[[A:.*]]: memref<4xf32>, %[[B:.*]]: memref<4xf32>, %[[C:.*]]: memref<4xf32>)
// CHECK-NEXT:    call @k(%[[A]], %[[B]], %[[C]])
// CHECK-NEXT:    call @k(%[[C]], %[[B]], %[[C]])
// CHECK-NEXT:    call @k(%[[A]], %[[A]], %[[C]])
// CHECK:       func.func private @pipeopt_repeat_1(%[[A:.*]]: memref<4xf32>, %[[B:.*]]: memref<4xf32>, %[[C:.*]]: memref<4xf32>)
// CHECK-NEXT:    call @k(%[[A]], %[[B]], %[[C]])
// CHECK-NEXT:    call @k(%[[C]], %[[B]], %[[C]])
// CHECK-NEXT:    call @k(%[[C]], %[[C]], %[[C]])

func.func private @k(memref<4xf32>, memref<4xf32>, memref<4xf32>)

func.func @different_flow(%x: memref<4xf32>, %w: memref<4xf32>,
                          %y: memref<4xf32>, %z: memref<4xf32>) {
  call @k(%x, %w, %y) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%y, %w, %y) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%x, %x, %y) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%w, %y, %z) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%z, %y, %z) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%z, %z, %z) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  return
}

// -----

// A repetition with a stack buffer stays where it is (its buffer would not
// outlive the call): memref.alloca here, llvm.alloca below.

// CHECK-LABEL: func.func @stack_buffer(
// CHECK-NOT:     call @pipeopt_repeat
// CHECK-COUNT-3: memref.alloca
// CHECK-NOT:   func.func private @pipeopt_repeat

func.func private @k(memref<4xf32>, memref<4xf32>, memref<4xf32>)

func.func @stack_buffer(%x: memref<4xf32>, %w: memref<4xf32>) {
  %a = memref.alloca() : memref<4xf32>
  call @k(%x, %w, %a) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%a, %w, %x) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  %b = memref.alloca() : memref<4xf32>
  call @k(%x, %w, %b) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%b, %w, %x) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  %c = memref.alloca() : memref<4xf32>
  call @k(%x, %w, %c) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%c, %w, %x) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @llvm_stack_buffer(
// CHECK-NOT:     call @pipeopt_repeat
// CHECK-COUNT-2: llvm.alloca
// CHECK-NOT:   func.func private @pipeopt_repeat

func.func private @use(!llvm.ptr)

func.func @llvm_stack_buffer() {
  %one = arith.constant 1 : i64
  %a = llvm.alloca %one x f32 : (i64) -> !llvm.ptr
  call @use(%a) : (!llvm.ptr) -> ()
  call @use(%a) : (!llvm.ptr) -> ()
  %b = llvm.alloca %one x f32 : (i64) -> !llvm.ptr
  call @use(%b) : (!llvm.ptr) -> ()
  call @use(%b) : (!llvm.ptr) -> ()
  return
}

// -----

// Two repetitions that differ only in a constant's elements: two functions,
// also when the command line elides large elements attributes when
// printing (the comparison prints every element).

// CHECK-LABEL: func.func @constants_differ(
// CHECK:         call @pipeopt_repeat_0(%{{.*}})
// CHECK-NEXT:    call @pipeopt_repeat_1(%{{.*}})
// CHECK:       func.func private @pipeopt_repeat_0(
// CHECK-NEXT:    arith.constant dense<[1, 2, 3, 4]>
// CHECK:       func.func private @pipeopt_repeat_1(
// CHECK-NEXT:    arith.constant dense<[5, 6, 7, 8]>
// ELIDE-LABEL: func.func @constants_differ(
// ELIDE:         call @pipeopt_repeat_0(%{{.*}})
// ELIDE-NEXT:    call @pipeopt_repeat_1(%{{.*}})

func.func private @v(vector<4xi32>)
func.func private @k1(memref<4xf32>)

func.func @constants_differ(%x: memref<4xf32>) {
  %c1 = arith.constant dense<[1, 2, 3, 4]> : vector<4xi32>
  %c2 = arith.constant dense<[5, 6, 7, 8]> : vector<4xi32>
  call @v(%c1) : (vector<4xi32>) -> ()
  call @k1(%x) : (memref<4xf32>) -> ()
  call @k1(%x) : (memref<4xf32>) -> ()
  call @v(%c2) : (vector<4xi32>) -> ()
  call @k1(%x) : (memref<4xf32>) -> ()
  call @k1(%x) : (memref<4xf32>) -> ()
  return
}

// -----

// Six layers: six calls of one function. The calls themselves repeat, but
// a call of an outlined function is never part of a repetition (no
// function of two calls of a function of three).

// CHECK-LABEL: func.func @six_layers(
// CHECK-COUNT-6: call @pipeopt_repeat_0(
// CHECK-NOT:     @pipeopt_repeat_1

func.func private @k(memref<4xf32>, memref<4xf32>, memref<4xf32>)

func.func @six_layers(%x: memref<4xf32>, %w: memref<4xf32>) {
  call @k(%x, %w, %x) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%w, %x, %x) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%x, %x, %w) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%x, %w, %x) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%w, %x, %x) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%x, %x, %w) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%x, %w, %x) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%w, %x, %x) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%x, %x, %w) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%x, %w, %x) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%w, %x, %x) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%x, %x, %w) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%x, %w, %x) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%w, %x, %x) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%x, %x, %w) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%x, %w, %x) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%w, %x, %x) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @k(%x, %x, %w) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  return
}
