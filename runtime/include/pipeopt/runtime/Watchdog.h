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
// The deadlines of the runtime (every communicator's waits, the Watchdog)
// count the time this process actually ran (activeSeconds): a process
// stopped with SIGSTOP or Ctrl-Z and continued later does not find its
// waits expired by the time it was stopped.
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

/// Seconds this process has run (monotonic, arbitrary origin), not counting
/// the time it was stopped (SIGSTOP, SIGTSTP/Ctrl-Z until SIGCONT). A
/// background thread ticks every kActiveTickS; a gap between ticks of more
/// than kActiveMaxGapS (the process was stopped, or the ticker not
/// scheduled for that long) counts as kActiveMaxGapS. So a suspension costs
/// a wait at most kActiveMaxGapS of its timeout, and a heavily loaded
/// machine can only make timeouts longer, never shorter.
double activeSeconds();
constexpr double kActiveTickS = 0.05;
constexpr double kActiveMaxGapS = 0.5;

/// A deadline `seconds` of activeSeconds() from now: the one clock that every
/// blocking wait of the runtime uses (Loopback.cpp, Mpi.cpp, the Watchdog).
class Deadline {
public:
  explicit Deadline(double seconds) : start(activeSeconds()), limit(seconds) {}
  /// Active seconds since construction.
  double elapsed() const { return activeSeconds() - start; }
  /// Active seconds left (<= 0 once expired).
  double remaining() const { return limit - elapsed(); }
  bool expired() const { return remaining() <= 0; }

private:
  double start, limit;
};

/// Armed on construction; disarmed by its destructor (which returns at once,
/// without waiting for the deadline). If still armed `timeoutS` seconds
/// (of activeSeconds) after construction, it writes "<message>\n" to stderr in
/// one write, calls `onExpiry` (for example MPI_Abort, so that the other
/// processes of the job end too) and then ends the process with exit status
/// `exitCode` (std::_Exit: no destructors run, since the blocked call still
/// owns its state).
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
