//===- Watchdog.cpp - Deadline for blocking calls without one -------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Watchdog.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <pthread.h>

namespace pipeopt {
namespace rt {

namespace {
/// The state behind activeSeconds(): at the last tick (steady clock
/// `lastTick`), the process had run `activeAtTick` seconds.
struct ActiveClock {
  std::mutex mu;
  double lastTick = 0;
  double activeAtTick = 0;
  /// Whether this process has a ticker thread (false in a forked child
  /// until its first activeSeconds()).
  std::atomic<bool> ticking{false};

  static double steadyNow() {
    return std::chrono::duration<double>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  /// Active seconds at steady time `now` (caller holds mu).
  double activeAt(double now) const {
    return activeAtTick + std::clamp(now - lastTick, 0.0, kActiveMaxGapS);
  }
  /// Starts the ticker if this process has none (caller holds mu).
  void ensureTicker() {
    if (ticking.load(std::memory_order_relaxed))
      return;
    ticking = true;
    // Detached: it only touches this object, which is never destroyed.
    std::thread([this] {
      for (;;) {
        std::this_thread::sleep_for(
            std::chrono::duration<double>(kActiveTickS));
        std::lock_guard<std::mutex> lock(mu);
        double now = steadyNow();
        activeAtTick = activeAt(now);
        lastTick = now;
      }
    }).detach();
  }
};

/// Never destroyed: the ticker thread outlives static destruction.
ActiveClock *theClock = nullptr;

ActiveClock &activeClock() {
  static bool initialized = [] {
    theClock = new ActiveClock;
    theClock->lastTick = ActiveClock::steadyNow();
    // fork(): the child has no ticker thread and must not inherit a locked
    // mutex; it starts its own ticker at its first activeSeconds().
    pthread_atfork([] { theClock->mu.lock(); }, [] { theClock->mu.unlock(); },
                   [] {
                     theClock->ticking = false;
                     theClock->mu.unlock();
                   });
    return true;
  }();
  (void)initialized;
  return *theClock;
}
} // namespace

double activeSeconds() {
  ActiveClock &c = activeClock();
  std::lock_guard<std::mutex> lock(c.mu);
  c.ensureTicker();
  return c.activeAt(ActiveClock::steadyNow());
}

Watchdog::Watchdog(double timeoutS, std::string message,
                   std::function<void()> onExpiry, int exitCode) {
  Deadline deadline(timeoutS);
  thread = std::thread([this, deadline, message = std::move(message),
                        onExpiry = std::move(onExpiry), exitCode] {
    std::unique_lock<std::mutex> lock(mu);
    // Rechecks after every wait: the deadline counts active time, which
    // the steady clock of wait_for overstates after a suspension.
    while (!disarmed && !deadline.expired())
      cv.wait_for(lock, std::chrono::duration<double>(
                            std::max(0.01, deadline.remaining())));
    if (disarmed)
      return;
    std::string line = message + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
    if (onExpiry)
      onExpiry();
    std::_Exit(exitCode);
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu);
    disarmed = true;
  }
  cv.notify_all();
  thread.join();
}

} // namespace rt
} // namespace pipeopt
