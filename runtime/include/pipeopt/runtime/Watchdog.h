//===- Watchdog.h - Deadline for blocking calls without one -----*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// Some blocking calls offer no timeout: ncclCommInitRank waits forever for a
// rank that never joins. A tool that must turn such a hang into an error
// arms a Watchdog around the call; if the call has not returned when the
// deadline passes, the watchdog reports and ends the process. This is for
// tools (pipeopt-run), not for library code that a caller embeds.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_WATCHDOG_H
#define PIPEOPT_RUNTIME_WATCHDOG_H

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace pipeopt {
namespace rt {

/// Armed on construction; disarmed by its destructor (which returns at once,
/// without waiting for the deadline). If still armed `timeoutS` seconds after
/// construction, it writes "<message>\n" to stderr in one write, calls
/// `onExpiry` (for example MPI_Abort, so that the other processes of the job
/// end too) and then ends the process with exit status `exitCode`
/// (std::_Exit: no destructors run, since the blocked call still owns its
/// state).
class Watchdog {
public:
  Watchdog(double timeoutS, std::string message,
           std::function<void()> onExpiry = {}, int exitCode = 1);
  ~Watchdog();
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;

private:
  std::mutex mu;
  std::condition_variable cv;
  bool disarmed = false;
  std::thread thread;
};

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_WATCHDOG_H
