//===- nccl-bandwidth.cpp - NCCL send/recv bandwidth for gpu-check.sh
//------===//
//
// Part of pipeopt. A small timing program for scripts/gpu-check.sh (the device
// check, docs/CUDA.md): measures what pipeopt's NCCL communicator rides on,
// with the same NCCL calls it makes (grouped ncclSend / ncclRecv of one
// buffer, lib/Nccl.cpp), on device buffers:
//
//   self-sendrecv   one rank on GPU 0 sending to itself (the only NCCL
//                   pattern one GPU allows: NCCL rejects two ranks of a
//                   communicator on one device);
//   d2d-copy        cudaMemcpyAsync device to device on GPU 0, the same
//                   bytes (what a self send/recv can at best reach);
//   p2p-sendrecv    with two or more GPUs: rank 0 on GPU 0 sends to rank 1
//                   on GPU 1 (ncclCommInitAll in this one process), i.e. the
//                   link between them.
//
// Each is run --warmup times, then timed over --iters repetitions with the
// host's steady clock between device synchronizations; the received bytes
// are checked (a fill pattern, first and last 4 KiB). Prints one line per
// measurement:
//
//   RESULT <name> bytes=<B> iters=<K> seconds=<T> bytes_per_s=<B*K/T>
//
// Exit status: 0 all measured, 1 a CUDA / NCCL error or wrong data (the
// message names the call), 2 bad usage or no CUDA device.
//
// Usage: nccl-bandwidth [--bytes N] [--iters K] [--warmup W]
//   (defaults 268435456, 20, 3; N a multiple of 4, >= 8192)
//
// Built by `scripts/gpu-check.sh prepare` with the host compiler against the
// CUDA toolkit's headers: the CUDA runtime linked statically, NCCL
// dynamically (libnccl.so.2, found on the device through LD_LIBRARY_PATH).
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const std::string &what) {
  std::fprintf(stderr, "nccl-bandwidth: error: %s\n", what.c_str());
  std::exit(1);
}

void checkCuda(cudaError_t e, const char *call) {
  if (e != cudaSuccess)
    die(std::string(call) + ": " + cudaGetErrorName(e) + ": " +
        cudaGetErrorString(e));
}

void checkNccl(ncclResult_t r, const char *call) {
  if (r != ncclSuccess)
    die(std::string(call) + ": " + ncclGetErrorString(r));
}

constexpr unsigned char kPattern = 0x5a;
constexpr size_t kProbe = 4096;

/// Checks that the first and last kProbe bytes of device buffer `buf` on
/// `device` hold kPattern.
void checkReceived(int device, const void *buf, size_t bytes,
                   const char *what) {
  checkCuda(cudaSetDevice(device), "cudaSetDevice");
  std::vector<unsigned char> head(kProbe), tail(kProbe);
  checkCuda(cudaMemcpy(head.data(), buf, kProbe, cudaMemcpyDeviceToHost),
            "cudaMemcpy (check, head)");
  checkCuda(cudaMemcpy(tail.data(),
                       static_cast<const unsigned char *>(buf) + bytes - kProbe,
                       kProbe, cudaMemcpyDeviceToHost),
            "cudaMemcpy (check, tail)");
  for (size_t i = 0; i < kProbe; ++i)
    if (head[i] != kPattern || tail[i] != kPattern)
      die(std::string(what) + ": received data differs from the sent data");
}

double seconds(std::chrono::steady_clock::time_point a,
               std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void report(const char *name, size_t bytes, int iters, double s) {
  std::printf("RESULT %s bytes=%zu iters=%d seconds=%.9g bytes_per_s=%.6g\n",
              name, bytes, iters, s, double(bytes) * iters / s);
  std::fflush(stdout);
}

long parseArg(const char *opt, const char *v, long lo) {
  char *end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (!*v || *end || x < lo) {
    std::fprintf(stderr,
                 "nccl-bandwidth: %s expects an integer >= %ld, got "
                 "'%s'\n",
                 opt, lo, v);
    std::exit(2);
  }
  return x;
}

} // namespace

