//===- Runner.h - pipeopt-run: load a model .so and run its ranks -*- C++
//-*-===//
//
// The launcher logic behind the pipeopt-run tool, in the library so tests
// and other programs can drive it. Including this header gives all of it:
//   RunOptions.h  the options and their parsing (runUsage, parseRunOptions)
//   Inputs.h      model inputs: seeded random data, .npy files, tensors
//   Checkpoint.h  reading, verifying and writing training checkpoints
//   Session.h     the library API: load a build, set inputs, run steps,
//                 read outputs and weights, checkpoint and resume
// pipeoptRunMain, below, is a thin client of Session. See docs/Runtime.md
// for the command line, the input conventions and the trace/profile
// formats, and docs/RuntimeSession.md for the Session API.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_RUNNER_H
#define PIPEOPT_RUNTIME_RUNNER_H

#include "pipeopt/runtime/Checkpoint.h"
#include "pipeopt/runtime/Context.h"
#include "pipeopt/runtime/Inputs.h"
#include "pipeopt/runtime/RunOptions.h"
#include "pipeopt/runtime/Session.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pipeopt {
namespace rt {

/// The end of a training step of a build with parameters, after the entry
/// point returned (pipeopt-run calls it on every rank): the ranks of each
/// parameter of `ctx` exchange their gradient sums over `comm`, and each
/// applies the optimizer to its copy with the mean over the M microbatches
/// (asynchronous schedules only check that every microbatch reported). In
/// device mode (ctx.device) the update runs on the device. Returns an error
/// ("" if none: a missing microbatch, a rank that reported nothing);
/// throws RuntimeError on communication or device errors. `step` (from 1)
/// only labels messages.
std::string updateParameters(RankContext &ctx, Communicator &comm, int step,
                             double timeoutS);

/// Entry point of pipeopt-run: returns the process exit code (0 success, 1
/// run-time error, 2 usage or setup error).
int pipeoptRunMain(int argc, char **argv);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_RUNNER_H
