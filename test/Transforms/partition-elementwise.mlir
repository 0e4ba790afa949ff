// RUN: pipeopt %s -pipe-partition="num-stages=1" | FileCheck %s --check-prefix=ONE
// RUN: pipeopt %s -pipe-partition="num-stages=3" | FileCheck %s --check-prefix=THREE
// RUN: not pipeopt %s -pipe-partition="num-stages=4" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FOUR

// A model of element-wise ops on its input alone. Such ops are normally
// rematerialized (duplicated into every stage that uses them), but a model
// output is produced by a stage, and when rematerialization would leave
// fewer placeable ops than stages, ops computed from arguments are placed.

// With one stage, abs and exp stay rematerializable; sin (the output) is
// placed.
// ONE: tosa.abs {{.*}}pipe.remat
// ONE: tosa.exp {{.*}}pipe.remat
// ONE: tosa.sin %{{[0-9]+}} {pipe.stage = 0 : i64}

// THREE: tosa.abs {{.*}}pipe.stage = 0
// THREE: tosa.exp {{.*}}pipe.stage = 1
// THREE: tosa.sin {{.*}}pipe.stage = 2

// FOUR: error: pipe-partition: cannot split 3 ops into 4 stages: use at most 3 stages (num-stages=3){{$}}

func.func @elementwise(%x: tensor<1x64x64xf32>) -> tensor<1x64x64xf32> {
  %a = tosa.abs %x : (tensor<1x64x64xf32>) -> tensor<1x64x64xf32>
  %b = tosa.exp %a : (tensor<1x64x64xf32>) -> tensor<1x64x64xf32>
  %c = tosa.sin %b : (tensor<1x64x64xf32>) -> tensor<1x64x64xf32>
  return %c : tensor<1x64x64xf32>
}
