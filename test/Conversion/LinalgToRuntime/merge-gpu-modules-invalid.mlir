// RUN: pipeopt %s -pipeopt-merge-gpu-modules -verify-diagnostics

// A kernel module that already has a target was serialized for it; it
// cannot share one image with the others.
module attributes {gpu.container_module} {
  // expected-error @+1 {{pipeopt-merge-gpu-modules: gpu.module @a already has targets or an offloading handler; merge the kernel modules before nvvm-attach-target}}
  gpu.module @a [#nvvm.target<chip = "sm_90">] {
    gpu.func @a() kernel {
      gpu.return
    }
  }
  gpu.module @b {
    gpu.func @b() kernel {
      gpu.return
    }
  }
}
