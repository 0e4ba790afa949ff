//===- NcclAbiCheck.cpp - Check NcclSymbols.def stand-ins -------*- C++ -*-===//
//
// Compiled only when cuda_runtime_api.h and nccl.h are found at configure
// time: checks that the constants and layouts Nccl.cpp hard-codes (it loads
// CUDA/NCCL with dlopen and includes no CUDA header) match the real headers.
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <type_traits>

static_assert(sizeof(ncclUniqueId) == 128, "ncclUniqueId size changed");
static_assert(ncclSuccess == 0, "ncclSuccess");
static_assert(ncclInProgress == 7, "ncclInProgress");
static_assert(ncclUint8 == 1, "ncclUint8");
static_assert(sizeof(ncclResult_t) == sizeof(int), "ncclResult_t size");
static_assert(sizeof(ncclDataType_t) == sizeof(int), "ncclDataType_t size");
static_assert(cudaSuccess == 0, "cudaSuccess");
static_assert(cudaErrorNotReady == 600, "cudaErrorNotReady");
static_assert(cudaMemcpyHostToDevice == 1, "cudaMemcpyHostToDevice");
static_assert(cudaMemcpyDeviceToHost == 2, "cudaMemcpyDeviceToHost");
static_assert(cudaMemcpyDeviceToDevice == 3, "cudaMemcpyDeviceToDevice");
static_assert(sizeof(cudaError_t) == sizeof(int), "cudaError_t size");
static_assert(std::is_pointer<cudaStream_t>::value, "cudaStream_t");
static_assert(std::is_pointer<ncclComm_t>::value, "ncclComm_t");

// The prototypes used through dlsym, with the real types.
static_assert(
    std::is_same<decltype(&ncclSend),
                 ncclResult_t (*)(const void *, size_t, ncclDataType_t, int,
                                  ncclComm_t, cudaStream_t)>::value,
    "ncclSend signature");
static_assert(std::is_same<decltype(&ncclRecv),
                           ncclResult_t (*)(void *, size_t, ncclDataType_t, int,
                                            ncclComm_t, cudaStream_t)>::value,
              "ncclRecv signature");
static_assert(
    std::is_same<decltype(&ncclCommInitRank),
                 ncclResult_t (*)(ncclComm_t *, int, ncclUniqueId, int)>::value,
    "ncclCommInitRank signature");

/// Referenced so the object file is not empty.
static_assert(ncclFloat64 == 8, "ncclFloat64");
static_assert(ncclSum == 0, "ncclSum");
static_assert(sizeof(ncclRedOp_t) == sizeof(int), "ncclRedOp_t size");
static_assert(std::is_same<decltype(&ncclAllReduce),
                           ncclResult_t (*)(const void *, void *, size_t,
                                            ncclDataType_t, ncclRedOp_t,
                                            ncclComm_t, cudaStream_t)>::value,
              "ncclAllReduce signature");
static_assert(std::is_same<decltype(&ncclReduceScatter),
                           ncclResult_t (*)(const void *, void *, size_t,
                                            ncclDataType_t, ncclRedOp_t,
                                            ncclComm_t, cudaStream_t)>::value,
              "ncclReduceScatter signature");
static_assert(
    std::is_same<decltype(&ncclAllGather),
                 ncclResult_t (*)(const void *, void *, size_t, ncclDataType_t,
                                  ncclComm_t, cudaStream_t)>::value,
    "ncclAllGather signature");
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= 21800
static_assert(std::is_same<decltype(&ncclCommSplit),
                           ncclResult_t (*)(ncclComm_t, int, int, ncclComm_t *,
                                            ncclConfig_t *)>::value,
              "ncclCommSplit signature");
#endif

extern "C" int pipeopt_rt_nccl_abi_checked(void) { return 1; }
