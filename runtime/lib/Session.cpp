//===- Session.cpp - Load a build, run it, read it back ---------*- C++ -*-===//
//
// Session (Session.h): the world of this process (which ranks it runs,
// over which communicator), the model's entry points, the inputs, the
// state between runs (weights, optimizer state, losses, steps), the rank
// threads with their watchdog and pinning, and the results of the last run.
//
//===----------------------------------------------------------------------===//

#include "DataParallel.h"
#include "RunnerInternal.h"
#include "pipeopt/runtime/BufferCache.h"
#include "pipeopt/runtime/CommRegistry.h"
#include "pipeopt/runtime/Device.h"
#include "pipeopt/runtime/ElfCheck.h"
#include "pipeopt/runtime/Kernels.h"
#include "pipeopt/runtime/ModelLibrary.h"
#include "pipeopt/runtime/Placement.h"
#include "pipeopt/runtime/Watchdog.h"

#include <dlfcn.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

namespace pipeopt {
namespace rt {

using namespace runner;

void runner::printError(const std::string &message) {
  // One write(2), so that the lines of several MPI processes sharing one
  // stderr never interleave mid-line.
  std::string line = "pipeopt-run: error: " + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

namespace {
/// Ranks of this job on this node: all of them for loopback (one process),
/// the launcher's local size for MPI / torchrun-style starts.
int ranksOnThisNode(const Manifest &m, bool distributed) {
  if (!distributed)
    return m.numRanks;
  for (const char *var :
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "LOCAL_WORLD_SIZE"})
    if (const char *v = std::getenv(var))
      if (int n = std::atoi(v); n > 0)
        return n;
  return 1;
}
} // namespace

struct Session::Impl {
  // Declared first, destroyed last: MPI is finalized after every
  // communicator is gone.
  struct MpiGuard {
    bool active = false;
    ~MpiGuard() {
      if (active)
        mpiFinalize();
    }
  } mpiGuard;
  bool loaded = false;
  RunOptions o;
  Manifest m;
  /// The manifest the inputs are checked against: `m`, with D x M
  /// microbatches under --data-parallel D (the global batch).
  Manifest inputManifest;
  CommWorld world;
  /// The run's ranks: D x P (rank d * P + r is replica d's pipeline rank
  /// r; D = o.dataParallel, P = m.numRanks).
  std::vector<int> localRanks;
  /// --data-parallel D > 1, per local rank (in the order of localRanks):
  /// the communicators split from the run's (its replica's pipeline and
  /// its data-parallel group) and its data-parallel state, carried from
  /// run to run; and per local replica, its part of the inputs.
  std::vector<std::unique_ptr<Communicator>> pipelineComms, groupComms;
  std::vector<std::unique_ptr<DataParallelRank>> dataParallelRanks;
  std::map<int, InputStore> replicaInputs;
  int replicas() const { return std::max(1, o.dataParallel); }
  /// "" or, with D > 1, what a microbatched input takes (for its errors).
  std::string globalBatchHint(const std::string &error) const {
    if (replicas() == 1 || error.find("microbatch") == std::string::npos)
      return "";
    return " (with --data-parallel " + std::to_string(replicas()) +
           " a microbatched input takes the global batch: " +
           std::to_string(replicas()) + " replicas x " +
           std::to_string(m.numMicrobatches) +
           " microbatches = " + std::to_string(inputManifest.numMicrobatches) +
           " microbatches of the build's size, and replica d trains on the "
           "d-th " +
           std::to_string(m.numMicrobatches) + ")";
  }
  /// Rebuilds the local replicas' parts of input `index` (-1: all).
  void sliceReplicaInputs(int index);
  /// The inputs of local rank slot `i` (its replica's part with D > 1).
  const InputStore &inputsOf(size_t i) const;
  std::vector<EntryFn> entries;
  /// cuda builds: one Device per local rank (in the order of localRanks).
  std::vector<Device> devices;
  GivenInputs given;
  bool randomInputs = false;
  std::optional<InputStore> inputs;
  /// Training builds with parameters: the gathered state, every parameter
  /// with its optimizer state (rank 0's process after a gathering run or
  /// synchronize(); every process after resume()). Null when there is
  /// none or it is stale (gatheredCurrent false).
  std::optional<Checkpoint> state;
  /// The same on every process: rank 0's process holds the current
  /// state in `state` (after resume(), a gathering run or synchronize();
  /// setWeight/setOptimizerState keep it current).
  bool gatheredCurrent = false;
  /// Each local rank's own parameter state (in the order of localRanks),
  /// carried from run to run; valid when rankStateReady.
  std::vector<std::map<int, ParameterState>> rankParams;
  bool rankStateReady = false;
  /// The ranks' state is to be rebuilt from `state` (after resume(), or
  /// after a failed run when `state` was current).
  bool distributeState = false;
  /// A run failed and no current gathered state was left to continue from:
  /// the training state is lost until resume().
  bool stateLost = false;
  /// The loss of every measured step (rank 0's process).
  std::vector<float> losses;
  bool gatherAfterRun = true;
  /// setReleaseParameterInputs.
  bool releaseParameterInputs = false;
  /// The communicators may serve the next run (one process per rank,
  /// after a run that succeeded).
  bool commsReusable = false;
  /// The BLAS threads last set (setKernelThreads), -1 before.
  int kernelThreadsSet = -1;
  int stepsDone = 0;
  int runs = 0;
  bool collectOutputs = true;
  Communicators communicators;
  std::vector<RankResult> results;
  std::vector<std::string> rankErrors;
  /// The options of the last run (iterations: its steps).
  RunOptions lastRun;
  bool ran = false;

