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

#endif // PIPEOPT_DIALECT_PIPE_IR_PIPEATTRIBUTES_TD
