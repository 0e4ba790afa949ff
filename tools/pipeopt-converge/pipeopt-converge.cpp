//===- pipeopt-converge.cpp - Optimization under pipeline staleness -------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Compares synchronous SGD, PipeDream, PipeDream-2BW, Randomized PipeDream
/// and LocalSGD on one objective under one simulated-time budget, with a
/// step-size sweep per method (docs/Convergence.md), or fits how the largest
/// stable step and the error floor scale with the stage count
/// (--experiment scaling).
///
//===----------------------------------------------------------------------===//

#include "pipeopt/Simulate/Converge.h"
#include "pipeopt/Support/CommandLine.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace pipeopt;
using namespace pipeopt::converge;
namespace cl = llvm::cl;

static cl::OptionCategory category("pipeopt-converge options");

enum class Format { Text, JSON };
enum class Experiment { Compare, Scaling, Explore };

static cl::opt<std::string> objectiveOpt(
    "objective", cl::init("quadratic"),
    cl::desc("Objective: quadratic (random least squares), nesterov, "
             "logistic, lm (default quadratic)"),
    cl::cat(category));
static cl::opt<int> stagesOpt("stages", cl::init(4),
                              cl::desc("Pipeline stages S (default 4)"),
                              cl::cat(category));
static cl::list<std::string> methodsOpt(
    "methods", cl::CommaSeparated,
    cl::desc("Methods (comma-separated): sync, pipedream, pipedream-2bw, "
             "rpd, localsgd (default all)"),
    cl::cat(category));
static cl::opt<long> budgetOpt(
    "budget", cl::init(2000),
    cl::desc("Common time budget T in slots (F = B = one slot; default 2000)"),
    cl::cat(category));
