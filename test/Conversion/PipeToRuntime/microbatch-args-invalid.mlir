// Every diagnostic of the microbatch-args option of convert-pipe-to-runtime:
// an index that is not a model argument, a repeated index and an empty
// entry are errors (not accepted and silently ignored).
//
// RUN: split-file %s %t
// RUN: pipeopt %t/args3.mlir -convert-pipe-to-runtime=microbatch-args=99 -verify-diagnostics
// RUN: pipeopt %t/args3.mlir -convert-pipe-to-runtime=microbatch-args=3 -verify-diagnostics
// RUN: pipeopt %t/duplicate.mlir -convert-pipe-to-runtime=microbatch-args=0,0 -verify-diagnostics
// RUN: pipeopt %t/empty.mlir -convert-pipe-to-runtime=microbatch-args=, -verify-diagnostics
// RUN: pipeopt %t/empty-middle.mlir -convert-pipe-to-runtime="microbatch-args=0,,1" -verify-diagnostics
// RUN: pipeopt %t/gap.mlir -convert-pipe-to-runtime=microbatch-args=1 -verify-diagnostics
// RUN: pipeopt %t/mixed.mlir -convert-pipe-to-runtime="microbatch-args=auto,0" -verify-diagnostics
// RUN: pipeopt %t/negative.mlir -convert-pipe-to-runtime="microbatch-args=-1" -verify-diagnostics
//
// A non-zero exit with the diagnostic on stderr:
// RUN: not pipeopt %t/args3.mlir -convert-pipe-to-runtime=microbatch-args=99 -o /dev/null 2>&1 | FileCheck %s
// CHECK: error: microbatch-args: argument index 99 is not an argument the programs read; valid argument indices are 0 to 2
//
// The valid indices are accepted, and so are the keywords, an empty list
// (auto) and the option given through pipeopt-lower-to-llvm.
// RUN: pipeopt %t/args3.mlir -convert-pipe-to-runtime=microbatch-args=2,0 -o /dev/null
// RUN: pipeopt %t/args3.mlir -convert-pipe-to-runtime="microbatch-args=" -o /dev/null
// RUN: pipeopt %t/args3.mlir -convert-pipe-to-runtime=microbatch-args=all -o /dev/null
// RUN: pipeopt %t/args3.mlir -convert-pipe-to-runtime=microbatch-args=none -o /dev/null
// RUN: pipeopt %t/args3.mlir -convert-pipe-to-runtime="microbatch-args={0,2}" -o /dev/null
// RUN: not pipeopt %t/args3.mlir -pipeopt-lower-to-llvm="microbatch-args=0,0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPELINE
// PIPELINE: error: microbatch-args: argument index 0 is listed twice in '0,0'

//--- args3.mlir
// expected-error @+1 {{microbatch-args: argument index}}
pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %y = pipe.input 1 microbatch 0 : tensor<4xf32>
  %z = pipe.input 2 microbatch 0 : tensor<4xf32>
}

//--- duplicate.mlir
// expected-error @+1 {{microbatch-args: argument index 0 is listed twice in '0,0'}}
pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
}

//--- empty.mlir
// expected-error @+1 {{microbatch-args: empty entry in ',' (expected a comma-separated list of argument indices such as '0,3')}}
pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
}

//--- empty-middle.mlir
// expected-error @+1 {{microbatch-args: empty entry in '0,,1'}}
pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %y = pipe.input 1 microbatch 0 : tensor<4xf32>
}

//--- gap.mlir
// Argument 1 is never read: the readable ones are listed.
// expected-error @+1 {{microbatch-args: argument index 1 is not an argument the programs read; the programs read model arguments 0, 2}}
pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
  %z = pipe.input 2 microbatch 0 : tensor<4xf32>
}

//--- mixed.mlir
// A keyword is the only entry.
// expected-error @+1 {{microbatch-args: expected 'auto', 'all', 'none' or a comma-separated list of argument indices, got 'auto,0'}}
pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
}

//--- negative.mlir
// expected-error @+1 {{microbatch-args: expected 'auto', 'all', 'none' or a comma-separated list of argument indices, got '-1'}}
pipe.program @p_rank0 rank 0 of 1 microbatches 1 {
  %x = pipe.input 0 microbatch 0 : tensor<4xf32>
}