  void loadUnchecked(int *argc, char ***argv);
  /// `gatherOnly`: a run of no step that only gathers the parameters to
  /// rank 0 (synchronize()) into `res`, leaving the last run's results.
  void runUnchecked(int steps, bool gatherOnly, std::vector<RankResult> &res,
                    Status &status);
  /// Creates the local ranks' parameter state when there is none: from
  /// `state` after resume(), else from the inputs (the initial weights).
  Status ensureRankState();
  /// The local ranks' parameter state, ready to be changed in place
  /// (setWeight, setOptimizerState): a lost state is reported first, then
  /// the inputs are prepared and the state created from them if needed.
  Status rankStateForUpdate(Session &session);
  /// Gathers every parameter to rank 0 unless `state` is current there.
  Status synchronize();
  /// weight() and the like on rank 0: gathers first in loopback when the
  /// gathered state is stale; an error under MPI.
  Status needGathered(const char *what);
  /// The manifest's parameter at input `index` and its input, or an
  /// error (code 2) naming why there is none.
  Status parameterIndex(int index, const ManifestParameter *&p,
                        const ManifestInput *&in) const;
  /// The index of the input named `name`, or an error (code 2).
  Status parameterNamed(const std::string &name, int &index) const;
  /// Rank 0's current gathered state of parameter `index` (gathering
  /// first in loopback when it is stale); `rank0`: this process has it.
  Status gathered(int index, const char *what, const GatheredParameter *&out,
                  bool rank0);
  const RankResult *rank0() const {
    for (size_t i = 0; i < localRanks.size() && i < results.size(); ++i)
      if (localRanks[i] == 0)
        return &results[i];
    return nullptr;
  }
};

Session::Session() : impl(std::make_unique<Impl>()) {}

Session::~Session() {
  impl->communicators.comms.clear();
  impl->communicators.world.reset();
  // The model's idle buffers go back to the allocator, and the allocator's
  // free memory back to the kernel: a Python process goes on after a
  // session ends.
  impl.reset();
  releaseIdleBuffers();
  malloc_trim(0);
}

bool Session::loaded() const { return impl->loaded; }
const Manifest &Session::manifest() const { return impl->m; }
bool Session::usesMpi() const { return impl->mpiGuard.active; }
bool Session::hasRank0() const {
  return std::find(impl->localRanks.begin(), impl->localRanks.end(), 0) !=
         impl->localRanks.end();
}
int Session::stepsDone() const { return impl->stepsDone; }
const std::vector<std::string> &Session::rankErrors() const {
  return impl->rankErrors;
}
void Session::setCollectOutputs(bool enabled) {
  impl->collectOutputs = enabled;
}

Status Session::load(const RunOptions &options, int *argc, char ***argv) {
  if (impl->loaded || impl->mpiGuard.active)
    return Status::error(2, "this session has already loaded a build");
  impl->o = options;
  // RunOptions::manifestPath's documented default.
  if (impl->o.manifestPath.empty())
    impl->o.manifestPath = defaultManifestPath(impl->o.modelPath);
  try {
    impl->loadUnchecked(argc, argv);
  } catch (const std::exception &e) {
    return Status::error(2, e.what());
  }
  impl->loaded = true;
  return Status();
}

void Session::Impl::loadUnchecked(int *argc, char ***argv) {
  // Decide the world: which ranks this process runs (the bootstrap of the
  // communicator's registry row).
  const CommunicatorKind *kind = findCommunicatorKind(o.comm);
  if (!kind)
    throw RuntimeError("--comm must be " + communicatorNameList() + ", got '" +
                       o.comm + "'");
  world.comm = kind->name;
  kind->bootstrap(world);
  if (world.useMpi)
    mpiGuard.active = true; // finalized even if joining fails half-way
  joinCommWorld(world, argc, argv);
  // The model first: a missing .so is the user's actual problem even
  // when its (default) manifest is missing too. A truncated .so must be
  // caught before dlopen, which would map its segments past the end of
  // the file and die with SIGBUS on the first access (ElfCheck.h).
  checkElfFile(o.modelPath);
  m = readManifest(o.manifestPath);
  checkModelFile(m, o.modelPath, o.manifestPath);
  checkTrainingOptions(m, o);
  if (m.target == Target::Cpu && !o.devices.empty())
    throw RuntimeError("--devices chooses the CUDA devices of a cuda "
                       "build, but the manifest " +
                       o.manifestPath +
                       " says this model was compiled for the CPU "
                       "(target \"cpu\")");
  if (m.target == Target::Cuda && o.threads > 0)
    throw RuntimeError("--threads sets the BLAS threads of cpu builds, but "
                       "the manifest " +
                       o.manifestPath +
                       " says this "
                       "model was compiled for CUDA (target \"cuda\"); "
                       "drop --threads (--devices chooses the GPUs)");
  inputManifest = m;
  inputManifest.numMicrobatches = m.numMicrobatches * replicas();
  checkInputSizes(inputManifest);
  const int worldRanks = m.numRanks * replicas();
  if (!world.distributed() && replicas() > 1 && worldRanks > 1024)
    throw RuntimeError("--data-parallel " + std::to_string(replicas()) + " x " +
                       std::to_string(m.numRanks) +
                       " ranks = " + std::to_string(worldRanks) +
                       " threads of one process (loopback): at most 1024; "
                       "run that many ranks as processes (mpirun -np " +
                       std::to_string(worldRanks) + " ... --comm mpi)");
  if (world.distributed()) {
    if (world.procSize != worldRanks)
      throw RuntimeError(
          "the model has " + std::to_string(m.numRanks) + " ranks" +
          (replicas() > 1
               ? " and --data-parallel " + std::to_string(replicas()) +
                     " runs that many replicas of them (" +
                     std::to_string(worldRanks) + " ranks)"
               : std::string()) +
          ", but " + std::to_string(world.procSize) +
          " processes were started (use mpirun -np " +
          std::to_string(worldRanks) + ")");
    localRanks = {world.procRank};
  } else {
    for (int r = 0; r < worldRanks; ++r)
      localRanks.push_back(r);
  }
  if (world.procRank == 0)
    checkOutputLocations(o);

  // Load the model and its entry points.
  entries.assign(size_t(m.numRanks), nullptr);
  const std::string noCuda = "this model was compiled for CUDA (manifest "
                             "target \"cuda\") but no CUDA device is "
                             "usable: ";
  // dlopen searches the library path for a name without '/', never the
  // working directory: make `pipeopt-run model.so` mean ./model.so.
  std::string soPath = o.modelPath.find('/') == std::string::npos
                           ? "./" + o.modelPath
                           : o.modelPath;
  void *handle = dlopen(soPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *e = dlerror();
    // A cuda model needs libpipeopt_rt_cuda.so and the CUDA libraries.
    throw RuntimeError((m.target == Target::Cuda ? noCuda : "") +
                       "cannot load model " + o.modelPath + ": " +
                       (e ? e : "?"));
  }
  if (m.target == Target::Cuda) {
    const pipeopt_rt_cuda_api *api = cudaApiFromModel(handle, o.modelPath);
    int32_t count = 0;
    if (api->device_count(&count) != 0 || count < 1) {
      const char *e = api->last_error();
      throw RuntimeError(
          noCuda + (e && *e ? std::string(e) : "no CUDA device is visible"));
    }
    int localRank = world.procRank;
    if (world.distributed())
      for (const char *var : {"OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK"})
        if (const char *v = std::getenv(var)) {
          localRank = std::atoi(v);
          break;
        }
    for (int id : assignDevices(o.devices, localRanks, world.distributed(),
                                localRank, count))
      devices.emplace_back(api, id);
  }
  // Every rank's entry point, not only this process's: with one process
  // per rank a missing one would otherwise surface as a peer that never
  // starts. A manifest of fewer ranks than the model has is caught by
  // the next default name existing (pipeopt_rank_<num_ranks>).
  // Only functions the model defines itself: dlsym alone would also
  // find `exit` or `abort` in the C library (ModelLibrary.h).
  checkModelMatchesManifest(handle, m, o.modelPath, o.manifestPath);
  bool defaultNames = true;
  for (int r = 0; r < m.numRanks; ++r) {
    std::string why;
    void *sym = findModelFunction(handle, m.entryPoints[r], o.modelPath, why);
    if (!sym)
      throw RuntimeError(o.modelPath + " has no entry point '" +
                         m.entryPoints[r] + "' for rank " + std::to_string(r) +
                         " (the manifest " + o.manifestPath +
                         " says num_ranks = " + std::to_string(m.numRanks) +
                         "; is it the manifest of this model?): '" +
                         m.entryPoints[r] + "' " + why);
    entries[r] = reinterpret_cast<EntryFn>(sym);
    defaultNames =
        defaultNames && m.entryPoints[r] == "pipeopt_rank_" + std::to_string(r);
  }
  std::string next = "pipeopt_rank_" + std::to_string(m.numRanks);
  if (defaultNames && dlsym(handle, next.c_str()))
    throw RuntimeError(o.modelPath + " exports the entry point '" + next +
                       "', but the manifest " + o.manifestPath +
                       " says num_ranks = " + std::to_string(m.numRanks) +
                       ": the model has more ranks than the manifest (is "
                       "it the manifest of this model?)");
}

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

namespace {
Status notLoaded() {
  return Status::error(2, "no build is loaded (Session::load)");
}

Status lostState() {
  return Status::error(
      2, "the training state was lost: a run failed after the ranks had "
         "begun to update their parameters, and no gathered copy of them "
         "was current (setGatherAfterRun(false)); resume() from a "
         "checkpoint");
}

/// The input of `m` named `name`, or nullptr.
const ManifestInput *inputNamed(const Manifest &m, const std::string &name) {
  for (const ManifestInput &in : m.inputs)
    if (in.name == name)
      return &in;
  return nullptr;
}

std::string inputNames(const Manifest &m) {
  std::string s;
  for (const ManifestInput &in : m.inputs)
    s += (s.empty() ? "" : ", ") +
         (in.name.empty() ? "#" + std::to_string(in.index) : in.name);
  return s;
}
} // namespace

namespace {
/// The error for an input name the manifest at `path` does not have.
Status noInputNamed(const Manifest &m, const std::string &path,
                    const std::string &name) {
  return Status::error(2, "the manifest " + path + " has no input named '" +
                              name + "' (inputs: " + inputNames(m) + ")");
}
} // namespace

Status Session::setInput(const std::string &name, HostTensor tensor) {
  if (!impl->loaded)
    return notLoaded();
  const ManifestInput *in = inputNamed(impl->m, name);
  if (!in)
    return noInputNamed(impl->m, impl->o.manifestPath, name);
  return setInput(in->index, std::move(tensor));
}

Status Session::setInput(int index, HostTensor tensor) {
  if (!impl->loaded)
    return notLoaded();
  const Manifest &m = impl->m;
  const ManifestInput *in = m.findInput(index);
  if (!in)
    return Status::error(2, "the manifest " + impl->o.manifestPath +
                                " lists no input with index " +
                                std::to_string(index));
  std::string label =
      "input " + std::to_string(index) +
      (in->name.empty() ? std::string() : " ('" + in->name + "')");
  // Checked now, so that the error comes from the call that caused it;
  // kept in the InputStore's layout (which checks as itself again).
  HostTensor checked;
  try {
    int dataSteps = 0;
    checked = checkInputTensor(impl->inputManifest, *in, std::move(tensor),
                               label, impl->o.iterations, dataSteps);
    if (in->classIndices)
      checkClassIndices(*in, checked, label);
    // Prepared inputs take the new value in place: a training loop that
    // sets the next batch before each run(1) copies only that batch, not
    // every input again.
    if (impl->inputs) {
      impl->inputs->set(*in, impl->inputManifest.numMicrobatches, checked,
                        dataSteps);
      impl->sliceReplicaInputs(index);
    }
  } catch (const std::exception &e) {
    return Status::error(2, e.what() + impl->globalBatchHint(e.what()));
  }
  impl->given[index] = {std::move(checked), label};
  return Status();
}

Status Session::setInputFromNpy(const std::string &name,
                                const std::string &path) {
  if (!impl->loaded)
    return notLoaded();
  const ManifestInput *in = inputNamed(impl->m, name);
  if (!in)
    return noInputNamed(impl->m, impl->o.manifestPath, name);
  HostTensor t;
  try {
    int dataSteps = 0;
    t = checkInputTensor(impl->inputManifest, *in, readNpy(path), path,
                         impl->o.iterations, dataSteps);
    if (in->classIndices)
      checkClassIndices(*in, t, path);
    if (impl->inputs) { // in place, as setInput
      impl->inputs->set(*in, impl->inputManifest.numMicrobatches, t, dataSteps);
      impl->sliceReplicaInputs(int(in->index));
    }
  } catch (const std::exception &e) {
    return Status::error(2, e.what() + impl->globalBatchHint(e.what()));
  }
  impl->given[in->index] = {std::move(t), path};
  return Status();
}

Status Session::setInputsFrom(const std::string &dirOrNpz) {
  if (!impl->loaded)
    return notLoaded();
  GivenInputs checked;
  try {
    GivenInputs set = readInputSet(impl->m, dirOrNpz);
    for (auto &[index, entry] : set) {
      if (impl->o.inputFiles.count(index))
        continue;
      const ManifestInput &in = *impl->m.findInput(index);
      int dataSteps = 0;
      HostTensor t =
          checkInputTensor(impl->inputManifest, in, std::move(entry.first),
                           entry.second, impl->o.iterations, dataSteps);
      if (in.classIndices)
        checkClassIndices(in, t, entry.second);
      checked[index] = {std::move(t), entry.second};
    }
  } catch (const std::exception &e) {
    return Status::error(2, e.what() + impl->globalBatchHint(e.what()));
  }
  for (auto &[index, entry] : checked)
    impl->given[index] = std::move(entry);
  impl->inputs.reset();
  return Status();
}

void Session::setRandomInputs(bool enabled, uint64_t seed) {
  impl->randomInputs = enabled;
  impl->o.seed = seed;
  impl->inputs.reset();
}

Status Session::prepareInputs() {
  if (!impl->loaded)
    return notLoaded();
  if (impl->inputs)
    return Status();
  try {
    impl->inputs = loadInputs(impl->inputManifest, impl->o, impl->given,
                              impl->randomInputs);
    impl->sliceReplicaInputs(-1);
  } catch (const std::exception &e) {
    impl->inputs.reset();
    return Status::error(2, e.what() + impl->globalBatchHint(e.what()));
  }
  return Status();
}

void Session::Impl::sliceReplicaInputs(int index) {
  if (replicas() == 1)
    return;
  if (replicaInputs.empty())
    for (int g : localRanks)
      replicaInputs[g / m.numRanks];
  for (auto &[replica, store] : replicaInputs)
    for (const ManifestInput &in : m.inputs)
      if (index < 0 || int(in.index) == index)
        setReplicaInput(store, *inputs, in, m.numMicrobatches, replicas(),
                        replica);
}

const InputStore &Session::Impl::inputsOf(size_t i) const {
  if (replicas() == 1)
    return *inputs;
  return replicaInputs.at(localRanks[i] / m.numRanks);
}

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

Status Session::resume(const std::string &dir,
                       std::vector<std::string> *notes) {
  if (!impl->loaded)
    return notLoaded();
  if (!impl->m.hasParameters)
    return Status::error(
        2, "--resume: the manifest " + impl->o.manifestPath +
               " has no \"parameters\"; checkpoints hold the weights and "
               "optimizer state of a training build with parameters");
  try {
    Checkpoint c = readCheckpoint(impl->m, dir);
    if (notes)
      *notes = c.notes;
    impl->stepsDone = c.step;
    impl->losses.clear();
    if (hasRank0())
      impl->losses = std::move(c.losses);
    impl->state = std::move(c);
    // The next run (or setWeight) gives every local rank its parameters
    // from the checkpoint.
    impl->gatheredCurrent = true;
    impl->distributeState = true;
    impl->rankParams.clear();
    impl->rankStateReady = false;
    impl->stateLost = false;
  } catch (const std::exception &e) {
    return Status::error(2, e.what());
  }
  return Status();
}

Status Session::writeCheckpoint(const std::string &dir) const {
  if (!impl->loaded)
    return notLoaded();
  if (!impl->m.hasParameters)
    return Status::error(2, "the manifest " + impl->o.manifestPath +
                                " has no \"parameters\": a checkpoint holds "
                                "the weights of a training build");
  if (impl->stateLost)
    return lostState();
  if ((!impl->state && !impl->rankStateReady) || !hasRank0())
    return Status::error(2, "no weights to write: run a step or resume "
                            "first (in the process of rank 0)");
  if (Status st = impl->needGathered("writeCheckpoint"); !st)
    return st;
  try {
    rt::writeCheckpoint(impl->m, dir, impl->stepsDone, impl->losses,
                        impl->state->parameters);
  } catch (const std::exception &e) {
    return Status::error(1, e.what());
  }
  return Status();
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

Status Session::run(int steps) {
  if (!impl->loaded)
    return notLoaded();
  if (steps < 1)
    return Status::error(2, "run: the number of steps must be at least 1, "
                            "got " +
                                std::to_string(steps));
  if (impl->stateLost)
    return lostState();
  Status st = prepareInputs();
  if (!st)
    return st;
  for (const ManifestInput &in : impl->m.inputs)
    if (int n = impl->inputs->dataSteps(in.index);
        n > 0 && impl->stepsDone + steps > n)
      return Status::error(
          2, "input " + std::to_string(in.index) + " is a dataset of " +
                 std::to_string(n) + " step(s), but steps " +
                 std::to_string(impl->stepsDone + 1) + " to " +
                 std::to_string(impl->stepsDone + steps) + " were asked for");
  if (st = impl->ensureRankState(); !st)
    return st;
  impl->rankErrors.clear();
  impl->results.clear();
  impl->ran = false;
  impl->runUnchecked(steps, false, impl->results, st);
  return st;
}

void Session::setGatherAfterRun(bool enabled) {
  impl->gatherAfterRun = enabled;
}

void Session::setReleaseParameterInputs(bool enabled) {
  impl->releaseParameterInputs = enabled;
}

Status Session::synchronize() {
  if (!impl->loaded)
    return notLoaded();
  return impl->synchronize();
}

Status Session::Impl::synchronize() {
  // The same decisions in every process (a collective).
  if (!m.hasParameters || gatheredCurrent)
    return Status();
  if (stateLost)
    return lostState();
  if (!rankStateReady)
    return Status(); // nothing run, set or resumed: no weights to gather
  Status status;
  std::vector<RankResult> res;
  rankErrors.clear();
  runUnchecked(0, true, res, status);
  if (!status.ok() && !rankErrors.empty()) {
    // abandonAfterFailure reports this failure, not the last run's.
    results = std::move(res);
    ran = false;
  }
  return status;
}

Status Session::Impl::needGathered(const char *what) {
  if (gatheredCurrent && state)
    return Status();
  if (!rankStateReady)
    return Status::error(2, "no weights yet: run a step or resume first "
                            "(in the process of rank 0)");
  if (world.distributed())
    return Status::error(
        2, std::string(what) +
               ": rank 0 has no current copy of the parameters (the last "
               "run did not gather them: setGatherAfterRun(false)); call "
               "synchronize() in every process first");
  return synchronize();
}

Status Session::Impl::rankStateForUpdate(Session &session) {
  if (stateLost)
    return lostState();
  if (Status st = session.prepareInputs(); !st)
    return st;
  return ensureRankState();
}

Status Session::Impl::ensureRankState() {
  if (!m.hasParameters || rankStateReady)
    return Status();
  if (stateLost)
    return lostState();
  if (!inputs)
    return Status::error(2, "internal: the inputs are not prepared");
  try {
    std::vector<std::map<int, ParameterState>> made(localRanks.size());
    for (size_t i = 0; i < localRanks.size(); ++i) {
      RankContext init(localRanks[i] % m.numRanks, nullptr, &m, &inputsOf(i),
                       o.timeoutS);
      init.initParameters(); // the initial weights: the inputs' values
      if (distributeState && state)
        for (auto &[index, st] : init.parameters) {
          auto it = state->parameters.find(index);
          if (it == state->parameters.end())
            throw RuntimeError("internal: the gathered state has no " +
                               parameterName(m, index));
          const GatheredParameter &g = it->second;
          st.value = g.value;
          st.optimizer.first = StateBuffer(g.first, st.optimizer.dtype);
          st.optimizer.second = StateBuffer(g.second, st.optimizer.dtype);
          st.optimizer.step = g.step;
        }
      made[i] = std::move(init.parameters);
    }
    rankParams = std::move(made);
    // The rank state is now the copy of the weights that is read; the
    // inputs' copies go (setReleaseParameterInputs).
    if (releaseParameterInputs)
      for (const ManifestParameter &p : m.parameters) {
        inputs->releaseData(p.index);
        for (auto &[replica, store] : replicaInputs)
          store.releaseData(p.index);
      }
    // ZeRO-1: the shards are cut anew from this state at the next run.
    for (auto &dpr : dataParallelRanks)
      if (dpr)
        dpr->sharded.reset();
  } catch (const std::exception &e) {
    return Status::error(2, e.what());
  }
  rankStateReady = true;
  distributeState = false;
  return Status();
}

void Session::Impl::runUnchecked(int steps, bool gatherOnly,
                                 std::vector<RankResult> &results,
                                 Status &status) {
  RunOptions ro = o;
  ro.iterations = steps;
  if (gatherOnly) {
    ro.warmup = 0;
  } else {
    lastRun = ro;
    ++runs;
  }
  rankParams.resize(localRanks.size());
  const bool gather = gatherOnly || gatherAfterRun;
  // The communicators of this run (one place knows every kind: the
  // registry, CommRegistry.h).
  CommWorld commWorld = world;
  for (const Device &d : devices)
    commWorld.devices.push_back(d.id());
  results.assign(localRanks.size(), RankResult());
  // One process per rank: the communicators of the last successful run
  // serve again (every message of it was received; creating MPI's
  // duplicates the world communicator, a collective, and NCCL's is
  // costlier still). Loopback ranks close theirs at the end of a run.
  const bool reuse =
      world.distributed() && commsReusable && !communicators.comms.empty();
  commsReusable = false;
  const int P = m.numRanks, D = replicas();
  if (!reuse) {
    // The split communicators go first: they refer to the run's.
    pipelineComms.clear();
    groupComms.clear();
    communicators.comms.clear();
    communicators.world.reset();
    try {
      communicators =
          createCommunicators(commWorld, P * D, localRanks, ro.timeoutS);
    } catch (const std::exception &e) {
      communicators.comms.clear();
      status = Status::error(2, e.what());
      return;
    }
  }
  std::vector<std::unique_ptr<Communicator>> &comms = communicators.comms;
  // "rank 1 (stage 1)"; with D > 1 "replica 1's rank 1 (stage 1)".
  auto labelOf = [&](int g) {
    return D > 1 ? "replica " + std::to_string(g / P) + "'s " +
                       rankLabel(m, g % P)
                 : rankLabel(m, g);
  };
  if (!reuse) {
    std::vector<std::string> labels;
    for (int g = 0; g < P * D; ++g)
      labels.push_back(labelOf(g));
    for (auto &c : comms)
      c->describeRanks(labels);
  }
  const bool withOutputs = !ro.outputDir.empty() || collectOutputs;
  pipelineComms.resize(localRanks.size());
  groupComms.resize(localRanks.size());
  dataParallelRanks.resize(localRanks.size());
  // One local rank's run: with D > 1 it first splits the run's
  // communicator into its replica's pipeline and its data-parallel group
  // (collectives: in loopback every rank's thread does it at once).
  auto runSlot = [&](size_t i, RankPinning *pinning, RankProgress *progress) {
    const int g = localRanks[i], r = g % P, d = g / P;
    Communicator *pipeline = comms[i].get();
    DataParallelRank *dpr = nullptr;
    if (D > 1) {
      try {
        if (!pipelineComms[i]) {
          pipelineComms[i] = comms[i]->split(d, r, ro.timeoutS);
          groupComms[i] = comms[i]->split(r, d, ro.timeoutS);
          std::vector<std::string> labels;
          for (int k = 0; k < P; ++k)
            labels.push_back(labelOf(d * P + k));
          pipelineComms[i]->describeRanks(labels);
        }
      } catch (const std::exception &e) {
        results[i].ok = false;
        results[i].error = "rank " + std::to_string(g) + " (" + labelOf(g) +
                           "): creating its replica's and its "
                           "data-parallel group's communicators: " +
                           e.what();
        comms[i]->close();
        return;
      }
      if (!dataParallelRanks[i])
        dataParallelRanks[i] = std::make_unique<DataParallelRank>();
      dpr = dataParallelRanks[i].get();
      dpr->group = groupComms[i].get();
      dpr->replicas = D;
      dpr->replica = d;
      dpr->zeroStage = ro.zeroStage;
      dpr->bucketBytes = std::max<size_t>(
          sizeof(double), size_t(ro.bucketMiB * 1024.0 * 1024.0));
      pipeline = pipelineComms[i].get();
      // Every process must run the same data-parallel options (mismatched
      // collectives would corrupt each other's buffers under MPI).
      try {
        const std::vector<double> mine = {
            double(ro.zeroStage), double(dpr->bucketBytes),
            double(ro.iterations), double(ro.checkpointEvery)};
        std::vector<double> every =
            allGatherValues(*groupComms[i], mine, ro.timeoutS);
        const char *names[4] = {"--zero", "--bucket-mb (bytes)",
                                "--steps / run()", "--checkpoint-every"};
        for (int e = 0; e < D; ++e)
          for (int k = 0; k < 4; ++k)
            if (every[4 * size_t(e) + size_t(k)] != mine[k]) {
              std::ostringstream os;
              os << "rank " << g << " (" << labelOf(g) << ") runs with "
                 << names[k] << " " << mine[k] << " but " << labelOf(e * P + r)
                 << " with " << every[4 * size_t(e) + size_t(k)]
                 << ": every process of a data-parallel run must be started "
                    "with the same options";
              throw RuntimeError(os.str());
            }
      } catch (const std::exception &e) {
        results[i].ok = false;
        results[i].error = e.what();
        groupComms[i]->close();
        pipelineComms[i]->close();
        comms[i]->close();
        return;
      }
    }
    runRank(r, *pipeline, m, inputsOf(i), entries[size_t(r)], ro, stepsDone,
            rankParams[i], gather, devices.empty() ? nullptr : &devices[i],
            results[i], withOutputs, pinning, progress, dpr);
    if (D > 1) {
      // runRank closed the pipeline's communicator.
      groupComms[i]->close();
      comms[i]->close();
      if (!results[i].ok)
        results[i].error =
            "replica " + std::to_string(d) + ", " + results[i].error;
    }
  };

  // Kernel threads, before any kernel runs.
  const int kernelThreads =
      ro.threads > 0
          ? ro.threads
          : defaultKernelThreads(usableCores(), world.distributed()
                                                    ? ranksOnThisNode(m, true)
                                                    : int(localRanks.size()));
  if (kernelThreads != kernelThreadsSet) {
    setKernelThreads(kernelThreads);
    kernelThreadsSet = kernelThreads;
  }

  // Rank 0 appends this run's losses to those of the steps before.
  const size_t lossesBefore = losses.size();
  size_t slot0 = localRanks.size();
  for (size_t i = 0; i < localRanks.size(); ++i)
    if (localRanks[i] == 0)
      slot0 = i;
  if (slot0 < localRanks.size() && !gatherOnly)
    results[slot0].losses = std::move(losses);
  if (localRanks.size() == 1) {
    if (ro.pinRanks == "on" && !ro.quiet)
      std::cerr << "pipeopt-run: note: --pin-ranks pins the ranks of one "
                   "process (loopback); this process runs one rank\n";
    runSlot(0, nullptr, nullptr);
  } else {
    // --pin-ranks: by default only when the ranks outnumber the cores and
    // each has one kernel thread (a rank with more would keep them all on
    // its one core).
    std::optional<RankPinning> pinning;
    bool pin = devices.empty() &&
               (ro.pinRanks == "on" ||
                (ro.pinRanks == "auto" &&
                 int(localRanks.size()) > usableCores() && kernelThreads == 1));
    if (pin && ro.warmup + ro.iterations < 2) {
      if (ro.pinRanks == "on" && !ro.quiet && !gatherOnly)
        std::cerr << "pipeopt-run: note: --pin-ranks needs 2 or more "
                     "iterations (it balances one iteration's CPU time); "
                     "not pinned\n";
      pin = false;
    }
    if (pin) {
      pinning.emplace();
      pinning->pinAt = std::max(ro.warmup, 1);
      pinning->ranks = localRanks;
      pinning->cpus = usableCpuIds();
      pinning->cpuS.assign(localRanks.size(), 0.0);
      pinning->cpuOf.assign(localRanks.size(), -1);
      pinning->errors.resize(localRanks.size());
    }
    // The watchdog: a rank that never returns (stuck in a computation)
    // must not hang the run. Once a rank has failed, the others get
    // loopbackGraceS; then every failed rank's error is printed, every
    // rank still running is named with where it is, and the process ends
    // without joining them (std::_Exit: they still use the shared state).
    std::vector<RankProgress> progress(localRanks.size());
    std::mutex doneMu;
    std::condition_variable doneCv;
    std::vector<bool> done(localRanks.size(), false);
    size_t numDone = 0;
    bool anyFailed = false;
    std::vector<std::thread> threads;
    for (size_t i = 0; i < localRanks.size(); ++i)
      threads.emplace_back([&, i] {
        runSlot(i, pinning ? &*pinning : nullptr, &progress[i]);
        {
          std::lock_guard<std::mutex> lock(doneMu);
          done[i] = true;
          ++numDone;
          anyFailed = anyFailed || !results[i].ok;
        }
        doneCv.notify_all();
      });
    {
      const double graceS = loopbackGraceS(ro);
      std::optional<Deadline> grace;
      std::unique_lock<std::mutex> lock(doneMu);
      while (numDone < localRanks.size()) {
        if (anyFailed && !grace)
          grace.emplace(graceS);
        if (grace && grace->expired()) {
          for (size_t i = 0; i < localRanks.size(); ++i)
            if (done[i] && !results[i].ok)
              printError(results[i].error);
          for (size_t i = 0; i < localRanks.size(); ++i)
            if (!done[i])
              printError(
                  (D > 1
                       ? "replica " + std::to_string(localRanks[i] / P) + "'s "
                       : std::string()) +
                  describeStuckRank(m, localRanks[i] % P, progress[i], graceS));
          std::fflush(stdout);
          std::fflush(stderr);
          std::_Exit(1);
        }
        doneCv.wait_for(lock,
                        std::chrono::duration<double>(
                            grace ? std::max(0.01, grace->remaining()) : 1.0));
      }
    }
    for (auto &t : threads)
      t.join();
    if (pinning && !ro.quiet) {
      std::ostringstream os;
      os << "pipeopt-run: ranks pinned to cores from iteration "
         << pinning->pinAt + 1 << " (by their CPU time in iteration "
         << pinning->pinAt << "):";
      for (size_t i = 0; i < localRanks.size(); ++i) {
        os << (i ? "," : "") << " rank " << localRanks[i] << " -> ";
        if (pinning->cpuOf[i] >= 0)
          os << "cpu " << pinning->cpuOf[i];
        else
          os << "not pinned"
             << (pinning->errors[i].empty() ? ""
                                            : " (" + pinning->errors[i] + ")");
        os << msInParens(pinning->cpuS[i]);
      }
      std::cerr << os.str() << "\n";
    }
  }

  for (const RankResult &r : results)
    if (!r.ok)
      rankErrors.push_back(r.error);
  RankResult *r0 = slot0 < localRanks.size() ? &results[slot0] : nullptr;
  if (r0 && !gatherOnly) {
    losses = std::move(r0->losses);
    if (!rankErrors.empty())
      losses.resize(std::min(losses.size(), lossesBefore));
  }
  if (rankErrors.empty())
    commsReusable = true;
  if (!rankErrors.empty()) {
    status = Status::error(1, rankErrors.front());
    if (!gatherOnly && m.hasParameters) {
      // Some ranks may have updated their parameters, others not: the
      // next run continues from the gathered state of the last run when
      // every process has it (loopback, gathering runs), as before it.
      rankParams.clear();
      rankStateReady = false;
      if (gatheredCurrent && state && !world.distributed()) {
        distributeState = true;
      } else {
        state.reset();
        gatheredCurrent = false;
        stateLost = true;
      }
    }
    return;
  }
  if (!gatherOnly) {
    ran = true;
    stepsDone += steps;
  }
  if (!m.hasParameters)
    return;
  if (gather) {
    // Rank 0 has every parameter and its optimizer state (moved, not
    // copied: writeResults lends them back to the result).
    if (r0) {
      Checkpoint next;
      next.step = stepsDone;
      next.parameters = std::move(r0->parameters);
      state = std::move(next);
    } else {
      state.reset();
    }
    gatheredCurrent = true;
  } else {
    state.reset();
    gatheredCurrent = false;
  }
}

void Session::abandonAfterFailure() {
  auto &comms = impl->communicators.comms;
  if (impl->mpiGuard.active && !comms.empty() && !impl->results.empty()) {
    // Peers may be blocked on this rank; it answers the status queries of
    // peers that diagnose their own timeouts (Mpi.cpp) with its error for
    // a grace period.
    comms[0]->fail(impl->results[0].error, statusGraceS(impl->o.timeoutS));
  }
  comms.clear();
}

//===----------------------------------------------------------------------===//
// Results
//===----------------------------------------------------------------------===//

Status Session::output(const std::string &name, HostTensor &out) const {
  if (!impl->loaded)
    return notLoaded();
  for (const ManifestOutput &mo : impl->m.outputs)
    if (mo.name == name)
      return output(mo.index, out);
  std::string names;
  for (const ManifestOutput &mo : impl->m.outputs)
    names += (names.empty() ? "" : ", ") +
             (mo.name.empty() ? "#" + std::to_string(mo.index) : mo.name);
  return Status::error(2, "the manifest " + impl->o.manifestPath +
                              " has no output named '" + name +
                              "' (outputs: " + names + ")");
}

Status Session::output(int index, HostTensor &out) const {
  if (!impl->loaded)
    return notLoaded();
  const ManifestOutput *mo = impl->m.findOutput(index);
  if (!mo)
    return Status::error(2, "the manifest " + impl->o.manifestPath +
                                " lists no output with index " +
                                std::to_string(index));
  const RankResult *r0 = impl->rank0();
  if (!impl->ran || !r0)
    return Status::error(2, "no outputs: no run has completed in the "
                            "process of rank 0");
  if (!impl->collectOutputs && impl->lastRun.outputDir.empty())
    return Status::error(2, "no outputs: the run did not collect them "
                            "(setCollectOutputs(false))");
  try {
    out = assembleOutput(impl->m, *mo, r0->reports);
  } catch (const std::exception &e) {
    return Status::error(1, e.what());
  }
  return Status();
}

Status Session::weight(const std::string &name, HostTensor &out) const {
  if (!impl->loaded)
    return notLoaded();
  const ManifestInput *in = inputNamed(impl->m, name);
  if (!in)
    return noInputNamed(impl->m, impl->o.manifestPath, name);
  return weight(int(in->index), out);
}

Status Session::weight(int index, HostTensor &out) const {
  if (!impl->loaded)
    return notLoaded();
  if (index < 0 || index >= int(impl->m.inputs.size()))
    return Status::error(
        2, "input index " + std::to_string(index) +
               " is out of range: the manifest " + impl->o.manifestPath +
               " has " + std::to_string(impl->m.inputs.size()) + " inputs");
  if (!impl->m.findParameter(index))
    return Status::error(2, "input " + std::to_string(index) +
                                " is not a parameter of the manifest " +
                                impl->o.manifestPath);
  const GatheredParameter *g = nullptr;
  if (Status st = impl->gathered(index, "weight", g, hasRank0()); !st)
    return st;
  out = g->value;
  return Status();
}

Status Session::Impl::gathered(int index, const char *what,
                               const GatheredParameter *&out, bool rank0) {
  if (stateLost)
    return lostState();
  if ((!state && !rankStateReady) || !rank0)
    return Status::error(2, "no weights yet: run a step or resume first "
                            "(in the process of rank 0)");
  if (Status st = needGathered(what); !st)
    return st;
  auto it = state->parameters.find(index);
  if (it == state->parameters.end())
    return Status::error(2, "no weights yet: run a step or resume first "
                            "(in the process of rank 0)");
  out = &it->second;
  return Status();
}

Status Session::Impl::parameterIndex(int index, const ManifestParameter *&p,
                                     const ManifestInput *&in) const {
  in = m.findInput(index);
  if (!in)
    return Status::error(2, "the manifest " + o.manifestPath +
                                " lists no input with index " +
                                std::to_string(index));
  p = m.findParameter(index);
  if (!p)
    return Status::error(2, "input " + std::to_string(index) +
                                " is not a parameter of the manifest " +
                                o.manifestPath);
  return Status();
}

Status Session::Impl::parameterNamed(const std::string &name,
                                     int &index) const {
  const ManifestInput *in = inputNamed(m, name);
  if (!in)
    return noInputNamed(m, o.manifestPath, name);
  index = int(in->index);
  return Status();
}

Status Session::setWeight(const std::string &name, const HostTensor &value) {
  if (!impl->loaded)
    return notLoaded();
  int index = -1;
  if (Status st = impl->parameterNamed(name, index); !st)
    return st;
  return setWeight(index, value);
}

Status Session::setWeight(int index, const HostTensor &value) {
  if (!impl->loaded)
    return notLoaded();
  const ManifestParameter *p = nullptr;
  const ManifestInput *in = nullptr;
  if (Status st = impl->parameterIndex(index, p, in); !st)
    return st;
  const std::string name = parameterName(impl->m, index);
  if (value.dtype != in->dtype || value.shape != in->shape ||
      value.data.size() !=
          size_t(numElements(in->shape)) * dtypeSize(in->dtype))
    return Status::error(
        2, "setWeight: " + name + " is " + typeString(in->dtype, in->shape) +
               ", got " + typeString(value.dtype, value.shape) +
               (value.dtype == in->dtype && value.shape == in->shape
                    ? " with " + std::to_string(value.data.size()) + " bytes"
                    : ""));
  if (Status st = impl->rankStateForUpdate(*this); !st)
    return st;
  // Every local copy (tied weights, Chimera's replicas).
  for (auto &params : impl->rankParams)
    if (auto it = params.find(index); it != params.end())
      it->second.value = value;
  // A current gathered state stays current.
  if (impl->state)
    if (auto it = impl->state->parameters.find(index);
        it != impl->state->parameters.end())
      it->second.value = value;
  return Status();
}

Status Session::optimizerState(const std::string &name, HostTensor &first,
                               HostTensor &second, int64_t &step) const {
  if (!impl->loaded)
    return notLoaded();
  int index = -1;
  if (Status st = impl->parameterNamed(name, index); !st)
    return st;
  return optimizerState(index, first, second, step);
}

namespace {
/// An optimizer moment as a tensor: f64 of the parameter's shape, or
/// empty (f64[0]) before the first step or for an optimizer without it.
HostTensor momentTensor(const std::vector<double> &v, const Shape &shape) {
  HostTensor t;
  t.dtype = DType::F64;
  if (v.empty()) {
    t.shape = {0};
    return t;
  }
  t.shape = shape;
  t.data.resize(v.size() * sizeof(double));
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}
} // namespace

Status Session::optimizerState(int index, HostTensor &first, HostTensor &second,
                               int64_t &step) const {
  if (!impl->loaded)
    return notLoaded();
  const ManifestParameter *p = nullptr;
  const ManifestInput *in = nullptr;
  if (Status st = impl->parameterIndex(index, p, in); !st)
    return st;
  const GatheredParameter *g = nullptr;
  if (Status st = impl->gathered(index, "optimizerState", g, hasRank0()); !st)
    return st;
  first = momentTensor(g->first, in->shape);
  second = momentTensor(g->second, in->shape);
  step = g->step;
  return Status();
}

Status Session::setOptimizerState(const std::string &name,
                                  const HostTensor &first,
                                  const HostTensor &second, int64_t step) {
  if (!impl->loaded)
    return notLoaded();
  int index = -1;
  if (Status st = impl->parameterNamed(name, index); !st)
    return st;
  return setOptimizerState(index, first, second, step);
}

Status Session::setOptimizerState(int index, const HostTensor &first,
                                  const HostTensor &second, int64_t step) {
  if (!impl->loaded)
    return notLoaded();
  const ManifestParameter *p = nullptr;
  const ManifestInput *in = nullptr;
  if (Status st = impl->parameterIndex(index, p, in); !st)
    return st;
  const std::string name = parameterName(impl->m, index);
  if (impl->o.zeroStage > 0)
    return Status::error(
        2, "setOptimizerState: " + name +
               ": with ZeRO-1 (--zero 1, Python zero=1) the replicas hold "
               "shards of the optimizer state; set it through a checkpoint "
               "(resume) instead");
  if (step < 0)
    return Status::error(2, "setOptimizerState: " + name +
                                ": the step count must be >= 0, got " +
                                std::to_string(step));
  const OptimizerKind kind = impl->m.training.optimizer;
  const size_t n = size_t(numElements(in->shape));
  std::vector<double> moments[2];
  const HostTensor *given[2] = {&first, &second};
  for (int k = 0; k < 2; ++k) {
    const HostTensor &t = *given[k];
    const char *what = k == 0 ? "first" : "second";
    if (t.data.empty())
      continue; // as before the first step
    bool kept =
        k == 0 ? kind == OptimizerKind::Momentum || kind == OptimizerKind::AdamW
               : kind == OptimizerKind::AdamW;
    if (!kept)
      return Status::error(2, std::string("setOptimizerState: ") + name +
                                  ": the optimizer '" + optimizerName(kind) +
                                  "' keeps no " + what +
                                  " moment; pass an empty tensor");
    if (t.dtype != DType::F64 || t.shape != in->shape ||
        t.data.size() != n * sizeof(double))
      return Status::error(
          2, std::string("setOptimizerState: ") + name + ": the " + what +
                 " moment must be " + typeString(DType::F64, in->shape) +
                 " (or empty), got " + typeString(t.dtype, t.shape));
    moments[k].resize(n);
    std::memcpy(moments[k].data(), t.data.data(), t.data.size());
    // Rounded to the state's dtype here, so that the gathered copy below
    // holds what the ranks hold (optimizerState() returns it). A value
    // that would not train on (a NaN, an infinity, one beyond f32's range
    // for f32 state, a negative second moment) is refused, as a
    // checkpoint's is.
    const DType stateDType = optimizerStateDType(in->dtype, impl->m.target);
    moments[k] = StateBuffer(moments[k], stateDType).toDoubles();
    for (size_t e = 0; e < n; ++e) {
      double x = moments[k][e];
      if (std::isfinite(x) && (k == 0 || x >= 0))
        continue;
      double given;
      std::memcpy(&given, t.data.data() + e * sizeof(double), sizeof(given));
      const char *why = std::isfinite(x) ? "a second moment is >= 0"
                        : stateDType == DType::F32
                            ? "it must be finite and within f32's "
                              "range: this parameter's state is f32"
                            : "it must be finite";
      return Status::error(2, std::string("setOptimizerState: ") + name +
                                  ": element " + std::to_string(e) +
                                  " of the " + what + " moment is " +
                                  numberText(given) + " (" + why + ")");
    }
  }
  if (Status st = impl->rankStateForUpdate(*this); !st)
    return st;
  for (auto &params : impl->rankParams)
    if (auto it = params.find(index); it != params.end()) {
      OptimizerState &os = it->second.optimizer;
      os.first = StateBuffer(moments[0], os.dtype);
      os.second = StateBuffer(moments[1], os.dtype);
      it->second.optimizer.step = step;
    }
  if (impl->state)
    if (auto it = impl->state->parameters.find(index);
        it != impl->state->parameters.end()) {
      it->second.first = std::move(moments[0]);
      it->second.second = std::move(moments[1]);
      it->second.step = step;
    }
  return Status();
}

const std::vector<float> &Session::losses() const { return impl->losses; }

Status Session::writeResults(std::ostream &summary) {
  if (!impl->loaded)
    return notLoaded();
  const RankResult *r0 = impl->rank0();
  if (!r0)
    return Status();
  if (!impl->ran)
    return Status::error(2, "no run has completed");
  // The weights of --output-dir are the gathered state's and the losses
  // the session's, lent to the result for the call.
  const bool lend = impl->m.hasParameters && !impl->lastRun.outputDir.empty();
  if (lend)
    if (Status st = impl->needGathered("writeResults"); !st)
      return st;
  RankResult &result = const_cast<RankResult &>(*r0);
  if (lend)
    std::swap(result.parameters, impl->state->parameters);
  std::swap(result.losses, impl->losses); // every step's
  Status status;
  try {
    finish(impl->m, impl->lastRun, result, impl->communicators.name, summary);
  } catch (const std::exception &e) {
    status = Status::error(1, e.what());
  }
  std::swap(result.losses, impl->losses);
  if (lend)
    std::swap(result.parameters, impl->state->parameters);
  return status;
}

} // namespace rt
} // namespace pipeopt
