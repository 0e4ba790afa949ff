//===- pipeopt-explore.cpp - Compare pipeline schedules at three levels ---===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Sweeps schedules x stages x microbatches x systems over a cost table and
/// reports, side by side, the formula, idealized-table and event-simulation
/// metrics, the ranking of schedules at each level, and the configurations
/// where the best schedule differs between levels ("ranking flips").
/// See tools/pipeopt-explore/README.md.
///
//===----------------------------------------------------------------------===//

#include "pipeopt/Analysis/CostModel.h"
#include "pipeopt/InitAll.h"
#include "pipeopt/Machine/Machine.h"
#include "pipeopt/Schedule/Schedule.h"
#include "pipeopt/Simulate/CostTable.h"
#include "pipeopt/Simulate/Explore.h"
#include "pipeopt/Simulate/Simulator.h"
#include "pipeopt/Simulate/Trace.h"
#include "pipeopt/Support/CommandLine.h"
#include "pipeopt/Transforms/ModelCostTables.h"

#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>

using namespace pipeopt;
using namespace pipeopt::sim;
using pipeopt::ModelCostTables;
namespace cl = llvm::cl;

static cl::OptionCategory category("pipeopt-explore options");

/// Largest --virtual-stages and --waves: the bound pipe-schedule puts on its
/// virtual-stages and waves options.
using pipeopt::schedule::kMaxPipelineCount;

static cl::list<std::string> schedulesOpt(
    "schedules", cl::CommaSeparated,
    cl::desc("Schedules to compare (comma-separated; 'all' for every "
             "registered training schedule). Default: the schedule "
             "registry's default list (shown by --help)"),
    cl::cat(category));
static cl::list<int> ranksOpt(
    "ranks", cl::CommaSeparated,
    cl::desc("Pipeline ranks S (default 4,8); a schedule with v chunks per "
             "rank runs S x v pipeline stages (pipe-partition num-stages)"),
    cl::cat(category));
// Not a cl::alias: an alias does not split comma-separated values.
static cl::list<int> stagesOpt("stages", cl::CommaSeparated,
                               cl::desc("Alias for --ranks"),
                               cl::cat(category));
static cl::list<int>
    microbatchesOpt("microbatches", cl::CommaSeparated,
                    cl::desc("Microbatches M (default 8,16,32,64)"),
                    cl::cat(category));
static cl::list<std::string> systemsOpt(
    "systems", cl::CommaSeparated,
    cl::desc("Systems: 'grid' (the 3x3 presets), preset names "
             "(compute-slow/net-fast, ..., ideal, h100, ...) or machine JSON "
             "files (default grid)"),
    cl::cat(category));
static cl::opt<int> virtualStagesOpt(
    "virtual-stages", cl::init(0),
    cl::desc("Chunks per rank for interleaved schedules (0: schedule default)"),
    cl::cat(category));
static cl::opt<int> wavesOpt("waves", cl::init(1), cl::desc("Hanayo waves"),
                             cl::cat(category));
static cl::opt<std::string>
    costTableOpt("cost-table",
                 cl::desc("Cost table JSON (per stage or per layer)"),
                 cl::value_desc("file.json"), cl::cat(category));
static cl::opt<double> uniformTimeOpt(
    "uniform-stage-time", cl::init(0),
    cl::desc("Built-in uniform table: F = B = W = this many seconds per "
             "stage (default 0.01 when no --cost-table)"),
    cl::cat(category));
static cl::opt<double> uniformActOpt(
    "uniform-activation-bytes", cl::init(1ull << 30),
    cl::desc("Uniform table only (an error with --cost-table or --model): "
             "activation bytes per microbatch and stage"),
    cl::cat(category));
static cl::opt<double>
    uniformWeightOpt("uniform-weight-bytes", cl::init(4ull << 30),
                     cl::desc("Uniform table only: weight bytes per stage"),
                     cl::cat(category));
static cl::opt<double> uniformBoundaryOpt(
    "uniform-boundary-bytes", cl::init(32ull << 20),
    cl::desc("Uniform table only: bytes sent between stages per microbatch"),
    cl::cat(category));
static cl::opt<std::string> modelOpt(
    "model",
    cl::desc("Model (.mlir, func + tosa/linalg): for every S, partition it "
             "with the cost model and the balanced partitioner (training: "
             "F, B, W) and use the stages' costs as the cost table"),
    cl::value_desc("file.mlir"), cl::cat(category));
static cl::opt<std::string> deviceOpt(
    "device", cl::init("h100"),
    cl::desc("--model only (an error without it): device preset of the "
             "cost model (h100, h200, a100, cpu)"),
    cl::cat(category));
static cl::opt<std::string> hardwareOpt(
    "hardware",
    cl::desc("--model only (an error without it): hardware JSON (device "
             "and topology; overrides --device), see docs/CostModel.md"),
    cl::value_desc("file.json"), cl::cat(category));
static cl::opt<double> optimizerFactorOpt(
    "optimizer-factor", cl::init(3.0),
    cl::desc("--model only (an error without it): extra bytes per weight "
             "byte in weight memory (gradients, optimizer state; finite, "
             "0 to 1e6; default 3 = fp32 Adam)"),
    cl::cat(category));
static cl::opt<int> dataParallelOpt(
    "data-parallel", cl::init(0),
    cl::desc("Data-parallel degree D for every system (>= 1; replicas of "
             "the pipeline all-reduce their weight gradients after the "
             "backward pass, lib/Simulate Collectives.h); default: each "
             "system's own \"data_parallel\" (1)"),
    cl::cat(category));
static cl::opt<int> devicesOpt(
    "devices", cl::init(0),
    cl::desc("Choose the split of this many devices N between data "
             "parallelism D and pipeline parallelism P (D x P = N, P every "
             "divisor of N) at a fixed global batch: --microbatches are the "
             "global microbatch counts, each replica runs M / D; memory per "
             "rank = weights + gradient sums + optimizer state (/ D with "
             "ZeRO-1) + peak activations (see README \"Device split\")"),
    cl::value_desc("N"), cl::cat(category));
static cl::list<int>
    zeroOpt("zero", cl::CommaSeparated,
            cl::desc("--devices only: ZeRO stages to consider, 0 (gradient "
                     "all-reduce) and/or 1 (optimizer state sharded over the "
                     "D replicas: reduce-scatter + all-gather); default 0,1"),
            cl::cat(category));
static cl::opt<std::string> optimizerOpt(
    "optimizer", cl::init("adamw"),
    cl::desc("--devices only: the runtime optimizer whose state is counted "
             "(state in double): sgd (0 B per parameter element), momentum "
             "(8 B), adamw (16 B; default)"),
    cl::cat(category));
static cl::opt<std::string> weightDtypeOpt(
    "weight-dtype", cl::init("f32"),
    cl::desc("--devices only: dtype of the parameters, which turns the cost "
             "table's parameter bytes into elements: f32 (default), bf16, "
             "f16, f64"),
    cl::cat(category));
