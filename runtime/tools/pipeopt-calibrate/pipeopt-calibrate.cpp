//===- pipeopt-calibrate.cpp - Measure this host for the cost model -------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// Measures this machine through the same kernels and communicator that
// compiled models use, and writes a machine JSON (docs/CostModel.md,
// "Machine JSON"; base preset "cpu") for pipe-partition / pipe-simulate
// hardware=<file>:
//
//   cores                 the host's online cores (sysconf), informational
//   peak_flops.{f32,f64}  GEMM through pipeopt_rt_matmul_<T> (OpenBLAS), the
//                         median (--statistic) of 512^3 products, measured
//                         in 49 rounds (9 with --quick) interleaved with the
//                         operand shapes below (calibration RoundTimes: a
//                         disturbance slows a minority of each kernel's
//                         calls, and the fit sees both kernels in the same
//                         conditions; a warning when the rounds disagree),
//                         FLOP/s per rank
//   vector_flops.f32      an in-cache multiply-add loop (median repetition),
//                         FLOP/s per rank
//   memory_bandwidth      memcpy of 64 MiB (median repetition): (bytes read +
//                         bytes written) / s, the cost model's byte count
//   contraction_operand_bandwidth
//                         GEMMs with few rows (16 and 32 x 256^2 and 512^2,
//                         f32), each call on the next of enough distinct
//                         weight matrices that its weight is no longer in
//                         this core's L2 (together 4 x cache_bytes): their
//                         time beyond FLOP / peak_flops.f32, fitted as bytes
//                         read per second (the kernel packing its operands;
//                         calibration fitOperandBandwidth; omitted when the
//                         thin GEMMs are not slower per FLOP). A pipeline
//                         rank finds its weights so at each action after a
//                         wait in recv: its idle core loses its private
//                         caches (docs/Runtime.md, "Operands after a wait").
//                         --warm-operands: the weights in L2 (a rank that
//                         never waits)
//   cache_bytes           one core's L2 cache (sysconf; 1 MiB when unknown)
//   cache_bandwidth       memcpy within it (a quarter of it copied, median
//                         repetition), counted as memory_bandwidth is: ops
//                         whose bytes fit cache_bytes move them at this rate
//   input_copy_bandwidth  only with --input-copies (builds compiled with
//                         --input-views=false, and asynchronous training,
//                         which copy the shared inputs at every call;
//                         other CPU builds read them in place, and nothing
//                         is charged): the runtime's per-iteration copies
//                         of shared inputs
//                         (weights) into the program's buffers: 8 shared
//                         1 MiB f32 inputs read through pipeopt_rt_input_f32
//                         into freshly malloc'ed buffers, each round after
//                         64 MiB written elsewhere (an iteration's compute
//                         evicts the weights from the caches; median
//                         round), counted as memory_bandwidth is
//   op_overhead_s         one small library call (8 x 8 x 8 GEMM, median)
//   gradient_accumulate_s_per_element
//                         the runtime's host gradient accumulation of a
//                         training step (pipeopt_rt_gradient: a fresh host
//                         copy, then rt::addToSum in double) on a 256 x 256
//                         f32 gradient, median call, per element, each
//                         call after 2 x cache_bytes written elsewhere
//                         (the rank's other actions run in between)
//   optimizer_s_per_element.{none,sgd,momentum,adamw}
//                         the runtime's end-of-step host update of that
//                         parameter (reduceAndUpdate's copies, sum and
//                         mean, rt::tensorToDoubles, rt::optimizerStep,
//                         rt::doublesToTensor), median call, per element,
//                         caches evicted as above
//   topology.cores_per_node
//                         the cores the node's ranks get together: R rank
//                         threads each run two 128^3 GEMMs from a common
//                         start; R x (one thread's time) / (their time), both
//                         the fastest of repeated bursts, is the number of
//                         ranks' worth of full speed the node delivers (2
//                         for 4 ranks on 2 cores; at most min(R, cores)).
//                         The event simulator shares it among the busy
//                         ranks.
//   topology.pin_ranks    true when the loopback ranks outnumber the cores:
//                         pipeopt-run then pins them (--pin-ranks auto),
//                         and the event level shares each core only among
//                         its ranks
//   topology.intra_node   loopback ping-pong: latency (8-byte messages, half
//                         the round trip) and bandwidth (16 MiB messages);
//                         with --comm mpi (run under `mpirun -np 2`) the
//                         same ping-pong between the two MPI processes, the
//                         link pipeopt-run --comm=mpi uses on this node.
//                         Loopback: the latency is that of a receiver asleep
//                         in its recv when that is longer (below)
//   topology.intra_node.sender_overhead_s
//                         loopback only: messages of 4 KiB through the
//                         runtime's send and recv (calls recorded as under
//                         --profile) to a receiver asleep in its recv, each
//                         after a 300 us pause, answered at once, sender and
//                         receiver pinned to one core (the receiver wakes
//                         onto a busy core): the median time in the send
//                         call (the event simulator charges it to the
//                         sender) and the median time from the call's start
//                         until the receiver's recv returns
//                         (intra_node.latency_s when above the ping-pong's)
//   topology.intra_node.idle_receiver_latency_s,
//   topology.intra_node.idle_receiver_sender_overhead_s
//                         the same with the receiver pinned to a second core
//                         that idles during the pause (when the process may
//                         use two): waking an idle core costs the sender and
//                         the message more (on a VM, a halted vCPU); the
//                         event level charges these when the receiver's
//                         core runs nothing at the send
//
// With --ranks R (the ranks that will share this node), each rank gets
// max(1, cores / R) BLAS threads, as pipeopt-run gives it. The rates are
// those of one rank running alone on its threads: the median repetition,
// the typical call, since the prediction is of the median iteration (the
// calls of a pipeline meet the same interrupts and cache states); with
// --statistic fastest the fastest, a call nothing preempted (5-10% faster
// on this VM). When R exceeds the cores, ranks that are busy at the same time
// share cores and each runs slower; cores_per_node lets pipe-simulate's
// event level model that at every moment (k busy ranks on c cores each run
// at min(1, c / k), docs/CostModel.md). --shared-cores instead scales the
// rates by cores / R (the worst case, all ranks busy) and writes no
// cores_per_node.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/ArgParser.h"
#include "pipeopt/runtime/Calibration.h"
#include "pipeopt/runtime/Communicator.h"
#include "pipeopt/runtime/Context.h"
#include "pipeopt/runtime/Kernels.h"
#include "pipeopt/runtime/Npy.h"
#include "pipeopt/runtime/Optimizer.h"
#include "pipeopt/runtime/Reduce.h"
#include "pipeopt/runtime/Types.h"
#include "pipeopt/runtime/pipeopt_runtime.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <pthread.h>
#include <sched.h>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace pipeopt::rt;

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// Wall times of `reps` calls of f, in call order.
template <typename F>
std::vector<double> callTimes(int reps, F &&f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = Clock::now();
    f();
    t.push_back(seconds(a, Clock::now()));
  }
  return t;
}