int main(int argc, char **argv) {
  size_t bytes = size_t(256) << 20;
  int iters = 20, warmup = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--bytes" || a == "--iters" || a == "--warmup") && i + 1 < argc) {
      const char *v = argv[++i];
      if (a == "--bytes")
        bytes = size_t(parseArg("--bytes", v, 2 * kProbe));
      else if (a == "--iters")
        iters = int(parseArg("--iters", v, 1));
      else
        warmup = int(parseArg("--warmup", v, 0));
    } else {
      std::fprintf(stderr, "usage: nccl-bandwidth [--bytes N] [--iters K] "
                           "[--warmup W]\n");
      return 2;
    }
  }
  if (bytes % 4) {
    std::fprintf(stderr, "nccl-bandwidth: --bytes must be a multiple of 4\n");
    return 2;
  }
  const size_t count = bytes / 4; // ncclFloat elements

  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev < 1) {
    std::fprintf(stderr, "nccl-bandwidth: no CUDA device (%s)\n",
                 e == cudaSuccess ? "0 devices" : cudaGetErrorString(e));
    return 2;
  }
  int ncclVersion = 0, rtVersion = 0, drvVersion = 0;
  checkNccl(ncclGetVersion(&ncclVersion), "ncclGetVersion");
  checkCuda(cudaRuntimeGetVersion(&rtVersion), "cudaRuntimeGetVersion");
  checkCuda(cudaDriverGetVersion(&drvVersion), "cudaDriverGetVersion");
  std::printf("nccl-bandwidth: NCCL %d, CUDA runtime %d, driver %d, %d "
              "device(s), %zu bytes x %d iterations (+%d warm-up)\n",
              ncclVersion, rtVersion, drvVersion, ndev, bytes, iters, warmup);

  // Buffers on GPU 0 (and GPU 1 for p2p).
  const int nbuf = ndev >= 2 ? 2 : 1;
  void *send[2] = {nullptr, nullptr}, *recv[2] = {nullptr, nullptr};
  cudaStream_t stream[2] = {nullptr, nullptr};
  for (int d = 0; d < nbuf; ++d) {
    checkCuda(cudaSetDevice(d), "cudaSetDevice");
    checkCuda(cudaMalloc(&send[d], bytes), "cudaMalloc (send)");
    checkCuda(cudaMalloc(&recv[d], bytes), "cudaMalloc (recv)");
    checkCuda(cudaMemset(send[d], kPattern, bytes), "cudaMemset (send)");
    checkCuda(cudaStreamCreateWithFlags(&stream[d], cudaStreamNonBlocking),
              "cudaStreamCreateWithFlags");
  }
  auto now = [] { return std::chrono::steady_clock::now(); };

  // 1. Self send/recv: one rank, GPU 0.
  {
    checkCuda(cudaSetDevice(0), "cudaSetDevice");
    checkCuda(cudaMemset(recv[0], 0, bytes), "cudaMemset (recv)");
    checkCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    ncclUniqueId id;
    checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    ncclComm_t comm = nullptr;
    checkNccl(ncclCommInitRank(&comm, 1, id, 0), "ncclCommInitRank (1 rank)");
    auto once = [&] {
      checkNccl(ncclGroupStart(), "ncclGroupStart");
      checkNccl(ncclSend(send[0], count, ncclFloat, 0, comm, stream[0]),
                "ncclSend (self)");
      checkNccl(ncclRecv(recv[0], count, ncclFloat, 0, comm, stream[0]),
                "ncclRecv (self)");
      checkNccl(ncclGroupEnd(), "ncclGroupEnd");
    };
    for (int i = 0; i < warmup; ++i)
      once();
    checkCuda(cudaStreamSynchronize(stream[0]), "cudaStreamSynchronize");
    auto t0 = now();
    for (int i = 0; i < iters; ++i)
      once();
    checkCuda(cudaStreamSynchronize(stream[0]), "cudaStreamSynchronize");
    auto t1 = now();
    ncclResult_t async = ncclSuccess;
    checkNccl(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
    checkNccl(async, "self send/recv (asynchronous error)");
    checkReceived(0, recv[0], bytes, "self send/recv");
    report("self-sendrecv", bytes, iters, seconds(t0, t1));
    checkNccl(ncclCommDestroy(comm), "ncclCommDestroy");
  }

  // 2. Device-to-device copy on GPU 0.
  {
    checkCuda(cudaSetDevice(0), "cudaSetDevice");
    checkCuda(cudaMemset(recv[0], 0, bytes), "cudaMemset (recv)");
    checkCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    auto once = [&] {
      checkCuda(cudaMemcpyAsync(recv[0], send[0], bytes,
                                cudaMemcpyDeviceToDevice, stream[0]),
                "cudaMemcpyAsync");
    };
    for (int i = 0; i < warmup; ++i)
      once();
    checkCuda(cudaStreamSynchronize(stream[0]), "cudaStreamSynchronize");
    auto t0 = now();
    for (int i = 0; i < iters; ++i)
      once();
    checkCuda(cudaStreamSynchronize(stream[0]), "cudaStreamSynchronize");
    auto t1 = now();
    checkReceived(0, recv[0], bytes, "device-to-device copy");
    report("d2d-copy", bytes, iters, seconds(t0, t1));
  }

  // 3. GPU 0 -> GPU 1 over NCCL (two ranks in this process).
  if (ndev >= 2) {
    checkCuda(cudaSetDevice(1), "cudaSetDevice");
    checkCuda(cudaMemset(recv[1], 0, bytes), "cudaMemset (recv)");
    checkCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    ncclComm_t comms[2] = {nullptr, nullptr};
    const int devs[2] = {0, 1};
    checkNccl(ncclCommInitAll(comms, 2, devs), "ncclCommInitAll (2 ranks)");
    auto once = [&] {
      checkNccl(ncclGroupStart(), "ncclGroupStart");
      checkNccl(ncclSend(send[0], count, ncclFloat, 1, comms[0], stream[0]),
                "ncclSend (rank 0 -> 1)");
      checkNccl(ncclRecv(recv[1], count, ncclFloat, 0, comms[1], stream[1]),
                "ncclRecv (rank 1 <- 0)");
      checkNccl(ncclGroupEnd(), "ncclGroupEnd");
    };
    auto sync = [&] {
      for (int d = 0; d < 2; ++d) {
        checkCuda(cudaSetDevice(d), "cudaSetDevice");
        checkCuda(cudaStreamSynchronize(stream[d]), "cudaStreamSynchronize");
      }
    };
    for (int i = 0; i < warmup; ++i)
      once();
    sync();
    auto t0 = now();
    for (int i = 0; i < iters; ++i)
      once();
    sync();
    auto t1 = now();
    for (int d = 0; d < 2; ++d) {
      ncclResult_t async = ncclSuccess;
      checkNccl(ncclCommGetAsyncError(comms[d], &async),
                "ncclCommGetAsyncError");
      checkNccl(async, "p2p send/recv (asynchronous error)");
    }
    checkReceived(1, recv[1], bytes, "p2p send/recv");
    report("p2p-sendrecv", bytes, iters, seconds(t0, t1));
    for (auto c : comms)
      checkNccl(ncclCommDestroy(c), "ncclCommDestroy");
  }

  for (int d = 0; d < nbuf; ++d) {
    checkCuda(cudaSetDevice(d), "cudaSetDevice");
    checkCuda(cudaStreamDestroy(stream[d]), "cudaStreamDestroy");
    checkCuda(cudaFree(send[d]), "cudaFree");
    checkCuda(cudaFree(recv[d]), "cudaFree");
  }
  return 0;
}
