// RUN: pipeopt %s -convert-linalg-to-runtime-kernels | FileCheck %s
// RUN: pipeopt %s -convert-linalg-to-runtime-kernels="min-flops=100000000" | FileCheck %s --check-prefix=BIG
// RUN: pipeopt %s -convert-linalg-to-runtime-kernels="target=cuda" | FileCheck %s --check-prefix=CUDA --implicit-check-not=@pipeopt_rt_matmul_f32 --implicit-check-not=@pipeopt_rt_conv2d_f32

// Contractions and convolutions on memrefs become calls of the runtime's
// library kernels with the right transposition flags and layout codes, each
// in a memref.alloca_scope (its operand descriptors live on the stack);
// what the kernels cannot compute keeps its linalg op.

// CHECK-LABEL: func.func @matmul
// CHECK: memref.alloca_scope {
// CHECK: %[[A:.*]] = memref.cast %arg0 : memref<16x32xf32> to memref<*xf32>
// CHECK: %[[B:.*]] = memref.cast %arg1 : memref<32x8xf32> to memref<*xf32>
// CHECK: %[[C:.*]] = memref.cast %arg2 : memref<16x8xf32> to memref<*xf32>
// CHECK: %[[F:.*]] = arith.constant 0 : i64
// CHECK: %[[F2:.*]] = arith.constant 0 : i64
// CHECK: call @pipeopt_rt_matmul_f32(%[[A]], %[[B]], %[[C]], %[[F]], %[[F2]])
// CHECK-NEXT: }
// CHECK-NOT: linalg.matmul
// BIG-LABEL: func.func @matmul
// BIG: linalg.matmul
// target=cuda: the same match, the device kernels' names (the CPU ones are
// not declared).
// CUDA-LABEL: func.func @matmul
// CUDA: call @pipeopt_rt_gpu_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64) -> i32
func.func @matmul(%a: memref<16x32xf32>, %b: memref<32x8xf32>, %c: memref<16x8xf32>) {
  linalg.matmul ins(%a, %b : memref<16x32xf32>, memref<32x8xf32>) outs(%c : memref<16x8xf32>)
  return
}

// B read transposed through indexing_maps: transRhs = 1.
// CHECK-LABEL: func.func @matmul_transpose_b
// CHECK: %[[T0:.*]] = arith.constant 0 : i64
// CHECK: %[[T1:.*]] = arith.constant 1 : i64
// CHECK: call @pipeopt_rt_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[T0]], %[[T1]])
func.func @matmul_transpose_b(%a: memref<16x32xf32>, %b: memref<8x32xf32>, %c: memref<16x8xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                 affine_map<(m, n, k) -> (n, k)>,
                                 affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<16x32xf32>, memref<8x32xf32>) outs(%c : memref<16x8xf32>)
  return
}

// A read transposed; f64.
// CHECK-LABEL: func.func @matmul_transpose_a_f64
// CHECK: %[[T1:.*]] = arith.constant 1 : i64
// CHECK: %[[T0:.*]] = arith.constant 0 : i64
// CHECK: call @pipeopt_rt_matmul_f64(%{{.*}}, %{{.*}}, %{{.*}}, %[[T1]], %[[T0]])
func.func @matmul_transpose_a_f64(%a: memref<32x16xf64>, %b: memref<32x8xf64>, %c: memref<16x8xf64>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                                 affine_map<(m, n, k) -> (k, n)>,
                                 affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<32x16xf64>, memref<32x8xf64>) outs(%c : memref<16x8xf64>)
  return
}

