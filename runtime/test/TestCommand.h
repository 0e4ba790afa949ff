//===- TestCommand.h - Run a command from a runtime test --------*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// The tests that drive pipeopt-run as a user would (RunnerTest, FaultTest,
// ModelLibraryTest) run it through the shell with stderr merged into stdout.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_TEST_TESTCOMMAND_H
#define PIPEOPT_RUNTIME_TEST_TESTCOMMAND_H

#include <chrono>
#include <cstdio>
#include <string>

#include <sys/wait.h>

namespace pipeopt_test {

/// What a command did.
struct CmdResult {
  int code = -1;      ///< exit status; 128 if killed by a signal
  std::string output; ///< stdout and stderr, interleaved
  double seconds = 0; ///< wall time
};

/// Runs `cmd` with /bin/sh (`cmd 2>&1`) and waits for it.
inline CmdResult runCommand(const std::string &cmd) {
  CmdResult r;
  auto t0 = std::chrono::steady_clock::now();
  FILE *p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p)
    return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
    r.output.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  r.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return r;
}

} // namespace pipeopt_test

#endif // PIPEOPT_RUNTIME_TEST_TESTCOMMAND_H
