//===- Registry.cpp - The schedule registry ---------------------*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// One row per schedule (Schedule.h, "Schedule registry"): the only place
/// that knows a schedule by name. To add a schedule, write its generator
/// (Generators.cpp, declared in Schedule.h) and add its row here; the
/// passes, the partitioner's memory rule, the simulator's formula level,
/// pipeopt-explore and the option help text pick it up from the row.
///
/// Sources of the closed forms (the formulas themselves are in
/// Simulator.h / Formula.cpp):
///  - GPipe: Huang et al., "GPipe", NeurIPS'19, §2.3.
///  - 1F1B: Narayanan et al., "Efficient Large-Scale Language Model
///    Training on GPU Clusters Using Megatron-LM", SC'21, §2.2.1.
///  - interleaved 1F1B: same paper, §2.2.2.
///  - ZB-H1: Qi et al., "Zero Bubble Pipeline Parallelism", ICLR'24, §2.1.
///  - Chimera: Li & Hoefler, SC'21, Table 2.
///  - PipeDream: Harlap et al. 2018 (fill/drain), weight stashing
///    Narayanan et al. SOSP'19 §3.3, staleness Ilin & Richtarik arXiv
///    2606.03498.
///
//===----------------------------------------------------------------------===//

#include "ScheduleInternal.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"

using namespace pipeopt::schedule;

namespace {

std::vector<ScheduleInfo> buildRegistry() {
  std::vector<ScheduleInfo> rows;
  auto add = [&](ScheduleInfo row) { rows.push_back(std::move(row)); };
  ScheduleInfo r;

  r = {};
  r.name = "gpipe";
  r.summary = "GPipe: all forwards then all backwards (Huang et al. 2019)";
  r.generate = makeGPipe;
  r.inFlight = InFlightRule::All;
  r.closedForm = ClosedForm::GPipe;
  r.closedFormSource = "Huang et al., GPipe, NeurIPS'19, §2.3";
  r.constraints = "M >= 1";
  r.exploreByDefault = true;
  add(r);

  r = {};
  r.name = "1f1b";
  r.aliases = {"dapple", "onefoneb"};
  r.summary = "1F1B / PipeDream-Flush: S-1-r warm-up forwards, then one "
              "forward one backward (Narayanan et al. 2021)";
  r.generate = make1F1B;
  r.inFlight = InFlightRule::OneFOneB;
  r.closedForm = ClosedForm::OneFOneB;
  r.closedFormSource = "Narayanan et al., Megatron-LM, SC'21, §2.2.1";
  r.constraints = "M >= S";
  r.exploreByDefault = true;
  add(r);

  r = {};
  r.name = "interleaved-1f1b";
  r.aliases = {"interleaved"};
  r.summary = "interleaved 1F1B, v chunks per rank (Megatron-LM, Narayanan "
              "et al. SC'21)";
  r.generate = makeInterleaved1F1B;
  r.chunks = {ChunkRule::Configurable, 2};
  r.inFlight = InFlightRule::OneFOneB;
  r.closedForm = ClosedForm::Interleaved;
  r.closedFormSource = "Narayanan et al., Megatron-LM, SC'21, §2.2.2";
  r.constraints = "M >= S; num-stages a multiple of v";
  r.exploreByDefault = true;
  add(r);

  r = {};
  r.name = "looped-bfs";
  r.summary = "looped breadth-first: all microbatches per chunk "
              "(Lamy-Poirier 2023)";
  r.generate = makeLoopedBFS;
  r.chunks = {ChunkRule::Configurable, 2};
  r.inFlight = InFlightRule::Measured;
  r.constraints = "M >= 1; num-stages a multiple of v";
  add(r);

  r = {};
  r.name = "zb-h1";
  r.summary = "zero bubble H1: B/W split, W deferred, 1F1B memory (Qi et al. "
              "ICLR 2024)";
  r.generate = makeZBH1;
  r.splitBackward = true;
  r.inFlight = InFlightRule::OneFOneB;
  r.closedForm = ClosedForm::ZBH1;
  r.closedFormSource = "Qi et al., Zero Bubble Pipeline Parallelism, ICLR'24, "
                       "§2.1";
  r.constraints = "M >= S";
  r.exploreByDefault = true;
  add(r);

  r = {};
  r.name = "zb-h2";
  r.summary = "zero bubble H2: more warm-up forwards, W deferred to the tail, "
              "about 2x 1F1B's activations (Qi et al. ICLR 2024, §2.2)";
  r.generate = makeZBH2;
  r.splitBackward = true;
  r.inFlight = InFlightRule::Measured;
  r.constraints = "M >= S";
  add(r);

  r = {};
  r.name = "zb-v";
  r.summary = "zero bubble V: two chunks per rank in a V, B/W split (Qi et "
              "al. 2024)";
  r.generate = makeZBV;
  r.chunks = {ChunkRule::Fixed, 2};
  r.splitBackward = true;
  r.inFlight = InFlightRule::OneFOneB;
  r.constraints = "M >= S";
  r.exploreByDefault = true;
  add(r);

  r = {};
  r.name = "interleaved-zb";
  r.aliases = {"zb1p"};
  r.summary = "interleaved zero bubble (ZB1P): v chunks per rank, B/W split "
              "(Qi et al. ICLR 2024; torch's ScheduleInterleavedZeroBubble)";
  r.generate = makeInterleavedZB;
  r.chunks = {ChunkRule::Configurable, 2};
  r.splitBackward = true;
  r.inFlight = InFlightRule::Measured;
  r.constraints = "M a multiple of max(1, floor(M / S)); num-stages a "
                  "multiple of v";
  add(r);

  r = {};
  r.name = "chimera";
  r.summary = "Chimera: two bidirectional pipelines, even S (Li & Hoefler "
              "SC'21)";
  r.generate = makeChimera;
  r.inFlight = InFlightRule::Measured;
  r.closedForm = ClosedForm::Chimera;
  r.closedFormSource = "Li & Hoefler, Chimera, SC'21, Table 2";
  r.constraints = "S even; M a multiple of S";
  r.exploreByDefault = true;
  add(r);

  r = {};
  r.name = "hanayo";
  r.summary = "Hanayo: W waves of 2S stages (Liu et al. SC'23)";
  r.generate = makeHanayo;
  r.chunks = {ChunkRule::PerWave, 2};
  r.inFlight = InFlightRule::Measured;
  r.constraints = "waves >= 1; M >= S";
  r.exploreByDefault = true;
  add(r);

  r = {};
  r.name = "dualpipev";
  r.summary = "DualPipeV: V-shaped DualPipe (DeepSeek-V3)";
  r.generate = makeDualPipeV;
  r.chunks = {ChunkRule::Fixed, 2};
  r.splitBackward = true;
  r.inFlight = InFlightRule::Measured;
  r.constraints = "M >= 2S (S ranks)";
  r.exploreByDefault = true;
  add(r);

  r = {};
  r.name = "pipedream";
  r.summary = "PipeDream: async 1F1B with weight stashing (Narayanan et al. "
              "SOSP'19)";
  r.generate = makePipeDream;
  r.weightVersions = WeightVersions::PerBackward;
  r.inFlight = InFlightRule::Measured;
  r.closedForm = ClosedForm::PipeDream;
  r.closedFormSource = "Harlap et al. 2018 (fill/drain); Narayanan et al. "
                       "SOSP'19 §3.3 (weight stashing); Ilin & Richtarik "
                       "arXiv 2606.03498 (staleness)";
  r.constraints = "M >= 1";
  r.exploreByDefault = true;
  add(r);

  r = {};
  r.name = "pipedream-2bw";
  r.summary = "PipeDream-2BW: async, double-buffered weights (Narayanan et "
              "al. ICML'21)";
  r.generate = makePipeDream2BW;
  r.weightVersions = WeightVersions::PerRound;
  r.inFlight = InFlightRule::Measured;
  r.constraints = "M >= 1";
  add(r);

  r = {};
  r.name = kInferenceSchedule;
  r.aliases = {"inference"};
  r.summary = "inference: forwards only, GPipe order";
  r.generate = makeForwardOnly;
  r.forwardOnly = true;
  r.inFlight = InFlightRule::One;
  r.closedForm = ClosedForm::ForwardOnly;
  r.closedFormSource = "the forward half of GPipe (Huang et al., NeurIPS'19)";
  r.constraints = "M >= 1";
  add(r);

  return rows;
}

/// "ZB_H1" -> "zbh1": case, '-', '_' and ' ' insensitive key.
std::string key(llvm::StringRef name) {
  std::string k;
  for (char c : name)
    if (c != '-' && c != '_' && c != ' ')
      k.push_back(llvm::toLower(c));
  return k;
}

} // namespace