/// Wall times of `reps` calls of f (after one warm-up call), sorted.
template <typename F>
std::vector<double> sortedTimes(int reps, F &&f) {
  f();
  std::vector<double> t = callTimes(reps, f);
  std::sort(t.begin(), t.end());
  return t;
}

/// Median wall time of `reps` calls of f (after one warm-up call).
template <typename F>
double medianTime(int reps, F &&f) {
  return upperMedian(sortedTimes(reps, f));
}

/// Fastest of `reps` calls of f (after one warm-up call): the time of a
/// call that nothing preempted.
template <typename F>
double fastestTime(int reps, F &&f) {
  return sortedTimes(reps, f).front();
}

/// Why `path` cannot be written (created, or replaced), or "" when it can:
/// a directory, no write permission on it, or on the directory that would
/// hold it, or a missing directory.
std::string unwritableReason(const std::string &path) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return std::strerror(EISDIR);
    return access(path.c_str(), W_OK) == 0 ? "" : std::strerror(errno);
  }
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "."
                    : slash == 0               ? "/"
                                               : path.substr(0, slash);
  return access(dir.c_str(), W_OK | X_OK) == 0 ? "" : std::strerror(errno);
}

/// A rank-2 memref descriptor as llvm.emit_c_interface passes it.
template <typename T>
struct MemRef2 {
  struct {
    T *allocated, *aligned;
    int64_t offset, sizes[2], strides[2];
  } desc;
  pipeopt_rt_unranked_memref unranked;
  MemRef2(T *data, int64_t rows, int64_t cols) {
    desc = {data, data, 0, {rows, cols}, {cols, 1}};
    unranked = {2, &desc};
  }
};

/// An m x k times k x n GEMM through the kernel that compiled models call.
template <typename T>
struct Gemm {
  std::vector<T> a, b, c;
  MemRef2<T> am, bm, cm;
  explicit Gemm(int64_t n) : Gemm(n, n, n) {}
  Gemm(int64_t m, int64_t k, int64_t n)
      : a(size_t(m * k), T(0.5)), b(size_t(k * n), T(0.25)),
        c(size_t(m * n), T(0)), am(a.data(), m, k), bm(b.data(), k, n),
        cm(c.data(), m, n) {}
  void operator()() {
    int32_t rc;
    if constexpr (std::is_same_v<T, float>)
      rc = _mlir_ciface_pipeopt_rt_matmul_f32(&am.unranked, &bm.unranked,
                                              &cm.unranked, 0, 0);
    else
      rc = _mlir_ciface_pipeopt_rt_matmul_f64(&am.unranked, &bm.unranked,
                                              &cm.unranked, 0, 0);
    if (rc != 0)
      throw RuntimeError("the GEMM kernel failed");
  }
};

/// Fastest (`fastest`) or median time of one n^3 GEMM over `reps` calls.
template <typename T>
double gemmTime(int64_t n, int reps, bool fastest) {
  Gemm<T> g(n);
  return fastest ? fastestTime(reps, g) : medianTime(reps, g);
}

/// An m x k x n f32 GEMM whose k x n operand, the weight, is out of this
/// core's L2 cache at each call when `cold`: the calls cycle over distinct
/// weights of together at least 4 x cacheBytes, so that each was evicted
/// (least recently used) before its next call. The m x k operand (an
/// activation, written just before in a pipeline) and the result stay the
/// same.
class ThinGemm {
public:
  // The descriptors point into this object's vectors: never copied or
  // moved.
  ThinGemm(const ThinGemm &) = delete;
  ThinGemm &operator=(const ThinGemm &) = delete;
  ThinGemm(int64_t m, int64_t k, int64_t n, bool cold, size_t cacheBytes)
      : m(m), k(k), n(n), a(size_t(m * k), 0.5f), c(size_t(m * n), 0.0f),
        am(a.data(), m, k), cm(c.data(), m, n) {
    const size_t weightBytes = size_t(k * n) * sizeof(float);
    const size_t copies =
        cold ? std::max<size_t>(2, (4 * cacheBytes + weightBytes - 1) /
                                       weightBytes)
             : 1;
    weights.assign(copies, std::vector<float>(size_t(k * n)));
    for (size_t i = 0; i < copies; ++i) {
      std::fill(weights[i].begin(), weights[i].end(), 0.25f + float(i) * 1e-3f);
      bms.push_back(std::make_unique<MemRef2<float>>(weights[i].data(), k, n));
    }
    // One round over every weight first: the later calls find each weight
    // in memory (touched), but not in L2.
    for (size_t i = 0; i + 1 < copies; ++i)
      (*this)();
  }
  void operator()() {
    MemRef2<float> &bm = *bms[next];
    next = (next + 1) % bms.size();
    if (_mlir_ciface_pipeopt_rt_matmul_f32(&am.unranked, &bm.unranked,
                                           &cm.unranked, 0, 0) != 0)
      throw RuntimeError("the GEMM kernel failed");
  }
  /// The distinct weights the calls cycle over.
  size_t weightCount() const { return bms.size(); }
  double flops() const { return 2.0 * double(m * k * n); }
  /// Every input operand once.
  double bytesRead() const { return 4.0 * double(m * k + k * n); }

private:
  int64_t m, k, n;
  std::vector<std::vector<float>> weights;
  std::vector<float> a, c;
  MemRef2<float> am, cm;
  // (A descriptor points into itself: one allocation each, never moved.)
  std::vector<std::unique_ptr<MemRef2<float>>> bms;
  size_t next = 0;
};

/// One kernel of a group measured in interleaved rounds (RoundTimes): each
/// round makes `discard` unmeasured calls, which bring back into cache what
/// the group's other kernels evicted, then times `perRound` calls.
struct RoundKernel {
  std::function<void()> call;
  int discard = 0;
  int perRound = 1;
  RoundTimes times;
};

/// `rounds` rounds over `kernels`, each round calling them in order.
void runRounds(std::vector<RoundKernel *> kernels, int rounds) {
  for (int r = 0; r < rounds; ++r)
    for (RoundKernel *kernel : kernels) {
      for (int d = 0; d < kernel->discard; ++d)
        kernel->call();
      kernel->times.push_back(callTimes(kernel->perRound, kernel->call));
    }
}

