//===- RunOptions.cpp - pipeopt-run options ---------------------*- C++ -*-===//
//
// The options of pipeopt-run (RunOptions.h): usage text, parsing, and the
// checks of the options against a manifest.
//
//===----------------------------------------------------------------------===//

#include "RunnerInternal.h"
#include "pipeopt/runtime/ArgParser.h"
#include "pipeopt/runtime/CommRegistry.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace pipeopt {
namespace rt {

using namespace runner;

/// `text` wrapped at `width` columns, every line but the first indented by
/// `indent` spaces.
static std::string wrapText(const std::string &text, size_t width,
                            size_t indent) {
  std::istringstream words(text);
  std::string out, line, word;
  while (words >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line;
}

std::string runUsage() {
  // The --comm kinds come from the communicator registry (CommRegistry.h).
  return R"(usage: pipeopt-run <model.so> [options]

  --manifest FILE        manifest (default: <model>.manifest.json)
  --comm KIND            )" +
         wrapText(communicatorDescriptions() + ";", 52, 25) + R"(
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
                         for N steps, one slice per step (with
                         --data-parallel D, M is D x the build's: the
                         global batch)
  --inputs DIR|FILE.npz  every input at once: the .npy files of DIR, or the
                         arrays of an .npz (numpy.savez / savez_compressed),
                         each named by input index (3, arg_3, arg3, input_3;
                         .npy optional) or by the manifest's input name, in
                         the forms --input takes; --input I=... overrides
                         entry I
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
  --data-parallel D      training builds: run D replicas of the pipeline
                         on D x P ranks (rank d*P + r is replica d's rank
                         r; mpirun -np D*P, or D*P threads with loopback);
                         microbatched inputs take the global batch, D times
                         the build's, and replica d trains on its d-th part;
                         gradients are averaged over the replicas with the
                         communicator's all-reduce (default 1)
  --zero 0|1             with --data-parallel D > 1: 1 shards the optimizer
                         state and update over the D replicas (ZeRO stage 1:
                         reduce-scatter, update 1/D, all-gather; default 0)
  --bucket-mb X          the largest data-parallel all-reduce bucket, MiB of
                         f64 gradient sums (default 25; not used with
                         --zero 1)
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
  // An empty value (--resume "$CK" with CK unset, --output-dir "") is an
  // error for every option: ignoring it would retrain from step 1 over
  // the checkpoints, or write nothing, and exit 0.
  ArgParser p(/*rejectEmptyValues=*/true);
  using Name = const std::string &;
  p.flag({"--help", "-h"}, [](Name) { throw RuntimeError("help"); });
  p.value({"--manifest"}, [&](Name, Name v) { o.manifestPath = v; });
  p.value({"--comm"}, [&](Name, Name k) {
    if (!findCommunicatorKind(k))
      throw RuntimeError("--comm must be " + communicatorNameList() +
                         ", got '" + k + "'");
    o.comm = k;
  });
  p.value({"--iterations"}, [&](Name a, Name v) {
    o.iterations = parseInt(a, v, 1);
    iterationsGiven = true;
  });
  p.value({"--steps"}, [&](Name a, Name v) { o.steps = parseInt(a, v, 1); });
  p.value({"--checkpoint-dir"}, [&](Name, Name v) { o.checkpointDir = v; });
  p.value({"--checkpoint-every"},
          [&](Name a, Name v) { o.checkpointEvery = parseInt(a, v, 1); });
  p.value({"--resume"}, [&](Name, Name v) { o.resumeDir = v; });
  p.flag({"--save-grads"}, [&](Name) { o.saveGrads = true; });
  p.value({"--warmup"}, [&](Name a, Name v) { o.warmup = parseInt(a, v, 0); });
  p.value({"--timeout-s"}, [&](Name, Name v) {
    char *end = nullptr;
    double t = std::strtod(v.c_str(), &end);
    // Deadlines are computed in nanoseconds on a steady clock; beyond
    // ~292 years that overflows, so cap well below (one year).
    if (v.empty() || *end || !(t > 0) || !std::isfinite(t) || t > 3.2e7)
      throw RuntimeError("--timeout-s expects a positive number of "
                         "seconds up to 3.2e7 (one year), got '" +
                         v + "'");
    o.timeoutS = t;
  });
  p.value({"--seed"}, [&](Name, Name v) { o.seed = parseSeed(v); });
  p.value({"--threads"}, [&](Name a, Name v) {
    o.threads = parseInt(a, v, 1);
    if (o.threads > 4096)
      throw RuntimeError("--threads expects 1 to 4096, got " +
                         std::to_string(o.threads));
  });
  p.value({"--pin-ranks"}, [&](Name, Name v) {
    o.pinRanks = v;
    if (o.pinRanks != "auto" && o.pinRanks != "on" && o.pinRanks != "off")
      throw RuntimeError("--pin-ranks expects auto, on or off, got '" +
                         o.pinRanks + "'");
  });
  p.value({"--devices"}, [&](Name, Name v) {
    std::stringstream ss(v);
    std::string d;
    o.devices.clear();
    while (std::getline(ss, d, ','))
      o.devices.push_back(parseInt("--devices", d, 0));
    if (o.devices.empty() || v.back() == ',')
      throw RuntimeError("--devices expects a comma list of CUDA device "
                         "numbers (e.g. 0,1), got '" +
                         v + "'");
  });
  p.value({"--input"}, [&](Name, Name v) {
    size_t eq = v.find('=');
    if (eq == std::string::npos)
      throw RuntimeError("--input expects INDEX=FILE.npy[,FILE2.npy...], "
                         "got '" +
                         v + "'");
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
      throw RuntimeError("--input " + std::to_string(idx) + " given twice");
    o.inputFiles[idx] = files;
  });
  p.value({"--inputs"}, [&](Name, Name v) {
    if (v.empty())
      throw RuntimeError("--inputs expects a directory of .npy files or an "
                         ".npz archive");
    if (!o.inputSet.empty())
      throw RuntimeError("--inputs given twice");
    o.inputSet = v;
  });
  p.value({"--output-dir"}, [&](Name, Name v) { o.outputDir = v; });
  p.value({"--trace"}, [&](Name, Name v) { o.tracePath = v; });
  p.value({"--profile"}, [&](Name, Name v) { o.profilePath = v; });
  p.value({"--data-parallel"},
          [&](Name a, Name v) { o.dataParallel = parseInt(a, v, 1); });
  p.value({"--zero"}, [&](Name a, Name v) {
    o.zeroStage = parseInt(a, v, 0);
    if (o.zeroStage > 1)
      throw RuntimeError("--zero expects 0 or 1 (ZeRO stage 1 shards the "
                         "optimizer state; stages 2 and 3 are not "
                         "implemented), got '" +
                         v + "'");
  });
  p.value({"--bucket-mb"}, [&](Name, Name v) {
    char *end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end || !(x > 0) || !std::isfinite(x) || x > 1e6)
      throw RuntimeError("--bucket-mb expects a positive number of MiB up "
                         "to 1e6, got '" +
                         v + "'");
    o.bucketMiB = x;
  });
  p.flag({"--quiet", "-q"}, [&](Name) { o.quiet = true; });
  p.parse(argc, argv, [&](const std::string &a) {
    if (a.empty())
      throw RuntimeError("an empty argument where the model .so belongs (an "
                         "unset shell variable?)");
    if (!o.modelPath.empty())
      throw RuntimeError("unexpected argument '" + a + "'");
    o.modelPath = a;
  });
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
    if (std::sscanf(f, "%d:%d%n", &rank, &step, &end) != 2 || f[end] != '\0' ||
        rank < 0 || step < 1)
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
  return m.hasParameters || std::any_of(m.outputs.begin(), m.outputs.end(),
                                        [](const ManifestOutput &o) {
                                          return o.reduce == OutputReduce::Mean;
                                        });
}

