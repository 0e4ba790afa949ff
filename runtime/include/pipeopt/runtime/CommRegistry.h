//===- CommRegistry.h - The table of communicator kinds ---------*- C++ -*-===//
//
// Every communicator pipeopt-run can use (--comm) is one row of one table
// (lib/CommunicatorFactory.cpp): its name, the description the help text
// shows, an availability check, the bootstrap that decides how this process
// joins the run, and the factory of its communicators. The option parser
// (RunOptions.cpp), the usage text, the session (Session.cpp) and
// createCommunicators (Communicator.h) all read the table; adding a
// communicator is adding a row.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_COMMREGISTRY_H
#define PIPEOPT_RUNTIME_COMMREGISTRY_H

#include "pipeopt/runtime/Communicator.h"

#include <string>
#include <vector>

namespace pipeopt {
namespace rt {

/// One communicator kind.
struct CommunicatorKind {
  /// The --comm value ("loopback", "mpi", "nccl").
  const char *name;
  /// What --help says about it, e.g. "loopback (default; ranks as
  /// threads)".
  const char *description;
  /// "" when the kind can be used by this build on this machine, else why
  /// not (e.g. "this runtime was built without MPI"). May load libraries
  /// (NCCL: dlopen); never throws.
  std::string (*availability)();
  /// Decides from the environment how this process takes part in the run:
  /// sets world.useMpi, ncclOverMpi, ncclOverEnv (world.comm is already
  /// the name). Called before MPI is initialized; throws RuntimeError when
  /// the process cannot run with this kind (e.g. loopback under mpirun,
  /// which would run the whole job in every process).
  void (*bootstrap)(CommWorld &world);
  /// Creates the communicators of `localRanks` into `out.comms` (sized
  /// like localRanks) and `out.world`; throws RuntimeError.
  void (*create)(const CommWorld &world, int numRanks,
                 const std::vector<int> &localRanks, double timeoutS,
                 Communicators &out);
};

/// The rows, in the order the help text and error messages list them; the
/// first is the default.
const std::vector<CommunicatorKind> &communicatorKinds();

/// The row named `name`, or nullptr.
const CommunicatorKind *findCommunicatorKind(const std::string &name);

/// The names for messages: "loopback, mpi or nccl".
std::string communicatorNameList();

/// The descriptions for the usage text: "loopback (...) | mpi (...) | ...".
std::string communicatorDescriptions();

/// Joins the world that the bootstrap decided: initializes MPI when
/// world.useMpi (with the program's `argc`/`argv`, which may be null) and
/// sets procRank/procSize from MPI or from RANK/WORLD_SIZE (ncclOverEnv).
/// Throws RuntimeError.
void joinCommWorld(CommWorld &world, int *argc, char ***argv);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_COMMREGISTRY_H
