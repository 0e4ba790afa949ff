//===- Runner.cpp - pipeopt-run launcher logic ------------------*- C++ -*-===//
//
// Per local rank: start barrier, then (warmup + iterations) times: barrier,
// call pipeopt_rank_<k>(), record the wall time, complete outstanding sends.
// Afterwards every rank sends its iteration times, measured actions and
// outputs to rank 0 as control messages over the same communicator and
// waits for rank 0 to confirm it has them all; rank 0 writes the outputs,
// the Chrome trace and the profile, and prints the throughput. Any error is
// reported with the rank (and the runtime's message names stage and
// microbatch); the exit code is then nonzero.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Runner.h"
#include "pipeopt/runtime/Device.h"
#include "pipeopt/runtime/ElfCheck.h"
#include "pipeopt/runtime/Kernels.h"
#include "pipeopt/runtime/ModelLibrary.h"
#include "pipeopt/runtime/Optimizer.h"
#include "pipeopt/runtime/Placement.h"
#include "pipeopt/runtime/Reduce.h"
#include "pipeopt/runtime/Watchdog.h"

#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <mutex>
#include <new>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

namespace pipeopt {
namespace rt {

using Json = nlohmann::json;

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

std::string runUsage() {
  return R"(usage: pipeopt-run <model.so> [options]

  --manifest FILE        manifest (default: <model>.manifest.json)
  --comm KIND            loopback (default; ranks as threads) | mpi (one rank
                         per process under mpirun) | nccl (one rank per GPU);
                         started with loopback as one of several processes
                         (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_SIZE above
                         1: mpirun, mpiexec; RANK with WORLD_SIZE above 1:
                         torchrun), pipeopt-run refuses (every process
                         would run the whole job)
  --iterations N         measured iterations of the schedule (default 1)
  --steps N              training builds: measured training steps (their
                         name for --iterations); with "parameters" in the
                         manifest each step updates the weights
  --warmup N             unmeasured iterations first (default 0)
  --timeout-s S          max wait of any send/recv, seconds (default 60),
                         counting only time the process ran: a run
                         suspended (Ctrl-Z, SIGSTOP) and continued goes on.
                         A rank that waits longer fails, naming whom it
                         waited for; a rank that never returns (stuck in a
                         computation) is named once another rank failed:
                         loopback ends the run min(S, 10) s after the first
                         failure, MPI names the ranks that do not answer a
                         status query within S/2 s (at least 1, at most 5)
  --input I=FILE.npy     data of model input I; for a microbatched input either
                         one file [M, ...shape] or [M*d0, d1, ...] (split along
                         the leading dim), or a comma list of M files of shape
                         [...shape]; a shared input: one file of its shape;
                         a dataset: [N, M, ...shape] or [N, M*d0, d1, ...]
                         for N steps, one slice per step
  --seed N               seed of the random data of inputs without --input
  --output-dir DIR       write output_<i>.npy (microbatched: [M, ...shape];
                         "reduce": "mean": the mean over microbatches)
  --save-grads           training builds: write the named outputs as
                         <name>.npy (grad_<i>.npy, loss.npy) into
                         --output-dir instead of output_<i>.npy, and the
                         last step's mean gradient of every parameter
  --checkpoint-dir C     training builds with parameters: a complete
  --checkpoint-every K   checkpoint C/step-<k> after every K-th step (written
                         atomically; C/latest names the newest); without
                         --resume, C must not hold checkpoints yet
  --resume C             continue from C's latest checkpoint: --steps N is
                         the total, the remaining steps run. Every file is
                         checked against its size and checksum; when latest
                         names a missing or corrupt checkpoint, the newest
                         complete one is used, with a warning
  --trace FILE.json      Chrome trace of the measured actions (one track/rank)
  --profile FILE.json    measured per-stage times for the partitioner
  --threads N            threads per rank of the BLAS kernels (default: this
                         node's cores / the ranks running on it, at least 1);
                         cpu builds only
  --pin-ranks auto|on|off
                         pin each in-process rank to one core from the first
                         measured iteration on, balancing the ranks' CPU time
                         in the last warm-up iteration, or the first when
                         there is none (auto, the default: when the ranks
                         outnumber the cores; loopback only)
  --devices LIST         cuda builds: the CUDA devices of the ranks, e.g.
                         0,1 (default: all visible); in one process rank r
                         gets LIST[r % n], with one process per rank (mpirun,
                         torchrun) the local rank picks; ranks may share a
                         device except with --comm=nccl
  --quiet                print only errors
)";
}

static int parseInt(const std::string &opt, const std::string &v, int lo) {
  char *end = nullptr;
  errno = 0;
  long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || x < lo || x > (1 << 30))
    throw RuntimeError(opt + " expects an integer >= " + std::to_string(lo) +
                       ", got '" + v + "'");
  return int(x);
}

RunOptions parseRunOptions(int argc, char **argv) {
  RunOptions o;
  bool iterationsGiven = false;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i], value;
    bool hasValue = false;
    if (a.rfind("--", 0) == 0) {
      size_t eq = a.find('=');
      if (eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        hasValue = true;
      }
    }
    // An empty value (--resume "$CK" with CK unset, --output-dir "") is an
    // error for every option: ignoring it would retrain from step 1 over
    // the checkpoints, or write nothing, and exit 0.
    auto next = [&]() -> std::string {
      std::string v;
      if (hasValue)
        v = value;
      else if (i + 1 >= args.size())
        throw RuntimeError(a + " needs a value");
      else
        v = args[++i];
      if (v.empty())
        throw RuntimeError(a + " needs a value, got an empty string (an "
                               "unset shell variable?)");
      return v;
    };
    if (a == "--help" || a == "-h") {
      throw RuntimeError("help");
    } else if (a == "--manifest") {
      o.manifestPath = next();
    } else if (a == "--comm") {
      std::string k = next();
      if (k == "loopback")
        o.comm = CommKind::Loopback;
      else if (k == "mpi")
        o.comm = CommKind::Mpi;
      else if (k == "nccl")
        o.comm = CommKind::Nccl;
      else
        throw RuntimeError("--comm must be loopback, mpi or nccl, got '" + k +
                           "'");
    } else if (a == "--iterations") {
      o.iterations = parseInt(a, next(), 1);
      iterationsGiven = true;
    } else if (a == "--steps") {
      o.steps = parseInt(a, next(), 1);
    } else if (a == "--checkpoint-dir") {
      o.checkpointDir = next();
    } else if (a == "--checkpoint-every") {
      o.checkpointEvery = parseInt(a, next(), 1);
    } else if (a == "--resume") {
      o.resumeDir = next();
    } else if (a == "--save-grads") {
      if (hasValue)
        throw RuntimeError("--save-grads takes no value");
      o.saveGrads = true;
    } else if (a == "--warmup") {
      o.warmup = parseInt(a, next(), 0);
    } else if (a == "--timeout-s") {
      std::string v = next();
      char *end = nullptr;
      double t = std::strtod(v.c_str(), &end);
      // Deadlines are computed in nanoseconds on a steady clock; beyond
      // ~292 years that overflows, so cap well below (one year).
      if (v.empty() || *end || !(t > 0) || !std::isfinite(t) || t > 3.2e7)
        throw RuntimeError("--timeout-s expects a positive number of "
                           "seconds up to 3.2e7 (one year), got '" + v + "'");
      o.timeoutS = t;
    } else if (a == "--seed") {
      o.seed = parseSeed(next());
    } else if (a == "--threads") {
      o.threads = parseInt(a, next(), 1);
      if (o.threads > 4096)
        throw RuntimeError("--threads expects 1 to 4096, got " +
                           std::to_string(o.threads));
    } else if (a == "--pin-ranks") {
      o.pinRanks = next();
      if (o.pinRanks != "auto" && o.pinRanks != "on" && o.pinRanks != "off")
        throw RuntimeError("--pin-ranks expects auto, on or off, got '" +
                           o.pinRanks + "'");
    } else if (a == "--devices") {
      std::string v = next();
      std::stringstream ss(v);
      std::string d;
      o.devices.clear();
      while (std::getline(ss, d, ','))
        o.devices.push_back(parseInt("--devices", d, 0));
      if (o.devices.empty() || v.back() == ',')
        throw RuntimeError("--devices expects a comma list of CUDA device "
                           "numbers (e.g. 0,1), got '" + v + "'");
    } else if (a == "--input") {
      std::string v = next();
      size_t eq = v.find('=');
      if (eq == std::string::npos)
        throw RuntimeError("--input expects INDEX=FILE.npy[,FILE2.npy...], "
                           "got '" + v + "'");
      int idx = parseInt("--input index", v.substr(0, eq), 0);
      std::vector<std::string> files;
      std::stringstream ss(v.substr(eq + 1));
      std::string f;
      while (std::getline(ss, f, ','))
        files.push_back(f);
      if (!files.empty() && v.back() == ',')
        files.push_back("");
      if (std::find(files.begin(), files.end(), "") != files.end() &&
          files.size() > 1)
        throw RuntimeError("--input " + std::to_string(idx) +
                           ": an empty file name in the list '" + v + "'");
      if (files.empty() || files[0].empty())
        throw RuntimeError("--input " + std::to_string(idx) + ": no file");
      if (o.inputFiles.count(idx))
        throw RuntimeError("--input " + std::to_string(idx) +
                           " given twice");
      o.inputFiles[idx] = files;
    } else if (a == "--output-dir") {
      o.outputDir = next();
    } else if (a == "--trace") {
      o.tracePath = next();
    } else if (a == "--profile") {
      o.profilePath = next();
    } else if (a == "--quiet" || a == "-q") {
      o.quiet = true;
    } else if (a.rfind("-", 0) == 0) {
      throw RuntimeError("unknown option '" + a + "'");
    } else if (a.empty()) {
      throw RuntimeError("an empty argument where the model .so belongs (an "
                         "unset shell variable?)");
    } else if (o.modelPath.empty()) {
      o.modelPath = a;
    } else {
      throw RuntimeError("unexpected argument '" + a + "'");
    }
  }
  if (o.modelPath.empty())
    throw RuntimeError("no model .so given");
  if (o.steps > 0) {
    if (iterationsGiven)
      throw RuntimeError("--steps and --iterations both given: --steps is "
                         "a training build's name for --iterations; give "
                         "one of them");
    o.iterations = o.steps;
  }
  if (o.checkpointDir.empty() != (o.checkpointEvery == 0))
    throw RuntimeError("--checkpoint-dir and --checkpoint-every K go "
                       "together (a checkpoint after every K-th step)");
  if (o.saveGrads && o.outputDir.empty())
    throw RuntimeError("--save-grads needs --output-dir DIR (the directory "
                       "that receives grad_<i>.npy and loss.npy)");
  if (o.manifestPath.empty())
    o.manifestPath = defaultManifestPath(o.modelPath);
  // Fault injection for tests (docs/Runtime.md, "Testing failures").
  if (const char *f = std::getenv("PIPEOPT_FAULT_KILL")) {
    int rank = -1, step = 0, end = 0;
    if (std::sscanf(f, "%d:%d%n", &rank, &step, &end) != 2 ||
        f[end] != '\0' || rank < 0 || step < 1)
      throw RuntimeError(std::string("PIPEOPT_FAULT_KILL must be "
                                     "<rank>:<step> (step >= 1); got '") +
                         f + "'");
    o.faultKillRank = rank;
    o.faultKillStep = step;
  }
  return o;
}

std::vector<int> assignDevices(const std::vector<int> &listed,
                               const std::vector<int> &localRanks,
                               bool distributed, int localRank, int count) {
  std::vector<int> pool = listed;
  if (pool.empty())
    for (int d = 0; d < count; ++d)
      pool.push_back(d);
  if (pool.empty())
    throw RuntimeError("no CUDA device is visible");
  for (int d : pool)
    if (d < 0 || d >= count)
      throw RuntimeError("--devices: CUDA device " + std::to_string(d) +
                         " does not exist (" + std::to_string(count) +
                         " visible: 0.." + std::to_string(count - 1) + ")");
  std::vector<int> out;
  for (int r : localRanks)
    out.push_back(pool[size_t(distributed ? localRank : r) % pool.size()]);
  return out;
}

bool isTrainingBuild(const Manifest &m) {
  return m.hasParameters || std::any_of(
      m.outputs.begin(), m.outputs.end(),
      [](const ManifestOutput &o) { return o.reduce == OutputReduce::Mean; });
}

std::string outputFileName(const ManifestOutput &output, const RunOptions &o) {
  if (o.saveGrads && !output.name.empty())
    return output.name + ".npy";
  return "output_" + std::to_string(output.index) + ".npy";
}

/// The index of the output named "loss" with "reduce": "mean", or -1.
static int lossOutput(const Manifest &m) {
  for (const ManifestOutput &o : m.outputs)
    if (o.name == "loss" && o.reduce == OutputReduce::Mean)
      return o.index;
  return -1;
}

void checkTrainingOptions(const Manifest &m, const RunOptions &o) {
  if (m.hasParameters && o.warmup > 0 &&
      m.training.optimizer != OptimizerKind::None)
    throw RuntimeError("--warmup " + std::to_string(o.warmup) +
                       ": the manifest " + o.manifestPath +
                       " trains with optimizer '" +
                       optimizerName(m.training.optimizer) +
                       "', and warm-up steps would change the weights; run "
                       "without --warmup");
  if ((!o.checkpointDir.empty() || !o.resumeDir.empty()) && !m.hasParameters)
    throw RuntimeError(
        std::string(o.resumeDir.empty() ? "--checkpoint-dir" : "--resume") +
        ": the manifest " + o.manifestPath +
        " has no \"parameters\"; checkpoints hold the weights and optimizer "
        "state of a training build with parameters");
  if (!o.saveGrads && o.steps == 0)
    return;
  if (!isTrainingBuild(m))
    throw RuntimeError(
        std::string(o.saveGrads ? "--save-grads" : "--steps") +
        ": the model is not a training build (no output of the manifest " +
        o.manifestPath +
        " has \"reduce\": \"mean\", i.e. no loss or "
        "gradients averaged over microbatches); compile a training step "
        "with pipeopt-compile --reference --train" +
        (o.saveGrads ? "" : ", or count forward runs with --iterations"));
  if (!o.saveGrads)
    return;
  std::map<std::string, int> files;
  // The files of the parameters (-1: not an output) come first.
  if (m.hasParameters) {
    files.insert({"loss.npy", -1});
    files.insert({"optimizer.json", -1});
    for (const ManifestParameter &p : m.parameters)
      for (const char *prefix :
           {"weight_", "grad_", "momentum_", "adam_m_", "adam_v_"})
        files.insert({prefix + std::to_string(p.index) + ".npy", -1});
  }
  for (const ManifestOutput &out : m.outputs) {
    if (m.hasParameters && out.index == lossOutput(m))
      continue; // written as loss.npy, the per-step losses
    const std::string &n = out.name;
    bool plain = !n.empty() && n[0] != '.' &&
                 std::all_of(n.begin(), n.end(), [](char c) {
                   return std::isalnum(static_cast<unsigned char>(c)) ||
                          c == '_' || c == '-' || c == '.';
                 });
    if (!n.empty() && !plain)
      throw RuntimeError("--save-grads: output " + std::to_string(out.index) +
                         " of the manifest " + o.manifestPath + " is named '" +
                         n +
                         "', which is not a plain file name (letters, "
                         "digits, '_', '-' and '.', not starting with '.')");
    std::string file = outputFileName(out, o);
    auto [it, inserted] = files.insert({file, out.index});
    if (!inserted && it->second < 0)
      throw RuntimeError("--save-grads: output " + std::to_string(out.index) +
                         " of the manifest " + o.manifestPath +
                         " would be written to " + file +
                         ", which holds the training state of a parameter");
    if (!inserted)
      throw RuntimeError("--save-grads: outputs " + std::to_string(it->second) +
                         " and " + std::to_string(out.index) +
                         " of the manifest " + o.manifestPath +
                         " would both be written to " + file);
  }
}

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

static uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (exp <= 0) {
    if (exp < -10)
      return uint16_t(sign);
    mant |= 0x800000;
    return uint16_t(sign | (mant >> (14 - exp)));
  }
  if (exp >= 31)
    return uint16_t(sign | 0x7c00);
  return uint16_t(sign | (uint32_t(exp) << 10) | (mant >> 13));
}

static uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  x += 0x7fff + ((x >> 16) & 1); // round to nearest even
  return uint16_t(x >> 16);
}

/// Largest input the runner materializes (all microbatches together):
/// 64 GiB. Larger manifests are almost certainly wrong, and failing up
/// front names the input instead of a bare std::bad_alloc.
constexpr uint64_t kMaxInputBytes = uint64_t(64) << 30;

/// Checks every input of `m` (with its microbatch dimension) for element
/// count / byte size overflow and against kMaxInputBytes before anything is
/// allocated; throws a RuntimeError naming the input and its size.
void checkInputSizes(const Manifest &m) {
  for (const ManifestInput &in : m.inputs) {
    Shape full = in.shape;
    if (in.microbatched)
      full.insert(full.begin(), m.numMicrobatches);
    std::string what = "input " + std::to_string(in.index) +
                       (in.name.empty() ? "" : " ('" + in.name + "')") +
                       " of shape " + typeString(in.dtype, full);
    int64_t n;
    try {
      n = numElements(full);
    } catch (const RuntimeError &) {
      throw RuntimeError(what + ": the element count overflows 64 bits");
    }
    uint64_t elemBytes = dtypeSize(in.dtype);
    if (elemBytes != 0 && uint64_t(n) > kMaxInputBytes / elemBytes) {
      std::ostringstream os;
      os.precision(3);
      os << what << " needs " << double(n) * double(elemBytes) << " bytes ("
         << double(n) * double(elemBytes) / double(uint64_t(1) << 30)
         << " GiB), more than the limit of 64 GiB per input";
      throw RuntimeError(os.str());
    }
  }
}

HostTensor randomInput(const ManifestInput &input, int numMicrobatches,
                       uint64_t seed) {
  HostTensor t;
  t.dtype = input.dtype;
  t.shape = input.shape;
  if (input.microbatched)
    t.shape.insert(t.shape.begin(), numMicrobatches);
  DType dtype = t.dtype;
  int64_t n = numElements(t.shape);
  t.data.resize(size_t(n) * dtypeSize(dtype));
  // The rule and its rationale: Runner.h. Data: unscaled. Weights: by the
  // shape without its leading 1s (the batch dimension of TOSA's rank-3
  // matmul operands and of broadcast biases such as [1, 1, N]).
  double lo = -1.0, hi = 1.0;
  if (!input.microbatched) {
    Shape w = input.shape;
    w.erase(w.begin(), std::find_if(w.begin(), w.end(),
                                     [](int64_t d) { return d != 1; }));
    if (w.size() <= 1) {
      lo = 0.5;
      hi = 1.5;
    } else {
      int64_t fanIn = numElements(Shape(w.begin() + 1, w.end()));
      double a = fanIn > 0 ? std::sqrt(3.0 / double(fanIn)) : 1.0;
      lo = -a;
      hi = a;
    }
  }
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> uniform(lo, hi);
  // Integers: [0, 10), or [0, index_bound) for gather indices (an embedding
  // lookup must stay inside its table).
  std::uniform_int_distribution<int64_t> small(
      0, input.indexBound > 0 ? input.indexBound - 1 : 9);
  std::uniform_int_distribution<int> bit(0, 1);
  auto real = [&] { return uniform(gen); };
  for (int64_t i = 0; i < n; ++i) {
    uint8_t *p = t.data.data() + size_t(i) * dtypeSize(dtype);
    switch (dtype) {
    case DType::F32: {
      float v = float(real());
      std::memcpy(p, &v, 4);
      break;
    }
    case DType::F64: {
      double v = real();
      std::memcpy(p, &v, 8);
      break;
    }
    case DType::F16: {
      uint16_t v = floatToHalf(float(real()));
      std::memcpy(p, &v, 2);
      break;
    }
    case DType::BF16: {
      uint16_t v = floatToBf16(float(real()));
      std::memcpy(p, &v, 2);
      break;
    }
    case DType::I64: {
      int64_t v = small(gen);
      std::memcpy(p, &v, 8);
      break;
    }
    case DType::I32: {
      int32_t v = int32_t(std::min<int64_t>(small(gen), INT32_MAX));
      std::memcpy(p, &v, 4);
      break;
    }
    case DType::I8:
      *p = uint8_t(std::min<int64_t>(small(gen), 127));
      break;
    case DType::I1:
      *p = uint8_t(bit(gen));
      break;
    }
  }
  return t;
}

void ensureDir(const std::string &dir) {
  if (dir.empty())
    throw RuntimeError("cannot create a directory with an empty name");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw RuntimeError("cannot create directory " + dir + ": " + ec.message());
  if (!std::filesystem::is_directory(dir, ec))
    throw RuntimeError("cannot create directory " + dir +
                       ": a file of that name exists");
}

uint64_t parseSeed(const std::string &v) {
  // strtoull alone accepts "-1" (as 2^64 - 1) and saturates on
  // overflow: require digits only, and no ERANGE.
  char *end = nullptr;
  errno = 0;
  uint64_t seed = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end || errno == ERANGE ||
      !std::all_of(v.begin(), v.end(),
                   [](char c) { return c >= '0' && c <= '9'; }))
    throw RuntimeError("--seed expects a non-negative integer below "
                       "2^64, got '" + v + "'");
  return seed;
}

uint64_t inputSeed(uint64_t seed, int64_t index) {
  return seed * 1000003ull + uint64_t(index) + 1;
}

/// Every value of a class-index input (a cross-entropy target) must be a
/// class: in [0, index_bound).
void checkClassIndices(const ManifestInput &in, const HostTensor &t,
                       const std::string &file) {
  size_t n = size_t(numElements(t.shape));
  size_t width = t.data.size() / std::max<size_t>(n, 1);
  for (size_t i = 0; i < n; ++i) {
    int64_t v = 0;
    const uint8_t *p = t.data.data() + i * width;
    if (width == 8) {
      std::memcpy(&v, p, 8);
    } else if (width == 4) {
      int32_t x;
      std::memcpy(&x, p, 4);
      v = x;
    } else {
      v = int8_t(*p);
    }
    if (v < 0 || v >= in.indexBound)
      throw RuntimeError(file + ": input " + std::to_string(in.index) +
                         " holds class indices in [0, " +
                         std::to_string(in.indexBound) +
                         ") (a cross-entropy target; \"class_indices\" in "
                         "the manifest), but element " + std::to_string(i) +
                         " is " + std::to_string(v));
  }
}

namespace {
/// readNpy, naming the file and its size when it does not fit in memory.
HostTensor readInputNpy(const std::string &file, const std::string &what) {
  try {
    return readNpy(file);
  } catch (const std::bad_alloc &) {
    std::error_code ec;
    uintmax_t size = std::filesystem::file_size(file, ec);
    throw RuntimeError(
        file + ": " + what + ": out of memory reading the " +
        (ec ? std::string("file") : std::to_string(size) + "-byte file"));
  }
}
} // namespace

namespace {
InputStore loadInputsUnchecked(const Manifest &m, const RunOptions &o,
                               const ManifestInput **current);
} // namespace

InputStore loadInputs(const Manifest &m, const RunOptions &o) {
  checkInputSizes(m);
  const ManifestInput *current = nullptr;
  try {
    return loadInputsUnchecked(m, o, &current);
  } catch (const std::bad_alloc &) {
    if (!current)
      throw RuntimeError("out of memory loading the model's inputs");
    Shape full = current->shape;
    if (current->microbatched)
      full.insert(full.begin(), m.numMicrobatches);
    uint64_t bytes = uint64_t(numElements(full)) * dtypeSize(current->dtype);
    auto it = o.inputFiles.find(current->index);
    throw RuntimeError(
        "input " + std::to_string(current->index) +
        (current->name.empty() ? "" : " ('" + current->name + "')") + " " +
        typeString(current->dtype, full) + ": out of memory allocating its " +
        std::to_string(bytes) + " bytes" +
        (it == o.inputFiles.end() ? std::string(" (random data)")
                                  : " (from " + it->second[0] + ")"));
  }
}

namespace {
InputStore loadInputsUnchecked(const Manifest &m, const RunOptions &o,
                               const ManifestInput **current) {
  for (const auto &kv : o.inputFiles)
    if (!m.findInput(kv.first))
      throw RuntimeError("--input " + std::to_string(kv.first) +
                         ": the manifest lists no input with that index");
  InputStore store;
  for (const ManifestInput &in : m.inputs) {
    *current = &in;
    std::string what = "input " + std::to_string(in.index);
    Shape full = in.shape;
    if (in.microbatched)
      full.insert(full.begin(), m.numMicrobatches);
    auto it = o.inputFiles.find(in.index);
    if (it == o.inputFiles.end()) {
      store.set(in, m.numMicrobatches,
                randomInput(in, m.numMicrobatches,
                            inputSeed(o.seed, in.index)));
      continue;
    }
    const auto &files = it->second;
    HostTensor t;
    int dataSteps = 0;
    if (files.size() == 1) {
      t = readInputNpy(files[0], what);
      if (t.dtype != in.dtype)
        throw RuntimeError(files[0] + ": " + what + " has dtype " +
                           dtypeName(t.dtype) + " but the manifest says " +
                           dtypeName(in.dtype));
      // A dataset: one of the single-file forms per step, [N, M, ...shape]
      // or [N, M*d0, d1, ...] (one more dimension than the form; N = the
      // steps of the run).
      Shape split = in.shape;
      if (!split.empty())
        split[0] *= m.numMicrobatches;
      Shape rest(t.shape.empty() ? t.shape.begin() : t.shape.begin() + 1,
                 t.shape.end());
      bool perStepFull = t.shape.size() == full.size() + 1 && rest == full;
      bool perStepSplit = !in.shape.empty() &&
                          t.shape.size() == full.size() && rest == split &&
                          t.shape != full;
      if (in.microbatched && (perStepFull || perStepSplit)) {
        int64_t n = t.shape[0];
        if (n != o.iterations)
          throw RuntimeError(
              files[0] + ": " + what + " is a dataset of " +
              std::to_string(n) + " step(s) (" +
              typeString(t.dtype, t.shape) + ": steps x " +
              typeString(t.dtype, rest) + "), but the run has " +
              std::to_string(o.iterations) +
              " step(s) (--steps / --iterations): a dataset gives every "
              "step its own data");
        dataSteps = int(n);
        Shape perStep = full;
        perStep.insert(perStep.begin(), n);
        t.shape = perStep; // same bytes in C order
      } else if (in.microbatched && t.shape != full) {
        // Accept [M*d0, d1, ...]: the whole batch, split along dim 0.
        if (split.empty() || t.shape != split)
          throw RuntimeError(
              files[0] + ": " + what + " is microbatched with per-microbatch "
              "shape " + typeString(in.dtype, in.shape) + " and " +
              std::to_string(m.numMicrobatches) + " microbatches, so the file "
              "must be " + typeString(in.dtype, full) +
              (split.empty() ? "" : " or " + typeString(in.dtype, split)) +
              " (or a comma list of " + std::to_string(m.numMicrobatches) +
              " files), but it is " + typeString(t.dtype, t.shape));
        t.shape = full; // same bytes in C order
      } else if (!in.microbatched && t.shape != full) {
        throw RuntimeError(files[0] + ": " + what + " must be " +
                           typeString(in.dtype, full) + " but the file is " +
                           typeString(t.dtype, t.shape));
      }
    } else {
      if (!in.microbatched || files.size() != size_t(m.numMicrobatches))
        throw RuntimeError(
            "--input " + std::to_string(in.index) + ": got " +
            std::to_string(files.size()) + " files; a list must have one "
            "file per microbatch (" + std::to_string(m.numMicrobatches) +
            ") and the input must be microbatched");
      t.dtype = in.dtype;
      t.shape = full;
      for (const auto &f : files) {
        HostTensor part = readInputNpy(f, what);
        if (part.dtype != in.dtype || part.shape != in.shape)
          throw RuntimeError(f + ": " + what + " needs one microbatch of " +
                             typeString(in.dtype, in.shape) +
                             " per file, but the file is " +
                             typeString(part.dtype, part.shape));
        t.data.insert(t.data.end(), part.data.begin(), part.data.end());
      }
    }
    if (in.classIndices)
      checkClassIndices(in, t, files[0]);
    store.set(in, m.numMicrobatches, std::move(t), dataSteps);
  }
  return store;
}
} // namespace

//===----------------------------------------------------------------------===//
// Running ranks
//===----------------------------------------------------------------------===//

