//===- Watchdog.cpp - Deadline for blocking calls without one -------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Watchdog.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace pipeopt {
namespace rt {

Watchdog::Watchdog(double timeoutS, std::string message,
                   std::function<void()> onExpiry, int exitCode) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(timeoutS));
  thread = std::thread([this, deadline, message = std::move(message),
                        onExpiry = std::move(onExpiry), exitCode] {
    std::unique_lock<std::mutex> lock(mu);
    if (cv.wait_until(lock, deadline, [this] { return disarmed; }))
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
