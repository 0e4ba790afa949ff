//===- Communicator.h - Message transport behind one interface -*- C++ -*-===//
//
// A Communicator moves self-describing messages (a fixed-size MessageHeader
// plus a byte payload) between the ranks of one run. Implementations:
//   * loopback: ranks are threads of one process (per (src,dst) queues);
//   * MPI: one rank per process (OpenMPI), header+payload in one message;
//   * NCCL: one rank per GPU, CUDA/NCCL loaded with dlopen; header then
//     payload via ncclSend/ncclRecv, staged host<->device (cpu builds) or
//     device<->device (cuda builds).
// Payloads are host memory (send/recv) or, for the programs of cuda builds,
// device memory of the calling rank's device (sendDevice/recvDevice).
// Every blocking operation takes a timeout and throws TimeoutError when it
// expires, so a stalled or dead peer never hangs the others.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_COMMUNICATOR_H
#define PIPEOPT_RUNTIME_COMMUNICATOR_H

#include "pipeopt/runtime/Types.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pipeopt {
namespace rt {

/// Thrown by recv when the peer has ended (finished or failed) without
/// sending the message (loopback, where a rank knows that).
class PeerExitedError : public RuntimeError {
public:
  explicit PeerExitedError(const std::string &message)
      : RuntimeError(message) {}
};

/// Wire header of every message (128 bytes, little-endian host layout; all
/// ranks of one run are assumed to share endianness).
struct MessageHeader {
  static constexpr uint32_t kMagic = 0x54525050; // "PPRT"
  static constexpr uint16_t kVersion = 1;
  /// Message kinds: a tensor between stages, or launcher traffic.
  enum Kind : uint16_t { Tensor = 0, Control = 1 };

  uint32_t magic = kMagic;
  uint16_t version = kVersion;
  uint16_t kind = Tensor;
  uint8_t dtype = 0;    ///< DType code
  uint8_t ndims = 0;    ///< memref rank, <= PIPEOPT_RT_MAX_RANK
  uint8_t backward = 0; ///< 1 for a gradient, 0 for an activation
  uint8_t reserved0 = 0;
  int32_t srcRank = -1;
  int32_t dstRank = -1;
  int32_t srcStage = -1;
  int32_t dstStage = -1;
  int32_t microbatch = -1;
  int32_t valueIndex = -1;
  int32_t tag = 0;   ///< Control messages: what this is (launcher-defined)
  int64_t bytes = 0; ///< payload size in bytes
  int64_t shape[PIPEOPT_RT_MAX_RANK] = {0, 0, 0, 0, 0, 0, 0, 0};
  uint64_t checksum = 0; ///< FNV-1a of all preceding bytes of the header
  uint8_t reserved1[8] = {0, 0, 0, 0, 0, 0, 0, 0};