namespace {

using EntryFn = int32_t (*)();

enum ControlTag : int32_t {
  TagBarrier = 1,
  TagStats = 2,
  TagEvents = 3,
  TagOutputCount = 4,
  TagOutput = 5,
  TagModelEvidence = 6,
  TagReducedCount = 7,
  TagReduced = 8,
  TagGradient = 9,    ///< a rank's gradient accumulator of one parameter
  TagStepLoss = 10,   ///< a rank's loss sum, count and time of one step
  TagParamValue = 11, ///< a rank's copy of one parameter (gathering)
  TagParamState = 12, ///< its mean gradient and optimizer state (f64)
  TagStash = 13,      ///< a rank's peak stashed bytes
  TagDone = 14,       ///< rank 0 has every rank's results (the run's end)
};

/// What rank 0 collects from every rank.
struct RankReport {
  std::vector<double> iterationS;
  std::vector<TraceEvent> events;
  std::map<std::pair<int, int>, HostTensor> outputs;
  /// Outputs with "reduce": "mean": output index -> the sum of the values
  /// the rank wrote in its last call (with --output-dir; the microbatches
  /// are in outputsWritten).
  std::map<int, std::vector<double>> reducedSums;
  /// What the program did, to check the manifest against: RankContext's
  /// microbatchedInputReads and inputsReadPerMicrobatch, and the
  /// (output index, microbatch or -1) the rank wrote.
  std::set<std::pair<int, int>> microbatchedInputReads;
  std::set<int> inputsReadPerMicrobatch;
  std::set<std::pair<int, int>> outputsWritten;
  /// pipeopt_rt_stash: whether the rank called it, and its peak total.
  bool stashUsed = false;
  int64_t stashPeak = 0;
};

/// Kinds of the (kind, index, microbatch) triples of a TagModelEvidence
/// message.
enum EvidenceKind : int32_t {
  EvidenceInputRead = 0,      ///< microbatched input read for microbatch
  EvidenceReadPerMicrobatch = 1, ///< input read for 2+ microbatches in a call
  EvidenceOutputWritten = 2,  ///< output written for microbatch (or -1)
};

RankReport evidenceOf(const RankContext &ctx) {
  RankReport r;
  r.microbatchedInputReads = ctx.microbatchedInputReads;
  r.inputsReadPerMicrobatch = ctx.inputsReadPerMicrobatch;
  for (const auto &kv : ctx.outputs)
    r.outputsWritten.insert(kv.first);
  for (const auto &[index, acc] : ctx.reducedOutputs)
    for (int mb : acc.microbatches)
      r.outputsWritten.insert({index, mb});
  return r;
}

void sendControl(Communicator &c, int dst, int32_t tag, const void *data,
                 size_t bytes, double timeoutS, DType dtype = DType::I8,
                 Shape shape = {}, int index = -1, int mb = -1) {
  MessageHeader h;
  h.kind = MessageHeader::Control;
  h.tag = tag;
  h.dtype = uint8_t(dtype);
  if (shape.empty() && dtype == DType::I8)
    shape = {int64_t(bytes)};
  h.setShape(shape);
  h.bytes = int64_t(bytes);
  h.srcRank = c.rank();
  h.dstRank = dst;
  h.valueIndex = index;
  h.microbatch = mb;
  h.seal();
  c.send(dst, h, data, bytes, timeoutS);
}

Message recvControl(Communicator &c, int src, int32_t tag, double timeoutS) {
  Message m = c.recv(src, timeoutS);
  std::string bad = m.header.validate();
  if (!bad.empty())
    throw RuntimeError("bad launcher message from rank " +
                       std::to_string(src) + ": " + bad);
  if (m.header.kind != MessageHeader::Control || m.header.tag != tag) {
    std::ostringstream os;
    os << "expected launcher message " << tag << " from rank " << src
       << " but got ";
    if (m.header.kind == MessageHeader::Tensor)
      os << "a tensor for stage " << m.header.dstStage << " microbatch "
         << m.header.microbatch << " value " << m.header.valueIndex
         << " (rank " << src << " sent more messages than were received)";
    else
      os << "launcher message " << m.header.tag;
    throw RuntimeError(os.str());
  }
  if (m.payload.size() != size_t(m.header.bytes))
    throw RuntimeError("launcher message from rank " + std::to_string(src) +
                       " has a wrong payload size");
  return m;
}

/// All ranks meet; hub is rank 0.
void barrier(Communicator &c, double timeoutS) {
  if (c.size() == 1)
    return;
  if (c.rank() == 0) {
    for (int r = 1; r < c.size(); ++r)
      recvControl(c, r, TagBarrier, timeoutS);
    for (int r = 1; r < c.size(); ++r)
      sendControl(c, r, TagBarrier, nullptr, 0, timeoutS);
  } else {
    sendControl(c, 0, TagBarrier, nullptr, 0, timeoutS);
    recvControl(c, 0, TagBarrier, timeoutS);
  }
}

struct PackedEvent {
  int32_t kind, stage, microbatch, iteration;
  double beginS, endS;
  int32_t peer, pad = 0;
  int64_t bytes;
};

/// Sends this rank's report to rank 0 (rank != 0).
void sendReport(Communicator &c, const RankContext &ctx,
                const std::vector<double> &iterS, bool withOutputs,
                double timeoutS) {
  sendControl(c, 0, TagStats, iterS.data(), iterS.size() * sizeof(double),
              timeoutS, DType::F64, {int64_t(iterS.size())});
  std::vector<PackedEvent> ev;
  for (const auto &e : ctx.events)
    ev.push_back({e.kind, e.stage, e.microbatch, e.iteration, e.beginS,
                  e.endS, e.peer, 0, e.bytes});
  sendControl(c, 0, TagEvents, ev.data(), ev.size() * sizeof(PackedEvent),
              timeoutS);
  std::vector<int32_t> evidence;
  auto add = [&](EvidenceKind kind, int index, int mb) {
    evidence.insert(evidence.end(), {kind, index, mb});
  };
  RankReport own = evidenceOf(ctx);
  for (const auto &r : own.microbatchedInputReads)
    add(EvidenceInputRead, r.first, r.second);
  for (int index : own.inputsReadPerMicrobatch)
    add(EvidenceReadPerMicrobatch, index, -1);
  for (const auto &w : own.outputsWritten)
    add(EvidenceOutputWritten, w.first, w.second);
  sendControl(c, 0, TagModelEvidence, evidence.data(),
              evidence.size() * sizeof(int32_t), timeoutS);
  int64_t count = withOutputs ? int64_t(ctx.outputs.size()) : 0;
  sendControl(c, 0, TagOutputCount, &count, sizeof(count), timeoutS,
              DType::I64, {1});
  if (withOutputs)
    for (const auto &kv : ctx.outputs)
      sendControl(c, 0, TagOutput, kv.second.data.data(), kv.second.data.size(),
                  timeoutS, kv.second.dtype,
                  kv.second.shape.empty() ? Shape{} : kv.second.shape,
                  kv.first.first, kv.first.second);
  int64_t stash[2] = {ctx.stashUsed ? 1 : 0, ctx.stashPeakBytes};
  sendControl(c, 0, TagStash, stash, sizeof(stash), timeoutS, DType::I64,
              {2});
  // The sums of "reduce": "mean" outputs, as f64 vectors.
  int64_t reduced = withOutputs ? int64_t(ctx.reducedOutputs.size()) : 0;
  sendControl(c, 0, TagReducedCount, &reduced, sizeof(reduced), timeoutS,
              DType::I64, {1});
  if (withOutputs)
    for (const auto &[index, acc] : ctx.reducedOutputs)
      sendControl(c, 0, TagReduced, acc.sum.data(),
                  acc.sum.size() * sizeof(double), timeoutS, DType::F64,
                  {int64_t(acc.sum.size())}, index, -1);
}

/// The payload of `m` as whole elements of T (a trailing partial element is
/// dropped). An empty payload gives an empty vector without a memcpy from a
/// null pointer (undefined behaviour, found by UBSan: a middle rank reports
/// no evidence).
template <typename T>
std::vector<T> payloadAs(const Message &m) {
  std::vector<T> v(m.payload.size() / sizeof(T));
  if (!v.empty())
    std::memcpy(v.data(), m.payload.data(), v.size() * sizeof(T));
  return v;
}

RankReport recvReport(Communicator &c, int src, double timeoutS) {
  RankReport r;
  Message m = recvControl(c, src, TagStats, timeoutS);
  r.iterationS = payloadAs<double>(m);
  m = recvControl(c, src, TagEvents, timeoutS);
  std::vector<PackedEvent> ev = payloadAs<PackedEvent>(m);
  for (const auto &e : ev)
    r.events.push_back({e.kind, e.stage, e.microbatch, e.iteration, e.beginS,
                        e.endS, e.peer, e.bytes});
  m = recvControl(c, src, TagModelEvidence, timeoutS);
  std::vector<int32_t> evidence = payloadAs<int32_t>(m);
  for (size_t i = 0; i + 2 < evidence.size(); i += 3) {
    std::pair<int, int> item{evidence[i + 1], evidence[i + 2]};
    if (evidence[i] == EvidenceInputRead)
      r.microbatchedInputReads.insert(item);
    else if (evidence[i] == EvidenceReadPerMicrobatch)
      r.inputsReadPerMicrobatch.insert(item.first);
    else if (evidence[i] == EvidenceOutputWritten)
      r.outputsWritten.insert(item);
  }
  m = recvControl(c, src, TagOutputCount, timeoutS);
  int64_t count = 0;
  std::memcpy(&count, m.payload.data(), sizeof(count));
  for (int64_t i = 0; i < count; ++i) {
    m = recvControl(c, src, TagOutput, timeoutS);
    HostTensor t;
    t.dtype = DType(m.header.dtype);
    t.shape = m.header.getShape();
    t.data = std::move(m.payload);
    r.outputs[{m.header.valueIndex, m.header.microbatch}] = std::move(t);
  }
  m = recvControl(c, src, TagStash, timeoutS);
  int64_t stash[2] = {0, 0};
  if (m.payload.size() == sizeof(stash))
    std::memcpy(stash, m.payload.data(), sizeof(stash));
  r.stashUsed = stash[0] != 0;
  r.stashPeak = stash[1];
  m = recvControl(c, src, TagReducedCount, timeoutS);
  std::memcpy(&count, m.payload.data(), sizeof(count));
  for (int64_t i = 0; i < count; ++i) {
    m = recvControl(c, src, TagReduced, timeoutS);
    std::vector<double> &sum = r.reducedSums[m.header.valueIndex];
    sum.resize(m.payload.size() / sizeof(double));
    std::memcpy(sum.data(), m.payload.data(), sum.size() * sizeof(double));
  }
  return r;
}

/// Result of one local rank (GatheredParameter: Runner.h).

struct RankResult {
  bool ok = true;
  /// The non-finite-loss warning was printed (once per run).
  bool warnedNonFinite = false;
  std::string error;
  std::vector<RankReport> reports; ///< rank 0 only: [rank]
  /// Training builds with parameters (rank 0 only): the per-step losses
  /// (NaN for a step without a loss output), the gathered parameters, the
  /// ranks' peak stashed bytes (-1: the rank never called pipeopt_rt_stash).
  std::vector<float> losses;
  std::map<int, GatheredParameter> parameters;
  std::vector<int64_t> stashPeak;
};


std::string parameterName(const Manifest &m, int index) {
  const ManifestInput *in = m.findInput(index);
  return "parameter " + std::to_string(index) +
         (in && !in->name.empty() ? " ('" + in->name + "')" : "");
}

std::string rankList(const std::vector<int> &ranks) {
  std::string s;
  for (int r : ranks)
    s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

/// Sends a control message whose payload is `values` (f64).
void sendDoubles(Communicator &c, int dst, int32_t tag,
                 const std::vector<double> &values, int index, int step,
                 double timeoutS) {
  sendControl(c, dst, tag, values.data(), values.size() * sizeof(double),
              timeoutS, DType::F64, {int64_t(values.size())}, index, step);
}

/// Receives a control message `tag` from `src` about parameter `index` in
/// step `step`; checks both against its header (the ranks must agree on the
/// parameters and the step). `what` names the exchange for errors.
Message recvAbout(Communicator &c, int src, int32_t tag, int index, int step,
                  double timeoutS, const std::string &what) {
  Message msg;
  try {
    msg = recvControl(c, src, tag, timeoutS);
  } catch (const RuntimeError &e) {
    throw RuntimeError(what + ": " + e.what());
  }
  if (msg.header.valueIndex != index || msg.header.microbatch != step)
    throw RuntimeError(what + ": rank " + std::to_string(src) +
                       " sent parameter " +
                       std::to_string(msg.header.valueIndex) + " of step " +
                       std::to_string(msg.header.microbatch) +
                       ": the ranks disagree on the parameters (is it the "
                       "manifest of this model?)");
  return msg;
}

/// The end of a training step on one rank (a manifest with parameters):
/// for every parameter this rank keeps, the ranks of its list exchange
/// their accumulators (pairwise, in a global order that is deadlock-free
/// even with rendezvous sends), sum them in ascending rank order, check
/// that every rank reported and every microbatch is covered, divide by M
/// and apply the optimizer. Returns an error message ("" if none); throws
/// on communication errors.
std::string reduceAndUpdate(RankContext &ctx, Communicator &comm,
                            const Manifest &m, int step, double timeoutS) {
  const size_t M = size_t(m.numMicrobatches);
  // Asynchronous schedules updated each parameter as its gradients arrived
  // (pipeopt_rt_gradient); the step only checks that none is missing.
  if (m.training.updateEvery > 0) {
    for (auto &[index, st] : ctx.parameters)
      if (st.microbatches.size() != M || st.pending != 0)
        return parameterName(m, index) + ": rank " + std::to_string(ctx.rank) +
               " reported its gradient for " +
               std::to_string(st.microbatches.size()) + " of " +
               std::to_string(M) + " microbatches in step " +
               std::to_string(step) +
               " (asynchronous updates need every microbatch's)";
    return "";
  }
  for (auto &[index, st] : ctx.parameters) {
    const std::vector<int> &ranks = st.param->ranks;
    // cuda builds: the sums are on the device. A parameter of one rank is
    // updated there from its sum; the sums of a parameter of several ranks
    // are exchanged through the host (the one copy of a training step
    // that is not an input or output) and the mean goes back to the device.
    bool onDevice = st.device != nullptr;
    bool deviceOnly = onDevice && ranks.size() == 1;
    size_t n = onDevice ? size_t(numElements(st.value.shape))
                        : st.gradSum.size();
    size_t sumBytes = deviceOnly ? 0 : n * sizeof(double);
    // Payload: the n sums, then one byte per microbatch (reported or not).
    std::vector<uint8_t> mine(sumBytes + M, 0);
    if (!onDevice)
      std::memcpy(mine.data(), st.gradSum.data(), sumBytes);
    else if (!deviceOnly)
      ctx.device->copy(mine.data(), st.device->gradSum.data(), sumBytes);
    for (int mb : st.microbatches)
      mine[sumBytes + size_t(mb)] = 1;
    std::map<int, std::vector<uint8_t>> all;
    for (int peer : ranks) {
      if (peer == ctx.rank)
        continue;
      std::string what = "exchanging the gradient of " +
                         parameterName(m, index) + " with rank " +
                         std::to_string(peer) + " in step " +
                         std::to_string(step);
      auto receive = [&] {
        Message msg = recvAbout(comm, peer, TagGradient, index, step,
                                timeoutS, what);
        if (msg.payload.size() != mine.size())
          throw RuntimeError(what + ": rank " + std::to_string(peer) +
                             " sent " + std::to_string(msg.payload.size()) +
                             " bytes, expected " +
                             std::to_string(mine.size()) + " (" +
                             std::to_string(n) + " sums and " +
                             std::to_string(M) + " microbatch flags)");
        all[peer] = std::move(msg.payload);
      };
      auto send = [&] {
        try {
          sendControl(comm, peer, TagGradient, mine.data(), mine.size(),
                      timeoutS, DType::I8, {}, index, step);
        } catch (const RuntimeError &e) {
          throw RuntimeError(what + ": " + e.what());
        }
      };
      if (ctx.rank < peer) {
        send();
        receive();
      } else {
        receive();
        send();
      }
    }
    all[ctx.rank] = std::move(mine);
    // Sum in ascending rank order: every copy gets the same bits.
    std::vector<double> total(deviceOnly ? 0 : n, 0.0);
    std::vector<bool> covered(M, false);
    for (int r : ranks) {
      const std::vector<uint8_t> &bytes = all[r];
      const uint8_t *flags = bytes.data() + sumBytes;
      bool any = false;
      for (size_t mb = 0; mb < M; ++mb)
        if (flags[mb]) {
          covered[mb] = true;
          any = true;
        }
      if (!any)
        return parameterName(m, index) + ": rank " + std::to_string(r) +
               " is in its \"ranks\" (" + rankList(ranks) +
               ") in the manifest " + m.source +
               " but reported no gradient for it in step " +
               std::to_string(step) +
               " (a rank that reads a parameter reports its gradient with "
               "pipeopt_rt_gradient)";
      for (size_t i = 0; i < total.size(); ++i) {
        double x;
        std::memcpy(&x, bytes.data() + i * sizeof(double), sizeof(double));
        total[i] += x;
      }
    }
    for (size_t mb = 0; mb < M; ++mb) {
      if (covered[mb])
        continue;
      std::string got;
      for (size_t k = 0; k < M; ++k)
        if (covered[k])
          got += (got.empty() ? "" : ", ") + std::to_string(k);
      return parameterName(m, index) + ": no rank of its \"ranks\" (" +
             rankList(ranks) + ") reported a gradient for microbatch " +
             std::to_string(mb) + " of " + std::to_string(M) + " in step " +
             std::to_string(step) + " (reported for microbatch(es) " + got +
             "): the schedule misses a weight-gradient (W or backward) "
             "action";
    }
    if (deviceOnly) {
      DeviceParameterState &d = *st.device;
      deviceParameterStep(ctx, st, static_cast<double *>(d.gradSum.data()),
                          1.0 / double(M));
      std::swap(d.gradSum, d.lastGradSum); // zeroed by beginCall
      d.lastGradScale = 1.0 / double(M);
      d.hostMeanGrad = false;
      continue;
    }
    for (double &x : total)
      x /= double(M);
    if (onDevice) {
      DeviceParameterState &d = *st.device;
      ctx.device->copy(d.gradSum.data(), total.data(), sumBytes);
      deviceParameterStep(ctx, st, static_cast<double *>(d.gradSum.data()),
                          1.0);
      d.hostMeanGrad = true;
      st.meanGrad = std::move(total);
      continue;
    }
    std::vector<double> w = tensorToDoubles(st.value);
    optimizerStep(m.training, w, total, st.optimizer);
    doublesToTensor(w, st.value);
    st.meanGrad = std::move(total);
  }
  return "";
}

/// Rank 0 receives every parameter from the lowest rank of its list (its
/// value and, with `withState`, mean gradient and optimizer state) and
/// checks the other ranks' copies bit for bit; the other ranks send theirs.
/// Every rank calls it at the same steps. Returns an error ("" if none).
std::string gatherParameters(RankContext &ctx, Communicator &comm,
                             const Manifest &m, int step, bool withState,
                             double timeoutS,
                             std::map<int, GatheredParameter> *out) {
  std::string error;
  // cuda builds: the device copies are the current ones.
  for (auto &[index, st] : ctx.parameters)
    refreshHostParameter(ctx, st);
  for (const ManifestParameter &p : m.parameters) {
    int owner = p.ranks.front();
    std::string name = parameterName(m, p.index);
    if (ctx.rank != 0) {
      auto it = ctx.parameters.find(p.index);
      if (it == ctx.parameters.end())
        continue;
      const ParameterState &st = it->second;
      sendControl(comm, 0, TagParamValue, st.value.data.data(),
                  st.value.data.size(), timeoutS, st.value.dtype,
                  st.value.shape, p.index, step);
      if (withState && ctx.rank == owner) {
        std::vector<double> state = st.meanGrad;
        state.insert(state.end(), st.optimizer.first.begin(),
                     st.optimizer.first.end());
        state.insert(state.end(), st.optimizer.second.begin(),
                     st.optimizer.second.end());
        state.push_back(double(st.optimizer.step));
        state.push_back(double(st.meanGrad.size()));
        state.push_back(double(st.optimizer.first.size()));
        sendDoubles(comm, 0, TagParamState, state, p.index, step, timeoutS);
      }
      continue;
    }
    // Rank 0: every copy in rank order, the lowest rank's is the reference.
    GatheredParameter g;
    bool haveRef = false;
    int refRank = -1;
    for (int r : p.ranks) {
      HostTensor copy;
      if (r == 0) {
        const ParameterState &st = ctx.parameters.at(p.index);
        copy = st.value;
        if (r == owner && withState) {
          g.meanGrad = st.meanGrad;
          g.first = st.optimizer.first;
          g.second = st.optimizer.second;
          g.step = st.optimizer.step;
        }
      } else {
        std::string what = "gathering " + name + " from rank " +
                           std::to_string(r) + " after step " +
                           std::to_string(step);
        Message msg = recvAbout(comm, r, TagParamValue, p.index, step,
                                2 * timeoutS, what);
        copy.dtype = DType(msg.header.dtype);
        copy.shape = msg.header.getShape();
        copy.data = std::move(msg.payload);
        if (r == owner && withState) {
          Message sm = recvAbout(comm, r, TagParamState, p.index, step,
                                 2 * timeoutS, what);
          std::vector<double> state(sm.payload.size() / sizeof(double));
          std::memcpy(state.data(), sm.payload.data(),
                      state.size() * sizeof(double));
          if (state.size() < 3)
            throw RuntimeError(what + ": a truncated optimizer state");
          size_t firstN = size_t(state.back());
          size_t gradN = size_t(state[state.size() - 2]);
          g.step = int64_t(state[state.size() - 3]);
          state.resize(state.size() - 3);
          if (gradN + firstN > state.size())
            throw RuntimeError(what + ": a malformed optimizer state");
          g.meanGrad.assign(state.begin(), state.begin() + long(gradN));
          g.first.assign(state.begin() + long(gradN),
                         state.begin() + long(gradN + firstN));
          g.second.assign(state.begin() + long(gradN + firstN), state.end());
        }
      }
      if (!haveRef) {
        g.value = std::move(copy);
        haveRef = true;
        refRank = r;
        continue;
      }
      if (error.empty() && (copy.data != g.value.data ||
                            copy.shape != g.value.shape ||
                            copy.dtype != g.value.dtype)) {
        double maxDiff = 0;
        if (copy.dtype == g.value.dtype && copy.shape == g.value.shape) {
          std::vector<double> a = tensorToDoubles(g.value),
                              b = tensorToDoubles(copy);
          for (size_t i = 0; i < a.size(); ++i)
            maxDiff = std::max(maxDiff, std::fabs(a[i] - b[i]));
        }
        std::ostringstream os;
        os << name << ": rank " << r << "'s copy differs from rank "
           << refRank << "'s after step " << step
           << " (max abs difference " << maxDiff
           << "): the ranks of a parameter must compute the same update";
        error = os.str();
      }
    }
    if (out)
      (*out)[p.index] = std::move(g);
  }
  return error;
}

/// The end of one training step of a build with parameters, after the
/// entry point returned and the rank's sends completed: the gradient
/// reduction and optimizer update, then the step's loss and time to rank 0,
/// which prints the progress line. Returns false (with ctx failed) on an
/// error the ranks detected; throws on communication errors.
bool endTrainingStep(RankContext &ctx, Communicator &comm, const Manifest &m,
                     const RunOptions &o, int step, bool measured,
                     int measuredStep, int totalSteps, double t0,
                     RankResult &result) {
  std::string error = reduceAndUpdate(ctx, comm, m, step, o.timeoutS);
  if (!error.empty()) {
    ctx.fail(error);
    return false;
  }
  double seconds = ctx.now() - t0;
  int lossIndex = lossOutput(m);
  std::vector<double> mine = {0.0, 0.0, seconds};
  if (lossIndex >= 0)
    if (auto it = ctx.reducedOutputs.find(lossIndex);
        it != ctx.reducedOutputs.end() && !it->second.sum.empty()) {
      mine[0] = it->second.sum[0];
      mine[1] = double(it->second.microbatches.size());
    }
  if (ctx.rank != 0) {
    sendDoubles(comm, 0, TagStepLoss, mine, -1, step, o.timeoutS);
    return true;
  }
  double sum = mine[0], count = mine[1], slowest = seconds;
  for (int r = 1; r < comm.size(); ++r) {
    Message msg =
        recvAbout(comm, r, TagStepLoss, -1, step, 2 * o.timeoutS,
                  "collecting the loss of step " + std::to_string(step));
    if (msg.payload.size() != 3 * sizeof(double))
      throw RuntimeError("collecting the loss of step " +
                         std::to_string(step) + ": rank " + std::to_string(r) +
                         " sent a malformed message");
    double v[3];
    std::memcpy(v, msg.payload.data(), sizeof(v));
    sum += v[0];
    count += v[1];
    slowest = std::max(slowest, v[2]);
  }
  if (!measured)
    return true;
  float loss = std::nanf("");
  if (lossIndex >= 0 && count > 0)
    loss = float(sum / double(m.numMicrobatches));
  result.losses.push_back(loss);
  if (!o.quiet) {
    char line[256];
    if (lossIndex >= 0)
      std::snprintf(line, sizeof(line),
                    "pipeopt-run: step %d/%d: loss %.6g (%.4f s)\n",
                    measuredStep, totalSteps, double(loss), slowest);
    else
      std::snprintf(line, sizeof(line), "pipeopt-run: step %d/%d (%.4f s)\n",
                    measuredStep, totalSteps, slowest);
    std::cout << line << std::flush;
  }
  // The first non-finite loss is worth saying once: the weights are lost.
  if (lossIndex >= 0 && count > 0 && !std::isfinite(loss) &&
      !result.warnedNonFinite) {
    result.warnedNonFinite = true;
    std::cerr << "pipeopt-run: warning: the loss of step " << measuredStep
              << " is " << (std::isnan(loss) ? "nan" : "inf")
              << ": training diverged (a smaller --lr?) or the data holds "
                 "nan/inf; the weights written will not be finite\n";
  }
  return true;
}

void writeText(const std::string &path, const std::string &text,
               FollowLinks follow);
void writeTrainingFiles(const Manifest &m, const RunOptions &o,
                        const RankResult &result);

} // namespace

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//
//
// <dir>/step-<k>/ holds loss.npy, optimizer.json, weight_<i>.npy and the
// optimizer state (momentum_<i>.npy, adam_m_<i>.npy, adam_v_<i>.npy), and
// checkpoint.json, which records the format version and the size and
// 64-bit FNV-1a checksum of every other file. <dir>/latest names the newest
// complete one. See Runner.h (writeCheckpoint, readCheckpoint).

namespace {

/// A checkpoint that verifies but does not fit the manifest: --resume fails
/// at once instead of falling back to an older one (which would not fit
/// either).
class CheckpointMismatch : public RuntimeError {
public:
  using RuntimeError::RuntimeError;
};

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)v);
  return buf;
}

