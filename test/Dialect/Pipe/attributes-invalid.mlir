// RUN: pipeopt %s -split-input-file -verify-diagnostics

// One case per error of the training contract's attributes (#pipe.optimizer,
// #pipe.gradient, #pipe.auto_schedule): each out-of-range or missing field,
// a field that does not apply, a bad enum value, a field of the wrong type.
// Round trips of the valid forms: attributes.mlir.

// expected-error @+1 {{pipe.optimizer lr must be in [0, inf), got -0.1}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<sgd, lr = -0.1, weight_decay = 0.0>}

// -----

// expected-error @+1 {{pipe.optimizer lr must be in [0, inf), got inf}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<sgd, lr = 0x7FF0000000000000, weight_decay = 0.0>}

// -----

// expected-error @+1 {{pipe.optimizer lr must be in [0, inf), got nan}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<sgd, lr = 0x7FF8000000000000, weight_decay = 0.0>}

// -----

// expected-error @+1 {{pipe.optimizer weight_decay must be in [0, inf), got -1}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<sgd, lr = 0.1, weight_decay = -1.0>}

// -----

// expected-error @+1 {{pipe.optimizer momentum must be in [0, 1], got 1.5}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<momentum, lr = 0.1, weight_decay = 0.0, momentum = 1.5>}

// -----

// expected-error @+1 {{pipe.optimizer momentum must be in [0, 1], got -0.5}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<momentum, lr = 0.1, weight_decay = 0.0, momentum = -0.5>}

// -----

// expected-error @+1 {{pipe.optimizer beta1 must be in [0, 1), got 1}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<adamw, lr = 0.1, weight_decay = 0.0, beta1 = 1.0, beta2 = 0.999, eps = 1.0e-8>}

// -----

// expected-error @+1 {{pipe.optimizer beta2 must be in [0, 1), got -0.1}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<adamw, lr = 0.1, weight_decay = 0.0, beta1 = 0.9, beta2 = -0.1, eps = 1.0e-8>}

// -----

// expected-error @+1 {{pipe.optimizer eps must be in (0, inf), got 0}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<adamw, lr = 0.1, weight_decay = 0.0, beta1 = 0.9, beta2 = 0.999, eps = 0.0>}

// -----

// expected-error @+1 {{pipe.optimizer update_every must be in [1, 2^20] (absent: synchronous), got 0}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<sgd, lr = 0.1, weight_decay = 0.0, update_every = 0>}

// -----

// expected-error @+1 {{pipe.optimizer update_every must be in [1, 2^20] (absent: synchronous), got 1048577}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<sgd, lr = 0.1, weight_decay = 0.0, update_every = 1048577>}

// -----

// expected-error @+1 {{pipe.optimizer lr is required with optimizer sgd}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<sgd, weight_decay = 0.0>}

// -----

// expected-error @+1 {{pipe.optimizer weight_decay is required with optimizer adamw}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<adamw, lr = 0.1, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8>}

// -----

// expected-error @+1 {{pipe.optimizer momentum is required with optimizer momentum}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<momentum, lr = 0.1, weight_decay = 0.0>}

// -----

// expected-error @+1 {{pipe.optimizer eps is required with optimizer adamw}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<adamw, lr = 0.1, weight_decay = 0.0, beta1 = 0.9, beta2 = 0.999>}

// -----

// expected-error @+1 {{pipe.optimizer lr does not apply to optimizer none}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<none, lr = 0.1>}

// -----

// expected-error @+1 {{pipe.optimizer momentum does not apply to optimizer sgd}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<sgd, lr = 0.1, weight_decay = 0.0, momentum = 0.9>}

// -----

// expected-error @+1 {{pipe.optimizer beta1 does not apply to optimizer momentum}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<momentum, lr = 0.1, weight_decay = 0.0, momentum = 0.9, beta1 = 0.9>}

// -----

// expected-error @+2 {{expected ::pipeopt::pipe::OptimizerKind to be one of: none, sgd, momentum, adamw}}
// expected-error @+1 {{failed to parse Pipe_OptimizerAttr parameter 'kind'}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<rmsprop, lr = 0.1>}

// -----

// expected-error @+2 {{expected floating point literal}}
// expected-error @+1 {{failed to parse Pipe_OptimizerAttr parameter 'lr'}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<sgd, lr = "fast", weight_decay = 0.0>}

// -----

// An optional integer that is not one ends the struct.
// expected-error @+1 {{expected '>'}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<sgd, lr = 0.1, weight_decay = 0.0, update_every = 1.5>}

// -----

// expected-error @+1 {{duplicate or unknown struct parameter name: learning_rate}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<sgd, learning_rate = 0.1>}

// -----

