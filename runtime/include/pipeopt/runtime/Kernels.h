//===- Kernels.h - Threading of the library kernels -------------*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// The C ABI of the kernels is in pipeopt_runtime.h ("KERNELS"); this header
// is the launcher's side: how many threads one kernel call may use.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_KERNELS_H
#define PIPEOPT_RUNTIME_KERNELS_H

#include <string>
#include <vector>

namespace pipeopt {
namespace rt {

/// Sets the number of threads a kernel call (a GEMM) may use, for the whole
/// process (OpenBLAS keeps one setting per process; values below 1 mean 1).
/// pipeopt-run sets it once before running (--threads, default: this node's
/// cores divided by the ranks running on it), so that ranks sharing a node do
/// not oversubscribe its cores.
void setKernelThreads(int threads);

/// The threads a kernel call uses: what OpenBLAS reports after
/// setKernelThreads (it caps requests at the count it was built for), 1
/// for the fallback loops, else the value last given to setKernelThreads
/// (0 if never called).
int kernelThreads();

/// Cores this process may run on: its affinity mask (what mpirun binding and
/// taskset restrict), at least 1.
int usableCores();
/// The CPU ids of the calling thread's affinity mask, ascending (0 .. n-1
/// when the mask cannot be read).
std::vector<int> usableCpuIds();

/// The kernel threads per rank pipeopt-run uses when --threads is not given
/// (and pipeopt-calibrate measures with): `cores` (of this node, as this
/// process may use them) divided by `ranksOnNode`, rounded down, at least 1.
int defaultKernelThreads(int cores, int ranksOnNode);

/// The library behind the kernels, for reports: "OpenBLAS (SkylakeX
/// kernels)", or the built-in fallback loops when OpenBLAS cannot be loaded
/// (libopenblas.so.0, or the file named by PIPEOPT_BLAS_LIBRARY). Loads it
/// if that has not happened yet.
std::string kernelLibrary();

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_KERNELS_H
