//===- Loopback.cpp - In-process communicator (ranks as threads) -*- C++
//-*-===//
//
// One mutex + condition variable per destination rank (inbox), one FIFO
// queue per (communicator, source) pair in it. Sends are eager (the payload
// is copied into the queue); recv waits with a deadline. A rank that closes
// (finished or died) wakes its waiting peers, which fail at once if its
// queue is empty.
//
// Every communicator (the world's and each one made by split) is a Group:
// an id, its members (world ranks, in the order of the group's ranks), a
// closed flag per member and its collectives. Messages are queued under
// (group id, source rank of the group), so the messages of a
// sub-communicator never match those of its parent or of a sibling.
//
// Collectives: the n members of a group number their collectives 0, 1, ...
// in the order they start them; collective #s is a rendezvous (Op) in its
// group. Each rank registers its buffers there; the last one to arrive
// computes the result for everybody (sums in ascending rank order, into a
// temporary) and copies it into every rank's output, all under the group's
// mutex, so a rank's buffers are only touched while its request is live.
// Waiters fail at once when a member that has not joined has closed
// (PeerExitedError), when a member gave up (its wait timed out or its
// request was destroyed) or when the members started different
// collectives at the same position.
//
// Device payloads (cuda builds, sendDevice): the sender copies the payload
// into a device buffer of its own device that the message owns (a
// device-to-device copy, peer access through cudaMemcpyDefault); the
// receiver copies it into its buffer and frees it with the message. No
// host copy.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Communicator.h"
#include "pipeopt/runtime/Device.h"
#include "pipeopt/runtime/Watchdog.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <sstream>

namespace pipeopt {
namespace rt {

namespace loopback_detail {

enum class OpKind { AllReduce, ReduceScatter, AllGather, Split };

struct Group;

/// Collective #s of a group: what each member registered, and the outcome.
struct Op {
  OpKind kind = OpKind::AllReduce;
  size_t count = 0; ///< doubles (per block for a reduce-scatter), or bytes
  int firstRank = -1;
  int arrived = 0, departed = 0;
  std::vector<char> joined;     ///< [rank]
  std::vector<const void *> in; ///< [rank], null once departed
  std::vector<void *> out;      ///< [rank], null once departed
  std::vector<int> color, key;  ///< [rank] (split)
  bool done = false;
  std::string failure; ///< non-empty: the operation failed (why)
  /// Split: the new group of each rank and its rank there.
  std::vector<std::shared_ptr<Group>> newGroup;
  std::vector<int> newRank;
};

struct Group {
  uint64_t id = 0;
  std::vector<int> members; ///< [rank] -> world rank
  /// "rank 1", or in a split group "rank 1 (world rank 3)".
  std::string label(int r) const {
    if (id == 0)
      return "rank " + std::to_string(r);
    return "rank " + std::to_string(r) + " (world rank " +
           std::to_string(members[size_t(r)]) + ")";
  }
  std::vector<bool> closed; ///< [rank], guarded by the world's closedMu
  std::mutex mu;            ///< guards ops
  std::condition_variable cv;
  std::map<uint64_t, Op> ops; ///< by sequence number
};

} // namespace loopback_detail

using loopback_detail::Group;
using loopback_detail::Op;
using loopback_detail::OpKind;

struct LoopbackWorld::Impl {
  struct Inbox {
    std::mutex mu;
    std::condition_variable cv;
    /// [(group id, source rank in that group)]
    std::map<std::pair<uint64_t, int>, std::deque<Message>> queues;
  };
  explicit Impl(int n) : inbox(size_t(n)) {
    std::vector<int> all(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r)
      all[size_t(r)] = r;
    worldGroup = newGroup(std::move(all));
  }
  std::vector<Inbox> inbox; // [world rank]
  std::mutex closedMu;      ///< guards every group's closed flags
  std::mutex groupsMu;      ///< guards nextGroupId, groups
  uint64_t nextGroupId = 0;
  std::vector<std::weak_ptr<Group>> groups;
  std::shared_ptr<Group> worldGroup;

