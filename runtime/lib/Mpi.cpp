//===- Mpi.cpp - MPI communicator (one rank per process) --------*- C++ -*-===//
//
// Each message is one MPI message of MPI_BYTEs: the 128-byte MessageHeader
// followed by the payload, on a private duplicate of MPI_COMM_WORLD. Sends
// are MPI_Isend with the buffer kept until completion (eager semantics, like
// loopback). Receives poll MPI_Iprobe until a deadline, so a dead or stalled
// peer gives a TimeoutError instead of a hang. Built only when CMake finds
// MPI (PIPEOPT_RT_HAVE_MPI).
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Communicator.h"

#ifdef PIPEOPT_RT_HAVE_MPI
#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <list>
#include <sstream>
#include <thread>
#endif

namespace pipeopt {
namespace rt {

#ifdef PIPEOPT_RT_HAVE_MPI

static std::string mpiErrorString(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(buf, len);
}

static void checkMpi(int code, const char *what) {
  if (code != MPI_SUCCESS)
    throw RuntimeError(std::string("MPI: ") + what +
                       " failed: " + mpiErrorString(code));
}

bool haveMpi() { return true; }

void mpiInitialize(int *argc, char ***argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized)
    return;
  int provided = 0;
  checkMpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided),
           "MPI_Init_thread");
}

void mpiFinalize() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized)
    MPI_Finalize();
}

void mpiAbort(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized)
    MPI_Abort(MPI_COMM_WORLD, code);
}

int mpiWorldRank() {
  int r = 0;
  checkMpi(MPI_Comm_rank(MPI_COMM_WORLD, &r), "MPI_Comm_rank");
  return r;
}

int mpiWorldSize() {
  int s = 0;
  checkMpi(MPI_Comm_size(MPI_COMM_WORLD, &s), "MPI_Comm_size");
  return s;
}

void mpiBroadcast(void *data, size_t bytes, int root) {
  checkMpi(MPI_Bcast(data, int(bytes), MPI_BYTE, root, MPI_COMM_WORLD),
           "MPI_Bcast");
}

namespace {
constexpr int kTag = 0x5050;

class MpiCommunicator : public Communicator {
public:
  MpiCommunicator() {
    checkMpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    checkMpi(MPI_Comm_rank(comm, &myRank), "MPI_Comm_rank");
    checkMpi(MPI_Comm_size(comm, &mySize), "MPI_Comm_size");
  }
  ~MpiCommunicator() override {
    // Outstanding sends are abandoned (the run failed); cancel them so
    // MPI_Comm_free does not wait.
    for (auto &p : pending) {
      MPI_Cancel(&p.request);
      MPI_Request_free(&p.request);
    }
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Comm_free(&comm);
  }

  int rank() const override { return myRank; }
  int size() const override { return mySize; }
  std::string name() const override { return "mpi"; }

  void send(int dst, const MessageHeader &header, const void *data,
            size_t bytes, double) override {
    if (dst < 0 || dst >= mySize)
      throw RuntimeError("MPI: destination rank " + std::to_string(dst) +
                         " out of range");
    size_t total = sizeof(MessageHeader) + bytes;
    if (total > size_t(INT_MAX))
      throw RuntimeError("MPI: message of " + std::to_string(total) +
                         " bytes exceeds the 2 GiB limit of one MPI message");
    pending.emplace_back();
    Pending &p = pending.back();
    p.dst = dst;
    p.buffer.resize(total);
    std::memcpy(p.buffer.data(), &header, sizeof(MessageHeader));
    if (bytes)
      std::memcpy(p.buffer.data() + sizeof(MessageHeader), data, bytes);
    int rc = MPI_Isend(p.buffer.data(), int(total), MPI_BYTE, dst, kTag, comm,
                       &p.request);
    if (rc != MPI_SUCCESS) {
      pending.pop_back();
      checkMpi(rc, "MPI_Isend");
    }
    progress();
  }

  Message recv(int src, double timeoutS) override {
    if (src < 0 || src >= mySize)
      throw RuntimeError("MPI: source rank " + std::to_string(src) +
                         " out of range");
    auto start = std::chrono::steady_clock::now();
    MPI_Status status;
    for (int spin = 0;; ++spin) {
      int flag = 0;
      checkMpi(MPI_Iprobe(src, kTag, comm, &flag, &status), "MPI_Iprobe");
      if (flag)
        break;
      progress();
      double waited = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
      if (waited > timeoutS) {
        std::ostringstream os;
        os << "timed out after " << timeoutS << " s waiting for rank " << src
           << " (it stalled, died or never sends this message)";
        throw TimeoutError(os.str());
      }
      if (spin > 200)
        std::this_thread::sleep_for(
            std::chrono::microseconds(spin > 2000 ? 1000 : 50));
    }
    int count = 0;
    checkMpi(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
    std::vector<uint8_t> buf(size_t(count) + 1);
    checkMpi(MPI_Recv(buf.data(), count, MPI_BYTE, src, kTag, comm,
                      MPI_STATUS_IGNORE),
             "MPI_Recv");
    if (size_t(count) < sizeof(MessageHeader))
      throw RuntimeError("MPI: received a " + std::to_string(count) +
                         "-byte message from rank " + std::to_string(src) +
                         ", shorter than the message header");
    Message m;
    std::memcpy(&m.header, buf.data(), sizeof(MessageHeader));
    m.payload.assign(buf.begin() + sizeof(MessageHeader),
                     buf.begin() + count);
    return m;
  }

  void flush(double timeoutS) override {
    auto start = std::chrono::steady_clock::now();
    while (!pending.empty()) {
      progress();
      if (pending.empty())
        break;
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                        start)
              .count() > timeoutS) {
        std::ostringstream os;
        os << "timed out after " << timeoutS << " s: " << pending.size()
           << " sent message(s) (first to rank " << pending.front().dst
           << ") were never received";
        throw TimeoutError(os.str());
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

private:
  struct Pending {
    int dst = -1;
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<uint8_t> buffer;
  };

  void progress() {
    for (auto it = pending.begin(); it != pending.end();) {
      int done = 0;
      checkMpi(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done)
        it = pending.erase(it);
      else
        ++it;
    }
  }

  MPI_Comm comm = MPI_COMM_NULL;
  int myRank = 0, mySize = 1;
  std::list<Pending> pending;
};
} // namespace

std::unique_ptr<Communicator> createMpiCommunicator() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    throw RuntimeError("MPI: not initialized");
  return std::make_unique<MpiCommunicator>();
}

#else // !PIPEOPT_RT_HAVE_MPI

static const char *kNoMpi =
    "this pipeopt runtime was built without MPI (install libopenmpi-dev and "
    "reconfigure)";
bool haveMpi() { return false; }
void mpiInitialize(int *, char ***) { throw RuntimeError(kNoMpi); }
void mpiFinalize() {}
void mpiAbort(int) {}
int mpiWorldRank() { throw RuntimeError(kNoMpi); }
int mpiWorldSize() { throw RuntimeError(kNoMpi); }
void mpiBroadcast(void *, size_t, int) { throw RuntimeError(kNoMpi); }
std::unique_ptr<Communicator> createMpiCommunicator() {
  throw RuntimeError(kNoMpi);
}

#endif

} // namespace rt
} // namespace pipeopt
