//===- PipeOps.td - pipe dialect operations ----------------*- tablegen -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_DIALECT_PIPE_IR_PIPEOPS_TD
#define PIPEOPT_DIALECT_PIPE_IR_PIPEOPS_TD

include "pipeopt/Dialect/Pipe/IR/PipeBase.td"
include "pipeopt/Dialect/Pipe/IR/PipeAttributes.td"
include "pipeopt/Dialect/Pipe/IR/PipeInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

def NonNegI64Attr : ConfinedAttr<I64Attr, [IntNonNegative]>;
def PositiveI64Attr : ConfinedAttr<I64Attr, [IntPositive]>;

//===----------------------------------------------------------------------===//
// Stage graph
//===----------------------------------------------------------------------===//

def Pipe_StageCallOp : Pipe_Op<"stage_call",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Invokes one outlined pipeline stage in the stage graph.";
  let description = [{
    After `pipe-outline-stages`, the original model function is the stage
    graph: a sequence of `pipe.stage_call`s, one per stage in stage order.
    Each calls the outlined `func.func` of stage `stage`; its operands are the
    model arguments (weights, inputs) and the results of earlier stages that
    this stage consumes. An SSA edge from the results of stage i to stage j is
    a value flowing from i to j; j > i + 1 is a skip connection.

    The callee must be a `func.func` carrying `pipe.stage = <stage>` whose
    function type matches the operand and result types.

    ```mlir
    %h = pipe.stage_call @mlp_stage0(%x, %w0) stage 0
        : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, NonNegI64Attr:$stage,
                       Variadic<AnyType>:$args);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $callee `(` $args `)` `stage` $stage attr-dict `:`
    functional-type($args, $results)
  }];
}

//===----------------------------------------------------------------------===//
// Per-device programs
//===----------------------------------------------------------------------===//

def Pipe_ProgramOp : Pipe_Op<"program", [
    Symbol, IsolatedFromAbove, SingleBlock, NoTerminator]> {
  let summary = "The ordered actions one rank executes in one iteration.";
  let description = [{
    A `pipe.program` holds what rank `rank` (of `num_ranks`) executes for one
    iteration of a pipeline schedule over `num_microbatches` microbatches.
    Its body is a single block executed top to bottom: program order is the
    schedule's action order on that rank. The `schedule` attribute names the
    schedule that produced it (informational).

    Every microbatch is one invocation of the model function: `pipe.input`
    reads model argument `i` for microbatch `m` (weights are the same for
    every microbatch, activations differ) and `pipe.output` writes model
    result `i` of microbatch `m`.

    Invariants (verified): the body holds only `pipe.input`, `pipe.output`,
    `pipe.forward`, `pipe.backward`, `pipe.send` and `pipe.recv`
    (computation belongs in stage functions); an action, send or output of
    microbatch `m` uses only values received or computed for microbatch `m`
    (a `pipe.input` may be shared: weights are the same for every
    microbatch; convert-pipe-to-runtime checks per-microbatch arguments).

    ```mlir
    pipe.program @mlp_rank1 rank 1 of 2 microbatches 2 {
      %x = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4x8xf32>
      %w = pipe.input 2 microbatch 0 : tensor<8x8xf32>
      %y = pipe.forward @mlp_stage1(%x, %w) stage 1 microbatch 0
          : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
      pipe.output %y result 0 microbatch 0 : tensor<4x8xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, NonNegI64Attr:$rank,
                       PositiveI64Attr:$num_ranks,
                       PositiveI64Attr:$num_microbatches,
                       OptionalAttr<StrAttr>:$schedule);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `rank` $rank `of` $num_ranks `microbatches` $num_microbatches
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name, "int64_t":$rank,
      "int64_t":$numRanks, "int64_t":$numMicrobatches)>];
}

// An op of a pipe.program body; every one acts for one microbatch
// (MicrobatchOpInterface). `microbatch` is how it implements the interface:
// the default reads its `microbatch` attribute.
class Pipe_ProgramBodyOp<string mnemonic, list<Trait> traits = [],
                         Trait microbatch = Pipe_MicrobatchOpInterface>
    : Pipe_Op<mnemonic,
              !listconcat(traits, [HasParent<"ProgramOp">, microbatch])>;