/// Seconds from a common start until the last of `threads` threads, each
/// with its own matrices (as ranks have), has done `calls` n^3 GEMMs: the
/// fastest of `reps` such bursts.
double fastestBurst(int threads, int64_t n, int calls, int reps) {
  std::vector<std::unique_ptr<Gemm<float>>> gemms;
  for (int t = 0; t < threads; ++t)
    gemms.push_back(std::make_unique<Gemm<float>>(n));
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < reps + 1; ++r) {
    std::atomic<int> waiting{threads};
    std::vector<std::string> errors(static_cast<size_t>(threads));
    std::vector<std::thread> pool;
    Clock::time_point start;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        // All threads start together: the last one to arrive starts the
        // clock.
        if (--waiting == 0)
          start = Clock::now();
        while (waiting.load() > 0)
          std::this_thread::yield();
        try {
          for (int c = 0; c < calls; ++c)
            (*gemms[size_t(t)])();
        } catch (const std::exception &e) {
          errors[size_t(t)] = e.what();
        }
      });
    for (std::thread &th : pool)
      th.join();
    double elapsed = seconds(start, Clock::now());
    for (const std::string &e : errors)
      if (!e.empty())
        throw RuntimeError(e);
    if (r > 0) // the first burst warms up
      best = std::min(best, elapsed);
  }
  return best;
}

/// GEMMs of n^3 per second that `threads` threads calling the kernel at
/// once complete together, counted over `windowS` seconds of wall time
/// (each thread with its own matrices, as ranks have).
double concurrentGemmRate(int threads, int64_t n, double windowS) {
  std::vector<long> done(size_t(threads), 0);
  std::vector<std::string> errors(static_cast<size_t>(threads));
  auto start = Clock::now();
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(windowS));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        Gemm<float> g(n);
        while (Clock::now() < deadline) {
          g();
          ++done[size_t(t)];
        }
      } catch (const std::exception &e) {
        errors[size_t(t)] = e.what();
      }
    });
  for (std::thread &th : pool)
    th.join();
  double elapsed = seconds(start, Clock::now());
  for (const std::string &e : errors)
    if (!e.empty())
      throw RuntimeError(e);
  long total = 0;
  for (long d : done)
    total += d;
  return double(total) / elapsed;
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void
multiplyAdd(float *__restrict y, const float *__restrict x, int n, int reps) {
  for (int r = 0; r < reps; ++r)
    for (int i = 0; i < n; ++i)
      y[i] = y[i] * 0.999f + x[i];
}

/// Ping-pong between rank 0 (`self`) and rank 1 of a communicator:
/// seconds per one-way message of `bytes` bytes (median of `reps` round
/// trips / 2). `echo` runs rank 1's side: in a thread for loopback, in the
/// other process for MPI (where it is the same function called there).
MessageHeader pingHeader(size_t bytes, int src, int dst) {
  MessageHeader h;
  h.kind = MessageHeader::Tensor;
  h.dtype = uint8_t(DType::I8);
  h.setShape({int64_t(bytes)});
  h.bytes = int64_t(bytes);
  h.srcRank = src;
  h.dstRank = dst;
  h.seal();
  return h;
}

void echo(Communicator &c, size_t bytes, int reps) {
  MessageHeader back = pingHeader(bytes, 1, 0);
  for (int i = 0; i < reps + 1; ++i) {
    Message m = c.recv(0, 60);
    c.send(0, back, m.payload.data(), m.payload.size(), 60);
  }
}

double ping(Communicator &c, size_t bytes, int reps) {
  std::vector<uint8_t> data(bytes, 1);
  MessageHeader h = pingHeader(bytes, 0, 1);
  double t = medianTime(reps, [&] {
    c.send(1, h, data.data(), bytes, 60);
    c.recv(1, 60);
  });
  c.flush(60);
  return t / 2;
}

double loopbackOneWay(size_t bytes, int reps) {
  LoopbackWorld world(2);
  auto c0 = world.communicator(0), c1 = world.communicator(1);
  std::thread other([&] { echo(*c1, bytes, reps); });
  double t = ping(*c0, bytes, reps);
  other.join();
  return t;
}

/// A rank-1 memref descriptor over `n` values at `data` (the layout of
/// MLIR's StridedMemRefType<T, 1>), for the runtime's C ABI.
class Memref1 {
public:
  Memref1(void *data, int64_t n)
      : desc{data, data, 0, n, 1}, unranked{1, &desc} {}
  Memref1(const Memref1 &) = delete;
  Memref1 &operator=(const Memref1 &) = delete;
  pipeopt_rt_unranked_memref *get() { return &unranked; }

private:
  struct {
    void *allocated, *aligned;
    int64_t offset, size, stride;
  } desc;
  pipeopt_rt_unranked_memref unranked;
};

/// Throws RuntimeError("<what>: <the runtime's error>") when a runtime ABI
/// call returned nonzero.
void checkCall(int32_t rc, const char *what) {
  if (rc == 0)
    return;
  const char *e = pipeopt_rt_last_error();
  throw RuntimeError(std::string(what) + ": " +
                     (e ? e : "runtime call failed"));
}

/// A message to a receiver asleep in its recv, as a pipeline's receivers
/// wait for their activations: seconds.
struct SleepingReceiver {
  /// The sender's time in the send call (header, enqueueing, waking the
  /// receiver): Link::senderOverheadSeconds.
  double sendCall = 0;
  /// From the start of the send call until the receiver's recv returns:
  /// the time until a waiting rank can use its message, wake-up included.
  double oneWay = 0;
  /// The two threads ran pinned to two different cores.
  bool pinned = false;
};

/// Pins the calling thread to one CPU for its lifetime in this scope and
/// restores its mask after (cpu < 0: leaves it as it is).
class ScopedPin {
public:
  explicit ScopedPin(int cpu) {
    if (cpu < 0 ||
        pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved) != 0)
      return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    active = pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0;
  }
  ~ScopedPin() {
    if (active)
      pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
  }
  ScopedPin(const ScopedPin &) = delete;
  ScopedPin &operator=(const ScopedPin &) = delete;
  bool pinned() const { return active; }

private:
  cpu_set_t saved;
  bool active = false;
};

/// The first two CPUs this process may run on ({-1, -1} when it may run
/// on only one).
std::pair<int, int> twoCpus() {
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0)
    return {-1, -1};
  int found[2] = {-1, -1}, n = 0;
  for (int c = 0; c < CPU_SETSIZE && n < 2; ++c)
    if (CPU_ISSET(c, &mask))
      found[n++] = c;
  return n == 2 ? std::make_pair(found[0], found[1]) : std::make_pair(-1, -1);
}

