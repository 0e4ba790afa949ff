// RUN: pipeopt %s -pipeopt-merge-gpu-modules | FileCheck %s --implicit-check-not=gpu.module
// RUN: pipeopt %s -pipeopt-merge-gpu-modules=module-name=k | FileCheck %s --check-prefix=NAMED

// Every kernel moves into one gpu.module where the first one was; kernels
// whose names clash are renamed, and each launch points at its kernel's new
// place. Other top-level symbols are untouched.
// CHECK: gpu.module @pipeopt_kernels_0 {
// CHECK-NEXT: gpu.func @f_kernel(%{{.*}}: memref<4xf32>) kernel
// CHECK: gpu.func @f_kernel_0(%{{.*}}: memref<4xf32>, %{{.*}}: f32) kernel
// CHECK: gpu.func @g_kernel() kernel
// CHECK: }
// CHECK-LABEL: func.func @f
// CHECK: gpu.launch_func @pipeopt_kernels_0::@f_kernel blocks
// CHECK: gpu.launch_func @pipeopt_kernels_0::@f_kernel_0 blocks
// CHECK: gpu.launch_func @pipeopt_kernels_0::@g_kernel blocks
// CHECK-LABEL: func.func @pipeopt_kernels()
// NAMED: gpu.module @k {
// NAMED: gpu.launch_func @k::@f_kernel_0 blocks
module attributes {gpu.container_module} {
  gpu.module @f_kernel {
    gpu.func @f_kernel(%m: memref<4xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @f_kernel_0 {
    gpu.func @f_kernel(%m: memref<4xf32>, %x: f32) kernel {
      gpu.return
    }
  }
  gpu.module @g_kernel {
    gpu.func @g_kernel() kernel {
      gpu.return
    }
  }
  func.func @f(%m: memref<4xf32>, %x: f32) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @f_kernel::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%m : memref<4xf32>)
    gpu.launch_func @f_kernel_0::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%m : memref<4xf32>, %x : f32)
    gpu.launch_func @g_kernel::@g_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
  // Takes the default name: the merged module is renamed.
  func.func @pipeopt_kernels() {
    return
  }
}
