//===- Pinning.cpp - rank-to-core pinning -----------------------*- C++ -*-===//
//
// --pin-ranks: pinning the in-process rank threads to cores (LPT over
// their measured CPU time, Placement.h).
//
//===----------------------------------------------------------------------===//

#include "RunnerInternal.h"
#include "pipeopt/runtime/Placement.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <cstdio>
#include <cstring>

namespace pipeopt {
namespace rt {

using namespace runner;

namespace runner {

/// " (1.23 ms)".
std::string msInParens(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), " (%.3g ms)", s * 1e3);
  return buf;
}

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

/// Pins the calling thread, local rank `slot` of `p`, to its core of the
/// LPT assignment of p.cpuS.
void pinThisRank(RankPinning &p, size_t slot) {
  std::vector<int> core = assignRanksToCores(p.cpuS, int(p.cpus.size()));
  int cpu = p.cpus[size_t(core[slot])];
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (rc == 0)
    p.cpuOf[slot] = cpu;
  else
    p.errors[slot] = std::strerror(rc);
}

} // namespace runner

} // namespace rt
} // namespace pipeopt