  std::shared_ptr<Group> newGroup(std::vector<int> members) {
    auto g = std::make_shared<Group>();
    g->closed.assign(members.size(), false);
    g->members = std::move(members);
    std::lock_guard<std::mutex> lock(groupsMu);
    g->id = nextGroupId++;
    groups.erase(std::remove_if(
                     groups.begin(), groups.end(),
                     [](const std::weak_ptr<Group> &w) { return w.expired(); }),
                 groups.end());
    groups.push_back(g);
    return g;
  }

  /// True once rank `r` of `g` closed that communicator or its world one.
  bool isClosed(const Group &g, int r) {
    std::lock_guard<std::mutex> lock(closedMu);
    return g.closed[size_t(r)] ||
           worldGroup->closed[size_t(g.members[size_t(r)])];
  }

  /// Wakes every waiter (receives and collectives) to look at the closed
  /// flags again.
  void wakeAll() {
    for (auto &box : inbox) {
      // Take the lock so a waiter cannot miss the notification.
      { std::lock_guard<std::mutex> lock(box.mu); }
      box.cv.notify_all();
    }
    std::vector<std::shared_ptr<Group>> live;
    {
      std::lock_guard<std::mutex> lock(groupsMu);
      for (auto &w : groups)
        if (auto g = w.lock())
          live.push_back(std::move(g));
    }
    for (auto &g : live) {
      { std::lock_guard<std::mutex> lock(g->mu); }
      g->cv.notify_all();
    }
  }
};

namespace {

/// "an all-reduce of 5 doubles", "an all-gather of 8-byte blocks".
std::string describeOp(OpKind k, size_t count) {
  std::ostringstream os;
  switch (k) {
  case OpKind::AllReduce:
    os << "an all-reduce of " << count << " doubles";
    break;
  case OpKind::ReduceScatter:
    os << "a reduce-scatter of " << count << "-double blocks";
    break;
  case OpKind::AllGather:
    os << "an all-gather of " << count << "-byte blocks";
    break;
  case OpKind::Split:
    os << "a split";
    break;
  }
  return os.str();
}

/// Computes the result of a collective that every member joined and
/// writes it into every member's output (caller holds the group's mutex).
void compute(Op &op, int n) {
  size_t un = size_t(n);
  switch (op.kind) {
  case OpKind::AllReduce:
  case OpKind::ReduceScatter: {
    size_t total = op.kind == OpKind::AllReduce ? op.count : op.count * un;
    std::vector<double> sum(total);
    if (total) {
      // Ascending rank order: every element is ((x_0 + x_1) + x_2) + ...
      std::memcpy(sum.data(), op.in[0], total * sizeof(double));
      for (size_t k = 1; k < un; ++k) {
        const double *x = static_cast<const double *>(op.in[k]);
        for (size_t i = 0; i < total; ++i)
          sum[i] += x[i];
      }
    }
    size_t block = op.count;
    for (size_t k = 0; k < un; ++k) {
      const double *src =
          op.kind == OpKind::AllReduce ? sum.data() : sum.data() + k * block;
      if (block)
        std::memcpy(op.out[k], src, block * sizeof(double));
    }
    break;
  }
  case OpKind::AllGather: {
    std::vector<uint8_t> all(op.count * un);
    if (op.count) {
      for (size_t k = 0; k < un; ++k)
        std::memcpy(all.data() + k * op.count, op.in[k], op.count);
      for (size_t k = 0; k < un; ++k)
        std::memcpy(op.out[k], all.data(), all.size());
    }
    break;
  }
  case OpKind::Split: {
    // The new rank of each member: by key, ties by rank here. The caller
    // makes the groups (makeGroups).
    std::map<int, std::vector<int>> byColor; // color -> ranks
    for (int k = 0; k < n; ++k)
      byColor[op.color[size_t(k)]].push_back(k);
    op.newGroup.assign(un, nullptr);
    op.newRank.assign(un, -1);
    for (auto &entry : byColor) {
      std::vector<int> &ranks = entry.second;
      std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) {
        return op.key[size_t(a)] < op.key[size_t(b)];
      });
      for (size_t i = 0; i < ranks.size(); ++i)
        op.newRank[size_t(ranks[i])] = int(i);
    }
    break;
  }
  }
  op.done = true;
}

/// A collective of a loopback communicator (see the file comment).
class LoopbackRequest : public CollectiveRequest {
public:
  LoopbackRequest(LoopbackWorld::Impl &world, std::shared_ptr<Group> group,
                  int rank, uint64_t seq, OpKind kind, size_t count)
      : world(world), group(std::move(group)), myRank(rank), seq(seq),
        kind(kind), count(count) {}
  ~LoopbackRequest() override {
    if (finished)
      return;
    {
      std::lock_guard<std::mutex> lock(group->mu);
      auto it = group->ops.find(seq);
      if (it != group->ops.end()) {
        Op &op = it->second;
        if (!op.done && op.failure.empty())
          op.failure =
              label(myRank) + " abandoned " + what() + " before it completed";
        depart(it);
      }
    }
    group->cv.notify_all();
  }

