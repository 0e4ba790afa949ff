//===- WatchdogTest.cpp - Watchdog unit tests -----------------------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Watchdog.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

namespace {

using pipeopt::rt::activeSeconds;
using pipeopt::rt::Deadline;
using pipeopt::rt::kActiveMaxGapS;
using pipeopt::rt::Watchdog;
using Clock = std::chrono::steady_clock;

TEST(Watchdog, DisarmingReturnsAtOnce) {
  auto t0 = Clock::now();
  { Watchdog w(30, "never printed"); }
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_LT(s, 5.0); // not the 30 s deadline
}

TEST(Watchdog, CallThatReturnsInTimeIsNotInterrupted) {
  Watchdog w(30, "never printed");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  SUCCEED();
}

TEST(WatchdogDeathTest, ExpiryReportsRunsTheHookAndExits) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Watchdog w(
            0.2, "rank 3: setup timed out after 0.2 s",
            [] { std::fputs("hook ran\n", stderr); }, 7);
        std::this_thread::sleep_for(std::chrono::seconds(20)); // the "hang"
      },
      testing::ExitedWithCode(7),
      "rank 3: setup timed out after 0.2 s\nhook ran");
}

TEST(ActiveClock, AdvancesWithTheProcess) {
  // The steady clock's interval encloses the active clock's (t0 before a0,
  // t1 after a1): the other order failed by microseconds under ASan.
  auto t0 = Clock::now();
  double a0 = activeSeconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  double active = activeSeconds() - a0;
  double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_GT(active, 0.1);
  EXPECT_LE(active, wall + 1e-6); // never ahead of the steady clock
  Deadline d(0.05);
  EXPECT_FALSE(Deadline(30).expired());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(d.expired());
}

TEST(ActiveClock, DeadlineExcludesTheTimeTheProcessWasStopped) {
  // A child waits for a 2 s deadline; it is stopped for 3 s meanwhile.
  // The deadline must not expire at the SIGCONT: the child then ran for
  // more than 3 + 2 - kActiveMaxGapS s of steady time in all.
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto t0 = Clock::now();
    Deadline d(2.0);
    char c = 1;
    if (write(ready[1], &c, 1) != 1)
      _exit(3);
    while (!d.expired())
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    _exit(wall > 3.0 + 2.0 - kActiveMaxGapS - 0.2 ? 0 : 1);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ASSERT_EQ(kill(pid, SIGCONT), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  close(ready[0]);
  close(ready[1]);
}

} // namespace
