//===- RunMain.cpp - pipeopt-run: a thin client of Session ------*- C++ -*-===//
//
// pipeoptRunMain (Runner.h): parse the options, load the build into a
// Session, set its inputs, resume, run, write the results; print every
// error and map it to the exit code (0 success, 1 run-time error, 2 usage
// or setup error).
//
//===----------------------------------------------------------------------===//

#include "RunnerInternal.h"

#include <algorithm>
#include <iostream>
#include <limits>

#include <malloc.h>

namespace pipeopt {
namespace rt {

using namespace runner;

int pipeoptRunMain(int argc, char **argv) {
  // Large buffers stay with the allocator instead of being mapped and
  // unmapped on every call: every step allocates the same activations and
  // exchange buffers again, and page faults on fresh mappings were a tenth
  // of a small model's run time and 700 ms of GPT-2 8 x 512's 2-rank step
  // (its tied embedding's 206 MB of f64 sums cross between the ranks).
  // glibc maps every request above 32 MiB (it refuses a larger
  // M_MMAP_THRESHOLD) and, in any arena but the main one, every request
  // larger than its 64 MiB heaps: so one arena, no mappings, no trimming.
  // Only pipeopt-run, a process of its own, does this; a Session in
  // another program (Python) leaves that program's allocator alone. The
  // model's own buffers go through the buffer cache (BufferCache.h) either
  // way.
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());

  RunOptions o;
  try {
    o = parseRunOptions(argc, argv);
  } catch (const RuntimeError &e) {
    if (std::string(e.what()) == "help") {
      std::cout << runUsage();
      return 0;
    }
    std::cerr << "pipeopt-run: error: " << e.what() << "\n" << runUsage();
    return 2;
  }

  Session session;
  // A setup error: printed; with MPI every process of the job ends.
  auto setupFailed = [&](const Status &st) {
    printError(st.message());
    if (session.usesMpi())
      mpiAbort(2);
    return 2;
  };
  Status st = session.load(o, &argc, &argv);
  if (!st)
    return setupFailed(st);
  // Outputs travel to rank 0 only for --output-dir.
  session.setCollectOutputs(false);
  // So do the parameters after the run, and where a parameter has copies
  // on several ranks of the pipeline: the gathering checks them bit for
  // bit (replica 0's ranks only: the replicas are not compared).
  // Otherwise the gathered copy of every weight with its optimizer state
  // (1.2 GB for GPT-2 8 x 512, the run's peak memory) would serve nothing.
  // Checkpoints gather their own.
  const std::vector<ManifestParameter> &params = session.manifest().parameters;
  bool copies =
      std::any_of(params.begin(), params.end(), [](const ManifestParameter &p) {
        return p.ranks.size() > 1;
      });
  session.setGatherAfterRun(!o.outputDir.empty() || copies);
  // The ranks' parameter state is the only copy of the weights it needs.
  session.setReleaseParameterInputs(true);
  // Inputs without --input: seeded random data.
  session.setRandomInputs(true, o.seed);
  st = session.prepareInputs();
  if (!st)
    return setupFailed(st);
  if (!o.resumeDir.empty()) {
    std::vector<std::string> notes;
    st = session.resume(o.resumeDir, &notes);
    if (!st)
      return setupFailed(st);
    // A fallback to an older checkpoint is never silent (not even with
    // --quiet): it costs the steps since.
    for (const std::string &note : notes) {
      std::string line =
          "pipeopt-run: warning: --resume " + o.resumeDir + ": " + note + "\n";
      std::fwrite(line.data(), 1, line.size(), stderr);
    }
    if (session.stepsDone() >= o.iterations)
      return setupFailed(Status::error(
          2, "--resume " + o.resumeDir + ": the latest checkpoint is of step " +
                 std::to_string(session.stepsDone()) + ", but --steps " +
                 std::to_string(o.iterations) +
                 " asks for no more steps (--steps is the total number of "
                 "steps)"));
  }

  st = session.run(o.iterations - session.stepsDone());
  if (st.code() == 2)
    return setupFailed(st);
  if (!st) {
    for (const std::string &error : session.rankErrors())
      printError(error);
    if (session.usesMpi()) {
      // Peers may be blocked on this rank; MPI_Abort ends them promptly,
      // after a grace period in which this rank answers the status queries
      // of peers that diagnose their own timeouts (Mpi.cpp) with its error,
      // and its error reaches mpirun's output.
      session.abandonAfterFailure();
      mpiAbort(1);
    }
    return 1;
  }
  st = session.writeResults(std::cout);
  if (!st) {
    printError(st.message());
    return 1;
  }
  return 0;
}

} // namespace rt
} // namespace pipeopt
