//===- PipeBase.td - pipe dialect definition ---------------*- tablegen -*-===//
//
// Part of pipeopt. The `pipe` dialect describes pipeline-parallel programs:
// stages, the values flowing between them, and the per-device (per-rank)
// programs that a schedule produces.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_DIALECT_PIPE_IR_PIPEBASE_TD
#define PIPEOPT_DIALECT_PIPE_IR_PIPEBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Pipe_Dialect : Dialect {
  let name = "pipe";
  let cppNamespace = "::pipeopt::pipe";
  let summary = "Pipeline-parallel stages, schedules and point-to-point transfers.";
  let description = [{
    The `pipe` dialect is the IR of pipeopt. A model function (func + tosa or
    linalg on tensors) goes through three forms:

    1. **Partitioned.** Every op carries a discardable `pipe.stage` integer
       attribute (its pipeline stage) and optionally a `pipe.cost`
       (`#pipe.cost<...>`) attribute with its estimated cost.
    2. **Outlined.** Each stage is a `func.func @<f>_stage<k>` carrying
       `pipe.stage = k`; the original function becomes the *stage graph*: a
       sequence of `pipe.stage_call` ops whose SSA edges say which values flow
       from which stage to which (skip connections included).
    3. **Scheduled.** One `pipe.program` per rank (device) holds that rank's
       ordered actions for one iteration: `pipe.input`, `pipe.forward`,
       `pipe.backward`, `pipe.send`, `pipe.recv`, `pipe.output`. Program order
       is execution order; `pipe.send` / `pipe.recv` are blocking
       point-to-point transfers identified by a `#pipe.tag`.

    Terms follow the pipeline-parallelism literature: stage, rank, microbatch,
    F / B / W (forward, input-gradient, weight-gradient).
  }];
  // Discardable attributes the passes put on other dialects' ops (and on
  // func.func / builtin.module). Each gets a generated helper,
  // `PipeDialect::<Name>AttrHelper` (getNameStr(), getAttr(op), setAttr(op,
  // v), isAttrPresent(op), removeAttr(op)); verifyOperationAttribute()
  // checks the declared type of each and rejects pipe.* names that are not
  // declared here (a misspelled attribute would otherwise be ignored).
  //  - stage:            op of a partitioned function: its stage index (>= 0).
  //  - cost:             op: its `#pipe.cost` (pipe-partition's report).
  //  - remat:            op: recomputed in every stage that uses it
  //                      instead of being sent (cheap, replicated values).
  //  - num_stages:       partitioned function / stage graph: stage count.
  //  - stash_bytes:      pipe.forward / pipe.backward of a training program:
  //                      non-weight bytes still held for that (stage,
  //                      microbatch) after the action (bytes).
  //  - rank:             per-rank function made by convert-pipe-to-runtime
  //                      from a pipe.program (the rank it runs on).
  //  - gradient:         function differentiated by pipe-differentiate:
  //                      its `#pipe.gradient` (the generated functions,
  //                      `wrt`, `loss`, ...).
  //  - lifted_constants: function: argument indices pipe-lift-constants made
  //                      from constants (their initial values are .npy files).
  //  - trainable:        stage graph / loss function: model argument indices
  //                      that are trained.
  //  - optimizer:        module: the `#pipe.optimizer` the runtime applies
  //                      after each training step, written to the
  //                      manifest's "training" field by
  //                      convert-pipe-to-runtime.
  //  - auto_schedule:    module: the `#pipe.auto_schedule`, what
  //                      pipe-auto-schedule chose, read by pipeopt-compile
  //                      for the rest of the build.
  // (PipeAttributes.td documents the fields of the three.)
  let discardableAttrs = (ins
    "::mlir::IntegerAttr":$stage,
    "::pipeopt::pipe::CostAttr":$cost,
    "::mlir::UnitAttr":$remat,
    "::mlir::IntegerAttr":$num_stages,
    "::mlir::IntegerAttr":$stash_bytes,
    "::mlir::IntegerAttr":$rank,
    "::pipeopt::pipe::GradientAttr":$gradient,
    "::mlir::DenseI64ArrayAttr":$lifted_constants,
    "::mlir::DenseI64ArrayAttr":$trainable,
    "::pipeopt::pipe::OptimizerAttr":$optimizer,
    "::pipeopt::pipe::AutoScheduleAttr":$auto_schedule
  );
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    // Argument and result attributes of functions (checked by
    // verifyRegionArgAttribute / verifyRegionResultAttribute). The
    // discardable op attributes are declared in `discardableAttrs` above.
    /// Unit attribute on an argument of a stage (or model) function: the
    /// model argument it receives differs per microbatch, whatever
    /// convert-pipe-to-runtime's `microbatch-args` says (a training
    /// target).
    static constexpr ::llvm::StringLiteral getMicrobatchedAttrName() { return "pipe.microbatched"; }
    /// String attribute on a result of a model function: the name of the
    /// model result (`pipe.output ... name`; "loss", "grad_<i>").
    static constexpr ::llvm::StringLiteral getOutputNameAttrName() { return "pipe.output_name"; }
    /// String attribute on a result of a model function: how its
    /// microbatches' values combine; "mean" is the only value
    /// (`pipe.output ... reduce mean`).
    static constexpr ::llvm::StringLiteral getReduceAttrName() { return "pipe.reduce"; }
    /// Integer attribute on a result of a model function: the result is the
    /// gradient of model argument <value> for one microbatch; the
    /// single-stage program hands it to the runtime with `pipe.gradient`
    /// instead of writing it (pipeopt-compile --reference --train with an
    /// optimizer).
    static constexpr ::llvm::StringLiteral getGradientOfAttrName() { return "pipe.gradient_of"; }
    /// Integer attribute on an integer argument of a stage (or model)
    /// function: its values are class indices in [0, <value>) (a
    /// cross-entropy target, set by autodiff::buildLossFunction);
    /// convert-pipe-to-runtime writes "index_bound" and "class_indices" to
    /// the manifest and pipeopt-run checks the values it loads.
    static constexpr ::llvm::StringLiteral getClassCountAttrName() { return "pipe.class_count"; }
  }];
}

class Pipe_Op<string mnemonic, list<Trait> traits = []>
    : Op<Pipe_Dialect, mnemonic, traits>;

class Pipe_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Pipe_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

#endif // PIPEOPT_DIALECT_PIPE_IR_PIPEBASE_TD
