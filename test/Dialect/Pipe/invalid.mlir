// RUN: pipeopt %s -split-input-file -verify-diagnostics --allow-unregistered-dialect

// One case per verifier message of the pipe dialect.

// expected-error @+1 {{tag stages must be non-negative, got -1 -> 1}}
"test.op"() {t = #pipe.tag<forward, stage -1 -> 1, microbatch 0, value 0>} : () -> ()

// -----

// expected-error @+1 {{tag source and destination stage must differ, got 1 -> 1}}
"test.op"() {t = #pipe.tag<forward, stage 1 -> 1, microbatch 0, value 0>} : () -> ()

// -----

// expected-error @+1 {{forward tag must flow to a later stage, got 2 -> 1}}
"test.op"() {t = #pipe.tag<forward, stage 2 -> 1, microbatch 0, value 0>} : () -> ()

// -----

// expected-error @+1 {{backward tag must flow to an earlier stage, got 1 -> 2}}
"test.op"() {t = #pipe.tag<backward, stage 1 -> 2, microbatch 0, value 0>} : () -> ()

// -----

// expected-error @+1 {{tag microbatch must be non-negative, got -3}}
"test.op"() {t = #pipe.tag<forward, stage 0 -> 1, microbatch -3, value 0>} : () -> ()

// -----

// expected-error @+1 {{tag value index must be non-negative, got -1}}
"test.op"() {t = #pipe.tag<forward, stage 0 -> 1, microbatch 0, value -1>} : () -> ()

// -----

// expected-error @+1 {{cost flops must be finite and non-negative, got -1}}
"test.op"() {c = #pipe.cost<flops = -1.0, bytes = 0.0, time = 0.0>} : () -> ()

// -----

// expected-error @+1 {{cost bytes must be finite and non-negative, got -2}}
"test.op"() {c = #pipe.cost<flops = 1.0, bytes = -2.0, time = 0.0>} : () -> ()

// -----

// expected-error @+1 {{cost time must be finite and non-negative, got -0.5}}
"test.op"() {c = #pipe.cost<flops = 1.0, bytes = 2.0, time = -0.5>} : () -> ()

// -----

func.func @f() {
  // expected-error @+1 {{attribute 'pipe.stage' must be a 64-bit integer stage index}}
  %e = tensor.empty() {pipe.stage = "zero"} : tensor<4xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{attribute 'pipe.stage' must be non-negative, got -2}}
  %e = tensor.empty() {pipe.stage = -2 : i64} : tensor<4xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{attribute 'pipe.cost' must be a #pipe.cost}}
  %e = tensor.empty() {pipe.cost = 3.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{unknown attribute 'pipe.stge' (the pipe dialect's op attributes are pipe.stage, pipe.cost}}
  %e = tensor.empty() {pipe.stge = 0 : i64} : tensor<4xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{attribute 'pipe.remat' must be a unit attribute}}
  %e = tensor.empty() {pipe.remat = 1 : i64} : tensor<4xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{attribute 'pipe.stash_bytes' must be non-negative, got -8}}
  %e = tensor.empty() {pipe.stash_bytes = -8 : i64} : tensor<4xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{attribute 'pipe.rank' must be a 64-bit integer rank}}
  %e = tensor.empty() {pipe.rank = 1.0 : f32} : tensor<4xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{attribute 'pipe.gradient' must be a #pipe.gradient}}
  %e = tensor.empty() {pipe.gradient = [1]} : tensor<4xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{attribute 'pipe.trainable' must be an array<i64> of argument indices}}
  %e = tensor.empty() {pipe.trainable = [0, 1]} : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{attribute 'pipe.num_stages' must be non-negative, got -1}}
func.func @f() attributes {pipe.num_stages = -1 : i64} {
  return
}

// -----

// expected-error @+1 {{attribute 'pipe.optimizer' must be a #pipe.optimizer}}
module attributes {pipe.optimizer = {name = "sgd", lr = 0.1 : f64}} {
}

// -----

// expected-error @+1 {{attribute 'pipe.auto_schedule' must be a #pipe.auto_schedule}}
module attributes {pipe.auto_schedule = {schedule = "1f1b", num_microbatches = 4 : i64}} {
}

// -----

// expected-error @+1 {{attribute 'pipe.lifted_constants' must be an array<i64> of argument indices}}
func.func @f() attributes {pipe.lifted_constants = array<i32: 0>} {
  return
}

// -----

func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pipe.stage_call' op callee @missing does not name a func.func}}
  %y = pipe.stage_call @missing(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pipe.stage_call' op callee @plain is not a stage function (no 'pipe.stage' attribute)}}
  %y = pipe.stage_call @plain(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @s1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pipe.stage_call' op calls @s1 of stage 1 as stage 0}}
  %y = pipe.stage_call @s1(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @g(%x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pipe.stage_call' op operand types do not match callee @s0 of type '(tensor<4xf32>) -> tensor<4xf32>'}}
  %y = pipe.stage_call @s0(%x) stage 0 : (tensor<8xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @g(%x: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'pipe.stage_call' op result types do not match callee @s0 of type '(tensor<4xf32>) -> tensor<4xf32>'}}
  %y = pipe.stage_call @s0(%x) stage 0 : (tensor<4xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

// expected-error @+1 {{'pipe.stage_call' op attribute 'stage' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
%y = "pipe.stage_call"() {callee = @s0, stage = -1 : i64} : () -> ()

// -----

// expected-error @+1 {{'pipe.program' op rank 2 out of range for 2 ranks}}
pipe.program @p rank 2 of 2 microbatches 1 {
}

// -----

// expected-error @+1 {{'pipe.program' op attribute 'num_ranks' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
pipe.program @p rank 0 of 0 microbatches 1 {
}

// -----

// expected-error @+1 {{'pipe.program' op body must not have block arguments; read model arguments with pipe.input}}
"pipe.program"() ({
^bb0(%a: tensor<4xf32>):
}) {sym_name = "p", rank = 0 : i64, num_ranks = 1 : i64, num_microbatches = 1 : i64} : () -> ()

// -----

pipe.program @p rank 0 of 2 microbatches 2 {
  // expected-error @+1 {{'pipe.input' op microbatch 2 out of range for a program of 2 microbatches}}
  %x = pipe.input 0 microbatch 2 : tensor<4xf32>
}

// -----

pipe.program @p rank 0 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 1 : tensor<4xf32>
  // expected-error @+1 {{'pipe.output' op microbatch 5 out of range for a program of 2 microbatches}}
  pipe.output %x result 0 microbatch 5 : tensor<4xf32>
}

// -----

func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @p rank 0 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 1 : tensor<4xf32>
  // expected-error @+1 {{'pipe.forward' op microbatch 7 out of range for a program of 2 microbatches}}
  %y = pipe.forward @s0(%x) stage 0 microbatch 7 : (tensor<4xf32>) -> tensor<4xf32>
}

// -----

func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @p rank 0 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 1 : tensor<4xf32>
  // expected-error @+1 {{'pipe.forward' op calls @s0 of stage 0 as stage 1}}
  %y = pipe.forward @s0(%x) stage 1 microbatch 1 : (tensor<4xf32>) -> tensor<4xf32>
}

// -----

pipe.program @p rank 0 of 2 microbatches 2 {
  %g = pipe.input 0 microbatch 1 : tensor<4xf32>
  // expected-error @+1 {{'pipe.backward' op a weight-gradient (W) action produces no gradients for other stages, but has 1 results}}
  %h = pipe.backward weight stage 0 microbatch 1 ins(%g : tensor<4xf32>) -> tensor<4xf32>
}

// -----

pipe.program @p rank 0 of 2 microbatches 2 {
  // expected-error @+1 {{'pipe.backward' op microbatch 3 out of range for a program of 2 microbatches}}
  pipe.backward full stage 0 microbatch 3
}

// -----

// A materialized W's results are weight gradients: only pipe.gradient takes them.
func.func private @s0_train_w(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64}
pipe.program @p rank 0 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 1 : tensor<4xf32>
  // expected-error @+1 {{'pipe.backward' op is a weight-gradient (W) action: its results are weight gradients, which only pipe.gradient may use}}
  %g = pipe.backward weight @s0_train_w stage 0 microbatch 1 ins(%x : tensor<4xf32>) -> tensor<4xf32>
  // expected-note @+1 {{used here}}
  pipe.send %g to 1 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4xf32>
}

// -----

func.func private @s0_train_bw(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64}
pipe.program @p rank 0 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 1 : tensor<8xf32>
  // expected-error @+1 {{'pipe.backward' op operand types do not match callee @s0_train_bw of type '(tensor<4xf32>) -> tensor<4xf32>'}}
  %g = pipe.backward full @s0_train_bw stage 0 microbatch 1 ins(%x : tensor<8xf32>) -> tensor<4xf32>
}

// -----

func.func private @s0_train_bw(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64}
pipe.program @p rank 0 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 1 : tensor<4xf32>
  // expected-error @+1 {{'pipe.backward' op calls @s0_train_bw of stage 1 as stage 0}}
  %g = pipe.backward full @s0_train_bw stage 0 microbatch 1 ins(%x : tensor<4xf32>) -> tensor<4xf32>
}

// -----

pipe.program @p rank 0 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 1 : tensor<4xi32>
  // expected-error @+1 {{'pipe.gradient' op contributes a gradient of type 'tensor<4xi32>', but gradients are floating-point}}
  pipe.gradient %x argument 0 stage 0 microbatch 1 : tensor<4xi32>
}

// -----

pipe.program @p rank 0 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 1 : tensor<4xf32>
  // expected-error @+1 {{'pipe.gradient' op microbatch 2 out of range for a program of 2 microbatches}}
  pipe.gradient %x argument 0 stage 0 microbatch 2 : tensor<4xf32>
}

// -----

func.func private @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64}
pipe.program @p rank 0 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 1 : tensor<4xf32>
  // expected-note @+1 {{operand #0 defined here}}
  %y = pipe.forward @s0(%x) stage 0 microbatch 1 : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'pipe.gradient' op is for microbatch 0, but operand #0 belongs to microbatch 1}}
  pipe.gradient %y argument 0 stage 0 microbatch 0 : tensor<4xf32>
}

// -----

pipe.program @p rank 0 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 1 : tensor<4xf32>
  // expected-error @+1 {{'pipe.send' op peer rank 2 out of range for 2 ranks}}
  pipe.send %x to 2 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4xf32>
}

// -----

pipe.program @p rank 0 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 1 : tensor<4xf32>
  // expected-error @+1 {{'pipe.send' op peer rank 0 is the program's own rank}}
  pipe.send %x to 0 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4xf32>
}

// -----

pipe.program @p rank 0 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 1 : tensor<4xf32>
  // expected-error @+1 {{'pipe.send' op microbatch 4 out of range for a program of 2 microbatches}}
  pipe.send %x to 1 <forward, stage 0 -> 1, microbatch 4, value 0> : tensor<4xf32>
}

// -----

pipe.program @p rank 1 of 2 microbatches 2 {
  // expected-error @+1 {{'pipe.recv' op peer rank 1 is the program's own rank}}
  %x = pipe.recv from 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
}

// -----

pipe.program @p rank 1 of 2 microbatches 2 {
  // expected-error @+1 {{'pipe.recv' op peer rank 3 out of range for 2 ranks}}
  %x = pipe.recv from 3 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pipe.send' op expects parent op 'pipe.program'}}
  pipe.send %x to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  return
}

// -----

pipe.program @p rank 0 of 2 microbatches 2 {
  // expected-error @+1 {{'pipe.recv' op result #0 must be ranked tensor of any type values, but got 'f32'}}
  %x = "pipe.recv"() {peer = 1 : i64, tag = #pipe.tag<forward, stage 0 -> 1, microbatch 0, value 0>} : () -> f32
}

// -----

// Activations belong to one microbatch: an action, send or output of
// microbatch m may use only microbatch m's received or computed values.

func.func @s1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @p rank 1 of 2 microbatches 2 {
  // expected-note @+1 {{operand #0 defined here}}
  %x = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4xf32>
  // expected-error @+1 {{'pipe.forward' op is for microbatch 0, but operand #0 belongs to microbatch 1}}
  %y = pipe.forward @s1(%x) stage 1 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
}

// -----

func.func @s0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
pipe.program @p rank 0 of 2 microbatches 2 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  // expected-note @+1 {{operand #0 defined here}}
  %y = pipe.forward @s0(%x) stage 0 microbatch 0 : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'pipe.send' op is for microbatch 1, but operand #0 belongs to microbatch 0}}
  pipe.send %y to 1 <forward, stage 0 -> 1, microbatch 1, value 0> : tensor<4xf32>
}

// -----

pipe.program @p rank 1 of 2 microbatches 2 {
  // expected-note @+1 {{operand #0 defined here}}
  %x = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4xf32>
  // expected-error @+1 {{'pipe.output' op is for microbatch 1, but operand #0 belongs to microbatch 0}}
  pipe.output %x result 0 microbatch 1 : tensor<4xf32>
}

// -----

pipe.program @p rank 0 of 2 microbatches 2 {
  // expected-note @+1 {{operand #0 defined here}}
  %g = pipe.recv from 1 <backward, stage 1 -> 0, microbatch 0, value 0> : tensor<4xf32>
  // expected-error @+1 {{'pipe.backward' op is for microbatch 1, but operand #0 belongs to microbatch 0}}
  %gx = pipe.backward input stage 0 microbatch 1 ins(%g : tensor<4xf32>) -> tensor<4xf32>
}

// -----

// expected-error @+1 {{'pipe.program' op holds only pipe.input, pipe.output, pipe.forward, pipe.backward, pipe.send, pipe.recv and pipe.gradient, but contains 'tosa.abs' (computation belongs in stage functions)}}
pipe.program @p rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  // expected-note @+1 {{this op}}
  %y = tosa.abs %x : (tensor<4xf32>) -> tensor<4xf32>
  pipe.output %y result 0 microbatch 0 : tensor<4xf32>
}