const std::vector<ScheduleInfo> &pipeopt::schedule::listSchedules() {
  static const std::vector<ScheduleInfo> rows = buildRegistry();
  return rows;
}

const ScheduleInfo *pipeopt::schedule::findSchedule(llvm::StringRef name) {
  for (const ScheduleInfo &row : listSchedules()) {
    if (row.name == name)
      return &row;
    for (llvm::StringRef alias : row.aliases)
      if (alias == name)
        return &row;
  }
  return nullptr;
}

const ScheduleInfo *pipeopt::schedule::findScheduleByKey(llvm::StringRef name) {
  const std::string k = key(name);
  for (const ScheduleInfo &row : listSchedules()) {
    if (key(row.name) == k)
      return &row;
    for (llvm::StringRef alias : row.aliases)
      if (key(alias) == k)
        return &row;
  }
  return nullptr;
}

std::string pipeopt::schedule::scheduleNames(llvm::StringRef separator) {
  std::string out;
  for (const ScheduleInfo &row : listSchedules()) {
    if (!out.empty())
      out += separator;
    out += row.name;
  }
  return out;
}

llvm::Expected<const ScheduleInfo &>
pipeopt::schedule::lookupSchedule(llvm::StringRef name) {
  if (const ScheduleInfo *row = findSchedule(name))
    return *row;
  return detail::err("unknown schedule '{0}' (known: {1})", name,
                     scheduleNames());
}

llvm::Expected<Schedule>
pipeopt::schedule::makeSchedule(llvm::StringRef name, const ScheduleParams &p) {
  llvm::Expected<const ScheduleInfo &> row = lookupSchedule(name);
  if (!row)
    return row.takeError();
  return row->generate(p);
}

int ScheduleInfo::chunksPerRank(const ScheduleParams &p) const {
  switch (chunks.kind) {
  case ChunkRule::Fixed:
    return chunks.count;
  case ChunkRule::Configurable:
    return p.virtualStages > 0 ? p.virtualStages : chunks.count;
  case ChunkRule::PerWave:
    return p.waves >= 1 ? chunks.count * p.waves : 0;
  }
  llvm_unreachable("unknown ChunkRule kind");
}

const ScheduleInfo &pipeopt::schedule::detail::infoOf(Generator g) {
  for (const ScheduleInfo &row : listSchedules())
    if (row.generate == g)
      return row;
  llvm::report_fatal_error("schedule generator without a registry row");
}
