// RUN: pipeopt %s -pipeopt-decompose-pads -split-input-file | FileCheck %s
// RUN: pipeopt %s -pipeopt-decompose-pads -eliminate-empty-tensors \
// RUN:   -one-shot-bufferize=bufferize-function-boundaries -cse -canonicalize \
// RUN:   -split-input-file \
// RUN:   | FileCheck %s --check-prefix=BUF

// A convolution's zero padding (TOSA's conv2d input): the pad becomes a fill
// of the padded shape and an insert_slice of the unpadded tensor at the low
// padding's offsets.
// CHECK-LABEL: func.func @relu_then_pad
// CHECK-NOT: tensor.pad
// CHECK: %[[R:.*]] = linalg.generic
// CHECK: arith.maximumf
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x6x7x2xf32>
// CHECK: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<1x6x7x2xf32>)
// CHECK: tensor.insert_slice %[[R]] into %[[F]][0, 1, 2, 0] [1, 4, 4, 2] [1, 1, 1, 1]

// After eliminate-empty-tensors and bufferization, the ReLU writes straight
// into the interior of the padded buffer: one allocation, no copy (the
// insert_slice bufferizes to a copy of the subview onto itself, which CSE
// and the canonicalizer remove, as the lowering pipeline's do).
// BUF-LABEL: func.func @relu_then_pad
// BUF: %[[A:.*]] = memref.alloc() {{.*}} : memref<1x6x7x2xf32>
// BUF: linalg.fill {{.*}} outs(%[[A]]
// BUF: %[[V:.*]] = memref.subview %[[A]][0, 1, 2, 0] [1, 4, 4, 2] [1, 1, 1, 1]
// BUF: linalg.generic {{.*}} outs(%[[V]] :
// BUF-NOT: memref.alloc
// BUF-NOT: memref.copy
// BUF: return %[[A]]
func.func @relu_then_pad(%x: tensor<1x4x4x2xf32>) -> tensor<1x6x7x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x4x2xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>, affine_map<(n, h, w, c) -> (n, h, w, c)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x4x4x2xf32>) outs(%e : tensor<1x4x4x2xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x4x4x2xf32>
  %p = tensor.pad %r low[0, 1, 2, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x4x4x2xf32> to tensor<1x6x7x2xf32>
  return %p : tensor<1x6x7x2xf32>
}

// -----

// A padding value computed per element becomes a tensor.generate.
// CHECK-LABEL: func.func @index_dependent_pad
// CHECK-NOT: tensor.pad
// CHECK: %[[G:.*]] = tensor.generate
// CHECK: arith.index_cast
// CHECK: tensor.insert_slice %arg0 into %[[G]][2] [3] [1]
func.func @index_dependent_pad(%x: tensor<3xf32>) -> tensor<6xf32> {
  %p = tensor.pad %x low[2] high[1] {
  ^bb0(%i: index):
    %n = arith.index_cast %i : index to i64
    %f = arith.sitofp %n : i64 to f32
    tensor.yield %f : f32
  } : tensor<3xf32> to tensor<6xf32>
  return %p : tensor<6xf32>
}

// -----

// A function without pads is left as it is.
// CHECK-LABEL: func.func @no_pad
// CHECK-NEXT: return %arg0
func.func @no_pad(%x: tensor<3xf32>) -> tensor<3xf32> {
  return %x : tensor<3xf32>
}
