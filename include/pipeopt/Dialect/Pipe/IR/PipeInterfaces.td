//===- PipeInterfaces.td - pipe dialect op interfaces -------*- tablegen -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_DIALECT_PIPE_IR_PIPEINTERFACES_TD
#define PIPEOPT_DIALECT_PIPE_IR_PIPEINTERFACES_TD

include "mlir/IR/OpBase.td"

def Pipe_MicrobatchOpInterface : OpInterface<"MicrobatchOpInterface"> {
  let cppNamespace = "::pipeopt::pipe";
  let description = [{
    An op of a `pipe.program` body that acts for one microbatch: it reads a
    model argument (`pipe.input`), writes a result (`pipe.output`), runs an
    action (`pipe.forward`, `pipe.backward`), hands over a weight gradient
    (`pipe.gradient`) or moves a value between ranks (`pipe.send`,
    `pipe.recv`, whose `#pipe.tag` names the microbatch). Passes that read a
    program as a schedule table (pipe-verify-schedule, pipe-simulate,
    convert-pipe-to-runtime) ask this interface instead of switching over
    the op kinds.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/[{The microbatch this op acts for, in [0, num_microbatches)
                 of the enclosing program (the op verifiers check the
                 range).}],
      /*retTy=*/"int64_t",
      /*methodName=*/"getMicrobatchIndex",
      /*args=*/(ins),
      /*methodBody=*/[{}],
      /*defaultImplementation=*/[{
        return static_cast<int64_t>($_op.getMicrobatch());
      }]>
  ];
}

#endif // PIPEOPT_DIALECT_PIPE_IR_PIPEINTERFACES_TD
