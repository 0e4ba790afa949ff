//===- ProgramTable.cpp - Per-rank programs read back as a schedule -------===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// See ProgramTable.h. Shared by pipe-verify-schedule and pipe-simulate
/// (writeScheduleCSV() also by pipe-schedule).
///
//===----------------------------------------------------------------------===//

#include "pipeopt/Programs/ProgramTable.h"
#include "pipeopt/Programs/ProgramChecks.h"
#include "pipeopt/Support/OptionRange.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ToolOutputFile.h"

#include <map>
#include <optional>
#include <set>
#include <tuple>

using namespace mlir;
using namespace pipeopt;
namespace sched = pipeopt::schedule;

StringRef pipeopt::programBaseName(StringRef name) {
  size_t pos = name.rfind("_rank");
  if (pos == StringRef::npos)
    return name;
  StringRef digits = name.drop_front(pos + 5);
  if (digits.empty() || !llvm::all_of(digits, llvm::isDigit))
    return name;
  return name.take_front(pos);
}

llvm::MapVector<StringRef, SmallVector<pipe::ProgramOp>>
pipeopt::groupPrograms(ModuleOp module) {
  llvm::MapVector<StringRef, SmallVector<pipe::ProgramOp>> groups;
  for (auto p : module.getOps<pipe::ProgramOp>())
    groups[programBaseName(p.getSymName())].push_back(p);
  return groups;
}

FailureOr<std::vector<pipe::ProgramOp>>
pipeopt::programsByRank(StringRef base, ArrayRef<pipe::ProgramOp> programs) {
  llvm::Expected<std::vector<pipe::ProgramOp>> byRank =
      orderProgramsByRank(base, programs);
  if (!byRank) {
    (void)emitProgramError(byRank.takeError(), programs.front());
    return failure();
  }
  return std::move(*byRank);
}