enum class Format { Markdown, CSV, JSON };
static cl::opt<Format> formatOpt(
    "format", cl::init(Format::Markdown), cl::desc("Output format"),
    cl::values(clEnumValN(Format::Markdown, "markdown", "Markdown tables"),
               clEnumValN(Format::CSV, "csv", "one CSV row per level"),
               clEnumValN(Format::JSON, "json", "JSON document")),
    cl::cat(category));
static cl::opt<std::string> outputOpt("o", cl::init("-"),
                                      cl::desc("Output file (default stdout)"),
                                      cl::value_desc("file"),
                                      cl::cat(category));
static cl::opt<double>
    tieOpt("tie-tolerance", cl::init(1e-3),
           cl::desc("Relative makespan difference below which schedules tie"),
           cl::cat(category));
static cl::opt<std::string>
    traceOpt("trace",
             cl::desc("Write a Chrome/Perfetto trace of one configuration"),
             cl::value_desc("out.json"), cl::cat(category));
static cl::opt<std::string>
    svgOpt("svg", cl::desc("Write an SVG Gantt chart of one configuration"),
           cl::value_desc("out.svg"), cl::cat(category));
// The --trace-* selectors below are errors without --trace or --svg.
static cl::opt<std::string>
    traceScheduleOpt("trace-schedule",
                     cl::desc("Schedule for --trace/--svg (default: first)"),
                     cl::cat(category));
static cl::opt<int>
    traceStagesOpt("trace-stages", cl::init(0),
                   cl::desc("Ranks S for --trace/--svg (default: first)"),
                   cl::cat(category));
static cl::opt<int>
    traceMicrobatchesOpt("trace-microbatches", cl::init(0),
                         cl::desc("M for --trace/--svg (default: first)"),
                         cl::cat(category));
static cl::opt<std::string>
    traceSystemOpt("trace-system",
                   cl::desc("System for --trace/--svg (default: first)"),
                   cl::cat(category));
static cl::opt<Level> traceLevelOpt(
    "trace-level", cl::init(Level::Event),
    cl::desc("Timeline level for --trace/--svg"),
    cl::values(clEnumValN(Level::Table, "table", "idealized table"),
               clEnumValN(Level::Event, "event", "event simulation")),
    cl::cat(category));
// Default of --max-actions: the simulator holds roughly 150-180 bytes per
// action (the schedule table, the task graph and the event DAG; measured:
// 1f1b, S = 64, M = 52000, 2e7 actions, 3.0 GB peak RSS).
// A double so that 2e7 is accepted as well as 20000000; main() checks that
// it is a finite whole number >= 1.
static constexpr double kDefaultMaxActions = 2e7;
static constexpr double kMaxMaxActions = 1e18;
static cl::opt<double> maxActionsOpt(
    "max-actions", cl::init(kDefaultMaxActions),
    cl::desc("Skip configurations whose schedule would have more actions "
             "(compute F/B/W plus a send and a recv per transfer, estimated "
             "before building it) than this; the simulator needs roughly "
             "160 bytes per action (default 2e7: about 3 GB)"),
    cl::value_desc("n"), cl::cat(category));
static cl::opt<std::string> memoryLimitOpt(
    "memory-limit",
    cl::desc("Per-device memory limit (bytes; suffixes as in 80GiB, 80GB, "
             "8e9): configurations whose peak per-rank memory (event-level "
             "peak activations plus weights of one rank) exceeds it are "
             "removed from the rankings and the recommendation and listed; "
             "overrides the systems' memory_bytes (default: those; 0: no "
             "limit, as memory-limit=0 of pipe-auto-schedule and "
             "pipeopt-compile)"),
    cl::value_desc("bytes"), cl::cat(category));
static cl::opt<bool>
    timingOpt("time", cl::init(false),
              cl::desc("Print the sweep's wall time to stderr"),
              cl::cat(category));

namespace {

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", bytes / (1024.0 * 1024 * 1024));
  return buf;
}

std::string num(double v, const char *fmt = "%.6g") {
  char buf[48];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string join(const std::vector<std::string> &v, llvm::StringRef sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? sep.str() : "") + v[i];
  return out;
}

int fail(llvm::Error e) {
  llvm::WithColor::error(llvm::errs(), "pipeopt-explore")
      << llvm::toString(std::move(e)) << "\n";
  return 1;
}

/// The registry's rows pipeopt-explore compares by default
/// (ScheduleInfo::exploreByDefault), in registry order.
std::vector<std::string> defaultSchedules() {
  std::vector<std::string> names;
  for (const schedule::ScheduleInfo &i : schedule::listSchedules())
    if (i.exploreByDefault)
      names.push_back(i.name.str());
  return names;
}