/// `bytes` for a message: printable ASCII as is, every other byte (NUL,
/// newline, 0xff) as \xHH, at most `max` bytes of it (then "...").
std::string printable(const std::string &bytes, size_t max = 64) {
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < max; ++i) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += char(c);
    } else {
      char buf[5];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  if (bytes.size() > max)
    out += "...";
  return out;
}

/// Parses "step-<k>" (k: decimal digits, 1 <= k < 2^31); -1 otherwise.
int64_t stepOfName(const std::string &name) {
  if (name.rfind("step-", 0) != 0 || name.size() == 5 || name.size() > 15)
    return -1;
  int64_t k = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9')
      return -1;
    k = k * 10 + (name[i] - '0');
  }
  if (name[5] == '0' || k < 1 || k > INT32_MAX)
    return -1;
  return k;
}

/// Reads checkpoint files, checking them against checkpoint.json; every
/// error names the file and the field.
class CheckpointReader {
public:
  CheckpointReader(const Manifest &m, std::string ck)
      : m(m), ck(std::move(ck)) {}

  Checkpoint read() {
    std::string cj = ck + "/checkpoint.json";
    std::vector<uint8_t> bytes = readFileBytes(cj, "checkpoint");
    Json j = parseJson(cj, bytes);
    try {
      return readFrom(cj, j);
    } catch (const Json::exception &e) {
      // Every field is type-checked below; this is the last line of
      // defence, still naming the file.
      throw RuntimeError(cj + ": " + e.what());
    }
  }

private:
  const Manifest &m;
  std::string ck;
  Json files;
  std::set<std::string> used; ///< the names verified() read

  static Json parseJson(const std::string &file,
                        const std::vector<uint8_t> &bytes) {
    if (bytes.empty())
      throw RuntimeError(file + ": empty file (an interrupted or failed "
                                "write)");
    try {
      return Json::parse(std::string(bytes.begin(), bytes.end()));
    } catch (const Json::exception &e) {
      throw RuntimeError(file + ": invalid JSON: " + e.what());
    }
  }

  /// The integer field `key` of object `o` in [lo, hi].
  static int64_t intField(const Json &o, const std::string &key, int64_t lo,
                          int64_t hi, const std::string &file,
                          const std::string &field) {
    if (!o.contains(key))
      throw RuntimeError(file + ": field \"" + field + "\" is missing");
    const Json &v = o.at(key);
    bool big =
        v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX);
    if (!v.is_number_integer() || big)
      throw RuntimeError(file + ": field \"" + field +
                         "\" must be an integer in [" + std::to_string(lo) +
                         ", " + std::to_string(hi) + "], got " + v.dump());
    int64_t x = v.get<int64_t>();
    if (x < lo || x > hi)
      throw RuntimeError(file + ": field \"" + field + "\" is " +
                         std::to_string(x) + ", outside [" +
                         std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
  }

  /// The number field `key` of object `o`: finite, above `lo` (or equal,
  /// unless `loOpen`), below `hi` (or equal, unless `hiOpen`).
  static double numberField(const Json &o, const std::string &key, double lo,
                            bool loOpen, double hi, const std::string &file,
                            const std::string &range, bool hiOpen = true) {
    if (!o.contains(key))
      throw RuntimeError(file + ": field \"" + key + "\" is missing");
    const Json &v = o.at(key);
    double x = v.is_number() ? v.get<double>() : 0;
    if (!v.is_number() || !std::isfinite(x) || (loOpen ? x <= lo : x < lo) ||
        (hiOpen ? x >= hi : x > hi))
      throw RuntimeError(file + ": field \"" + key + "\" must be a number in " +
                         range + ", got " + v.dump());
    return x;
  }

  static std::string stringField(const Json &o, const std::string &key,
                                 const std::string &file,
                                 const std::string &field) {
    if (!o.contains(key))
      throw RuntimeError(file + ": field \"" + field + "\" is missing");
    if (!o.at(key).is_string())
      throw RuntimeError(file + ": field \"" + field +
                         "\" must be a string, got " + o.at(key).dump());
    return o.at(key).get<std::string>();
  }

  /// The bytes of checkpoint file `name`, checked against its size and
  /// checksum in checkpoint.json.
  std::vector<uint8_t> verified(const std::string &name) {
    std::string path = ck + "/" + name;
    std::string cj = ck + "/checkpoint.json";
    if (!files.contains(name))
      throw RuntimeError(cj + ": field \"files\" lists no \"" + name +
                         "\" (the checkpoint is incomplete)");
    used.insert(name);
    const Json &f = files.at(name);
    std::string field = "files." + name;
    if (!f.is_object())
      throw RuntimeError(cj + ": field \"" + field + "\" must be an object");
    int64_t size = intField(f, "bytes", 0, INT64_MAX, cj, field + ".bytes");
    std::string sum = stringField(f, "fnv1a64", cj, field + ".fnv1a64");
    std::vector<uint8_t> bytes = readFileBytes(path, "checkpoint");
    if (int64_t(bytes.size()) != size)
      throw RuntimeError(path + ": " + std::to_string(bytes.size()) +
                         " bytes, but checkpoint.json records " +
                         std::to_string(size) +
                         " (the file is truncated "
                         "or was replaced)");
    std::string got = hex64(fnv1a64(bytes.data(), bytes.size()));
    if (got != sum)
      throw RuntimeError(path + ": FNV-1a checksum " + got +
                         " differs from the " + sum +
                         " that checkpoint.json "
                         "records (the file is corrupt)");
    return bytes;
  }

  HostTensor npy(const std::string &name) {
    std::vector<uint8_t> bytes = verified(name);
    return parseNpy(bytes, ck + "/" + name);
  }

  /// Weights and optimizer state are finite: a NaN or infinity would train
  /// on silently (the checksum only proves the file is what was written).
  static void checkFinite(const std::vector<double> &v,
                          const std::string &path) {
    for (size_t e = 0; e < v.size(); ++e)
      if (!std::isfinite(v[e]))
        throw RuntimeError(path + ": element " + std::to_string(e) + " is " +
                           (std::isnan(v[e]) ? "nan"
                            : v[e] > 0       ? "inf"
                                             : "-inf") +
                           " (weights and optimizer state must be finite)");
  }

  std::vector<double> f64(const std::string &name, const Shape &shape) {
    HostTensor t = npy(name);
    if (t.dtype != DType::F64 || t.shape != shape)
      throw RuntimeError(ck + "/" + name + " is " +
                         typeString(t.dtype, t.shape) + ", expected " +
                         typeString(DType::F64, shape));
    std::vector<double> v(t.data.size() / 8);
    if (!v.empty())
      std::memcpy(v.data(), t.data.data(), t.data.size());
    checkFinite(v, ck + "/" + name);
    return v;
  }

