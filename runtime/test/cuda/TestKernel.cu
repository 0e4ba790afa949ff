//===- TestKernel.cu - A kernel image for the mgpu* tests -----------------===//
//
// Compiled to a fatbin (sm_90 + compute_90 PTX) at build time; the tests load
// it through mgpuModuleLoad as a model's global constructor would.
//
//===----------------------------------------------------------------------===//

#include <cstdint>

/// y[i] += a * x[i] for i < n.
extern "C" __global__ void pipeopt_test_axpy(float *y, const float *x, float a,
                                             int64_t n) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] += a * x[i];
}
