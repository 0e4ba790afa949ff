//===- PipeAttributes.td - pipe dialect attributes ---------*- tablegen -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_DIALECT_PIPE_IR_PIPEATTRIBUTES_TD
#define PIPEOPT_DIALECT_PIPE_IR_PIPEATTRIBUTES_TD

include "pipeopt/Dialect/Pipe/IR/PipeBase.td"
include "mlir/IR/EnumAttr.td"

def Pipe_Direction : I32EnumAttr<"Direction",
    "direction of a pipeline transfer", [
      I32EnumAttrCase<"Forward", 0, "forward">,
      I32EnumAttrCase<"Backward", 1, "backward">]> {
  let cppNamespace = "::pipeopt::pipe";
  let genSpecializedAttr = 0;
}

def Pipe_BackwardKind : I32EnumAttr<"BackwardKind",
    "which part of the backward pass an action computes", [
      I32EnumAttrCase<"Full", 0, "full">,
      I32EnumAttrCase<"Input", 1, "input">,
      I32EnumAttrCase<"Weight", 2, "weight">]> {
  let cppNamespace = "::pipeopt::pipe";
}

def Pipe_OutputReduction : I32EnumAttr<"OutputReduction",
    "how the microbatches' values of one model result are combined", [
      I32EnumAttrCase<"Mean", 0, "mean">]> {
  let cppNamespace = "::pipeopt::pipe";
}

def Pipe_TagAttr : Pipe_Attr<"Tag", "tag"> {
  let summary = "Identifies one point-to-point transfer of a pipeline step.";
  let description = [{
    A tag names the value a `pipe.send` / `pipe.recv` pair carries: the
    direction (activations flow `forward`, gradients `backward`), the stage
    that produces it and the stage that consumes it (non-adjacent for skip
    connections), the microbatch, and the index of the value among those that
    flow from `src` to `dst` (several tensors may cross one stage boundary).
    A send and a recv match when their tags are equal.

    ```mlir
    #pipe.tag<forward, stage 0 -> 1, microbatch 3, value 0>
    ```
  }];
  let parameters = (ins
    EnumParameter<Pipe_Direction>:$direction,
    "int64_t":$srcStage,
    "int64_t":$dstStage,
    "int64_t":$microbatch,
    "int64_t":$valueIndex);
  let assemblyFormat = [{
    `<` $direction `,` `stage` $srcStage `->` $dstStage `,` `microbatch`
    $microbatch `,` `value` $valueIndex `>`
  }];
  let genVerifyDecl = 1;
}

def Pipe_CostAttr : Pipe_Attr<"Cost", "cost"> {
  let summary = "Estimated or measured cost of an op or a stage.";
  let description = [{
    `flops` is the number of floating-point operations (FLOP), `bytes` the
    bytes read plus written, and `time` the estimated execution time in
    seconds on the device spec the cost model used. All three are finite and
    non-negative.

    ```mlir
    #pipe.cost<flops = 2.048e+06, bytes = 1.2e+04, time = 3.1e-07>
    ```
  }];
  let parameters = (ins APFloatParameter<"FLOP">:$flops,
                        APFloatParameter<"bytes read and written">:$bytes,
                        APFloatParameter<"seconds">:$time);
  let builders = [
    AttrBuilder<(ins "double":$flops, "double":$bytes, "double":$time), [{
      return $_get($_ctxt, ::llvm::APFloat(flops), ::llvm::APFloat(bytes),
                   ::llvm::APFloat(time));
    }]>
  ];
  let extraClassDeclaration = [{
    double getFlopsValue() const { return getFlops().convertToDouble(); }
    double getBytesValue() const { return getBytes().convertToDouble(); }
    double getTimeValue() const { return getTime().convertToDouble(); }
  }];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// The training contract: pipe.gradient, pipe.optimizer, pipe.auto_schedule
//===----------------------------------------------------------------------===//

def Pipe_LossKind : I32EnumAttr<"LossKind",
    "the loss pipe-differentiate appends to a model", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Self", 1, "self">,
      I32EnumAttrCase<"MSE", 2, "mse">,
      I32EnumAttrCase<"CrossEntropy", 3, "cross-entropy">]> {
  let cppNamespace = "::pipeopt::pipe";
  let genSpecializedAttr = 0;
}