  Checkpoint readFrom(const std::string &cj, const Json &j) {
    if (!j.is_object())
      throw RuntimeError(cj + ": not a JSON object");
    if (!j.contains("format") || !j["format"].is_string() ||
        j["format"].get<std::string>() != "pipeopt-checkpoint")
      throw RuntimeError(cj + ": field \"format\" must be "
                              "\"pipeopt-checkpoint\" (not a pipeopt "
                              "checkpoint)");
    if (!j.contains("format_version"))
      throw RuntimeError(cj + ": field \"format_version\" is missing (a "
                              "checkpoint of an older pipeopt-run, without "
                              "checksums, or not a checkpoint)");
    int64_t version =
        intField(j, "format_version", 0, INT64_MAX, cj, "format_version");
    if (version != kCheckpointFormatVersion)
      throw RuntimeError(cj + ": field \"format_version\" is " +
                         std::to_string(version) +
                         ", but this pipeopt-run "
                         "reads version " +
                         std::to_string(kCheckpointFormatVersion));
    Checkpoint c;
    c.path = ck;
    c.step = int(intField(j, "step", 1, INT32_MAX - 1, cj, "step"));
    std::string base =
        ck.substr(ck.rfind('/') == std::string::npos ? 0 : ck.rfind('/') + 1);
    if (base.rfind("step-", 0) == 0 && stepOfName(base) != c.step)
      throw RuntimeError(cj + ": field \"step\" is " + std::to_string(c.step) +
                         ", but the directory is " + base);
    if (!j.contains("files") || !j["files"].is_object())
      throw RuntimeError(cj + ": field \"files\" (the size and checksum of "
                              "every file) is missing or not an object");
    files = j["files"];
    std::string checksum = stringField(j, "checksum", cj, "checksum");
    if (checksum != "fnv1a64")
      throw RuntimeError(cj + ": field \"checksum\" is \"" +
                         printable(checksum) +
                         "\", but this pipeopt-run verifies \"fnv1a64\"");
    for (auto it = files.begin(); it != files.end(); ++it) {
      const std::string &name = it.key();
      if (name.empty() || name == "." || name == ".." ||
          name.find('/') != std::string::npos)
        throw RuntimeError(cj + ": field \"files\" lists \"" + printable(name) +
                           "\", not a file name");
    }
    int64_t mbs =
        intField(j, "num_microbatches", 1, INT32_MAX, cj, "num_microbatches");
    std::string opt = stringField(j, "optimizer", cj, "optimizer");
    if (!j.contains("parameters") || !j["parameters"].is_array())
      throw RuntimeError(cj + ": field \"parameters\" must be an array of "
                              "parameter indices");
    std::set<int64_t> listed;
    for (const Json &p : j["parameters"]) {
      if (!p.is_number_integer() || p.get<int64_t>() < 0 ||
          p.get<int64_t>() > INT32_MAX)
        throw RuntimeError(cj + ": field \"parameters\" holds " + p.dump() +
                           ", not a parameter index");
      listed.insert(p.get<int64_t>());
    }
    // The contents first (corruption), then whether it fits the manifest.
    HostTensor losses = npy("loss.npy");
    if (losses.dtype != DType::F32 || losses.shape != Shape{c.step})
      throw RuntimeError(ck + "/loss.npy is " +
                         typeString(losses.dtype, losses.shape) +
                         ", expected f32[" + std::to_string(c.step) + "]");
    c.losses.resize(size_t(c.step));
    std::memcpy(c.losses.data(), losses.data.data(), losses.data.size());
    std::string oj = ck + "/optimizer.json";
    Json o = parseJson(oj, verified("optimizer.json"));
    if (!o.is_object())
      throw RuntimeError(oj + ": not a JSON object");
    if (stringField(o, "optimizer", oj, "optimizer") != opt)
      throw RuntimeError(oj + ": field \"optimizer\" is '" +
                         o["optimizer"].get<std::string>() +
                         "', but checkpoint.json says '" + opt + "'");
    intField(o, "steps", c.step, c.step, oj, "steps");
    // The hyperparameters, in the ranges the manifest allows (the run uses
    // the manifest's; a checkpoint holding others is corrupt).
    const double inf = std::numeric_limits<double>::infinity();
    numberField(o, "lr", 0, false, inf, oj, "[0, inf)");
    numberField(o, "momentum", 0, false, 1, oj, "[0, 1]", false);
    numberField(o, "beta1", 0, false, 1, oj, "[0, 1)");
    numberField(o, "beta2", 0, false, 1, oj, "[0, 1)");
    numberField(o, "eps", 0, true, inf, oj, "(0, inf)");
    numberField(o, "weight_decay", 0, false, inf, oj, "[0, inf)");
    if (!o.contains("parameters") || !o["parameters"].is_object())
      throw RuntimeError(oj + ": field \"parameters\" is missing or not an "
                              "object");
    const Json &ps = o["parameters"];

    if (mbs != m.numMicrobatches)
      throw CheckpointMismatch(ck + ": the checkpoint has " +
                               std::to_string(mbs) +
                               " microbatches, the manifest " + m.source + " " +
                               std::to_string(m.numMicrobatches));
    if (opt != optimizerName(m.training.optimizer))
      throw CheckpointMismatch(ck +
                               ": the checkpoint was written with "
                               "optimizer '" +
                               opt + "', the manifest " + m.source +
                               " trains with '" +
                               optimizerName(m.training.optimizer) + "'");
    std::set<int64_t> want;
    for (const ManifestParameter &p : m.parameters)
      want.insert(p.index);
    if (listed != want)
      throw CheckpointMismatch(
          cj +
          ": field \"parameters\" lists other parameters than the "
          "manifest " +
          m.source + " (\"parameters\")");
    // Optimizer updates per step: one (synchronous), or one per
    // update_every microbatches (asynchronous schedules).
    int64_t perStep = m.training.updateEvery > 0
                          ? std::max<int64_t>(1, m.numMicrobatches)
                          : 1;
    OptimizerKind k = m.training.optimizer;
    for (const ManifestParameter &p : m.parameters) {
      std::string i = std::to_string(p.index);
      const ManifestInput *in = m.findInput(p.index);
      GatheredParameter g;
      g.value = npy("weight_" + i + ".npy");
      if (g.value.dtype != in->dtype || g.value.shape != in->shape)
        throw CheckpointMismatch(ck + "/weight_" + i + ".npy is " +
                                 typeString(g.value.dtype, g.value.shape) +
                                 ", but the manifest " + m.source +
                                 " declares " + parameterName(m, p.index) +
                                 " " + typeString(in->dtype, in->shape));
      checkFinite(tensorToDoubles(g.value), ck + "/weight_" + i + ".npy");
      if (k == OptimizerKind::Momentum)
        g.first = f64("momentum_" + i + ".npy", in->shape);
      if (k == OptimizerKind::AdamW) {
        g.first = f64("adam_m_" + i + ".npy", in->shape);
        g.second = f64("adam_v_" + i + ".npy", in->shape);
        for (size_t e = 0; e < g.second.size(); ++e)
          if (!(g.second[e] >= 0))
            throw RuntimeError(ck + "/adam_v_" + i + ".npy: element " +
                               std::to_string(e) + " is " +
                               std::to_string(g.second[e]) +
                               " (a second moment is >= 0)");
      }
      if (!ps.contains(i) || !ps[i].is_object())
        throw RuntimeError(oj + ": field \"parameters." + i +
                           "\" is missing or not an object");
      // AdamW's bias correction divides by 1 - beta^step: step >= 1.
      int64_t lo = k == OptimizerKind::AdamW ? 1 : 0;
      int64_t hi = m.training.updateEvery > 0 ? c.step * perStep : c.step;
      if (m.training.updateEvery == 0)
        lo = c.step;
      g.step = intField(ps[i], "step", lo, hi, oj, "parameters." + i + ".step");
      c.parameters[p.index] = std::move(g);
    }
    // Every file listed is one this checkpoint has (each needed one was
    // required by verified()).
    for (auto it = files.begin(); it != files.end(); ++it)
      if (!used.count(it.key()))
        throw RuntimeError(cj + ": field \"files\" lists \"" +
                           printable(it.key()) +
                           "\", which is not a file of this checkpoint");
    return c;
  }
};

} // namespace

Checkpoint readCheckpointStep(const Manifest &m, const std::string &stepDir) {
  return CheckpointReader(m, stepDir).read();
}

Checkpoint readCheckpoint(const Manifest &m, const std::string &dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> notes;
  std::set<std::string> tried;
  std::string latest = dir + "/latest";
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw RuntimeError(
        dir + ": " + (ec ? ec.message() : std::string("not a directory")) +
        " (no checkpoint to resume from; " + latest + " cannot be read)");
  std::string name;
  try {
    std::vector<uint8_t> bytes = readFileBytes(latest, "checkpoint");
    name.assign(bytes.begin(), bytes.end());
    while (!name.empty() &&
           std::isspace(static_cast<unsigned char>(name.back())))
      name.pop_back();
    if (stepOfName(name) < 0)
      throw RuntimeError(latest + ": names '" + printable(name) +
                         "', not a checkpoint step-<k>");
    tried.insert(name);
    Checkpoint c = readCheckpointStep(m, dir + "/" + name);
    return c;
  } catch (const CheckpointMismatch &) {
    throw;
  } catch (const RuntimeError &e) {
    notes.push_back(std::string("skipped: ") + e.what());
  }
  // The newest step-<k> that verifies.
  std::vector<std::pair<int64_t, std::string>> steps;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string n = it->path().filename().string();
    if (stepOfName(n) > 0 && !tried.count(n))
      steps.push_back({stepOfName(n), n});
  }
  if (ec)
    throw RuntimeError(dir + ": cannot list the checkpoints: " + ec.message());
  std::sort(steps.rbegin(), steps.rend());
  for (const auto &s : steps) {
    try {
      Checkpoint c = readCheckpointStep(m, dir + "/" + s.second);
      c.notes = notes;
      c.notes.push_back("resuming from " + c.path +
                        ", the newest complete checkpoint that verifies");
      return c;
    } catch (const CheckpointMismatch &) {
      throw;
    } catch (const RuntimeError &e) {
      notes.push_back(std::string("skipped: ") + e.what());
    }
  }
  std::string all;
  for (const std::string &n : notes)
    all += "; " + n;
  throw RuntimeError("no complete checkpoint in " + dir + " verifies" + all);
}

namespace {
/// std::filesystem::remove_all that throws naming `path` and the reason.
void removeAll(const std::string &path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec)
    throw RuntimeError("cannot remove " + path + ": " + ec.message());
}

void renamePath(const std::string &from, const std::string &to) {
  std::error_code ec;
  std::filesystem::rename(from, to, ec);
  if (ec)
    throw RuntimeError("cannot rename " + from + " to " + to + ": " +
                       ec.message());
}
} // namespace

void writeCheckpoint(const Manifest &m, const std::string &dir, int step,
                     const std::vector<float> &losses,
                     const std::map<int, GatheredParameter> &params) {
  namespace fs = std::filesystem;
  ensureDir(dir);
  std::string name = "step-" + std::to_string(step);
  std::string tmp = dir + "/tmp-" + std::to_string(step);
  std::string final = dir + "/" + name;
  removeAll(tmp);
  // Temporaries of `latest` that a killed run left behind.
  {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec))
      if (it->path().filename().string().rfind(".latest.tmp.", 0) == 0)
        fs::remove(it->path(), ec);
  }
  try {
    std::error_code ec;
    fs::create_directory(tmp, ec);
    if (ec)
      throw RuntimeError("cannot create directory " + tmp + ": " +
                         ec.message());
    RankResult r;
    r.losses = losses;
    r.parameters = params;
    RunOptions files;
    files.outputDir = tmp;
    writeTrainingFiles(m, files, r);
    // checkpoint.json, last: the size and checksum of every other file,
    // read back from the disk.
    Json sums = Json::object();
    std::vector<std::string> names;
    for (fs::directory_iterator it(tmp, ec), end; !ec && it != end;
         it.increment(ec))
      names.push_back(it->path().filename().string());
    if (ec)
      throw RuntimeError("cannot list " + tmp + ": " + ec.message());
    std::sort(names.begin(), names.end());
    for (const std::string &f : names) {
      std::vector<uint8_t> bytes = readFileBytes(tmp + "/" + f, "checkpoint");
      sums[f] = {{"bytes", bytes.size()},
                 {"fnv1a64", hex64(fnv1a64(bytes.data(), bytes.size()))}};
    }
    Json j = {{"format", "pipeopt-checkpoint"},
              {"format_version", kCheckpointFormatVersion},
              {"step", step},
              {"num_microbatches", m.numMicrobatches},
              {"optimizer", optimizerName(m.training.optimizer)},
              {"parameters", Json::array()},
              {"checksum", "fnv1a64"},
              {"files", sums}};
    for (const auto &kv : params)
      j["parameters"].push_back(kv.first);
    writeFileAtomic(tmp + "/checkpoint.json", j.dump(2) + "\n",
                    FollowLinks::Never, false);
    syncDirectory(tmp);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  // A checkpoint of this step from an earlier run is moved aside first
  // (rename cannot replace a non-empty directory).
  std::error_code ec;
  if (fs::exists(final, ec)) {
    std::string old = dir + "/old-" + std::to_string(step);
    removeAll(old);
    renamePath(final, old);
    removeAll(old);
  }
  renamePath(tmp, final);
  syncDirectory(dir);
  writeFileAtomic(dir + "/latest", name + "\n", FollowLinks::Never);
}

namespace {

/// --pin-ranks: what the in-process rank threads share. Each writes its
/// slot of `cpuS` before the barrier of iteration pinAt and
/// reads all of them after it (the barrier orders the accesses), so every
/// thread computes the same assignment.
struct RankPinning {
  std::vector<int> ranks;   ///< the local ranks, in thread order
  std::vector<int> cpus;    ///< the usable CPU ids (affinity mask)
  std::vector<double> cpuS; ///< thread CPU seconds of the last warm-up
  std::vector<int> cpuOf;   ///< the CPU id each rank got (-1: not pinned)
  std::vector<std::string> errors; ///< per rank: why it was not pinned
  /// The iteration from which the ranks are pinned: the first measured
  /// one after a warm-up, else the second (training has no warm-up).
  int pinAt = 1;
};

/// " (1.23 ms)".
std::string msInParens(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), " (%.3g ms)", s * 1e3);
  return buf;
}

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

/// Pins the calling thread, local rank `slot` of `p`, to its core of the
/// LPT assignment of p.cpuS.
void pinThisRank(RankPinning &p, size_t slot) {
  std::vector<int> core = assignRanksToCores(p.cpuS, int(p.cpus.size()));
  int cpu = p.cpus[size_t(core[slot])];
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (rc == 0)
    p.cpuOf[slot] = cpu;
  else
    p.errors[slot] = std::strerror(rc);
}

/// What the main thread can see of a rank running in another thread (the
/// loopback watchdog of pipeoptRunMain): where it is, under `mu`, and its
/// context while it runs.
struct RankProgress {
  std::mutex mu;
  std::string phase;
  const RankContext *ctx = nullptr; ///< while runRank runs
};

/// runRank's "phase" (what the rank is doing, for its errors), published to
/// a RankProgress when there is one.
struct PhaseText {
  RankProgress *progress = nullptr;
  std::string text;
  PhaseText &operator=(std::string t) {
    if (progress) {
      std::lock_guard<std::mutex> lock(progress->mu);
      progress->phase = t;
    }
    text = std::move(t);
    return *this;
  }
};

/// "rank 1 (stage 1)", "rank 0 (stages 0, 3)", or "rank 2" when the
/// manifest places no stage on it.
std::string rankLabel(const Manifest &m, int rank) {
  std::set<int> stages;
  for (const auto &pipeline : m.stageRankPipelines)
    for (size_t s = 0; s < pipeline.size(); ++s)
      if (pipeline[s] == rank)
        stages.insert(int(s));
  if (stages.empty() && size_t(rank) < m.actions.size())
    for (const ManifestAction &a : m.actions[size_t(rank)])
      stages.insert(a.stage);
  std::string r = "rank " + std::to_string(rank);
  if (stages.empty())
    return r;
  r += stages.size() == 1 ? " (stage " : " (stages ";
  bool first = true;
  for (int s : stages) {
    r += (first ? "" : ", ") + std::to_string(s);
    first = false;
  }
  return r + ")";
}