  void wait(double timeoutS) override {
    if (finished) {
      if (!error.empty())
        throw RuntimeError(error);
      return;
    }
    // Active time (Watchdog.h), as for recv.
    Deadline deadline(timeoutS);
    std::unique_lock<std::mutex> lock(group->mu);
    for (;;) {
      if (check(lock))
        return;
      double left = deadline.remaining();
      if (left > 0) {
        group->cv.wait_for(lock, std::chrono::duration<double>(left));
        continue;
      }
      auto it = group->ops.find(seq);
      Op &op = it->second;
      std::string missing = missingRanks(op);
      std::ostringstream os;
      os << "timed out after " << timeoutS << " s in " << what()
         << " waiting for " << missing
         << " (stalled, died or never starts this collective)";
      error = os.str();
      op.failure = label(myRank) + " gave up on " + what() + " after " +
                   std::to_string(timeoutS) + " s waiting for " + missing;
      depart(it);
      lock.unlock();
      group->cv.notify_all();
      throw TimeoutError(error);
    }
  }

  bool test() override {
    if (finished) {
      if (!error.empty())
        throw RuntimeError(error);
      return true;
    }
    std::unique_lock<std::mutex> lock(group->mu);
    return check(lock);
  }

  /// Split: the new group and this rank's rank there (after completion).
  std::shared_ptr<Group> newGroup;
  int newRank = -1;

private:
  std::string label(int r) const { return group->label(r); }
  std::string what() const {
    std::ostringstream os;
    os << "collective #" << seq << " (" << describeOp(kind, count) << ")";
    if (group->id != 0)
      os << " of a " << group->members.size() << "-rank sub-communicator";
    return os.str();
  }
  std::string missingRanks(const Op &op) const {
    std::string s;
    for (size_t k = 0; k < op.joined.size(); ++k)
      if (!op.joined[k])
        s += (s.empty() ? "" : ", ") + label(int(k));
    return s.empty() ? std::string("no rank (all joined)") : s;
  }

  /// Leaves collective `it` (caller holds the group's mutex).
  void depart(std::map<uint64_t, Op>::iterator it) {
    Op &op = it->second;
    op.in[size_t(myRank)] = nullptr;
    op.out[size_t(myRank)] = nullptr;
    finished = true;
    if (++op.departed == int(group->members.size()))
      group->ops.erase(it);
  }

  /// True once done; throws once failed (caller holds the group's mutex).
  bool check(std::unique_lock<std::mutex> &lock) {
    auto it = group->ops.find(seq);
    Op &op = it->second;
    if (op.done) {
      if (kind == OpKind::Split) {
        newGroup = op.newGroup[size_t(myRank)];
        newRank = op.newRank[size_t(myRank)];
      }
      depart(it);
      return true;
    }
    if (!op.failure.empty()) {
      error = what() + " failed: " + op.failure;
      depart(it);
      throw RuntimeError(error);
    }
    for (size_t k = 0; k < op.joined.size(); ++k) {
      if (op.joined[k] || !world.isClosed(*group, int(k)))
        continue;
      error = label(int(k)) +
              " exited (finished or failed) without taking "
              "part in " +
              what();
      depart(it);
      lock.unlock();
      group->cv.notify_all();
      throw PeerExitedError(error);
    }
    return false;
  }

