//===- Session.cpp - Load a build, run it, read it back ---------*- C++ -*-===//
//
// Session (Session.h): the world of this process (which ranks it runs,
// over which communicator), the model's entry points, the inputs, the
// state between runs (weights, optimizer state, losses, steps), the rank
// threads with their watchdog and pinning, and the results of the last run.
//
//===----------------------------------------------------------------------===//

#include "RunnerInternal.h"
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
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
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
  CommWorld world;
  std::vector<int> localRanks;
  std::vector<EntryFn> entries;
  /// cuda builds: one Device per local rank (in the order of localRanks).
  std::vector<Device> devices;
  GivenInputs given;
  bool randomInputs = false;
  std::optional<InputStore> inputs;
  /// The state a run continues from (resume(), or the previous run on
  /// rank 0's process): null before either.
  std::optional<Checkpoint> state;
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
  void runUnchecked(int steps, Status &status);
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
  checkInputSizes(m);
  if (world.distributed()) {
    if (world.procSize != m.numRanks)
      throw RuntimeError("the model has " + std::to_string(m.numRanks) +
                         " ranks but " + std::to_string(world.procSize) +
                         " processes were started (use mpirun -np " +
                         std::to_string(m.numRanks) + ")");
    localRanks = {world.procRank};
  } else {
    for (int r = 0; r < m.numRanks; ++r)
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
    checked = checkInputTensor(m, *in, std::move(tensor), label,
                               impl->o.iterations, dataSteps);
    if (in->classIndices)
      checkClassIndices(*in, checked, label);
  } catch (const std::exception &e) {
    return Status::error(2, e.what());
  }
  impl->given[index] = {std::move(checked), label};
  impl->inputs.reset();
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
    t = checkInputTensor(impl->m, *in, readNpy(path), path, impl->o.iterations,
                         dataSteps);
    if (in->classIndices)
      checkClassIndices(*in, t, path);
  } catch (const std::exception &e) {
    return Status::error(2, e.what());
  }
  impl->given[in->index] = {std::move(t), path};
  impl->inputs.reset();
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
          checkInputTensor(impl->m, in, std::move(entry.first), entry.second,
                           impl->o.iterations, dataSteps);
      if (in.classIndices)
        checkClassIndices(in, t, entry.second);
      checked[index] = {std::move(t), entry.second};
    }
  } catch (const std::exception &e) {
    return Status::error(2, e.what());
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
    impl->inputs =
        loadInputs(impl->m, impl->o, impl->given, impl->randomInputs);
  } catch (const std::exception &e) {
    return Status::error(2, e.what());
  }
  return Status();
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
    impl->state = std::move(c);
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
  if (!impl->state || !hasRank0())
    return Status::error(2, "no weights to write: run a step or resume "
                            "first (in the process of rank 0)");
  try {
    rt::writeCheckpoint(impl->m, dir, impl->state->step, impl->state->losses,
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
  if (impl->runs > 0 && impl->world.distributed())
    return Status::error(2, "a session with one process per rank (--comm " +
                                impl->world.comm +
                                " under a launcher) runs once");
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
  impl->rankErrors.clear();
  impl->results.clear();
  impl->ran = false;
  impl->runUnchecked(steps, st);
  return st;
}

void Session::Impl::runUnchecked(int steps, Status &status) {
  RunOptions ro = o;
  ro.iterations = steps;
  lastRun = ro;
  ++runs;
  // The communicators of this run (one place knows every kind: the
  // registry, CommRegistry.h).
  CommWorld commWorld = world;
  for (const Device &d : devices)
    commWorld.devices.push_back(d.id());
  results.assign(localRanks.size(), RankResult());
  communicators.comms.clear();
  communicators.world.reset();
  try {
    communicators =
        createCommunicators(commWorld, m.numRanks, localRanks, ro.timeoutS);
  } catch (const std::exception &e) {
    communicators.comms.clear();
    status = Status::error(2, e.what());
    return;
  }
  std::vector<std::unique_ptr<Communicator>> &comms = communicators.comms;
  {
    std::vector<std::string> labels;
    for (int r = 0; r < m.numRanks; ++r)
      labels.push_back(rankLabel(m, r));
    for (auto &c : comms)
      c->describeRanks(labels);
  }

  // Kernel threads, before any kernel runs. Large buffers are kept by the
  // allocator instead of being mapped and unmapped on every call (each
  // iteration allocates the same activations again; page faults on fresh
  // mappings were a tenth of a small model's run time).
  const int kernelThreads =
      ro.threads > 0
          ? ro.threads
          : defaultKernelThreads(usableCores(),
                                 ranksOnThisNode(m, world.distributed()));
  setKernelThreads(kernelThreads);
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);

  const Checkpoint *resume = state ? &*state : nullptr;
  bool withOutputs = !ro.outputDir.empty() || collectOutputs;
  const InputStore &in = *inputs;
  if (localRanks.size() == 1) {
    if (ro.pinRanks == "on" && !ro.quiet)
      std::cerr << "pipeopt-run: note: --pin-ranks pins the ranks of one "
                   "process (loopback); this process runs one rank\n";
    runRank(localRanks[0], *comms[0], m, in, entries[localRanks[0]], ro, resume,
            devices.empty() ? nullptr : &devices[0], results[0], withOutputs);
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
      if (ro.pinRanks == "on" && !ro.quiet)
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
        runRank(localRanks[i], *comms[i], m, in, entries[localRanks[i]], ro,
                resume, devices.empty() ? nullptr : &devices[i], results[i],
                withOutputs, pinning ? &*pinning : nullptr, &progress[i]);
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
                  describeStuckRank(m, localRanks[i], progress[i], graceS));
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
  if (!rankErrors.empty()) {
    status = Status::error(1, rankErrors.front());
    return;
  }
  ran = true;
  stepsDone += steps;
  // The state the next run continues from: rank 0 has the gathered
  // parameters and every step's loss.
  if (const RankResult *r0 = rank0()) {
    Checkpoint next;
    next.step = stepsDone;
    next.losses = r0->losses;
    next.parameters = r0->parameters;
    state = std::move(next);
  } else {
    Checkpoint next;
    next.step = stepsDone;
    if (state)
      next.parameters = std::move(state->parameters);
    state = std::move(next);
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
  if (!impl->state || !hasRank0())
    return Status::error(2, "no weights yet: run a step or resume first "
                            "(in the process of rank 0)");
  auto it = impl->state->parameters.find(index);
  if (it == impl->state->parameters.end())
    return Status::error(2, "no weights yet: run a step or resume first "
                            "(in the process of rank 0)");
  out = it->second.value;
  return Status();
}

const std::vector<float> &Session::losses() const {
  static const std::vector<float> none;
  return impl->state ? impl->state->losses : none;
}

Status Session::writeResults(std::ostream &summary) {
  if (!impl->loaded)
    return notLoaded();
  const RankResult *r0 = impl->rank0();
  if (!r0)
    return Status();
  if (!impl->ran)
    return Status::error(2, "no run has completed");
  try {
    finish(impl->m, impl->lastRun, *r0, impl->communicators.name, summary);
  } catch (const std::exception &e) {
    return Status::error(1, e.what());
  }
  return Status();
}

} // namespace rt
} // namespace pipeopt