/// Runs one rank to completion (in the calling thread). With `pinning`
/// (an in-process rank of --pin-ranks), the rank is pinned to one core
/// from the first measured iteration on.
void runRank(int rank, Communicator &comm, const Manifest &m,
             const InputStore &inputs, EntryFn entry, const RunOptions &o,
             const Checkpoint *resume, const Device *device, RankResult &result,
             RankPinning *pinning = nullptr, RankProgress *progress = nullptr) {
  RankContext ctx(rank, &comm, &m, &inputs, o.timeoutS);
  ctx.device = device;
  ctx.recordCalls = !o.tracePath.empty() || !o.profilePath.empty();
  ScopedContext scope(&ctx);
  std::vector<double> iterS;
  PhaseText phase{progress, ""};
  phase = "at the start barrier";
  if (progress) {
    std::lock_guard<std::mutex> lock(progress->mu);
    progress->ctx = &ctx;
  }
  struct Unpublish {
    RankProgress *progress;
    ~Unpublish() {
      if (progress) {
        std::lock_guard<std::mutex> lock(progress->mu);
        progress->ctx = nullptr;
      }
    }
  } unpublish{progress};
  bool bound = false;
  try {
    if (device) {
      phase = "binding the rank to CUDA device " + std::to_string(device->id());
      device->bindThread(rank);
      bound = true;
    }
    phase = "setting up the parameters";
    ctx.initParameters();
    int first = 0; // steps done before this run (--resume)
    if (resume) {
      first = resume->step;
      for (auto &[index, st] : ctx.parameters) {
        const GatheredParameter &g = resume->parameters.at(index);
        st.value = g.value;
        st.optimizer.first = g.first;
        st.optimizer.second = g.second;
        st.optimizer.step = g.step;
      }
      if (rank == 0)
        result.losses = resume->losses;
    }
    initDeviceParameters(ctx); // cuda builds: weights and state on the device
    phase = "at the start barrier";
    barrier(comm, o.timeoutS);
    ctx.origin = RankContext::Clock::now();
    // --pin-ranks: this rank's slot in `pinning`.
    const size_t slot =
        pinning ? size_t(std::find(pinning->ranks.begin(),
                                   pinning->ranks.end(), rank) -
                         pinning->ranks.begin())
                : 0;
    for (int it = 0; it < o.warmup + o.iterations; ++it) {
      bool measured = it >= o.warmup;
      phase = "at the barrier before iteration " + std::to_string(it);
      barrier(comm, o.timeoutS);
      if (pinning && it == pinning->pinAt)
        pinThisRank(*pinning, slot);
      double cpu0 = pinning ? threadCpuSeconds() : 0;
      if (!measured)
        ctx.iteration = -1;
      else
        ctx.iteration = it - o.warmup;
      // PIPEOPT_FAULT_KILL: a real crash, mid-run (no cleanup, no message).
      if (measured && rank == o.faultKillRank &&
          first + it - o.warmup + 1 == o.faultKillStep)
        ::raise(SIGKILL);
      ctx.beginCall();
      // Warm-up calls read step 0's slice of a dataset.
      ctx.dataStep = measured ? first + it - o.warmup : 0;
      phase = "in iteration " + std::to_string(it) + " (" +
              (measured ? "measured" : "warm-up") + "), calling " +
              m.entryPoints[rank];
      double t0 = ctx.now();
      int32_t rc = entry();
      // cuda builds: the iteration's time includes the device work it
      // enqueued; an error of that work fails the rank here.
      if (device && !ctx.isPoisoned() && !pollDeviceError(ctx) &&
          device->api().synchronize() != 0)
        ctx.fail("CUDA error on device " + std::to_string(device->id()) +
                 " completing the device work of iteration " +
                 std::to_string(it) + " of " + m.entryPoints[rank] + ": " +
                 device->pendingError());
      double t1 = ctx.now();
      if (rc != 0 || ctx.isPoisoned()) {
        if (!ctx.isPoisoned())
          ctx.fail(m.entryPoints[rank] + " returned " + std::to_string(rc) +
                   " without a runtime error (iteration " +
                   std::to_string(it) + ")");
        break;
      }
      if (ctx.openKind >= 0) {
        ctx.fail(std::string("action ") + actionKindName(ctx.openKind) +
                 " for stage " + std::to_string(ctx.openStage) +
                 " microbatch " + std::to_string(ctx.openMicrobatch) +
                 " was begun but never ended");
        break;
      }
      if (size_t(rank) < m.actions.size() &&
          ctx.actionsBegun != m.actions[size_t(rank)].size()) {
        ctx.fail(m.entryPoints[rank] + " ran " +
                 std::to_string(ctx.actionsBegun) + " action(s) in iteration " +
                 std::to_string(it) + ", but the manifest " + o.manifestPath +
                 " lists " + std::to_string(m.actions[size_t(rank)].size()) +
                 " for rank " + std::to_string(rank) +
                 " (is it the manifest of this model?)");
        break;
      }
      phase = "completing the sends of iteration " + std::to_string(it);
      comm.flush(o.timeoutS);
      if (measured)
        iterS.push_back(t1 - t0);
      if (pinning && it == pinning->pinAt - 1)
        pinning->cpuS[slot] = threadCpuSeconds() - cpu0;
      if (m.hasParameters) {
        int step = first + it + 1;
        int measuredStep = first + it - o.warmup + 1;
        phase = "ending training step " + std::to_string(step);
        if (!endTrainingStep(ctx, comm, m, o, step, measured, measuredStep,
                             first + o.iterations, t0, result))
          break;
        if (measured && o.checkpointEvery > 0 &&
            measuredStep % o.checkpointEvery == 0) {
          phase = "writing the checkpoint of step " +
                  std::to_string(measuredStep);
          std::map<int, GatheredParameter> params;
          std::string error = gatherParameters(ctx, comm, m, step, true,
                                               o.timeoutS, &params);
          if (!error.empty()) {
            ctx.fail(error);
            break;
          }
          if (rank == 0)
            writeCheckpoint(m, o.checkpointDir, measuredStep, result.losses,
                            params);
        }
        comm.flush(o.timeoutS);
      }
    }
    if (!ctx.isPoisoned() && m.hasParameters) {
      phase = "gathering the parameters";
      std::string error =
          gatherParameters(ctx, comm, m, first + o.warmup + o.iterations,
                           true, o.timeoutS, &result.parameters);
      if (!error.empty())
        ctx.fail(error);
      comm.flush(o.timeoutS);
    }
    if (!ctx.isPoisoned()) {
      // Drop warm-up events.
      ctx.events.erase(std::remove_if(ctx.events.begin(), ctx.events.end(),
                                      [](const TraceEvent &e) {
                                        return e.iteration < 0;
                                      }),
                       ctx.events.end());
      bool withOutputs = !o.outputDir.empty();
      phase = rank != 0 ? "sending results to rank 0"
                        : "collecting results from the other ranks";
      if (rank != 0) {
        sendReport(comm, ctx, iterS, withOutputs, o.timeoutS);
        comm.flush(o.timeoutS);
        // Until rank 0 confirms that it has every result, this rank watches
        // it: a rank 0 stuck in its last computation, which nobody else
        // waits for, would otherwise hang the run (MPI_Finalize, the
        // loopback join) without a word. Three times --timeout-s: rank 0
        // itself gives up on a missing result after twice that, naming the
        // rank that did not send it. A rank 0 that ended without confirming
        // (loopback) failed, and its error says why.
        phase = "waiting for rank 0 to confirm it has every rank's results";
        try {
          recvControl(comm, 0, TagDone, 3 * o.timeoutS);
        } catch (const PeerExitedError &) {
        }
      } else {
        result.reports.resize(comm.size());
        result.reports[0].iterationS = iterS;
        result.reports[0].events = ctx.events;
        RankReport own = evidenceOf(ctx);
        result.reports[0].microbatchedInputReads =
            std::move(own.microbatchedInputReads);
        result.reports[0].inputsReadPerMicrobatch =
            std::move(own.inputsReadPerMicrobatch);
        result.reports[0].outputsWritten = std::move(own.outputsWritten);
        result.reports[0].stashUsed = ctx.stashUsed;
        result.reports[0].stashPeak = ctx.stashPeakBytes;
        if (withOutputs) {
          result.reports[0].outputs = ctx.outputs;
          for (const auto &[index, acc] : ctx.reducedOutputs)
            result.reports[0].reducedSums[index] = acc.sum;
        }
        // A peer that is still blocked gives up on its own after at most
        // --timeout-s and its error names the message it waited for, which
        // is the root cause. Rank 0 therefore waits twice as long for the
        // results, so that its own, less specific timeout never wins that
        // race (with MPI the peer's MPI_Abort ends rank 0 first).
        for (int r = 1; r < comm.size(); ++r)
          result.reports[r] = recvReport(comm, r, 2 * o.timeoutS);
        phase = "confirming the end of the run to the other ranks";
        for (int r = 1; r < comm.size(); ++r)
          sendControl(comm, r, TagDone, nullptr, 0, o.timeoutS);
        comm.flush(o.timeoutS);
      }
    }
  } catch (const std::exception &e) {
    ctx.fail("launcher, " + phase.text + ": " + e.what());
  }
  if (bound) {
    // The device copies go before the thread's binding.
    ctx.parameters.clear();
    try {
      device->unbindThread();
    } catch (const std::exception &e) {
      ctx.fail(std::string("launcher, at the end: ") + e.what());
    }
  }
  if (ctx.isPoisoned()) {
    result.ok = false;
    result.error = ctx.errorMessage();
  }
  comm.close();
}

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Every text file (optimizer.json, trace, profile): checked and atomic
/// (writeFileAtomic); `follow` is FollowLinks::Never for files inside
/// --output-dir and UserNamedPath for --trace/--profile FILE.
void writeText(const std::string &path, const std::string &text,
               FollowLinks follow) {
  writeFileAtomic(path, text, follow);
}

/// Writes outputs, trace and profile and prints the summary (rank 0).
/// Writes a training build's parameters, optimizer state and per-step
/// losses into --output-dir (docs/Runtime.md, "Training builds
/// with parameters").
void writeTrainingFiles(const Manifest &m, const RunOptions &o,
                        const RankResult &result) {
  const std::string &dir = o.outputDir;
  HostTensor losses;
  losses.dtype = DType::F32;
  losses.shape = {int64_t(result.losses.size())};
  losses.data.resize(result.losses.size() * 4);
  if (!result.losses.empty())
    std::memcpy(losses.data.data(), result.losses.data(), losses.data.size());
  writeNpy(dir + "/loss.npy", losses, FollowLinks::Never);
  auto f64 = [](const std::vector<double> &v, const Shape &shape) {
    HostTensor t;
    t.dtype = DType::F64;
    t.shape = shape;
    t.data.resize(v.size() * 8);
    if (!v.empty())
      std::memcpy(t.data.data(), v.data(), t.data.size());
    return t;
  };
  Json state = Json::object();
  for (const auto &[index, g] : result.parameters) {
    std::string i = std::to_string(index);
    writeNpy(dir + "/weight_" + i + ".npy", g.value, FollowLinks::Never);
    if (!g.first.empty())
      writeNpy(dir + "/" +
                   (m.training.optimizer == OptimizerKind::AdamW
                        ? "adam_m_"
                        : "momentum_") +
                   i + ".npy",
               f64(g.first, g.value.shape), FollowLinks::Never);
    if (!g.second.empty())
      writeNpy(dir + "/adam_v_" + i + ".npy", f64(g.second, g.value.shape),
               FollowLinks::Never);
    if (o.saveGrads && !g.meanGrad.empty()) {
      HostTensor grad = g.value;
      doublesToTensor(g.meanGrad, grad);
      writeNpy(dir + "/grad_" + i + ".npy", grad, FollowLinks::Never);
    }
    state[i] = {{"step", g.step}};
  }
  const TrainingConfig &t = m.training;
  Json j = {{"optimizer", optimizerName(t.optimizer)},
            {"lr", t.lr},
            {"momentum", t.momentum},
            {"beta1", t.beta1},
            {"beta2", t.beta2},
            {"eps", t.eps},
            {"weight_decay", t.weightDecay},
            {"steps", result.losses.size()},
            {"parameters", state}};
  writeText(dir + "/optimizer.json", j.dump(2) + "\n", FollowLinks::Never);
}

/// The iteration time of each iteration: the slowest rank's (s).
std::vector<double> iterationTimes(const RunOptions &o,
                                   const std::vector<RankReport> &reports) {
  std::vector<double> iterMax(size_t(o.iterations), 0.0);
  for (const auto &r : reports)
    for (size_t i = 0; i < r.iterationS.size() && i < iterMax.size(); ++i)
      iterMax[i] = std::max(iterMax[i], r.iterationS[i]);
  return iterMax;
}

/// Throws when an input the manifest calls microbatched was read as a
/// shared one (see below).
void checkMicrobatchedInputReads(const Manifest &m, const RunOptions &o,
                                 const std::vector<RankReport> &reports) {
  // A program compiled with an input shared reads it once per call (the
  // first use's microbatch); compiled microbatched, it reads it for every
  // microbatch (each runs the whole model), so the ranks together read all
  // M. An input that every reading rank read for a single microbatch per
  // call, and that the ranks read for fewer than M microbatches in all, is
  // shared in this model: the manifest's "microbatched": true is not this
  // model's. (Reads for several microbatches that still miss some are a
  // program that mixes microbatches up, which only a comparison of the
  // outputs with a reference can show; an input no rank read is left
  // alone.)
  for (const ManifestInput &in : m.inputs) {
    if (!in.microbatched)
      continue;
    std::set<int> mbs;
    std::set<int> readers;
    bool perMicrobatch = false;
    for (size_t r = 0; r < reports.size(); ++r) {
      for (const auto &read : reports[r].microbatchedInputReads)
        if (read.first == in.index) {
          mbs.insert(read.second);
          readers.insert(int(r));
        }
      perMicrobatch =
          perMicrobatch || reports[r].inputsReadPerMicrobatch.count(in.index);
    }
    if (mbs.empty() || perMicrobatch || int(mbs.size()) == m.numMicrobatches)
      continue;
    auto list = [](const std::set<int> &v) {
      std::string s;
      for (int x : v)
        s += (s.empty() ? "" : ", ") + std::to_string(x);
      return s;
    };
    throw RuntimeError(
        "input " + std::to_string(in.index) +
        (in.name.empty() ? "" : " ('" + in.name + "')") +
        " is microbatched in the manifest " + o.manifestPath + ", but the "
        "program read it only for microbatch(es) " + list(mbs) + " of " +
        std::to_string(m.numMicrobatches) + " (on rank(s) " + list(readers) +
        "): it reads the input once and shares it, so the input is not "
        "microbatched in this model");
  }
}