// -----

// Output reductions and names.

pipe.program @p rank 0 of 1 microbatches 2 {
  %x = pipe.input 0 microbatch 0 : tensor<4xi32>
  // expected-error @+1 {{'pipe.output' op reduce mean needs a floating-point tensor, got 'tensor<4xi32>'}}
  pipe.output %x result 0 microbatch 0 reduce mean : tensor<4xi32>
}

// -----

pipe.program @p rank 0 of 1 microbatches 2 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  // expected-error @+1 {{'pipe.output' op name must not be empty}}
  pipe.output %x result 0 microbatch 0 name "" : tensor<4xf32>
}

// -----

pipe.program @p rank 0 of 1 microbatches 2 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  // expected-note @+1 {{earlier pipe.output}}
  pipe.output %x result 0 microbatch 0 reduce mean name "loss" : tensor<4xf32>
  // expected-error @+1 {{'pipe.output' op writes result 0 with no reduction, name "loss", but an earlier pipe.output of result 0 has reduce mean, name "loss"; every pipe.output of one result must agree}}
  pipe.output %x result 0 microbatch 1 name "loss" : tensor<4xf32>
}

// -----

pipe.program @p rank 0 of 1 microbatches 2 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  // expected-note @+1 {{earlier pipe.output}}
  pipe.output %x result 0 microbatch 0 reduce mean name "grad_0" : tensor<4xf32>
  // expected-error @+1 {{'pipe.output' op writes result 0 with reduce mean, no name, but an earlier pipe.output of result 0 has reduce mean, name "grad_0"}}
  pipe.output %x result 0 microbatch 1 reduce mean : tensor<4xf32>
}

