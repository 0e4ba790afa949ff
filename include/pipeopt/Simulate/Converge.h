//===- Converge.h - Optimization under pipeline staleness -------*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// A pure-C++ simulator of what pipeline schedules do to optimization: SGD
/// on a parameter vector split into S contiguous blocks, one per stage, run
/// by synchronous (flush), asynchronous (PipeDream, PipeDream-2BW), stale
/// block-SGD (Randomized PipeDream, RPD) and LocalSGD methods in the
/// simulated-time model of Ilin & Richtarik, "Demystifying Pipeline
/// Parallelism: First Theory for PipeDream", arXiv 2606.03498 (notes:
/// docs/PipeDreamTheory.md, sections 1 to 4):
///
///  - time is counted in unit slots: every F and every B (full backward)
///    takes one slot on its stage, communication is free;
///  - a *block update* is one SGD step on one stage's block; delays are
///    counted in block updates in the global order (slot, stage), the
///    definition of sim::Staleness;
///  - every method gets the same budget of T slots; only the actions that
///    start in slots [0, T) happen (the paper's fair time-budget protocol:
///    the smallest run whose timeline reaches T, cut at T).
///
/// With a cost table (RunConfig::costs) the time axis is seconds instead:
/// every F of stage s takes the table's forward time and every full
/// backward its B + W time (the table resample()d to S stages), actions
/// start when sim::simulateTable starts them (free communication), and the
/// budget T is in seconds. The weight versions every read sees, and so the
/// iterates as a function of the block-update count, stay those of the
/// schedule table; only when each update happens changes.
///
/// The PipeDream, PipeDream-2BW, synchronous and LocalSGD timelines are
/// pipeopt's own schedule tables (schedule::makePipeDream, make1F1B, ...)
/// executed with schedule::unitTimeSlots; the weight version every F reads
/// is the table's Action::weightVersion. Nothing here uses a closed form
/// for a delay. See docs/Convergence.md for the exact method definitions.
///
/// Units: step sizes are absolute (objective-dependent); sub-optimality is
/// f(x) - f* of the full-data objective; slots and block updates are counts.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_SIMULATE_CONVERGE_H
#define PIPEOPT_SIMULATE_CONVERGE_H

