//===- Formula.cpp - Closed-form pipeline metrics (level 1) ---------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// Every closed form names its source next to it. Conventions shared with the
// other levels are in Simulator.h.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Simulate/Simulator.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <set>

using namespace pipeopt;
using namespace pipeopt::sim;

//===----------------------------------------------------------------------===//
// The formulas
//===----------------------------------------------------------------------===//

double formula::bubbleGPipe(int S, int M) {
  // Huang et al., "GPipe", NeurIPS'19, §2.3: bubble overhead O((K-1)/(M+K-1)).
  if (S <= 0 || M <= 0)
    return 0;
  return static_cast<double>(S - 1) / (M + S - 1);
}

double formula::bubble1F1B(int S, int M) {
  // Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
  // Clusters Using Megatron-LM", SC'21, §2.2.1: bubble time (p-1)(t_f+t_b),
  // ideal time m(t_f+t_b); as a fraction of the makespan (p-1)/(m+p-1).
  return bubbleGPipe(S, M);
}

double formula::bubbleInterleaved(int S, int M, int v) {
  // Narayanan et al., SC'21, §2.2.2: with v model chunks per device the
  // bubble time shrinks to (p-1)(t_f+t_b)/v; the fraction of the makespan
  // is ((p-1)/v) / (m + (p-1)/v) = (p-1)/(v*m + p-1).
  if (S <= 0 || M <= 0 || v <= 0)
    return 0;
  return static_cast<double>(S - 1) / (static_cast<double>(v) * M + S - 1);
}

double formula::bubbleZBH1(int S, int M, double tF, double tB, double tW) {
  // Qi et al., "Zero Bubble Pipeline Parallelism", ICLR'24, §2.1: ZB-H1's
  // bubble is (p-1)(T_F + T_B - T_W) (1F1B: (p-1)(T_F + T_B + T_W)); with
  // T_F = T_B = T_W that is a third of 1F1B's. As a fraction of the makespan
  // m(T_F+T_B+T_W) + bubble.
  if (S <= 0 || M <= 0)
    return 0;
  double bubble = std::max(0.0, (S - 1) * (tF + tB - tW));
  double work = M * (tF + tB + tW);
  if (work + bubble <= 0)
    return 0;
  return bubble / (work + bubble);
}

double formula::bubbleChimera(int S, int M) {
  // Li & Hoefler, "Chimera: Efficiently Training Large-Scale Neural Networks
  // with Bidirectional Pipelines", SC'21, Table 2: bubble ratio
  // (D-2)/(2N+D-2) for D stages and N microbatches, counting forward and
  // backward as one slot each (D-2 idle slots per worker).
  if (S <= 0 || M <= 0)
    return 0;
  return std::max(0.0, static_cast<double>(S - 2) / (2.0 * M + S - 2));
}

int formula::pipeDreamMaxDelay(int S) {
  // Ilin & Richtarik, arXiv 2606.03498: steady-state PipeDream delay
  // S^2 - S/2 + O(1); with the delay definition on sim::Staleness the
  // maximum is exactly floor(S^2 - S/2).
  return S * S - (S + 1) / 2;
}

double formula::pipeDreamMeanDelay(int S) {
  // Ilin & Richtarik, arXiv 2606.03498: mean over stage pairs (S^2 - 1)/2.
  return (static_cast<double>(S) * S - 1) / 2;
}

//===----------------------------------------------------------------------===//
// evaluateFormula
//===----------------------------------------------------------------------===//

using Family = schedule::ClosedForm;

/// The closed-form family of the registry row `name` names (case, '-', '_'
/// and ' ' insensitive; aliases included); None for other names ("csv").
static Family familyOf(llvm::StringRef name) {
  const schedule::ScheduleInfo *row = schedule::findScheduleByKey(name);
  return row ? row->closedForm : Family::None;
}

