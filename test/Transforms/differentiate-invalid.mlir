// RUN: pipeopt %s -split-input-file -pipe-differentiate -verify-diagnostics
// RUN: pipeopt %s -split-input-file -pipe-differentiate -verify-diagnostics --mlir-disable-threading

// An op without a derivative rule on the path from an argument to the
// result is an error at that op, by name.
func.func @atan(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    // expected-error @+1 {{pipe-differentiate: cannot differentiate 'math.atan' in the body of 'linalg.generic' (no derivative rule for this op)}}
    %t = math.atan %a : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A product reduction has no rule.
func.func @product(%x: tensor<4xf32>) -> tensor<f32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<f32>) -> tensor<f32>
  // expected-error @+1 {{pipe-differentiate: cannot differentiate 'linalg.generic': result 0 is a reduction that combines with 'arith.mulf' (differentiable reductions: addf, subf, maximumf, minimumf, maxnumf, minnumf)}}
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%f : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %acc, %a : f32
    linalg.yield %m : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Control flow is not differentiated.
func.func @loop(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  // expected-error @+1 {{pipe-differentiate: cannot differentiate 'scf.for': no adjoint rule for this op}}
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %x) -> (tensor<4xf32>) {
    %e = tensor.empty() : tensor<4xf32>
    %s = linalg.add ins(%acc, %acc : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// A padding value that depends on an argument.
func.func @pad(%x: tensor<4xf32>, %v: tensor<f32>) -> tensor<6xf32> {
  %s = tensor.extract %v[] : tensor<f32>
  // expected-error @+1 {{pipe-differentiate: cannot differentiate 'tensor.pad': the padding value depends on a differentiated argument}}
  %p = tensor.pad %x low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %s : f32
  } : tensor<4xf32> to tensor<6xf32>
  return %p : tensor<6xf32>
}

// -----

// The generated names must be free.
// expected-error @+1 {{pipe-differentiate: cannot create @f_bwd: the symbol already exists}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func private @f_bwd()

// -----

// Differentiating twice.
// expected-error @+1 {{pipe-differentiate: @g is already differentiated (it has pipe.gradient)}}
func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.gradient = #pipe.gradient<loss = none, wrt = []>} {
  return %x : tensor<4xf32>
}

// -----

// Dynamic shapes.
// expected-error @+1 {{pipe-differentiate: argument 1 has the dynamic shape 'tensor<?x3xf32>'; only static shapes are differentiated}}
func.func @dynamic(%w: tensor<3x2xf32>, %x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  return %x : tensor<?x3xf32>
}

// -----

// Nothing to differentiate: scalar arguments only.
// expected-error @+1 {{pipe-differentiate: @scalars has no floating-point tensor argument to differentiate}}
func.func @scalars(%w: f32, %x: f32) -> f32 {
  %m = arith.mulf %w, %x : f32
  return %m : f32
}

// -----

// No result depends on an argument (an integer result).
// expected-error @+1 {{pipe-differentiate: no result of @int_result is a floating-point tensor that depends on a differentiated argument: there is no gradient to compute}}
func.func @int_result(%x: tensor<4xf32>) -> tensor<4xi32> {
  %e = tensor.empty() : tensor<4xi32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xi32>) {
  ^bb0(%a: f32, %o: i32):
    %t = arith.fptosi %a : f32 to i32
    linalg.yield %t : i32
  } -> tensor<4xi32>
  return %r : tensor<4xi32>
}

// -----

// Stages are differentiated in parallel, but with several failing stages
// only the first one's error is reported, as one stage after the other
// would.
func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.exp %a : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @s1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    // expected-error @+1 {{pipe-differentiate: cannot differentiate 'math.atan' in the body of 'linalg.generic' (no derivative rule for this op)}}
    %t = math.atan %a : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @s2(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 2 : i64} {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.acos %a : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A model that returns its loss and reads two integer tensors of different
// leading dimensions: which of them carries the batch is unknown, and the
// pass says so instead of guessing.
// expected-error @+1 {{pipe-differentiate: cannot tell the per-example data of @two_ids: the integer tensor arguments 1 (tensor<2x4xi64>), 2 (tensor<4xi64>) are never parameters, but which of them carry the batch dimension is unknown: no argument reaches the results along their dimension 0 (the results carry no batch dimension, e.g. a loss), and the integer arguments' leading dimensions differ; name the data arguments with microbatch-args (pipeopt-compile --microbatch-args=I,J)}}
func.func @two_ids(%w: tensor<4xf32>, %ids: tensor<2x4xi64>, %pos: tensor<4xi64>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(b, s) -> (b, s)>, affine_map<(b, s) -> (s)>, affine_map<(b, s) -> (s)>, affine_map<(b, s) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%ids, %pos, %w : tensor<2x4xi64>, tensor<4xi64>, tensor<4xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%i: i64, %p: i64, %x: f32, %o: f32):
    %s = arith.addi %i, %p : i64
    %f = arith.sitofp %s : i64 to f32
    %m = arith.mulf %f, %x : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %loss : tensor<f32>
}
