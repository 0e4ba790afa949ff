// RUN: pipeopt %s -allow-unregistered-dialect -test-pipe-cost-model -verify-diagnostics -o /dev/null

// Exact FLOP and byte counts of the cost model (docs/CostModel.md). Every
// top-level op gets one remark; times are on the default H100 preset.

// 2 M N K = 2 * 16 * 8 * 32. Reads A, B and the accumulator C.
func.func @matmul(%a: tensor<16x32xf32>, %b: tensor<32x8xf32>, %c: tensor<16x8xf32>) -> tensor<16x8xf32> {
  // expected-remark @+1 {{op #0 linalg.matmul: kind=contraction flops=8192 read=3584 written=512 }}
  %0 = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x8xf32>) outs(%c : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}

// 2 B M N K = 2 * 4 * 16 * 8 * 32; a fill of a tensor.empty as init.
func.func @batch_matmul(%a: tensor<4x16x32xf32>, %b: tensor<4x32x8xf32>) -> tensor<4x16x8xf32> {
  // expected-remark @+1 {{op #0 arith.constant: kind=constant flops=0 read=0 written=0 time=0.000E+00}}
  %zero = arith.constant 0.0 : f32
  // expected-remark @+1 {{op #1 tensor.empty: kind=constant flops=0}}
  %e = tensor.empty() : tensor<4x16x8xf32>
  // expected-remark @+1 {{op #2 linalg.fill: kind=fill flops=0 read=0 written=2048 }}
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  // expected-remark @+1 {{op #3 linalg.batch_matmul: kind=contraction flops=32768 }}
  %0 = linalg.batch_matmul ins(%a, %b : tensor<4x16x32xf32>, tensor<4x32x8xf32>) outs(%f : tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  return %0 : tensor<4x16x8xf32>
}

// 2 N F OH OW C KH KW = 2 * 1 * 8 * 8 * 8 * 3 * 3 * 3 for both layouts.
func.func @conv2d(%in: tensor<1x3x10x10xf32>, %f: tensor<8x3x3x3xf32>, %o: tensor<1x8x8x8xf32>,
                  %in2: tensor<1x10x10x3xf32>, %f2: tensor<3x3x3x8xf32>, %o2: tensor<1x8x8x8xf32>) -> (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) {
  // expected-remark @+1 {{op #0 linalg.conv_2d_nchw_fchw: kind=contraction flops=27648 read=4112 written=2048 }}
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%in, %f : tensor<1x3x10x10xf32>, tensor<8x3x3x3xf32>) outs(%o : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  // expected-remark @+1 {{op #1 linalg.conv_2d_nhwc_hwcf: kind=contraction flops=27648 }}
  %1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%in2, %f2 : tensor<1x10x10x3xf32>, tensor<3x3x3x8xf32>) outs(%o2 : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %0, %1 : tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>
}

// Depthwise: 2 N OH OW C KH KW = 2 * 8 * 8 * 4 * 9. Max pooling: one
// comparison per window element, N C OH OW KH KW = 4 * 5 * 5 * 2 * 2.
func.func @depthwise_pool(%in: tensor<1x10x10x4xf32>, %f: tensor<3x3x4xf32>, %o: tensor<1x8x8x4xf32>,
                          %p: tensor<1x4x10x10xf32>, %w: tensor<2x2xf32>, %po: tensor<1x4x5x5xf32>) -> (tensor<1x8x8x4xf32>, tensor<1x4x5x5xf32>) {
  // expected-remark @+1 {{op #0 linalg.depthwise_conv_2d_nhwc_hwc: kind=contraction flops=4608 }}
  %0 = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%in, %f : tensor<1x10x10x4xf32>, tensor<3x3x4xf32>) outs(%o : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  // expected-remark @+1 {{op #1 linalg.pooling_nchw_max: kind=pooling flops=400 }}
  %1 = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
         ins(%p, %w : tensor<1x4x10x10xf32>, tensor<2x2xf32>) outs(%po : tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
  return %0, %1 : tensor<1x8x8x4xf32>, tensor<1x4x5x5xf32>
}

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// Elementwise generic: iteration domain (4 x 8) x 2 scalar ops (mulf, addf);
// the extf cast is free. Reduction generic: 4 x 8 iterations x 1 addf.
func.func @generic(%x: tensor<4x8xf16>, %y: tensor<4x8xf32>, %acc: tensor<4xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  // expected-remark @+1 {{op #0 tensor.empty: kind=constant}}
  %e = tensor.empty() : tensor<4x8xf32>
  // expected-remark @+1 {{op #1 linalg.generic: kind=elementwise flops=64 read=192 written=128 }}
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<4x8xf16>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f16, %b: f32, %out: f32):
    %ae = arith.extf %a : f16 to f32
    %m = arith.mulf %ae, %b : f32
    %s = arith.addf %m, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  // expected-remark @+1 {{op #2 linalg.generic: kind=reduction flops=32 read=144 written=16 }}
  %1 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%0 : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %out : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4xf32>
}

// TOSA: matmul 2 N H W C; conv2d 2 * out * KH KW IC + bias (one add per
// output); elementwise one per output element; reduce_sum one per input
// element; a reshape is a view and a transpose of an activation moves data.
func.func @tosa(%a: tensor<1x16x32xf32>, %b: tensor<1x32x8xf32>, %in: tensor<1x10x10x3xf32>,
                %w: tensor<8x3x3x3xf32>, %bias: tensor<8xf32>) -> (tensor<8x16xf32>, tensor<1x8x8x8xf32>, tensor<1x16x1xf32>) {
  // expected-remark @+1 {{op #0 tosa.const: kind=constant}}
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  // expected-remark @+1 {{op #1 tosa.matmul: kind=contraction flops=8192 }}
  %0 = tosa.matmul %a, %b, %zp, %zp : (tensor<1x16x32xf32>, tensor<1x32x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x16x8xf32>
  // expected-remark @+1 {{op #2 tosa.add: kind=elementwise flops=128 read=1024 written=512 }}
  %1 = tosa.add %0, %0 : (tensor<1x16x8xf32>, tensor<1x16x8xf32>) -> tensor<1x16x8xf32>
  // expected-remark @+1 {{op #3 tosa.const_shape: kind=constant}}
  %s = tosa.const_shape {values = dense<[16, 8]> : tensor<2xindex>} : () -> !tosa.shape<2>
  // expected-remark @+1 {{op #4 tosa.reshape: kind=view flops=0 read=0 written=0 time=0.000E+00}}
  %2 = tosa.reshape %1, %s : (tensor<1x16x8xf32>, !tosa.shape<2>) -> tensor<16x8xf32>
  // expected-remark @+1 {{op #5 tosa.transpose: kind=data-movement flops=0 read=512 written=512 }}
  %3 = tosa.transpose %2 {perms = array<i32: 1, 0>} : (tensor<16x8xf32>) -> tensor<8x16xf32>
  // expected-remark @+1 {{op #6 tosa.conv2d: kind=contraction flops=28160 }}
  %4 = tosa.conv2d %in, %w, %bias, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>}
         : (tensor<1x10x10x3xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x8xf32>
  // expected-remark @+1 {{op #7 tosa.reduce_sum: kind=reduction flops=128 }}
  %5 = tosa.reduce_sum %1 {axis = 2 : i32} : (tensor<1x16x8xf32>) -> tensor<1x16x1xf32>
  return %3, %4, %5 : tensor<8x16xf32>, tensor<1x8x8x8xf32>, tensor<1x16x1xf32>
}

// Weights: the right-hand side of a matmul that is a function argument is a
// parameter (its transpose is folded into the GEMM as a view); training
// estimates B = W = F for it.
func.func @params(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-remark @+1 {{op #0 tosa.transpose: kind=view}}
  %wt = tosa.transpose %w {perms = array<i32: 1, 0>} : (tensor<16x8xf32>) -> tensor<8x16xf32>
  // expected-remark @+1 {{op #1 linalg.matmul: kind=contraction flops=1024 read=896 written=256 time=2.000E-06 B=2.000E-06 W=2.000E-06 params=512 saved=256}}
  %0 = linalg.matmul ins(%x, %wt : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// Unknown ops: a conservative estimate and one remark per op name.
func.func @unknown(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-remark @+2 {{unknown op 'test.mystery': conservative estimate (32 FLOP, 256 bytes}}
  // expected-remark @+1 {{op #0 test.mystery: kind=unknown flops=32 read=128 written=128 }}
  %0 = "test.mystery"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
