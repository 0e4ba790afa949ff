// RUN: pipeopt %s -split-input-file -pipe-outline-stages -verify-diagnostics

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %x, %x {pipe.stage = 0 : i64} : tensor<4xf32>
  // expected-error @+1 {{pipe-outline-stages: op has no 'pipe.stage' attribute (run -pipe-partition first)}}
  %1 = arith.mulf %0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 2 : i64} {
  %0 = arith.addf %x, %x {pipe.stage = 0 : i64} : tensor<4xf32>
  // expected-error @+1 {{pipe-outline-stages: pipe.stage = 2 is out of range for 2 stages}}
  %1 = arith.mulf %0, %0 {pipe.stage = 2 : i64} : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %x, %x {pipe.stage = 1 : i64} : tensor<4xf32>
  // expected-error @+1 {{pipe-outline-stages: op of stage 0 uses a value produced in the later stage 1}}
  %1 = arith.mulf %0, %0 {pipe.stage = 0 : i64} : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// expected-error @+1 {{pipe-outline-stages: stage 1 of @f is empty (no op has pipe.stage = 1)}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 3 : i64} {
  %0 = arith.addf %x, %x {pipe.stage = 0 : i64} : tensor<4xf32>
  %1 = arith.mulf %0, %0 {pipe.stage = 2 : i64} : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> f32 {
  %c0 = arith.constant {pipe.stage = 0 : i64} 0 : index
  // expected-error @+1 {{pipe-outline-stages: value of type 'f32' flows from stage 0 to stage 1; only ranked tensors can be passed between stages}}
  %0 = tensor.extract %x[%c0] {pipe.stage = 0 : i64} : tensor<4xf32>
  %1 = arith.mulf %0, %0 {pipe.stage = 1 : i64} : f32
  return %1 : f32
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %x, %x {pipe.stage = 0 : i64} : tensor<4xf32>
  // expected-error @+1 {{pipe-outline-stages: op is marked 'pipe.remat' but uses a value that is not rematerializable}}
  %1 = arith.mulf %0, %0 {pipe.remat, pipe.stage = 1 : i64} : tensor<4xf32>
  %2 = arith.addf %1, %1 {pipe.stage = 1 : i64} : tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

func.func @f_stage0() attributes {pipe.stage = 0 : i64} {
  return
}
// expected-error @+1 {{pipe-outline-stages: cannot create @f_stage0: the symbol already exists}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %x, %x {pipe.stage = 0 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{pipe-outline-stages: pipe.stage must be between 0 and 65535, got 4294967296}}
  %0 = arith.addf %x, %x {pipe.stage = 4294967296 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{pipe-outline-stages: pipe.num_stages must be between 1 and 65536, got 4294967297}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 4294967297 : i64} {
  %0 = arith.addf %x, %x {pipe.stage = 0 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{pipe-outline-stages: pipe.num_stages must be between 1 and 65536, got 0}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 0 : i64} {
  %0 = arith.addf %x, %x {pipe.stage = 0 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Nothing to outline: a warning, and the module is left unchanged.

// expected-warning @+1 {{pipe-outline-stages: no partitioned function (no op carries 'pipe.stage'; run -pipe-partition first); the module is left unchanged}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
