// RUN: pipeopt %s -split-input-file -pipeopt-buffers-to-gpu -verify-diagnostics

// An alloca in a region that is no allocation scope (scf.if): its memory
// lives until the enclosing scope ends, which has no place for the
// gpu.dealloc here.
func.func @alloca_in_if(%c: i1, %x: f32) {
  scf.if %c {
    // expected-error @+1 {{--target=cuda: a memref.alloca whose parent is not an allocation scope cannot be placed in device memory}}
    %s = memref.alloca() : memref<4xf32>
    linalg.fill ins(%x : f32) outs(%s : memref<4xf32>)
  }
  return
}

// -----

memref.global "private" constant @strided : memref<4xf32, strided<[2]>> = dense<1.0>

func.func @strided_global(%out: memref<4xf32>) {
  // expected-error @+1 {{--target=cuda: cannot copy the global @strided of type 'memref<4xf32, strided<[2]>>' to the device (static identity layout expected)}}
  %g = memref.get_global @strided : memref<4xf32, strided<[2]>>
  memref.copy %g, %out : memref<4xf32, strided<[2]>> to memref<4xf32>
  return
}
