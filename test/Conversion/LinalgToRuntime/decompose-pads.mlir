// RUN: pipeopt %s -pipeopt-decompose-pads -split-input-file | FileCheck %s
// RUN: pipeopt %s -pipeopt-decompose-pads \
// RUN:   -one-shot-bufferize=bufferize-function-boundaries -cse -canonicalize \
// RUN:   -split-input-file \
// RUN:   | FileCheck %s --check-prefix=BUF

// A convolution's zero padding (TOSA's conv2d input): the pad becomes a fill
// of the padded shape and an insert_slice of the unpadded tensor at the low
// padding's offsets, and the ReLU producing the unpadded tensor writes into
// the fill's interior (an extract_slice at the same offsets) instead of a
// tensor.empty of its own.
// CHECK-LABEL: func.func @relu_then_pad
// CHECK-NOT: tensor.pad
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x6x7x2xf32>
// CHECK: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<1x6x7x2xf32>)
// CHECK: %[[S:.*]] = tensor.extract_slice %[[F]][0, 1, 2, 0] [1, 4, 4, 2] [1, 1, 1, 1]
// CHECK: %[[R:.*]] = linalg.generic {{.*}} outs(%[[S]] : tensor<1x4x4x2xf32>)
// CHECK: arith.maximumf
// CHECK: tensor.insert_slice %[[R]] into %[[F]][0, 1, 2, 0] [1, 4, 4, 2] [1, 1, 1, 1]

// After bufferization, the ReLU writes straight
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

// The producer's init is used elsewhere too: it keeps its own tensor (a
// copy after bufferization, but correct).
// CHECK-LABEL: func.func @init_used_twice
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: linalg.generic {{.*}} outs(%[[E0]] : tensor<4xf32>)
// CHECK: tensor.insert_slice
func.func @init_used_twice(%x: tensor<4xf32>) -> (tensor<6xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %p = tensor.pad %r low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %zero : f32
  } : tensor<4xf32> to tensor<6xf32>
  return %p, %e : tensor<6xf32>, tensor<4xf32>
}

// -----

// A padding value defined after the producer: nothing moves.
// CHECK-LABEL: func.func @pad_value_after_producer
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: linalg.generic {{.*}} outs(%[[E0]] : tensor<4xf32>)
// CHECK: arith.addf
// CHECK: linalg.fill
func.func @pad_value_after_producer(%x: tensor<4xf32>, %a: f32) -> tensor<6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %pv = arith.addf %a, %a : f32
  %p = tensor.pad %r low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %pv : f32
  } : tensor<4xf32> to tensor<6xf32>
  return %p : tensor<6xf32>
}

// -----

// A function without pads is left as it is.
// CHECK-LABEL: func.func @no_pad
// CHECK-NEXT: return %arg0
func.func @no_pad(%x: tensor<3xf32>) -> tensor<3xf32> {
  return %x : tensor<3xf32>
}

// -----

// A producer that reads its init (a max-pool's reduction into a fill of
// -inf): that fill writes into the padded tensor's interior instead.
// CHECK-LABEL: func.func @pool_then_pad
// CHECK: %[[E:.*]] = tensor.empty() : tensor<6xf32>
// CHECK: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<6xf32>)
// CHECK: %[[S:.*]] = tensor.extract_slice %[[F]][1] [4] [1]
// CHECK: %[[I:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[S]] : tensor<4xf32>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} outs(%[[I]] : tensor<4xf32>)
// CHECK: tensor.insert_slice %[[R]] into %[[F]][1] [4] [1]
func.func @pool_then_pad(%x: tensor<4x3xf32>) -> tensor<6xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x3xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.maximumf %v, %o : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %p = tensor.pad %r low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %zero : f32
  } : tensor<4xf32> to tensor<6xf32>
  return %p : tensor<6xf32>
}
