//===- Communication.cpp - Send/Recv lowering and deadlock check -*- C++
//-*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// insertCommunication() and checkDeadlockFree().
///
/// Placement rule (a documented alternative to parity ordering). Naively
/// putting every Send right after its producer and every Recv right before
/// its consumer deadlocks under rendezvous semantics already for 1F1B with
/// S = 2 (rank 0 blocks in SEND_F of mb 1 while rank 1 blocks in SEND_B of
/// mb 0). Instead we derive one global order from the unit-time execution of
/// the (valid) compute table:
///  - a compute action that starts at slot t gets key (t, 1);
///  - a transfer whose producer finishes at slot T gets key (T, 0, its
///    place among the transfers of T) on *both* ranks: the Send right after
///    its producer (nothing of the sender's compute runs in between), the
///    Recv at the
///    point of the receiver's list where the receiver has finished every
///    compute that ends by T and started none at or after T. The consumer
///    starts at or after T, so the Recv still precedes it.
/// Each rank's list is its actions sorted by key. All ranks' lists are
/// projections of the same total order in which every Send/Recv pair is
/// adjacent, so that order is a complete rendezvous execution: the lowered
/// table cannot deadlock, and messages between two ranks are received in the
/// order they were sent (safe for tag-less NCCL point-to-point).
///
//===----------------------------------------------------------------------===//

#include "ScheduleInternal.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <tuple>

using namespace pipeopt::schedule;
using namespace pipeopt::schedule::detail;

llvm::Expected<Schedule>
pipeopt::schedule::insertCommunication(const Schedule &s, const StageGraph &g) {
  if (s.hasCommunication())
    return tableErr("schedule '{0}' already has send/recv actions", s.name);
  if (llvm::Error e = validate(s, g))
    return std::move(e);
  auto slotsOr = slotsWithGraph(s, g);
  if (!slotsOr)
    return slotsOr.takeError();
  const auto &slots = *slotsOr;

  // Sort key: (time, kind 0=comm/1=compute, then for a compute its rank
  // and position, for a transfer its place among the transfers of its
  // time) -- unique per action.
  using Key = std::tuple<int, int, int, int, int, int>;
  std::vector<std::vector<std::pair<Key, Action>>> rows(s.numRanks);
  struct Transfer {
    Key order; // (T, 0, sender, sender position, edge, direction)
    int sender, receiver;
    Action send, recv;
  };
  std::vector<Transfer> transfers;
  for (int r = 0; r < s.numRanks; ++r)
    for (int i = 0; i < static_cast<int>(s.actions[r].size()); ++i) {
      const Action &a = s.actions[r][i];
      int t = slots[r][i];
      rows[r].push_back({Key{t, 1, r, i, 0, 0}, a});
      int T = t + 1;
      int m = a.microbatch;
      bool fwd = a.phase == Phase::F;
      bool bwd = a.phase == Phase::B || a.phase == Phase::BW;
      if (!fwd && !bwd)
        continue;
      for (int e = 0; e < static_cast<int>(g.edges.size()); ++e) {
        const StageEdge &edge = g.edges[e];
        int producer = fwd ? edge.from : edge.to;
        int consumer = fwd ? edge.to : edge.from;
        if (producer != a.stage)
          continue;
        int peer = s.rankOf(consumer, m);
        if (peer == r)
          continue;
        transfers.push_back({Key{T, 0, r, i, e, bwd ? 1 : 0}, r, peer,
                             Action::send(producer, m, peer, consumer, bwd),
                             Action::recv(consumer, m, r, producer, bwd)});
      }
    }
  // Within one time T, a rank that sends X and receives Y should send
  // first: with buffered sends (loopback, eager MPI) its message then
  // leaves at once instead of after a recv that may wait a whole stage
  // time (a forward chain with the order by sender rank made every rank
  // forward microbatch m only after microbatch m + 1 had arrived). Order
  // each time's transfers topologically by "X before Y when X's sender
  // receives Y", ties and cycles (two ranks exchanging values at the same
  // time) broken by the key above. It stays one global order, so the
  // argument above still holds.
  llvm::sort(transfers, [](const Transfer &a, const Transfer &b) {
    return a.order < b.order;
  });
  for (size_t lo = 0; lo < transfers.size();) {
    size_t hi = lo;
    while (hi < transfers.size() &&
           std::get<0>(transfers[hi].order) == std::get<0>(transfers[lo].order))
      ++hi;
    const int n = static_cast<int>(hi - lo);
    // before[x]: the transfers x must precede (x's sender receives them).
    std::vector<int> indeg(n, 0);
    std::vector<std::vector<int>> before(n);
    for (int x = 0; x < n; ++x)
      for (int y = 0; y < n; ++y)
        if (x != y && transfers[lo + x].sender == transfers[lo + y].receiver) {
          before[x].push_back(y);
          ++indeg[y];
        }
    std::vector<bool> placed(n, false);
    for (int place = 0; place < n; ++place) {
      // The first (by key) transfer nothing unplaced must precede, else
      // the first unplaced one (a cycle).
      int pick = -1;
      for (int x = 0; x < n && pick < 0; ++x)
        if (!placed[x] && indeg[x] == 0)
          pick = x;
      for (int x = 0; x < n && pick < 0; ++x)
        if (!placed[x])
          pick = x;
      placed[pick] = true;
      for (int y : before[pick])
        --indeg[y];
      const Transfer &tr = transfers[lo + pick];
      Key k{std::get<0>(tr.order), 0, place, 0, 0, 0};
      rows[tr.sender].push_back({k, tr.send});
      rows[tr.receiver].push_back({k, tr.recv});
    }
    lo = hi;
  }
  Schedule out = s;
  for (int r = 0; r < s.numRanks; ++r) {
    llvm::stable_sort(rows[r], [](const auto &a, const auto &b) {
      return a.first < b.first;
    });
    out.actions[r].clear();
    for (auto &kv : rows[r])
      out.actions[r].push_back(kv.second);
  }
  if (llvm::Error e = validate(out, g))
    return std::move(e);
  if (llvm::Error e = checkDeadlockFree(out))
    return std::move(e);
  return out;
}