#include "pipeopt/Schedule/Schedule.h"
#include "pipeopt/Simulate/CostTable.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pipeopt {
namespace converge {

//===----------------------------------------------------------------------===//
// Objectives
//===----------------------------------------------------------------------===//

/// The four objectives of the paper's experiments (notes section 5).
enum class ObjectiveKind : uint8_t {
  Quadratic, ///< Random least squares, f = 1/(2n) ||Xw - y||^2, y = Xw*.
  Nesterov,  ///< Nesterov's tridiagonal quadratic via its Cholesky factor.
  Logistic,  ///< L2-regularized logistic regression on synthetic data.
  LM,        ///< Softmax regression "language model" on a token stream.
};
/// "quadratic", "nesterov", "logistic", "lm".
llvm::StringRef objectiveName(ObjectiveKind k);
/// Inverse of objectiveName(); the error lists the accepted names.
llvm::Expected<ObjectiveKind> parseObjective(llvm::StringRef name);

/// Problem sizes. 0 means the objective's default (see makeObjective).
struct ObjectiveParams {
  ObjectiveKind kind = ObjectiveKind::Quadratic;
  int dim = 0;       ///< Parameters (quadratic, logistic); Nesterov: d.
  int samples = 0;   ///< Rows / training positions n.
  int batchSize = 0; ///< Rows per microbatch (batches = n / batchSize).
  int vocab = 0;     ///< LM vocabulary V (parameters 2 V^2 + V).
  double l2 = -1;    ///< L2 weight lambda (< 0: default).
  /// Logistic: feature rows ~ N(0, (scale^2 / d) I), so |x_i| ~ scale
  /// (<= 0: default 4).
  double featureScale = 0;
  uint64_t seed = 1; ///< Data seed (independent of the optimizer seed).
};

/// A finite-sum objective f(x) = mean over batches of f_b(x) (+ an L2
/// term), with a known or accurately computed minimum value f*.
class Objective {
public:
  virtual ~Objective();
  llvm::StringRef name() const { return objectiveName(kind_); }
  ObjectiveKind kind() const { return kind_; }
  int dim() const { return dim_; }
  int numBatches() const { return numBatches_; }
  /// f(x) on the full data set; x has dim() entries.
  virtual double value(const double *x) const = 0;
  /// Gradient of batch `batch` (0 <= batch < numBatches()) at z with
  /// respect to the coordinates [lo, hi); writes hi - lo values to out.
  /// The mean of the batch gradients is the gradient of value().
  virtual void blockGradient(int batch, const double *z, int lo, int hi,
                             double *out) const = 0;
  /// Full-data gradient (all coordinates).
  void gradient(const double *x, double *out) const;
  /// The minimum value f* and how it was obtained (closed form or
  /// Newton's method with a certified gap, see makeObjective).
  double optimum() const { return fStar_; }
  const std::string &optimumNote() const { return fStarNote_; }
  /// Smoothness constant L (or an upper bound): anchors the step grid.
  double smoothness() const { return smooth_; }
  /// Starting point x0 (zeros for every objective).
  std::vector<double> initialPoint() const;

protected:
  Objective(ObjectiveKind kind) : kind_(kind) {}
  void setNote(std::string note);
  ObjectiveKind kind_;
  int dim_ = 0;
  int numBatches_ = 0;
  double fStar_ = 0;
  std::string fStarNote_;
  double smooth_ = 1;
};

/// Builds an objective (deterministic in params.seed). Defaults:
///  - quadratic: d = 64, n = 512, batch 8; X ~ N(0,1), w* ~ N(0, 1/d),
///    y = X w*, so f* = 0 exactly; L = lambda_max(X^T X / n) by power
///    iteration.
///  - nesterov: d = 64 (n = d rows, batch 8); A = tridiag(-1, 2, -1) + mu I
///    with mu = 0.01 = L0 L0^T (Cholesky, exact for a tridiagonal matrix),
///    X = L0^T, y = L0^{-1} e_1, so 1/(2n)||Xx - y||^2 = (1/n)(x^T A x / 2
///    - e_1^T x) + const and f* = 0 exactly (X is invertible).
///  - logistic: d = 64, n = 512, batch 8, lambda = 1e-3; x_i ~ N(0, I/d)
///    scaled by 4, w* ~ N(0, I), labels +-1 with P(+1) = sigmoid(x_i w*);
///    f* by Newton's method until the gradient norm g <= 1e-12 (gap bound
///    g^2 / (2 lambda), reported in optimumNote()).
///  - lm: V = 16 tokens, 4096 positions, batch 16 consecutive positions,
///    lambda = 1e-3; a stream from a random second-order model of the same
///    family; logits_v = A[v, t-1] + B[v, t-2] + c[v]; parameters flattened
///    as A (row-major, V x V), B, c; f* by Newton's method as for logistic.
/// Errors: sizes out of range (dim in [1, 4096], samples in [1, 2^20],
/// batch in [1, samples], V in [2, 64]), lambda <= 0 for logistic / lm,
/// nesterov with samples != dim. A trailing partial batch is dropped.
llvm::Expected<std::unique_ptr<Objective>>
makeObjective(const ObjectiveParams &params);

/// The gradient noise: a standard normal determined by (seed, key,
/// coordinate) alone (counter-based, SplitMix64 hashing). Every method
/// adds noiseStd * gradientNoise(seed, key, j) to coordinate j of a
/// gradient; key is the microbatch index (sync, PipeDream, PipeDream-2BW,
/// LocalSGD: the same data sample gets the same noise) or the update index
/// k (RPD). The step is x_j <- x_j - gamma * (g_j + noiseStd * noise).
double gradientNoise(uint64_t seed, uint64_t key, int coord);

/// Contiguous block bounds for S stages over d coordinates: S + 1 offsets,
/// block s is [bounds[s], bounds[s+1]); the first d mod S blocks hold one
/// coordinate more. Needs 1 <= S <= d.
std::vector<int> blockBounds(int dim, int stages);

//===----------------------------------------------------------------------===//
// Methods and one run
//===----------------------------------------------------------------------===//

/// The compared methods (notes sections 1, 2, 4; docs/Convergence.md).
enum class Method : uint8_t {
  Sync,         ///< Flush: 1F1B table of M microbatches, mean gradient.
  PipeDream,    ///< Async 1F1B with weight stashing, schedule table.
  PipeDream2BW, ///< Async, one update per S backwards (table versions).
  RPD,          ///< Randomized PipeDream: random block, delays <= delta.
  LocalSGD,     ///< R replicas, H local steps, average, pipeline drain.
};
/// "sync", "pipedream", "pipedream-2bw", "rpd", "localsgd".
llvm::StringRef methodName(Method m);
llvm::Expected<Method> parseMethod(llvm::StringRef name);
/// All methods in the order above.
const std::vector<Method> &allMethods();

/// One run of one method with one step size and one seed.
struct RunConfig {
  Method method = Method::PipeDream;
  int stages = 4;           ///< S >= 1 (and S <= objective dim).
  long budgetSlots = 2000;  ///< T: slots [0, T) are simulated.
  double stepSize = 0.01;   ///< gamma > 0.
  uint64_t seed = 1;        ///< Noise and RPD sampling seed.
  double noiseStd = 0;      ///< Gaussian noise added to every gradient
                            ///< coordinate (per microbatch / update).
  int syncMicrobatches = 0; ///< Sync: M per step (0: S).
  int rpdDelta = -1;        ///< RPD: delta (< 0: floor(S^2 - S/2)).
  int replicas = 0;         ///< LocalSGD: R (0: S).
  int localSteps = 1;       ///< LocalSGD: H >= 1 local steps per round.
  int numSamples = 100;     ///< Curve points after t = 0 (evenly in T).
  /// Cost-table time model (null: unit slots). Every F / BW of stage s
  /// takes costs' forwardSec / backwardSec() of stage s (resample()d to S
  /// stages when its size differs); start times are sim::simulateTable's.
  /// Errors: an entry with F <= 0 or B + W <= 0.
  std::shared_ptr<const sim::CostTable> costs;
  /// The budget T in seconds when `costs` is set (budgetSlots is unused);
  /// at most 10^7 (F + B) of the fastest stage.
  double budgetSec = 0;
  /// Test hook: every read sees the newest version (no staleness); the
  /// order of block updates, batches and times is unchanged.
  bool forceZeroDelay = false;
  /// Record one UpdateRecord per block update (tests, delay checks).
  bool recordUpdates = false;
  /// Stop early (rest of the curve +inf) once f - f* exceeds this many
  /// times the initial sub-optimality or is not finite.
  double divergeFactor = 1e3;
};

/// A point of a sub-optimality curve: the state after every action that
/// started before `slot`.
struct CurvePoint {
  long slot = 0;   ///< Unit slot; -1 with a cost table (see time).
  double time = 0; ///< Slots (unit model) or seconds (cost table).
  long blockUpdates = 0;
  double subopt = 0; ///< f(x) - f*; +inf after divergence.
};

/// One block update (RunConfig::recordUpdates).
struct UpdateRecord {
  long slot = 0;      ///< Unit slot of the update; -1 with a cost table.
  double time = 0;    ///< Start of the update's backward (slots or seconds).
  int stage = 0;      ///< Block written.
  int microbatch = 0; ///< Microbatch (PipeDream, sync, LocalSGD) or -1.
  int batch = 0;      ///< Data batch whose gradient was used.
  int replica = 0;    ///< LocalSGD replica.
  /// delay[s'] = block updates (global order, all stages) between the read
  /// of block s' and this update: the k - j_k^{(s')} of the paper.
  std::vector<int> delay;
};

struct RunResult {
  std::vector<CurvePoint> curve; ///< numSamples + 1 points, slot 0..T.
  double initialSubopt = 0;
  double finalSubopt = 0; ///< At slot T (curve.back()).
  long blockUpdates = 0;  ///< Applied within the budget.
  long microbatches = 0;  ///< Microbatches whose F started (0 for RPD).
  bool diverged = false;
  std::vector<UpdateRecord> updates; ///< When recordUpdates.
  std::vector<double> finalPoint;    ///< x at T (LocalSGD: the average).
};

/// Runs one method. Errors: bad configuration (S < 1, S > dim, T < 1,
/// step <= 0 or not finite, R < 1, H < 1, ...) and schedule tables that
/// disagree with the simulated execution (a weight version the table
/// claims that the replay does not see).
llvm::Expected<RunResult> runMethod(const Objective &obj, const RunConfig &c);

/// Largest microbatch count whose PipeDream table (pipeopt's generator) is
/// shorter than T slots, plus one: the smallest M whose timeline reaches T
/// (binary search over generated tables, schedule::unitTimeSlots).
llvm::Expected<int> pipeDreamMicrobatchesForBudget(int stages, long budget);
/// The same for a budget in seconds under a cost table (resample()d to
/// `stages`; null: unit slots, budget in slots): the smallest M whose
/// sim::simulateTable makespan of the PipeDream table reaches `budget`.
llvm::Expected<int> pipeDreamMicrobatchesForTime(int stages, double budget,
                                                 const sim::CostTable *costs);

/// The LocalSGD round table: S stages, R * H microbatches (replica of
/// microbatch i = i mod R); a replica's next microbatch starts on a stage
/// only after its previous one left it (B done). For R >= S this is
/// exactly make1F1B(S, R * H) (2RH + 2(S - 1) slots); for R < S the
/// per-stage order of a greedy unit-time run (backward first until the
/// stage's first backward, then alternating; notes section 4), e.g. 26
/// slots for S = 4, R = 2, H = 3, and 2 S H slots for R = 1.
llvm::Expected<schedule::Schedule> makeLocalSGDRound(int stages, int replicas,
                                                     int localSteps);

//===----------------------------------------------------------------------===//
// Step-size sweeps and comparisons
//===----------------------------------------------------------------------===//

/// Step-size grid gamma_k = 2^(k / perOctave) / L for k in
/// [minExp * perOctave, maxExp * perOctave]. L = 1 gives the absolute grid
/// 2^k of the authors' notebooks (e.g. 2^-12 ... 2^-3 for PipeDream and RPD,
/// 2^-8 ... 2^2 for LocalSGD in their logistic scaling experiment).
std::vector<double> stepGrid(double smoothness, int minExp = -12,
                             int maxExp = 1, int perOctave = 1);

/// One step size of a sweep: its runs over all seeds.
struct SweepEntry {
  double stepSize = 0;
  std::vector<RunResult> runs;   ///< One per seed (curves only).
  std::vector<double> meanCurve; ///< Mean f - f* over seeds per point.
  double tailMean = 0;           ///< Mean of meanCurve over the tail window.
  double finalMean = 0;          ///< meanCurve.back(): f - f* at T.
  bool diverged = false;         ///< Some seed diverged.
  bool stable = false;           ///< See selectStep().
};

/// The tuned result of one method.
struct MethodResult {
  Method method = Method::PipeDream;
  RunConfig config; ///< Base configuration (step and seed of run 0).
  std::vector<SweepEntry> sweep;
  int selected = -1; ///< Index into sweep.
  bool selectedStable = false;
  const SweepEntry &best() const { return sweep[selected]; }
};

/// Stable-selection rule (docs/Convergence.md, after the notes' section 4):
/// the tail window is the last `tailFraction` of the curve points. An
/// entry is stable when no seed diverged, its tail mean is below the
/// initial sub-optimality and the mean curve does not grow over its tail:
/// the mean of the tail's second half is at most (1 + growTolerance) times
/// the mean of its first half. With `smoothness` (the paper code's stricter
/// test, thresholds of its synthetic experiments) the tail y_1..y_n of the
/// mean curve must also have: coefficient of variation <= maxCV, fraction
/// of upward steps <= maxUpFraction, largest upward step <= maxJump x the
/// tail mean, total variation sum |y_{i+1} - y_i| <= maxTV x (max - min),
/// and least-squares slope of log y per point <= maxLogSlope. The selected
/// step is the smallest stable one whose tail mean is within `withinBest`
/// (relative) of the best stable tail mean; with no stable entry, the
/// non-diverged entry with the smallest tail mean (or the smallest step
/// when all diverged), marked not stable. Returns the index.
///
/// The smoothness tests follow the authors' code
/// (vectozavr/randomized-pipedream, `curve_stability_metrics`): the tail is
/// floored at 1e-16 first, the total variation is compared with the net
/// change |y_n - y_1| of the tail, and upward steps are counted over the
/// n - 1 differences.
///
/// `paperCode` replaces this rule by what the authors' selection
/// (`select_stable_learning_rate`, prefer="smaller") computes: the tail is
/// the last max(minTailPoints, ceil(tailFraction x points)) points, every
/// entry whose mean curve is finite everywhere counts as stable, and the
/// pick is the smallest such step whose tail mean is within `withinBest` of
/// the best one, all measured on f itself, i.e. on f - f* + `valueOffset`
/// (the tool sets valueOffset = f*: their curves are objective values). Their
/// five smoothness tests are computed but have no effect there: each row is
/// built as {"stable": tests, **metrics} and the metrics' own "stable":
/// True (set for every finite curve) overwrites the tests' verdict.
/// SweepEntry::tailMean stays an f - f* value.
struct SelectionRule {
  double tailFraction = 0.2;
  double growTolerance = 0.1;
  double withinBest = 0.05;
  bool smoothness = false;
  double maxCV = 0.15, maxUpFraction = 0.45, maxJump = 0.05, maxTV = 5,
         maxLogSlope = 1e-4;
  bool paperCode = false;
  int minTailPoints = 10; ///< paperCode only (the authors' minimum tail).
  double valueOffset = 0; ///< paperCode only: added to every f - f*.
};
int selectStep(std::vector<SweepEntry> &sweep, const SelectionRule &rule,
               bool *stable = nullptr);

/// Sweeps `steps` x `seeds` for one method (base.stepSize and base.seed
/// are replaced) and selects a step. `progress`, when set, is called after
/// every run with (runs done, runs total).
llvm::Expected<MethodResult>
tuneMethod(const Objective &obj, const RunConfig &base,
           const std::vector<double> &steps, const std::vector<uint64_t> &seeds,
           const SelectionRule &rule = {},
           const std::function<void(int, int)> &progress = nullptr);

/// A comparison of methods on one objective under one budget.
struct Comparison {
  std::string objective;
  int stages = 0;
  long budgetSlots = 0;
  /// Cost-table time model (RunConfig::costs, resample()d to `stages`):
  /// the budget is budgetSec seconds and curves are against seconds.
  std::shared_ptr<const sim::CostTable> costs;
  double budgetSec = 0;
  bool timed() const { return costs != nullptr; }
  double noiseStd = 0;
  double fStar = 0;
  std::string fStarNote;
  double smoothness = 0;
  std::vector<uint64_t> seeds;
  SelectionRule rule;
  std::vector<MethodResult> results;
};

/// JSON report: objective, stages, time_model ("unit-slots" or
/// "cost-table"), budget_slots (unit) or budget_s and cost_table {name,
/// forward_s[], backward_s[]} (cost table), noise_std, f_star,
/// f_star_note, smoothness_constant (L), seeds, selection (the rule), and
/// results[] with method, step_size (selected), final_suboptimality (mean over
/// seeds at T), tail_mean, stable, block_updates, microbatches, the method's
/// parameters, sweep[] (step_size, final_suboptimality, tail_mean, stable,
/// diverged) and curve {slot[], block_updates[], suboptimality[]} (mean
/// over seeds of the selected step; time_s[] instead of slot[] with a
/// cost table).
llvm::json::Value toJSON(const Comparison &c);
/// CSV: method,step_size,selected,seed,slot,block_updates,suboptimality;
/// one row per curve point of every run of every sweep entry.
std::string toCSV(const Comparison &c);
/// Text summary table: best tuned result per method.
std::string summaryTable(const Comparison &c);
/// SVG with two log-scale panels, f - f* against slots and against block
/// updates, one polyline per method (selected step, mean over seeds).
std::string renderSVG(const Comparison &c);

//===----------------------------------------------------------------------===//
// Scaling with S
//===----------------------------------------------------------------------===//

/// Least-squares fit of log y = a + b log x; returns b (the exponent) and
/// sets *intercept and *r2 when given. Needs >= 2 points with x, y > 0.
double fitPowerLaw(const std::vector<double> &x, const std::vector<double> &y,
                   double *intercept = nullptr, double *r2 = nullptr);

/// One stage count of the scaling experiment.
struct ScalingPoint {
  int stages = 0;
  /// Largest delay the simulator applied in the second half of the
  /// updates of one run at the fixed step (past the start-up transient).
  int maxDelay = 0;
  double largestStableStep = 0; ///< Largest stable grid step (0: none).
  double floorAtFixedStep = 0;  ///< Tail mean at the fixed step.
  /// The same runs with every read forced fresh (RunConfig::forceZeroDelay:
  /// same update order, batches and noise): the floor without staleness.
  double zeroDelayFloor = 0;
  /// floorAtFixedStep - zeroDelayFloor: what the stale reads add, the
  /// quantity the paper's stale-read term gamma^2 L^2 delta^2 G^2 bounds.
  double staleExcess = 0;
};
struct ScalingResult {
  std::string objective;
  Method method = Method::PipeDream;
  std::vector<ScalingPoint> points;
  double fixedStep = 0;
  double stepExponent = 0, stepR2 = 0;     ///< largestStableStep ~ S^b.
  double floorExponent = 0, floorR2 = 0;   ///< floorAtFixedStep ~ S^b.
  double delayExponent = 0, delayR2 = 0;   ///< maxDelay ~ S^b.
  double excessExponent = 0, excessR2 = 0; ///< staleExcess ~ S^b.
};

/// For every S in `stageCounts`, runs `base.method` over the fine grid
/// `steps` (all seeds) and records the largest step that is stable (rule
/// as in selectStep), the tail mean at `fixedStep` with and without
/// staleness and the largest delay; fits exponents (fitPowerLaw; points
/// with a value <= 0 or not finite are left out of a fit).
llvm::Expected<ScalingResult>
runScaling(const Objective &obj, const RunConfig &base,
           const std::vector<int> &stageCounts,
           const std::vector<double> &steps, const std::vector<uint64_t> &seeds,
           double fixedStep, const SelectionRule &rule = {},
           const std::function<void(int, int)> &progress = nullptr);
llvm::json::Value toJSON(const ScalingResult &r);
std::string scalingTable(const ScalingResult &r);

//===----------------------------------------------------------------------===//
// Explorer: the best method per stage count
//===----------------------------------------------------------------------===//

/// One method's tuned result at one S (exploreStages).
struct ExploreEntry {
  Method method = Method::PipeDream;
  double stepSize = 0;    ///< Selected step (selectStep).
  double finalSubopt = 0; ///< Mean over seeds of f - f* at T; +inf: diverged.
  double tailMean = 0;
  bool stable = false;
  long blockUpdates = 0; ///< Of the selected step's first seed.
};
struct ExploreRow {
  int stages = 0;
  std::vector<ExploreEntry> entries; ///< In the order of `methods`.
  int best = -1;     ///< Lowest finite finalSubopt (-1: every method diverged).
  int runnerUp = -1; ///< Second lowest finite (-1: none).
  /// runner-up f - f* / best f - f* (>= 1; +inf without a finite runner-up).
  double margin = 0;
};
struct ExploreResult {
  std::string objective;
  long budgetSlots = 0;
  std::shared_ptr<const sim::CostTable> costs; ///< Cost-table time model.
  double budgetSec = 0;
  std::vector<ExploreRow> rows; ///< One per stage count, in input order.
};

/// For every S of `stageCounts` tunes every method of `methods` (tuneMethod:
/// `steps` x `seeds`, `rule`; base.stages and base.method are replaced) and
/// reports the method with the lowest final f - f* at the common budget T
/// (slots, or seconds when base.costs is set: the table is resampled to each
/// S) and its margin over the runner-up: the question "which method at this
/// S?" of the fair time-budget protocol (arXiv 2606.03498, notes section 4).
/// Errors: empty lists and any run's error (prefixed with S and method).
llvm::Expected<ExploreResult> exploreStages(
    const Objective &obj, const RunConfig &base,
    const std::vector<int> &stageCounts, const std::vector<Method> &methods,
    const std::vector<double> &steps, const std::vector<uint64_t> &seeds,
    const SelectionRule &rule = {},
    const std::function<void(int, int)> &progress = nullptr);
/// JSON: experiment "explore", objective, time_model, budget_slots or
/// budget_s, rows[] with stages, best, best_final_suboptimality, runner_up,
/// margin (null when undefined) and methods[] (method, step_size,
/// final_suboptimality, tail_mean, stable, block_updates).
llvm::json::Value toJSON(const ExploreResult &r);
/// Text table: one line per S with the best method, its f - f*, the
/// runner-up, the margin and every method's f - f*.
std::string exploreTable(const ExploreResult &r);

} // namespace converge
} // namespace pipeopt

#endif // PIPEOPT_SIMULATE_CONVERGE_H