/// The --devices mode: searches the D x P splits of `so.devices` devices
/// (searchSplits()), writes the report in --format and returns the exit
/// status: 1 when no divisor gives an evaluated pipeline or when a system
/// has no split under its memory limit (after writing the report).
int runDeviceSplit(const SplitOptions &so, const CostTableFor &tableFor,
                   const std::string &inputName, llvm::StringRef optimizerName,
                   llvm::StringRef dtypeName) {
  auto t0 = std::chrono::steady_clock::now();
  llvm::Expected<SplitSearch> found = searchSplits(so, tableFor);
  if (!found)
    return fail(found.takeError());
  const SplitSearch &search = *found;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  std::vector<std::string> splitNames;
  for (int P : search.pipelineRanks)
    splitNames.push_back(
        llvm::formatv("D={0} x P={1}", so.devices / P, P).str());
  std::vector<std::string> mNames;
  for (int m : so.globalMicrobatches)
    mNames.push_back(std::to_string(m));
  if (search.points.empty()) {
    std::string why;
    for (const std::string &s : search.skipped)
      why += "\n  " + s;
    return fail(llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("--devices={0}: no split gives a pipeline that can be "
                      "evaluated (splits {1}; schedules {2}; global "
                      "microbatches {3}):{4}",
                      so.devices, join(splitNames, ", "),
                      join(so.schedules, ","), join(mNames, ","), why)
            .str()));
  }
  if (!search.tooLarge.empty()) {
    llvm::WithColor::warning(llvm::errs(), "pipeopt-explore")
        << search.tooLarge.size()
        << " configuration(s) skipped as too large to simulate\n";
  }
  const std::vector<SplitRecommendation> recs =
      recommendSplits(search.points, tieOpt);
  const std::string memoryRule = llvm::formatv(
      "peak over the ranks of one replica of weights (the cost table's "
      "parameter bytes, {0}) + gradient sums (8 B per element, double) + "
      "{1} optimizer state ({2} B per element, double; / D with ZeRO-1) + "
      "the event level's peak activations of the in-flight microbatches",
      dtypeName, optimizerName,
      num(so.memory.optimizerStateElementBytes, "%g"));
  std::vector<std::string> systemNames;
  for (const machine::Machine &m : so.systems)
    systemNames.push_back(m.name);
  std::vector<std::string> zNames;
  for (int z : so.zeroStages)
    zNames.push_back(std::to_string(z));

  std::string out;
  llvm::raw_string_ostream os(out);
  if (formatOpt == Format::JSON) {
    llvm::json::Array configs, recArr, splitArr;
    for (const SplitPoint &p : search.points)
      configs.push_back(splitPointJSON(p));
    bool anyFits = false;
    for (const SplitRecommendation &r : recs) {
      anyFits |= r.best != nullptr;
      recArr.push_back(splitRecommendationJSON(r, tieOpt));
    }
    for (int P : search.pipelineRanks)
      splitArr.push_back(llvm::json::Object{{"data_parallel", so.devices / P},
                                            {"pipeline_ranks", P}});
    llvm::json::Object root{
        {"mode", "devices"},
        {"devices", so.devices},
        {"cost_table", inputName},
        {"schedules", llvm::json::Array(so.schedules)},
        {"systems", llvm::json::Array(systemNames)},
        {"splits", std::move(splitArr)},
        {"global_microbatches", llvm::json::Array(so.globalMicrobatches)},
        {"zero_stages", llvm::json::Array(so.zeroStages)},
        {"memory_model",
         llvm::json::Object{
             {"optimizer", optimizerName},
             {"weight_dtype", dtypeName},
             {"weight_element_bytes", so.memory.weightElementBytes},
             {"gradient_element_bytes", so.memory.gradientElementBytes},
             {"optimizer_state_element_bytes",
              so.memory.optimizerStateElementBytes},
             {"rule", memoryRule}}},
        {"configurations", std::move(configs)},
        {"recommendation",
         llvm::json::Object{{"level", "event"},
                            {"metric", "seconds_per_microbatch"},
                            {"any_fits", anyFits},
                            {"systems", std::move(recArr)}}},
        {"skipped", llvm::json::Array(search.skipped)},
        {"sweep_seconds", elapsed}};
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  } else if (formatOpt == Format::CSV) {
    os << "data_parallel,pipeline_ranks,schedule,virtual_stages,"
          "global_microbatches,replica_microbatches,zero_stage,system,step_s,"
          "seconds_per_microbatch,allreduce_s,peak_memory_bytes,peak_rank,"
          "weights_bytes,gradients_bytes,optimizer_state_bytes,"
          "activations_bytes,memory_limit_bytes,fits\n";
    for (const SplitPoint &p : search.points)
      os << p.dataParallel << "," << p.pipelineRanks() << ","
         << p.point.schedule << "," << p.point.virtualStages() << ","
         << p.globalMicrobatches << "," << p.point.microbatches << ","
         << p.zeroStage << "," << p.point.system << ","
         << num(p.stepSec(), "%.9g") << ","
         << num(p.secondsPerMicrobatch(), "%.9g") << ","
         << num(p.point.eval.event.allReduceSec, "%.9g") << ","
         << num(p.peak.total(), "%.0f") << "," << p.peak.rank << ","
         << num(p.peak.weightBytes, "%.0f") << ","
         << num(p.peak.gradientBytes, "%.0f") << ","
         << num(p.peak.optimizerStateBytes, "%.0f") << ","
         << num(p.peak.activationBytes, "%.0f") << ","
         << num(p.point.memoryLimitBytes, "%.0f") << ","
         << (p.overMemory() ? 0 : 1) << "\n";
    for (const SplitRecommendation &r : recs)
      llvm::errs() << "pipeopt-explore: " << splitRecommendationLine(r, tieOpt)
                   << "\n";
  } else {
    os << "# pipeopt-explore: D x P split of " << so.devices << " devices\n\n";
    os << "- input: " << inputName << "\n";
    os << "- splits: " << join(splitNames, ", ") << "\n";
    os << "- global batch: M microbatches of the cost table's microbatch "
          "size per step, M in {"
       << join(mNames, ", ") << "}; each of the D replicas runs M / D\n";
    os << "- ZeRO stages: " << join(zNames, ", ") << "\n";
    os << "- schedules: " << join(so.schedules, ", ") << "\n";
    os << "- systems: " << join(systemNames, ", ") << "\n";
    os << "- memory per device: " << memoryRule << "\n";
    os << llvm::formatv("- search: {0} evaluations in {1} s\n\n",
                        search.points.size(), num(elapsed, "%.3f"));
    os << "## Configurations\n\n";
    os << "Event level. Step = one training step of the global batch "
          "(s); memory of the peak rank in GiB: weights / gradient sums / "
          "optimizer state / activations.\n\n";
    os << "| D | P | schedule | M (per replica) | ZeRO | system | step s | ms "
          "per microbatch | all-reduce s | peak GiB (rank) | W / G / O / A "
          "GiB | fits |\n";
    os << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const SplitPoint &p : search.points)
      os << "| " << p.dataParallel << " | " << p.pipelineRanks() << " | "
         << p.point.schedule << " | " << p.globalMicrobatches << " ("
         << p.point.microbatches << ") | " << p.zeroStage << " | "
         << p.point.system << " | " << num(p.stepSec(), "%.4g") << " | "
         << num(p.secondsPerMicrobatch() * 1e3, "%.4g") << " | "
         << num(p.point.eval.event.allReduceSec, "%.4g") << " | "
         << gib(p.peak.total()) << " (" << p.peak.rank << ") | "
         << gib(p.peak.weightBytes) << " / " << gib(p.peak.gradientBytes)
         << " / " << gib(p.peak.optimizerStateBytes) << " / "
         << gib(p.peak.activationBytes) << " | "
         << (p.overMemory() ? "over " + formatGiB(p.point.memoryLimitBytes)
                            : std::string("yes"))
         << " |\n";
    os << "\n## Splits\n\n";
    os << "| system | split | evaluated | over memory | best fitting | step "
          "s | least memory GiB |\n";
    os << "|---|---|---|---|---|---|---|\n";
    for (const SplitRecommendation &r : recs)
      for (const SplitStatus &s : r.splits)
        os << "| " << r.system << " | D=" << s.dataParallel
           << " x P=" << s.pipelineRanks << " | " << s.evaluated << " | "
           << s.overMemory << " | "
           << (s.best ? describeSplitPoint(*s.best) : std::string("none"))
           << " | " << (s.best ? num(s.best->stepSec(), "%.4g") : "-") << " | "
           << (s.smallest ? gib(s.smallest->peak.total()) : "-") << " |\n";
    os << "\n## Recommendation\n\n";
    for (const SplitRecommendation &r : recs)
      os << "- " << splitRecommendationLine(r, tieOpt) << "\n";
    if (!search.skipped.empty()) {
      os << "\n## Skipped\n\n";
      for (const std::string &s : search.skipped)
        os << "- " << s << "\n";
    }
  }
  if (llvm::Error e = writeTextFile(outputOpt, out))
    return fail(std::move(e));
  if (timingOpt)
    llvm::errs() << llvm::formatv("pipeopt-explore: {0} evaluations in {1} s\n",
                                  search.points.size(), num(elapsed, "%.3f"));
  std::vector<std::string> none;
  for (const SplitRecommendation &r : recs)
    if (!r.best)
      none.push_back(splitRecommendationLine(r, tieOpt));
  if (!none.empty()) {
    std::vector<std::string> hints = {"more devices",
                                      "a larger --memory-limit"};
    if (!llvm::is_contained(so.zeroStages, 1))
      hints.push_back("ZeRO-1 (--zero=0,1)");
    if (so.memory.optimizerStateElementBytes > 0)
      hints.push_back("an optimizer with less state (--optimizer)");
    return fail(llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        join(none, "\n") + "\n(what would help: " + join(hints, ", ") + ")"));
  }
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  static const std::string schedulesHelp =
      "Schedules to compare (comma-separated names or aliases of the "
      "schedule registry: " +
      schedule::scheduleNames(",") +
      "; 'all' for every one that is not forward-only). Default: " +
      llvm::join(defaultSchedules(), ",");
  schedulesOpt.setDescription(schedulesHelp);
  if (!pipeopt::rejectHelpTypos(argc, argv, "pipeopt-explore"))
    return 1;
  if (!pipeopt::rejectEmptyValues(argc, argv, "pipeopt-explore", {"hardware"}))
    return 1;
  cl::ParseCommandLineOptions(
      argc, argv,
      "pipeopt-explore: compare pipeline schedules at three abstraction "
      "levels (formula, idealized table, communication-aware event "
      "simulation) and report where their rankings flip\n");

  // --- Option values --------------------------------------------------------
  auto bad = [&](const llvm::Twine &msg) {
    return fail(llvm::createStringError(llvm::inconvertibleErrorCode(), msg));
  };
  auto finiteNonNeg = [](double v) { return std::isfinite(v) && v >= 0.0; };
  if (!finiteNonNeg(tieOpt))
    return bad("--tie-tolerance must be a finite number >= 0, got " +
               llvm::formatv("{0}", tieOpt.getValue()).str());
  if (uniformTimeOpt.getNumOccurrences() &&
      !(std::isfinite(uniformTimeOpt) && uniformTimeOpt > 0.0))
    return bad("--uniform-stage-time must be a finite number of seconds > 0, "
               "got " +
               llvm::formatv("{0}", uniformTimeOpt.getValue()).str());
  for (const cl::opt<double> *o :
       {&uniformActOpt, &uniformWeightOpt, &uniformBoundaryOpt})
    if (!finiteNonNeg(*o))
      return bad("--" + o->ArgStr + " must be a finite number of bytes >= 0");
  // The ranges of pipe-schedule's virtual-stages and waves options
  // (schedule::kMaxPipelineCount).
  if (virtualStagesOpt < 0 || virtualStagesOpt > kMaxPipelineCount)
    return bad("--virtual-stages must be between 0 and " +
               llvm::Twine(kMaxPipelineCount) + " (0: schedule default), got " +
               llvm::Twine(virtualStagesOpt.getValue()));
  if (wavesOpt < 1 || wavesOpt > kMaxPipelineCount)
    return bad("--waves must be between 1 and " +
               llvm::Twine(kMaxPipelineCount) + ", got " +
               llvm::Twine(wavesOpt.getValue()));
  if (!(std::isfinite(maxActionsOpt) && maxActionsOpt >= 1 &&
        maxActionsOpt <= kMaxMaxActions &&
        maxActionsOpt == std::floor(maxActionsOpt)))
    return bad("--max-actions must be a finite whole number >= 1 (at most "
               "1e18; 2e7 and 20000000 are the same), got " +
               num(maxActionsOpt, "%.15g"));
  const uint64_t maxActions = static_cast<uint64_t>(maxActionsOpt.getValue());
  double memoryLimit = 0;
  // --memory-limit=0: no limit (the systems' memory_bytes are dropped too).
  bool noMemoryLimit = false;
  if (memoryLimitOpt.getNumOccurrences()) {
    llvm::Expected<double> bytes = machine::parseByteSize(memoryLimitOpt);
    if (!bytes)
      return bad("--memory-limit: " + llvm::toString(bytes.takeError()));
    memoryLimit = *bytes;
    noMemoryLimit = memoryLimit == 0;
  }

  // Options of one input kind are errors with another, not ignored
  // silently. Their values are checked first, whatever the input.
  if (!std::isfinite(optimizerFactorOpt) || optimizerFactorOpt < 0 ||
      optimizerFactorOpt > 1e6)
    return bad("--optimizer-factor must be a finite number between 0 and "
               "1e6, got " +
               num(optimizerFactorOpt, "%g"));
  if (llvm::Expected<machine::Machine> preset =
          machine::getDevicePreset(deviceOpt);
      !preset)
    return fail(preset.takeError());
  if (hardwareOpt.getNumOccurrences() && hardwareOpt.empty())
    return bad("--hardware: expected a hardware JSON file");
  if (modelOpt.empty())
    for (const cl::Option *o : std::initializer_list<const cl::Option *>{
             &deviceOpt, &hardwareOpt, &optimizerFactorOpt})
      if (o->getNumOccurrences())
        return bad("--" + o->ArgStr +
                   " applies only with --model (it configures the cost model "
                   "that partitions the model; a --cost-table or the uniform "
                   "table already gives seconds and bytes per stage)");
  if (!modelOpt.empty() || !costTableOpt.empty())
    for (const cl::Option *o : std::initializer_list<const cl::Option *>{
             &uniformActOpt, &uniformWeightOpt, &uniformBoundaryOpt})
      if (o->getNumOccurrences())
        return bad("--" + o->ArgStr +
                   " applies only to the built-in uniform table (without "
                   "--model and --cost-table)");
  if (traceOpt.empty() && svgOpt.empty())
    for (const cl::Option *o : std::initializer_list<const cl::Option *>{
             &traceScheduleOpt, &traceStagesOpt, &traceMicrobatchesOpt,
             &traceSystemOpt, &traceLevelOpt})
      if (o->getNumOccurrences())
        return bad("--" + o->ArgStr +
                   " selects the configuration of --trace / --svg; give one "
                   "of them");

  // --- --devices: the D x P split ----------------------------------------
  const bool deviceSplit = devicesOpt.getNumOccurrences() > 0;
  std::vector<int> zeroStages(zeroOpt.begin(), zeroOpt.end());
  double weightElementBytes = 4;
  OptimizerKind optimizerKind = OptimizerKind::AdamW;
  if (deviceSplit) {
    if (devicesOpt < 1 || devicesOpt > (1 << 20))
      return bad(llvm::formatv("--devices must be in [1, 1048576] (the "
                               "device count N to split into D x P), got {0}",
                               devicesOpt.getValue())
                     .str());
    const cl::Option *const conflicts[] = {
        std::addressof(ranksOpt), std::addressof(stagesOpt), &dataParallelOpt,
        &traceOpt, &svgOpt};
    for (const cl::Option *o : conflicts)
      if (o->getNumOccurrences())
        return bad("--" + o->ArgStr +
                   " cannot be combined with --devices (--devices chooses "
                   "the ranks P and the data-parallel degree D itself; "
                   "--trace and --svg need a single configuration: run "
                   "without --devices with --ranks=P --data-parallel=D)");
    if (optimizerFactorOpt.getNumOccurrences())
      return bad("--optimizer-factor does not apply with --devices: its "
                 "memory model counts the gradient sums and the optimizer "
                 "state itself from --optimizer and --weight-dtype");
    if (modelOpt.empty() && costTableOpt.empty())
      return bad("--devices needs --cost-table or --model: it compares "
                 "pipelines of different depth on one model, and the "
                 "built-in uniform table grows with the rank count");
    if (zeroStages.empty())
      zeroStages = {0, 1};
    std::set<int> seen;
    for (int z : zeroStages) {
      if (z != 0 && z != 1)
        return bad("--zero: ZeRO stage " + llvm::Twine(z) +
                   " is not modeled (give 0, 1 or 0,1)");
      if (!seen.insert(z).second)
        return bad("--zero: " + llvm::Twine(z) +
                   " is given twice (each value may appear once)");
    }
    llvm::Expected<OptimizerKind> k = parseOptimizerKind(optimizerOpt);
    if (!k)
      return bad("--optimizer: " + llvm::toString(k.takeError()));
    optimizerKind = *k;
    std::string dt = llvm::StringRef(weightDtypeOpt).lower();
    if (dt == "f32" || dt == "fp32")
      weightElementBytes = 4;
    else if (dt == "bf16" || dt == "f16" || dt == "fp16")
      weightElementBytes = 2;
    else if (dt == "f64" || dt == "fp64")
      weightElementBytes = 8;
    else
      return bad("--weight-dtype: unknown dtype '" + weightDtypeOpt +
                 "' (expected f32, bf16, f16 or f64)");
  } else {
    const cl::Option *const splitOnly[] = {std::addressof(zeroOpt),
                                           &optimizerOpt, &weightDtypeOpt};
    for (const cl::Option *o : splitOnly)
      if (o->getNumOccurrences())
        return bad("--" + o->ArgStr +
                   " applies only with --devices (the D x P split search)");
  }

  // --- Inputs ---------------------------------------------------------------
  std::vector<std::string> schedules(schedulesOpt.begin(), schedulesOpt.end());
  if (schedules.empty())
    schedules = defaultSchedules();
  if (schedules.size() == 1 && schedules[0] == "all") {
    schedules.clear();
    for (const schedule::ScheduleInfo &i : schedule::listSchedules())
      if (!i.forwardOnly)
        schedules.push_back(i.name.str());
  }
  // Points are grouped by (S, M, system) and ranked by schedule: a value
  // given twice would be evaluated twice and ranked against itself.
  {
    std::set<std::string> seen;
    for (const std::string &name : schedules)
      if (!seen.insert(name).second)
        return bad("--schedules: schedule '" + name +
                   "' is given twice (each schedule may appear once)");
  }
  // Aliases name their row's schedule (rows, traces and rankings use the
  // canonical name).
  {
    std::map<std::string, std::string> givenAs; // canonical -> as given
    for (std::string &name : schedules) {
      llvm::Expected<const schedule::ScheduleInfo &> row =
          schedule::lookupSchedule(name);
      if (!row)
        return fail(row.takeError());
      auto [it, inserted] = givenAs.emplace(row->name.str(), name);
      if (!inserted)
        return bad("--schedules: '" + it->second + "' and '" + name +
                   "' name the same schedule '" + it->first +
                   "' (each schedule may appear once)");
      name = row->name.str();
    }
  }
  // The spelling the user gave, for messages.
  if (ranksOpt.getNumOccurrences() && stagesOpt.getNumOccurrences())
    return bad("give --ranks or its alias --stages, not both");
  const std::string ranksFlag =
      stagesOpt.getNumOccurrences() ? "--stages" : "--ranks";
  std::vector<int> stages(ranksOpt.begin(), ranksOpt.end());
  stages.insert(stages.end(), stagesOpt.begin(), stagesOpt.end());
  if (stages.empty())
    stages = {4, 8};
  std::vector<int> microbatches(microbatchesOpt.begin(), microbatchesOpt.end());
  if (microbatches.empty())
    microbatches = {8, 16, 32, 64};
  for (auto [opt, values] : {std::make_pair(ranksFlag.c_str(), &stages),
                             std::make_pair("--microbatches", &microbatches)}) {
    std::set<int> seen;
    for (int v : *values)
      if (!seen.insert(v).second)
        return bad(llvm::Twine(opt) + ": " + llvm::Twine(v) +
                   " is given twice (each value may appear once)");
  }
  for (int v : stages)
    if (v < 1 || v > 1024)
      return bad(ranksFlag + " must be in [1, 1024]");
  for (int v : microbatches)
    if (v < 1 || v > 100000)
      return fail(
          llvm::createStringError(llvm::inconvertibleErrorCode(),
                                  "--microbatches must be in [1, 100000]"));

  std::vector<machine::Machine> systems;
  std::vector<std::string> systemItems(systemsOpt.begin(), systemsOpt.end());
  if (systemItems.empty())
    systemItems = {"grid"};
  // Where each system came from ("grid", a preset name or a JSON file), to
  // name both sources of a duplicate: points are grouped and ranked by
  // system name, so two systems of one name would be ranked as one.
  std::map<std::string, std::string> systemSource;
  for (const std::string &item : systemItems) {
    size_t first = systems.size();
    llvm::Expected<std::vector<machine::Machine>> loaded =
        machine::loadSystems(item);
    if (!loaded)
      return fail(loaded.takeError());
    systems.insert(systems.end(), loaded->begin(), loaded->end());
    for (size_t i = first; i < systems.size(); ++i) {
      auto [it, inserted] = systemSource.emplace(systems[i].name, item);
      if (!inserted)
        return bad("--systems: two systems are named '" + systems[i].name +
                   "' (from '" + it->second + "' and '" + item +
                   "'); system names must be unique");
    }
  }

  if (noMemoryLimit)
    for (machine::Machine &s : systems)
      s.simulation.memoryLimitBytes = 0;

  if (dataParallelOpt.getNumOccurrences()) {
    if (dataParallelOpt < 1 || dataParallelOpt > (1 << 20))
      return bad(llvm::formatv("--data-parallel must be in [1, 1048576], "
                               "got {0}",
                               dataParallelOpt.getValue())
                     .str());
    for (machine::Machine &s : systems)
      s.simulation.dataParallel = dataParallelOpt;
  }

  CostTable costs;
  std::optional<ModelCostTables> model;
  if (!modelOpt.empty()) {
    if (!costTableOpt.empty() || uniformTimeOpt > 0)
      return fail(llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "give only one of --model, --cost-table and --uniform-stage-time"));
    mlir::DialectRegistry registry;
    registerAllDialects(registry);
    llvm::Expected<ModelCostTables> loaded = ModelCostTables::load(
        modelOpt, deviceOpt, hardwareOpt, optimizerFactorOpt, registry);
    if (!loaded)
      return fail(loaded.takeError());
    model.emplace(std::move(*loaded));
    costs.name = model->name;
  } else if (!costTableOpt.empty()) {
    if (uniformTimeOpt > 0)
      return fail(llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "give either --cost-table or --uniform-stage-time"));
    llvm::Expected<CostTable> t = loadCostTable(costTableOpt);
    if (!t)
      return fail(t.takeError());
    costs = std::move(*t);
  } else {
    double t = uniformTimeOpt > 0 ? uniformTimeOpt : 0.01;
    // One entry; resample() spreads it over any stage count, so give the
    // per-stage numbers for S = 1 and rescale per sweep point below.
    costs = CostTable::uniform(1, t, uniformActOpt, uniformWeightOpt,
                               uniformBoundaryOpt);
    costs.name = llvm::formatv("uniform (F=B=W={0} s per stage)", num(t)).str();
  }
  const bool uniform = costTableOpt.empty() && !model;

  // --- Sweep -----------------------------------------------------------------
  auto t0 = std::chrono::steady_clock::now();
  std::optional<Timeline> traceTimeline;
  std::string traceTitle;
  // An alias in --trace-schedule names its row's schedule too.
  const schedule::ScheduleInfo *traceRow =
      schedule::findSchedule(traceScheduleOpt);
  const std::string traceSched = traceScheduleOpt.empty() ? schedules.front()
                                 : traceRow               ? traceRow->name.str()
                                                          : traceScheduleOpt;
  const int traceS = traceStagesOpt ? traceStagesOpt : stages.front();
  const int traceM =
      traceMicrobatchesOpt ? traceMicrobatchesOpt : microbatches.front();
  const std::string traceSys =
      traceSystemOpt.empty() ? systems.front().name : traceSystemOpt;
  const bool wantTimeline = !traceOpt.empty() || !svgOpt.empty();

  SweepOptions sweepOpts;
  sweepOpts.schedules = schedules;
  sweepOpts.stages = stages;
  sweepOpts.microbatches = microbatches;
  sweepOpts.systems = systems;
  sweepOpts.virtualStages = virtualStagesOpt;
  sweepOpts.waves = wavesOpt;
  sweepOpts.maxActions = maxActions;
  sweepOpts.memoryLimitBytes = memoryLimit;
  auto tableFor =
      [&](const schedule::Schedule &sched) -> llvm::Expected<CostTable> {
    if (model) {
      // The model partitioned into this schedule's model stages.
      llvm::Expected<const CostTable *> t = model->get(sched.numStages);
      if (!t)
        return t.takeError();
      return **t;
    }
    if (!uniform)
      return costs;
    // The uniform table is per stage of an S-stage pipeline: a model
    // stage of an S*v-stage schedule gets 1/v of it.
    CostTable table = costs;
    StageCost &c = table.stages[0];
    double scale = sched.numRanks; // total model = S stages' worth
    c.forwardSec *= scale;
    c.backwardInputSec *= scale;
    c.backwardWeightSec *= scale;
    c.activationBytes *= scale;
    c.weightBytes *= scale;
    table = table.resample(sched.numStages);
    table.name = costs.name;
    return table;
  };
  if (deviceSplit) {
    SplitOptions so;
    so.devices = devicesOpt;
    so.schedules = schedules;
    so.globalMicrobatches = microbatches;
    so.zeroStages = zeroStages;
    so.systems = systems;
    so.virtualStages = virtualStagesOpt;
    so.waves = wavesOpt;
    so.maxActions = maxActions;
    so.memoryLimitBytes = memoryLimit;
    so.memory.weightElementBytes = weightElementBytes;
    so.memory.optimizerStateElementBytes =
        optimizerStateBytesPerElement(optimizerKind);
    // A pipeline stage holds whole entries of a cost table: P x v model
    // stages need at least as many entries (a layer is not split between
    // devices). --model partitions the graph itself.
    auto splitTableFor =
        [&](const schedule::Schedule &sched) -> llvm::Expected<CostTable> {
      if (!model && sched.numStages > costs.size())
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            llvm::formatv("{0} model stages, but the cost table has {1} "
                          "entr{2}; a stage cannot hold part of an entry",
                          sched.numStages, costs.size(),
                          costs.size() == 1 ? "y" : "ies")
                .str());
      return tableFor(sched);
    };
    return runDeviceSplit(so, splitTableFor, costs.name,
                          optimizerKindName(optimizerKind),
                          llvm::StringRef(weightDtypeOpt).lower());
  }
  auto traceHook = [&](const ExplorePoint &p, const schedule::Schedule &sched,
                       const CostTable &table,
                       const machine::Machine &sys) -> llvm::Error {
    if (!wantTimeline || traceTimeline || p.schedule != traceSched ||
        p.stages != traceS || p.microbatches != traceM || sys.name != traceSys)
      return llvm::Error::success();
    Timeline tl;
    llvm::Expected<Metrics> m = traceLevelOpt == Level::Table
                                    ? simulateTable(sched, table, sys, &tl)
                                    : simulateEvents(sched, table, sys, &tl);
    if (!m)
      return m.takeError();
    traceTimeline = std::move(tl);
    traceTitle =
        llvm::formatv("{0}, S={1}, M={2}, {3}, {4} level", p.schedule, p.stages,
                      p.microbatches, sys.name, levelName(traceLevelOpt))
            .str();
    return llvm::Error::success();
  };
  llvm::Expected<SweepResult> swept = sweep(sweepOpts, tableFor, traceHook);
  if (!swept)
    return fail(swept.takeError());
  const std::vector<ExplorePoint> &points = swept->points;
  const std::vector<std::string> &skipped = swept->skipped;
  const std::vector<std::string> &tooLarge = swept->tooLarge;
  if (points.empty()) {
    std::string why;
    for (const std::string &s : skipped)
      why += "\n  " + s;
    return bad(tooLarge.size() == skipped.size()
                   ? "every configuration is too large to simulate "
                     "(--max-actions=" +
                         std::to_string(maxActions) + "):" + why
                   : "no configuration could be evaluated:" + why);
  }
  if (!tooLarge.empty()) {
    // Visible in every format (CSV has no "Skipped" section).
    llvm::WithColor::warning(llvm::errs(), "pipeopt-explore")
        << tooLarge.size()
        << " configuration(s) skipped as too large to simulate (listed "
           "under \"Skipped\" in markdown and JSON):\n";
    for (size_t i = 0; i < tooLarge.size() && i < 10; ++i)
      llvm::errs() << "  " << tooLarge[i] << "\n";
    if (tooLarge.size() > 10)
      llvm::errs() << "  ... and " << tooLarge.size() - 10 << " more\n";
  }

  // --- Rankings and flips ----------------------------------------------------
  const Ranking ranking = rankPoints(points, tieOpt);
  const auto &groups = ranking.groups;
  const auto &rankOf = ranking.rankOf;
  const auto &bestOf = ranking.bestOf;
  const std::vector<Flip> &flips = ranking.flips;
  const std::vector<Recommendation> recommendations = recommend(points);
  const std::string removedLine = memoryRemovedLine(ranking);
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();

  // --- Output ----------------------------------------------------------------
  std::string out;
  llvm::raw_string_ostream os(out);
  std::vector<std::string> systemNames;
  for (const machine::Machine &s : systems)
    systemNames.push_back(s.name);

  if (formatOpt == Format::JSON) {
    llvm::json::Array rows;
    for (const ExplorePoint &p : points)
      for (int l = 0; l < 3; ++l) {
        llvm::json::Object row = rowJSON(
            {p.schedule, p.stages, p.modelStages, p.microbatches, p.system},
            kExploreLevels[l], p.eval.at(kExploreLevels[l]));
        row["rank"] = rankOf.at(&p)[l];
        rows.push_back(std::move(row));
      }
    llvm::json::Array rankings;
    for (auto &[g, best] : bestOf) {
      llvm::json::Object r{{"stages", g.stages},
                           {"microbatches", g.microbatches},
                           {"system", g.system}};
      for (int l = 0; l < 3; ++l) {
        llvm::json::Array order;
        std::vector<const ExplorePoint *> pts = groups.at(g);
        std::stable_sort(pts.begin(), pts.end(),
                         [&](const ExplorePoint *x, const ExplorePoint *y) {
                           return x->eval.at(kExploreLevels[l]).makespanSec <
                                  y->eval.at(kExploreLevels[l]).makespanSec;
                         });
        for (const ExplorePoint *p : pts)
          if (p->eval.at(kExploreLevels[l]).available)
            order.push_back(p->schedule);
        r[levelName(kExploreLevels[l]).str()] = std::move(order);
      }
      rankings.push_back(std::move(r));
    }
    llvm::json::Array flipArr;
    for (const Flip &f : flips)
      flipArr.push_back(
          llvm::json::Object{{"stages", f.group.stages},
                             {"microbatches", f.group.microbatches},
                             {"system", f.group.system},
                             {"level_a", levelName(f.a).str()},
                             {"level_b", levelName(f.b).str()},
                             {"best_a", llvm::json::Array(f.bestA)},
                             {"best_b", llvm::json::Array(f.bestB)},
                             {"best_a_makespan_at_a_s", f.bestAAtA},
                             {"best_a_makespan_at_b_s", f.bestAAtB},
                             {"best_b_makespan_at_a_s", f.bestBAtA},
                             {"best_b_makespan_at_b_s", f.bestBAtB},
                             {"discordant_pairs", f.discordantPairs},
                             {"compared_pairs", f.comparablePairs}});
    llvm::json::Array partitions;
    if (model)
      for (auto &[n, t] : model->tables()) {
        const partition::Report &rep = model->reports().at(n);
        llvm::json::Array st;
        for (const StageCost &c : t.stages)
          st.push_back(stageCostJSON(c));
        partitions.push_back(
            llvm::json::Object{{"model_stages", n},
                               {"bottleneck_s", rep.bottleneckSeconds},
                               {"lower_bound_s", rep.lowerBoundSeconds},
                               {"imbalance", rep.imbalance},
                               {"stages", std::move(st)}});
      }
    llvm::json::Array removed;
    for (const ExplorePoint *p : ranking.overMemory)
      removed.push_back(
          llvm::json::Object{{"schedule", p->schedule},
                             {"stages", p->stages},
                             {"microbatches", p->microbatches},
                             {"virtual_stages", p->virtualStages()},
                             {"system", p->system},
                             {"peak_memory_bytes", p->peakMemoryBytes},
                             {"memory_limit_bytes", p->memoryLimitBytes}});
    // The limit each system ran under: --memory-limit, else the system's
    // memory_bytes (null: no limit). limit_bytes is that limit when every
    // system shares one, else null (see per_system).
    llvm::json::Object perSystemLimit;
    std::optional<double> commonLimit;
    bool oneLimit = true;
    for (const machine::Machine &sc : systems) {
      double l = memoryLimit > 0 ? memoryLimit : sc.memoryLimitBytes();
      perSystemLimit[sc.name] =
          l > 0 ? llvm::json::Value(l) : llvm::json::Value(nullptr);
      if (!commonLimit)
        commonLimit = l;
      else
        oneLimit &= *commonLimit == l;
    }
    const double limitAll = oneLimit && commonLimit ? *commonLimit : 0;
    llvm::json::Object memory{
        {"limit_bytes", limitAll > 0 ? llvm::json::Value(limitAll)
                                     : llvm::json::Value(nullptr)},
        {"per_system", std::move(perSystemLimit)},
        {"removed_count", static_cast<int64_t>(ranking.overMemory.size())},
        {"removed", std::move(removed)},
        {"summary", removedLine}};
    llvm::json::Array perSystem;
    bool anyFits = false;
    for (const Recommendation &r : recommendations) {
      anyFits |= r.best != nullptr;
      llvm::json::Object o = recommendationJSON(r);
      o["line"] = recommendationLine(r, tieOpt);
      perSystem.push_back(std::move(o));
    }
    llvm::json::Object recommendation{{"level", "event"},
                                      {"metric", "seconds_per_microbatch"},
                                      {"any_fits", anyFits},
                                      {"systems", std::move(perSystem)}};
    llvm::json::Object root{{"cost_table", costs.name},
                            {"model_partitions", std::move(partitions)},
                            {"schedules", llvm::json::Array(schedules)},
                            {"systems", llvm::json::Array(systemNames)},
                            {"rows", std::move(rows)},
                            {"rankings", std::move(rankings)},
                            {"flips", std::move(flipArr)},
                            {"skipped", llvm::json::Array(skipped)},
                            {"memory_limit", std::move(memory)},
                            {"recommendation", std::move(recommendation)},
                            {"sweep_seconds", elapsed}};
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  } else if (formatOpt == Format::CSV) {
    writeRowsCSV(os, points, ranking);
    // The CSV stays one table: the memory limit's removals and the
    // recommendation go to stderr.
    if (!removedLine.empty())
      llvm::errs() << "pipeopt-explore: " << removedLine << "\n";
    for (const Recommendation &r : recommendations)
      llvm::errs() << "pipeopt-explore: " << recommendationLine(r, tieOpt)
                   << "\n";
  } else {
    os << "# pipeopt-explore\n\n";
    if (model)
      os << "- model: " << costs.name
         << "; one cost table per model stage count (see \"Model "
            "partitions\")\n";
    else
      os << "- cost table: " << costs.name << " (" << costs.size()
         << " entries)\n";
    os << "- schedules: " << join(schedules, ", ") << "\n";
    os << "- systems: " << join(systemNames, ", ") << "\n";
    os << "- levels: formula (closed forms; n/a without one), table "
          "(idealized table, free communication), event (alpha-beta links, "
          "NIC contention)\n";
    os << llvm::formatv("- sweep: {0} evaluations in {1} s\n\n", points.size(),
                        num(elapsed, "%.3f"));

    if (model) {
      os << "## Model partitions\n\n";
      os << "Balanced training partition (F + B + W and transfers) of @"
         << model->functionName
         << " per model stage count; per stage F / B / W in ms per "
            "microbatch, activations and weights (x (1 + optimizer "
            "factor)) in GiB, boundary (bytes sent on) in MiB.\n\n";
      os << "| model stages | bottleneck ms | lower bound ms | imbalance | "
            "F ms | B ms | W ms | activations GiB | weights GiB | boundary "
            "MiB |\n";
      os << "|---|---|---|---|---|---|---|---|---|---|\n";
      for (auto &[n, t] : model->tables()) {
        const partition::Report &rep = model->reports().at(n);
        auto col = [&](auto get, double scale, const char *f) {
          std::vector<std::string> v;
          for (const StageCost &c : t.stages)
            v.push_back(num(get(c) * scale, f));
          return join(v, " / ");
        };
        os << "| " << n << " | " << num(rep.bottleneckSeconds * 1e3, "%.3f")
           << " | " << num(rep.lowerBoundSeconds * 1e3, "%.3f") << " | "
           << num(rep.imbalance, "%.3f") << " | "
           << col([](const StageCost &c) { return c.forwardSec; }, 1e3, "%.3g")
           << " | "
           << col([](const StageCost &c) { return c.backwardInputSec; }, 1e3,
                  "%.3g")
           << " | "
           << col([](const StageCost &c) { return c.backwardWeightSec; }, 1e3,
                  "%.3g")
           << " | "
           << col([](const StageCost &c) { return c.activationBytes; },
                  1.0 / (1 << 30), "%.3g")
           << " | "
           << col([](const StageCost &c) { return c.weightBytes; },
                  1.0 / (1 << 30), "%.3g")
           << " | "
           << col([](const StageCost &c) { return c.boundaryBytes; },
                  1.0 / (1 << 20), "%.3g")
           << " |\n";
      }
      os << "\n";
    }
    os << "## Metrics\n\n";
    os << "Makespan in seconds with the rank among the schedules of the same "
          "(S, M, system) in brackets; bubble ratio overall; memory is the "
          "largest rank's (GiB); staleness = max / mean delay in block "
          "updates (async only; * = M < 2S + 1, no steady state, all "
          "microbatches counted).\n\n";
    os << "| S | M | system | schedule | formula | table | event | bubble "
          "F / T / E | peak act GiB (F / T) | weights GiB | comm GiB | "
          "staleness |\n";
    os << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (auto &[g, pts] : groups)
      for (const ExplorePoint *p : pts) {
        auto cell = [&](int l) -> std::string {
          const Metrics &m = p->eval.at(kExploreLevels[l]);
          if (!m.available)
            return "n/a";
          return num(m.makespanSec, "%.4g") + " (" +
                 std::to_string(rankOf.at(p)[l]) + ")";
        };
        auto bub = [&](int l) -> std::string {
          const Metrics &m = p->eval.at(kExploreLevels[l]);
          return m.available ? num(m.bubbleRatio, "%.3f") : "n/a";
        };
        const Metrics &f = p->eval.formula, &t = p->eval.table;
        std::string stale = "-";
        if (t.staleness)
          stale = std::to_string(t.staleness->maxDelay) + " / " +
                  num(t.staleness->meanDelay, "%.1f") +
                  (t.staleness->steadyState ? "" : " *");
        os << "| " << g.stages << " | " << g.microbatches << " | " << g.system
           << " | " << p->schedule << " | " << cell(0) << " | " << cell(1)
           << " | " << cell(2) << " | " << bub(0) << " / " << bub(1) << " / "
           << bub(2) << " | "
           << (f.available ? gib(f.maxPeakActivationBytes()) : "n/a") << " / "
           << gib(t.maxPeakActivationBytes()) << " | "
           << gib(t.maxWeightBytes()) << " | " << gib(t.commBytes) << " | "
           << stale << " |\n";
      }

    os << "\n## Best schedule per level\n\n";
    os << "| S | M | system | formula | table | event |\n";
    os << "|---|---|---|---|---|---|\n";
    for (auto &[g, best] : bestOf)
      os << "| " << g.stages << " | " << g.microbatches << " | " << g.system
         << " | " << (best[0].empty() ? "n/a" : join(best[0], ", ")) << " | "
         << join(best[1], ", ") << " | " << join(best[2], ", ") << " |\n";

    os << "\n## Ranking flips\n\n";
    const bool anyFitsMd =
        llvm::any_of(recommendations,
                     [](const Recommendation &r) { return r.best != nullptr; });
    if (flips.empty() && !anyFitsMd) {
      os << "None to compare: no configuration fits the memory limit.\n";
    } else if (flips.empty()) {
      os << "None: at every (S, M, system) the best schedule agrees between "
            "levels (over the schedules both levels evaluate).\n";
    } else {
      os << "The best schedule differs between two levels (compared over the "
            "schedules both levels evaluate; the formula level only covers "
            "schedules with a closed form). Discordant = schedule pairs "
            "ordered the other way round.\n\n";
      os << "| S | M | system | levels | best at first | best at second | "
            "makespans (first level) | makespans (second level) | discordant "
            "pairs |\n";
      os << "|---|---|---|---|---|---|---|---|---|\n";
      for (const Flip &f : flips)
        os << "| " << f.group.stages << " | " << f.group.microbatches << " | "
           << f.group.system << " | " << levelName(f.a) << " -> "
           << levelName(f.b) << " | " << join(f.bestA, ", ") << " | "
           << join(f.bestB, ", ") << " | " << num(f.bestAAtA, "%.4g") << " vs "
           << num(f.bestBAtA, "%.4g") << " | " << num(f.bestAAtB, "%.4g")
           << " vs " << num(f.bestBAtB, "%.4g") << " | " << f.discordantPairs
           << "/" << f.comparablePairs << " |\n";
      std::map<std::string, int> byLevels;
      for (const Flip &f : flips)
        ++byLevels[(levelName(f.a) + " -> " + levelName(f.b)).str()];
      os << "\nFlips by level pair:";
      for (auto &[k, n] : byLevels)
        os << " " << k << ": " << n << ";";
      os << " (" << groups.size() << " configurations)\n";
    }
    if (!ranking.overMemory.empty()) {
      os << "\n## Memory limit\n\n"
         << removedLine
         << " (peak per-rank memory: event-level peak activations plus "
            "weights of one rank).\n\n";
      for (const ExplorePoint *p : ranking.overMemory)
        os << "- " << describePoint(*p, true) << ": "
           << formatGiB(p->peakMemoryBytes) << " > "
           << formatGiB(p->memoryLimitBytes) << "\n";
    }
    os << "\n## Recommendation\n\n";
    for (const Recommendation &r : recommendations)
      os << "- " << recommendationLine(r, tieOpt) << "\n";
    if (!skipped.empty()) {
      os << "\n## Skipped\n\n";
      for (const std::string &s : skipped)
        os << "- " << s << "\n";
    }
  }
  if (llvm::Error e = writeTextFile(outputOpt, out))
    return fail(std::move(e));

  if (wantTimeline) {
    if (!traceTimeline)
      return fail(llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("--trace/--svg: no evaluated configuration matches "
                        "schedule '{0}', S={1}, M={2}, system '{3}'",
                        traceSched, traceS, traceM, traceSys)
              .str()));
    if (!traceOpt.empty())
      if (llvm::Error e = writeTextFile(
              traceOpt, chromeTraceJSON(*traceTimeline, traceTitle)))
        return fail(std::move(e));
    if (!svgOpt.empty()) {
      SvgOptions o;
      o.title = traceTitle;
      if (llvm::Error e =
              writeTextFile(svgOpt, renderSvgGantt(*traceTimeline, o)))
        return fail(std::move(e));
    }
  }
  if (timingOpt)
    llvm::errs() << llvm::formatv("pipeopt-explore: {0} evaluations in {1} s\n",
                                  points.size(), num(elapsed, "%.3f"));
  return 0;
}