/// Measures SleepingReceiver through the runtime's own calls
/// (pipeopt_rt_send_f32 / recv_f32 with call recording on, as pipeopt-run
/// runs under --profile): medians over `reps` messages of `floats` f32
/// values, each after a `gapS` pause long enough for the receiver to block
/// again (it answers every message with an empty one). The sender runs on
/// CPU `senderCpu`, the receiver on `receiverCpu` (-1: wherever the
/// scheduler puts it). On one CPU the receiver wakes onto its sender's busy
/// core; on two, onto a core that has been idle for the pause, which costs
/// more (on this VM a send call of 19-21 us against 5.6-6.2 us, and 53-58
/// us until the receiver runs; docs/Runtime.md, "Waking an idle core").
SleepingReceiver sleepingReceiver(int64_t floats, int reps, double gapS,
                                  int senderCpu, int receiverCpu) {
  LoopbackWorld world(2);
  auto c0 = world.communicator(0), c1 = world.communicator(1);
  RankContext sender(0, c0.get(), nullptr, nullptr, 60);
  RankContext receiver(1, c1.get(), nullptr, nullptr, 60);
  sender.recordCalls = receiver.recordCalls = true;
  auto check = [](int32_t rc) { checkCall(rc, "sender-overhead measurement"); };
  std::string otherError;
  std::vector<Clock::time_point> sent(static_cast<size_t>(reps)),
      arrived(static_cast<size_t>(reps));
  std::thread other([&] {
    ScopedContext scope(&receiver);
    ScopedPin pin(receiverCpu);
    std::vector<float> in(static_cast<size_t>(floats)), ack(1);
    Memref1 min(in.data(), floats), mack(ack.data(), 1);
    try {
      for (int i = 0; i < reps; ++i) {
        check(_mlir_ciface_pipeopt_rt_recv_f32(0, 0, 1, i, 0, 0, min.get()));
        arrived[size_t(i)] = Clock::now();
        check(_mlir_ciface_pipeopt_rt_send_f32(0, 1, 0, i, 0, 1, mack.get()));
      }
    } catch (const std::exception &e) {
      otherError = e.what();
      c1->close();
    }
  });
  std::vector<double> times;
  std::string error;
  bool pinned = false;
  {
    ScopedContext scope(&sender);
    ScopedPin pin(senderCpu);
    pinned = pin.pinned();
    std::vector<float> out(static_cast<size_t>(floats), 1.0f), ack(1);
    Memref1 mout(out.data(), floats), mack(ack.data(), 1);
    try {
      for (int i = 0; i < reps; ++i) {
        std::this_thread::sleep_for(std::chrono::duration<double>(gapS));
        auto t0 = Clock::now();
        sent[size_t(i)] = t0;
        check(_mlir_ciface_pipeopt_rt_send_f32(1, 0, 1, i, 0, 0, mout.get()));
        times.push_back(seconds(t0, Clock::now()));
        check(_mlir_ciface_pipeopt_rt_recv_f32(1, 1, 0, i, 0, 1, mack.get()));
      }
    } catch (const std::exception &e) {
      error = e.what();
      c0->close();
    }
  }
  other.join();
  if (!error.empty() || !otherError.empty())
    throw RuntimeError(error.empty() ? otherError : error);
  std::vector<double> oneWay;
  for (int i = 0; i < reps; ++i)
    oneWay.push_back(seconds(sent[size_t(i)], arrived[size_t(i)]));
  SleepingReceiver out;
  out.sendCall = upperMedian(times);
  out.oneWay = upperMedian(oneWay);
  out.pinned = pinned;
  return out;
}

/// Bytes/s (read + written, as memory_bandwidth) of the runtime's reads of
/// shared inputs: one rank context reads `tensors` shared f32 inputs of
/// `floats` values each through pipeopt_rt_input_f32 (calls recorded, as
/// under --profile), each into a buffer malloc'ed before and freed after,
/// as a compiled program's memref.alloc and dealloc do. The runtime reads
/// a weight once per iteration, and the iteration's compute has evicted
/// it from the caches since: every round starts after writing `evictBytes`
/// elsewhere. The median of `reps` rounds: how much of a weight the caches
/// still hold varies from round to round, as from iteration to iteration.
double inputCopyRate(int64_t floats, int tensors, int reps, size_t evictBytes) {
  InputStore store;
  for (int k = 0; k < tensors; ++k) {
    ManifestInput meta;
    meta.index = k;
    meta.shape = {floats};
    HostTensor t;
    t.shape = {floats};
    t.data.assign(size_t(floats) * sizeof(float), uint8_t(k + 1));
    store.set(meta, 1, std::move(t));
  }
  RankContext ctx(0, nullptr, nullptr, &store, 60);
  ctx.recordCalls = true;
  ScopedContext scope(&ctx);
  std::vector<uint8_t> evict(evictBytes);
  auto round = [&] {
    for (int k = 0; k < tensors; ++k) {
      float *buf = static_cast<float *>(std::malloc(size_t(floats) * 4));
      if (!buf)
        throw RuntimeError("input-copy measurement: out of memory");
      Memref1 m(buf, floats);
      int32_t rc = _mlir_ciface_pipeopt_rt_input_f32(k, 0, m.get());
      std::free(buf);
      checkCall(rc, "input-copy measurement");
    }
  };
  round(); // warm-up: the allocator's first large blocks
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    std::memset(evict.data(), i + 1, evict.size());
    auto a = Clock::now();
    round();
    t.push_back(seconds(a, Clock::now()));
  }
  return 2.0 * double(floats) * 4 * tensors / upperMedian(t);
}

/// One call of the runtime's host gradient accumulation (pipeopt_rt_gradient
/// on a CPU build, runtime/lib/Abi.cpp) on a gradient of `n` f32 elements:
/// the gradient of one microbatch copied into a fresh host buffer, then
/// added in double to the parameter's per-step sum (rt::addToSum).
std::function<void()> gradientAccumulateCall(int64_t n) {
  struct State {
    std::vector<float> grad;
    std::vector<double> sum;
  };
  auto st = std::make_shared<State>();
  st->grad.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    st->grad[size_t(i)] = float(i % 97) * 0.01f;
  st->sum.assign(size_t(n), 0.0);
  return [st] {
    std::vector<uint8_t> packed(st->grad.size() * sizeof(float));
    std::memcpy(packed.data(), st->grad.data(), packed.size());
    addToSum(DType::F32, packed.data(), st->sum);
  };
}