// Strided (subview) operands are passed with their layout.
// CHECK-LABEL: func.func @batch_matmul_strided
// CHECK: memref.cast %{{.*}} : memref<2x16x32xf32, strided<[1024, 64, 1], offset: ?>> to memref<*xf32>
// CHECK: call @pipeopt_rt_matmul_f32
func.func @batch_matmul_strided(%big: memref<4x16x64xf32>, %off: index, %b: memref<2x32x8xf32>, %c: memref<2x16x8xf32>) {
  %a = memref.subview %big[%off, 0, 0] [2, 16, 32] [1, 1, 1] : memref<4x16x64xf32> to memref<2x16x32xf32, strided<[1024, 64, 1], offset: ?>>
  linalg.batch_matmul ins(%a, %b : memref<2x16x32xf32, strided<[1024, 64, 1], offset: ?>>, memref<2x32x8xf32>) outs(%c : memref<2x16x8xf32>)
  return
}

// A generic contraction whose output is [n, m]: C^T = B^T A^T, so the
// kernel's lhs is %b (read transposed) and its rhs %a (read transposed).
// CHECK-LABEL: func.func @generic_output_transposed
// CHECK: %[[B:.*]] = memref.cast %arg1
// CHECK: %[[A:.*]] = memref.cast %arg0
// CHECK: %[[C:.*]] = memref.cast %arg2
// CHECK: %[[T1:.*]] = arith.constant 1 : i64
// CHECK: %[[T2:.*]] = arith.constant 1 : i64
// CHECK: call @pipeopt_rt_matmul_f32(%[[B]], %[[A]], %[[C]], %[[T1]], %[[T2]])
func.func @generic_output_transposed(%a: memref<16x32xf32>, %b: memref<32x8xf32>, %c: memref<8x16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                   affine_map<(m, n, k) -> (k, n)>,
                                   affine_map<(m, n, k) -> (n, m)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%a, %b : memref<16x32xf32>, memref<32x8xf32>) outs(%c : memref<8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// CHECK-LABEL: func.func @matvec
// CHECK: call @pipeopt_rt_matmul_f32
// CHECK-LABEL: func.func @vecmat
// CHECK: call @pipeopt_rt_matmul_f32
func.func @matvec(%a: memref<64x128xf32>, %x: memref<128xf32>, %y: memref<64xf32>) {
  linalg.matvec ins(%a, %x : memref<64x128xf32>, memref<128xf32>) outs(%y : memref<64xf32>)
  return
}
func.func @vecmat(%x: memref<64xf32>, %a: memref<64x128xf32>, %y: memref<128xf32>) {
  linalg.vecmat ins(%x, %a : memref<64xf32>, memref<64x128xf32>) outs(%y : memref<128xf32>)
  return
}

// Not for the library: another memory space (the runtime reads host memory).
// CHECK-LABEL: func.func @other_memory_space
// CHECK: linalg.matmul
// CHECK-NOT: call
func.func @other_memory_space(%a: memref<16x32xf32, 1>, %b: memref<32x8xf32, 1>, %c: memref<16x8xf32, 1>) {
  linalg.matmul ins(%a, %b : memref<16x32xf32, 1>, memref<32x8xf32, 1>) outs(%c : memref<16x8xf32, 1>)
  return
}

// Not for the library: integer, f16, tiny, and a generic whose body is not
// a multiply-accumulate.
// CHECK-LABEL: func.func @kept
// CHECK: linalg.matmul ins(%arg0, %arg1 : memref<16x32xi32>
// CHECK: linalg.matmul ins(%arg3, %arg4 : memref<16x32xf16>
// CHECK: linalg.matmul ins(%arg6, %arg7 : memref<2x2xf32>
// CHECK: linalg.generic
// CHECK-NOT: call @pipeopt_rt_matmul
func.func @kept(%a: memref<16x32xi32>, %b: memref<32x8xi32>, %c: memref<16x8xi32>,
                %d: memref<16x32xf16>, %e: memref<32x8xf16>, %f: memref<16x8xf16>,
                %g: memref<2x2xf32>, %h: memref<2x2xf32>, %i: memref<2x2xf32>,
                %j: memref<16x32xf32>, %k: memref<32x8xf32>, %l: memref<16x8xf32>) {
  linalg.matmul ins(%a, %b : memref<16x32xi32>, memref<32x8xi32>) outs(%c : memref<16x8xi32>)
  linalg.matmul ins(%d, %e : memref<16x32xf16>, memref<32x8xf16>) outs(%f : memref<16x8xf16>)
  linalg.matmul ins(%g, %h : memref<2x2xf32>, memref<2x2xf32>) outs(%i : memref<2x2xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                   affine_map<(m, n, k) -> (k, n)>,
                                   affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%j, %k : memref<16x32xf32>, memref<32x8xf32>) outs(%l : memref<16x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.maximumf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// CHECK-LABEL: func.func @convs
// CHECK: %[[L0:.*]] = arith.constant 0 : i64
// CHECK: %[[S2:.*]] = arith.constant 2 : i64
// CHECK: %[[S2b:.*]] = arith.constant 2 : i64
// CHECK: %[[D1:.*]] = arith.constant 1 : i64
// CHECK: %[[D1b:.*]] = arith.constant 1 : i64
// CHECK: call @pipeopt_rt_conv2d_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[L0]], %[[S2]], %[[S2b]], %[[D1]], %[[D1b]])
// CHECK: %[[L1:.*]] = arith.constant 1 : i64
// CHECK: call @pipeopt_rt_conv2d_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[L1]],
// CHECK: %[[L2:.*]] = arith.constant 2 : i64
// CHECK: arith.constant 1 : i64
// CHECK: arith.constant 1 : i64
// CHECK: arith.constant 2 : i64
// CHECK: arith.constant 2 : i64
// CHECK: call @pipeopt_rt_conv2d_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[L2]],
// CHECK: linalg.depthwise_conv_2d_nhwc_hwc
func.func @convs(%i0: memref<1x3x9x9xf32>, %f0: memref<4x3x3x3xf32>, %o0: memref<1x4x4x4xf32>,
                 %i1: memref<1x8x8x3xf32>, %f1: memref<3x3x3x4xf32>, %o1: memref<1x6x6x4xf32>,
                 %i2: memref<1x9x9x3xf32>, %f2: memref<4x3x3x3xf32>, %o2: memref<1x5x5x4xf32>,
                 %i3: memref<1x8x8x3xf32>, %f3: memref<3x3x3xf32>, %o3: memref<1x6x6x3xf32>) {
  linalg.conv_2d_nchw_fchw {strides = dense<2> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%i0, %f0 : memref<1x3x9x9xf32>, memref<4x3x3x3xf32>) outs(%o0 : memref<1x4x4x4xf32>)
  linalg.conv_2d_nhwc_hwcf {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%i1, %f1 : memref<1x8x8x3xf32>, memref<3x3x3x4xf32>) outs(%o1 : memref<1x6x6x4xf32>)
  linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<2> : tensor<2xi64>}
    ins(%i2, %f2 : memref<1x9x9x3xf32>, memref<4x3x3x3xf32>) outs(%o2 : memref<1x5x5x4xf32>)
  linalg.depthwise_conv_2d_nhwc_hwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%i3, %f3 : memref<1x8x8x3xf32>, memref<3x3x3xf32>) outs(%o3 : memref<1x6x6x3xf32>)
  return
}

// The declarations come from RuntimeFunctions.def.
// CHECK-DAG: func.func private @pipeopt_rt_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @pipeopt_rt_matmul_f64(memref<*xf64>, memref<*xf64>, memref<*xf64>, i64, i64) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @pipeopt_rt_conv2d_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i64) -> i32 attributes {llvm.emit_c_interface}

// CUDA-DAG: func.func private @pipeopt_rt_gpu_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64) -> i32 attributes {llvm.emit_c_interface}
// CUDA-DAG: func.func private @pipeopt_rt_gpu_conv2d_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i64) -> i32 attributes {llvm.emit_c_interface}