def Pipe_InputOp : Pipe_ProgramBodyOp<"input"> {
  let summary = "Reads one model argument for one microbatch.";
  let description = [{
    Produces model argument `argument` as seen by microbatch `microbatch`.
    For a weight this is the same tensor for every microbatch; for an input
    activation it is that microbatch's slice. The runtime decides which
    arguments are per-microbatch.

    ```mlir
    %x = pipe.input 0 microbatch 3 : tensor<1x784xf32>
    ```
  }];
  let arguments = (ins NonNegI64Attr:$argument, NonNegI64Attr:$microbatch);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $argument `microbatch` $microbatch attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Pipe_OutputOp : Pipe_ProgramBodyOp<"output"> {
  let summary = "Writes one model result of one microbatch.";
  let description = [{
    Writes `value` as model result `result` of microbatch `microbatch`.

    Without `reduce`, every microbatch's value is kept: the runtime writes the
    result stacked over microbatches, `[M, ...shape]`. With `reduce mean`
    the runtime averages the values of all `M` microbatches of a call
    (summing in double precision, so the order of the writes does not
    matter) and writes one tensor of the value's shape: the global-batch
    gradient of a training step is the mean of the microbatch gradients
    (equal-sized microbatches), and so is its loss. A `mean` result must
    be a floating-point tensor, and every microbatch's value must be written
    exactly once per call (the runtime checks).

    `name` (optional) names the result in the manifest and in the files of
    `pipeopt-run --save-grads` (`loss`, `grad_<i>` for the gradient of model
    argument `i`).

    Verified: `reduce mean` only on floating-point tensors; `name` not
    empty. Within one `pipe.program`, every `pipe.output` of one result
    carries the same `reduce` and `name`, two results do not share a name,
    and a `mean` result is written at most once per microbatch
    (`convert-pipe-to-runtime` checks the same across the programs of a
    pipeline, and that a `mean` result is written for every microbatch).

    ```mlir
    pipe.output %y result 0 microbatch 3 : tensor<1x10xf32>
    pipe.output %g result 1 microbatch 3 reduce mean name "grad_0"
        : tensor<10x10xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$value, NonNegI64Attr:$result,
                       NonNegI64Attr:$microbatch,
                       OptionalAttr<Pipe_OutputReduction>:$reduce,
                       OptionalAttr<StrAttr>:$name);
  let assemblyFormat = [{
    $value `result` $result `microbatch` $microbatch (`reduce` $reduce^)?
    (`name` $name^)? attr-dict `:` type($value)
  }];
  let builders = [
    // A result kept per microbatch (no reduction), without a name.
    OpBuilder<(ins "::mlir::Value":$value, "uint64_t":$result,
                   "uint64_t":$microbatch), [{
      build($_builder, $_state, value, result, microbatch,
            ::pipeopt::pipe::OutputReductionAttr(), ::mlir::StringAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def Pipe_ForwardOp : Pipe_ProgramBodyOp<"forward",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Runs the forward pass (F) of one stage on one microbatch.";
  let description = [{
    Calls the outlined stage function `callee` (a `func.func` with
    `pipe.stage = <stage>`) on `args` for microbatch `microbatch`. Operand
    and result types must match the callee's function type.

    ```mlir
    %y = pipe.forward @mlp_stage1(%x, %w) stage 1 microbatch 0
        : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, NonNegI64Attr:$stage,
                       NonNegI64Attr:$microbatch, Variadic<AnyType>:$args);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $callee `(` $args `)` `stage` $stage `microbatch` $microbatch attr-dict
    `:` functional-type($args, $results)
  }];
  let hasVerifier = 1;
}

