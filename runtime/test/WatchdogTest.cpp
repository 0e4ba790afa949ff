//===- WatchdogTest.cpp - Watchdog unit tests -----------------------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Watchdog.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace {

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

} // namespace