// -----

pipe.program @p rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  // expected-note @+1 {{result 0}}
  pipe.output %x result 0 microbatch 0 name "y" : tensor<4xf32>
  // expected-error @+1 {{'pipe.output' op names result 1 "y", but result 0 has that name already; result names must be unique}}
  pipe.output %x result 1 microbatch 0 name "y" : tensor<4xf32>
}

// -----

pipe.program @p rank 0 of 1 microbatches 2 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  pipe.output %x result 0 microbatch 1 reduce mean : tensor<4xf32>
  // expected-error @+1 {{'pipe.output' op writes result 0 (reduce mean) for microbatch 1 a second time; a mean counts every microbatch once}}
  pipe.output %x result 0 microbatch 1 reduce mean : tensor<4xf32>
}

// -----

pipe.program @p rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  // expected-error @+1 {{custom op 'pipe.output' expected string or keyword containing one of the following enum values for attribute 'reduce' [mean]}}
  pipe.output %x result 0 microbatch 0 reduce sum : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op argument 0: attribute 'pipe.microbatched' must be a unit attribute}}
func.func private @f(%x: tensor<4xf32> {pipe.microbatched = 1 : i64})

// -----

// expected-error @+1 {{'func.func' op result 0: attribute 'pipe.output_name' must be a non-empty string}}
func.func private @f() -> (tensor<4xf32> {pipe.output_name = ""})

// -----

// expected-error @+1 {{'func.func' op result 0: attribute 'pipe.reduce' must be "mean" (the mean over microbatches), got "sum"}}
func.func private @f() -> (tensor<4xf32> {pipe.reduce = "sum"})

// -----

// expected-error @+1 {{'func.func' op result 0: attribute 'pipe.reduce' needs a floating-point tensor, got 'tensor<4xi64>'}}
func.func private @f() -> (tensor<4xi64> {pipe.reduce = "mean"})