def Pipe_BackwardOp : Pipe_ProgramBodyOp<"backward",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Runs (part of) the backward pass of one stage on one microbatch.";
  let description = [{
    `kind` is `full` (input and weight gradients, "B+W"), `input` (B: the
    gradient with respect to the stage's inputs, on the critical path) or
    `weight` (W: the gradient with respect to its weights, deferrable as in
    zero-bubble schedules).

    As pipe-schedule emits it, the op has no callee: operands are the
    incoming gradients (one per value the stage sends to a later stage, in
    the order of the stage graph's outgoing edges) and results the outgoing
    gradients (one per value the stage receives); a W has no results.
    Such a program can be verified and simulated but not executed.

    `pipe-materialize-backward` gives it a `callee`, a generated function
    that computes this action (docs/Training.md): the operands are then the
    callee's arguments (the forward's arguments and saved values, the
    incoming gradients and, for W, the B's stash) and the results its
    results: a `full` or `input` action's outgoing gradients come first,
    followed by the weight gradients (`full`) or the stash for W (`input`);
    a `weight` action's results are its weight gradients, which only
    `pipe.gradient` consumes. Operand and result types must match the
    callee's function type.

    ```mlir
    %gx = pipe.backward input stage 1 microbatch 0 ins(%gy : tensor<4x8xf32>)
        -> tensor<4x8xf32>
    %gx, %gw = pipe.backward full @s1_train_bw stage 1 microbatch 0
        ins(%x, %w, %gy : tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>)
        -> tensor<4x8xf32>, tensor<8x8xf32>
    ```
  }];
  let arguments = (ins Pipe_BackwardKind:$kind,
                       OptionalAttr<FlatSymbolRefAttr>:$callee,
                       NonNegI64Attr:$stage,
                       NonNegI64Attr:$microbatch, Variadic<AnyType>:$args);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $kind ($callee^)? `stage` $stage `microbatch` $microbatch
    (`ins` `(` $args^ `:` type($args) `)`)? attr-dict (`->` type($results)^)?
  }];
  let builders = [
    // The schedule's form, without a callee.
    OpBuilder<(ins "::mlir::TypeRange":$results,
                   "::pipeopt::pipe::BackwardKind":$kind, "uint64_t":$stage,
                   "uint64_t":$microbatch, "::mlir::ValueRange":$args), [{
      build($_builder, $_state, results, kind, ::mlir::FlatSymbolRefAttr(),
            stage, microbatch, args);
    }]>
  ];
  let hasVerifier = 1;
}

def Pipe_GradientOp : Pipe_ProgramBodyOp<"gradient"> {
  let summary = "Contributes one microbatch's gradient of a trainable model argument.";
  let description = [{
    Adds `value`, the gradient of the loss of microbatch `microbatch` with
    respect to model argument `argument` as computed by the backward of
    stage `stage`, to the runtime's gradient accumulator of that argument.
    A weight read by several stages (a tied embedding) gets one
    contribution per stage; they add. At the end of the iteration the
    runtime sums the contributions of all ranks, averages over the
    microbatches and applies the optimizer (docs/Runtime.md,
    "Training builds with parameters"). `value` has the argument's type and a
    floating-point element type.

    ```mlir
    pipe.gradient %gw argument 2 stage 1 microbatch 0 : tensor<8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$value, NonNegI64Attr:$argument,
                       NonNegI64Attr:$stage, NonNegI64Attr:$microbatch);
  let assemblyFormat = [{
    $value `argument` $argument `stage` $stage `microbatch` $microbatch
    attr-dict `:` type($value)
  }];
  let hasVerifier = 1;
}

def Pipe_SendOp : Pipe_ProgramBodyOp<"send", [
    MemoryEffects<[MemWrite<DefaultResource>]>],
    DeclareOpInterfaceMethods<Pipe_MicrobatchOpInterface,
                              ["getMicrobatchIndex"]>> {
  let summary = "Blocking send of a tensor to another rank.";
  let description = [{
    Sends `value` to rank `peer`. The matching `pipe.recv` on `peer` carries
    an equal `tag` and the same tensor type. The peer must be another rank of
    the same pipeline (`0 <= peer < num_ranks`, `peer != rank`).

    ```mlir
    pipe.send %y to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$value, NonNegI64Attr:$peer,
                       Pipe_TagAttr:$tag);
  let assemblyFormat = "$value `to` $peer $tag attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Pipe_RecvOp : Pipe_ProgramBodyOp<"recv", [
    MemoryEffects<[MemRead<DefaultResource>, MemWrite<DefaultResource>]>],
    DeclareOpInterfaceMethods<Pipe_MicrobatchOpInterface,
                              ["getMicrobatchIndex"]>> {
  let summary = "Blocking receive of a tensor from another rank.";
  let description = [{
    Receives the tensor that rank `peer` sends with an equal `tag`. The
    result type is the expected type; the runtime checks the arriving
    message's element type and shape against it.

    ```mlir
    %x = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins NonNegI64Attr:$peer, Pipe_TagAttr:$tag);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "`from` $peer $tag attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // PIPEOPT_DIALECT_PIPE_IR_PIPEOPS_TD