  /// Shape as a vector of the first `ndims` sizes.
  Shape getShape() const { return Shape(shape, shape + ndims); }
  /// Sets ndims/shape; throws if more than PIPEOPT_RT_MAX_RANK dims.
  void setShape(const Shape &s);
  /// Computes the checksum field over the rest of the header.
  void seal();
  /// Returns an empty string if magic, version, checksum, dtype and ndims
  /// are sane, otherwise a description of what is wrong.
  std::string validate() const;
  /// "f32[4x8] (128 bytes)".
  std::string describeType() const;
};
static_assert(sizeof(MessageHeader) == 128, "wire header must be 128 bytes");

class Device;

/// A started (nonblocking) collective operation of a Communicator (returned
/// by Communicator::startAllReduceSum and its siblings). The buffers passed
/// to the start call must stay valid until the request has completed (wait
/// returned, test returned true) or failed (wait/test threw). Destroying a
/// request that has not completed abandons this rank's part: loopback
/// peers waiting for it fail at once; MPI and NCCL leave the operation
/// outstanding (neither can cancel a started collective), so the
/// communicator should not be used for collectives afterwards.
class CollectiveRequest {
public:
  virtual ~CollectiveRequest();
  /// Blocks until the operation has completed on this rank. Throws
  /// TimeoutError after `timeoutS` seconds, PeerExitedError when a member
  /// rank ended without taking part (loopback), RuntimeError on transport
  /// errors (also when another member gave up on this operation or started
  /// a different collective at this position of the sequence). After a
  /// throw the request is failed: later waits throw again.
  virtual void wait(double timeoutS) = 0;
  /// Progresses the operation without blocking; true once complete. Throws
  /// like wait (except TimeoutError) once the operation has failed.
  virtual bool test() = 0;
};

/// A received message. Its payload is host bytes (`payload`) or, from
/// recvDevice, possibly device memory (`devicePayload`, then `payload` is
/// empty).
struct Message {
  MessageHeader header;
  std::vector<uint8_t> payload;
  /// Device memory holding the payload (devicePayloadBytes bytes), or null.
  /// Valid while the message lives when `deviceOwner` holds it (a buffer
  /// of the message's own, freed with it), otherwise until the next
  /// receive on the communicator (its staging buffer).
  const void *devicePayload = nullptr;
  size_t devicePayloadBytes = 0;
  std::shared_ptr<void> deviceOwner;
};

/// Abstract transport between the ranks of one run.
class Communicator {
public:
  virtual ~Communicator();
  /// This rank (0-based).
  virtual int rank() const = 0;
  /// Number of ranks.
  virtual int size() const = 0;
  /// Backend name: "loopback", "mpi", "nccl".
  virtual std::string name() const = 0;
  /// Sends `header` (bytes must equal `bytes`) and `bytes` bytes of `data` to
  /// rank `dst`. May return before the peer receives (loopback, MPI) or wait
  /// for it up to `timeoutS` seconds (NCCL). Throws RuntimeError/TimeoutError.
  virtual void send(int dst, const MessageHeader &header, const void *data,
                    size_t bytes, double timeoutS) = 0;
  /// Receives the next message from rank `src` (FIFO per source), waiting at
  /// most `timeoutS` seconds. Throws TimeoutError on timeout and RuntimeError
  /// on transport errors or a corrupt header.
  virtual Message recv(int src, double timeoutS) = 0;
  /// Like send, for a payload in device memory: `data` is `bytes` bytes of
  /// contiguous memory of `device`, the calling rank's device (its thread
  /// bound to it), written by work on its compute stream. The program may
  /// reuse the buffer as soon as this returns. The default stages the
  /// payload through host memory (MPI: the one transport that copies
  /// device payloads through the host); loopback and NCCL keep it on the
  /// device.
  virtual void sendDevice(int dst, const MessageHeader &header,
                          const void *data, size_t bytes, const Device &device,
                          double timeoutS);
  /// Like recv, for a rank of a cuda build: the payload may come back as
  /// device memory (Message::devicePayload; readable by `device`). The
  /// default is recv (a host payload).
  virtual Message recvDevice(int src, const Device &device, double timeoutS);
  /// Completes all outstanding sends of this rank within `timeoutS` seconds.
  virtual void flush(double timeoutS) { (void)timeoutS; }
  /// Tells the others this rank is done (or died); loopback peers waiting on
  /// it fail immediately instead of waiting for the timeout.
  virtual void close() {}
  /// Names of the ranks for errors, e.g. "rank 1 (stage 1)" ([rank]; the
  /// launcher sets them from the manifest). Default: ignored.
  virtual void describeRanks(const std::vector<std::string> &labels) {
    (void)labels;
  }
  /// The launcher calls this when this rank failed with `error`, before it
  /// ends the job: MPI keeps answering the others' status queries with this
  /// error for `graceS` seconds (so that a rank diagnosing its own timeout
  /// learns that this one failed and why, rather than taking it for a rank
  /// that made no progress), which also gives the error time to reach the
  /// launcher's output before MPI_Abort. Default: returns at once.
  virtual void fail(const std::string &error, double graceS) {
    (void)error;
    (void)graceS;
  }

