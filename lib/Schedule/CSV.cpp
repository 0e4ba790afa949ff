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
/// We read both the compute-only and the compute+comms forms, with every
/// action type of torch 2.15's `_ComputationType` (the mapping is in
/// Schedule.h at formatAction() and in docs/TorchCSV.md).
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
#include <tuple>

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

namespace {
/// What a torch action type becomes in pipeopt.
enum class TypeKind : uint8_t {
  Action,         ///< F, I, W, B, SEND_*, RECV_*: a pipeopt Action.
  WaitSend,       ///< WAIT_SEND_F / WAIT_SEND_B: checked and dropped.
  Unshard,        ///< FSDP all-gather: skipped.
  Reshard,        ///< FSDP free: skipped.
  ReduceGrad,     ///< Data-parallel gradient reduction: skipped.
  WaitReduceGrad, ///< Its wait: skipped.
  Overlap,        ///< "(a;b)OVERLAP_F_B": expanded.
};

struct TypeInfo {
  llvm::StringLiteral name;
  TypeKind kind;
  Phase phase;      ///< TypeKind::Action / WaitSend
  bool backward;    ///< comm: gradient
  const char *what; ///< for messages
};

/// torch 2.15's `_ComputationType`, every member.
const TypeInfo kTypes[] = {
    {"F", TypeKind::Action, Phase::F, false, "forward"},
    {"I", TypeKind::Action, Phase::B, false, "input gradient"},
    {"W", TypeKind::Action, Phase::W, false, "weight gradient"},
    {"B", TypeKind::Action, Phase::BW, false, "full backward"},
    {"SEND_F", TypeKind::Action, Phase::Send, false, "send activation"},
    {"RECV_F", TypeKind::Action, Phase::Recv, false, "receive activation"},
    {"SEND_B", TypeKind::Action, Phase::Send, true, "send gradient"},
    {"RECV_B", TypeKind::Action, Phase::Recv, true, "receive gradient"},
    {"WAIT_SEND_F", TypeKind::WaitSend, Phase::Send, false,
     "wait for an activation send"},
    {"WAIT_SEND_B", TypeKind::WaitSend, Phase::Send, true,
     "wait for a gradient send"},
    {"UNSHARD", TypeKind::Unshard, Phase::F, false, "FSDP unshard"},
    {"RESHARD", TypeKind::Reshard, Phase::F, false, "FSDP reshard"},
    {"REDUCE_GRAD", TypeKind::ReduceGrad, Phase::F, false,
     "gradient reduction"},
    {"WAIT_REDUCE_GRAD", TypeKind::WaitReduceGrad, Phase::F, false,
     "wait for a gradient reduction"},
    {"OVERLAP_F_B", TypeKind::Overlap, Phase::F, false,
     "overlapped forward and backward"},
};

constexpr const char *kTypeList =
    "F, I (input gradient), W, B (full backward), SEND_F, RECV_F, SEND_B, "
    "RECV_B, WAIT_SEND_F, WAIT_SEND_B, UNSHARD, RESHARD, REDUCE_GRAD, "
    "WAIT_REDUCE_GRAD, (<action>;<action>)OVERLAP_F_B";

const TypeInfo *findType(llvm::StringRef name) {
  for (const TypeInfo &t : kTypes)
    if (t.name == name)
      return &t;
  return nullptr;
}

/// One token "<stage><TYPE>[<microbatch>][@<peer stage>]".
struct Token {
  const TypeInfo *type = nullptr;
  int stage = 0;
  int microbatch = -1; ///< -1: none written
  int peerStage = -1;  ///< -1: none written
};

/// Parses one (trimmed, non-empty, not parenthesised) token; the error is
/// "invalid action '<text>': <why>".
llvm::Expected<Token> parseToken(llvm::StringRef orig) {
  llvm::StringRef t = orig;
  auto bad = [&](const llvm::Twine &why) {
    return err("invalid action '{0}': {1} (expected <stage><type><microbatch> "
               "such as 2F0, 1I3, 0SEND_F1)",
               orig, why.str());
  };
  size_t digits = t.find_first_not_of("0123456789");
  if (digits == 0)
    return bad("no stage index");
  if (digits == llvm::StringRef::npos)
    return bad("no type");
  Token tok;
  if (t.take_front(digits).getAsInteger(10, tok.stage))
    return bad("bad stage index");
  t = t.drop_front(digits);
  size_t typeLen = t.find_first_not_of(
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_");
  llvm::StringRef type = t.take_front(typeLen);
  if (type.empty())
    return bad("no type");
  tok.type = findType(type);
  if (!tok.type)
    return bad(llvm::Twine("unknown type '") + type +
               "' (torch 2.15 types, case-sensitive: " + kTypeList + ")");
  t = t.drop_front(type.size());
  if (tok.type->kind == TypeKind::Overlap)
    return bad("OVERLAP_F_B groups sub-actions: (<action>;<action>)"
               "OVERLAP_F_B");
  llvm::StringRef mb = t.take_while(llvm::isDigit);
  t = t.drop_front(mb.size());
  if (!mb.empty() && mb.getAsInteger(10, tok.microbatch))
    return bad("bad microbatch index");
  bool needsMb = tok.type->kind == TypeKind::Action ||
                 tok.type->kind == TypeKind::WaitSend;
  if (needsMb && mb.empty())
    return bad("missing or bad microbatch index");
  if (t.consume_front("@")) {
    if (tok.type->kind != TypeKind::Action ||
        (tok.type->phase != Phase::Send && tok.type->phase != Phase::Recv))
      return bad("a peer suffix on an action other than SEND_* / RECV_*");
    llvm::StringRef peer = t.take_while(llvm::isDigit);
    t = t.drop_front(peer.size());
    if (peer.empty() || !t.empty() || peer.getAsInteger(10, tok.peerStage))
      return bad("bad peer stage");
  }
  if (!t.empty())
    return bad(llvm::Twine("unexpected '") + t +
               "' after the microbatch index");
  return tok;
}

Action toAction(const Token &tok) {
  Action a;
  a.phase = tok.type->phase;
  a.stage = tok.stage;
  a.microbatch = tok.microbatch;
  a.backward = tok.type->backward;
  if (a.isComm())
    a.peerStage = tok.peerStage >= 0 ? tok.peerStage : defaultPeer(a);
  return a;
}

/// Splits `csv` into lines at "\r\n", "\n" or "\r".
std::vector<llvm::StringRef> splitLines(llvm::StringRef csv) {
  std::vector<llvm::StringRef> lines;
  size_t start = 0;
  for (size_t i = 0; i < csv.size(); ++i) {
    if (csv[i] != '\n' && csv[i] != '\r')
      continue;
    lines.push_back(csv.slice(start, i));
    if (csv[i] == '\r' && i + 1 < csv.size() && csv[i + 1] == '\n')
      ++i;
    start = i + 1;
  }
  if (start < csv.size())
    lines.push_back(csv.drop_front(start));
  return lines;
}

constexpr const char *kBlanks = " \t";
} // namespace

llvm::Expected<Action> pipeopt::schedule::parseAction(llvm::StringRef text) {
  llvm::StringRef t = text.trim(kBlanks);
  if (t.starts_with("("))
    return err("invalid action '{0}': an OVERLAP_F_B group is several "
               "actions (importCSV runs them one after the other)",
               t);
  auto tok = parseToken(t);
  if (!tok)
    return tok.takeError();
  if (tok->type->kind != TypeKind::Action)
    return err("invalid action '{0}': {1} ({2}) is a torch-only action with "
               "no pipeopt equivalent (importCSV {3} it)",
               t, tok->type->name, tok->type->what,
               tok->type->kind == TypeKind::WaitSend ? "checks and drops"
                                                     : "skips");
  return toAction(*tok);
}

std::string pipeopt::schedule::exportCSV(const Schedule &s,
                                         const CSVExportOptions &opts) {
  std::string out;
  for (const auto &row : s.actions) {
    bool first = true;
    auto cell = [&](const std::string &text) {
      if (!first)
        out += ",";
      first = false;
      out += text;
    };
    for (const Action &a : row) {
      if (opts.computeOnly && a.isComm())
        continue;
      cell(formatAction(a));
      if (!opts.computeOnly && opts.sendWaits && a.phase == Phase::Send)
        cell(std::to_string(a.stage) +
             (a.backward ? "WAIT_SEND_B" : "WAIT_SEND_F") +
             std::to_string(a.microbatch));
    }
    // A rank with nothing to do is a line of empty cells: a blank line is
    // not read back (importCSV takes it for a mistake that would shift the
    // ranks after it, and drops it at the end of the file).
    if (first)
      out += ",";
    out += "\n";
  }
  return out;
}

llvm::Expected<Schedule>
pipeopt::schedule::importCSV(llvm::StringRef csv,
                             const CSVImportOptions &opts) {
  Schedule s;
  s.name = opts.name;
  CSVImportStats stats;
  if (csv.starts_with("\xFF\xFE") || csv.starts_with("\xFE\xFF"))
    return err("CSV schedule is UTF-16 (it starts with a UTF-16 byte-order "
               "mark); save it as UTF-8 or ASCII");
  csv.consume_front("\xEF\xBB\xBF"); // UTF-8 byte-order mark
  std::vector<llvm::StringRef> lines = splitLines(csv);
  // Blank lines at the end (an editor's extra newline) are not ranks.
  while (!lines.empty() && lines.back().trim(kBlanks).empty())
    lines.pop_back();
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].trim(kBlanks).empty())
      return err("line {0} is blank: every line of a schedule CSV is one "
                 "rank's actions, so it would be an idle rank {1} and shift "
                 "the ranks after it; remove it (a rank with nothing to do "
                 "is a line of empty cells, e.g. ',')",
                 i + 1, i);
  if (opts.numStages > kMaxCSVIndex + 1 ||
      opts.numMicrobatches > kMaxCSVIndex + 1)
    return err("CSV import: {0} stages / {1} microbatches requested, more "
               "than {2}",
               opts.numStages, opts.numMicrobatches, kMaxCSVIndex + 1);
  if (lines.size() > size_t(kMaxCSVIndex) + 1)
    return err("CSV schedule has {0} rows (ranks), more than {1}", lines.size(),
               kMaxCSVIndex + 1);
  int maxStage = -1, maxMb = -1;
  for (size_t r = 0; r < lines.size(); ++r) {
    llvm::StringRef line = lines[r];
    s.actions.emplace_back();
    // Sends not yet matched by a WAIT_SEND: (stage, mb, backward) -> count.
    std::map<std::tuple<int, int, bool>, int> unwaited;
    llvm::SmallVector<llvm::StringRef> cells;
    line.split(cells, ',');
    for (auto [c, rawCell] : llvm::enumerate(cells)) {
      llvm::StringRef cell = rawCell.trim(kBlanks);
      if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"')
        cell = cell.drop_front().drop_back().trim(kBlanks);
      if (cell.empty())
        continue; // idle slot
      auto where = [&](llvm::Error e) {
        return err("line {0} (rank {1}), cell {2}: {3}", r + 1, r, c + 1,
                   llvm::toString(std::move(e)));
      };
      // Plain tokens, or the sub-actions of an OVERLAP_F_B group.
      llvm::SmallVector<llvm::StringRef> tokens;
      if (cell.starts_with("(")) {
        size_t close = cell.find(')');
        llvm::StringRef type =
            close == llvm::StringRef::npos ? "" : cell.drop_front(close + 1);
        if (close == llvm::StringRef::npos ||
            type.trim(kBlanks) != "OVERLAP_F_B")
          return where(err("invalid action '{0}': a '(' group must be "
                           "(<action>;<action>;...)OVERLAP_F_B",
                           cell));
        cell.slice(1, close).split(tokens, ';', -1, /*KeepEmpty=*/false);
        for (llvm::StringRef &t : tokens)
          t = t.trim(kBlanks);
        llvm::erase_if(tokens, [](llvm::StringRef t) { return t.empty(); });
        if (tokens.empty())
          return where(
              err("invalid action '{0}': OVERLAP_F_B of no actions", cell));
        ++stats.overlapped;
      } else {
        tokens.push_back(cell);
      }
      for (llvm::StringRef text : tokens) {
        auto tok = parseToken(text);
        if (!tok)
          return where(tok.takeError());
        bool inGroup = tokens.size() > 1 || cell.starts_with("(");
        if (inGroup && (tok->type->kind != TypeKind::Action ||
                        tok->type->phase == Phase::Send ||
                        tok->type->phase == Phase::Recv))
          return where(err("invalid action '{0}': OVERLAP_F_B groups compute "
                           "actions (F, I, W, B), not {1}",
                           cell, tok->type->name));
        switch (tok->type->kind) {
        case TypeKind::Action:
          break;
        case TypeKind::WaitSend: {
          auto key =
              std::make_tuple(tok->stage, tok->microbatch, tok->type->backward);
          auto it = unwaited.find(key);
          if (it == unwaited.end() || it->second == 0)
            return where(err("'{0}' waits for {1}{2}{3}, but rank {4} has not "
                             "sent it before",
                             text, tok->stage,
                             tok->type->backward ? "SEND_B" : "SEND_F",
                             tok->microbatch, r));
          --it->second;
          ++stats.waitSend;
          continue;
        }
        case TypeKind::Unshard:
          ++stats.unshard;
          continue;
        case TypeKind::Reshard:
          ++stats.reshard;
          continue;
        case TypeKind::ReduceGrad:
          ++stats.reduceGrad;
          continue;
        case TypeKind::WaitReduceGrad:
          ++stats.waitReduceGrad;
          continue;
        case TypeKind::Overlap:
          llvm_unreachable("rejected by parseToken");
        }
        Action a = toAction(*tok);
        // Bound the indices before they size any table below (a typo such as
        // "0F2000000000" must not turn into a multi-gigabyte allocation).
        auto tooLarge = [&](const char *what, int value) {
          return err("line {0} (rank {1}), cell {2}: action '{3}' has {4} "
                     "{5}, more than the largest supported {4} {6}",
                     r + 1, r, c + 1, text, what, value, kMaxCSVIndex);
        };
        if (a.stage > kMaxCSVIndex)
          return tooLarge("stage index", a.stage);
        if (a.peerStage > kMaxCSVIndex)
          return tooLarge("peer stage index", a.peerStage);
        if (a.microbatch > kMaxCSVIndex)
          return tooLarge("microbatch index", a.microbatch);
        if (a.phase == Phase::Send)
          ++unwaited[std::make_tuple(a.stage, a.microbatch, a.backward)];
        maxStage = std::max({maxStage, a.stage, a.peerStage});
        maxMb = std::max(maxMb, a.microbatch);
        s.actions.back().push_back(a);
      }
    }
  }
  if (opts.stats)
    *opts.stats = stats;
  if (s.actions.empty())
    return err("CSV schedule has no rows");
  s.numRanks = static_cast<int>(s.actions.size());
  s.numStages = opts.numStages > 0 ? opts.numStages : maxStage + 1;
  s.numMicrobatches =
      opts.numMicrobatches > 0 ? opts.numMicrobatches : maxMb + 1;
  if (s.numStages <= 0 || s.numMicrobatches <= 0)
    return err("CSV schedule has no actions");
  if (maxStage >= s.numStages || maxMb >= s.numMicrobatches)
    return err("CSV schedule uses stage {0} / microbatch {1}, beyond the "
               "given {2} stages / {3} microbatches",
               maxStage, maxMb, s.numStages, s.numMicrobatches);

  // Placement: per microbatch, where each stage's compute runs. Every stage
  // needs a compute action, checked before the [microbatch][stage] table
  // is sized: a lone "0F21000" must not allocate stages x microbatches
  // (found by fuzz-torch-csv: "21001F21001" took 1.8 GB).
  int NS = s.numStages, M = s.numMicrobatches;
  std::vector<std::map<int, int>> votes(NS);
  for (int r = 0; r < s.numRanks; ++r)
    for (const Action &a : s.actions[r])
      if (a.isCompute())
        ++votes[a.stage][r];
  for (int st = 0; st < NS; ++st)
    if (votes[st].empty())
      return err("stage {0} has no compute action in the CSV; cannot infer "
                 "its rank",
                 st);
  constexpr int64_t kMaxPlacementCells = int64_t(1) << 24;
  if (int64_t(NS) * M > kMaxPlacementCells)
    return err("CSV schedule spans {0} stages x {1} microbatches = {2} "
               "(stage, microbatch) pairs, more than the {3} supported",
               NS, M, int64_t(NS) * M, kMaxPlacementCells);
  std::vector<std::vector<int>> where(M, std::vector<int>(NS, -1));
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
    }
  s.forwardOnly = !anyBackward;
  for (int st = 0; st < NS; ++st) {
    int best =
        std::max_element(votes[st].begin(), votes[st].end(),
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
  // Messages from here on name actions as the CSV writes them.
  ScopedActionNaming torchNames(ActionNaming::Torch);
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