def Pipe_OptimizerKind : I32EnumAttr<"OptimizerKind",
    "the update the runtime applies after each training step", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"SGD", 1, "sgd">,
      I32EnumAttrCase<"Momentum", 2, "momentum">,
      I32EnumAttrCase<"AdamW", 3, "adamw">]> {
  let cppNamespace = "::pipeopt::pipe";
  let genSpecializedAttr = 0;
}

// An enum parameter printed as a keyword, or as a string when its spelling
// is not a keyword ("cross-entropy"), so that every spelling round-trips.
class Pipe_EnumParameter<EnumAttrInfo info> : EnumParameter<info> {
  let printer = "$_printer.printKeywordOrString(" # info.cppNamespace # "::"
                # info.symbolToStringFnName # "($_self))";
}

// An f64 value (a FloatAttr, so that it hashes and uniques), written as a
// bare number: MLIR's float syntax, printed exactly (it round-trips).
class Pipe_F64Parameter<string desc> : AttrParameter<"::mlir::FloatAttr", desc> {
  let parser = [{[&]() -> ::mlir::FailureOr<::mlir::FloatAttr> {
      double value;
      if ($_parser.parseFloat(value))
        return ::mlir::failure();
      return ::mlir::FloatAttr::get(
          ::mlir::Float64Type::get($_parser.getContext()), value);
    }()}];
  let printer = "$_printer << $_self.getValueAsDouble()";
}

// An optional f64 value (absent: null).
class Pipe_OptionalF64Parameter<string desc> : Pipe_F64Parameter<desc> {
  let defaultValue = "::mlir::FloatAttr()";
}

// A list of argument indices, printed `[0, 2]`.
class Pipe_IndexListParameter<string desc>
    : AttrParameter<"::mlir::DenseI64ArrayAttr", desc> {
  let parser = [{[&]() -> ::mlir::FailureOr<::mlir::DenseI64ArrayAttr> {
      auto list = ::llvm::dyn_cast_or_null<::mlir::DenseI64ArrayAttr>(
          ::mlir::DenseI64ArrayAttr::parse($_parser, ::mlir::Type()));
      if (!list)
        return ::mlir::failure();
      return list;
    }()}];
  let printer = "$_self.print($_printer)";
}

// An optional list of argument indices (absent: null).
class Pipe_OptionalIndexListParameter<string desc>
    : Pipe_IndexListParameter<desc> {
  let defaultValue = "::mlir::DenseI64ArrayAttr()";
}

