//===- Outputs.cpp - outputs, trace, profile --------------------*- C++ -*-===//
//
// What rank 0 writes after a run: --output-dir (outputs and a training
// build's files), the Chrome trace, the profile JSON and the summary lines;
// and the checks that these locations are writable before a run.
//
//===----------------------------------------------------------------------===//

#include "DataParallel.h"
#include "RunnerInternal.h"
#include "pipeopt/runtime/Kernels.h"
#include "pipeopt/runtime/Reduce.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

namespace pipeopt {
namespace rt {

using namespace runner;

using Json = nlohmann::json;

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

namespace runner {

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
        " is microbatched in the manifest " + o.manifestPath +
        ", but the "
        "program read it only for microbatch(es) " +
        list(mbs) + " of " + std::to_string(m.numMicrobatches) +
        " (on rank(s) " + list(readers) +
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

HostTensor assembleOutput(const Manifest &m, const ManifestOutput &mo,
                          const std::vector<RankReport> &reports) {
  std::map<std::pair<int, int>, const HostTensor *> all;
  for (const auto &r : reports)
    for (const auto &kv : r.outputs)
      all[kv.first] = &kv.second;
  HostTensor t;
  t.dtype = mo.dtype;
  t.shape = mo.shape;
  if (mo.reduce == OutputReduce::Mean) {
    // The ranks' sums (in rank order, in double), divided by M and
    // rounded once.
    std::vector<double> sum(size_t(numElements(mo.shape)), 0.0);
    for (const auto &r : reports)
      if (auto it = r.reducedSums.find(mo.index); it != r.reducedSums.end()) {
        if (it->second.size() != sum.size())
          throw RuntimeError("output " + std::to_string(mo.index) +
                             ": a rank sent a sum of " +
                             std::to_string(it->second.size()) +
                             " elements for " + typeString(mo.dtype, mo.shape));
        for (size_t i = 0; i < sum.size(); ++i)
          sum[i] += it->second[i];
      }
    t = meanFromSum(sum, m.numMicrobatches, mo.dtype, mo.shape);
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
  return t;
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
  if (m.hasParameters)
    writeTrainingFiles(m, o, result);
  for (const ManifestOutput &mo : m.outputs) {
    // A training build with parameters writes its per-step losses
    // (loss.npy, above) instead of the last step's.
    if (m.hasParameters && mo.index == lossOutput(m))
      continue;
    HostTensor t = assembleOutput(m, mo, reports);
    if (mo.reduce == OutputReduce::Mean && mo.name == "loss" &&
        t.dtype == DType::F32 && t.data.size() == 4) {
      float loss;
      std::memcpy(&loss, t.data.data(), 4);
      meanLoss = loss;
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
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"args", {{"name", "pipeopt-run " + m.schedule}}}});
  for (int r = 0; r < R; ++r) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", r},
                      {"args", {{"name", "rank " + std::to_string(r)}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", r},
                      {"args", {{"sort_index", r}}}});
    for (const auto &e : reports[r].events) {
      if (e.kind == TraceDataParallelTotals)
        continue; // totals, not an interval
      std::string name, cat;
      Json args = {{"iteration", e.iteration}};
      std::string mb = e.microbatch >= 0 ? " mb" + std::to_string(e.microbatch)
                                         : std::string(" (shared)");
      if (e.kind == TraceZeroUpdate) {
        cat = "all-reduce";
        name = "ZeRO-1 reduce-scatter, update, all-gather";
        args["bytes"] = e.bytes;
      } else if (e.kind == TraceAllReduce || e.kind == TraceAllReduceWait) {
        cat = "all-reduce";
        name = e.kind == TraceAllReduce
                   ? "all-reduce bucket " + std::to_string(e.peer)
                   : std::string("all-reduce wait");
        if (e.kind == TraceAllReduce) {
          args["bucket"] = e.peer;
          args["bytes"] = e.bytes;
        }
      } else if (isTraceCall(e.kind)) {
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
    auto perIteration = [&](double totalS) {
      return o.iterations ? totalS / o.iterations : 0.0;
    };
    double perIter = perIteration(busy);
    auto callS = [&](int kind) {
      return perIteration(calls[size_t(kind - TraceSend)]);
    };
    ranks.push_back(
        {{"rank", r},
         {"busy_s", perIter},
         {"send_s", callS(TraceSend)},
         {"recv_s", callS(TraceRecv)},
         {"input_s", callS(TraceInput)},
         {"output_s", callS(TraceOutput)},
         {"kernel_s", perIteration(reports[r].kernelS)},
         {"gradient_s", perIteration(reports[r].gradientS)},
         {"update_s", perIteration(reports[r].updateS)},
         {"iteration_s", median(reports[r].iterationS)},
         {"bubble_ratio", med > 0 ? std::max(0.0, 1.0 - perIter / med) : 0.0}});
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
    else if (!d[PIPEOPT_RT_ACTION_B].empty() || !d[PIPEOPT_RT_ACTION_W].empty())
      backward =
          median(d[PIPEOPT_RT_ACTION_B]) + median(d[PIPEOPT_RT_ACTION_W]);
    stages.push_back({{"stage", s},
                      {"ranks", stageRanks[s]},
                      {"forward_s", medOrNull(d[PIPEOPT_RT_ACTION_F])},
                      {"backward_s", backward},
                      {"backward_input_s", medOrNull(d[PIPEOPT_RT_ACTION_B])},
                      {"backward_weight_s", medOrNull(d[PIPEOPT_RT_ACTION_W])},
                      {"backward_full_s", medOrNull(d[PIPEOPT_RT_ACTION_BW])},
                      {"count",
                       {{"F", d[0].size()},
                        {"B", d[1].size()},
                        {"W", d[2].size()},
                        {"BW", d[3].size()}}}});
  }
  Json profile = {{"format", "pipeopt-profile"},
                  {"version", 1},
                  {"schedule", m.schedule},
                  {"communicator", commName},
                  {"num_ranks", m.numRanks},
                  {"num_stages", m.numStages},
                  {"num_microbatches", m.numMicrobatches},
                  {"data_parallel", std::max(1, o.dataParallel)},
                  {"zero_stage", o.zeroStage},
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

/// With --data-parallel D > 1: how long the gradient all-reduces were in
/// flight per rank and step (the union of a step's buckets' intervals) and
/// how much of that the ranks waited for at the step's end, over every
/// rank of every replica (each data-parallel group's totals, which replica
/// 0's ranks report) and every step but the run's first of the build (it
/// learns the buckets and all-reduces at its end); the rest was hidden
/// under the backward. "" otherwise.
std::string dataParallelSummary(const RunOptions &o,
                                const std::vector<RankReport> &reports) {
  if (o.dataParallel < 2)
    return "";
  char line[320];
  if (o.zeroStage > 0) {
    std::snprintf(line, sizeof(line),
                  "data parallel: %d replicas, ZeRO-1 (reduce-scatter, "
                  "update of each replica's shard and all-gather at the "
                  "step's end)",
                  o.dataParallel);
    return line;
  }
  double inFlight = 0, waited = 0;
  long steps = 0;
  for (const RankReport &r : reports)
    for (const TraceEvent &e : r.events)
      if (e.kind == TraceDataParallelTotals) {
        inFlight += e.beginS;
        waited += e.endS;
        steps += e.peer;
      }
  if (steps == 0) {
    std::snprintf(line, sizeof(line),
                  "data parallel: %d replicas; gradient all-reduce overlap "
                  "not measured (the first step learns which action "
                  "completes each gradient and all-reduces at its end)",
                  o.dataParallel);
    return line;
  }
  double hidden = inFlight > 0 ? std::max(0.0, 1.0 - waited / inFlight) : 0;
  std::snprintf(line, sizeof(line),
                "data parallel: %d replicas; gradient all-reduce in flight "
                "%.3f ms per rank and step, %.3f ms of it waited for at the "
                "step's end: %.0f%% hidden under the backward (every rank, "
                "the steps after the first)",
                o.dataParallel, 1e3 * inFlight / double(steps),
                1e3 * waited / double(steps), 100 * hidden);
  return line;
}

/// Prints the run's summary lines (unless --quiet).
void printSummary(const Manifest &m, const RunOptions &o,
                  const std::vector<double> &iterMax,
                  std::optional<float> meanLoss, const std::string &stashLine,
                  const std::string &dataParallelLine,
                  const std::string &commName, std::ostream &out) {
  if (o.quiet)
    return;
  double med = median(iterMax);
  double mbPerS = med > 0 ? m.numMicrobatches / med : 0;
  // A training build's iteration is one training step (F, B and W of
  // every microbatch).
  const char *iteration = isTrainingBuild(m) ? "training step" : "iteration";
  char line[256];
  if (o.dataParallel > 1)
    std::snprintf(line, sizeof(line),
                  "pipeopt-run: %d replica(s) x %d rank(s) over %s, %d "
                  "stage(s), %d microbatch(es) per replica, %d %s(s)\n",
                  o.dataParallel, m.numRanks, commName.c_str(), m.numStages,
                  m.numMicrobatches, o.iterations, iteration);
  else
    std::snprintf(line, sizeof(line),
                  "pipeopt-run: %d rank(s) over %s, %d stage(s), %d "
                  "microbatch(es), %d %s(s)\n",
                  m.numRanks, commName.c_str(), m.numStages, m.numMicrobatches,
                  o.iterations, iteration);
  out << line;
  std::snprintf(line, sizeof(line),
                "pipeopt-run: median %s %.6f s, throughput %.2f "
                "microbatches/s\n",
                iteration, med, mbPerS * std::max(1, o.dataParallel));
  out << line;
  if (!dataParallelLine.empty())
    out << "pipeopt-run: " << dataParallelLine << "\n";
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
  out << "pipeopt-run: kernels: " << kernelLibrary() << ", " << kernelThreads()
      << " thread(s) per rank\n";
}

void checkReports(const Manifest &m, const RunOptions &o,
                  const std::vector<RankReport> &reports) {
  checkMicrobatchedInputReads(m, o, reports);
  checkOutputsWritten(m, o, reports);
}

/// After every rank finished: check what the ranks reported against the
/// manifest, then write outputs, trace and profile, and print the summary.
void finish(const Manifest &m, const RunOptions &o, const RankResult &result,
            const std::string &commName, std::ostream &out) {
  const std::vector<RankReport> &reports = result.reports;
  std::vector<double> iterMax = iterationTimes(o, reports);
  checkReports(m, o, reports);
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
      stashLine +=
          (stashLine.empty() ? "" : ", ") + std::to_string(r.stashPeak) + " B";
    }
  }
  writeProfile(m, o, reports, iterMax, stashJson, commName);
  printSummary(m, o, iterMax, meanLoss, stashLine,
               dataParallelSummary(o, reports), commName, out);
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

} // namespace runner

} // namespace rt
} // namespace pipeopt
