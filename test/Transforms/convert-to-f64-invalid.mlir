// RUN: pipeopt %s -split-input-file -test-pipe-convert-to-f64 -verify-diagnostics

// A computation that truncates to f16 cannot be widened faithfully; the
// error is at the op that introduces f16 (not at its users).
func.func @half(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{result 0 has type 'tensor<4xf16>': it computes in 'f16', which cannot be converted to f64 (only f32 computations are widened)}}
  %h = arith.truncf %x : tensor<4xf32> to tensor<4xf16>
  %y = arith.extf %h : tensor<4xf16> to tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// expected-error @+1 {{argument 0 has type 'tensor<4xbf16>': it computes in 'bf16'}}
func.func @bf16_arg(%x: tensor<4xbf16>) -> tensor<4xf32> {
  %y = arith.extf %x : tensor<4xbf16> to tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @bits(%x: f32) -> i32 {
  // expected-error @+1 {{reinterprets the bits of f32 data, which cannot be converted to f64}}
  %i = arith.bitcast %x : f32 to i32
  return %i : i32
}

// -----

func.func private @ext(tensor<4xf32>) -> tensor<4xf32>
func.func @calls(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{refers to a symbol outside the function and has f32 operands or results; the symbol is not converted to f64 (inline calls first, e.g. with pipe-prepare)}}
  %y = func.call @ext(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Calls whose signature has no f32 are fine.
func.func private @count(tensor<4xi64>) -> tensor<4xi64>
func.func @int_call(%x: tensor<4xf32>, %n: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi64>) {
  %m = func.call @count(%n) : (tensor<4xi64>) -> tensor<4xi64>
  return %x, %m : tensor<4xf32>, tensor<4xi64>
}

// -----

func.func @elided(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{dense_resource '__elided__' has no data (an elided or missing blob), so it cannot be converted to f64}}
  %c = arith.constant dense_resource<__elided__> : tensor<2xf32>
  %y = arith.addf %x, %c : tensor<2xf32>
  return %y : tensor<2xf32>
}