/// One call of the runtime's host update at the end of a synchronous
/// training step, for one parameter of `n` f32 elements held by one rank,
/// with `kind`'s optimizer: the steps of reduceAndUpdate
/// (runtime/lib/TrainingStep.cpp): the per-step sum copied into an
/// exchange buffer (with M = 8 microbatch flags), summed into a fresh
/// vector, divided by M, rt::optimizerStepTensor on the f32 weights in
/// place with f32 state (an f32 parameter of a cpu build), on one thread.
std::function<void()> hostUpdateCall(OptimizerKind kind, int64_t n) {
  struct State {
    TrainingConfig config;
    OptimizerState optimizer;
    std::vector<double> gradSum;
    HostTensor value;
  };
  auto st = std::make_shared<State>();
  st->config.optimizer = kind;
  st->config.lr = kind == OptimizerKind::None ? 0 : 1e-3;
  const size_t count = size_t(n);
  st->gradSum.resize(count);
  for (size_t i = 0; i < count; ++i)
    st->gradSum[i] = double(i % 89) * 1e-3;
  st->value.dtype = DType::F32;
  st->value.shape = {n};
  st->value.data.assign(count * sizeof(float), 0);
  // The state of an f32 parameter of a cpu build (Optimizer.h).
  st->optimizer.dtype = optimizerStateDType(DType::F32, Target::Cpu);
  return [st, count] {
    const size_t M = 8, sumBytes = count * sizeof(double);
    std::vector<uint8_t> mine(sumBytes + M, 0);
    std::memcpy(mine.data(), st->gradSum.data(), sumBytes);
    for (size_t mb = 0; mb < M; ++mb)
      mine[sumBytes + mb] = 1;
    std::vector<double> total(count, 0.0);
    for (size_t i = 0; i < count; ++i) {
      double x;
      std::memcpy(&x, mine.data() + i * sizeof(double), sizeof(double));
      total[i] += x;
    }
    for (double &x : total)
      x /= double(M);
    optimizerStepTensor(st->config, st->value, total, st->optimizer);
  };
}

/// "<before><seconds, %.2g> s<after>", or "" when seconds is 0.
std::string idleText(const char *before, double seconds,
                     const char *after = "") {
  if (!(seconds > 0))
    return "";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2g", seconds);
  return std::string(before) + buf + " s" + after;
}