  //===--------------------------------------------------------------------===//
  // Sub-communicators and collectives (data parallelism, issue 37)
  //===--------------------------------------------------------------------===//
  //
  // Collectives are started in the same order with the same sizes on every
  // rank of the communicator (as in MPI); several may be in flight at once.
  // Ranks are the ranks of this communicator. Sums are of doubles; where
  // the order of the additions matters it is the one stated per backend:
  //   * loopback: every element is summed once, in ascending rank order
  //     (((x_0 + x_1) + x_2) + ...), and that one result is copied to every
  //     rank, so every rank gets the same bits and an all-reduce gives the
  //     bits of a reduce-scatter followed by an all-gather;
  //   * MPI: MPI_Iallreduce (in place) / MPI_Ireduce_scatter_block on
  //     MPI_DOUBLE with MPI_SUM. The MPI standard promises no order of the
  //     additions and no equal bits on every rank (it only advises
  //     implementors of MPI_Reduce that the same arguments in the same order
  //     give the same result). With 2 ranks every rank gets the same bits
  //     anyway (each element is the one addition x_0 + x_1, and IEEE
  //     addition is commutative). Open MPI 4.1 serves both from coll/libnbc,
  //     whose source (nbc_iallreduce.c, nbc_ireduce_scatter_block.c) reduces
  //     an in-place all-reduce and a reduce-scatter alike: along a binomial
  //     tree to rank 0 (ascending order for 2 or 3 ranks; with 4,
  //     (x_0 + x_1) + (x_2 + x_3)), which then broadcasts or scatters the
  //     result, so every rank gets rank 0's bits, and an all-reduce the bits
  //     of a reduce-scatter (MpiCollectivesTest checks both with 4 ranks).
  //     That is the implementation's behaviour, not a documented promise;
  //     other MPI libraries or versions may differ;
  //   * NCCL: ncclAllReduce / ncclReduceScatter / ncclAllGather on the
  //     rank's device, whose ring/tree order is NCCL's (no bitwise promise).