std::string outputFileName(const ManifestOutput &output, const RunOptions &o) {
  if (o.saveGrads && !output.name.empty())
    return output.name + ".npy";
  return "output_" + std::to_string(output.index) + ".npy";
}

int runner::lossOutput(const Manifest &m) {
  for (const ManifestOutput &o : m.outputs)
    if (o.name == "loss" && o.reduce == OutputReduce::Mean)
      return o.index;
  return -1;
}

void checkDataParallelOptions(const Manifest &m, const RunOptions &o) {
  // The values, for a Session loaded without the command line's parser.
  if (o.dataParallel < 1)
    throw RuntimeError("--data-parallel expects an integer >= 1, got " +
                       std::to_string(o.dataParallel));
  if (o.zeroStage != 0 && o.zeroStage != 1)
    throw RuntimeError("--zero expects 0 or 1 (ZeRO stage 1 shards the "
                       "optimizer state; stages 2 and 3 are not "
                       "implemented), got " +
                       std::to_string(o.zeroStage));
  if (!(o.bucketMiB > 0) || !std::isfinite(o.bucketMiB) || o.bucketMiB > 1e6)
    throw RuntimeError("--bucket-mb expects a positive number of MiB up to "
                       "1e6, got " +
                       std::to_string(o.bucketMiB));
  if (o.zeroStage > 0 && o.dataParallel < 2)
    throw RuntimeError("--zero " + std::to_string(o.zeroStage) +
                       " shards the optimizer state over data-parallel "
                       "replicas and needs --data-parallel D with D >= 2 "
                       "(got D = " +
                       std::to_string(o.dataParallel) + ")");
  if (o.dataParallel < 2)
    return;
  std::string d = "--data-parallel " + std::to_string(o.dataParallel);
  if (!m.hasParameters)
    throw RuntimeError(
        d + ": the manifest " + o.manifestPath +
        " has no \"parameters\"; data parallelism averages the gradients "
        "of a training build's parameters over the replicas (compile with "
        "pipeopt-compile --train; for inference, run separate jobs)");
  if (m.training.updateEvery > 0)
    throw RuntimeError(
        d + ": the schedule '" + m.schedule + "' of " + o.manifestPath +
        " is asynchronous (\"update_every\" " +
        std::to_string(m.training.updateEvery) +
        "): each rank updates a parameter as its microbatches' gradients "
        "arrive, and D replicas would each update their own copy; use a "
        "synchronous schedule (gpipe, 1f1b, zb-h1, interleaved-1f1b, ...)");
  if (m.target == Target::Cuda)
    throw RuntimeError(d + ": the manifest " + o.manifestPath +
                       " is a cuda build, whose gradient sums stay on the "
                       "device; data parallelism runs cpu builds for now");
  if (int64_t(o.dataParallel) * m.numRanks > (1 << 20))
    throw RuntimeError(d + " x " + std::to_string(m.numRanks) +
                       " ranks exceeds 1048576 ranks");
}

void checkTrainingOptions(const Manifest &m, const RunOptions &o) {
  checkDataParallelOptions(m, o);
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

} // namespace rt
} // namespace pipeopt
