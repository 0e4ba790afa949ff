//===- ShardedOptimizer.cpp - ZeRO-1 optimizer-state sharding ---*- C++ -*-===//
//
// See ShardedOptimizer.h for the layout, why the step is exact, and the
// memory it saves.
//
//===----------------------------------------------------------------------===//

#include "ShardedOptimizer.h"

#include <algorithm>
#include <cstring>

namespace pipeopt {
namespace rt {

/// The control tag of a replica's block of ZeRO-1's gather.
static constexpr int32_t kGatherTag = 0x5A31; // "Z1"

namespace {

/// Elements [lo, hi) of `v`.
std::vector<double> sliceOf(const std::vector<double> &v, size_t lo,
                            size_t hi) {
  return std::vector<double>(v.begin() + long(lo), v.begin() + long(hi));
}

/// The elements of a parameter (at `offset`, `size` elements) that
/// replica `e` owns with shards of `shard` elements: [lo, hi).
std::pair<size_t, size_t> ownedBy(size_t offset, size_t size, size_t shard,
                                  int e) {
  size_t begin = size_t(e) * shard, end = begin + shard;
  size_t lo = std::min(std::max(begin, offset), offset + size) - offset;
  size_t hi = std::min(std::max(end, offset), offset + size) - offset;
  return {lo, std::max(lo, hi)};
}

} // namespace

ShardedOptimizer::ShardedOptimizer(const std::map<int, size_t> &sizes,
                                   int replicas, int replica)
    : replicas(replicas), replica(replica) {
  if (replicas < 1)
    throw RuntimeError("ZeRO-1 optimizer: " + std::to_string(replicas) +
                       " replicas (need at least 1)");
  if (replica < 0 || replica >= replicas)
    throw RuntimeError("ZeRO-1 optimizer: replica " + std::to_string(replica) +
                       " out of range for " + std::to_string(replicas) +
                       " replicas");
  for (const auto &entry : sizes) {
    Slice &s = slices[entry.first];
    s.size = entry.second;
    s.offset = total;
    total += entry.second;
  }
  shard = (total + size_t(replicas) - 1) / size_t(replicas);
  for (auto &entry : slices) {
    Slice &s = entry.second;
    auto r = ownedBy(s.offset, s.size, shard, replica);
    s.lo = r.first;
    s.hi = r.second;
  }
}

std::pair<size_t, size_t> ShardedOptimizer::ownedRange(int p) const {
  auto it = slices.find(p);
  if (it == slices.end())
    throw RuntimeError("ZeRO-1 optimizer: no parameter " + std::to_string(p));
  return {it->second.lo, it->second.hi};
}

size_t ShardedOptimizer::stateBytes() const {
  size_t n = 0;
  for (const auto &entry : slices)
    n += entry.second.state.first.bytes() + entry.second.state.second.bytes();
  return n;
}

void ShardedOptimizer::checkGroup(const Communicator &dp,
                                  const char *what) const {
  if (dp.size() != replicas || dp.rank() != replica)
    throw RuntimeError(
        "ZeRO-1 " + std::string(what) + " of replica " +
        std::to_string(replica) + " of " + std::to_string(replicas) +
        ": the data-parallel communicator has " + std::to_string(dp.size()) +
        " ranks and this is rank " + std::to_string(dp.rank()) +
        " (pass the communicator of this rank's replicas)");
}

void ShardedOptimizer::step(Communicator &dp, const TrainingConfig &config,
                            std::map<int, std::vector<double>> &gradSums,
                            std::map<int, std::vector<double>> &weights,
                            double scale, double timeoutS) {
  checkGroup(dp, "step");
  auto check = [&](std::map<int, std::vector<double>> &m, int p, size_t n,
                   const char *what) -> std::vector<double> & {
    auto it = m.find(p);
    if (it == m.end())
      throw RuntimeError("ZeRO-1 step of replica " + std::to_string(replica) +
                         ": no " + what + " for parameter " +
                         std::to_string(p));
    if (it->second.size() != n)
      throw RuntimeError("ZeRO-1 step of replica " + std::to_string(replica) +
                         ": the " + what + " of parameter " +
                         std::to_string(p) + " has " +
                         std::to_string(it->second.size()) +
                         " elements, expected " + std::to_string(n));
    return it->second;
  };
  // The padded concatenation of the sums; later the gathered weights.
  std::vector<double> all(shard * size_t(replicas), 0.0);
  for (const auto &entry : slices) {
    const Slice &s = entry.second;
    const std::vector<double> &g =
        check(gradSums, entry.first, s.size, "gradient sum");
    check(weights, entry.first, s.size, "weights");
    std::copy(g.begin(), g.end(), all.begin() + long(s.offset));
  }
  std::vector<double> owned(shard, 0.0);
  dp.startReduceScatterSum(all.data(), owned.data(), shard)->wait(timeoutS);

  // Update the owned elements; `owned` then holds their new weights.
  size_t base = size_t(replica) * shard;
  for (auto &entry : slices) {
    Slice &s = entry.second;
    size_t n = s.hi - s.lo, at = s.offset + s.lo - base;
    std::vector<double> g(n), w = sliceOf(weights[entry.first], s.lo, s.hi);
    for (size_t i = 0; i < n; ++i)
      g[i] = owned[at + i] * scale;
    // Also for n == 0: every replica counts the step (AdamW's t).
    optimizerStep(config, w, g, s.state);
    if (n)
      std::copy(w.begin(), w.end(), owned.begin() + long(at));
    s.meanGrad = std::move(g);
  }
  // The padding (past N) is zero (it was never read).
  for (size_t i = total > base ? total - base : 0; i < shard; ++i)
    owned[i] = 0;
  dp.startAllGather(owned.data(), all.data(), shard * sizeof(double))
      ->wait(timeoutS);
  for (const auto &entry : slices) {
    const Slice &s = entry.second;
    std::vector<double> &w = weights[entry.first];
    std::copy(all.begin() + long(s.offset),
              all.begin() + long(s.offset + s.size), w.begin());
  }
}

std::map<int, std::pair<OptimizerState, std::vector<double>>>
ShardedOptimizer::gather(Communicator &dp, double timeoutS) {
  checkGroup(dp, "gather");
  // This replica's block: per parameter (has first, has second, has mean
  // gradient, step), then its slices of first, second and the mean
  // gradient, each at the owned elements' place in the shard.
  size_t P = slices.size(), block = 4 * P + 3 * shard;
  std::vector<double> mine(block, 0.0);
  size_t base = size_t(replica) * shard, k = 0;
  for (const auto &entry : slices) {
    const Slice &s = entry.second;
    mine[4 * k] = s.state.first.empty() ? 0 : 1;
    mine[4 * k + 1] = s.state.second.empty() ? 0 : 1;
    mine[4 * k + 2] = s.meanGrad.empty() ? 0 : 1;
    mine[4 * k + 3] = double(s.state.step);
    ++k;
    if (s.lo == s.hi)
      continue;
    size_t at = s.offset + s.lo - base;
    const StateBuffer *parts[2] = {&s.state.first, &s.state.second};
    for (size_t j = 0; j < 2; ++j)
      for (size_t i = 0; i < parts[j]->size(); ++i)
        mine[4 * P + j * shard + at + i] = (*parts[j])[i];
    std::copy(s.meanGrad.begin(), s.meanGrad.end(),
              mine.begin() + long(4 * P + 2 * shard + at));
  }
  // To replica 0 only (a point-to-point message from each replica, in
  // replica order): an all-gather would give every replica the full
  // state, the memory that ZeRO-1 saves.
  std::map<int, std::pair<OptimizerState, std::vector<double>>> out;
  MessageHeader h;
  h.kind = MessageHeader::Control;
  h.tag = kGatherTag;
  h.dtype = uint8_t(DType::F64);
  h.setShape({int64_t(block)});
  h.bytes = int64_t(block * sizeof(double));
  if (replica != 0) {
    h.srcRank = dp.rank();
    h.dstRank = 0;
    h.seal();
    dp.send(0, h, mine.data(), block * sizeof(double), timeoutS);
    dp.flush(timeoutS);
    return out;
  }
  std::vector<double> every(block * size_t(replicas));
  std::copy(mine.begin(), mine.end(), every.begin());
  for (int e = 1; e < replicas; ++e) {
    Message msg = dp.recv(e, timeoutS);
    std::string bad = msg.header.validate();
    if (bad.empty() && (msg.header.kind != MessageHeader::Control ||
                        msg.header.tag != kGatherTag ||
                        msg.payload.size() != block * sizeof(double)))
      bad = "expected its " + std::to_string(block * sizeof(double)) +
            "-byte block of the optimizer state, got " +
            std::to_string(msg.payload.size()) + " bytes (tag " +
            std::to_string(msg.header.tag) + ")";
    if (!bad.empty())
      throw RuntimeError("ZeRO-1 gather from replica " + std::to_string(e) +
                         ": " + bad);
    std::memcpy(every.data() + size_t(e) * block, msg.payload.data(),
                block * sizeof(double));
  }
  k = 0;
  for (const auto &entry : slices) {
    int p = entry.first;
    const Slice &s = entry.second;
    OptimizerState st;
    st.dtype = s.state.dtype;
    std::vector<double> first, second, mean;
    std::vector<double> *parts[3] = {&first, &second, &mean};
    st.step = int64_t(every[4 * k + 3]);
    // A part exists if the replicas owning elements of the parameter have
    // it (they all do or none does: they applied the same steps).
    int has[3] = {-1, -1, -1};
    for (int e = 0; e < replicas; ++e) {
      const double *b = every.data() + size_t(e) * block;
      if (int64_t(b[4 * k + 3]) != st.step)
        throw RuntimeError("ZeRO-1 gather: replica " + std::to_string(e) +
                           " counted " + std::to_string(int64_t(b[4 * k + 3])) +
                           " optimizer steps of parameter " +
                           std::to_string(p) + ", replica 0 " +
                           std::to_string(st.step) +
                           " (every replica must call step at the same steps)");
      auto r = ownedBy(s.offset, s.size, shard, e);
      if (r.first == r.second)
        continue;
      for (size_t j = 0; j < 3; ++j) {
        int h = b[4 * k + j] != 0;
        if (has[j] >= 0 && has[j] != h)
          throw RuntimeError("ZeRO-1 gather: the replicas disagree on "
                             "whether parameter " +
                             std::to_string(p) +
                             " has optimizer state (replica " +
                             std::to_string(e) + ")");
        has[j] = h;
        if (!h)
          continue;
        parts[j]->resize(s.size);
        const double *src =
            b + 4 * P + j * shard + (s.offset + r.first - size_t(e) * shard);
        std::copy(src, src + (r.second - r.first),
                  parts[j]->begin() + long(r.first));
      }
    }
    // Exact: an f32 state's values travel as doubles.
    if (!first.empty())
      st.first = StateBuffer(first, st.dtype);
    if (!second.empty())
      st.second = StateBuffer(second, st.dtype);
    out[p] = {std::move(st), std::move(mean)};
    ++k;
  }
  return out;
}

void ShardedOptimizer::load(
    const std::map<int, OptimizerState> &full,
    const std::map<int, std::vector<double>> &meanGrads) {
  auto checkSize = [](size_t size, const Slice &s, int p, const char *what) {
    if (size != s.size)
      throw RuntimeError("ZeRO-1 load: the " + std::string(what) +
                         " of parameter " + std::to_string(p) + " has " +
                         std::to_string(size) + " elements, expected " +
                         std::to_string(s.size));
  };
  auto part = [&](const std::vector<double> &v, const Slice &s, int p,
                  const char *what) {
    if (v.empty())
      return std::vector<double>();
    checkSize(v.size(), s, p, what);
    return sliceOf(v, s.lo, s.hi);
  };
  auto statePart = [&](const StateBuffer &v, const Slice &s, int p,
                       const char *what) {
    if (v.empty())
      return StateBuffer();
    checkSize(v.size(), s, p, what);
    return v.slice(s.lo, s.hi);
  };
  // Everything is checked before anything changes.
  std::map<int, std::pair<OptimizerState, std::vector<double>>> next;
  for (const auto &entry : slices) {
    int p = entry.first;
    const Slice &s = entry.second;
    auto it = full.find(p);
    if (it == full.end())
      throw RuntimeError("ZeRO-1 load: no optimizer state for parameter " +
                         std::to_string(p));
    OptimizerState mine;
    mine.dtype = it->second.dtype;
    mine.first = statePart(it->second.first, s, p, "optimizer state (first)");
    mine.second =
        statePart(it->second.second, s, p, "optimizer state (second)");
    mine.step = it->second.step;
    auto m = meanGrads.find(p);
    std::vector<double> mean;
    if (m != meanGrads.end())
      mean = part(m->second, s, p, "mean gradient");
    next[p] = {std::move(mine), std::move(mean)};
  }
  for (auto &entry : slices) {
    auto &n = next[entry.first];
    entry.second.state = std::move(n.first);
    entry.second.meanGrad = std::move(n.second);
  }
}

} // namespace rt
} // namespace pipeopt
