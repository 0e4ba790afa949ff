//===- CommunicatorFactory.cpp - Every communicator kind, in one place ----===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// The registry of communicator kinds (CommRegistry.h), one row each:
// loopback (one world of threads), mpi (one rank per process) and nccl (one
// GPU per rank, bootstrapped over MPI, a torchrun-style file rendezvous, or
// threads of one process); and createCommunicators (Communicator.h), which
// calls the factory of a row. Adding a communicator is adding a row.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/CommRegistry.h"
#include "pipeopt/runtime/Watchdog.h"

#include <cstdlib>
#include <functional>
#include <sstream>
#include <thread>

namespace pipeopt {
namespace rt {

namespace {
std::string envOr(const char *name, const std::string &dflt) {
  const char *v = std::getenv(name);
  return v && *v ? std::string(v) : dflt;
}
} // namespace

LaunchEnvironment detectLaunchEnvironment() {
  LaunchEnvironment env;
  auto consider = [&](const char *name) {
    const char *v = std::getenv(name);
    if (!v || !*v)
      return;
    char *end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (end && *end == 0 && n > env.size && n < (1 << 24)) {
      env.size = int(n);
      env.variable = std::string(name) + "=" + v;
    }
  };
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    consider(name);
  if (std::getenv("RANK"))
    consider("WORLD_SIZE");
  return env;
}

namespace {

void createLoopback(const CommWorld &, int numRanks,
                    const std::vector<int> &localRanks, double,
                    Communicators &out) {
  out.world = std::make_unique<LoopbackWorld>(numRanks);
  for (size_t i = 0; i < localRanks.size(); ++i)
    out.comms[i] = out.world->communicator(localRanks[i]);
}

/// Loopback runs every rank in this process: started as one of several
/// processes (mpirun without --comm mpi), every process would run the whole
/// job, racing on the output and checkpoint files.
void bootstrapLoopback(CommWorld &) {
  LaunchEnvironment launch = detectLaunchEnvironment();
  if (launch.size > 1)
    throw RuntimeError(
        "this process is one of " + std::to_string(launch.size) +
        " started by a launcher (" + launch.variable +
        "), but --comm is loopback, which runs every rank in each "
        "process: every process would run the whole job. Use "
        "--comm mpi (mpirun) or --comm nccl, or start one process");
}

std::string mpiAvailability() {
  return haveMpi() ? "" : "this runtime was built without MPI";
}

void bootstrapMpi(CommWorld &w) { w.useMpi = true; }

void createMpi(const CommWorld &, int, const std::vector<int> &, double,
               Communicators &out) {
  out.comms[0] = createMpiCommunicator();
}

/// NCCL over MPI under an MPI launcher, over RANK/WORLD_SIZE (torchrun
/// style), else all ranks in this process.
void bootstrapNccl(CommWorld &w) {
  if (haveMpi() && (std::getenv("OMPI_COMM_WORLD_SIZE") ||
                    std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK")))
    w.ncclOverMpi = w.useMpi = true;
  else if (std::getenv("RANK") && std::getenv("WORLD_SIZE"))
    w.ncclOverEnv = true;
}

void createNccl(const CommWorld &w, int numRanks,
                const std::vector<int> &localRanks, double timeoutS,
                Communicators &out) {
  std::string why = ncclAvailability();
  if (!why.empty())
    throw RuntimeError("--comm=nccl: " + why);
  int ndev = cudaDeviceCount();
  if (ndev < 1)
    throw RuntimeError("--comm=nccl: no CUDA device is visible");
  // ncclCommInitRank has no timeout: a rank that never joins (not
  // started, died, or given another id) would stall the others forever.
  std::ostringstream who;
  if (localRanks.size() == 1)
    who << "rank " << localRanks[0];
  else
    who << "ranks 0-" << localRanks.back();
  who << ": NCCL communicator setup (ncclCommInitRank) timed out after "
      << timeoutS << " s waiting for the other ranks to join (one "
      << "never started, died, or was given a different NCCL id)";
  std::function<void()> abortJob;
  if (w.useMpi)
    abortJob = [] { mpiAbort(1); };
  auto armWatchdog = [&] {
    return std::make_unique<Watchdog>(
        timeoutS, "pipeopt-run: error: " + who.str(), abortJob);
  };
  if (w.ncclOverMpi || w.ncclOverEnv) {
    NcclId id{};
    if (w.ncclOverMpi) {
      if (w.procRank == 0)
        id = ncclCreateId();
      mpiBroadcast(id.data(), id.size(), 0);
    } else {
      std::string path = envOr("PIPEOPT_NCCL_ID_FILE", "");
      if (path.empty())
        throw RuntimeError("--comm=nccl with RANK/WORLD_SIZE needs "
                           "PIPEOPT_NCCL_ID_FILE (a path on a shared "
                           "file system, fresh for each run)");
      id = ncclExchangeIdViaFile(w.procRank, path, timeoutS);
    }
    int local = std::atoi(envOr("OMPI_COMM_WORLD_LOCAL_RANK",
                                envOr("LOCAL_RANK", std::to_string(w.procRank)))
                              .c_str());
    auto watchdog = armWatchdog();
    int device = w.devices.empty() ? local % ndev : w.devices[0];
    out.comms[0] = createNcclCommunicator(w.procRank, w.procSize, id, device);
  } else {
    if (ndev < numRanks)
      throw RuntimeError("--comm=nccl in one process needs one GPU per rank (" +
                         std::to_string(numRanks) + "), but " +
                         std::to_string(ndev) +
                         " are visible; NCCL rejects two ranks on one GPU");
    std::vector<int> devices = w.devices;
    if (devices.empty())
      devices = localRanks;
    for (size_t i = 0; i < devices.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (devices[i] == devices[j])
          throw RuntimeError(
              "--comm=nccl: ranks " + std::to_string(localRanks[j]) + " and " +
              std::to_string(localRanks[i]) + " would share CUDA device " +
              std::to_string(devices[i]) +
              " (--devices); NCCL rejects two ranks on one GPU");
    NcclId id = ncclCreateId();
    auto watchdog = armWatchdog();
    std::vector<std::thread> init;
    std::vector<std::string> errs(localRanks.size());
    for (size_t i = 0; i < localRanks.size(); ++i)
      init.emplace_back([&, i] {
        try {
          out.comms[i] =
              createNcclCommunicator(localRanks[i], numRanks, id, devices[i]);
        } catch (const std::exception &e) {
          errs[i] = e.what();
        }
      });
    for (auto &t : init)
      t.join();
    for (auto &e : errs)
      if (!e.empty())
        throw RuntimeError(e);
  }
}

} // namespace

const std::vector<CommunicatorKind> &communicatorKinds() {
  static const std::vector<CommunicatorKind> kinds = {
      {"loopback", "loopback (default; ranks as threads)",
       [] { return std::string(); }, bootstrapLoopback, createLoopback},
      {"mpi", "mpi (one rank per process under mpirun)", mpiAvailability,
       bootstrapMpi, createMpi},
      {"nccl", "nccl (one rank per GPU)", ncclAvailability, bootstrapNccl,
       createNccl},
  };
  return kinds;
}

const CommunicatorKind *findCommunicatorKind(const std::string &name) {
  for (const CommunicatorKind &k : communicatorKinds())
    if (name == k.name)
      return &k;
  return nullptr;
}

std::string communicatorNameList() {
  const std::vector<CommunicatorKind> &kinds = communicatorKinds();
  std::string s;
  for (size_t i = 0; i < kinds.size(); ++i)
    s += std::string(i == 0                  ? ""
                     : i + 1 == kinds.size() ? " or "
                                             : ", ") +
         kinds[i].name;
  return s;
}

std::string communicatorDescriptions() {
  std::string s;
  for (const CommunicatorKind &k : communicatorKinds())
    s += (s.empty() ? "" : " | ") + std::string(k.description);
  return s;
}

void joinCommWorld(CommWorld &w, int *argc, char ***argv) {
  if (w.useMpi) {
    mpiInitialize(argc, argv);
    w.procRank = mpiWorldRank();
    w.procSize = mpiWorldSize();
  } else if (w.ncclOverEnv) {
    w.procRank = std::atoi(std::getenv("RANK"));
    w.procSize = std::atoi(std::getenv("WORLD_SIZE"));
  }
}

Communicators createCommunicators(const CommWorld &w, int numRanks,
                                  const std::vector<int> &localRanks,
                                  double timeoutS) {
  const CommunicatorKind *kind = findCommunicatorKind(w.comm);
  if (!kind)
    throw RuntimeError("unknown communicator '" + w.comm +
                       "' (known: " + communicatorNameList() + ")");
  Communicators r;
  r.comms.resize(localRanks.size());
  kind->create(w, numRanks, localRanks, timeoutS, r);
  r.name = kind->name;
  return r;
}

} // namespace rt
} // namespace pipeopt
