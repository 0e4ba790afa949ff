// RUN: pipeopt %s -pipeopt-outline-loop-nests -split-input-file | FileCheck %s
// RUN: pipeopt %s -pipeopt-outline-loop-nests -pipeopt-outline-loop-nests -split-input-file | FileCheck %s --check-prefix=TWICE

// Two blocks apply the same bias-add + scale (the same loop nest on
// different buffers) and one applies a different scale: two functions,
// three calls. The scale, a constant defined outside the generic, is
// cloned into each function; a fill is outlined too (its value is an
// operand, so an argument).

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @blocks(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: memref<4x8xf32>, %[[B0:[a-z0-9]+]]: memref<8xf32>, %[[B1:[a-z0-9]+]]: memref<8xf32>, %[[Y0:[a-z0-9]+]]: memref<4x8xf32>, %[[Y1:[a-z0-9]+]]: memref<4x8xf32>, %[[Y2:[a-z0-9]+]]: memref<4x8xf32>)
// CHECK-NOT:     linalg.
// CHECK:         %[[ZERO:.*]] = arith.constant 0.0
// CHECK:         call @pipeopt_loop_nest_0(%[[ZERO]], %[[Y0]])
// CHECK-NEXT:    call @pipeopt_loop_nest_1(%[[X]], %[[B0]], %[[Y0]])
// CHECK-NEXT:    call @pipeopt_loop_nest_1(%[[X]], %[[B1]], %[[Y1]])
// CHECK-NEXT:    call @pipeopt_loop_nest_2(%[[X]], %[[B1]], %[[Y2]])
// CHECK-NEXT:    return
// CHECK:       func.func private @pipeopt_loop_nest_0(%{{.*}}: f32, %{{.*}}: memref<4x8xf32>) attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"], pipeopt.loop_nest}
// CHECK:         linalg.fill
// CHECK:       func.func private @pipeopt_loop_nest_1(%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: memref<4x8xf32>) attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"], pipeopt.loop_nest}
// CHECK-NEXT:    arith.constant 1.250000e-01 : f32
// CHECK-NEXT:    linalg.generic
// CHECK:       func.func private @pipeopt_loop_nest_2(
// CHECK-NEXT:    arith.constant 5.000000e-01 : f32
// CHECK-NEXT:    linalg.generic
// CHECK-NOT:   func.func

// Outlined functions are left alone by a second run: the same three.
// TWICE-COUNT-3: func.func private @pipeopt_loop_nest_
// TWICE-NOT: func.func private @pipeopt_loop_nest_
// TWICE: func.func @captured

func.func @blocks(%x: memref<4x8xf32>, %b0: memref<8xf32>, %b1: memref<8xf32>,
                  %y0: memref<4x8xf32>, %y1: memref<4x8xf32>,
                  %y2: memref<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %s = arith.constant 0.125 : f32
  %h = arith.constant 0.5 : f32
  linalg.fill ins(%zero : f32) outs(%y0 : memref<4x8xf32>)
  linalg.generic {indexing_maps = [#id, #row, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %b0 : memref<4x8xf32>, memref<8xf32>) outs(%y0 : memref<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.addf %a, %b : f32
    %u = arith.mulf %t, %s : f32
    linalg.yield %u : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %b1 : memref<4x8xf32>, memref<8xf32>) outs(%y1 : memref<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.addf %a, %b : f32
    %u = arith.mulf %t, %s : f32
    linalg.yield %u : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %b1 : memref<4x8xf32>, memref<8xf32>) outs(%y2 : memref<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.addf %a, %b : f32
    %u = arith.mulf %t, %h : f32
    linalg.yield %u : f32
  }
  return
}

// -----

// A value the body uses from above that is not a constant (a loop's
// induction variable) becomes an argument after the operands; an op on
// tensors (not bufferized) and an external function are left alone.

#id1 = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @captured(
// CHECK:         scf.for %[[I:.*]] =
// CHECK-NEXT:      %[[F:.*]] = arith.index_cast %[[I]]
// CHECK-NEXT:      call @pipeopt_loop_nest_0(%{{.*}}, %[[F]]) : (memref<16xi64>, i64) -> ()
// CHECK:         linalg.generic
// CHECK-SAME:      outs(%{{.*}} : tensor<16xi64>)
// CHECK:       func.func private @external(memref<16xi64>)
// CHECK:       func.func private @pipeopt_loop_nest_0(%{{.*}}: memref<16xi64>, %[[ARG:.*]]: i64)
// CHECK:         linalg.generic
// CHECK:           linalg.yield %[[ARG]]
// CHECK-NOT:   pipeopt_loop_nest_1
func.func @captured(%m: memref<16xi64>, %t: tensor<16xi64>) -> tensor<16xi64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %f = arith.index_cast %i : index to i64
    linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]}
        outs(%m : memref<16xi64>) {
    ^bb0(%o: i64):
      linalg.yield %f : i64
    }
  }
  %r = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]}
      outs(%t : tensor<16xi64>) {
  ^bb0(%o: i64):
    %n = arith.addi %o, %o : i64
    linalg.yield %n : i64
  } -> tensor<16xi64>
  return %r : tensor<16xi64>
}
func.func private @external(memref<16xi64>)
