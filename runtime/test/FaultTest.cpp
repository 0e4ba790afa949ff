//===- FaultTest.cpp - pipeopt-run under stuck, stopped and misled ranks -===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// Runs the pipeopt-run executable on FakeStuckModel.so (a 3-rank chain whose
// ranks can be made to get stuck, wait or run slowly) and FakeModel.so:
//   * loopback: a rank stuck in a computation ends the run with an error
//     naming it, its stage and its last completed action (issue 34, item 7);
//   * loopback: a run stopped (SIGSTOP) for longer than --timeout-s and
//     continued completes (item 9);
//   * a multi-process launch without --comm mpi is refused (item 11);
//   * MPI: the rank that made no progress is named even by a rank that
//     waited for another one (item 8);
//   * a rank 0 stuck after its last action, which no schedule message
//     waits for, is named (loopback and MPI).
// Every command runs under `timeout` (TERM, then KILL), so that a hang fails
// the test instead of hanging it.
//
//===----------------------------------------------------------------------===//

#include "TestCommand.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using pipeopt_test::CmdResult;
using pipeopt_test::runCommand;

/// A hang is killed after this many seconds (the test then fails).
constexpr int kKillAfterS = 60;

std::string killAfter() {
  return "timeout -k 10 " + std::to_string(kKillAfterS) + " ";
}

std::string stuckModel() {
  return std::string("'") + PIPEOPT_RUN_EXE + "' '" + FAKE_STUCK_SO +
         "' --manifest '" + FAKE_STUCK_MANIFEST + "'";
}

std::string fakeModel() {
  return std::string("'") + PIPEOPT_RUN_EXE + "' '" + FAKE_MODEL_SO +
         "' --manifest '" + FAKE_MANIFEST + "'";
}

bool contains(const std::string &s, const std::string &what) {
  return s.find(what) != std::string::npos;
}

std::string tmpPath(const std::string &name) {
  return ::testing::TempDir() + "/pipeopt_rt_fault_" + name + "_" +
         std::to_string(::getpid());
}

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

//===----------------------------------------------------------------------===//
// Item 7: a rank stuck in a computation, loopback
//===----------------------------------------------------------------------===//

TEST(FaultLoopback, StuckRankEndsTheRunNamingIt) {
  // Rank 0 never returns from its forward of microbatch 1. Rank 1 times out
  // waiting for it (1 s); rank 2 then fails at once (rank 1 exited). The
  // watchdog waits min(timeout, 10 s) more, then names rank 0, its stage and
  // where it is, and ends the process. Before: a silent hang.
  CmdResult r = runCommand(killAfter() + "env PIPEOPT_FAKE_STUCK_RANK=0 " +
                           stuckModel() + " --timeout-s 1");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "rank 1: ")) << r.output;
  EXPECT_TRUE(contains(r.output, "timed out after 1 s waiting for rank 0"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "pipeopt-run: error: rank 0 (stage 0) did "
                                 "not return within 1 s of the first "
                                 "failure"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "in iteration 0 (measured), calling "
                                 "pipeopt_rank_0, in action F for stage 0 "
                                 "microbatch 1 (begun "))
      << r.output;
  EXPECT_TRUE(contains(r.output, "last completed action: F for stage 0 "
                                 "microbatch 0"))
      << r.output;
  EXPECT_LT(r.seconds, 40.0) << r.output;
}

TEST(FaultLoopback, StuckLastRankIsNamedToo) {
  // The last stage gets stuck: nobody waits for it in the schedule, but
  // rank 0 waits for its results; the run ends naming rank 2.
  CmdResult r = runCommand(killAfter() + "env PIPEOPT_FAKE_STUCK_RANK=2 " +
                           stuckModel() + " --timeout-s 1");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "rank 2 (stage 2) did not return"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "in action F for stage 2 microbatch 1"))
      << r.output;
}

TEST(FaultLoopback, RankZeroStuckAtTheEndIsNamed) {
  // Rank 0 gets stuck after its last action and send: nobody waits for it
  // in the schedule, and ranks 1 and 2 finish. They wait for rank 0 to
  // confirm that it has their results (3 x --timeout-s), time out, and the
  // run ends naming rank 0. Before: a silent hang.
  CmdResult r = runCommand(killAfter() +
                           "env PIPEOPT_FAKE_STUCK_RANK=0 "
                           "PIPEOPT_FAKE_STUCK_MB=2 " +
                           stuckModel() + " --timeout-s 1");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "waiting for rank 0 to confirm it has every "
                                 "rank's results: timed out after 3 s"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "rank 0 (stage 0) did not return"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "last completed action: F for stage 0 "
                                 "microbatch 1 (its action 1 of 2"))
      << r.output;
}

//===----------------------------------------------------------------------===//
// Item 9: a loopback run suspended longer than --timeout-s
//===----------------------------------------------------------------------===//