def Pipe_GradientAttr : Pipe_Attr<"Gradient", "gradient"> {
  let summary = "What pipe-differentiate generated for a function.";
  let description = [{
    Written by `pipe-differentiate` on each function it differentiates (the
    discardable attribute `pipe.gradient`); read by `pipeopt-compile
    --train` (the gradient and loss functions of the training step, the
    trainable and data arguments), by `pipeopt-gradcheck` (the loss and
    gradient functions it checks) and by `pipe-differentiate` itself (a
    function that has one is not differentiated again; the functions it
    names are not candidates).

    Fields (pipe-differentiate writes all of them, `loss_fn` and `grad`
    only with a loss; `loss` and `wrt` are required, the others may be
    left out of a hand-written attribute, e.g. one that names an existing
    gradient function for `pipeopt-gradcheck --use-existing-gradient`):
    - `loss`: the loss the generated functions end with: `none` (no loss:
      the gradients of the results are inputs of the backward), `self` (the
      function returns its own floating-point scalar loss), `mse` or
      `"cross-entropy"` (appended to result 0; a target argument follows
      the function's arguments).
    - `wrt`: the differentiated arguments (every floating-point tensor
      argument), ascending argument indices.
    - `trainable`: the subset of `wrt` that are weights (their gradients are
      computed by `w`, the others' by `b`).
    - `data`: the per-microbatch data arguments.
    - `seeded`: the results that take a gradient argument (d_result).
    - `num_saved`, `saved_bytes`: values the forward saves for the backward
      and their bytes per microbatch (non-weight arguments the backward
      reads included).
    - `num_stash`, `stash_bytes`: values B stashes for W and their bytes per
      microbatch.
    - `fwd`, `bwd`, `b`, `w`: the generated forward (F), backward (B+W),
      input-gradient (B) and weight-gradient (W) functions.
    - `loss_fn`, `grad`: with a loss (`loss` is not `none`), the loss
      function (the model's arguments, then the target for `mse` /
      `"cross-entropy"`; returns the f32 loss) and the gradient function
      (same arguments; returns the loss and the gradient of each `wrt`
      argument). `loss = none` names neither.

    ```mlir
    #pipe.gradient<loss = mse, wrt = [0, 1, 2], trainable = [1, 2],
                   data = [0], seeded = [0], num_saved = 2,
                   saved_bytes = 256, num_stash = 1, stash_bytes = 128,
                   fwd = @f_fwd, bwd = @f_bwd, b = @f_b, w = @f_w,
                   loss_fn = @f_loss, grad = @f_grad>
    ```
  }];
  let parameters = (ins
    Pipe_EnumParameter<Pipe_LossKind>:$loss,
    Pipe_IndexListParameter<"differentiated argument indices, ascending">:$wrt,
    Pipe_OptionalIndexListParameter<
        "trainable (weight) argument indices">:$trainable,
    Pipe_OptionalIndexListParameter<
        "per-microbatch data argument indices">:$data,
    Pipe_OptionalIndexListParameter<
        "result indices that take a gradient, ascending">:$seeded,
    OptionalParameter<"std::optional<int64_t>",
                      "values saved for the backward">:$num_saved,
    OptionalParameter<"std::optional<int64_t>",
                      "bytes saved per microbatch">:$saved_bytes,
    OptionalParameter<"std::optional<int64_t>",
                      "values B stashes for W">:$num_stash,
    OptionalParameter<"std::optional<int64_t>",
                      "bytes stashed per microbatch">:$stash_bytes,
    OptionalParameter<"::mlir::FlatSymbolRefAttr", "F">:$fwd,
    OptionalParameter<"::mlir::FlatSymbolRefAttr", "B+W">:$bwd,
    OptionalParameter<"::mlir::FlatSymbolRefAttr", "B">:$b,
    OptionalParameter<"::mlir::FlatSymbolRefAttr", "W">:$w,
    OptionalParameter<"::mlir::FlatSymbolRefAttr",
                      "the loss function (with a loss)">:$loss_fn,
    OptionalParameter<"::mlir::FlatSymbolRefAttr",
                      "the loss-and-gradients function (with a loss)">:$grad);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Pipe_OptimizerAttr : Pipe_Attr<"Optimizer", "optimizer"> {
  let summary = "The optimizer the runtime applies after each training step.";
  let description = [{
    Written on the module by `pipeopt-compile --train` (from `--optimizer`,
    `--lr`, `--momentum`, `--betas`, `--eps`, `--weight-decay` and the
    schedule) as the discardable attribute `pipe.optimizer`; read by
    `convert-pipe-to-runtime`, which writes it field by field to the
    manifest's "training" object (`kind` as "optimizer", the others under
    their own names) for the runtime (pipeopt-run's optimizers follow
    torch.optim.SGD / torch.optim.AdamW), and which re-reads the weights
    before every forward when `update_every` is set.

    The kind comes first; the hyper-parameters that apply to it follow, and
    only those:
    - `none`: no update (the step computes the loss and gradients); no
      hyper-parameter.
    - `sgd`: `lr`, `weight_decay`.
    - `momentum`: `lr`, `weight_decay`, `momentum`.
    - `adamw`: `lr`, `weight_decay`, `beta1`, `beta2`, `eps`.

    Ranges (the runtime's manifest reader enforces the same):
    `lr` (learning rate) and `weight_decay` (L2 added to the gradient for
    sgd / momentum, decoupled for adamw) finite and >= 0; `momentum` in
    [0, 1]; `beta1`, `beta2` (AdamW's moment decay rates) in [0, 1); `eps`
    (AdamW's denominator term) finite and > 0.

    `update_every` (any kind; absent: the update is synchronous, once per
    step after every microbatch's gradients) makes the update asynchronous:
    a stage's weights are updated after every `update_every` of its
    backward passes (1 for PipeDream, the stage count for PipeDream-2BW);
    in [1, 2^20], and it must divide the number of microbatches (checked by
    the runtime against the manifest).

    ```mlir
    #pipe.optimizer<adamw, lr = 1.000000e-03, weight_decay = 0.000000e+00,
                    beta1 = 9.000000e-01, beta2 = 9.990000e-01,
                    eps = 1.000000e-08>
    #pipe.optimizer<sgd, lr = 1.000000e-01, weight_decay = 0.000000e+00,
                    update_every = 2>
    #pipe.optimizer<none>
    ```
  }];
  let parameters = (ins
    Pipe_EnumParameter<Pipe_OptimizerKind>:$kind,
    Pipe_OptionalF64Parameter<"learning rate, >= 0">:$lr,
    Pipe_OptionalF64Parameter<"weight decay, >= 0">:$weight_decay,
    Pipe_OptionalF64Parameter<"momentum, in [0, 1]">:$momentum,
    Pipe_OptionalF64Parameter<"AdamW's beta1, in [0, 1)">:$beta1,
    Pipe_OptionalF64Parameter<"AdamW's beta2, in [0, 1)">:$beta2,
    Pipe_OptionalF64Parameter<"AdamW's epsilon, > 0">:$eps,
    OptionalParameter<"std::optional<int64_t>",
                      "backward passes per asynchronous update">:$update_every);
  let builders = [
    AttrBuilder<(ins "OptimizerKind":$kind, "std::optional<double>":$lr,
                     "std::optional<double>":$weight_decay,
                     "std::optional<double>":$momentum,
                     "std::optional<double>":$beta1,
                     "std::optional<double>":$beta2,
                     "std::optional<double>":$eps,
                     "std::optional<int64_t>":$update_every), [{
      auto f64 = [&](std::optional<double> v) {
        return v ? ::mlir::FloatAttr::get(::mlir::Float64Type::get($_ctxt), *v)
                 : ::mlir::FloatAttr();
      };
      return $_get($_ctxt, kind, f64(lr), f64(weight_decay), f64(momentum),
                   f64(beta1), f64(beta2), f64(eps), update_every);
    }]>
  ];
  let extraClassDeclaration = [{
    /// The value of an f64 field (std::nullopt: absent).
    static std::optional<double> valueOf(::mlir::FloatAttr field) {
      return field ? std::optional<double>(field.getValueAsDouble())
                   : std::nullopt;
    }
  }];
  let assemblyFormat = [{
    `<` $kind (`,` struct($lr, $weight_decay, $momentum, $beta1, $beta2, $eps,
                          $update_every)^)? `>`
  }];
  let genVerifyDecl = 1;
}

def Pipe_AutoScheduleAttr : Pipe_Attr<"AutoSchedule", "auto_schedule"> {
  let summary = "What pipe-auto-schedule chose.";
  let description = [{
    Written on the module by `pipe-auto-schedule` (the discardable attribute
    `pipe.auto_schedule`), which then partitions and schedules with it; read
    by `pipeopt-compile --schedule auto` for the rest of the build (the
    schedule and the microbatch count of the manifest and of the training
    step).

    - `schedule`: the schedule's name (a key of the schedule library, e.g.
      "1f1b", "zb-v").
    - `num_microbatches`: microbatches per iteration, > 0.
    - `virtual_stages`: model chunks per rank, >= 1.
    - `num_stages`: model stages the function is partitioned into, >= 1.
    - `makespan_s`: the simulated time of one iteration (seconds, event
      level), finite and >= 0.

    ```mlir
    #pipe.auto_schedule<schedule = "zb-v", num_microbatches = 16,
                        virtual_stages = 2, num_stages = 4,
                        makespan_s = 1.3109414999999994E-4>
    ```
  }];
  let parameters = (ins
    StringRefParameter<"schedule name">:$schedule,
    "int64_t":$num_microbatches,
    "int64_t":$virtual_stages,
    "int64_t":$num_stages,
    Pipe_F64Parameter<"seconds per iteration (simulated)">:$makespan_s);
  let builders = [
    AttrBuilder<(ins "::llvm::StringRef":$schedule, "int64_t":$num_microbatches,
                     "int64_t":$virtual_stages, "int64_t":$num_stages,
                     "double":$makespan_s), [{
      return $_get($_ctxt, schedule, num_microbatches, virtual_stages,
                   num_stages,
                   ::mlir::FloatAttr::get(::mlir::Float64Type::get($_ctxt),
                                          makespan_s));
    }]>
  ];
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // PIPEOPT_DIALECT_PIPE_IR_PIPEATTRIBUTES_TD