Metrics sim::evaluateFormula(const schedule::Schedule &s,
                             const CostTable &costsIn,
                             const machine::Machine &sys) {
  Metrics m;
  m.level = Level::Formula;
  Family fam = familyOf(s.name);
  const int R = s.numRanks, S = s.numStages, M = s.numMicrobatches;
  if (fam == Family::None || R <= 0 || S <= 0 || M <= 0 ||
      s.stageRank.empty()) {
    m.available = false;
    m.note = llvm::formatv("n/a: no closed form for '{0}'", s.name).str();
    return m;
  }
  CostTable costs = costsIn.resample(S);
  if (costs.size() != S) {
    m.available = false;
    m.note = "n/a: empty cost table";
    return m;
  }
  const double speed =
      sys.simulation.computeSpeed > 0 ? sys.simulation.computeSpeed : 1.0;

  // Microbatches per pipeline.
  const int P = static_cast<int>(s.stageRank.size());
  std::vector<int> mbPerPipe(P, 0);
  for (int mb = 0; mb < M; ++mb) {
    int p = mb < static_cast<int>(s.microbatchPipeline.size())
                ? s.microbatchPipeline[mb]
                : 0;
    if (p >= 0 && p < P)
      ++mbPerPipe[p];
  }

  // Calls fn(pipeline, stage, rank) for every placed (pipeline, stage).
  auto forEachPlacement = [&](auto fn) {
    for (int p = 0; p < P; ++p)
      for (int st = 0; st < static_cast<int>(s.stageRank[p].size()) && st < S;
           ++st) {
        int r = s.stageRank[p][st];
        if (r >= 0 && r < R)
          fn(p, st, r);
      }
  };

  // Per-rank compute per microbatch (s), and the bottleneck rank's F/B/W.
  std::vector<double> busy(R, 0), fSum(R, 0), bSum(R, 0), wSum(R, 0);
  forEachPlacement([&](int p, int st, int r) {
    const StageCost &c = costs.stages[st];
    fSum[r] += mbPerPipe[p] * c.forwardSec / speed;
    bSum[r] += mbPerPipe[p] * c.backwardInputSec / speed;
    wSum[r] +=
        mbPerPipe[p] * (c.backwardWeightSec + c.gradientAccumulateSec) / speed;
  });
  int bottleneck = 0;
  for (int r = 0; r < R; ++r) {
    // Inference runs forwards only, whatever backward costs the table has.
    busy[r] =
        fam == Family::ForwardOnly ? fSum[r] : fSum[r] + bSum[r] + wSum[r];
    if (busy[r] > busy[bottleneck])
      bottleneck = r;
  }
  const double tMax = busy[bottleneck] / M; // per microbatch

  // The pipeline depth the formulas call p (or D): ranks.
  const int depth = R;
  const int v = std::max(1, S / std::max(R, 1));
  double bubble = 0;
  switch (fam) {
  case Family::GPipe:
    bubble = formula::bubbleGPipe(depth, M);
    m.note = "GPipe (Huang et al. NeurIPS'19): bubble (S-1)/(M+S-1)";
    break;
  case Family::OneFOneB:
    bubble = formula::bubble1F1B(depth, M);
    m.note = "1F1B (Narayanan et al. SC'21 §2.2.1): bubble (S-1)/(M+S-1)";
    break;
  case Family::Interleaved:
    bubble = formula::bubbleInterleaved(depth, M, v);
    m.note = llvm::formatv("interleaved 1F1B (Narayanan et al. SC'21 §2.2.2): "
                           "bubble (S-1)/(v*M+S-1), v={0}",
                           v)
                 .str();
    break;
  case Family::ZBH1:
    bubble = formula::bubbleZBH1(depth, M, fSum[bottleneck] / M,
                                 bSum[bottleneck] / M, wSum[bottleneck] / M);
    m.note = "ZB-H1 (Qi et al. ICLR'24 §2.1): bubble time (S-1)(F+B-W)";
    break;
  case Family::Chimera:
    bubble = formula::bubbleChimera(depth, M);
    m.note = "Chimera (Li & Hoefler SC'21 Table 2): bubble (S-2)/(2M+S-2), "
             "2x weights";
    break;
  case Family::PipeDream:
    bubble = formula::bubble1F1B(depth, M);
    m.note = "PipeDream (Harlap et al. 2018): fill/drain of one run "
             "(S-1)/(M+S-1), no flush; staleness per Ilin & Richtarik "
             "arXiv 2606.03498";
    break;
  case Family::ForwardOnly:
    // The forward half of GPipe (Huang et al. NeurIPS'19): fill and drain
    // of S-1 slots around M forwards.
    bubble = formula::bubbleGPipe(depth, M);
    m.note = "forward-only (GPipe's forward half): bubble (S-1)/(M+S-1)";
    break;
  case Family::None:
    break;
  }
  m.makespanSec = bubble < 1 ? M * tMax / (1 - bubble) : 0;
  m.bubblePerRank.assign(R, 0);
  double busyTotal = 0;
  for (int r = 0; r < R; ++r) {
    busyTotal += busy[r];
    m.bubblePerRank[r] =
        m.makespanSec > 0 ? std::max(0.0, 1 - busy[r] / m.makespanSec) : 0;
  }
  m.bubbleRatio = m.makespanSec > 0
                      ? std::max(0.0, 1 - busyTotal / (R * m.makespanSec))
                      : 0;

  // Activation peaks (in-flight microbatches x activation bytes).
  m.peakActivationBytes.assign(R, 0);
  m.weightBytes.assign(R, 0);
  std::set<std::pair<int, int>> placed;
  forEachPlacement([&](int p, int st, int r) {
    const StageCost &c = costs.stages[st];
    const int Mp = mbPerPipe[p];
    // Position of this stage in its pipeline's rank order (0 = first).
    const int pos = st % depth;
    double inflight = 0;
    switch (fam) {
    case Family::GPipe:
      inflight = Mp; // GPipe keeps all M microbatches until the flush.
      break;
    case Family::ForwardOnly:
      inflight = std::min(1, Mp); // Nothing is kept for a backward.
      break;
    case Family::OneFOneB:
    case Family::ZBH1:
    case Family::PipeDream:
      // 1F1B: stage s holds min(S - s, M) microbatches (Narayanan et al.
      // SC'21 §2.2.1); ZB-H1 keeps 1F1B's peak (Qi et al. §2.1).
      inflight = std::min(depth - pos, Mp);
      break;
    case Family::Chimera:
      // Two 1F1B pipelines of M/2 microbatches each; the stage's position
      // in its own pipeline's direction (Li & Hoefler SC'21: between
      // (D/2+1) and D microbatches' activations per worker).
      inflight = std::min(depth - st, Mp);
      break;
    case Family::Interleaved: {
      // Megatron-LM's interleaved schedule warms up with
      // (p - r - 1) * 2 + (v - 1) * p chunk-microbatches, then holds one
      // more in 1F1B; spread over the rank's v chunks.
      int warm = (depth - r - 1) * 2 + (v - 1) * depth;
      inflight = std::min(v * Mp, warm + 1) / static_cast<double>(v);
      break;
    }
    case Family::None:
      break;
    }
    m.peakActivationBytes[r] += inflight * c.activationBytes;
    if (!placed.insert({r, st}).second)
      return;
    double copies = 1;
    if (fam == Family::PipeDream)
      copies = depth - pos; // weight stashing: S - s versions (PipeDream §3.3)
    m.weightBytes[r] += copies * c.weightBytes;
  });

  // Communication: each microbatch's activation (and, when training, its
  // gradient) crosses every cut edge once.
  double directions = fam == Family::ForwardOnly || s.forwardOnly ? 1.0 : 2.0;
  for (int p = 0; p < P; ++p)
    for (int st = 0;
         st + 1 < static_cast<int>(s.stageRank[p].size()) && st + 1 < S; ++st)
      if (s.stageRank[p][st] != s.stageRank[p][st + 1])
        m.commBytes +=
            directions * mbPerPipe[p] * costs.stages[st].boundaryBytes;

  if (s.async) {
    Staleness st;
    st.maxDelay = formula::pipeDreamMaxDelay(S);
    st.meanDelay = formula::pipeDreamMeanDelay(S);
    st.steadyState = true;
    st.firstMicrobatch = 0;
    st.endMicrobatch = M;
    m.staleness = st;
  }
  return m;
}
