// RUN: pipeopt %s -pipeopt-outline-repeats=min-ops=1 -verify-diagnostics -split-input-file

// A one-op repetition would become one call, found again: an error, not a
// pass that never ends.

// expected-error @below {{pipeopt-outline-repeats: min-ops must be at least 2, got 1}}
module {
  func.func private @k(memref<4xf32>)
  func.func @f(%x: memref<4xf32>) {
    call @k(%x) : (memref<4xf32>) -> ()
    call @k(%x) : (memref<4xf32>) -> ()
    return
  }
}