  LoopbackWorld::Impl &world;
  std::shared_ptr<Group> group;
  int myRank;
  uint64_t seq;
  OpKind kind;
  size_t count;
  bool finished = false; ///< departed from the op
  std::string error;     ///< why it failed, if it did
};

class LoopbackCommunicator : public Communicator {
public:
  LoopbackCommunicator(LoopbackWorld::Impl &world, std::shared_ptr<Group> group,
                       int rank)
      : world(world), group(std::move(group)), myRank(rank) {}
  ~LoopbackCommunicator() override { close(); }

  int rank() const override { return myRank; }
  int size() const override { return int(group->members.size()); }
  std::string name() const override { return "loopback"; }

  void send(int dst, const MessageHeader &header, const void *data,
            size_t bytes, double) override {
    checkDestination(dst);
    Message m;
    m.header = header;
    m.payload.resize(bytes);
    if (bytes)
      std::memcpy(m.payload.data(), data, bytes);
    enqueue(dst, std::move(m));
  }

  void sendDevice(int dst, const MessageHeader &header, const void *data,
                  size_t bytes, const Device &device, double) override {
    checkDestination(dst);
    Message m;
    m.header = header;
    if (bytes) {
      auto buf = std::make_shared<DeviceBuffer>(device, bytes);
      device.copy(buf->data(), data, bytes);
      m.devicePayload = buf->data();
      m.devicePayloadBytes = bytes;
      m.deviceOwner = std::move(buf);
    }
    enqueue(dst, std::move(m));
  }

  Message recv(int src, double timeoutS) override {
    if (src < 0 || src >= size())
      throw RuntimeError("loopback: source rank " + std::to_string(src) +
                         " out of range");
    auto &box = world.inbox[size_t(group->members[size_t(myRank)])];
    // Active time (Watchdog.h): a run stopped and continued (Ctrl-Z, SIGSTOP
    // then SIGCONT) does not find its waits expired by the suspension.
    Deadline deadline(timeoutS);
    std::unique_lock<std::mutex> lock(box.mu);
    auto &q = box.queues[{group->id, src}];
    while (q.empty()) {
      if (world.isClosed(*group, src))
        throw PeerExitedError(label(src) +
                              " exited (finished or failed) without "
                              "sending the expected message");
      double left = deadline.remaining();
      if (left > 0) {
        box.cv.wait_for(lock, std::chrono::duration<double>(left));
        continue;
      }
      std::ostringstream os;
      os << "timed out after " << timeoutS << " s waiting for " << label(src)
         << " (it stalled, died or never sends this message)";
      throw TimeoutError(os.str());
    }
    Message m = std::move(q.front());
    q.pop_front();
    return m;
  }

  void close() override {
    if (isClosedFlag)
      return;
    isClosedFlag = true;
    {
      std::lock_guard<std::mutex> lock(world.closedMu);
      group->closed[size_t(myRank)] = true;
    }
    world.wakeAll();
  }

  std::unique_ptr<Communicator> split(int color, int key,
                                      double timeoutS) override {
    if (color < 0)
      throw RuntimeError("loopback: split with color " + std::to_string(color) +
                         " (colors must be >= 0; every rank joins a new "
                         "communicator)");
    auto req = start(OpKind::Split, 0, nullptr, nullptr, color, key);
    req->wait(timeoutS);
    return std::make_unique<LoopbackCommunicator>(world, req->newGroup,
                                                  req->newRank);
  }

  std::unique_ptr<CollectiveRequest> startAllReduceSum(double *data,
                                                       size_t count) override {
    return start(OpKind::AllReduce, count, data, data);
  }

  std::unique_ptr<CollectiveRequest>
  startReduceScatterSum(const double *send, double *recv,
                        size_t blockCount) override {
    return start(OpKind::ReduceScatter, blockCount, send, recv);
  }