FailureOr<ProgramTable>
pipeopt::readProgramTable(ModuleOp module, StringRef base,
                          ArrayRef<pipe::ProgramOp> byRank) {
  ProgramTable table;
  pipe::ProgramOp first = byRank.front();
  int64_t R = first.getNumRanks(), M = first.getNumMicrobatches();

  // The stage graph: from @<base> when it is one, else the chain plus the
  // edges named by the tags.
  sched::StageGraph &graph = table.graph;
  int S = 0;
  auto fn = module.lookupSymbol<func::FuncOp>(base);
  if (fn && isStageGraph(fn)) {
    FailureOr<StageGraphInfo> info = analyzeStageGraph(fn);
    if (failed(info))
      return failure();
    graph = info->graph;
    S = info->numStages();
    table.stageGraph = std::move(*info);
  } else {
    std::set<std::pair<int, int>> edges;
    for (pipe::ProgramOp p : byRank)
      for (Operation &op : p.getBody().front()) {
        std::optional<int64_t> stage;
        if (auto f = dyn_cast<pipe::ForwardOp>(op))
          stage = f.getStage();
        else if (auto bw = dyn_cast<pipe::BackwardOp>(op))
          stage = bw.getStage();
        if (stage) {
          // Checked before narrowing: the stage count sizes the table.
          if (*stage >= kMaxPipelineCount)
            return op.emitError()
                   << "stage " << *stage << " is out of range: at most "
                   << kMaxPipelineCount << " stages";
          S = std::max<int>(S, static_cast<int>(*stage) + 1);
        }
        pipe::TagAttr tag;
        if (auto send = dyn_cast<pipe::SendOp>(op))
          tag = send.getTag();
        else if (auto recv = dyn_cast<pipe::RecvOp>(op))
          tag = recv.getTag();
        if (!tag)
          continue;
        int lo = std::min(tag.getSrcStage(), tag.getDstStage());
        int hi = std::max(tag.getSrcStage(), tag.getDstStage());
        S = std::max(S, hi + 1);
        if (lo != hi)
          edges.insert({lo, hi});
      }
    for (int k = 0; k + 1 < S; ++k)
      edges.insert({k, k + 1});
    graph.numStages = S;
    for (auto [from, to] : edges)
      graph.edges.push_back({from, to, 0});
  }

  // The programs as a schedule table. A multi-value transfer becomes one
  // Send/Recv action (the library counts one per stage pair); its first op
  // stands for it.
  sched::Schedule &s = table.schedule;
  s.name = first.getSchedule() ? first.getSchedule()->str() : base.str();
  s.numRanks = R;
  s.numStages = S;
  s.numMicrobatches = M;
  s.actions.resize(R);
  table.opOf.resize(R);
  // (stage, microbatch) -> rank of its forward.
  std::map<std::pair<int, int>, int> where;
  bool anyBackward = false, split = false;
  for (int64_t r = 0; r < R; ++r) {
    std::set<std::tuple<bool, bool, int, int, int>> seenComm;
    for (Operation &op : pipe::ProgramOp(byRank[r]).getBody().front()) {
      sched::Action a;
      if (auto f = dyn_cast<pipe::ForwardOp>(op)) {
        a = sched::Action::compute(sched::Phase::F, f.getStage(),
                                   f.getMicrobatch());
        where.emplace(std::make_pair(a.stage, a.microbatch), r);
      } else if (auto bw = dyn_cast<pipe::BackwardOp>(op)) {
        anyBackward = true;
        sched::Phase phase = sched::Phase::BW;
        if (bw.getKind() == pipe::BackwardKind::Input)
          phase = sched::Phase::B;
        else if (bw.getKind() == pipe::BackwardKind::Weight)
          phase = sched::Phase::W;
        split |= phase != sched::Phase::BW;
        a = sched::Action::compute(phase, bw.getStage(), bw.getMicrobatch());
      } else if (isa<pipe::SendOp, pipe::RecvOp>(op)) {
        bool isSend = isa<pipe::SendOp>(op);
        pipe::TagAttr tag = isSend ? cast<pipe::SendOp>(op).getTag()
                                   : cast<pipe::RecvOp>(op).getTag();
        int peer = isSend ? cast<pipe::SendOp>(op).getPeer()
                          : cast<pipe::RecvOp>(op).getPeer();
        bool backward = tag.getDirection() == pipe::Direction::Backward;
        int src = tag.getSrcStage(), dst = tag.getDstStage();
        if (!seenComm.insert({isSend, backward, src, dst, tag.getMicrobatch()})
                 .second)
          continue;
        // The tag names the value's producer (src) and consumer (dst).
        a = isSend ? sched::Action::send(src, tag.getMicrobatch(), peer, dst,
                                         backward)
                   : sched::Action::recv(dst, tag.getMicrobatch(), peer, src,
                                         backward);
      } else {
        continue;
      }
      s.actions[r].push_back(a);
      table.opOf[r].push_back(&op);
    }
  }
  s.splitBackward = split;
  s.forwardOnly = !anyBackward;
  // The per-value table: the same actions with every transfer op its own.
  sched::Schedule &pv = table.perValue;
  pv.name = s.name;
  pv.numRanks = R;
  pv.numStages = S;
  pv.numMicrobatches = M;
  pv.splitBackward = split;
  pv.forwardOnly = !anyBackward;
  pv.actions.resize(R);
  table.perValueOpOf.resize(R);
  for (int64_t r = 0; r < R; ++r) {
    // opOf[r] lists a subsequence of the program's ops, in order.
    size_t k = 0;
    for (Operation &op : pipe::ProgramOp(byRank[r]).getBody().front()) {
      if (k < table.opOf[r].size() && table.opOf[r][k] == &op) {
        sched::Action a = s.actions[r][k++];
        if (a.isComm())
          a.value = isa<pipe::SendOp>(op)
                        ? cast<pipe::SendOp>(op).getTag().getValueIndex()
                        : cast<pipe::RecvOp>(op).getTag().getValueIndex();
        pv.actions[r].push_back(a);
        table.perValueOpOf[r].push_back(&op);
        continue;
      }
      bool isSend = isa<pipe::SendOp>(op);
      if (!isSend && !isa<pipe::RecvOp>(op))
        continue;
      pipe::TagAttr tag = isSend ? cast<pipe::SendOp>(op).getTag()
                                 : cast<pipe::RecvOp>(op).getTag();
      int peer = isSend ? cast<pipe::SendOp>(op).getPeer()
                        : cast<pipe::RecvOp>(op).getPeer();
      bool backward = tag.getDirection() == pipe::Direction::Backward;
      int src = tag.getSrcStage(), dst = tag.getDstStage();
      sched::Action a = isSend ? sched::Action::send(src, tag.getMicrobatch(),
                                                     peer, dst, backward)
                               : sched::Action::recv(dst, tag.getMicrobatch(),
                                                     peer, src, backward);
      a.value = tag.getValueIndex();
      pv.actions[r].push_back(a);
      table.perValueOpOf[r].push_back(&op);
    }
  }
  // Placement: per microbatch, the rank of every stage's forward; a stage
  // with no forward for a microbatch takes its rank from another
  // microbatch (validate() then reports the missing forward).
  std::vector<int> fallback(S, 0);
  for (int k = S - 1; k >= 0; --k)
    for (int m = M - 1; m >= 0; --m)
      if (where.count({k, m}))
        fallback[k] = where[{k, m}];
  for (int m = 0; m < M; ++m) {
    std::vector<int> placement(S);
    for (int k = 0; k < S; ++k) {
      auto it = where.find({k, m});
      placement[k] = it == where.end() ? fallback[k] : it->second;
    }
    auto it = llvm::find(s.stageRank, placement);
    s.microbatchPipeline.push_back(static_cast<int>(it - s.stageRank.begin()));
    if (it == s.stageRank.end())
      s.stageRank.push_back(placement);
  }
  if (s.stageRank.empty())
    s.stageRank.push_back(std::vector<int>(S, 0));
  pv.stageRank = s.stageRank;
  pv.microbatchPipeline = s.microbatchPipeline;
  return table;
}

LogicalResult pipeopt::writeScheduleCSV(Location loc, StringRef pass,
                                        StringRef path,
                                        const sched::Schedule &s,
                                        bool computeOnly) {
  sched::CSVExportOptions opts;
  opts.computeOnly = computeOnly;
  std::string text = sched::exportCSV(s, opts);
  std::string errorMessage;
  std::unique_ptr<llvm::ToolOutputFile> file =
      openOutputFile(path, &errorMessage);
  if (!file)
    return emitError(loc) << pass << ": export-csv: cannot write '" << path
                          << "': " << errorMessage;
  file->os() << text;
  file->os().flush();
  file->keep();
  return success();
}
