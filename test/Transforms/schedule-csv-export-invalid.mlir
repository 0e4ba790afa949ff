// export-csv writes one schedule: a module with several stage graphs
// (pipe-schedule) or programs of several functions (pipe-verify-schedule)
// is rejected, and nothing is written.
// RUN: rm -f %t.csv
// RUN: not pipeopt %s --pipe-schedule="export-csv=%t.csv" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GRAPHS
// RUN: not test -e %t.csv
// RUN: pipeopt %s --pipe-schedule -o %t.two.mlir
// RUN: not pipeopt %t.two.mlir --pipe-verify-schedule="export-csv=%t.csv" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FUNCS
// RUN: not test -e %t.csv

// GRAPHS: error: pipe-schedule: export-csv writes one schedule, but the module has several stage graphs
// GRAPHS-NEXT: func.func @g(
// FUNCS: error: pipe-verify-schedule: export-csv writes one schedule, but the module has programs of several functions (@f, @g)
// FUNCS-NEXT: pipe.program @g_rank0

func.func @f_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @f_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 2 : i64} {
  %a = pipe.stage_call @f_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @f_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

func.func @g_stage0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 0 : i64} {
  return %x : tensor<4xf32>
}
func.func @g_stage1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stage = 1 : i64} {
  return %x : tensor<4xf32>
}
func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.num_stages = 2 : i64} {
  %a = pipe.stage_call @g_stage0(%x) stage 0 : (tensor<4xf32>) -> tensor<4xf32>
  %b = pipe.stage_call @g_stage1(%a) stage 1 : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}
