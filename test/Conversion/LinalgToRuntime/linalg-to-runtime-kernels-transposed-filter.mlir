// RUN: pipeopt %s -split-input-file -convert-linalg-to-runtime-kernels | FileCheck %s
// RUN: pipeopt %s -split-input-file -convert-linalg-to-runtime-kernels=target=cuda | FileCheck %s --check-prefix=CUDA

// A conv_2d_nhwc_fhwc whose filter is an FCHW function argument transposed
// into a buffer of its own (how TOSA's conv2d takes PyTorch's weights):
// the kernel reads the argument in place with layout NHWC_FCHW (3), and the
// transpose, its buffer and the dealloc go.

// CHECK-LABEL: func.func @named_transpose
// CHECK-SAME: (%[[IN:.*]]: memref<1x9x8x3xf32>, %[[W:.*]]: memref<4x3x3x2xf32>, %[[OUT:.*]]: memref<1x7x7x4xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: linalg.transpose
// CHECK: linalg.fill
// CHECK: %[[WC:.*]] = memref.cast %[[W]] : memref<4x3x3x2xf32> to memref<*xf32>
// CHECK: %[[L:.*]] = arith.constant 3 : i64
// CHECK: call @pipeopt_rt_conv2d_f32(%{{.*}}, %[[WC]], %{{.*}}, %[[L]],
// CHECK-NOT: memref.dealloc
// CHECK: return
// CUDA-LABEL: func.func @named_transpose
// CUDA: linalg.transpose
// CUDA: %[[L:.*]] = arith.constant 2 : i64
// CUDA: call @pipeopt_rt_gpu_conv2d_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[L]],
func.func @named_transpose(%in: memref<1x9x8x3xf32>, %w: memref<4x3x3x2xf32>,
                           %out: memref<1x7x7x4xf32>) {
  %cst = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<4x3x2x3xf32>
  linalg.transpose ins(%w : memref<4x3x3x2xf32>) outs(%t : memref<4x3x2x3xf32>) permutation = [0, 2, 3, 1]
  // A write in between, to another argument (a distinct buffer): harmless.
  linalg.fill ins(%cst : f32) outs(%out : memref<1x7x7x4xf32>)
  linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%in, %t : memref<1x9x8x3xf32>, memref<4x3x2x3xf32>) outs(%out : memref<1x7x7x4xf32>)
  memref.dealloc %t : memref<4x3x2x3xf32>
  return
}

// -----

// The same transpose as a linalg.generic (what fusion leaves).

// CHECK-LABEL: func.func @generic_transpose
// CHECK-NOT: linalg.generic
// CHECK: arith.constant 3 : i64
// CHECK: call @pipeopt_rt_conv2d_f32
#fchw = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @generic_transpose(%in: memref<1x9x8x3xf32>, %w: memref<4x3x3x2xf32>,
                             %out: memref<1x7x7x4xf32>) {
  %t = memref.alloc() : memref<4x3x2x3xf32>
  linalg.generic {indexing_maps = [#fchw, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%w : memref<4x3x3x2xf32>) outs(%t : memref<4x3x2x3xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  }
  linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%in, %t : memref<1x9x8x3xf32>, memref<4x3x2x3xf32>) outs(%out : memref<1x7x7x4xf32>)
  memref.dealloc %t : memref<4x3x2x3xf32>
  return
}

// -----

// Not folded: the transposed buffer has another reader.

// CHECK-LABEL: func.func @buffer_read_elsewhere
// CHECK: linalg.transpose
// CHECK: arith.constant 2 : i64
// CHECK: call @pipeopt_rt_conv2d_f32
// CHECK: memref.copy
func.func @buffer_read_elsewhere(%in: memref<1x9x8x3xf32>, %w: memref<4x3x3x2xf32>,
                                 %out: memref<1x7x7x4xf32>, %copy: memref<4x3x2x3xf32>) {
  %t = memref.alloc() : memref<4x3x2x3xf32>
  linalg.transpose ins(%w : memref<4x3x3x2xf32>) outs(%t : memref<4x3x2x3xf32>) permutation = [0, 2, 3, 1]
  linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%in, %t : memref<1x9x8x3xf32>, memref<4x3x2x3xf32>) outs(%out : memref<1x7x7x4xf32>)
  memref.copy %t, %copy : memref<4x3x2x3xf32> to memref<4x3x2x3xf32>
  memref.dealloc %t : memref<4x3x2x3xf32>
  return
}

// -----

// Not folded: another permutation (an [F, KW, KH, C] argument).