static cl::opt<std::string> costTableOpt(
    "cost-table", cl::init(""),
    cl::desc("Time model from a cost table (JSON, the format pipeopt-explore "
             "reads; resampled to S stages): every F / B of stage s takes the "
             "table's forward / backward (B + W) seconds instead of one slot"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<double> budgetSecOpt(
    "budget-s", cl::init(0.0),
    cl::desc("With --cost-table: the budget T in seconds (default: --budget "
             "x the mean over stages of (F + B) / 2)"),
    cl::cat(category));
static cl::opt<unsigned long long>
    seedOpt("seed", cl::init(1), cl::desc("First optimizer seed (default 1)"),
            cl::cat(category));
static cl::opt<int>
    seedsOpt("seeds", cl::init(3),
             cl::desc("Seeds per step size: seed, seed+1, ... (default 3)"),
             cl::cat(category));
static cl::opt<unsigned long long>
    dataSeedOpt("data-seed", cl::init(1),
                cl::desc("Seed of the synthetic data (default 1)"),
                cl::cat(category));
static cl::opt<double> noiseOpt(
    "noise", cl::init(0.0),
    cl::desc("Std of Gaussian noise added to every gradient coordinate "
             "(default 0)"),
    cl::cat(category));
static cl::opt<int> dimOpt("dim", cl::init(0),
                           cl::desc("Parameters (quadratic, nesterov, "
                                    "logistic; default 64)"),
                           cl::cat(category));
static cl::opt<int>
    batchOpt("batch-size", cl::init(0),
             cl::desc("Rows (positions) per microbatch (default 8; lm 16)"),
             cl::cat(category));
static cl::opt<int> dataSizeOpt(
    "data-size", cl::init(0),
    cl::desc("Rows n (quadratic, logistic; default 512) or positions (lm; "
             "default 4096)"),
    cl::cat(category));
static cl::opt<double>
    l2Opt("l2", cl::init(-1.0),
          cl::desc("L2 weight lambda (logistic, lm; default 1e-3)"),
          cl::cat(category));
static cl::opt<double>
    featureScaleOpt("feature-scale", cl::init(0.0),
                    cl::desc("logistic: feature norm |x_i| (default 4)"),
                    cl::cat(category));
static cl::opt<int>
    microbatchesOpt("microbatches", cl::init(0),
                    cl::desc("sync: microbatches per step M (default S)"),
                    cl::cat(category));
static cl::opt<int>
    deltaOpt("rpd-delta", cl::init(-1),
             cl::desc("rpd: delay bound delta (default floor(S^2 - S/2))"),
             cl::cat(category));
static cl::opt<int> replicasOpt("replicas", cl::init(0),
                                cl::desc("localsgd: replicas R (default S)"),
                                cl::cat(category));
static cl::opt<int>
    localStepsOpt("local-steps", cl::init(1),
                  cl::desc("localsgd: local steps H per round (default 1)"),
                  cl::cat(category));
static cl::opt<int>
    minExpOpt("min-step-exp", cl::init(-12),
              cl::desc("Step grid: smallest step 2^k / L (2^k with "
                       "--absolute-steps; default -12)"),
              cl::cat(category));
static cl::opt<int>
    maxExpOpt("max-step-exp", cl::init(4),
              cl::desc("Step grid: largest step 2^k / L (2^k with "
                       "--absolute-steps; default 4)"),
              cl::cat(category));
static cl::opt<int> perOctaveOpt(
    "steps-per-octave", cl::init(1),
    cl::desc("Step grid points per factor of two (default 1; scaling: 4)"),
    cl::cat(category));
static cl::opt<int> samplesOpt(
    "samples", cl::init(100),
    cl::desc("Curve points after t = 0, evenly spaced in time (default 100)"),
    cl::cat(category));
static cl::opt<Format>
    formatOpt("format", cl::init(Format::Text), cl::desc("Output format"),
              cl::values(clEnumValN(Format::Text, "text", "summary table"),
                         clEnumValN(Format::JSON, "json", "JSON report")),
              cl::cat(category));
static cl::opt<std::string> outputOpt("o", cl::init("-"),
                                      cl::desc("Output file (default stdout)"),
                                      cl::value_desc("file"),
                                      cl::cat(category));
static cl::opt<std::string> svgOpt("svg", cl::desc("Write an SVG plot"),
                                   cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> csvOpt("csv",
                                   cl::desc("Write every curve point as CSV"),
                                   cl::value_desc("file"), cl::cat(category));
static cl::opt<Experiment> experimentOpt(
    "experiment", cl::init(Experiment::Compare), cl::desc("What to run"),
    cl::values(clEnumValN(Experiment::Compare, "compare",
                          "tuned comparison of the methods (default)"),
               clEnumValN(Experiment::Scaling, "scaling",
                          "largest stable step and error floor vs S, with "
                          "fitted exponents"),
               clEnumValN(Experiment::Explore, "explore",
                          "best method (tuned) per S of --stages-list at the "
                          "budget, with its margin over the runner-up")),
    cl::cat(category));
static cl::list<int>
    stagesListOpt("stages-list", cl::CommaSeparated,
                  cl::desc("scaling, explore: stage counts (default "
                           "2,4,8,16)"),
                  cl::cat(category));
static cl::opt<double> fixedStepOpt(
    "fixed-step", cl::init(0.0),
    cl::desc("scaling: the fixed step (absolute) whose error floor is fitted "
             "(default 2^-4 / L, 2^-4 with --absolute-steps; pair it with "
             "--noise for a floor)"),
    cl::cat(category));
static cl::opt<bool> smoothOpt(
    "smooth-selection", cl::init(false),
    cl::desc("Also require the paper code's smoothness tests of the tail "
             "(coefficient of variation, upward steps, jumps, total "
             "variation, log slope) for a stable step"),
    cl::cat(category));
enum class Selection { Default, Smooth, Paper };
static cl::opt<Selection> selectionOpt(
    "selection", cl::init(Selection::Default),
    cl::desc("Step-size selection rule (docs/Convergence.md)"),
    cl::values(
        clEnumValN(Selection::Default, "default",
                   "smallest stable step within 5% of the best tail; stable: "
                   "no divergence, tail below f(x0) - f*, no growth over "
                   "the tail"),
        clEnumValN(Selection::Smooth, "smooth",
                   "default plus the authors' five smoothness tests (same "
                   "as --smooth-selection)"),
        clEnumValN(Selection::Paper, "paper",
                   "what the authors' code computes: every finite curve "
                   "counts as stable (their smoothness tests are overwritten), "
                   "tail of at least 10 points, measured on f itself")),
    cl::cat(category));
static cl::opt<double> tailFractionOpt(
    "tail-fraction", cl::init(0.2),
    cl::desc("Selection tail: the last fraction of the curve points "
             "(default 0.2; the authors' logistic scaling experiment uses "
             "0.01 with --samples equal to --budget)"),
    cl::cat(category));
static cl::opt<bool> absoluteStepsOpt(
    "absolute-steps", cl::init(false),
    cl::desc("Step grid 2^k instead of 2^k / L (the authors' grids)"),
    cl::cat(category));
static cl::opt<bool> quietOpt("quiet", cl::init(false),
                              cl::desc("No progress lines on stderr"),
                              cl::cat(category));

namespace {

int fail(const llvm::Twine &msg) {
  llvm::WithColor::error(llvm::errs(), "pipeopt-converge") << msg << "\n";
  return 1;
}

int fail(llvm::Error e) { return fail(llvm::toString(std::move(e))); }

bool writeFile(llvm::StringRef path, llvm::StringRef text) {
  std::error_code ec;
  llvm::ToolOutputFile f(path, ec, llvm::sys::fs::OF_Text);
  if (ec) {
    fail("cannot write '" + path + "': " + ec.message());
    return false;
  }
  f.os() << text;
  f.keep();
  return true;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  if (!pipeopt::rejectHelpTypos(argc, argv, "pipeopt-converge"))
    return 1;
  if (!pipeopt::rejectEmptyValues(argc, argv, "pipeopt-converge"))
    return 1;
  cl::ParseCommandLineOptions(
      argc, argv,
      "pipeopt-converge: SGD under pipeline staleness in simulated time "
      "(sync, PipeDream, PipeDream-2BW, Randomized PipeDream, LocalSGD; "
      "Ilin & Richtarik, arXiv 2606.03498)\n");

  llvm::Expected<ObjectiveKind> kind = parseObjective(objectiveOpt);
  if (!kind)
    return fail(kind.takeError());
  if (seedsOpt < 1 || seedsOpt > 100)
    return fail("--seeds must be in [1, 100], got " + llvm::Twine(seedsOpt));
  if (!(std::isfinite(noiseOpt) && noiseOpt >= 0))
    return fail("--noise must be a finite number >= 0");
  if (minExpOpt > maxExpOpt || minExpOpt < -60 || maxExpOpt > 20)
    return fail("--min-step-exp must be <= --max-step-exp, both in [-60, 20]");
  if (perOctaveOpt < 1 || perOctaveOpt > 16)
    return fail("--steps-per-octave must be in [1, 16]");
  if (stagesOpt < 1)
    return fail("--stages must be >= 1, got " + llvm::Twine(stagesOpt));
  if (!std::isfinite(fixedStepOpt) || fixedStepOpt < 0)
    return fail("--fixed-step must be a finite number >= 0");
  if (!(tailFractionOpt > 0 && tailFractionOpt <= 1))
    return fail(llvm::formatv("--tail-fraction must be in (0, 1], got {0}",
                              tailFractionOpt.getValue()));
  if (smoothOpt && selectionOpt.getNumOccurrences() &&
      selectionOpt != Selection::Smooth)
    return fail("--smooth-selection contradicts --selection");

  ObjectiveParams op;
  op.kind = *kind;
  op.dim = dimOpt;
  op.seed = dataSeedOpt;
  op.batchSize = batchOpt;
  op.samples = dataSizeOpt;
  op.l2 = l2Opt;
  op.featureScale = featureScaleOpt;
  if (featureScaleOpt.getNumOccurrences() &&
      (*kind != ObjectiveKind::Logistic ||
       !(std::isfinite(featureScaleOpt) && featureScaleOpt > 0)))
    return fail("--feature-scale applies to logistic and must be a finite "
                "number > 0");
  // 0 is the internal "not given" value; given explicitly it is an error.
  if (dimOpt < 0 || batchOpt < 0 || dataSizeOpt < 0 ||
      (dimOpt.getNumOccurrences() && dimOpt == 0) ||
      (batchOpt.getNumOccurrences() && batchOpt == 0) ||
      (dataSizeOpt.getNumOccurrences() && dataSizeOpt == 0))
    return fail("--dim, --batch-size and --data-size must be >= 1");
  if (l2Opt.getNumOccurrences() &&
      (*kind == ObjectiveKind::Quadratic || *kind == ObjectiveKind::Nesterov))
    return fail("--l2 applies to logistic and lm");
  if (l2Opt.getNumOccurrences() && !(std::isfinite(l2Opt) && l2Opt > 0))
    return fail("--l2 must be a finite number > 0");
  if (*kind == ObjectiveKind::LM && dimOpt)
    return fail("--dim does not apply to lm (its size is 2 V^2 + V)");
  llvm::Expected<std::unique_ptr<Objective>> obj = makeObjective(op);
  if (!obj)
    return fail(obj.takeError());

  if (stagesOpt > (*obj)->dim())
    return fail(llvm::formatv("--stages must be in [1, {0}] (one block of at "
                              "least one parameter per stage), got {1}",
                              (*obj)->dim(), stagesOpt.getValue()));
  if (budgetOpt < 1 || budgetOpt > 10000000)
    return fail("--budget must be in [1, 10000000] slots, got " +
                llvm::Twine(budgetOpt.getValue()));
  if (localStepsOpt < 1)
    return fail("--local-steps must be >= 1, got " +
                llvm::Twine(localStepsOpt.getValue()));
  if (samplesOpt < 1 || samplesOpt > 100000)
    return fail("--samples must be in [1, 100000], got " +
                llvm::Twine(samplesOpt.getValue()));

  std::vector<Method> methods;
  for (const std::string &name : methodsOpt) {
    llvm::Expected<Method> m = parseMethod(name);
    if (!m)
      return fail(m.takeError());
    if (llvm::is_contained(methods, *m))
      return fail("--methods lists '" + name + "' twice");
    methods.push_back(*m);
  }
  if (methods.empty())
    methods = allMethods();

  RunConfig base;
  base.stages = stagesOpt;
  base.budgetSlots = budgetOpt;
  base.noiseStd = noiseOpt;
  base.syncMicrobatches = microbatchesOpt;
  base.rpdDelta = deltaOpt;
  base.replicas = replicasOpt;
  base.localSteps = localStepsOpt;
  base.numSamples = samplesOpt;
  if (microbatchesOpt < 0 || replicasOpt < 0)
    return fail("--microbatches and --replicas must be >= 1 (0: the default)");
  if (deltaOpt < -1)
    return fail("--rpd-delta must be >= 0");
  if (budgetSecOpt.getNumOccurrences() && costTableOpt.empty())
    return fail("--budget-s needs --cost-table (without it the budget is "
                "--budget slots)");
  if (!costTableOpt.empty()) {
    if (experimentOpt == Experiment::Scaling)
      return fail("--cost-table applies to --experiment compare and explore");
    if (experimentOpt == Experiment::Explore &&
        !budgetSecOpt.getNumOccurrences())
      return fail("--experiment explore with --cost-table needs --budget-s "
                  "(one budget in seconds for every S)");
    llvm::Expected<sim::CostTable> t = sim::loadCostTable(costTableOpt);
    if (!t)
      return fail("--cost-table " + costTableOpt + ": " +
                  llvm::toString(t.takeError()));
    // Every S the run uses: --stages, or (explore) each S of --stages-list.
    // Explore keeps the table as read and resamples it directly to each S
    // (tuneMethod), so a result at S does not depend on --stages.
    std::vector<int> checkStages = {stagesOpt};
    if (experimentOpt == Experiment::Explore) {
      checkStages.assign(stagesListOpt.begin(), stagesListOpt.end());
      if (checkStages.empty())
        checkStages = {2, 4, 8, 16};
    }
    for (int S : checkStages) {
      if (S < 1)
        continue; // --stages / --stages-list range errors come later.
      sim::CostTable rs = t->size() == S ? *t : t->resample(S);
      for (const sim::StageCost &sc : rs.stages)
        if (!(sc.forwardSec > 0 && sc.backwardSec() > 0))
          return fail("--cost-table " + costTableOpt +
                      ": every stage needs F > 0 and B + W > 0 seconds "
                      "(after resampling to " +
                      llvm::Twine(S) + " stages)");
    }
    sim::CostTable r = experimentOpt == Experiment::Explore ? *t
                       : t->size() == stagesOpt             ? *t
                                                : t->resample(stagesOpt);
    double half = 0;
    for (const sim::StageCost &sc : r.stages)
      half += (sc.forwardSec + sc.backwardSec()) / 2;
    half /= r.size();
    if (budgetSecOpt.getNumOccurrences() &&
        !(std::isfinite(budgetSecOpt) && budgetSecOpt > 0))
      return fail("--budget-s must be a finite number > 0");
    base.costs = std::make_shared<const sim::CostTable>(std::move(r));
    base.budgetSec = budgetSecOpt.getNumOccurrences()
                         ? budgetSecOpt.getValue()
                         : static_cast<double>(budgetOpt) * half;
  }
  std::vector<uint64_t> seeds;
  for (int i = 0; i < seedsOpt; ++i)
    seeds.push_back(seedOpt + i);
  const double L = (*obj)->smoothness();
  // The grid's unit: 1 / L, or 1 with --absolute-steps.
  const double gridL = absoluteStepsOpt ? 1.0 : L;
  SelectionRule rule;
  rule.tailFraction = tailFractionOpt;
  rule.smoothness = smoothOpt || selectionOpt == Selection::Smooth;
  if (selectionOpt == Selection::Paper) {
    rule.paperCode = true;
    rule.valueOffset = (*obj)->optimum(); // the authors' curves are f itself
  }

  std::string out;
  if (experimentOpt == Experiment::Explore) {
    if (!svgOpt.empty() || !csvOpt.empty())
      return fail("--svg and --csv apply to --experiment compare");
    if (fixedStepOpt.getNumOccurrences())
      return fail("--fixed-step applies to --experiment scaling");
    std::vector<int> stages(stagesListOpt.begin(), stagesListOpt.end());
    if (stages.empty())
      stages = {2, 4, 8, 16};
    for (int S : stages)
      if (S < 1 || S > (*obj)->dim())
        return fail(llvm::formatv("--stages-list: every S must be in [1, {0}], "
                                  "got {1}",
                                  (*obj)->dim(), S));
    std::vector<double> steps =
        stepGrid(gridL, minExpOpt, maxExpOpt, perOctaveOpt);
    auto progress = [&](int done, int total) {
      if (!quietOpt)
        llvm::errs() << llvm::formatv(
            "pipeopt-converge: explore {0}/{1} (S, method) tunings\n", done,
            total);
    };
    llvm::Expected<ExploreResult> r = exploreStages(
        **obj, base, stages, methods, steps, seeds, rule, progress);
    if (!r)
      return fail(r.takeError());
    if (formatOpt == Format::JSON)
      out = llvm::formatv("{0:2}", toJSON(*r)).str() + "\n";
    else
      out = exploreTable(*r);
  } else if (experimentOpt == Experiment::Scaling) {
    if (methods.size() != 1)
      return fail("--experiment scaling takes exactly one method in "
                  "--methods (e.g. --methods=pipedream)");
    if (!svgOpt.empty() || !csvOpt.empty())
      return fail("--svg and --csv apply to --experiment compare");
    base.method = methods.front();
    std::vector<int> stages(stagesListOpt.begin(), stagesListOpt.end());
    if (stages.empty())
      stages = {2, 4, 8, 16};
    for (int S : stages)
      if (S < 1 || S > (*obj)->dim())
        return fail(llvm::formatv("--stages-list: every S must be in [1, {0}], "
                                  "got {1}",
                                  (*obj)->dim(), S));
    const int perOctave =
        perOctaveOpt.getNumOccurrences() ? perOctaveOpt.getValue() : 4;
    std::vector<double> steps =
        stepGrid(gridL, minExpOpt, maxExpOpt, perOctave);
    const double fixed =
        fixedStepOpt > 0 ? fixedStepOpt : std::exp2(-4) / gridL;
    auto progress = [&](int done, int total) {
      if (!quietOpt && (done % 50 == 0 || done == total))
        llvm::errs() << llvm::formatv(
            "pipeopt-converge: scaling {0}/{1} runs\n", done, total);
    };
    llvm::Expected<ScalingResult> r =
        runScaling(**obj, base, stages, steps, seeds, fixed, rule, progress);
    if (!r)
      return fail(r.takeError());
    if (formatOpt == Format::JSON)
      out = llvm::formatv("{0:2}", toJSON(*r)).str() + "\n";
    else
      out = scalingTable(*r);
  } else {
    if (stagesListOpt.getNumOccurrences() || fixedStepOpt.getNumOccurrences())
      return fail("--stages-list and --fixed-step apply to --experiment "
                  "scaling");
    Comparison cmp;
    cmp.objective = (*obj)->name().str();
    cmp.stages = stagesOpt;
    cmp.budgetSlots = budgetOpt;
    cmp.costs = base.costs;
    cmp.budgetSec = base.budgetSec;
    cmp.noiseStd = noiseOpt;
    cmp.fStar = (*obj)->optimum();
    cmp.fStarNote = (*obj)->optimumNote();
    cmp.smoothness = L;
    cmp.seeds = seeds;
    cmp.rule = rule;
    std::vector<double> steps =
        stepGrid(gridL, minExpOpt, maxExpOpt, perOctaveOpt);
    for (size_t i = 0; i < methods.size(); ++i) {
      RunConfig c = base;
      c.method = methods[i];
      llvm::Expected<MethodResult> m =
          tuneMethod(**obj, c, steps, seeds, cmp.rule);
      if (!m)
        return fail(llvm::Twine(methodName(methods[i])) + ": " +
                    llvm::toString(m.takeError()));
      if (!quietOpt)
        llvm::errs() << llvm::formatv(
            "pipeopt-converge: {0} done ({1}/{2} methods, {3} runs)\n",
            methodName(methods[i]), i + 1, methods.size(),
            steps.size() * seeds.size());
      cmp.results.push_back(std::move(*m));
    }
    if (formatOpt == Format::JSON)
      out = llvm::formatv("{0:2}", toJSON(cmp)).str() + "\n";
    else
      out = summaryTable(cmp);
    if (!svgOpt.empty() && !writeFile(svgOpt, renderSVG(cmp)))
      return 1;
    if (!csvOpt.empty() && !writeFile(csvOpt, toCSV(cmp)))
      return 1;
  }
  if (!writeFile(outputOpt, out))
    return 1;
  return 0;
}