int usage(const char *msg) {
  if (msg)
    std::cerr << "pipeopt-calibrate: error: " << msg << "\n";
  std::cerr
      << "usage: pipeopt-calibrate [-o FILE.json] [--ranks R] "
         "[--name NAME] [--shared-cores] [--input-copies]\n"
         "                         [--warm-operands]\n"
         "                         [--statistic median|fastest] [--quick]\n"
         "                         [--comm loopback|mpi]\n"
         "  Measures this host through pipeopt's kernels and loopback "
         "communicator and\n"
         "  writes a hardware JSON for pipe-partition / pipe-simulate "
         "hardware=FILE.\n"
         "  --ranks R        ranks that will share this node (default 1)\n"
         "  --shared-cores   scale the rates by cores / R when R exceeds "
         "the cores\n"
         "                   (all ranks busy at once) instead of writing "
         "the\n"
         "                   measured topology.cores_per_node\n"
         "  --input-copies   also measure input_copy_bandwidth, for builds "
         "that copy\n"
         "                   shared inputs at every call (pipeopt-compile "
         "--input-views=false,\n"
         "                   asynchronous training); others read them in "
         "place\n"
         "  --warm-operands  contraction_operand_bandwidth with the weights in "
         "L2 (ranks\n"
         "                   that never wait); default: out of L2, as a "
         "pipeline rank\n"
         "                   finds them after waiting in recv\n"
         "  --statistic S    median (default) or fastest repetition of the "
         "kernel\n"
         "                   measurements (GEMM, operand packing, vector, "
         "memory, cache)\n"
         "  --quick          fewer repetitions (less accurate)\n"
         "  --comm mpi       measure the link between two MPI processes\n"
         "                   (mpirun -np 2 pipeopt-calibrate --comm mpi "
         "...);\n"
         "                   rank 0 writes the file\n";
  return msg ? 2 : 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string out = "-", name = "calibrated-cpu";
  int ranks = 1;
  bool quick = false, sharedCores = false, useMpi = false, inputCopies = false,
       fastest = false, warmOperandsOption = false;
  // The runtime tools' one parser (ArgParser.h): "--ranks R" and
  // "--ranks=R".
  ArgParser p;
  using Name = const std::string &;
  // --help answers at once, whatever follows.
  p.flag({"--help", "-h"}, [](Name) { throw RuntimeError("help"); });
  const char *noFile = "-o expects a file name ('-' for stdout)";
  p.value(
      {"-o"},
      [&](Name, Name v) {
        if (v.empty())
          throw RuntimeError(noFile);
        out = v;
      },
      noFile);
  const char *badRanks = "--ranks expects an integer from 1 to 4096";
  p.value(
      {"--ranks"},
      [&](Name, Name v) {
        char *end = nullptr;
        long r = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end || r < 1 || r > 4096)
          throw RuntimeError(badRanks);
        ranks = int(r);
      },
      badRanks);
  const char *noName = "--name expects a non-empty name";
  p.value(
      {"--name"},
      [&](Name, Name v) {
        if (v.empty())
          throw RuntimeError(noName);
        name = v;
      },
      noName);
  p.flag({"--quick"}, [&](Name) { quick = true; });
  p.flag({"--shared-cores"}, [&](Name) { sharedCores = true; });
  p.flag({"--input-copies"}, [&](Name) { inputCopies = true; });
  p.flag({"--warm-operands"}, [&](Name) { warmOperandsOption = true; });
  const char *badStatistic = "--statistic expects median or fastest";
  p.value(
      {"--statistic"},
      [&](Name, Name v) {
        if (v != "median" && v != "fastest")
          throw RuntimeError(badStatistic);
        fastest = v == "fastest";
      },
      badStatistic);
  const char *badComm = "--comm expects loopback or mpi";
  p.value(
      {"--comm"},
      [&](Name, Name v) {
        if (v != "loopback" && v != "mpi")
          throw RuntimeError(badComm);
        useMpi = v == "mpi";
      },
      badComm);
  try {
    p.parse(argc, argv, [](const std::string &a) {
      throw RuntimeError("unknown option '" + a + "'");
    });
  } catch (const RuntimeError &e) {
    return usage(std::string(e.what()) == "help" ? nullptr : e.what());
  }

  // With MPI, rank 1 only answers the ping-pong; rank 0 measures the rest.
  struct MpiSession {
    bool active = false;
    ~MpiSession() {
      if (active)
        mpiFinalize();
    }
  } mpi;
  // A file that cannot be written fails now, not after the measurements.
  if (out != "-") {
    std::string error = unwritableReason(out);
    if (!error.empty()) {
      std::cerr << "pipeopt-calibrate: error: cannot write " << out << ": "
                << error << "\n";
      return 1;
    }
  }
  std::unique_ptr<Communicator> mpiComm;
  const size_t big = size_t(16) << 20;
  const int smallReps = quick ? 101 : 1001, bigReps = quick ? 3 : 9;
  try {
    if (useMpi) {
      if (!haveMpi())
        throw RuntimeError("--comm mpi: this runtime was built without MPI");
      mpiInitialize(&argc, &argv);
      mpi.active = true;
      if (mpiWorldSize() != 2)
        throw RuntimeError("--comm mpi needs exactly 2 processes "
                           "(mpirun -np 2), got " +
                           std::to_string(mpiWorldSize()));
      mpiComm = createMpiCommunicator();
      if (mpiWorldRank() == 1) {
        echo(*mpiComm, 8, smallReps);
        echo(*mpiComm, big, bigReps);
        mpiComm->flush(60);
        return 0;
      }
    }
  } catch (const std::exception &e) {
    std::cerr << "pipeopt-calibrate: error: " << e.what() << "\n";
    // The peer may wait in the ping-pong; a lone process just finalizes.
    if (mpi.active && mpiWorldSize() > 1)
      mpiAbort(1);
    return 1;
  }

  try {
    int cores = usableCores();
    int threads = defaultKernelThreads(cores, ranks);
    setKernelThreads(threads);
    double share = sharedCores && ranks > cores ? double(cores) / ranks : 1.0;
    // The kernel rates: the median repetition (default) or the fastest.
    auto kernelTime = [&](int n, auto &&f) {
      return fastest ? fastestTime(n, f) : medianTime(n, f);
    };
    int reps = quick ? 3 : 9, kernelReps = quick ? 9 : 25;
    auto progress = [&](const char *what) {
      std::cerr << "pipeopt-calibrate: " << what << "...\n";
    };

    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    const size_t cacheBytes = l2 > 0 ? size_t(l2) : size_t(1) << 20;

    // The GEMM peak and the operand packing, measured together in
    // interleaved rounds (RoundTimes): another job that runs for a while
    // slows a minority of each kernel's calls, and the fit subtracts a peak
    // measured in the same conditions as the thin GEMMs.
    //
    // A GEMM with few rows (a microbatch of 16) is slower per FLOP: the
    // kernel copies (packs) its operands first. The time beyond
    // FLOP / peak, per byte read, fitted over four shapes, is the operand
    // bandwidth: with the weights out of L2, as a pipeline rank finds them
    // after a wait (the default), and in L2 (for the log, or the file
    // with --warm-operands).
    const int rounds = quick ? 9 : 49;
    progress((std::to_string(rounds) +
              " rounds of GEMM f32 / f64 (512 x 512 x 512) and operand "
              "packing (16 and 32 x 256^2 and 512^2, weights out of L2 and "
              "in L2)")
                 .c_str());
    const int64_t n = 512;
    const double gemmFlops = 2.0 * n * n * n;
    Gemm<float> gemm32(n);
    Gemm<double> gemm64(n);
    // Two unmeasured calls each round: the other kernels evicted the
    // operands, and after one call they are not all back in L3 (the
    // measured call 4% slower than in a series of calls).
    RoundKernel peak32{[&] { gemm32(); }, 2, 1, {}};
    RoundKernel peak64{[&] { gemm64(); }, 2, 1, {}};
    std::vector<RoundKernel *> group = {&peak32, &peak64};
    struct Thin {
      std::unique_ptr<ThinGemm> gemm;
      RoundKernel kernel;
    };
    std::vector<Thin> cold, warm;
    for (bool isCold : {true, false})
      for (int64_t rows : {16, 32})
        for (int64_t kn : {256, 512}) {
          Thin t;
          t.gemm = std::make_unique<ThinGemm>(rows, kn, kn, isCold, cacheBytes);
          ThinGemm *g = t.gemm.get();
          // Unmeasured calls first bring the activation, the result and
          // the kernel's packing buffers back into cache, as the calls
          // before it in a pipeline action do, and a warm weight back into
          // L2. Cold weights get two cycles over all of them: each measured
          // call then finds its weight used a cycle (4 x L2) ago and
          // reused before, out of L2 but in L3, as a pipeline rank that
          // reuses its weights at every microbatch finds them. After one
          // cycle, weights the other kernels of the group had pushed out
          // come from memory (an L2 eviction that had no reuse stays out
          // of L3 on this host): 44 us against 30 us for 16 x 256^2.
          t.kernel = RoundKernel{[g] { (*g)(); },
                                 isCold ? 2 * int(g->weightCount()) : 1,
                                 isCold ? 4 : 2,
                                 {}};
          (isCold ? cold : warm).push_back(std::move(t));
        }
    for (std::vector<Thin> *v : {&cold, &warm})
      for (Thin &t : *v)
        group.push_back(&t.kernel);
    runRounds(group, rounds);

    double f32 = gemmFlops / pooledTime(peak32.times, fastest) * share;
    double f64 = gemmFlops / pooledTime(peak64.times, fastest) * share;
    const double spread = roundSpread(peak32.times);
    // Quiet, this VM's rounds give 1.06-1.11 with one kernel thread and
    // 1.09-1.17 with two (a two-thread GEMM waits for whichever thread an
    // interrupt delayed; 8 calibrations each, f32 and f64).
    if (spread > 1.3)
      std::fprintf(stderr,
                   "pipeopt-calibrate: warning: the GEMM rounds disagree "
                   "(the 90th percentile round %.2fx slower than the 10th): "
                   "other jobs slowed part of the measurement; the %s "
                   "over the rounds is written, but calibrate on a quiet "
                   "node\n",
                   spread, fastest ? "fastest call" : "median");
    auto operandFit = [&](std::vector<Thin> &shapes) {
      std::vector<ContractionSample> samples;
      for (Thin &t : shapes) {
        ContractionSample x;
        x.flops = t.gemm->flops();
        x.bytesRead = t.gemm->bytesRead();
        x.seconds = pooledTime(t.kernel.times, fastest);
        samples.push_back(x);
      }
      return fitOperandBandwidth(samples, f32 / share) * share;
    };
    double coldOperands = operandFit(cold), warmOperands = operandFit(warm);
    double operandBandwidth = warmOperandsOption ? warmOperands : coldOperands;
    // Weights out of L2 cannot be read faster than from L2: other jobs
    // slowed a measurement.
    if (coldOperands > 0 && warmOperands > 0 && coldOperands > warmOperands)
      std::fprintf(stderr,
                   "pipeopt-calibrate: warning: operands out of L2 measured "
                   "faster than in L2 (%.1f against %.1f GB/s): another job "
                   "disturbed the measurement; calibrate on a quiet node\n",
                   coldOperands / 1e9, warmOperands / 1e9);

    progress("vector multiply-add (in cache)");
    const int vn = 4096, vreps = quick ? 2000 : 20000;
    std::vector<float> x(vn, 0.5f), y(vn, 1.0f);
    double vt = kernelTime(kernelReps,
                           [&] { multiplyAdd(y.data(), x.data(), vn, vreps); });
    double vector = 2.0 * vn * vreps / vt * share;

    progress("memory bandwidth (memcpy, 64 MiB)");
    const size_t mb = size_t(64) << 20;
    std::vector<uint8_t> src(mb, 1), dst(mb, 0);
    double mt =
        kernelTime(reps, [&] { std::memcpy(dst.data(), src.data(), mb); });
    double bandwidth = 2.0 * double(mb) / mt * share;

    progress("cache bandwidth (memcpy within one core's L2)");
    const size_t cb = cacheBytes / 4;
    std::vector<uint8_t> csrc(cb, 1), cdst(cb, 0);
    const int copies = quick ? 16 : 64;
    double ct = kernelTime(kernelReps, [&] {
      for (int i = 0; i < copies; ++i) {
        csrc[size_t(i)] = uint8_t(i); // the copies are not the same
        std::memcpy(cdst.data(), csrc.data(), cb);
      }
    });
    double cacheBandwidth = 2.0 * double(cb) * copies / ct * share;

    double inputCopyBandwidth = 0;
    if (inputCopies) {
      progress("input copies (runtime input calls, 8 weights of 1 MiB)");
      inputCopyBandwidth =
          inputCopyRate(int64_t(1) << 18, 8, quick ? 5 : 25, mb) * share;
    }

    // The runtime's own host loops of a training step, on a 256 x 256 f32
    // parameter (mlp8's weight; docs/CostModel.md "Training steps").
    progress("training-step host work (gradient accumulation, optimizer "
             "updates of a 256 x 256 parameter)");
    // Interleaved rounds (as the GEMMs above): load that comes and goes
    // slows every kind alike instead of the one measured at that moment.
    // Each timed call comes after writing 2 x cache_bytes elsewhere: in a
    // step the rank's other actions run between two accumulations of a
    // parameter, and the whole backward before the update, so its sums
    // and weights are no longer in this core's L2.
    const int64_t updateElements = 256 * 256;
    const std::pair<const char *, OptimizerKind> kinds[] = {
        {"none", OptimizerKind::None},
        {"sgd", OptimizerKind::Sgd},
        {"momentum", OptimizerKind::Momentum},
        {"adamw", OptimizerKind::AdamW}};
    std::vector<std::function<void()>> hostCalls{
        gradientAccumulateCall(updateElements)};
    for (const auto &kind : kinds)
      hostCalls.push_back(hostUpdateCall(kind.second, updateElements));
    std::vector<uint8_t> evictHost(2 * cacheBytes);
    std::vector<RoundTimes> hostTimes(hostCalls.size());
    for (auto &call : hostCalls)
      call(); // warm-up: the allocator's first large blocks
    for (int round = 0, rounds = quick ? 9 : 49; round < rounds; ++round)
      for (size_t k = 0; k < hostCalls.size(); ++k) {
        std::vector<double> t;
        for (int c = 0; c < 3; ++c) {
          std::memset(evictHost.data(), round + c + 1, evictHost.size());
          t.push_back(callTimes(1, hostCalls[k]).front());
        }
        hostTimes[k].push_back(std::move(t));
      }
    const double perElement = 1.0 / double(updateElements) / share;
    double accumulatePerElement =
        pooledTime(hostTimes[0], fastest) * perElement;
    std::vector<std::pair<const char *, double>> updatePerElement;
    for (size_t i = 0; i < std::size(kinds); ++i)
      updatePerElement.push_back(
          {kinds[i].first, pooledTime(hostTimes[i + 1], fastest) * perElement});

    progress("per-call overhead (8 x 8 x 8 GEMM)");
    double overhead = gemmTime<float>(8, quick ? 101 : 1001, false);

    // Ranks sharing the node: R rank threads doing the same GEMMs at once
    // against one rank alone, both undisturbed (the fastest of repeated
    // bursts, each short enough to fit between other jobs' time slices): the
    // ranks' worth of full speed the node's cores give when they are not busy
    // with other jobs. Over a longer window (the average share under the
    // current load) only for the log.
    double effectiveCores = 0, loadedCores = 0;
    if (!sharedCores) {
      progress("ranks sharing the cores (128 x 128 x 128 GEMMs at once)");
      const int64_t sn = 128;
      const int calls = 2, bursts = quick ? 41 : 101;
      int r = std::max(ranks, 1);
      double alone = fastestBurst(1, sn, calls, bursts);
      double together = fastestBurst(r, sn, calls, bursts);
      // At most what the node has: r ranks at full speed, or one rank's
      // worth per core when the ranks outnumber the cores (a burst that
      // preempted the single thread can otherwise measure more).
      const double most = double(std::min(r, cores));
      // One rank shares nothing: its burst against itself is only noise
      // (0.92-1.0 measured), which would slow every rank of the event level.
      effectiveCores =
          r == 1 ? 1.0 : std::clamp(r * alone / together, 0.01, most);
      loadedCores = std::clamp(concurrentGemmRate(r, sn, quick ? 0.2 : 0.5) *
                                   alone / calls,
                               0.0, most);
    }

    progress(useMpi ? "MPI latency and bandwidth (2 processes)"
                    : "loopback latency and bandwidth");
    double latency =
        useMpi ? ping(*mpiComm, 8, smallReps) : loopbackOneWay(8, smallReps);
    double bigT =
        useMpi ? ping(*mpiComm, big, bigReps) : loopbackOneWay(big, bigReps);
    double linkBandwidth = double(big) / std::max(bigT - latency, 1e-9);
    // Loopback only: an MPI send's processor time is the MPI library's.
    // A pipeline's receivers wait asleep in recv: the link's latency is
    // the time until such a receiver has its message (the awake ping-pong's
    // latency, without the wake-up, is in the log line).
    // Loopback ranks pinned to one core wake each other on a busy core (the
    // sender's); ranks on two cores wake a core that idled while its ranks
    // waited, which the event level charges when the receiver's core runs
    // nothing (idle_receiver_*).
    double senderOverhead = 0, awakeLatency = latency;
    double idleLatency = 0, idleSenderOverhead = 0;
    if (!useMpi) {
      progress("messages to a sleeping receiver on its sender's core and on "
               "an idle core (runtime send/recv, 4 KiB)");
      const std::pair<int, int> cpus = twoCpus();
      const int msgs = quick ? 51 : 301;
      SleepingReceiver sr =
          sleepingReceiver(1024, msgs, 300e-6, cpus.first, cpus.first);
      senderOverhead = sr.sendCall;
      latency = std::max(latency, sr.oneWay);
      if (cpus.second >= 0) {
        SleepingReceiver idle =
            sleepingReceiver(1024, msgs, 300e-6, cpus.first, cpus.second);
        if (idle.pinned) {
          idleLatency = std::max(latency, idle.oneWay);
          idleSenderOverhead = std::max(senderOverhead, idle.sendCall);
        }
      }
    }

    char host[256] = "this host";
    gethostname(host, sizeof(host) - 1);
    nlohmann::ordered_json j;
    j["base"] = "cpu";
    j["name"] = name;
    j["description"] = std::string("measured by pipeopt-calibrate on ") + host +
                       ": " + std::to_string(cores) + " core(s), " +
                       std::to_string(ranks) + " rank(s) per node, " +
                       std::to_string(threads) + " BLAS thread(s) per rank, " +
                       (useMpi ? "MPI" : "loopback") + " link, " +
                       (share < 1 ? "rates scaled by cores / ranks, " : "") +
                       kernelLibrary();
    j["peak_flops"] = {{"f32", f32}, {"f64", f64}};
    j["vector_flops"] = {{"f32", vector}};
    j["memory_bandwidth"] = bandwidth;
    j["cache_bytes"] = double(cacheBytes);
    j["cache_bandwidth"] = cacheBandwidth;
    if (operandBandwidth > 0)
      j["contraction_operand_bandwidth"] = operandBandwidth;
    if (inputCopyBandwidth > 0)
      j["input_copy_bandwidth"] = inputCopyBandwidth;
    j["op_overhead_s"] = overhead;
    j["gradient_accumulate_s_per_element"] = accumulatePerElement;
    j["optimizer_s_per_element"] = nlohmann::ordered_json::object();
    for (const auto &[key, v] : updatePerElement)
      j["optimizer_s_per_element"][key] = v;
    j["cores"] = cores;
    // The MPI link is between two processes of this node: at least two
    // ranks share it, else every link of a pipeline would be inter-node
    // and the measured intra-node link unused.
    const int ranksPerNode = std::max(ranks, useMpi ? 2 : 1);
    if (ranksPerNode != ranks)
      std::fprintf(stderr,
                   "pipeopt-calibrate: note: ranks_per_node %d (the two MPI "
                   "processes of the measured link share this node; --ranks "
                   "sets it)\n",
                   ranksPerNode);
    j["topology"] = {{"ranks_per_node", ranksPerNode}};
    if (effectiveCores > 0)
      j["topology"]["cores_per_node"] = effectiveCores;
    // pipeopt-run --pin-ranks auto pins loopback ranks that outnumber the
    // cores (each then has one kernel thread).
    if (effectiveCores > 0 && !useMpi && ranks > cores && threads == 1)
      j["topology"]["pin_ranks"] = true;
    j["topology"]["intra_node"] = {{"latency_s", latency},
                                   {"bandwidth", linkBandwidth}};
    if (senderOverhead > 0)
      j["topology"]["intra_node"]["sender_overhead_s"] = senderOverhead;
    if (idleLatency > 0) {
      j["topology"]["intra_node"]["idle_receiver_latency_s"] = idleLatency;
      j["topology"]["intra_node"]["idle_receiver_sender_overhead_s"] =
          idleSenderOverhead;
    }
    std::string text = j.dump(2) + "\n";
    if (out == "-") {
      std::cout << text;
    } else {
      // names the file and the reason; -o /dev/stdout is written through
      writeFileAtomic(out, text, FollowLinks::UserNamedPath);
      std::cerr << "pipeopt-calibrate: wrote " << out << "\n";
    }
    std::fprintf(stderr,
                 "pipeopt-calibrate: GEMM %.1f / %.1f GFLOP/s (f32 / f64), "
                 "operands %.1f GB/s out of L2 / %.1f GB/s in L2 (%s%s), "
                 "vector %.1f GFLOP/s, memory %.1f GB/s (%.0f GB/s within %.0f "
                 "KiB%s), overhead %.2g s, "
                 "%s %.2g s (awake %.2g s%s) + bytes / %.1f GB/s, send call "
                 "%.2g s%s (per rank, %d rank(s) on %d core(s))",
                 f32 / 1e9, f64 / 1e9, coldOperands / 1e9, warmOperands / 1e9,
                 warmOperandsOption ? "in L2" : "out of L2",
                 operandBandwidth > 0
                     ? " written"
                     : ": not slower per FLOP than the peak, none written",
                 vector / 1e9, bandwidth / 1e9, cacheBandwidth / 1e9,
                 double(cacheBytes) / 1024,
                 inputCopyBandwidth > 0
                     ? (", input copies " +
                        std::to_string(int(inputCopyBandwidth / 1e9 + 0.5)) +
                        " GB/s")
                           .c_str()
                     : "",
                 overhead, useMpi ? "mpi" : "loopback", latency, awakeLatency,
                 idleText(", idle core ", idleLatency).c_str(),
                 linkBandwidth / 1e9, senderOverhead,
                 idleText(" (idle core ", idleSenderOverhead, ")").c_str(),
                 ranks, cores);
    if (effectiveCores > 0)
      std::fprintf(stderr,
                   ", %d rank(s) at once run as fast as %.2f alone (%.2f "
                   "over 0.5 s under the current load)",
                   ranks, effectiveCores, loadedCores);
    std::fprintf(stderr, "\n");
  } catch (const std::exception &e) {
    std::cerr << "pipeopt-calibrate: error: " << e.what() << "\n";
    if (mpi.active)
      mpiAbort(1);
    return 1;
  }
  return 0;
}
