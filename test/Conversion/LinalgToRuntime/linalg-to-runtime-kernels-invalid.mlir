// RUN: pipeopt %s -split-input-file -convert-linalg-to-runtime-kernels -verify-diagnostics
// RUN: not pipeopt %s -split-input-file -convert-linalg-to-runtime-kernels=target=tpu 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: error: unknown target 'tpu' (expected cpu or cuda)

// A symbol of the runtime ABI that the module defines with another type.
func.func private @pipeopt_rt_matmul_f32(memref<*xf32>) -> i32

func.func @m(%a: memref<16x32xf32>, %b: memref<32x8xf32>, %c: memref<16x8xf32>) {
  // expected-error @+1 {{runtime function @pipeopt_rt_matmul_f32 is already declared as '(memref<*xf32>) -> i32', expected '(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64) -> i32'}}
  linalg.matmul ins(%a, %b : memref<16x32xf32>, memref<32x8xf32>) outs(%c : memref<16x8xf32>)
  return
}

// -----

// The name of a runtime kernel taken by something that is not a function.
memref.global "private" @pipeopt_rt_conv2d_f32 : memref<1xf32>

func.func @c(%i: memref<1x3x9x9xf32>, %f: memref<4x3x3x3xf32>, %o: memref<1x4x7x7xf32>) {
  // expected-error @+1 {{symbol @pipeopt_rt_conv2d_f32 is reserved for the runtime ABI}}
  linalg.conv_2d_nchw_fchw {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%i, %f : memref<1x3x9x9xf32>, memref<4x3x3x3xf32>) outs(%o : memref<1x4x7x7xf32>)
  return
}
