// RUN: pipeopt %s -pipeopt-expand-math | FileCheck %s
// RUN: pipeopt %s -pipeopt-expand-math="approximate-all" | FileCheck %s --check-prefix=ALL

// f32 erf / erfc become polynomials (no math.erf left, no call); f64 erf
// calls the C library; exp stays for LLVM unless approximate-all.

// CHECK-LABEL: func.func @f32
// CHECK-NOT: math.erf
// CHECK-NOT: call
// CHECK: math.exp
// ALL-LABEL: func.func @f32
// ALL-NOT: math.exp
// ALL-NOT: math.erf
func.func @f32(%x: f32) -> (f32, f32, f32) {
  %a = math.erf %x : f32
  %b = math.erfc %x : f32
  %c = math.exp %x : f32
  return %a, %b, %c : f32, f32, f32
}

// CHECK-LABEL: func.func @f64
// CHECK: call @erf(%{{.*}}) : (f64) -> f64
// CHECK: call @erfc(%{{.*}}) : (f64) -> f64
// CHECK-NOT: math.erf
func.func @f64(%x: f64) -> (f64, f64) {
  %a = math.erf %x : f64
  %b = math.erfc %x : f64
  return %a, %b : f64, f64
}

// f32 tanh is approximated by default (the vectorizer has no vector tanhf
// to call); f64 tanh stays for LLVM (libm's tanh).
// CHECK-LABEL: func.func @tanh
// CHECK-NOT: math.tanh %{{.*}} : f32
// CHECK: math.tanh %{{.*}} : f64
// CHECK-NOT: math.tanh
// CHECK: return
func.func @tanh(%x: f32, %y: f64) -> (f32, f64) {
  %a = math.tanh %x : f32
  %b = math.tanh %y : f64
  return %a, %b : f32, f64
}

// Math on tensors is left to convert-elementwise-to-linalg: exp stays (it
// has an LLVM lowering once it is a scalar in a linalg body) even with
// approximate-all.
// ALL-LABEL: func.func @tensor_exp
// ALL: math.exp %{{.*}} : tensor<4xf32>
func.func @tensor_exp(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = math.exp %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
