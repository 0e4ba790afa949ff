// RUN: pipeopt %s -pipeopt-materialize-input-views | FileCheck %s

// Every read of a placeholder becomes the runtime's view call with the
// shape on the stack and a cast to the placeholder's type; the
// placeholders are erased; other globals are left alone.

// CHECK-NOT: pipeopt.input_view
// CHECK: memref.global "private" constant @table : memref<2xf32> = dense<[1.000000e+00, 2.000000e+00]>
// CHECK-NOT: pipeopt.input_view
memref.global "private" @pipeopt_input_view_a1_m0_r0 : memref<3x5xf32> {pipeopt.input_view = array<i64: 1, 0>}
memref.global "private" @pipeopt_input_view_a0_m2_r0 : memref<4xi64> {pipeopt.input_view = array<i64: 0, 2>}
memref.global "private" constant @table : memref<2xf32> = dense<[1.0, 2.0]>

func.func private @use(memref<3x5xf32>, memref<4xi64>, memref<2xf32>)

// CHECK-LABEL: func.func @pipeopt_rank_0
// CHECK:         %[[SHAPE:.*]] = memref.alloca() : memref<2xi64>
// CHECK:         %[[C3:.*]] = arith.constant 3 : i64
// CHECK:         memref.store %[[C3]], %[[SHAPE]][%{{.*}}] : memref<2xi64>
// CHECK:         %[[C5:.*]] = arith.constant 5 : i64
// CHECK:         memref.store %[[C5]], %[[SHAPE]][%{{.*}}] : memref<2xi64>
// CHECK:         %[[SU:.*]] = memref.cast %[[SHAPE]] : memref<2xi64> to memref<*xi64>
// CHECK:         %[[A1:.*]] = arith.constant 1 : i64
// CHECK:         %[[M0:.*]] = arith.constant 0 : i64
// CHECK:         %[[V:.*]] = call @pipeopt_rt_input_view_f32(%[[A1]], %[[M0]], %[[SU]]) : (i64, i64, memref<*xi64>) -> memref<*xf32>
// CHECK:         %[[W:.*]] = memref.cast %[[V]] : memref<*xf32> to memref<3x5xf32>
// CHECK:         memref.alloca() : memref<1xi64>
// CHECK:         %[[VI:.*]] = call @pipeopt_rt_input_view_i64(%{{.*}}, %{{.*}}, %{{.*}}) : (i64, i64, memref<*xi64>) -> memref<*xi64>
// CHECK:         %[[I:.*]] = memref.cast %[[VI]] : memref<*xi64> to memref<4xi64>
// CHECK:         %[[T:.*]] = memref.get_global @table : memref<2xf32>
// CHECK:         call @use(%[[W]], %[[I]], %[[T]])
func.func @pipeopt_rank_0() -> i32 {
  %w = memref.get_global @pipeopt_input_view_a1_m0_r0 : memref<3x5xf32>
  %i = memref.get_global @pipeopt_input_view_a0_m2_r0 : memref<4xi64>
  %t = memref.get_global @table : memref<2xf32>
  call @use(%w, %i, %t) : (memref<3x5xf32>, memref<4xi64>, memref<2xf32>) -> ()
  %c0 = arith.constant 0 : i32
  return %c0 : i32
}

// A nested module's global of the same name is another symbol: untouched.
// CHECK-LABEL: module @inner
// CHECK: memref.global "private" constant @pipeopt_input_view_a1_m0_r0 : memref<3x5xf32> = dense<1.000000e+00>
// CHECK: memref.get_global @pipeopt_input_view_a1_m0_r0 : memref<3x5xf32>
module @inner {
  memref.global "private" constant @pipeopt_input_view_a1_m0_r0 : memref<3x5xf32> = dense<1.0>
  func.func @g() -> memref<3x5xf32> {
    %m = memref.get_global @pipeopt_input_view_a1_m0_r0 : memref<3x5xf32>
    return %m : memref<3x5xf32>
  }
}

// The declarations come from RuntimeFunctions.def.
// CHECK-DAG: func.func private @pipeopt_rt_input_view_f32(i64, i64, memref<*xi64>) -> memref<*xf32> attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @pipeopt_rt_input_view_i64(i64, i64, memref<*xi64>) -> memref<*xi64> attributes {llvm.emit_c_interface}