/// Throws when an output of the manifest was not written for every
/// microbatch, or a mean was written twice for one.
void checkOutputsWritten(const Manifest &m, const RunOptions &o,
                         const std::vector<RankReport> &reports) {
  // Every output of the manifest, for every microbatch, whether or not
  // --output-dir asked for the data: a manifest of more microbatches or
  // outputs than the program has fails here instead of passing silently.
  std::set<std::pair<int, int>> written;
  for (const auto &r : reports)
    written.insert(r.outputsWritten.begin(), r.outputsWritten.end());
  // A mean over microbatches needs each microbatch's value exactly once in
  // a call (each rank counts its own writes in its last call; here the
  // ranks' writes are put together).
  for (const ManifestOutput &mo : m.outputs) {
    if (mo.reduce != OutputReduce::Mean)
      continue;
    std::string what = "output " + std::to_string(mo.index) +
                       (mo.name.empty() ? "" : " ('" + mo.name + "')");
    std::map<int, int> writer; // microbatch -> rank
    for (int r = 0; r < int(reports.size()); ++r)
      for (const auto &w : reports[size_t(r)].outputsWritten) {
        if (w.first != mo.index)
          continue;
        auto [it, first] = writer.insert({w.second, r});
        if (!first)
          throw RuntimeError(
              what +
              " is averaged over microbatches (\"reduce\": \"mean\" "
              "in the manifest " +
              o.manifestPath + "), but ranks " + std::to_string(it->second) +
              " and " + std::to_string(r) + " both wrote it for microbatch " +
              std::to_string(w.second) +
              " in the last call: a mean counts every microbatch once");
      }
    for (int mb = 0; mb < m.numMicrobatches; ++mb) {
      if (writer.count(mb))
        continue;
      std::string got;
      for (const auto &w : writer)
        got += (got.empty() ? "" : ", ") + std::to_string(w.first);
      throw RuntimeError(
          what +
          " is averaged over microbatches (\"reduce\": \"mean\" in "
          "the manifest " +
          o.manifestPath +
          "), but no rank wrote it for "
          "microbatch " +
          std::to_string(mb) + " of " + std::to_string(m.numMicrobatches) +
          " in the last call (" +
          (got.empty() ? std::string("it was written for no microbatch")
                       : "written for microbatch(es) " + got) +
          "): the mean needs every microbatch's value");
    }
  }
  for (const ManifestOutput &mo : m.outputs) {
    if (mo.reduce == OutputReduce::Mean)
      continue;
    for (int mb = mo.microbatched ? 0 : -1;
         mb < (mo.microbatched ? m.numMicrobatches : 0); ++mb)
      if (!written.count({mo.index, mb}))
        throw RuntimeError(
            "output " + std::to_string(mo.index) +
            (mb >= 0 ? " for microbatch " + std::to_string(mb) : "") +
            " was never written by any rank (the manifest " + o.manifestPath +
            " says num_microbatches = " + std::to_string(m.numMicrobatches) +
            "; is it the manifest of this model?)");
  }
}

/// Writes the outputs (and a training build's files) to --output-dir.
/// Returns the mean loss of the last step when a "loss" output was averaged
/// over microbatches.
std::optional<float> writeOutputs(const Manifest &m, const RunOptions &o,
                                  const RankResult &result) {
  const std::vector<RankReport> &reports = result.reports;
  std::optional<float> meanLoss;
  if (o.outputDir.empty())
    return meanLoss;
  ensureDir(o.outputDir);
  std::map<std::pair<int, int>, const HostTensor *> all;
  for (const auto &r : reports)
    for (const auto &kv : r.outputs)
      all[kv.first] = &kv.second;
  if (m.hasParameters)
    writeTrainingFiles(m, o, result);
  for (const ManifestOutput &mo : m.outputs) {
    // A training build with parameters writes its per-step losses
    // (loss.npy, above) instead of the last step's.
    if (m.hasParameters && mo.index == lossOutput(m))
      continue;
    HostTensor t;
    t.dtype = mo.dtype;
    t.shape = mo.shape;
    if (mo.reduce == OutputReduce::Mean) {
      // The ranks' sums (in rank order, in double), divided by M and
      // rounded once.
      std::vector<double> sum(size_t(numElements(mo.shape)), 0.0);
      for (const auto &r : reports)
        if (auto it = r.reducedSums.find(mo.index);
            it != r.reducedSums.end()) {
          if (it->second.size() != sum.size())
            throw RuntimeError("output " + std::to_string(mo.index) +
                               ": a rank sent a sum of " +
                               std::to_string(it->second.size()) +
                               " elements for " +
                               typeString(mo.dtype, mo.shape));
          for (size_t i = 0; i < sum.size(); ++i)
            sum[i] += it->second[i];
        }
      t = meanFromSum(sum, m.numMicrobatches, mo.dtype, mo.shape);
      if (mo.name == "loss" && t.dtype == DType::F32 && t.data.size() == 4) {
        float loss;
        std::memcpy(&loss, t.data.data(), 4);
        meanLoss = loss;
      }
    } else if (mo.microbatched) {
      t.shape.insert(t.shape.begin(), m.numMicrobatches);
      for (int mb = 0; mb < m.numMicrobatches; ++mb) {
        auto it = all.find({mo.index, mb});
        if (it == all.end())
          throw RuntimeError("output " + std::to_string(mo.index) +
                             " for microbatch " + std::to_string(mb) +
                             " was never written by any rank");
        t.data.insert(t.data.end(), it->second->data.begin(),
                      it->second->data.end());
      }
    } else {
      auto it = all.find({mo.index, -1});
      if (it == all.end())
        throw RuntimeError("output " + std::to_string(mo.index) +
                           " was never written by any rank");
      t.data = it->second->data;
    }
    writeNpy(o.outputDir + "/" + outputFileName(mo, o), t, FollowLinks::Never);
  }
  return meanLoss;
}

/// Writes --trace: a Chrome/Perfetto trace of every rank's actions and
/// runtime calls (docs/Runtime.md "Trace").
void writeTrace(const Manifest &m, const RunOptions &o,
                const std::vector<RankReport> &reports) {
  if (o.tracePath.empty())
    return;
  int R = int(reports.size());
  Json events = Json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 0},
                    {"args", {{"name", "pipeopt-run " + m.schedule}}}});
  for (int r = 0; r < R; ++r) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0},
                      {"tid", r},
                      {"args", {{"name", "rank " + std::to_string(r)}}}});
    events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 0},
                      {"tid", r}, {"args", {{"sort_index", r}}}});
    for (const auto &e : reports[r].events) {
      std::string name, cat;
      Json args = {{"iteration", e.iteration}};
      std::string mb = e.microbatch >= 0
                           ? " mb" + std::to_string(e.microbatch)
                           : std::string(" (shared)");
      if (isTraceCall(e.kind)) {
        cat = traceCallName(e.kind);
        if (e.kind == TraceSend || e.kind == TraceRecv) {
          name = cat + " s" + std::to_string(e.stage) + mb +
                 (e.kind == TraceSend ? " to rank " : " from rank ") +
                 std::to_string(e.peer);
          args["stage"] = e.stage;
          args["peer_rank"] = e.peer;
        } else {
          name = cat + " " + std::to_string(e.peer) + mb;
          args[e.kind == TraceInput ? "argument" : "result"] = e.peer;
        }
        args["microbatch"] = e.microbatch;
        args["bytes"] = e.bytes;
      } else {
        cat = actionKindName(e.kind);
        name = cat + " s" + std::to_string(e.stage) + mb;
        args["stage"] = e.stage;
        args["microbatch"] = e.microbatch;
      }
      events.push_back({{"name", name},
                        {"cat", cat},
                        {"ph", "X"},
                        {"pid", 0},
                        {"tid", r},
                        {"ts", e.beginS * 1e6},
                        {"dur", (e.endS - e.beginS) * 1e6},
                        {"args", args}});
    }
  }
  Json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  writeText(o.tracePath, trace.dump(1) + "\n", FollowLinks::UserNamedPath);
}

/// Writes --profile: per-stage median F/B/W/BW durations, per-rank busy
/// time, time in runtime calls and bubble, iteration times (docs/Runtime.md
/// "Profile JSON").
void writeProfile(const Manifest &m, const RunOptions &o,
                  const std::vector<RankReport> &reports,
                  const std::vector<double> &iterMax, const Json &stashJson,
                  const std::string &commName) {
  if (o.profilePath.empty())
    return;
  int R = int(reports.size());
  double med = median(iterMax);
  double mbPerS = med > 0 ? m.numMicrobatches / med : 0;
  // [stage][kind] -> durations; stage -> ranks that ran it.
  std::vector<std::array<std::vector<double>, 4>> dur(size_t(m.numStages));
  std::vector<std::vector<int>> stageRanks(size_t(m.numStages));
  Json ranks = Json::array();
  for (int r = 0; r < R; ++r) {
    double busy = 0;
    // Time in runtime calls by TraceCallKind - TraceSend.
    std::array<double, 4> calls{};
    for (const auto &e : reports[r].events) {
      if (isTraceCall(e.kind)) {
        calls[size_t(e.kind - TraceSend)] += e.endS - e.beginS;
        continue;
      }
      if (e.stage < 0 || e.stage >= m.numStages || e.kind < 0 || e.kind > 3)
        continue;
      dur[e.stage][e.kind].push_back(e.endS - e.beginS);
      busy += e.endS - e.beginS;
      auto &sr = stageRanks[e.stage];
      if (std::find(sr.begin(), sr.end(), r) == sr.end())
        sr.push_back(r);
    }
    double perIter = o.iterations ? busy / o.iterations : 0;
    auto callS = [&](int kind) {
      return o.iterations ? calls[size_t(kind - TraceSend)] / o.iterations
                          : 0.0;
    };
    ranks.push_back({{"rank", r},
                     {"busy_s", perIter},
                     {"send_s", callS(TraceSend)},
                     {"recv_s", callS(TraceRecv)},
                     {"input_s", callS(TraceInput)},
                     {"output_s", callS(TraceOutput)},
                     {"iteration_s", median(reports[r].iterationS)},
                     {"bubble_ratio",
                      med > 0 ? std::max(0.0, 1.0 - perIter / med) : 0.0}});
  }
  auto medOrNull = [](const std::vector<double> &v) -> Json {
    return v.empty() ? Json(nullptr) : Json(median(v));
  };
  Json stages = Json::array();
  for (int s = 0; s < m.numStages; ++s) {
    const auto &d = dur[s];
    Json backward = nullptr;
    if (!d[PIPEOPT_RT_ACTION_BW].empty())
      backward = median(d[PIPEOPT_RT_ACTION_BW]);
    else if (!d[PIPEOPT_RT_ACTION_B].empty() ||
             !d[PIPEOPT_RT_ACTION_W].empty())
      backward = median(d[PIPEOPT_RT_ACTION_B]) +
                 median(d[PIPEOPT_RT_ACTION_W]);
    stages.push_back(
        {{"stage", s},
         {"ranks", stageRanks[s]},
         {"forward_s", medOrNull(d[PIPEOPT_RT_ACTION_F])},
         {"backward_s", backward},
         {"backward_input_s", medOrNull(d[PIPEOPT_RT_ACTION_B])},
         {"backward_weight_s", medOrNull(d[PIPEOPT_RT_ACTION_W])},
         {"backward_full_s", medOrNull(d[PIPEOPT_RT_ACTION_BW])},
         {"count",
          {{"F", d[0].size()}, {"B", d[1].size()}, {"W", d[2].size()},
           {"BW", d[3].size()}}}});
  }
  Json profile = {{"format", "pipeopt-profile"},
                  {"version", 1},
                  {"schedule", m.schedule},
                  {"communicator", commName},
                  {"num_ranks", m.numRanks},
                  {"num_stages", m.numStages},
                  {"num_microbatches", m.numMicrobatches},
                  {"iterations", o.iterations},
                  {"iteration_s", iterMax},
                  {"iteration_median_s", med},
                  {"microbatches_per_s", mbPerS},
                  {"stages", stages},
                  {"ranks", ranks},
                  {"peak_stash_bytes_per_rank", stashJson},
                  {"kernel_library", kernelLibrary()},
                  {"kernel_threads", kernelThreads()}};
  writeText(o.profilePath, profile.dump(2) + "\n", FollowLinks::UserNamedPath);
}

/// Prints the run's summary lines (unless --quiet).
void printSummary(const Manifest &m, const RunOptions &o,
                  const std::vector<double> &iterMax,
                  std::optional<float> meanLoss, const std::string &stashLine,
                  const std::string &commName, std::ostream &out) {
  if (o.quiet)
    return;
  double med = median(iterMax);
  double mbPerS = med > 0 ? m.numMicrobatches / med : 0;
  // A training build's iteration is one training step (F, B and W of
  // every microbatch).
  const char *iteration = isTrainingBuild(m) ? "training step" : "iteration";
  char line[256];
  std::snprintf(line, sizeof(line),
                "pipeopt-run: %d rank(s) over %s, %d stage(s), %d "
                "microbatch(es), %d %s(s)\n",
                m.numRanks, commName.c_str(), m.numStages, m.numMicrobatches,
                o.iterations, iteration);
  out << line;
  std::snprintf(line, sizeof(line),
                "pipeopt-run: median %s %.6f s, throughput %.2f "
                "microbatches/s\n",
                iteration, med, mbPerS);
  out << line;
  if (meanLoss) {
    std::snprintf(line, sizeof(line),
                  "pipeopt-run: loss %.8g (mean over %d microbatches, last "
                  "step)\n",
                  double(*meanLoss), m.numMicrobatches);
    out << line;
  }
  if (!stashLine.empty())
    out << "pipeopt-run: peak stashed activations per rank: " << stashLine
        << "\n";
  out << "pipeopt-run: kernels: " << kernelLibrary() << ", "
      << kernelThreads() << " thread(s) per rank\n";
}

/// After every rank finished: check what the ranks reported against the
/// manifest, then write outputs, trace and profile, and print the summary.
void finish(const Manifest &m, const RunOptions &o,
            const RankResult &result, const std::string &commName,
            std::ostream &out) {
  const std::vector<RankReport> &reports = result.reports;
  std::vector<double> iterMax = iterationTimes(o, reports);
  checkMicrobatchedInputReads(m, o, reports);
  checkOutputsWritten(m, o, reports);
  std::optional<float> meanLoss = writeOutputs(m, o, result);
  writeTrace(m, o, reports);
  // Peak stashed activations per rank (pipeopt_rt_stash), when any rank
  // stashed anything.
  bool stashed = std::any_of(reports.begin(), reports.end(),
                             [](const RankReport &r) { return r.stashUsed; });
  Json stashJson = nullptr;
  std::string stashLine;
  if (stashed) {
    stashJson = Json::array();
    for (const RankReport &r : reports) {
      stashJson.push_back(r.stashPeak);
      stashLine += (stashLine.empty() ? "" : ", ") +
                   std::to_string(r.stashPeak) + " B";
    }
  }
  writeProfile(m, o, reports, iterMax, stashJson, commName);
  printSummary(m, o, iterMax, meanLoss, stashLine, commName, out);
}

/// Writes one error line with a single write(2), so that the lines of
/// several MPI processes sharing one stderr never interleave mid-line.
void printError(const std::string &message) {
  std::string line = "pipeopt-run: error: " + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

void reportErrors(const std::vector<RankResult> &results) {
  for (const auto &r : results)
    if (!r.ok)
      printError(r.error);
}

/// Loopback: after a rank failed, how long the others get to return (they
/// fail at once when they wait for a rank that has failed, within
/// --timeout-s when they wait for one that is stuck) before the run ends
/// without them.
double loopbackGraceS(const RunOptions &o) {
  return std::min(o.timeoutS, 10.0);
}

/// Reads a field that the rank's thread may be writing (it normally is
/// stuck and does not): relaxed atomic loads, a snapshot for an error
/// message.
template <typename T>
T peek(const T &v) {
  return __atomic_load_n(&v, __ATOMIC_RELAXED);
}

/// "rank 0 (stage 0) did not return within 1 s of the first failure: in
/// iteration 0 (measured), calling pipeopt_rank_0, in action F for stage 0
/// microbatch 1 (begun 3.2 s ago, not ended); last completed action: F for
/// stage 0 microbatch 0".
std::string describeStuckRank(const Manifest &m, int rank,
                              RankProgress &progress, double graceS) {
  std::ostringstream os;
  os << rankLabel(m, rank) << " did not return within " << graceS
     << " s of the first failure (stuck in a computation, or blocked):";
  std::lock_guard<std::mutex> lock(progress.mu);
  os << " " << progress.phase;
  const RankContext *ctx = progress.ctx;
  if (!ctx)
    return os.str();
  int openKind = peek(ctx->openKind);
  int openStage = peek(ctx->openStage);
  int openMb = peek(ctx->openMicrobatch);
  size_t begun = peek(ctx->actionsBegun);
  if (openKind >= 0) {
    char ago[64];
    std::snprintf(ago, sizeof(ago), "%.1f", ctx->now() - ctx->openBeginS);
    os << ", in action " << actionKindName(openKind) << " for stage "
       << openStage << " microbatch " << openMb << " (begun " << ago
       << " s ago, not ended)";
  }
  size_t completed = begun - (openKind >= 0 && begun > 0 ? 1 : 0);
  if (size_t(rank) < m.actions.size() && completed <= m.actions[rank].size()) {
    if (completed == 0) {
      os << "; no action completed in this call";
    } else {
      const ManifestAction &a = m.actions[size_t(rank)][completed - 1];
      os << "; last completed action: " << actionKindName(a.kind)
         << " for stage " << a.stage << " microbatch " << a.microbatch
         << " (its action " << completed - 1 << " of "
         << m.actions[size_t(rank)].size() << " in this call)";
    }
  } else {
    os << "; actions completed in this call: " << completed;
  }
  return os.str();
}

} // namespace

