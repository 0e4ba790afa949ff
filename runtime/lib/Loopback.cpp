//===- Loopback.cpp - In-process communicator (ranks as threads) -*- C++
//-*-===//
//
// One FIFO queue per (src, dst) pair, one mutex + condition variable per
// destination. Sends are eager (the payload is copied into the queue); recv
// waits with a deadline. A rank that closes (finished or died) wakes its
// waiting peers, which fail at once if its queue is empty.
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

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <sstream>

namespace pipeopt {
namespace rt {

struct LoopbackWorld::Impl {
  struct Inbox {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::deque<Message>> fromRank; // [src]
  };
  explicit Impl(int n) : inbox(n), closed(size_t(n), false) {
    for (auto &i : inbox)
      i.fromRank.resize(n);
  }
  std::vector<Inbox> inbox; // [dst]
  std::mutex closedMu;
  std::vector<bool> closed; // [rank], guarded by closedMu

  bool isClosed(int r) {
    std::lock_guard<std::mutex> lock(closedMu);
    return closed[r];
  }
};

namespace {
class LoopbackCommunicator : public Communicator {
public:
  LoopbackCommunicator(LoopbackWorld::Impl &world, int rank)
      : world(world), myRank(rank) {}
  ~LoopbackCommunicator() override { close(); }

  int rank() const override { return myRank; }
  int size() const override { return int(world.inbox.size()); }
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

  void checkDestination(int dst) {
    if (dst < 0 || dst >= size())
      throw RuntimeError("loopback: destination rank " + std::to_string(dst) +
                         " out of range");
    if (world.isClosed(dst))
      throw RuntimeError("rank " + std::to_string(dst) +
                         " has already exited (it will never receive this)");
  }

  void enqueue(int dst, Message m) {
    auto &box = world.inbox[dst];
    {
      std::lock_guard<std::mutex> lock(box.mu);
      box.fromRank[myRank].push_back(std::move(m));
    }
    box.cv.notify_all();
  }

  Message recv(int src, double timeoutS) override {
    if (src < 0 || src >= size())
      throw RuntimeError("loopback: source rank " + std::to_string(src) +
                         " out of range");
    auto &box = world.inbox[myRank];
    // Active time (Watchdog.h): a run stopped and continued (Ctrl-Z, SIGSTOP
    // then SIGCONT) does not find its waits expired by the suspension.
    Deadline deadline(timeoutS);
    std::unique_lock<std::mutex> lock(box.mu);
    auto &q = box.fromRank[src];
    while (q.empty()) {
      if (world.isClosed(src))
        throw PeerExitedError("rank " + std::to_string(src) +
                              " exited (finished or failed) without "
                              "sending the expected message");
      double left = deadline.remaining();
      if (left > 0) {
        box.cv.wait_for(lock, std::chrono::duration<double>(left));
        continue;
      }
      std::ostringstream os;
      os << "timed out after " << timeoutS << " s waiting for rank " << src
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
      world.closed[myRank] = true;
    }
    for (auto &box : world.inbox) {
      // Take the lock so a waiter cannot miss the notification.
      { std::lock_guard<std::mutex> lock(box.mu); }
      box.cv.notify_all();
    }
  }

private:
  LoopbackWorld::Impl &world;
  int myRank;
  bool isClosedFlag = false;
};
} // namespace

LoopbackWorld::LoopbackWorld(int numRanks) : impl(new Impl(numRanks)) {
  if (numRanks < 1)
    throw RuntimeError("loopback: need at least one rank");
}
LoopbackWorld::~LoopbackWorld() = default;
int LoopbackWorld::size() const { return int(impl->inbox.size()); }

std::unique_ptr<Communicator> LoopbackWorld::communicator(int rank) {
  if (rank < 0 || rank >= size())
    throw RuntimeError("loopback: rank " + std::to_string(rank) +
                       " out of range");
  return std::make_unique<LoopbackCommunicator>(*impl, rank);
}

} // namespace rt
} // namespace pipeopt
