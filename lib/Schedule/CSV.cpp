//===- CSV.cpp - torch.distributed.pipelining action/CSV format -*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Import/export of schedules in PyTorch's torch.distributed.pipelining
/// format (torch/distributed/pipelining/schedules.py): an action is
/// `_Action.__repr__` = stage index + computation type + microbatch index
/// ("0F0", "1I3", "2W1", "1B3" = full backward, "0SEND_F1", "1RECV_B0");
/// `_dump_csv` writes one csv row per rank with one action per cell and
/// `_load_csv` reads it back (empty cells are idle slots, None in torch).
/// We read both the compute-only and the compute+comms forms.
///
/// Differences, documented: rows end in '\n' (Python's csv writer uses
/// "\r\n"; both are accepted on input); weightVersion is not part of the
/// torch format and is not written; a comm action whose peer is not the
/// adjacent stage carries the suffix "@<peerStage>".
///
//===----------------------------------------------------------------------===//

#include "ScheduleInternal.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include <map>

using namespace pipeopt::schedule;
using namespace pipeopt::schedule::detail;

namespace {
/// Largest stage / microbatch index a CSV may use: counts stay within
/// kMaxPipelineCount.
constexpr int kMaxCSVIndex = kMaxPipelineCount - 1;

/// Default peer stage of a comm action in torch's format.
int defaultPeer(const Action &a) {
  bool towardsLater = (a.phase == Phase::Send) != a.backward;
  return towardsLater ? a.stage + 1 : a.stage - 1;
}
} // namespace

std::string pipeopt::schedule::formatAction(const Action &a) {
  std::string type;
  switch (a.phase) {
  case Phase::F:
    type = "F";
    break;
  case Phase::B:
    type = "I";
    break;
  case Phase::W:
    type = "W";
    break;
  case Phase::BW:
    type = "B";
    break;
  case Phase::Send:
    type = a.backward ? "SEND_B" : "SEND_F";
    break;
  case Phase::Recv:
    type = a.backward ? "RECV_B" : "RECV_F";
    break;
  }
  std::string out =
      std::to_string(a.stage) + type + std::to_string(a.microbatch);
  if (a.isComm() && a.peerStage != defaultPeer(a))
    out += "@" + std::to_string(a.peerStage);
  return out;
}

llvm::Expected<Action> pipeopt::schedule::parseAction(llvm::StringRef text) {
  llvm::StringRef t = text.trim();
  llvm::StringRef orig = t;
  auto bad = [&](const char *why) {
    return err("invalid action '{0}': {1} (expected <stage><type><microbatch> "
               "such as 2F0, 1I3, 0SEND_F1)",
               orig, why);
  };
  size_t digits = t.find_first_not_of("0123456789");
  if (digits == 0 || digits == llvm::StringRef::npos)
    return bad("no stage index or no type");
  Action a;
  if (t.take_front(digits).getAsInteger(10, a.stage))
    return bad("bad stage index");
  t = t.drop_front(digits);
  static const std::pair<const char *, std::pair<Phase, bool>> types[] = {
      {"SEND_F", {Phase::Send, false}}, {"SEND_B", {Phase::Send, true}},
      {"RECV_F", {Phase::Recv, false}}, {"RECV_B", {Phase::Recv, true}},
      {"F", {Phase::F, false}},         {"I", {Phase::B, false}},
      {"W", {Phase::W, false}},         {"B", {Phase::BW, false}}};
  bool found = false;
  for (auto &[name, kind] : types)
    if (t.consume_front(name)) {
      a.phase = kind.first;
      a.backward = kind.second;
      found = true;
      break;
    }
  if (!found)
    return bad("unknown type (UNSHARD/RESHARD/REDUCE_GRAD and overlapped "
               "actions are not supported)");
  llvm::StringRef mb = t, peer;
  std::tie(mb, peer) = t.split('@');
  if (mb.empty() || mb.getAsInteger(10, a.microbatch) || a.microbatch < 0)
    return bad("missing or bad microbatch index");
  if (t.contains('@')) {
    if (a.isCompute())
      return bad("a peer suffix on a compute action");
    if (peer.getAsInteger(10, a.peerStage) || a.peerStage < 0)
      return bad("bad peer stage");
  } else if (a.isComm()) {
    a.peerStage = defaultPeer(a);
  }
  return a;
}

std::string pipeopt::schedule::exportCSV(const Schedule &s) {
  std::string out;
  for (const auto &row : s.actions) {
    bool first = true;
    for (const Action &a : row) {
      if (!first)
        out += ",";
      first = false;
      out += formatAction(a);
    }
    out += "\n";
  }
  return out;
}