//===----------------------------------------------------------------------===//
// main
//===----------------------------------------------------------------------===//

namespace {
/// A fresh run (no --resume) refuses a checkpoint directory that already
/// holds checkpoints (`latest` or a step-* directory): it would overwrite
/// them and mix its checkpoints with theirs.
void refuseExistingCheckpoints(const std::string &dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return;
  std::string what;
  fs::file_status latest = fs::symlink_status(dir + "/latest", ec);
  if (fs::is_regular_file(latest)) {
    std::ifstream in(dir + "/latest", std::ios::binary);
    std::string name(256, '\0');
    in.read(name.data(), std::streamsize(name.size()));
    name.resize(size_t(in.gcount()));
    while (!name.empty() &&
           std::isspace(static_cast<unsigned char>(name.back())))
      name.pop_back();
    what = "latest names " + printable(name);
  } else if (fs::exists(latest)) {
    what = "it has a latest";
  } else {
    std::vector<std::string> steps;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec)) {
      std::string n = it->path().filename().string();
      if (n.rfind("step-", 0) == 0)
        steps.push_back(printable(n));
    }
    if (steps.empty())
      return;
    std::sort(steps.begin(), steps.end());
    what = steps.front();
    for (size_t i = 1; i < steps.size() && i < 4; ++i)
      what += ", " + steps[i];
    if (steps.size() > 4)
      what += ", ...";
  }
  throw RuntimeError(dir + " already holds checkpoints (" + what +
                     "): pass --resume " + dir +
                     " to continue from them, or choose another "
                     "--checkpoint-dir");
}

/// Creates a file in `dir` and removes it again; throws naming `option`,
/// `dir` and the reason when that fails (a read-only file system, no
/// permission, no space).
void probeWritableDir(const std::string &option, const std::string &dir) {
  static std::atomic<unsigned> counter{0};
  std::string probe = (dir.empty() ? std::string(".") : dir) +
                      "/.pipeopt-probe." + std::to_string(::getpid()) + "." +
                      std::to_string(counter++);
  int fd = ::open(probe.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    throw RuntimeError(option + " " + dir +
                       ": cannot create a file there: " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

/// Checks that the file `path` named by `option` (--trace, --profile) can
/// be written: its directory takes a new file (it is replaced atomically);
/// a device or FIFO is written in place (not opened here: a FIFO would
/// block), a symbolic link to a file written through (access(2)).
void probeWritableFile(const std::string &option, const std::string &path) {
  struct stat st, lst;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      throw RuntimeError(option + " " + path + ": " + std::strerror(EISDIR));
    if (!S_ISREG(st.st_mode))
      return;
    if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
      if (::access(path.c_str(), W_OK) != 0)
        throw RuntimeError(option + " " + path +
                           ": cannot write: " + std::strerror(errno));
      return;
    }
  }
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "."
                    : slash == 0               ? "/"
                                               : path.substr(0, slash);
  struct stat dst;
  if (::stat(dir.c_str(), &dst) != 0)
    throw RuntimeError(option + " " + path + ": the directory " + dir + ": " +
                       std::strerror(errno));
  probeWritableDir(option + " " + path + ": the directory", dir);
}

/// Takes an exclusive lock (flock) on `dir`/.lock for the rest of the
/// process, so that two runs never write checkpoints into one directory
/// (they published incomplete step directories and failed with "cannot
/// write" naming a temporary). The lock file records the holder's pid for
/// the error; the kernel releases the lock when the process ends, also on
/// kill -9, so a stale file never blocks a later run.
void lockCheckpointDir(const std::string &dir) {
  std::string path = dir + "/.lock";
  int fd =
      ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0)
    throw RuntimeError("--checkpoint-dir: cannot open " + path + ": " +
                       std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    char pid[32] = {0};
    ssize_t n = ::pread(fd, pid, sizeof(pid) - 1, 0);
    ::close(fd);
    std::string holder;
    for (ssize_t i = 0;
         i < n && std::isdigit(static_cast<unsigned char>(pid[i])); ++i)
      holder += pid[i];
    if (err == EWOULDBLOCK)
      throw RuntimeError(
          "--checkpoint-dir " + dir + " is in use by another pipeopt-run" +
          (holder.empty() ? "" : " (pid " + holder + ")") +
          ": two runs must not write checkpoints into one directory");
    throw RuntimeError("--checkpoint-dir: cannot lock " + path + ": " +
                       std::strerror(err));
  }
  std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, me.data(), me.size(), 0) != ssize_t(me.size()))
    throw RuntimeError("--checkpoint-dir: cannot write " + path + ": " +
                       std::strerror(errno));
  // Kept open (and locked) until the process ends.
}

/// Before step 1 (in the process of rank 0, which writes every file): a
/// fresh run does not reuse a directory of checkpoints; --output-dir and
/// --checkpoint-dir are created and take a new file; the directories of
/// --trace and --profile take a new file. Otherwise an unwritable location
/// would be found only after the training (or at the first checkpoint).
void checkOutputLocations(const RunOptions &o) {
  for (const auto &[option, dir] : {std::pair<std::string, std::string>{
                                        "--checkpoint-dir", o.checkpointDir},
                                    {"--output-dir", o.outputDir}}) {
    if (dir.empty())
      continue;
    try {
      ensureDir(dir);
    } catch (const RuntimeError &e) {
      throw RuntimeError(option + ": " + e.what());
    }
    probeWritableDir(option, dir);
  }
  if (!o.checkpointDir.empty()) {
    lockCheckpointDir(o.checkpointDir);
    if (o.resumeDir.empty())
      refuseExistingCheckpoints(o.checkpointDir);
  }
  if (!o.tracePath.empty())
    probeWritableFile("--trace", o.tracePath);
  if (!o.profilePath.empty())
    probeWritableFile("--profile", o.profilePath);
}

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

std::string updateParameters(RankContext &ctx, Communicator &comm, int step,
                             double timeoutS) {
  return reduceAndUpdate(ctx, comm, *ctx.manifest, step, timeoutS);
}

int pipeoptRunMain(int argc, char **argv) {
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

  // Decide the world: which ranks this process runs. Started as one of
  // several processes (mpirun without --comm mpi), every process would run
  // the whole job, racing on the output and checkpoint files.
  if (o.comm == CommKind::Loopback) {
    LaunchEnvironment launch = detectLaunchEnvironment();
    if (launch.size > 1) {
      printError("this process is one of " + std::to_string(launch.size) +
                 " started by a launcher (" + launch.variable +
                 "), but --comm is loopback, which runs every rank in each "
                 "process: every process would run the whole job. Use "
                 "--comm mpi (mpirun) or --comm nccl, or start one process");
      return 2;
    }
  }
  bool useMpi = o.comm == CommKind::Mpi;
  bool ncclOverMpi = false, ncclOverEnv = false;
  if (o.comm == CommKind::Nccl) {
    if (haveMpi() && (std::getenv("OMPI_COMM_WORLD_SIZE") ||
                      std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK")))
      ncclOverMpi = useMpi = true;
    else if (std::getenv("RANK") && std::getenv("WORLD_SIZE"))
      ncclOverEnv = true;
  }
  struct MpiGuard {
    bool active = false;
    ~MpiGuard() {
      if (active)
        mpiFinalize();
    }
  } mpiGuard;

  Manifest m;
  int procRank = 0, procSize = 1;
  std::vector<int> localRanks;
  try {
    if (useMpi) {
      mpiInitialize(&argc, &argv);
      mpiGuard.active = true;
      procRank = mpiWorldRank();
      procSize = mpiWorldSize();
    } else if (ncclOverEnv) {
      procRank = std::atoi(std::getenv("RANK"));
      procSize = std::atoi(std::getenv("WORLD_SIZE"));
    }
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
                         "build, but the manifest " + o.manifestPath +
                         " says this model was compiled for the CPU "
                         "(target \"cpu\")");
    if (m.target == Target::Cuda && o.threads > 0)
      throw RuntimeError("--threads sets the BLAS threads of cpu builds, but "
                         "the manifest " + o.manifestPath + " says this "
                         "model was compiled for CUDA (target \"cuda\"); "
                         "drop --threads (--devices chooses the GPUs)");
    checkInputSizes(m);
    bool distributed = useMpi || ncclOverEnv;
    if (distributed) {
      if (procSize != m.numRanks)
        throw RuntimeError("the model has " + std::to_string(m.numRanks) +
                           " ranks but " + std::to_string(procSize) +
                           " processes were started (use mpirun -np " +
                           std::to_string(m.numRanks) + ")");
      localRanks = {procRank};
    } else {
      for (int r = 0; r < m.numRanks; ++r)
        localRanks.push_back(r);
    }
    if (procRank == 0)
      checkOutputLocations(o);
  } catch (const std::exception &e) {
    printError(e.what());
    if (useMpi)
      mpiAbort(2);
    return 2;
  }

  // Load the model and its entry points.
  std::vector<EntryFn> entries(size_t(m.numRanks), nullptr);
  InputStore inputs;
  std::optional<Checkpoint> resume;
  // cuda builds: one Device per local rank (in the order of localRanks).
  std::vector<Device> devices;
  const std::string noCuda = "this model was compiled for CUDA (manifest "
                             "target \"cuda\") but no CUDA device is "
                             "usable: ";
  try {
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
        throw RuntimeError(noCuda + (e && *e ? std::string(e)
                                             : "no CUDA device is visible"));
      }
      int localRank = procRank;
      if (useMpi || ncclOverEnv)
        for (const char *var : {"OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK"})
          if (const char *v = std::getenv(var)) {
            localRank = std::atoi(v);
            break;
          }
      for (int id : assignDevices(o.devices, localRanks, useMpi || ncclOverEnv,
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
        throw RuntimeError(
            o.modelPath + " has no entry point '" + m.entryPoints[r] +
            "' for rank " + std::to_string(r) + " (the manifest " +
            o.manifestPath + " says num_ranks = " + std::to_string(m.numRanks) +
            "; is it the manifest of this model?): '" + m.entryPoints[r] +
            "' " + why);
      entries[r] = reinterpret_cast<EntryFn>(sym);
      defaultNames = defaultNames &&
                     m.entryPoints[r] == "pipeopt_rank_" + std::to_string(r);
    }
    std::string next = "pipeopt_rank_" + std::to_string(m.numRanks);
    if (defaultNames && dlsym(handle, next.c_str()))
      throw RuntimeError(o.modelPath + " exports the entry point '" + next +
                         "', but the manifest " + o.manifestPath +
                         " says num_ranks = " + std::to_string(m.numRanks) +
                         ": the model has more ranks than the manifest (is "
                         "it the manifest of this model?)");
    inputs = loadInputs(m, o);
    if (!o.resumeDir.empty()) {
      resume = readCheckpoint(m, o.resumeDir);
      // A fallback to an older checkpoint is never silent (not even with
      // --quiet): it costs the steps since.
      for (const std::string &note : resume->notes) {
        std::string line = "pipeopt-run: warning: --resume " + o.resumeDir +
                           ": " + note + "\n";
        std::fwrite(line.data(), 1, line.size(), stderr);
      }
      if (resume->step >= o.iterations)
        throw RuntimeError("--resume " + o.resumeDir + ": the latest "
                           "checkpoint is of step " +
                           std::to_string(resume->step) + ", but --steps " +
                           std::to_string(o.iterations) +
                           " asks for no more steps (--steps is the total "
                           "number of steps)");
      o.iterations -= resume->step;
    }
  } catch (const std::exception &e) {
    printError(e.what());
    if (useMpi)
      mpiAbort(2);
    return 2;
  }

  // Communicators (one place knows every kind: createCommunicators).
  CommWorld commWorld{o.comm, ncclOverMpi, ncclOverEnv, useMpi, procRank,
                      procSize};
  for (const Device &d : devices)
    commWorld.devices.push_back(d.id());
  Communicators communicators;
  std::vector<RankResult> results(localRanks.size());
  try {
    communicators =
        createCommunicators(commWorld, m.numRanks, localRanks, o.timeoutS);
  } catch (const std::exception &e) {
    printError(e.what());
    communicators.comms.clear();
    if (useMpi)
      mpiAbort(2);
    return 2;
  }
  std::vector<std::unique_ptr<Communicator>> &comms = communicators.comms;
  const std::string &commName = communicators.name;
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
      o.threads > 0 ? o.threads
                    : defaultKernelThreads(
                          usableCores(),
                          ranksOnThisNode(m, useMpi || ncclOverEnv));
  setKernelThreads(kernelThreads);
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);

  // Run.
  if (localRanks.size() == 1) {
    if (o.pinRanks == "on" && !o.quiet)
      std::cerr << "pipeopt-run: note: --pin-ranks pins the ranks of one "
                   "process (loopback); this process runs one rank\n";
    runRank(localRanks[0], *comms[0], m, inputs, entries[localRanks[0]], o,
            resume ? &*resume : nullptr,
            devices.empty() ? nullptr : &devices[0], results[0]);
  } else {
    // --pin-ranks: by default only when the ranks outnumber the cores and
    // each has one kernel thread (a rank with more would keep them all on
    // its one core).
    std::optional<RankPinning> pinning;
    bool pin = devices.empty() &&
               (o.pinRanks == "on" ||
                (o.pinRanks == "auto" &&
                 int(localRanks.size()) > usableCores() &&
                 kernelThreads == 1));
    if (pin && o.warmup + o.iterations < 2) {
      if (o.pinRanks == "on" && !o.quiet)
        std::cerr << "pipeopt-run: note: --pin-ranks needs 2 or more "
                     "iterations (it balances one iteration's CPU time); "
                     "not pinned\n";
      pin = false;
    }
    if (pin) {
      pinning.emplace();
      pinning->pinAt = std::max(o.warmup, 1);
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
        runRank(localRanks[i], *comms[i], m, inputs, entries[localRanks[i]], o,
                resume ? &*resume : nullptr,
                devices.empty() ? nullptr : &devices[i], results[i],
                pinning ? &*pinning : nullptr, &progress[i]);
        {
          std::lock_guard<std::mutex> lock(doneMu);
          done[i] = true;
          ++numDone;
          anyFailed = anyFailed || !results[i].ok;
        }
        doneCv.notify_all();
      });
    {
      const double graceS = loopbackGraceS(o);
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
    if (pinning && !o.quiet) {
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

  bool ok = std::all_of(results.begin(), results.end(),
                        [](const RankResult &r) { return r.ok; });
  if (!ok) {
    reportErrors(results);
    if (useMpi) {
      // Peers may be blocked on this rank; MPI_Abort ends them promptly,
      // after a grace period in which this rank answers the status queries
      // of peers that diagnose their own timeouts (Mpi.cpp) with its error,
      // and its error reaches mpirun's output.
      comms[0]->fail(results[0].error, statusGraceS(o.timeoutS));
      comms.clear();
      mpiAbort(1);
    }
    return 1;
  }
  int exitCode = 0;
  for (size_t i = 0; i < localRanks.size(); ++i) {
    if (localRanks[i] != 0)
      continue;
    try {
      finish(m, o, results[i], commName, std::cout);
    } catch (const std::exception &e) {
      printError(e.what());
      exitCode = 1;
    }
  }
  comms.clear();
  communicators.world.reset();
  return exitCode;
}

} // namespace rt
} // namespace pipeopt
