// RUN: pipeopt %s -convert-pipe-to-runtime="manifest=%t.json microbatch-args=0 input-views=false" | FileCheck %s
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.json
// RUN: pipeopt %s -convert-pipe-to-runtime="microbatch-args=none input-views=false" | FileCheck %s --check-prefix=NONE
// RUN: pipeopt %s -convert-pipe-to-runtime="microbatch-args=0" | FileCheck %s --check-prefix=VIEW
// RUN: pipeopt %s -convert-pipe-to-runtime="microbatch-args=0 target=cuda" | FileCheck %s --check-prefix=CUDA
// RUN: pipeopt %s -pipeopt-lower-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: pipeopt %s -pipeopt-lower-to-llvm=input-views=false | FileCheck %s --check-prefix=LLVM-COPY

// Two ranks, one microbatch each way. Checks the call sequence, the status
// checks (one per action), the declarations generated from
// RuntimeFunctions.def and the manifest.

func.func @f_stage0(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4xf32>
    attributes {pipe.stage = 0 : i64} {
  %e = tensor.empty() : tensor<2x4xf32>
  %y = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x4xf32>) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

func.func @f_stage1(%h: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {pipe.stage = 1 : i64} {
  return %h : tensor<2x4xf32>
}

// The stage graph is removed.
// CHECK-NOT: func.func @f(
func.func @f(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4xf32> attributes {pipe.num_stages = 2 : i64} {
  %h = pipe.stage_call @f_stage0(%x, %w) stage 0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %y = pipe.stage_call @f_stage1(%h) stage 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// Stage functions become private.
// CHECK-LABEL: func.func private @f_stage0

// Statuses are folded into the first nonzero one (select) and checked after
// every action's end; the check returns early (cf.cond_br to the exit).
// CHECK-LABEL: func.func @pipeopt_rank_0() -> i32
// CHECK:         %[[XB:.*]] = memref.alloc() : memref<2x4xf32>
// CHECK:         %[[XU:.*]] = memref.cast %[[XB]] : memref<2x4xf32> to memref<*xf32>
// CHECK:         %[[S0:.*]] = call @pipeopt_rt_input_f32(%{{.*}}, %{{.*}}, %[[XU]])
// CHECK-NOT:     cf.cond_br
// CHECK:         %[[X:.*]] = bufferization.to_tensor %[[XB]] restrict writable
// CHECK:         %[[S1:.*]] = call @pipeopt_rt_input_f32
// CHECK:         %[[E1:.*]] = arith.cmpi ne, %[[S0]], %{{.*}} : i32
// CHECK:         %[[P1:.*]] = arith.select %[[E1]], %[[S0]], %[[S1]] : i32
// CHECK:         %[[S2:.*]] = call @pipeopt_rt_action_begin
// CHECK:         %[[P2:.*]] = arith.select %{{.*}}, %[[P1]], %[[S2]] : i32
// CHECK-NOT:     cf.cond_br
// CHECK:         %[[Y:.*]] = call @f_stage0(%[[X]], %{{.*}})
// CHECK:         %[[S3:.*]] = call @pipeopt_rt_action_end
// CHECK:         %[[P3:.*]] = arith.select %{{.*}}, %[[P2]], %[[S3]] : i32
// CHECK:         %[[F3:.*]] = arith.cmpi ne, %[[P3]], %{{.*}} : i32
// CHECK:         cf.cond_br %[[F3]], ^[[EXIT:bb[0-9]+]](%[[P3]] : i32), ^bb1
// CHECK:       ^bb1:
// CHECK:         %[[YB:.*]] = bufferization.to_buffer %[[Y]] read_only : tensor<2x4xf32> to memref<2x4xf32, strided<[?, ?], offset: ?>>
// CHECK:         %[[YU:.*]] = memref.cast %[[YB]]
// CHECK:         %[[S4:.*]] = call @pipeopt_rt_send_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[YU]])
// CHECK:         cf.br ^[[EXIT]](%[[S4]] : i32)
// CHECK:       ^[[EXIT]](%[[ST:.*]]: i32):
// CHECK:         return %[[ST]] : i32
pipe.program @f_rank0 rank 0 of 2 microbatches 1 attributes {schedule = "forward-only"} {
  %x = pipe.input 0 microbatch 0 : tensor<2x4xf32>
  %w = pipe.input 1 microbatch 0 : tensor<4x4xf32>
  %h = pipe.forward @f_stage0(%x, %w) stage 0 microbatch 0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  pipe.send %h to 1 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @pipeopt_rank_1() -> i32
// CHECK:         %[[HB:.*]] = memref.alloc() : memref<2x4xf32>
// CHECK:         call @pipeopt_rt_recv_f32
// CHECK:         call @f_stage1
// CHECK:         call @pipeopt_rt_output_f32
pipe.program @f_rank1 rank 1 of 2 microbatches 1 attributes {schedule = "forward-only"} {
  %h = pipe.recv from 0 <forward, stage 0 -> 1, microbatch 0, value 0> : tensor<2x4xf32>
  %y = pipe.forward @f_stage1(%h) stage 1 microbatch 0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  pipe.output %y result 0 microbatch 0 : tensor<2x4xf32>
}

// Declarations: private, C interface, only what is used.
// CHECK-DAG: func.func private @pipeopt_rt_input_f32(i64, i64, memref<*xf32>) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @pipeopt_rt_send_f32(i64, i64, i64, i64, i64, i64, memref<*xf32>) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @pipeopt_rt_recv_f32(i64, i64, i64, i64, i64, i64, memref<*xf32>) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @pipeopt_rt_output_f32(i64, i64, memref<*xf32>) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @pipeopt_rt_action_begin(i64, i64, i64) -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @pipeopt_rt_action_end(i64, i64, i64) -> i32 attributes {llvm.emit_c_interface}
// The build's fingerprint and its manifest, exported for pipeopt-run.
// CHECK-DAG: func.func @pipeopt_module_hash() -> i64
// CHECK-DAG: memref.global "public" constant @pipeopt_manifest : memref<{{[0-9]+}}xi8> = dense<
// CHECK-NOT: pipe.

// MANIFEST: "entry_points": [
// MANIFEST-NEXT: "pipeopt_rank_0",
// MANIFEST-NEXT: "pipeopt_rank_1"
// MANIFEST: "inputs": [
// MANIFEST-NEXT:   {
// MANIFEST-NEXT:     "dtype": "f32",
// MANIFEST-NEXT:     "index": 0,
// MANIFEST-NEXT:     "microbatched": true,
// MANIFEST-NEXT:     "shape": [
// MANIFEST-NEXT:       2,
// MANIFEST-NEXT:       4
// MANIFEST-NEXT:     ]
// MANIFEST-NEXT:   },
// MANIFEST-NEXT:   {
// MANIFEST-NEXT:     "dtype": "f32",
// MANIFEST-NEXT:     "index": 1,
// MANIFEST-NEXT:     "microbatched": false,
// MANIFEST: "num_microbatches": 1,
// MANIFEST-NEXT: "num_ranks": 2,
// MANIFEST-NEXT: "num_stages": 2,
// MANIFEST-NEXT: "outputs": [
// MANIFEST-NEXT:   {
// MANIFEST-NEXT:     "dtype": "f32",
// MANIFEST-NEXT:     "index": 0,
// MANIFEST-NEXT:     "microbatched": true,
// MANIFEST: "schedule": "forward-only",
// MANIFEST-NEXT: "stage_rank": [
// MANIFEST-NEXT:   0,
// MANIFEST-NEXT:   1
// MANIFEST-NEXT: ]

// With microbatch-args=none every input is shared; it is still read once.
// NONE-LABEL: func.func @pipeopt_rank_0
// NONE-COUNT-2: call @pipeopt_rt_input_f32
// NONE-NOT: call @pipeopt_rt_input_f32
// NONE-LABEL: func.func @pipeopt_rank_1

// Input views (the default on the cpu target): each input is a read-only
// tensor over a placeholder global, one per (argument, microbatch, rank),
// with no runtime call (pipeopt-materialize-input-views adds it later);
// the first status is the action's.
// VIEW-DAG: memref.global "private" @pipeopt_input_view_a0_m0_r0 : memref<2x4xf32> {pipeopt.input_view = array<i64: 0, 0>}
// VIEW-DAG: memref.global "private" @pipeopt_input_view_a1_m0_r0 : memref<4x4xf32> {pipeopt.input_view = array<i64: 1, 0>}
// VIEW-LABEL: func.func @pipeopt_rank_0() -> i32
// VIEW-NOT:     pipeopt_rt_input
// VIEW:         %[[XB:.*]] = memref.get_global @pipeopt_input_view_a0_m0_r0 : memref<2x4xf32>
// VIEW-NEXT:    %[[X:.*]] = bufferization.to_tensor %[[XB]] restrict : memref<2x4xf32> to tensor<2x4xf32>
// VIEW:         %[[WB:.*]] = memref.get_global @pipeopt_input_view_a1_m0_r0 : memref<4x4xf32>
// VIEW-NEXT:    %[[W:.*]] = bufferization.to_tensor %[[WB]] restrict : memref<4x4xf32> to tensor<4x4xf32>
// VIEW:         call @pipeopt_rt_action_begin
// VIEW:         call @f_stage0(%[[X]], %[[W]])
// VIEW-LABEL: func.func @pipeopt_rank_1() -> i32
// VIEW-NOT: func.func private @pipeopt_rt_input_f32

// The cuda target keeps the copies (its buffers are device memory).
// CUDA-NOT: pipeopt.input_view
// CUDA: call @pipeopt_rt_input_f32
// CUDA-NOT: pipeopt.input_view

// The full CPU lowering leaves only the LLVM dialect. Views are calls that
// return the descriptor through a pointer (MLIR's C interface for memref
// results); no placeholder global is left.
// LLVM-NOT: pipeopt_input_view_a
// LLVM-LABEL: llvm.func @pipeopt_rank_0() -> i32
// LLVM: llvm.call @_mlir_ciface_pipeopt_rt_input_view_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, i64, i64, !llvm.ptr) -> ()
// LLVM-NOT: memref.
// LLVM-NOT: bufferization.
// LLVM-NOT: pipeopt_input_view_a

// LLVM-COPY-LABEL: llvm.func @pipeopt_rank_0() -> i32
// LLVM-COPY: llvm.call @_mlir_ciface_pipeopt_rt_input_f32
// LLVM-COPY-NOT: input_view
