//===- Nccl.cpp - NCCL communicator (CUDA/NCCL loaded via dlopen) -*- C++
//-*-===//
//
// One rank per GPU. libcudart and libnccl are resolved at run time through
// the symbol table in cuda/NcclSymbols.def (docs/Design.md §4), so this file
// always compiles and the runtime has no link-time CUDA dependency.
//
// Protocol per message: ncclSend of the 128-byte MessageHeader, completed,
// then ncclSend of the payload (if any), completed. The receiver receives
// the header first, validates it, then receives exactly header.bytes. Host
// buffers are staged through a device buffer with cudaMemcpy (the compiled
// programs are CPU code). Completion is polled with cudaStreamQuery
// against a deadline; on timeout the communicator is aborted (ncclCommAbort)
// and a TimeoutError is thrown. NCCL sends therefore complete only when the
// peer receives (rendezvous), unlike loopback/MPI sends.
//
// Device payloads (cuda builds: sendDevice/recvDevice) are never staged
// through the host. A send first enqueues a device-to-device copy of the
// program's buffer into a communicator-owned staging buffer on the rank's
// compute stream (so it is ordered after the kernels that wrote the
// buffer, and the program may reuse the buffer at once), records an event
// there and makes the communicator's stream wait for it; the header goes
// out meanwhile, then the payload from the staging buffer. A receive gets
// the header, which the caller checks, and the payload into the receive
// staging buffer, which the caller copies into the program's buffer (on
// the compute stream, after this stream completed). Only the 128-byte
// header crosses host<->device. Sends still return when the peer has
// received (rendezvous, as for host payloads).
//
// Collectives (untested on a GPU: this machine has none; written against
// nccl.h of NCCL 2.28, whose constants and signatures NcclAbiCheck.cpp
// checks at build time): the host input is copied into a device buffer of
// the request's own (cudaMemcpy), the collective runs in place on the
// communicator's stream (ncclAllReduce; ncclReduceScatter with the output
// at this rank's block of the input; ncclAllGather with the input at this
// rank's block of the output), an event recorded after it marks
// completion; wait/test poll the event (with a deadline, aborting the
// communicator on timeout like the point-to-point waits) and copy the
// result to the host output. split is ncclCommSplit (NCCL >= 2.18, looked
// up at run time: a clear error without it); it is blocking, with no
// timeout of its own. A communicator's collectives and point-to-point
// messages share its one stream and NCCL communicator, so every rank must
// issue them in the same order (NCCL's rule), and a point-to-point wait
// also waits for the collectives started before it; use a sub-communicator
// (split) for collectives that overlap point-to-point traffic.
//
// NCCL does not allow two ranks of one communicator on the same GPU
// ("Duplicate GPU detected", ncclInvalidUsage); a rank may however send to
// itself: a self-send is queued on the host and executed together with the
// matching self-recv as one ncclGroupStart/End of ncclSend + ncclRecv.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Communicator.h"
#include "pipeopt/runtime/Device.h"
#include "pipeopt/runtime/Npy.h"