// CHECK-LABEL: func.func @other_permutation
// CHECK: linalg.transpose
// CHECK: arith.constant 2 : i64
// CHECK: call @pipeopt_rt_conv2d_f32
func.func @other_permutation(%in: memref<1x9x8x3xf32>, %w: memref<4x2x3x3xf32>,
                             %out: memref<1x7x7x4xf32>) {
  %t = memref.alloc() : memref<4x3x2x3xf32>
  linalg.transpose ins(%w : memref<4x2x3x3xf32>) outs(%t : memref<4x3x2x3xf32>) permutation = [0, 2, 1, 3]
  linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%in, %t : memref<1x9x8x3xf32>, memref<4x3x2x3xf32>) outs(%out : memref<1x7x7x4xf32>)
  memref.dealloc %t : memref<4x3x2x3xf32>
  return
}

// -----

// Not folded: the source is not a function argument.

// CHECK-LABEL: func.func @source_not_an_argument
// CHECK: linalg.transpose
// CHECK: arith.constant 2 : i64
// CHECK: call @pipeopt_rt_conv2d_f32
func.func @source_not_an_argument(%in: memref<1x9x8x3xf32>, %out: memref<1x7x7x4xf32>) {
  %cst = arith.constant 1.0 : f32
  %w = memref.alloc() : memref<4x3x3x2xf32>
  linalg.fill ins(%cst : f32) outs(%w : memref<4x3x3x2xf32>)
  %t = memref.alloc() : memref<4x3x2x3xf32>
  linalg.transpose ins(%w : memref<4x3x3x2xf32>) outs(%t : memref<4x3x2x3xf32>) permutation = [0, 2, 3, 1]
  linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%in, %t : memref<1x9x8x3xf32>, memref<4x3x2x3xf32>) outs(%out : memref<1x7x7x4xf32>)
  memref.dealloc %t : memref<4x3x2x3xf32>
  memref.dealloc %w : memref<4x3x3x2xf32>
  return
}

// -----

// Not folded: the argument is written between the transpose and the
// convolution (directly, or possibly by a call).

// CHECK-LABEL: func.func @argument_written_in_between
// CHECK: linalg.transpose
// CHECK: arith.constant 2 : i64
// CHECK: call @pipeopt_rt_conv2d_f32
// CHECK-LABEL: func.func @call_in_between
// CHECK: linalg.transpose
// CHECK: arith.constant 2 : i64
// CHECK: call @pipeopt_rt_conv2d_f32
func.func @argument_written_in_between(%in: memref<1x9x8x3xf32>, %w: memref<4x3x3x2xf32>,
                                       %out: memref<1x7x7x4xf32>) {
  %cst = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<4x3x2x3xf32>
  linalg.transpose ins(%w : memref<4x3x3x2xf32>) outs(%t : memref<4x3x2x3xf32>) permutation = [0, 2, 3, 1]
  linalg.fill ins(%cst : f32) outs(%w : memref<4x3x3x2xf32>)
  linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%in, %t : memref<1x9x8x3xf32>, memref<4x3x2x3xf32>) outs(%out : memref<1x7x7x4xf32>)
  memref.dealloc %t : memref<4x3x2x3xf32>
  return
}

func.func private @update(memref<4x3x3x2xf32>)

func.func @call_in_between(%in: memref<1x9x8x3xf32>, %w: memref<4x3x3x2xf32>,
                           %out: memref<1x7x7x4xf32>) {
  %t = memref.alloc() : memref<4x3x2x3xf32>
  linalg.transpose ins(%w : memref<4x3x3x2xf32>) outs(%t : memref<4x3x2x3xf32>) permutation = [0, 2, 3, 1]
  func.call @update(%w) : (memref<4x3x3x2xf32>) -> ()
  linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%in, %t : memref<1x9x8x3xf32>, memref<4x3x2x3xf32>) outs(%out : memref<1x7x7x4xf32>)
  memref.dealloc %t : memref<4x3x2x3xf32>
  return
}

// -----

// Two transposes of one argument for two convolutions: both fold (every
// match is made before the first call is emitted, which would otherwise
// count as a possible write between the second transpose and its conv).

// CHECK-LABEL: func.func @two_folds
// CHECK-NOT: linalg.transpose
// CHECK: arith.constant 3 : i64
// CHECK: call @pipeopt_rt_conv2d_f32
// CHECK: arith.constant 3 : i64
// CHECK: call @pipeopt_rt_conv2d_f32
func.func @two_folds(%in: memref<1x9x8x3xf32>, %w: memref<4x3x3x2xf32>,
                     %out: memref<1x7x7x4xf32>, %out2: memref<1x7x7x4xf32>) {
  %t = memref.alloc() : memref<4x3x2x3xf32>
  %t2 = memref.alloc() : memref<4x3x2x3xf32>
  linalg.transpose ins(%w : memref<4x3x3x2xf32>) outs(%t : memref<4x3x2x3xf32>) permutation = [0, 2, 3, 1]
  linalg.transpose ins(%w : memref<4x3x3x2xf32>) outs(%t2 : memref<4x3x2x3xf32>) permutation = [0, 2, 3, 1]
  linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%in, %t : memref<1x9x8x3xf32>, memref<4x3x2x3xf32>) outs(%out : memref<1x7x7x4xf32>)
  linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%in, %t2 : memref<1x9x8x3xf32>, memref<4x3x2x3xf32>) outs(%out2 : memref<1x7x7x4xf32>)
  memref.dealloc %t : memref<4x3x2x3xf32>
  memref.dealloc %t2 : memref<4x3x2x3xf32>
  return
}