// expected-error @+1 {{duplicate or unknown struct parameter name: lr}}
func.func private @f() attributes {pipe.optimizer = #pipe.optimizer<sgd, lr = 0.1, lr = 0.2, weight_decay = 0.0>}

// -----

// expected-error @+2 {{expected ::pipeopt::pipe::LossKind to be one of: none, self, mse, cross-entropy}}
// expected-error @+1 {{failed to parse Pipe_GradientAttr parameter 'loss'}}
func.func private @f() attributes {pipe.gradient = #pipe.gradient<loss = l1, wrt = [0]>}

// -----

// expected-error @+1 {{pipe.gradient wrt must list ascending non-negative indices, got [1, 0]}}
func.func private @f() attributes {pipe.gradient = #pipe.gradient<loss = none, wrt = [1, 0]>}

// -----

// expected-error @+1 {{pipe.gradient wrt must list ascending non-negative indices, got [0, 0]}}
func.func private @f() attributes {pipe.gradient = #pipe.gradient<loss = none, wrt = [0, 0]>}

// -----

// expected-error @+1 {{pipe.gradient trainable must list non-negative indices, got [-1]}}
func.func private @f() attributes {pipe.gradient = #pipe.gradient<loss = none, wrt = [0], trainable = [-1]>}

// -----

// expected-error @+1 {{pipe.gradient seeded must list ascending non-negative indices, got [2, 1]}}
func.func private @f() attributes {pipe.gradient = #pipe.gradient<loss = none, wrt = [0], seeded = [2, 1]>}

// -----

// expected-error @+1 {{pipe.gradient saved_bytes must be non-negative, got -8}}
func.func private @f() attributes {pipe.gradient = #pipe.gradient<loss = none, wrt = [0], saved_bytes = -8>}

// -----

// expected-error @+1 {{pipe.gradient with loss = none names no loss_fn or grad function}}
func.func private @f() attributes {pipe.gradient = #pipe.gradient<loss = none, wrt = [0], grad = @g>}

// -----

// expected-error @+1 {{struct is missing required parameter: wrt}}
func.func private @f() attributes {pipe.gradient = #pipe.gradient<loss = mse>}

// -----

// expected-error @+2 {{expected '['}}
// expected-error @+1 {{failed to parse Pipe_GradientAttr parameter 'wrt'}}
func.func private @f() attributes {pipe.gradient = #pipe.gradient<loss = none, wrt = 3>}

// -----

// expected-error @+2 {{invalid kind of attribute specified}}
// expected-error @+1 {{failed to parse Pipe_GradientAttr parameter 'grad'}}
func.func private @f() attributes {pipe.gradient = #pipe.gradient<loss = mse, wrt = [0], grad = "g">}

// -----

// expected-error @+1 {{pipe.auto_schedule num_microbatches must be positive, got 0}}
module attributes {pipe.auto_schedule = #pipe.auto_schedule<schedule = "1f1b", num_microbatches = 0, virtual_stages = 1, num_stages = 2, makespan_s = 1.0>} {
}

// -----

// expected-error @+1 {{pipe.auto_schedule virtual_stages must be positive, got 0}}
module attributes {pipe.auto_schedule = #pipe.auto_schedule<schedule = "1f1b", num_microbatches = 4, virtual_stages = 0, num_stages = 2, makespan_s = 1.0>} {
}

// -----

// expected-error @+1 {{pipe.auto_schedule num_stages must be positive, got -2}}
module attributes {pipe.auto_schedule = #pipe.auto_schedule<schedule = "1f1b", num_microbatches = 4, virtual_stages = 1, num_stages = -2, makespan_s = 1.0>} {
}

// -----

// expected-error @+1 {{pipe.auto_schedule makespan_s must be finite and non-negative, got -1}}
module attributes {pipe.auto_schedule = #pipe.auto_schedule<schedule = "1f1b", num_microbatches = 4, virtual_stages = 1, num_stages = 2, makespan_s = -1.0>} {
}

// -----

// expected-error @+1 {{pipe.auto_schedule schedule must name a schedule}}
module attributes {pipe.auto_schedule = #pipe.auto_schedule<schedule = "", num_microbatches = 4, virtual_stages = 1, num_stages = 2, makespan_s = 1.0>} {
}

// -----

// expected-error @+1 {{expected ','}}
module attributes {pipe.auto_schedule = #pipe.auto_schedule<schedule = "1f1b", num_microbatches = 4, virtual_stages = 1, num_stages = 2>} {
}

// -----

// expected-error @+2 {{expected string}}
// expected-error @+1 {{failed to parse Pipe_AutoScheduleAttr parameter 'schedule'}}
module attributes {pipe.auto_schedule = #pipe.auto_schedule<schedule = 1f1b, num_microbatches = 4, virtual_stages = 1, num_stages = 2, makespan_s = 1.0>} {
}

// -----

// The indices of a #pipe.gradient name the function's arguments and
// results (the dialect's verifyOperationAttribute).
// expected-error @+1 {{'func.func' op attribute 'pipe.gradient': wrt names argument 5, but the function has 2}}
func.func @wrt5(%w: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.gradient = #pipe.gradient<loss = none, wrt = [0, 5]>} {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op attribute 'pipe.gradient': trainable names argument 3, but the function has 2}}
func.func @trainable3(%w: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.gradient = #pipe.gradient<loss = none, wrt = [0, 1], trainable = [3]>} {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op attribute 'pipe.gradient': data names argument 2, but the function has 2}}
func.func @data2(%w: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.gradient = #pipe.gradient<loss = none, wrt = [0, 1], data = [2]>} {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op attribute 'pipe.gradient': seeded names result 1, but the function has 1}}
func.func @seeded1(%w: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.gradient = #pipe.gradient<loss = none, wrt = [0], seeded = [1]>} {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op attribute 'pipe.gradient': trainable names argument 0 twice}}
func.func @twice(%w: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.gradient = #pipe.gradient<loss = none, wrt = [0], trainable = [0, 0]>} {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op attribute 'pipe.gradient': trainable argument 1 is not in wrt (the differentiated arguments)}}
func.func @notwrt(%w: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.gradient = #pipe.gradient<loss = none, wrt = [0], trainable = [1]>} {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'builtin.module' op attribute 'pipe.gradient' belongs on the function pipe-differentiate differentiated}}
module attributes {pipe.gradient = #pipe.gradient<loss = none, wrt = []>} {
}
