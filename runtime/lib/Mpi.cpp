//===- Mpi.cpp - MPI communicator (one rank per process) --------*- C++ -*-===//
//
// Each message is one MPI message of MPI_BYTEs: the 128-byte MessageHeader
// followed by the payload, on a private duplicate of MPI_COMM_WORLD. Sends
// are MPI_Isend with the buffer kept until completion (eager semantics, like
// loopback). Receives poll MPI_Iprobe until a deadline, so a dead or stalled
// peer gives a TimeoutError instead of a hang. Built only when CMake finds
// MPI (PIPEOPT_RT_HAVE_MPI).
//
// Naming the rank that stopped making progress: a rank waiting for a peer
// may time out because that peer waits for a third one, which is the one
// that is stopped (SIGSTOP), stuck in a computation or dead. So a rank whose
// wait times out asks every other rank for its status (a status query on a
// second duplicate of MPI_COMM_WORLD) and waits statusGraceS(timeout) (half
// the timeout, 1 to 5 s) for the answers. Every rank answers queries
// whenever it is in a call of this communicator (waiting in recv or flush,
// diagnosing, or lingering after its failure: Communicator::fail): with
// what it waits for, for how long, and the last message it received from
// that rank, or with its own error. The ranks that do not answer made no
// progress for the whole grace period; the timeout error names them (with
// their stages) and quotes the others' answers.
//
// Sub-communicators (split: MPI_Comm_split of the private duplicate, after
// an MPI_Ibarrier polled with the timeout, so that a rank that never joins
// gives a TimeoutError rather than a hang) share the status queries of the
// communicator they were split from, ultimately of the one over
// MPI_COMM_WORLD (the root): their waits answer the root's queries, say
// what they wait for in the root's ranks, and their timeouts query every
// rank of the job. Collectives are MPI_Iallreduce, MPI_Ireduce_scatter_block
// and MPI_Iallgather; a request's wait polls MPI_Test against a deadline
// (answering status queries meanwhile) like recv.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Communicator.h"
#include "pipeopt/runtime/Watchdog.h"

#ifdef PIPEOPT_RT_HAVE_MPI
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <list>
#include <optional>
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
/// Tags on faultComm: a status query, and its answer (text).
constexpr int kTagQuery = 1, kTagAnswer = 2;

/// "activation of stage 0 -> 1, microbatch 2 (value 0)" etc.
std::string describeMessage(const MessageHeader &h) {
  std::ostringstream os;
  if (h.kind == MessageHeader::Control) {
    os << "launcher control message (tag " << h.tag << ")";
  } else {
    os << (h.backward ? "gradient" : "activation") << " of stage " << h.srcStage
       << " -> " << h.dstStage << ", microbatch " << h.microbatch << " (value "
       << h.valueIndex << ")";
  }
  return os.str();
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", s);
  return buf;
}

class MpiCommunicator;

/// A started MPI collective (MPI_I*), completed by polling MPI_Test.
class MpiRequest : public CollectiveRequest {
public:
  MpiRequest(MpiCommunicator &c, std::string what)
      : c(c), what(std::move(what)) {}
  /// MPI cannot cancel or free a started collective: an abandoned one
  /// stays outstanding (the run is failing by then).
  ~MpiRequest() override = default;
  void wait(double timeoutS) override;
  bool test() override;

  MPI_Request request = MPI_REQUEST_NULL;
  /// A copy of the input where it overlaps the output (MPI forbids that).
  std::vector<uint8_t> sendCopy;

private:
  MpiCommunicator &c;
  std::string what; ///< "all-reduce #3 of 5 doubles"
  bool done = false;
  std::string error;
};

