// RUN: pipeopt %s -split-input-file -pipeopt-check-gpu-host -verify-diagnostics

// Data-dependent host control flow: the branch condition is read from a
// device buffer on the host.
func.func @branch_on_tensor(%flag: memref<i1>, %out: memref<4xf32>, %x: f32) {
  // expected-error @+1 {{reads device memory on the host, and --target=cuda cannot run it on the host (a tensor element used outside a kernel: the condition of an scf.if or scf.while, or a single element read with tensor.extract or written with tensor.insert into host code; compute it with linalg ops on tensors, or compile with --target=cpu)}}
  %c = memref.load %flag[] : memref<i1>
  scf.if %c {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{writes device memory on the host, and --target=cuda cannot run it on the host}}
    memref.store %x, %out[%c0] : memref<4xf32>
  }
  return
}

// -----

func.func private @erf(f64) -> f64

func.func @libm(%x: f64) -> f64 {
  // expected-error @+1 {{calls @erf, which is neither a function of the model nor the pipeopt runtime ABI, and --target=cuda cannot run it on the host}}
  %y = func.call @erf(%x) : (f64) -> f64
  return %y : f64
}

// -----

func.func @left_over(%x: memref<4xf32>) {
  // expected-error @+1 {{host memory operation left in a --target=cuda build (run pipeopt-buffers-to-gpu first); --target=cuda cannot run it on the host}}
  %a = memref.alloc() : memref<4xf32>
  // expected-error @+1 {{host memory operation left in a --target=cuda build}}
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  // expected-error @+1 {{host memory operation left in a --target=cuda build}}
  memref.dealloc %a : memref<4xf32>
  return
}

// -----

func.func @not_outlined(%x: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{gpu.launch not outlined (run gpu-kernel-outlining first); --target=cuda cannot run it on the host}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  return
}
