// RUN: pipeopt %s -split-input-file -pipeopt-materialize-input-views -verify-diagnostics

// expected-error @+1 {{'pipeopt.input_view' must be array<i64: argument, microbatch> with both >= 0}}
memref.global "private" @v : memref<4xf32> {pipeopt.input_view = array<i64: 1>}

// -----

// expected-error @+1 {{'pipeopt.input_view' must be array<i64: argument, microbatch> with both >= 0}}
memref.global "private" @v : memref<4xf32> {pipeopt.input_view = array<i64: -1, 0>}

// -----

// expected-error @+1 {{'pipeopt.input_view' must be array<i64: argument, microbatch> with both >= 0}}
memref.global "private" @v : memref<4xf32> {pipeopt.input_view = "x"}

// -----

// expected-error @+1 {{input view placeholder must be a private declaration (no initial value) of a statically shaped memref with the identity layout in the default memory space, got 'memref<4xf32>'}}
memref.global "private" @v : memref<4xf32> = dense<0.0> {pipeopt.input_view = array<i64: 0, 0>}

// -----

// expected-error @+1 {{input view placeholder must be a private declaration (no initial value) of a statically shaped memref with the identity layout in the default memory space, got 'memref<4xf32, strided<[2]>>'}}
memref.global "private" @v : memref<4xf32, strided<[2]>> {pipeopt.input_view = array<i64: 0, 0>}

// -----

// expected-error @+1 {{input view of element type 'f8E4M3FN': the runtime carries f32, f64, f16, bf16, i64, i32, i8, i1}}
memref.global "private" @v : memref<4xf8E4M3FN> {pipeopt.input_view = array<i64: 0, 0>}