// -----

// Not folded: the transposed buffer is also the convolution's output (or
// its input), or the output is a view of the argument (the kernel would
// write the filter it reads), or the argument is freed in between, or it
// is in another memory space.

// CHECK-LABEL: func.func @filter_is_output
// CHECK: linalg.transpose
// CHECK: arith.constant 2 : i64
// CHECK-LABEL: func.func @filter_is_input
// CHECK: linalg.transpose
// CHECK: arith.constant 2 : i64
// CHECK-LABEL: func.func @output_views_source
// CHECK: linalg.transpose
// CHECK: arith.constant 2 : i64
// CHECK-LABEL: func.func @source_freed
// CHECK: linalg.transpose
// CHECK: arith.constant 2 : i64
// CHECK-LABEL: func.func @source_memory_space
// CHECK: linalg.transpose
// CHECK: arith.constant 2 : i64
func.func @filter_is_output(%in: memref<2x1x1x2xf32>, %w: memref<2x2x1x1xf32>) {
  %t = memref.alloc() : memref<2x1x1x2xf32>
  linalg.transpose ins(%w : memref<2x2x1x1xf32>) outs(%t : memref<2x1x1x2xf32>) permutation = [0, 2, 3, 1]
  linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%in, %t : memref<2x1x1x2xf32>, memref<2x1x1x2xf32>) outs(%t : memref<2x1x1x2xf32>)
  memref.dealloc %t : memref<2x1x1x2xf32>
  return
}

func.func @filter_is_input(%w: memref<2x2x1x1xf32>, %out: memref<2x1x1x2xf32>) {
  %t = memref.alloc() : memref<2x1x1x2xf32>
  linalg.transpose ins(%w : memref<2x2x1x1xf32>) outs(%t : memref<2x1x1x2xf32>) permutation = [0, 2, 3, 1]
  linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%t, %t : memref<2x1x1x2xf32>, memref<2x1x1x2xf32>) outs(%out : memref<2x1x1x2xf32>)
  memref.dealloc %t : memref<2x1x1x2xf32>
  return
}

func.func @output_views_source(%in: memref<2x1x2x1xf32>, %w: memref<2x1x1x2xf32>) {
  %t = memref.alloc() : memref<2x1x2x1xf32>
  linalg.transpose ins(%w : memref<2x1x1x2xf32>) outs(%t : memref<2x1x2x1xf32>) permutation = [0, 2, 3, 1]
  %v = memref.cast %w : memref<2x1x1x2xf32> to memref<?x1x1x2xf32>
  linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%in, %t : memref<2x1x2x1xf32>, memref<2x1x2x1xf32>) outs(%v : memref<?x1x1x2xf32>)
  memref.dealloc %t : memref<2x1x2x1xf32>
  return
}

func.func @source_freed(%in: memref<1x9x8x3xf32>, %w: memref<4x3x3x2xf32>,
                        %out: memref<1x7x7x4xf32>) {
  %t = memref.alloc() : memref<4x3x2x3xf32>
  linalg.transpose ins(%w : memref<4x3x3x2xf32>) outs(%t : memref<4x3x2x3xf32>) permutation = [0, 2, 3, 1]
  memref.dealloc %w : memref<4x3x3x2xf32>
  linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%in, %t : memref<1x9x8x3xf32>, memref<4x3x2x3xf32>) outs(%out : memref<1x7x7x4xf32>)
  memref.dealloc %t : memref<4x3x2x3xf32>
  return
}

func.func @source_memory_space(%in: memref<1x9x8x3xf32>, %w: memref<4x3x3x2xf32, 1>,
                               %out: memref<1x7x7x4xf32>) {
  %t = memref.alloc() : memref<4x3x2x3xf32>
  linalg.transpose ins(%w : memref<4x3x3x2xf32, 1>) outs(%t : memref<4x3x2x3xf32>) permutation = [0, 2, 3, 1]
  linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%in, %t : memref<1x9x8x3xf32>, memref<4x3x2x3xf32>) outs(%out : memref<1x7x7x4xf32>)
  memref.dealloc %t : memref<4x3x2x3xf32>
  return
}