class MpiCommunicator : public Communicator {
  friend class MpiRequest;

public:
  /// A sub-communicator over `sub` (owned from now on), split from a
  /// communicator whose root (the one over MPI_COMM_WORLD) is `root`.
  MpiCommunicator(MPI_Comm sub, MpiCommunicator &root)
      : comm(sub), root(&root) {
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    checkMpi(MPI_Comm_rank(comm, &myRank), "MPI_Comm_rank");
    checkMpi(MPI_Comm_size(comm, &mySize), "MPI_Comm_size");
    MPI_Group mine, theirs;
    checkMpi(MPI_Comm_group(comm, &mine), "MPI_Comm_group");
    checkMpi(MPI_Comm_group(root.comm, &theirs), "MPI_Comm_group");
    std::vector<int> ranks(static_cast<size_t>(mySize));
    for (int r = 0; r < mySize; ++r)
      ranks[size_t(r)] = r;
    rootRanks.resize(size_t(mySize));
    int rc = MPI_Group_translate_ranks(mine, mySize, ranks.data(), theirs,
                                       rootRanks.data());
    MPI_Group_free(&mine);
    MPI_Group_free(&theirs);
    checkMpi(rc, "MPI_Group_translate_ranks");
  }

  MpiCommunicator() {
    checkMpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    checkMpi(MPI_Comm_rank(comm, &myRank), "MPI_Comm_rank");
    checkMpi(MPI_Comm_size(comm, &mySize), "MPI_Comm_size");
    checkMpi(MPI_Comm_dup(MPI_COMM_WORLD, &faultComm), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(faultComm, MPI_ERRORS_RETURN);
    lastReceived.resize(size_t(mySize));
  }
  ~MpiCommunicator() override {
    // Outstanding sends are abandoned (the run failed); cancel them so
    // MPI_Comm_free does not wait.
    for (auto &p : pending) {
      MPI_Cancel(&p.request);
      MPI_Request_free(&p.request);
    }
    for (auto &a : faultSends)
      if (a.request != MPI_REQUEST_NULL)
        MPI_Request_free(&a.request);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      MPI_Comm_free(&comm);
      if (faultComm != MPI_COMM_NULL)
        MPI_Comm_free(&faultComm);
    }
  }

  void describeRanks(const std::vector<std::string> &labels) override {
    // A sub-communicator names its ranks with the root's labels.
    if (!root && labels.size() == size_t(mySize))
      rankLabels = labels;
  }