namespace {
/// "send to rank 1 (F stage 0 mb 2)" / "recv from rank 0 (F stage 0 mb 2)":
/// the value is named by its producing stage on both ends.
std::string waitText(const Action &a) {
  if (ScopedActionNaming::current() == ActionNaming::Torch)
    return llvm::formatv("{0} {1} rank {2}: {3}",
                         a.phase == Phase::Send ? "send" : "recv",
                         a.phase == Phase::Send ? "to" : "from", a.peerRank,
                         describe(a))
        .str();
  int producer = a.phase == Phase::Send ? a.stage : a.peerStage;
  std::string value =
      a.value != 0 ? llvm::formatv(" value {0}", a.value).str() : "";
  return llvm::formatv("{0} {1} rank {2} ({3} stage {4} mb {5}{6})",
                       a.phase == Phase::Send ? "send" : "recv",
                       a.phase == Phase::Send ? "to" : "from", a.peerRank,
                       a.backward ? "B" : "F", producer, a.microbatch, value)
      .str();
}

bool matches(const Action &send, int sendRank, const Action &recv,
             int recvRank) {
  return send.phase == Phase::Send && recv.phase == Phase::Recv &&
         send.peerRank == recvRank && recv.peerRank == sendRank &&
         send.stage == recv.peerStage && send.peerStage == recv.stage &&
         send.microbatch == recv.microbatch && send.backward == recv.backward &&
         send.value == recv.value;
}
} // namespace

llvm::Error pipeopt::schedule::checkDeadlockFree(const Schedule &s) {
  int R = static_cast<int>(s.actions.size());
  std::vector<size_t> pc(R, 0);
  auto finished = [&](int r) { return pc[r] >= s.actions[r].size(); };
  auto skipCompute = [&](int r) {
    while (!finished(r) && s.actions[r][pc[r]].isCompute())
      ++pc[r];
  };
  for (int r = 0; r < R; ++r) {
    skipCompute(r);
    for (int i = 0; i < static_cast<int>(s.actions[r].size()); ++i) {
      const Action &a = s.actions[r][i];
      if (a.isComm() && (a.peerRank < 0 || a.peerRank >= R))
        return scheduleErr({ScheduleErrorKind::BadAction, {r, i}, a},
                           "rank {0}: {1} names rank {2}, outside 0..{3}", r,
                           describe(a), a.peerRank, R - 1);
    }
  }
  auto here = [&](int r) { return ActionRef{r, static_cast<int>(pc[r])}; };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < R; ++r) {
      if (finished(r))
        continue;
      const Action &a = s.actions[r][pc[r]];
      int q = a.peerRank;
      if (finished(q))
        continue;
      const Action &b = s.actions[q][pc[q]];
      if (b.peerRank != r || b.phase == a.phase)
        continue;
      const Action &snd = a.phase == Phase::Send ? a : b;
      const Action &rcv = a.phase == Phase::Send ? b : a;
      int sr = a.phase == Phase::Send ? r : q,
          rr = a.phase == Phase::Send ? q : r;
      if (!matches(snd, sr, rcv, rr))
        return scheduleErr(
            {ScheduleErrorKind::Mismatched, here(sr), snd, here(rr)},
            "mismatched send/recv: rank {0} posts {1} to rank "
            "{2}, but rank {2} posts {3} from rank {0}",
            sr, describe(snd), rr, describe(rcv));
      ++pc[r];
      ++pc[q];
      skipCompute(r);
      skipCompute(q);
      progress = true;
    }
  }
  int start = -1;
  for (int r = 0; r < R && start < 0; ++r)
    if (!finished(r))
      start = r;
  if (start < 0)
    return llvm::Error::success();
  // Every blocked rank waits on exactly one peer: follow the chain.
  std::vector<int> seenAt(R, -1);
  std::vector<int> chain;
  int r = start;
  while (seenAt[r] < 0) {
    seenAt[r] = static_cast<int>(chain.size());
    chain.push_back(r);
    const Action &a = s.actions[r][pc[r]];
    int q = a.peerRank;
    if (finished(q))
      return scheduleErr({ScheduleErrorKind::Unmatched, here(r), a, {q, -1}},
                         "unmatched {0}: rank {1} waits on {2}, but rank {3} "
                         "has finished its actions",
                         a.phase == Phase::Send ? "send" : "recv", r,
                         waitText(a), q);
    r = q;
  }
  ErrorSite site{ScheduleErrorKind::Deadlock};
  std::string text = "deadlock: ";
  for (int i = seenAt[r]; i < static_cast<int>(chain.size()); ++i) {
    int cr = chain[i];
    text += llvm::formatv("rank {0} waits on {1} -> ", cr,
                          waitText(s.actions[cr][pc[cr]]))
                .str();
    site.cycle.push_back(here(cr));
  }
  text += "rank " + std::to_string(r);
  site.at = site.cycle.front();
  site.action = s.actions[site.at.rank][site.at.index];
  return scheduleErr(std::move(site), "{0}", text);
}