#include <dlfcn.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace pipeopt {
namespace rt {

namespace {

struct NcclUniqueIdRaw {
  char internal[128];
};

constexpr int kCudaSuccess = 0;
constexpr int kCudaErrorNotReady = 600;
constexpr int kCudaMemcpyHostToDevice = 1;
constexpr int kCudaMemcpyDeviceToHost = 2;
constexpr int kNcclSuccess = 0;
constexpr int kNcclInProgress = 7;
constexpr int kNcclUint8 = 1;
constexpr int kNcclFloat64 = 8;
constexpr int kNcclSum = 0;
/// ncclSend/ncclRecv appeared in NCCL 2.7.0.
constexpr int kMinNcclVersion = 2700;

constexpr int kCudaMemcpyDeviceToDevice = 3;
#define PIPEOPT_CUDA_SYM_FIELD(Name, Ret, Params) Ret(*Name) Params = nullptr;
constexpr unsigned kCudaEventDisableTiming = 0x02;

/// The CUDA runtime functions that only device payloads need (same
/// stand-in conventions as cuda/NcclSymbols.def; constants checked against
/// cuda_runtime_api.h / driver_types.h of CUDA 13: cudaMemcpyDeviceToDevice
/// 3, cudaEventDisableTiming 0x02).
#define PIPEOPT_NCCL_DEVICE_SYMS(X)                                            \
  X(cudaMemcpyAsync, int, (void *, const void *, size_t, int, void *))         \
  X(cudaEventCreateWithFlags, int, (void **, unsigned))                        \
  X(cudaEventRecord, int, (void *, void *))                                    \
  X(cudaStreamWaitEvent, int, (void *, void *, unsigned))                      \
  X(cudaEventDestroy, int, (void *))                                           \
  X(cudaEventQuery, int, (void *))

struct Symbols {
#define PIPEOPT_CUDA_SYM(Name, Ret, Params) Ret(*Name) Params = nullptr;
#define PIPEOPT_NCCL_SYM(Name, Ret, Params) Ret(*Name) Params = nullptr;
#include "cuda/NcclSymbols.def"
  PIPEOPT_NCCL_DEVICE_SYMS(PIPEOPT_CUDA_SYM_FIELD)
  /// ncclCommSplit (NCCL >= 2.18), or null: optional.
  int (*ncclCommSplit)(void *, int, int, void **, void *) = nullptr;
  std::string error; ///< empty if everything loaded
  int ncclVersion = 0;
  int cudaVersion = 0;
};

void *openFirst(const std::vector<std::string> &names, std::string &tried) {
  for (const auto &n : names) {
    if (n.empty())
      continue;
    if (void *h = dlopen(n.c_str(), RTLD_NOW | RTLD_GLOBAL))
      return h;
    const char *e = dlerror();
    tried += "\n  " + n + ": " + (e ? e : "not found");
  }
  return nullptr;
}

Symbols loadSymbols() {
  Symbols s;
  auto env = [](const char *v) {
    const char *p = std::getenv(v);
    return std::string(p ? p : "");
  };
  std::string tried;
  void *cudart = openFirst({env("PIPEOPT_CUDART_LIBRARY"), "libcudart.so.13",
                            "libcudart.so.12", "libcudart.so",
                            "/usr/local/cuda/lib64/libcudart.so"},
                           tried);
  if (!cudart) {
    s.error =
        "cannot load the CUDA runtime (set PIPEOPT_CUDART_LIBRARY):" + tried;
    return s;
  }
  void *nccl = openFirst({env("PIPEOPT_NCCL_LIBRARY"), "libnccl.so.2",
                          "libnccl.so", "/usr/local/cuda/lib64/libnccl.so.2"},
                         tried);
  if (!nccl) {
    s.error = "cannot load NCCL (set PIPEOPT_NCCL_LIBRARY):" + tried;
    return s;
  }
#define PIPEOPT_CUDA_SYM(Name, Ret, Params)                                    \
  s.Name = reinterpret_cast<Ret(*) Params>(dlsym(cudart, #Name));              \
  if (!s.Name) {                                                               \
    s.error = "libcudart lacks " #Name;                                        \
    return s;                                                                  \
  }
#define PIPEOPT_NCCL_SYM(Name, Ret, Params)                                    \
  s.Name = reinterpret_cast<Ret(*) Params>(dlsym(nccl, #Name));                \
  if (!s.Name) {                                                               \
    s.error = "libnccl lacks " #Name;                                          \
    return s;                                                                  \
  }
#include "cuda/NcclSymbols.def"
#define PIPEOPT_CUDA_SYM_LOAD(Name, Ret, Params)                               \
  s.Name = reinterpret_cast<Ret(*) Params>(dlsym(cudart, #Name));              \
  if (!s.Name) {                                                               \
    s.error = "libcudart lacks " #Name;                                        \
    return s;                                                                  \
  }
  PIPEOPT_NCCL_DEVICE_SYMS(PIPEOPT_CUDA_SYM_LOAD)
#undef PIPEOPT_CUDA_SYM_LOAD
  if (s.ncclGetVersion(&s.ncclVersion) != kNcclSuccess ||
      s.ncclVersion < kMinNcclVersion) {
    s.error = "NCCL version " + std::to_string(s.ncclVersion) +
              " is too old (point-to-point send/recv needs >= 2.7.0)";
    return s;
  }
  s.cudaRuntimeGetVersion(&s.cudaVersion);
  s.ncclCommSplit =
      reinterpret_cast<int (*)(void *, int, int, void **, void *)>(
          dlsym(nccl, "ncclCommSplit"));
  return s;
}

const Symbols &symbols() {
  static const Symbols s = loadSymbols();
  return s;
}

const Symbols &requireSymbols() {
  const Symbols &s = symbols();
  if (!s.error.empty())
    throw RuntimeError("NCCL backend unavailable: " + s.error);
  return s;
}

void checkCuda(int rc, const char *what) {
  if (rc != kCudaSuccess) {
    const char *msg =
        symbols().cudaGetErrorString ? symbols().cudaGetErrorString(rc) : "?";
    throw RuntimeError(std::string("CUDA: ") + what + " failed: " +
                       (msg ? msg : "?") + " (" + std::to_string(rc) + ")");
  }
}

void checkNccl(int rc, const char *what) {
  if (rc != kNcclSuccess && rc != kNcclInProgress) {
    const char *msg =
        symbols().ncclGetErrorString ? symbols().ncclGetErrorString(rc) : "?";
    throw RuntimeError(std::string("NCCL: ") + what + " failed: " +
                       (msg ? msg : "?") + " (" + std::to_string(rc) + ")");
  }
}

class NcclCommunicator;

/// A started NCCL collective (see the file comment).
class NcclRequest : public CollectiveRequest {
public:
  NcclRequest(NcclCommunicator &c, std::string what)
      : c(c), what(std::move(what)) {}
  ~NcclRequest() override;
  void wait(double timeoutS) override;
  bool test() override;

  void *dev = nullptr;   ///< the device buffer (input and output)
  void *event = nullptr; ///< recorded after the collective
  void *hostOut = nullptr;
  size_t outOffset = 0, outBytes = 0; ///< the output within dev

private:
  /// Copies the result to the host once the event has completed.
  bool finishIfReady();

  NcclCommunicator &c;
  std::string what;
  bool done = false;
  std::string error;
};

class NcclCommunicator : public Communicator {
  friend class NcclRequest;

public:
  NcclCommunicator(int rank, int size, const NcclId &id, int device)
      : s(requireSymbols()), myRank(rank), mySize(size), device(device) {
    checkCuda(s.cudaSetDevice(device), "cudaSetDevice");
    NcclUniqueIdRaw raw;
    std::memcpy(raw.internal, id.data(), sizeof(raw.internal));
    checkNccl(s.ncclCommInitRank(&comm, size, raw, rank), "ncclCommInitRank");
    checkCuda(s.cudaStreamCreate(&stream), "cudaStreamCreate");
  }
  /// A sub-communicator over `sub` (from ncclCommSplit; owned from now on)
  /// on the same device.
  NcclCommunicator(void *sub, int device)
      : s(requireSymbols()), myRank(0), mySize(1), device(device), comm(sub) {
    checkCuda(s.cudaSetDevice(device), "cudaSetDevice");
    checkNccl(s.ncclCommUserRank(comm, &myRank), "ncclCommUserRank");
    checkNccl(s.ncclCommCount(comm, &mySize), "ncclCommCount");
    checkCuda(s.cudaStreamCreate(&stream), "cudaStreamCreate");
  }
  ~NcclCommunicator() override {
    s.cudaSetDevice(device);
    if (comm)
      aborted ? s.ncclCommAbort(comm) : s.ncclCommDestroy(comm);
    if (stream)
      s.cudaStreamDestroy(stream);
    if (copied)
      s.cudaEventDestroy(copied);
    for (void *p : devBuf)
      if (p)
        s.cudaFree(p);
  }

  int rank() const override { return myRank; }
  int size() const override { return mySize; }
  std::string name() const override { return "nccl"; }

  void send(int dst, const MessageHeader &header, const void *data,
            size_t bytes, double timeoutS) override {
    checkUsable();
    if (dst < 0 || dst >= mySize)
      throw RuntimeError("NCCL: destination rank " + std::to_string(dst) +
                         " out of range");
    if (dst == myRank) {
      Message m;
      m.header = header;
      m.payload.assign(static_cast<const uint8_t *>(data),
                       static_cast<const uint8_t *>(data) + bytes);
      selfQueue.push_back(std::move(m));
      return;
    }
    checkCuda(s.cudaSetDevice(device), "cudaSetDevice");
    auto deadline = deadlineAfter(timeoutS);
    stage(0, &header, sizeof(header));
    checkNccl(
        s.ncclSend(devBuf[0], sizeof(header), kNcclUint8, dst, comm, stream),
        "ncclSend(header)");
    wait(deadline, timeoutS, dst, "to receive the header");
    if (bytes) {
      stage(0, data, bytes);
      checkNccl(s.ncclSend(devBuf[0], bytes, kNcclUint8, dst, comm, stream),
                "ncclSend(payload)");
      wait(deadline, timeoutS, dst, "to receive the payload");
    }
  }

  void sendDevice(int dst, const MessageHeader &header, const void *data,
                  size_t bytes, const Device &dev, double timeoutS) override {
    checkUsable();
    if (dst < 0 || dst >= mySize)
      throw RuntimeError("NCCL: destination rank " + std::to_string(dst) +
                         " out of range");
    checkDevice(dev);
    if (dst == myRank) {
      // To itself: the message keeps a device copy; recvDevice hands it
      // over without NCCL.
      Message m;
      m.header = header;
      if (bytes) {
        auto buf = std::make_shared<DeviceBuffer>(dev, bytes);
        dev.copy(buf->data(), data, bytes);
        m.devicePayload = buf->data();
        m.devicePayloadBytes = bytes;
        m.deviceOwner = std::move(buf);
      }
      selfQueue.push_back(std::move(m));
      return;
    }
    checkCuda(s.cudaSetDevice(device), "cudaSetDevice");
    auto deadline = deadlineAfter(timeoutS);
    if (bytes) {
      void *compute = dev.computeStream();
      if (!compute)
        throw RuntimeError("NCCL: a device payload from a thread that is not "
                           "bound to its device (no compute stream)");
      ensure(2, bytes);
      checkCuda(s.cudaMemcpyAsync(devBuf[2], data, bytes,
                                  kCudaMemcpyDeviceToDevice, compute),
                "cudaMemcpyAsync(D2D, into the send staging buffer)");
      if (!copied)
        checkCuda(s.cudaEventCreateWithFlags(&copied, kCudaEventDisableTiming),
                  "cudaEventCreateWithFlags");
      checkCuda(s.cudaEventRecord(copied, compute), "cudaEventRecord");
      checkCuda(s.cudaStreamWaitEvent(stream, copied, 0),
                "cudaStreamWaitEvent");
    }
    stage(0, &header, sizeof(header));
    checkNccl(
        s.ncclSend(devBuf[0], sizeof(header), kNcclUint8, dst, comm, stream),
        "ncclSend(header)");
    wait(deadline, timeoutS, dst, "to receive the header");
    if (bytes) {
      checkNccl(s.ncclSend(devBuf[2], bytes, kNcclUint8, dst, comm, stream),
                "ncclSend(payload)");
      wait(deadline, timeoutS, dst, "to receive the payload");
    }
  }

  Message recvDevice(int src, const Device &dev, double timeoutS) override {
    checkUsable();
    if (src < 0 || src >= mySize)
      throw RuntimeError("NCCL: source rank " + std::to_string(src) +
                         " out of range");
    checkDevice(dev);
    if (src == myRank) {
      if (selfQueue.empty())
        throw RuntimeError("NCCL: recv from this rank itself, but nothing "
                           "was sent to itself (a self-recv would deadlock)");
      Message m = std::move(selfQueue.front());
      selfQueue.pop_front();
      return m;
    }
    checkCuda(s.cudaSetDevice(device), "cudaSetDevice");
    auto deadline = deadlineAfter(timeoutS);
    Message m = recvHeader(src, deadline, timeoutS);
    if (m.header.bytes) {
      ensure(1, size_t(m.header.bytes));
      checkNccl(s.ncclRecv(devBuf[1], size_t(m.header.bytes), kNcclUint8, src,
                           comm, stream),
                "ncclRecv(payload)");
      wait(deadline, timeoutS, src, "to send the payload");
      m.devicePayload = devBuf[1];
      m.devicePayloadBytes = size_t(m.header.bytes);
    }
    return m;
  }

  Message recv(int src, double timeoutS) override {
    checkUsable();
    if (src < 0 || src >= mySize)
      throw RuntimeError("NCCL: source rank " + std::to_string(src) +
                         " out of range");
    checkCuda(s.cudaSetDevice(device), "cudaSetDevice");
    auto deadline = deadlineAfter(timeoutS);
    Message m;
    if (src == myRank) {
      if (selfQueue.empty())
        throw RuntimeError("NCCL: recv from this rank itself, but nothing "
                           "was sent to itself (a self-recv would deadlock)");
      Message sent = std::move(selfQueue.front());
      selfQueue.pop_front();
      selfExchange(&sent.header, &m.header, sizeof(MessageHeader), deadline,
                   timeoutS);
      m.payload.resize(sent.payload.size());
      if (!sent.payload.empty())
        selfExchange(sent.payload.data(), m.payload.data(), sent.payload.size(),
                     deadline, timeoutS);
      return m;
    }
    m = recvHeader(src, deadline, timeoutS);
    if (m.header.bytes) {
      ensure(1, size_t(m.header.bytes));
      checkNccl(s.ncclRecv(devBuf[1], size_t(m.header.bytes), kNcclUint8, src,
                           comm, stream),
                "ncclRecv(payload)");
      wait(deadline, timeoutS, src, "to send the payload");
      m.payload.resize(size_t(m.header.bytes));
      checkCuda(s.cudaMemcpy(m.payload.data(), devBuf[1], m.payload.size(),
                             kCudaMemcpyDeviceToHost),
                "cudaMemcpy(D2H)");
    }
    return m;
  }

  std::unique_ptr<Communicator> split(int color, int key, double) override {
    checkUsable();
    if (color < 0)
      throw RuntimeError("NCCL: split with color " + std::to_string(color) +
                         " (colors must be >= 0; every rank joins a new "
                         "communicator)");
    if (!s.ncclCommSplit)
      throw RuntimeError("NCCL: split needs ncclCommSplit (NCCL >= 2.18), "
                         "which this libnccl (version " +
                         std::to_string(s.ncclVersion) +
                         ") lacks; install a newer NCCL or set "
                         "PIPEOPT_NCCL_LIBRARY");
    checkCuda(s.cudaSetDevice(device), "cudaSetDevice");
    void *sub = nullptr;
    checkNccl(s.ncclCommSplit(comm, color, key, &sub, nullptr),
              "ncclCommSplit");
    return std::make_unique<NcclCommunicator>(sub, device);
  }

  std::unique_ptr<CollectiveRequest> startAllReduceSum(double *data,
                                                       size_t count) override {
    size_t bytes = count * sizeof(double);
    auto req = begin("all-reduce", count, " doubles", bytes, data, bytes);
    if (bytes)
      checkCuda(s.cudaMemcpy(req->dev, data, bytes, kCudaMemcpyHostToDevice),
                "cudaMemcpy(H2D)");
    checkNccl(s.ncclAllReduce(req->dev, req->dev, count, kNcclFloat64, kNcclSum,
                              comm, stream),
              "ncclAllReduce");
    return end(std::move(req));
  }

  std::unique_ptr<CollectiveRequest>
  startReduceScatterSum(const double *send, double *recv,
                        size_t blockCount) override {
    size_t block = blockCount * sizeof(double);
    auto req = begin("reduce-scatter", blockCount, "-double blocks",
                     block * size_t(mySize), recv, block);
    req->outOffset = block * size_t(myRank);
    if (block)
      checkCuda(s.cudaMemcpy(req->dev, send, block * size_t(mySize),
                             kCudaMemcpyHostToDevice),
                "cudaMemcpy(H2D)");
    // In place: the output is this rank's block of the input.
    checkNccl(s.ncclReduceScatter(
                  req->dev, static_cast<char *>(req->dev) + req->outOffset,
                  blockCount, kNcclFloat64, kNcclSum, comm, stream),
              "ncclReduceScatter");
    return end(std::move(req));
  }

  std::unique_ptr<CollectiveRequest>
  startAllGather(const void *send, void *recv, size_t blockBytes) override {
    size_t all = blockBytes * size_t(mySize);
    auto req = begin("all-gather", blockBytes, "-byte blocks", all, recv, all);
    char *mine = static_cast<char *>(req->dev) + blockBytes * size_t(myRank);
    if (blockBytes)
      checkCuda(s.cudaMemcpy(mine, send, blockBytes, kCudaMemcpyHostToDevice),
                "cudaMemcpy(H2D)");
    // In place: the input is this rank's block of the output.
    checkNccl(
        s.ncclAllGather(mine, req->dev, blockBytes, kNcclUint8, comm, stream),
        "ncclAllGather");
    return end(std::move(req));
  }

private:
  using Clock = std::chrono::steady_clock;

  /// A request with a device buffer of `devBytes` whose result (`outBytes`)
  /// goes to `hostOut`.
  std::unique_ptr<NcclRequest> begin(const char *kind, size_t count,
                                     const char *unit, size_t devBytes,
                                     void *hostOut, size_t outBytes) {
    checkUsable();
    checkCuda(s.cudaSetDevice(device), "cudaSetDevice");
    auto req = std::make_unique<NcclRequest>(
        *this, std::string(kind) + " #" + std::to_string(nextCollective++) +
                   " of " + std::to_string(count) + unit);
    checkCuda(s.cudaMalloc(&req->dev, devBytes ? devBytes : 1), "cudaMalloc");
    req->hostOut = hostOut;
    req->outBytes = outBytes;
    return req;
  }

  /// Records the completion event after the collective just enqueued.
  std::unique_ptr<CollectiveRequest> end(std::unique_ptr<NcclRequest> req) {
    checkCuda(s.cudaEventCreateWithFlags(&req->event, kCudaEventDisableTiming),
              "cudaEventCreateWithFlags");
    checkCuda(s.cudaEventRecord(req->event, stream), "cudaEventRecord");
    return req;
  }

  /// Receives and validates the header of the next message from `src`.
  Message recvHeader(int src, Clock::time_point deadline, double timeoutS) {
    Message m;
    ensure(1, sizeof(MessageHeader));
    checkNccl(s.ncclRecv(devBuf[1], sizeof(MessageHeader), kNcclUint8, src,
                         comm, stream),
              "ncclRecv(header)");
    wait(deadline, timeoutS, src, "to send the header");
    checkCuda(s.cudaMemcpy(&m.header, devBuf[1], sizeof(MessageHeader),
                           kCudaMemcpyDeviceToHost),
              "cudaMemcpy(D2H)");
    std::string bad = m.header.validate();
    if (!bad.empty())
      throw RuntimeError("NCCL: bad message header from rank " +
                         std::to_string(src) + ": " + bad);
    return m;
  }

  /// A device payload must be of the communicator's device.
  void checkDevice(const Device &dev) const {
    if (dev.id() != device)
      throw RuntimeError(
          "NCCL: rank " + std::to_string(myRank) + " is bound to CUDA device " +
          std::to_string(dev.id()) + " but its communicator uses device " +
          std::to_string(device));
  }

  static Clock::time_point deadlineAfter(double s) {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(s));
  }

  void checkUsable() const {
    if (aborted)
      throw RuntimeError("NCCL: communicator was aborted after an earlier "
                         "timeout or error");
  }

  /// Makes device buffer `which` at least `bytes` large.
  void ensure(int which, size_t bytes) {
    if (devSize[which] >= bytes && devBuf[which])
      return;
    if (devBuf[which])
      checkCuda(s.cudaFree(devBuf[which]), "cudaFree");
    devBuf[which] = nullptr;
    size_t n = bytes < 4096 ? 4096 : bytes;
    checkCuda(s.cudaMalloc(&devBuf[which], n), "cudaMalloc");
    devSize[which] = n;
  }

  /// Copies host bytes into device buffer `which`.
  void stage(int which, const void *src, size_t bytes) {
    ensure(which, bytes);
    checkCuda(s.cudaMemcpy(devBuf[which], src, bytes, kCudaMemcpyHostToDevice),
              "cudaMemcpy(H2D)");
  }

  /// Send to self + recv from self in one group.
  void selfExchange(const void *src, void *dst, size_t bytes,
                    Clock::time_point deadline, double timeoutS) {
    stage(0, src, bytes);
    ensure(1, bytes);
    checkNccl(s.ncclGroupStart(), "ncclGroupStart");
    int rc1 = s.ncclSend(devBuf[0], bytes, kNcclUint8, myRank, comm, stream);
    int rc2 = s.ncclRecv(devBuf[1], bytes, kNcclUint8, myRank, comm, stream);
    checkNccl(s.ncclGroupEnd(), "ncclGroupEnd");
    checkNccl(rc1, "ncclSend(self)");
    checkNccl(rc2, "ncclRecv(self)");
    wait(deadline, timeoutS, myRank, "(itself)");
    checkCuda(s.cudaMemcpy(dst, devBuf[1], bytes, kCudaMemcpyDeviceToHost),
              "cudaMemcpy(D2H)");
  }

  /// Polls the stream until idle; aborts the communicator on timeout.
  void wait(Clock::time_point deadline, double timeoutS, int peer,
            const char *what) {
    for (int spin = 0;; ++spin) {
      int rc = s.cudaStreamQuery(stream);
      if (rc == kCudaSuccess)
        return;
      if (rc != kCudaErrorNotReady)
        checkCuda(rc, "cudaStreamQuery");
      int async = kNcclSuccess;
      s.ncclCommGetAsyncError(comm, &async);
      if (async != kNcclSuccess && async != kNcclInProgress) {
        aborted = true;
        checkNccl(async, "asynchronous NCCL operation");
      }
      if (Clock::now() > deadline) {
        aborted = true;
        std::ostringstream os;
        os << "timed out after " << timeoutS << " s waiting for rank " << peer
           << " " << what << " (it stalled, died or never sends this "
           << "message); NCCL communicator aborted";
        throw TimeoutError(os.str());
      }
      if (spin > 1000)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  const Symbols &s;
  int myRank, mySize, device;
  void *comm = nullptr;
  void *stream = nullptr;
  /// [0] send staging of headers and host payloads, [1] receive staging,
  /// [2] send staging of device payloads.
  void *devBuf[3] = {nullptr, nullptr, nullptr};
  size_t devSize[3] = {0, 0, 0};
  /// Recorded on the compute stream after the copy into devBuf[2].
  void *copied = nullptr;
  bool aborted = false;
  std::deque<Message> selfQueue;
  uint64_t nextCollective = 0; ///< numbers collectives in errors
};

NcclRequest::~NcclRequest() {
  const Symbols &s = c.s;
  s.cudaSetDevice(c.device);
  // A collective still in flight may write into `dev`: it is freed only
  // once complete or the communicator aborted (otherwise leaked).
  bool complete =
      done || c.aborted || (event && s.cudaEventQuery(event) == kCudaSuccess);
  if (event)
    s.cudaEventDestroy(event);
  if (dev && complete)
    s.cudaFree(dev);
}

bool NcclRequest::finishIfReady() {
  const Symbols &s = c.s;
  int rc = s.cudaEventQuery(event);
  if (rc == kCudaErrorNotReady)
    return false;
  checkCuda(rc, "cudaEventQuery");
  if (outBytes)
    checkCuda(s.cudaMemcpy(hostOut, static_cast<char *>(dev) + outOffset,
                           outBytes, kCudaMemcpyDeviceToHost),
              "cudaMemcpy(D2H)");
  done = true;
  return true;
}

bool NcclRequest::test() {
  if (done)
    return true;
  if (!error.empty())
    throw RuntimeError(error);
  try {
    c.checkUsable();
    checkCuda(c.s.cudaSetDevice(c.device), "cudaSetDevice");
    return finishIfReady();
  } catch (const RuntimeError &e) {
    error = e.what();
    throw;
  }
}

void NcclRequest::wait(double timeoutS) {
  if (done)
    return;
  if (!error.empty())
    throw RuntimeError(error);
  auto deadline = NcclCommunicator::deadlineAfter(timeoutS);
  try {
    c.checkUsable();
    const Symbols &s = c.s;
    checkCuda(s.cudaSetDevice(c.device), "cudaSetDevice");
    for (int spin = 0;; ++spin) {
      if (finishIfReady())
        return;
      int async = kNcclSuccess;
      s.ncclCommGetAsyncError(c.comm, &async);
      if (async != kNcclSuccess && async != kNcclInProgress) {
        c.aborted = true;
        checkNccl(async, "asynchronous NCCL operation");
      }
      if (std::chrono::steady_clock::now() > deadline) {
        c.aborted = true;
        std::ostringstream os;
        os << "timed out after " << timeoutS << " s in " << what
           << " (a rank stalled, died or never starts this collective); "
              "NCCL communicator aborted";
        throw TimeoutError(os.str());
      }
      if (spin > 1000)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  } catch (const RuntimeError &e) {
    error = e.what();
    throw;
  }
}

} // namespace

std::string ncclAvailability() { return symbols().error; }

int cudaDeviceCount() {
  const Symbols &s = symbols();
  if (!s.error.empty())
    return 0;
  int n = 0;
  if (s.cudaGetDeviceCount(&n) != kCudaSuccess)
    return 0;
  return n;
}

NcclId ncclCreateId() {
  const Symbols &s = requireSymbols();
  NcclUniqueIdRaw raw;
  checkNccl(s.ncclGetUniqueId(&raw), "ncclGetUniqueId");
  NcclId id;
  std::memcpy(id.data(), raw.internal, id.size());
  return id;
}

std::unique_ptr<Communicator>
createNcclCommunicator(int rank, int size, const NcclId &id, int device) {
  if (rank < 0 || rank >= size)
    throw RuntimeError("NCCL: rank " + std::to_string(rank) +
                       " out of range for world size " + std::to_string(size));
  return std::make_unique<NcclCommunicator>(rank, size, id, device);
}

NcclId ncclExchangeIdViaFile(int rank, const std::string &path,
                             double timeoutS) {
  NcclId id;
  if (rank == 0) {
    id = ncclCreateId();
    // Written whole or not at all (a temporary renamed over `path`): the
    // other ranks poll for the file and must never read a partial id.
    writeFileAtomic(path, std::string(id.data(), id.size()),
                    FollowLinks::Never);
    return id;
  }
  auto start = std::chrono::steady_clock::now();
  while (true) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      in.read(id.data(), std::streamsize(id.size()));
      if (in.gcount() == std::streamsize(id.size()))
        return id;
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count() > timeoutS)
      throw TimeoutError("NCCL rendezvous: timed out after " +
                         std::to_string(timeoutS) +
                         " s waiting for rank 0 "
                         "to write the NCCL id to " +
                         path);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

} // namespace rt
} // namespace pipeopt
