// RUN: pipeopt %s -pipeopt-check-gpu-host | FileCheck %s

// Host code that only allocates, copies, launches kernels, calls the model's
// functions and the runtime ABI, and reads host constants, passes unchanged.
// CHECK-LABEL: func.func @ok
// CHECK: gpu.launch_func @k::@k
// CHECK: call @pipeopt_rt_gpu_matmul_f32
// CHECK: call @helper
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<2xindex>
module attributes {gpu.container_module} {
  memref.global "private" constant @sizes : memref<2xindex> = dense<[1, 2]>
  gpu.module @k {
    gpu.func @k(%m: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func private @pipeopt_rt_gpu_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64) -> i32
  func.func private @helper(%m: memref<4xf32>) {
    return
  }
  func.func @ok(%x: memref<4xf32>, %y: memref<*xf32>) -> index {
    %c1 = arith.constant 1 : index
    %c0 = arith.constant 0 : index
    %c0_i64 = arith.constant 0 : i64
    %d = gpu.alloc () : memref<4xf32>
    gpu.memcpy %d, %x : memref<4xf32>, memref<4xf32>
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%d : memref<4xf32>)
    %r = call @pipeopt_rt_gpu_matmul_f32(%y, %y, %y, %c0_i64, %c0_i64) : (memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64) -> i32
    call @helper(%d) : (memref<4xf32>) -> ()
    gpu.dealloc %d : memref<4xf32>
    %s = memref.get_global @sizes : memref<2xindex>
    %v = memref.load %s[%c0] : memref<2xindex>
    return %v : index
  }
}