  std::unique_ptr<CollectiveRequest>
  startAllGather(const void *send, void *recv, size_t blockBytes) override {
    return start(OpKind::AllGather, blockBytes, send, recv);
  }

private:
  std::string label(int r) const { return group->label(r); }

  void checkDestination(int dst) {
    if (dst < 0 || dst >= size())
      throw RuntimeError("loopback: destination rank " + std::to_string(dst) +
                         " out of range");
    if (world.isClosed(*group, dst))
      throw RuntimeError(label(dst) +
                         " has already exited (it will never receive this)");
  }

  void enqueue(int dst, Message m) {
    auto &box = world.inbox[size_t(group->members[size_t(dst)])];
    {
      std::lock_guard<std::mutex> lock(box.mu);
      box.queues[{group->id, myRank}].push_back(std::move(m));
    }
    box.cv.notify_all();
  }

  /// Joins the next collective of this rank's sequence.
  std::unique_ptr<LoopbackRequest> start(OpKind kind, size_t count,
                                         const void *in, void *out,
                                         int color = 0, int key = 0) {
    uint64_t seq = nextSeq++;
    auto req = std::make_unique<LoopbackRequest>(world, group, myRank, seq,
                                                 kind, count);
    int n = size();
    {
      std::lock_guard<std::mutex> lock(group->mu);
      Op &op = group->ops[seq];
      if (op.joined.empty()) {
        op.kind = kind;
        op.count = count;
        op.firstRank = myRank;
        op.joined.assign(size_t(n), 0);
        op.in.assign(size_t(n), nullptr);
        op.out.assign(size_t(n), nullptr);
        op.color.assign(size_t(n), 0);
        op.key.assign(size_t(n), 0);
      } else if ((op.kind != kind || op.count != count) && op.failure.empty()) {
        op.failure = label(myRank) + " started " + describeOp(kind, count) +
                     " but " + label(op.firstRank) + " started " +
                     describeOp(op.kind, op.count) +
                     " (every rank must start the same collectives in the "
                     "same order)";
      }
      op.joined[size_t(myRank)] = 1;
      op.in[size_t(myRank)] = in;
      op.out[size_t(myRank)] = out;
      op.color[size_t(myRank)] = color;
      op.key[size_t(myRank)] = key;
      if (++op.arrived == n && op.failure.empty()) {
        compute(op, n);
        if (kind == OpKind::Split)
          makeGroups(op);
      }
    }
    group->cv.notify_all();
    return req;
  }

  /// Split: creates the new groups (ranks were assigned by compute).
  void makeGroups(Op &op) {
    size_t n = group->members.size();
    std::map<int, std::vector<int>> byColor; // color -> world ranks by rank
    for (size_t k = 0; k < n; ++k) {
      auto &v = byColor[op.color[k]];
      if (v.size() <= size_t(op.newRank[k]))
        v.resize(size_t(op.newRank[k]) + 1, -1);
      v[size_t(op.newRank[k])] = group->members[k];
    }
    std::map<int, std::shared_ptr<Group>> made;
    for (auto &entry : byColor)
      made[entry.first] = world.newGroup(entry.second);
    for (size_t k = 0; k < n; ++k)
      op.newGroup[k] = made[op.color[k]];
  }

  LoopbackWorld::Impl &world;
  std::shared_ptr<Group> group;
  int myRank;
  bool isClosedFlag = false;
  uint64_t nextSeq = 0;
};
} // namespace

LoopbackWorld::LoopbackWorld(int numRanks) {
  if (numRanks < 1)
    throw RuntimeError("loopback: need at least one rank");
  impl = std::make_unique<Impl>(numRanks);
}
LoopbackWorld::~LoopbackWorld() = default;
int LoopbackWorld::size() const { return int(impl->inbox.size()); }

std::unique_ptr<Communicator> LoopbackWorld::communicator(int rank) {
  if (rank < 0 || rank >= size())
    throw RuntimeError("loopback: rank " + std::to_string(rank) +
                       " out of range");
  return std::make_unique<LoopbackCommunicator>(*impl, impl->worldGroup, rank);
}

} // namespace rt
} // namespace pipeopt
