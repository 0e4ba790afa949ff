// RUN: pipeopt %s -split-input-file -test-pipe-convert-to-f64 | FileCheck %s
// RUN: pipeopt %s -split-input-file -test-pipe-convert-to-f64=functions=converted | FileCheck %s --check-prefix=ONLY

// Signature, constants (scalar, splat, non-splat, exact values), linalg
// region block arguments, math and arith ops; integers stay as they are.
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: %[[X:.*]]: tensor<2x3xf64>, %[[W:.*]]: tensor<3x4xf64>, %[[I:.*]]: tensor<2xi64>) -> (tensor<2x4xf64>, tensor<2xi64>)
// CHECK-DAG: arith.constant 0.000000e+00 : f64
// The f32 nearest to 0.1, exactly (not the f64 nearest to 0.1):
// CHECK-DAG: arith.constant dense<0.10000000149011612> : tensor<2x4xf64>
// CHECK-DAG: arith.constant dense<[1.000000e+00, 0.30000001192092896, -2.500000e+00, 3.4028234663852886E+38]> : tensor<4xf64>
// CHECK: linalg.fill ins(%{{.*}} : f64) outs(%{{.*}} : tensor<2x4xf64>)
// CHECK: linalg.matmul ins(%[[X]], %[[W]] : tensor<2x3xf64>, tensor<3x4xf64>)
// CHECK: linalg.generic
// CHECK: ^bb0(%{{.*}}: f64, %{{.*}}: f64, %{{.*}}: f64, %{{.*}}: f64):
// CHECK: math.tanh %{{.*}} : f64
// CHECK: math.erf %{{.*}} : f64
// CHECK: arith.addf %{{.*}}, %{{.*}} : f64
// CHECK: linalg.yield %{{.*}} : f64
// CHECK: -> tensor<2x4xf64>
// CHECK: arith.addi %[[I]], %[[I]] : tensor<2xi64>
// CHECK-NOT: f32
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>
func.func @mlp(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %i: tensor<2xi64>) -> (tensor<2x4xf32>, tensor<2xi64>) {
  %zero = arith.constant 0.0 : f32
  %bias = arith.constant dense<0.1> : tensor<2x4xf32>
  %scale = arith.constant dense<[1.0, 0.3, -2.5, 3.40282347e+38]> : tensor<4xf32>
  %e = tensor.empty() : tensor<2x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = linalg.matmul ins(%x, %w : tensor<2x3xf32>, tensor<3x4xf32>) outs(%z : tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y, %bias, %scale : tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %s: f32, %out: f32):
    %t = math.tanh %a : f32
    %u = math.erf %s : f32
    %v = arith.addf %t, %u : f32
    %m = arith.mulf %v, %b : f32
    linalg.yield %m : f32
  } -> tensor<2x4xf32>
  %j = arith.addi %i, %i : tensor<2xi64>
  return %r, %j : tensor<2x4xf32>, tensor<2xi64>
}

// -----

// extf / truncf between f32 and f64 disappear; f64 code is unchanged;
// int <-> float conversions now produce / read f64.
// CHECK-LABEL: func.func @mixed(
// CHECK-SAME: %[[A:.*]]: f64, %[[B:.*]]: f64, %[[N:.*]]: i32) -> (f64, i32)
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK: %[[S:.*]] = arith.addf %[[A]], %[[B]] : f64
// CHECK: %[[F:.*]] = arith.sitofp %[[N]] : i32 to f64
// CHECK: %[[M:.*]] = arith.mulf %[[S]], %[[F]] : f64
// CHECK: %[[I:.*]] = arith.fptosi %[[M]] : f64 to i32
// CHECK: return %[[M]], %[[I]] : f64, i32
func.func @mixed(%a: f32, %b: f64, %n: i32) -> (f32, i32) {
  %a64 = arith.extf %a : f32 to f64
  %s = arith.addf %a64, %b : f64
  %s32 = arith.truncf %s : f64 to f32
  %f = arith.sitofp %n : i32 to f32
  %m = arith.mulf %s32, %f : f32
  %i = arith.fptosi %m : f32 to i32
  return %m, %i : f32, i32
}

// -----

// scf.for iteration arguments and a reduction.
// CHECK-LABEL: func.func @loop(
// CHECK-SAME: tensor<8xf64>) -> tensor<f64>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f64)
// CHECK: tensor.extract %{{.*}} : tensor<8xf64>
// CHECK: arith.addf %{{.*}}, %{{.*}} : f64
// CHECK: scf.yield %{{.*}} : f64
// CHECK: tensor.from_elements %{{.*}} : tensor<f64>
func.func @loop(%x: tensor<8xf32>) -> tensor<f32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %init = arith.constant 0.0 : f32
  %s = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %init) -> (f32) {
    %v = tensor.extract %x[%k] : tensor<8xf32>
    %n = arith.addf %acc, %v : f32
    scf.yield %n : f32
  }
  %t = tensor.from_elements %s : tensor<f32>
  return %t : tensor<f32>
}

// -----

// dense_resource constants get a new f64 blob with the same values
// (1.0, -2.0 as little-endian f32 -> f64).
// CHECK-LABEL: func.func @resource(
// CHECK: arith.constant dense_resource<[[BLOB:.*]]> : tensor<2xf64>
// CHECK: [[BLOB]]: "0x08000000000000000000F03F00000000000000C0"
func.func @resource(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = arith.constant dense_resource<w> : tensor<2xf32>
  %y = arith.addf %x, %c : tensor<2xf32>
  return %y : tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000803F000000C0"
    }
  }
#-}

// -----

// Only the functions named by functions= are converted.
// ONLY-LABEL: func.func @converted(%{{.*}}: tensor<2xf64>) -> tensor<2xf64>
// ONLY-LABEL: func.func @kept(%{{.*}}: tensor<2xf32>) -> tensor<2xf32>
// CHECK-LABEL: func.func @converted(%{{.*}}: tensor<2xf64>) -> tensor<2xf64>
// CHECK-LABEL: func.func @kept(%{{.*}}: tensor<2xf64>) -> tensor<2xf64>
func.func @converted(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func @kept(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