llvm::Expected<Schedule>
pipeopt::schedule::importCSV(llvm::StringRef csv, const CSVImportOptions &opts) {
  Schedule s;
  s.name = opts.name;
  llvm::SmallVector<llvm::StringRef> lines;
  csv.split(lines, '\n');
  // A trailing newline leaves one empty last line.
  if (!lines.empty() && lines.back().trim().empty())
    lines.pop_back();
  if (opts.numStages > kMaxCSVIndex + 1 ||
      opts.numMicrobatches > kMaxCSVIndex + 1)
    return err("CSV import: {0} stages / {1} microbatches requested, more "
               "than {2}",
               opts.numStages, opts.numMicrobatches, kMaxCSVIndex + 1);
  if (lines.size() > size_t(kMaxCSVIndex) + 1)
    return err("CSV schedule has {0} rows (ranks), more than {1}",
               lines.size(), kMaxCSVIndex + 1);
  int maxStage = -1, maxMb = -1;
  for (size_t r = 0; r < lines.size(); ++r) {
    llvm::StringRef line = lines[r].rtrim("\r");
    s.actions.emplace_back();
    llvm::SmallVector<llvm::StringRef> cells;
    line.split(cells, ',');
    for (auto [c, cell] : llvm::enumerate(cells)) {
      if (cell.trim().empty())
        continue; // idle slot
      auto a = parseAction(cell);
      if (!a)
        return err("rank {0}: {1}", r, llvm::toString(a.takeError()));
      // Bound the indices before they size any table below (a typo such as
      // "0F2000000000" must not turn into a multi-gigabyte allocation).
      auto tooLarge = [&](const char *what, int value) {
        return err("line {0} (rank {1}), cell {2}: action '{3}' has {4} {5}, "
                   "more than the largest supported {4} {6}",
                   r + 1, r, c + 1, cell.trim(), what, value, kMaxCSVIndex);
      };
      if (a->stage > kMaxCSVIndex)
        return tooLarge("stage index", a->stage);
      if (a->peerStage > kMaxCSVIndex)
        return tooLarge("peer stage index", a->peerStage);
      if (a->microbatch > kMaxCSVIndex)
        return tooLarge("microbatch index", a->microbatch);
      maxStage = std::max({maxStage, a->stage, a->peerStage});
      maxMb = std::max(maxMb, a->microbatch);
      s.actions.back().push_back(*a);
    }
  }
  if (s.actions.empty())
    return err("CSV schedule has no rows");
  s.numRanks = static_cast<int>(s.actions.size());
  s.numStages = opts.numStages > 0 ? opts.numStages : maxStage + 1;
  s.numMicrobatches = opts.numMicrobatches > 0 ? opts.numMicrobatches : maxMb + 1;
  if (s.numStages <= 0 || s.numMicrobatches <= 0)
    return err("CSV schedule has no actions");
  if (maxStage >= s.numStages || maxMb >= s.numMicrobatches)
    return err("CSV schedule uses stage {0} / microbatch {1}, beyond the "
               "given {2} stages / {3} microbatches",
               maxStage, maxMb, s.numStages, s.numMicrobatches);

  // Placement: per microbatch, where each stage's compute runs.
  int NS = s.numStages, M = s.numMicrobatches;
  std::vector<std::vector<int>> where(M, std::vector<int>(NS, -1));
  std::vector<std::map<int, int>> votes(NS);
  bool anyBackward = false;
  for (int r = 0; r < s.numRanks; ++r)
    for (const Action &a : s.actions[r]) {
      if (!a.isCompute())
        continue;
      if (a.phase != Phase::F)
        anyBackward = true;
      if (a.phase == Phase::B || a.phase == Phase::W)
        s.splitBackward = true;
      if (where[a.microbatch][a.stage] < 0)
        where[a.microbatch][a.stage] = r;
      ++votes[a.stage][r];
    }
  s.forwardOnly = !anyBackward;
  for (int st = 0; st < NS; ++st) {
    if (votes[st].empty())
      return err("stage {0} has no compute action in the CSV; cannot infer "
                 "its rank",
                 st);
    int best = std::max_element(votes[st].begin(), votes[st].end(),
                                [](auto a, auto b) { return a.second < b.second; })
                   ->first;
    for (int m = 0; m < M; ++m)
      if (where[m][st] < 0)
        where[m][st] = best;
  }
  for (int m = 0; m < M; ++m) {
    auto it = llvm::find(s.stageRank, where[m]);
    if (it == s.stageRank.end()) {
      s.stageRank.push_back(where[m]);
      s.microbatchPipeline.push_back(static_cast<int>(s.stageRank.size()) - 1);
    } else {
      s.microbatchPipeline.push_back(
          static_cast<int>(it - s.stageRank.begin()));
    }
  }
  // Graph: the chain plus skip edges named by explicit comm peers.
  StageGraph g = StageGraph::chain(NS);
  for (int r = 0; r < s.numRanks; ++r)
    for (Action &a : s.actions[r]) {
      if (!a.isComm())
        continue;
      if (a.peerStage < 0 || a.peerStage >= NS)
        return err("rank {0}: {1} refers to stage {2}, outside 0..{3}", r,
                   formatAction(a), a.peerStage, NS - 1);
      a.peerRank = s.rankOf(a.peerStage, a.microbatch);
      bool isSend = a.phase == Phase::Send;
      int producer = isSend ? a.stage : a.peerStage;
      int consumer = isSend ? a.peerStage : a.stage;
      int lo = a.backward ? consumer : producer;
      int hi = a.backward ? producer : consumer;
      if (lo < hi && !llvm::any_of(g.edges, [&](const StageEdge &e) {
            return e.from == lo && e.to == hi;
          }))
        g.edges.push_back({lo, hi, 0});
    }
  if (llvm::Error e = validate(s, g))
    return std::move(e);
  if (s.hasCommunication())
    if (llvm::Error e = checkDeadlockFree(s))
      return std::move(e);
  return s;
}