  /// Collective over every rank of this communicator: the ranks passing the
  /// same `color` (>= 0) form a new communicator in which they are ranked by
  /// `key` (ties: by rank here). Messages and collectives of the new
  /// communicator never match those of this one or of a sibling. The result
  /// must not outlive this communicator. Throws RuntimeError (a negative
  /// color, a transport error) or TimeoutError (a rank did not join within
  /// `timeoutS` seconds). The default throws RuntimeError ("split is not
  /// supported by the <name> communicator").
  virtual std::unique_ptr<Communicator> split(int color, int key,
                                              double timeoutS);
  /// Starts an in-place sum all-reduce of `count` doubles at `data` over
  /// every rank of this communicator (each must start the same collectives
  /// in the same order with the same counts; `data` stays valid until the
  /// request completes). Every rank gets the same bits (loopback; MPI and
  /// NCCL: see above). The default throws RuntimeError.
  virtual std::unique_ptr<CollectiveRequest> startAllReduceSum(double *data,
                                                               size_t count);
  /// Starts a sum reduce-scatter: `send` holds size() blocks of
  /// `blockCount` doubles; rank k receives the sum over ranks of block k into
  /// `recv` (`blockCount` doubles). `recv` may be rank k's own block of
  /// `send` (in place). The default throws RuntimeError.
  virtual std::unique_ptr<CollectiveRequest>
  startReduceScatterSum(const double *send, double *recv, size_t blockCount);
  /// Starts an all-gather: each rank contributes `blockBytes` bytes at
  /// `send`; `recv` (size() * blockBytes bytes) receives rank k's block at
  /// offset k * blockBytes. `send` may be this rank's block of `recv` (in
  /// place). The default throws RuntimeError.
  virtual std::unique_ptr<CollectiveRequest>
  startAllGather(const void *send, void *recv, size_t blockBytes);
};

/// The shared state of a loopback run: `numRanks` ranks in one process.
class LoopbackWorld {
public:
  explicit LoopbackWorld(int numRanks);
  ~LoopbackWorld();
  LoopbackWorld(const LoopbackWorld &) = delete;
  LoopbackWorld &operator=(const LoopbackWorld &) = delete;
  /// Communicator for rank `rank`; the world must outlive it.
  std::unique_ptr<Communicator> communicator(int rank);
  int size() const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl;
};

/// MPI: how long a rank whose wait timed out waits for the answers to its
/// status queries, and how long a failed rank keeps answering them before
/// MPI_Abort (Mpi.cpp): half the timeout, at least 1 s, at most 5 s.
inline double statusGraceS(double timeoutS) {
  double g = timeoutS / 2;
  return g < 1 ? 1 : g > 5 ? 5 : g;
}

/// True if the runtime was built with MPI support.
bool haveMpi();
/// Initializes MPI (MPI_Init_thread) if not yet initialized; throws if the
/// runtime was built without MPI.
void mpiInitialize(int *argc, char ***argv);
/// Finalizes MPI if initialized and not yet finalized.
void mpiFinalize();
/// MPI_Abort(MPI_COMM_WORLD, code) if MPI is initialized (does not return);
/// otherwise returns.
void mpiAbort(int code);
/// MPI_COMM_WORLD rank / size (MPI must be initialized).
int mpiWorldRank();
int mpiWorldSize();
/// MPI_Bcast of `bytes` bytes from `root` over MPI_COMM_WORLD.
void mpiBroadcast(void *data, size_t bytes, int root);
/// A communicator over MPI_COMM_WORLD (MPI must be initialized).
std::unique_ptr<Communicator> createMpiCommunicator();

/// Opaque NCCL unique id (ncclUniqueId is 128 bytes).
using NcclId = std::array<char, 128>;
/// Tries to load libcudart and libnccl (dlopen) and check their versions.
/// Returns an empty string on success, else why not.
std::string ncclAvailability();
/// Number of visible CUDA devices (0 if CUDA cannot be loaded).
int cudaDeviceCount();
/// ncclGetUniqueId; throws if NCCL is unavailable.
NcclId ncclCreateId();
/// Creates the NCCL communicator of `rank` in a world of `size` ranks using
/// CUDA device `device`. Collective: every rank must call it (concurrently,
/// from its own thread or process). Throws RuntimeError.
std::unique_ptr<Communicator>
createNcclCommunicator(int rank, int size, const NcclId &id, int device);
/// Environment rendezvous for NCCL without MPI (like torchrun): rank 0
/// creates the id and writes it to `path` (atomically); other ranks poll the
/// file for up to `timeoutS` seconds. Returns the id.
NcclId ncclExchangeIdViaFile(int rank, const std::string &path,
                             double timeoutS);

//===----------------------------------------------------------------------===//
// The factory: every communicator kind in one table (CommRegistry.h)
//===----------------------------------------------------------------------===//

/// A launcher that started this process as one of several (mpirun, srun,
/// torchrun), as its environment says: the number of processes and the
/// variable that says so. size <= 1 when there is none.
struct LaunchEnvironment {
  int size = 1;
  std::string variable; ///< e.g. "OMPI_COMM_WORLD_SIZE=2"
};
/// Reads OMPI_COMM_WORLD_SIZE (Open MPI's mpirun), PMI_SIZE (MPICH, Intel
/// MPI, srun --mpi=pmi2), PMIX_SIZE and, with RANK set, WORLD_SIZE
/// (torchrun).
LaunchEnvironment detectLaunchEnvironment();

/// How this process takes part in a run, as the bootstrap of its
/// communicator kind (CommRegistry.h) decided it from --comm and the
/// launcher's environment.
struct CommWorld {
  std::string comm = "loopback"; ///< the kind's name in the registry
  bool ncclOverMpi = false;      ///< NCCL, bootstrapped over MPI (mpirun)
  bool ncclOverEnv = false; ///< NCCL, RANK/WORLD_SIZE + PIPEOPT_NCCL_ID_FILE
  bool useMpi = false;      ///< MPI is initialized (mpi, or NCCL over MPI)
  int procRank = 0, procSize = 1; ///< this process in the job
  /// The CUDA device of each local rank (pipeopt-run --devices, cuda
  /// builds; assignDevices in RunOptions.h), or empty: NCCL's default (rank
  /// r -> device r in one process, local rank % count with one process per
  /// rank).
  std::vector<int> devices;
  /// One process per rank (MPI or an environment rendezvous): this process
  /// runs rank procRank only.
  bool distributed() const { return useMpi || ncclOverEnv; }
};

/// The communicators of the ranks one process runs, in the order of
/// `localRanks`; `world` owns loopback communicators and outlives them.
struct Communicators {
  std::unique_ptr<LoopbackWorld> world;
  std::vector<std::unique_ptr<Communicator>> comms;
  std::string name; ///< "loopback", "mpi", "nccl"
};

/// Creates the communicators of `localRanks` (all ranks for loopback and
/// single-process NCCL, this process's rank otherwise) of a run of
/// `numRanks` ranks with the factory of the registry row `world.comm`
/// (CommRegistry.h). NCCL setup, which has no timeout of its own, is
/// watched: after `timeoutS` seconds it fails naming the ranks. Throws
/// RuntimeError (an unknown kind, NCCL or CUDA unavailable, too few GPUs,
/// ...).
Communicators createCommunicators(const CommWorld &world, int numRanks,
                                  const std::vector<int> &localRanks,
                                  double timeoutS);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_COMMUNICATOR_H