  void fail(const std::string &error, double graceS) override {
    if (root)
      return root->fail(error, graceS);
    failedWith = error.empty() ? std::string("failed") : error;
    Deadline linger(graceS);
    while (!linger.expired()) {
      answerQueries();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
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
    faults().lastSent = describeMessage(header) + " to " + label(dst);
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
    // Active time (Watchdog.h): a process stopped and continued does not
    // find its waits expired by the suspension.
    Deadline deadline(timeoutS);
    Waiting waiting(*this, src, "a message from");
    MPI_Status status;
    for (int spin = 0;; ++spin) {
      int flag = 0;
      checkMpi(MPI_Iprobe(src, kTag, comm, &flag, &status), "MPI_Iprobe");
      if (flag)
        break;
      progress();
      answerQueries();
      if (deadline.expired()) {
        std::ostringstream os;
        os << "timed out after " << timeoutS << " s waiting for rank " << src
           << " (it stalled, died or never sends this message)"
           << diagnose(timeoutS);
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
    m.payload.assign(buf.begin() + sizeof(MessageHeader), buf.begin() + count);
    faults().lastReceived[size_t(toRoot(src))] = describeMessage(m.header);
    return m;
  }

  void flush(double timeoutS) override {
    Deadline deadline(timeoutS);
    std::optional<Waiting> waiting;
    while (!pending.empty()) {
      progress();
      if (pending.empty())
        break;
      if (!waiting)
        waiting.emplace(*this, pending.front().dst,
                        "its sends to be received by");
      answerQueries();
      if (deadline.expired()) {
        int dst = pending.front().dst;
        std::ostringstream os;
        os << "timed out after " << timeoutS << " s: " << pending.size()
           << " sent message(s) (first to rank " << dst
           << ") were never received" << diagnose(timeoutS);
        throw TimeoutError(os.str());
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  std::unique_ptr<Communicator> split(int color, int key,
                                      double timeoutS) override {
    if (color < 0)
      throw RuntimeError("MPI: split with color " + std::to_string(color) +
                         " (colors must be >= 0; every rank joins a new "
                         "communicator)");
    // MPI_Comm_split has no timeout: first make sure every rank has come
    // this far (a nonblocking barrier, polled with the timeout), after which
    // the split cannot hang.
    {
      MpiRequest barrier(*this, "the barrier before split #" +
                                    std::to_string(nextCollective++));
      checkMpi(MPI_Ibarrier(comm, &barrier.request), "MPI_Ibarrier");
      barrier.wait(timeoutS);
    }
    MPI_Comm sub = MPI_COMM_NULL;
    checkMpi(MPI_Comm_split(comm, color, key, &sub), "MPI_Comm_split");
    return std::make_unique<MpiCommunicator>(sub, root ? *root : *this);
  }

  std::unique_ptr<CollectiveRequest> startAllReduceSum(double *data,
                                                       size_t count) override {
    checkCount(count, "all-reduce");
    auto req = std::make_unique<MpiRequest>(
        *this, "all-reduce #" + std::to_string(nextCollective++) + " of " +
                   std::to_string(count) + " doubles" + ofSub());
    checkMpi(MPI_Iallreduce(MPI_IN_PLACE, data, int(count), MPI_DOUBLE, MPI_SUM,
                            comm, &req->request),
             "MPI_Iallreduce");
    return req;
  }

  std::unique_ptr<CollectiveRequest>
  startReduceScatterSum(const double *send, double *recv,
                        size_t blockCount) override {
    checkCount(blockCount * size_t(mySize), "reduce-scatter");
    auto req = std::make_unique<MpiRequest>(
        *this, "reduce-scatter #" + std::to_string(nextCollective++) + " of " +
                   std::to_string(blockCount) + "-double blocks" + ofSub());
    const void *in = send;
    size_t inBytes = blockCount * size_t(mySize) * sizeof(double);
    if (overlap(send, inBytes, recv, blockCount * sizeof(double))) {
      req->sendCopy.assign(static_cast<const uint8_t *>(in),
                           static_cast<const uint8_t *>(in) + inBytes);
      in = req->sendCopy.data();
    }
    checkMpi(MPI_Ireduce_scatter_block(in, recv, int(blockCount), MPI_DOUBLE,
                                       MPI_SUM, comm, &req->request),
             "MPI_Ireduce_scatter_block");
    return req;
  }

  std::unique_ptr<CollectiveRequest>
  startAllGather(const void *send, void *recv, size_t blockBytes) override {
    checkCount(blockBytes * size_t(mySize), "all-gather");
    auto req = std::make_unique<MpiRequest>(
        *this, "all-gather #" + std::to_string(nextCollective++) + " of " +
                   std::to_string(blockBytes) + "-byte blocks" + ofSub());
    uint8_t *out = static_cast<uint8_t *>(recv);
    const void *in = send;
    if (blockBytes && in == out + size_t(myRank) * blockBytes) {
      in = MPI_IN_PLACE;
    } else if (overlap(send, blockBytes, recv, blockBytes * size_t(mySize))) {
      req->sendCopy.assign(static_cast<const uint8_t *>(send),
                           static_cast<const uint8_t *>(send) + blockBytes);
      in = req->sendCopy.data();
    }
    checkMpi(MPI_Iallgather(in, int(blockBytes), MPI_BYTE, recv,
                            int(blockBytes), MPI_BYTE, comm, &req->request),
             "MPI_Iallgather");
    return req;
  }

private:
  /// The communicator whose status queries this one answers and asks.
  MpiCommunicator &faults() { return root ? *root : *this; }
  /// This communicator's rank `r` in the root.
  int toRoot(int r) const { return root ? rootRanks[size_t(r)] : r; }
  /// " of a 2-rank sub-communicator" for a sub-communicator, else "".
  std::string ofSub() const {
    return root ? " of a " + std::to_string(mySize) + "-rank sub-communicator"
                : std::string();
  }
  static bool overlap(const void *a, size_t aBytes, const void *b,
                      size_t bBytes) {
    auto pa = reinterpret_cast<uintptr_t>(a);
    auto pb = reinterpret_cast<uintptr_t>(b);
    return aBytes && bBytes && pa < pb + bBytes && pb < pa + aBytes;
  }
  static void checkCount(size_t count, const char *what) {
    if (count > size_t(INT_MAX))
      throw RuntimeError(std::string("MPI: an ") + what + " of " +
                         std::to_string(count) +
                         " elements exceeds MPI's int count limit (" +
                         std::to_string(INT_MAX) + ")");
  }

  struct Pending {
    int dst = -1;
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<uint8_t> buffer;
  };

  /// What this rank waits for, while it waits (for answers to queries).
  /// (Recorded in the root, in its ranks.) `peer` -1: waiting in a
  /// collective, `what` says which.
  struct Waiting {
    MpiCommunicator &c;
    Waiting(MpiCommunicator &self, int peer, const std::string &what)
        : c(self.faults()) {
      c.waitPeer = peer < 0 ? -1 : self.toRoot(peer);
      c.waitWhat = what;
      c.waitSince = activeSeconds();
    }
    ~Waiting() {
      c.waitPeer = -1;
      c.waitWhat.clear();
    }
  };

  std::string label(int r) const {
    if (root)
      return root->label(toRoot(r));
    if (size_t(r) < rankLabels.size() && !rankLabels[size_t(r)].empty())
      return rankLabels[size_t(r)];
    return "rank " + std::to_string(r);
  }

  /// This rank's answer to a status query.
  std::string statusText() const {
    std::ostringstream os;
    os << label(myRank) << ": ";
    if (!failedWith.empty()) {
      os << "failed: " << failedWith;
    } else if (waitPeer >= 0) {
      os << "waiting " << seconds(activeSeconds() - waitSince) << " for "
         << waitWhat << " " << label(waitPeer)
         << "; the last message it received from that rank: "
         << (lastReceived[size_t(waitPeer)].empty()
                 ? std::string("none")
                 : lastReceived[size_t(waitPeer)]);
    } else if (!waitWhat.empty()) {
      os << "waiting " << seconds(activeSeconds() - waitSince) << " in "
         << waitWhat;
    } else {
      os << "answering (not waiting for a peer)";
    }
    if (!lastSent.empty())
      os << "; its last sent message: " << lastSent;
    return os.str();
  }

  /// Answers every status query that has arrived (without blocking).
  void answerQueries() {
    if (root)
      return root->answerQueries();
    for (auto it = faultSends.begin(); it != faultSends.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? faultSends.erase(it) : std::next(it);
    }
    for (;;) {
      int flag = 0;
      MPI_Status st;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kTagQuery, faultComm, &flag, &st) !=
              MPI_SUCCESS ||
          !flag)
        return;
      char dummy = 0;
      MPI_Recv(&dummy, 1, MPI_BYTE, st.MPI_SOURCE, kTagQuery, faultComm,
               MPI_STATUS_IGNORE);
      std::string text = statusText();
      sendFault(st.MPI_SOURCE, kTagAnswer, text);
    }
  }

  void sendFault(int dst, int tag, const std::string &text) {
    faultSends.emplace_back();
    Pending &p = faultSends.back();
    p.dst = dst;
    p.buffer.assign(text.begin(), text.end());
    p.buffer.push_back(0);
    if (MPI_Isend(p.buffer.data(), int(p.buffer.size()), MPI_BYTE, dst, tag,
                  faultComm, &p.request) != MPI_SUCCESS)
      faultSends.pop_back();
  }

  /// After a timeout: queries every other rank and
  /// returns "; ..." naming the ranks that did not answer (made no
  /// progress) and what the others said.
  std::string diagnose(double timeoutS) {
    if (root)
      return root->diagnose(timeoutS);
    if (mySize < 2)
      return "";
    double graceS = statusGraceS(timeoutS);
    for (int r = 0; r < mySize; ++r)
      if (r != myRank)
        sendFault(r, kTagQuery, "");
    std::vector<std::string> answers(static_cast<size_t>(mySize));
    int missing = mySize - 1;
    Deadline deadline(graceS);
    while (missing > 0 && !deadline.expired()) {
      answerQueries();
      int flag = 0;
      MPI_Status st;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kTagAnswer, faultComm, &flag, &st) !=
          MPI_SUCCESS)
        break;
      if (!flag) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      int count = 0;
      MPI_Get_count(&st, MPI_BYTE, &count);
      std::vector<char> buf(size_t(std::max(count, 1)) + 1, 0);
      MPI_Recv(buf.data(), count, MPI_BYTE, st.MPI_SOURCE, kTagAnswer,
               faultComm, MPI_STATUS_IGNORE);
      std::string &a = answers[size_t(st.MPI_SOURCE)];
      if (a.empty()) {
        a = std::string(buf.data());
        if (a.empty())
          a = "(empty answer)";
        --missing;
      }
    }
    std::vector<int> silent;
    for (int r = 0; r < mySize; ++r)
      if (r != myRank && answers[size_t(r)].empty())
        silent.push_back(r);
    std::ostringstream os;
    if (silent.empty()) {
      os << "; every other rank answered a status query:";
    } else {
      os << "; ";
      for (size_t i = 0; i < silent.size(); ++i)
        os << (i ? ", " : "") << label(silent[i]);
      os << " made"
         << " no progress: no answer to a status query within "
         << seconds(graceS) << " (stopped, stuck in a computation, or dead)";
      for (int r : silent)
        if (!lastReceived[size_t(r)].empty())
          os << "; the last message this rank received from " << label(r)
             << ": " << lastReceived[size_t(r)];
      // The answers of the ranks that did answer, if any (with 2 ranks
      // there are no others).
      if (silent.size() + 1 < size_t(mySize))
        os << "; the others:";
    }
    for (int r = 0; r < mySize; ++r)
      if (r != myRank && !answers[size_t(r)].empty())
        os << " [" << answers[size_t(r)] << "]";
    return os.str();
  }

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
  MPI_Comm faultComm = MPI_COMM_NULL; ///< status queries and answers
  int myRank = 0, mySize = 1;
  std::list<Pending> pending;
  std::list<Pending> faultSends;
  std::vector<std::string> rankLabels;
  std::vector<std::string> lastReceived; ///< [src]: its last message
  std::string lastSent;
  std::string failedWith; ///< set by fail()
  int waitPeer = -1;
  std::string waitWhat;
  double waitSince = 0;
  /// A sub-communicator: the root whose status queries it shares, and its
  /// ranks there ([rank]); null/empty for the root itself.
  MpiCommunicator *root = nullptr;
  std::vector<int> rootRanks;
  uint64_t nextCollective = 0; ///< numbers collectives in errors
};

void MpiRequest::wait(double timeoutS) {
  if (done)
    return;
  if (!error.empty())
    throw RuntimeError(error);
  Deadline deadline(timeoutS);
  MpiCommunicator::Waiting waiting(c, -1, what);
  for (int spin = 0;; ++spin) {
    if (test())
      return;
    c.answerQueries();
    if (deadline.expired()) {
      std::ostringstream os;
      os << "timed out after " << timeoutS << " s in " << what
         << " (a rank stalled, died or never starts this collective)"
         << c.diagnose(timeoutS);
      error = os.str();
      throw TimeoutError(error);
    }
    if (spin > 200)
      std::this_thread::sleep_for(
          std::chrono::microseconds(spin > 2000 ? 1000 : 50));
  }
}

bool MpiRequest::test() {
  if (done)
    return true;
  if (!error.empty())
    throw RuntimeError(error);
  int flag = 0;
  int rc = MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) {
    error = "MPI: MPI_Test of " + what + " failed: " + mpiErrorString(rc);
    throw RuntimeError(error);
  }
  done = flag != 0;
  return done;
}
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