TEST(FaultLoopback, SuspendedRunCompletesAfterSigcont) {
  std::string started = tmpPath("started");
  std::string log = tmpPath("suspend.log");
  std::remove(started.c_str());
  // About 40 * 4 * 20 ms of work: long enough to be stopped mid-run.
  std::string cmd = "exec env PIPEOPT_FAKE_SLEEP_MS=20 PIPEOPT_FAKE_STARTED='" +
                    started + "' " + stuckModel() +
                    " --timeout-s 3 --iterations 40";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Its own process group: if the test's group becomes orphaned while the
    // run is stopped (ctest started from a shell that has exited), the
    // kernel sends that group SIGHUP + SIGCONT (POSIX), which would end the
    // run by SIGHUP; a group whose parent is the test process is not
    // orphaned.
    ::setpgid(0, 0);
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execl("/bin/sh", "sh", "-c", cmd.c_str(), (char *)nullptr);
    _exit(127);
  }
  auto reap = [&](double maxS, int *status) {
    auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
               .count() < maxS) {
      if (waitpid(pid, status, WNOHANG) == pid)
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  // Wait until the ranks run (rank 0 is in its first call).
  struct stat st;
  int status = 0;
  bool exited = false;
  for (int i = 0; i < 3000 && ::stat(started.c_str(), &st) != 0; ++i) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(exited) << "exited before it started: " << readFile(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Stopped for longer than --timeout-s (3 s), like a Ctrl-Z.
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(5000));
  ASSERT_EQ(::kill(pid, SIGCONT), 0);
  if (!reap(kKillAfterS, &status)) {
    ::kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "hung after SIGCONT: " << readFile(log);
  }
  std::string out = readFile(log);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_FALSE(contains(out, "timed out")) << out;
  std::remove(started.c_str());
  std::remove(log.c_str());
}

//===----------------------------------------------------------------------===//
// Item 11: a launch of several processes without --comm mpi
//===----------------------------------------------------------------------===//

TEST(FaultLaunch, SeveralProcessesWithLoopbackAreRefused) {
  // As mpirun and torchrun set it; no MPI needed to see the refusal.
  for (const char *env : {"OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1",
                          "PMI_SIZE=4 PMI_RANK=0", "RANK=0 WORLD_SIZE=2"}) {
    CmdResult r = runCommand(killAfter() + "env " + env + " " + fakeModel());
    EXPECT_EQ(r.code, 2) << env << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "--comm is loopback")) << r.output;
    EXPECT_TRUE(contains(r.output, "--comm mpi")) << r.output;
  }
  CmdResult r =
      runCommand(killAfter() + "env OMPI_COMM_WORLD_SIZE=2 " + fakeModel());
  EXPECT_TRUE(contains(r.output, "(OMPI_COMM_WORLD_SIZE=2)")) << r.output;
  // One process (mpirun -np 1, a lone WORLD_SIZE without RANK) still runs.
  for (const char *env : {"OMPI_COMM_WORLD_SIZE=1", "WORLD_SIZE=2"}) {
    r = runCommand(killAfter() + "env " + env + " " + fakeModel() + " --quiet");
    EXPECT_EQ(r.code, 0) << env << ": " << r.output;
  }
}

#ifdef MPIEXEC
std::string mpirun(int np, const std::string &env) {
  return killAfter() + "'" + MPIEXEC + "' " + MPIEXEC_FLAGS + " " + env +
         " -np " + std::to_string(np) + " ";
}

TEST(FaultMpi, MpirunWithoutCommMpiIsRefused) {
  // Before: both processes ran the whole job, exit 0.
  CmdResult r = runCommand(mpirun(2, "") + fakeModel());
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "OMPI_COMM_WORLD_SIZE=2")) << r.output;
  EXPECT_TRUE(contains(r.output, "--comm is loopback")) << r.output;
}

//===----------------------------------------------------------------------===//
// Item 8: MPI names the rank that made no progress
//===----------------------------------------------------------------------===//

TEST(FaultMpi, RankThatMadeNoProgressIsNamed) {
  // Rank 0 is stuck in its first forward. Rank 2 waits for rank 1 from the
  // start and times out first (4 s); rank 1 computes 2.5 s first and then
  // waits for rank 0. Before, rank 2 reported "waiting for rank 1" and
  // aborted the job before rank 1 could blame rank 0. Now rank 2's error
  // says that rank 0 made no progress (it does not answer a status query,
  // rank 1 answers that it waits for rank 0).
  CmdResult r = runCommand(
      mpirun(3, "-x PIPEOPT_FAKE_STUCK_RANK=0 -x PIPEOPT_FAKE_STUCK_MB=0 "
                "-x PIPEOPT_FAKE_DELAY_RANK=1 -x PIPEOPT_FAKE_DELAY_S=2.5") +
      stuckModel() + " --comm mpi --timeout-s 4");
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "rank 0 (stage 0) made no progress"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "rank 1 (stage 1): waiting")) << r.output;
  EXPECT_LT(r.seconds, 50.0) << r.output;
}

TEST(FaultMpi, RankZeroStuckAtTheEndIsNamed) {
  // Rank 0 gets stuck after its last send. Before, ranks 1 and 2 finished
  // and waited in MPI_Finalize forever; now they wait for rank 0's
  // confirmation of their results, time out and name rank 0.
  CmdResult r = runCommand(
      mpirun(3, "-x PIPEOPT_FAKE_STUCK_RANK=0 -x PIPEOPT_FAKE_STUCK_MB=2") +
      stuckModel() + " --comm mpi --timeout-s 1");
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "waiting for rank 0 to confirm it has every "
                                 "rank's results: timed out after 3 s"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "rank 0 (stage 0) made no progress"))
      << r.output;
  EXPECT_LT(r.seconds, 50.0) << r.output;
}
#endif

} // namespace
