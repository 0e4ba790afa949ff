//===- RankControl.cpp - launcher messages between ranks --------*- C++ -*-===//
//
// The control protocol of the launcher over the ranks' communicator:
// barriers, the reports every rank sends rank 0 at the end of a run, and
// the helpers of the training-step exchanges (RunnerInternal.h).
//
//===----------------------------------------------------------------------===//

#include "RunnerInternal.h"

#include <cstring>
#include <sstream>

namespace pipeopt {
namespace rt {

using namespace runner;

namespace runner {

RankReport evidenceOf(const RankContext &ctx) {
  RankReport r;
  r.microbatchedInputReads = ctx.microbatchedInputReads;
  r.inputsReadPerMicrobatch = ctx.inputsReadPerMicrobatch;
  for (const auto &kv : ctx.outputs)
    r.outputsWritten.insert(kv.first);
  for (const auto &[index, acc] : ctx.reducedOutputs)
    for (int mb : acc.microbatches)
      r.outputsWritten.insert({index, mb});
  return r;
}

void sendControl(Communicator &c, int dst, int32_t tag, const void *data,
                 size_t bytes, double timeoutS, DType dtype, Shape shape,
                 int index, int mb) {
  MessageHeader h;
  h.kind = MessageHeader::Control;
  h.tag = tag;
  h.dtype = uint8_t(dtype);
  if (shape.empty() && dtype == DType::I8)
    shape = {int64_t(bytes)};
  h.setShape(shape);
  h.bytes = int64_t(bytes);
  h.srcRank = c.rank();
  h.dstRank = dst;
  h.valueIndex = index;
  h.microbatch = mb;
  h.seal();
  c.send(dst, h, data, bytes, timeoutS);
}

Message recvControl(Communicator &c, int src, int32_t tag, double timeoutS) {
  Message m = c.recv(src, timeoutS);
  std::string bad = m.header.validate();
  if (!bad.empty())
    throw RuntimeError("bad launcher message from rank " + std::to_string(src) +
                       ": " + bad);
  if (m.header.kind != MessageHeader::Control || m.header.tag != tag) {
    std::ostringstream os;
    os << "expected launcher message " << tag << " from rank " << src
       << " but got ";
    if (m.header.kind == MessageHeader::Tensor)
      os << "a tensor for stage " << m.header.dstStage << " microbatch "
         << m.header.microbatch << " value " << m.header.valueIndex << " (rank "
         << src << " sent more messages than were received)";
    else
      os << "launcher message " << m.header.tag;
    throw RuntimeError(os.str());
  }
  if (m.payload.size() != size_t(m.header.bytes))
    throw RuntimeError("launcher message from rank " + std::to_string(src) +
                       " has a wrong payload size");
  return m;
}

/// All ranks meet; hub is rank 0.
void barrier(Communicator &c, double timeoutS) {
  if (c.size() == 1)
    return;
  if (c.rank() == 0) {
    for (int r = 1; r < c.size(); ++r)
      recvControl(c, r, TagBarrier, timeoutS);
    for (int r = 1; r < c.size(); ++r)
      sendControl(c, r, TagBarrier, nullptr, 0, timeoutS);
  } else {
    sendControl(c, 0, TagBarrier, nullptr, 0, timeoutS);
    recvControl(c, 0, TagBarrier, timeoutS);
  }
}

struct PackedEvent {
  int32_t kind, stage, microbatch, iteration;
  double beginS, endS;
  int32_t peer, pad = 0;
  int64_t bytes;
};

/// Sends this rank's report to rank 0 (rank != 0).
void sendReport(Communicator &c, const RankContext &ctx,
                const std::vector<double> &iterS, bool withOutputs,
                double timeoutS) {
  sendControl(c, 0, TagStats, iterS.data(), iterS.size() * sizeof(double),
              timeoutS, DType::F64, {int64_t(iterS.size())});
  const double times[3] = {ctx.kernelS, ctx.gradientS, ctx.updateS};
  sendControl(c, 0, TagTimes, times, sizeof(times), timeoutS, DType::F64, {3});
  std::vector<PackedEvent> ev;
  for (const auto &e : ctx.events)
    ev.push_back({e.kind, e.stage, e.microbatch, e.iteration, e.beginS, e.endS,
                  e.peer, 0, e.bytes});
  sendControl(c, 0, TagEvents, ev.data(), ev.size() * sizeof(PackedEvent),
              timeoutS);
  std::vector<int32_t> evidence;
  auto add = [&](EvidenceKind kind, int index, int mb) {
    evidence.insert(evidence.end(), {kind, index, mb});
  };
  RankReport own = evidenceOf(ctx);
  for (const auto &r : own.microbatchedInputReads)
    add(EvidenceInputRead, r.first, r.second);
  for (int index : own.inputsReadPerMicrobatch)
    add(EvidenceReadPerMicrobatch, index, -1);
  for (const auto &w : own.outputsWritten)
    add(EvidenceOutputWritten, w.first, w.second);
  sendControl(c, 0, TagModelEvidence, evidence.data(),
              evidence.size() * sizeof(int32_t), timeoutS);
  int64_t count = withOutputs ? int64_t(ctx.outputs.size()) : 0;
  sendControl(c, 0, TagOutputCount, &count, sizeof(count), timeoutS, DType::I64,
              {1});
  if (withOutputs)
    for (const auto &kv : ctx.outputs)
      sendControl(c, 0, TagOutput, kv.second.data.data(), kv.second.data.size(),
                  timeoutS, kv.second.dtype,
                  kv.second.shape.empty() ? Shape{} : kv.second.shape,
                  kv.first.first, kv.first.second);
  int64_t stash[2] = {ctx.stashUsed ? 1 : 0, ctx.stashPeakBytes};
  sendControl(c, 0, TagStash, stash, sizeof(stash), timeoutS, DType::I64, {2});
  // The sums of "reduce": "mean" outputs, as f64 vectors.
  int64_t reduced = withOutputs ? int64_t(ctx.reducedOutputs.size()) : 0;
  sendControl(c, 0, TagReducedCount, &reduced, sizeof(reduced), timeoutS,
              DType::I64, {1});
  if (withOutputs)
    for (const auto &[index, acc] : ctx.reducedOutputs)
      sendControl(c, 0, TagReduced, acc.sum.data(),
                  acc.sum.size() * sizeof(double), timeoutS, DType::F64,
                  {int64_t(acc.sum.size())}, index, -1);
}

/// The payload of `m` as whole elements of T (a trailing partial element is
/// dropped). An empty payload gives an empty vector without a memcpy from a
/// null pointer (undefined behaviour, found by UBSan: a middle rank reports
/// no evidence).
template <typename T>
std::vector<T> payloadAs(const Message &m) {
  std::vector<T> v(m.payload.size() / sizeof(T));
  if (!v.empty())
    std::memcpy(v.data(), m.payload.data(), v.size() * sizeof(T));
  return v;
}

RankReport recvReport(Communicator &c, int src, double timeoutS) {
  RankReport r;
  Message m = recvControl(c, src, TagStats, timeoutS);
  r.iterationS = payloadAs<double>(m);
  m = recvControl(c, src, TagTimes, timeoutS);
  if (std::vector<double> times = payloadAs<double>(m); times.size() == 3) {
    r.kernelS = times[0];
    r.gradientS = times[1];
    r.updateS = times[2];
  }
  m = recvControl(c, src, TagEvents, timeoutS);
  std::vector<PackedEvent> ev = payloadAs<PackedEvent>(m);
  for (const auto &e : ev)
    r.events.push_back({e.kind, e.stage, e.microbatch, e.iteration, e.beginS,
                        e.endS, e.peer, e.bytes});
  m = recvControl(c, src, TagModelEvidence, timeoutS);
  std::vector<int32_t> evidence = payloadAs<int32_t>(m);
  for (size_t i = 0; i + 2 < evidence.size(); i += 3) {
    std::pair<int, int> item{evidence[i + 1], evidence[i + 2]};
    if (evidence[i] == EvidenceInputRead)
      r.microbatchedInputReads.insert(item);
    else if (evidence[i] == EvidenceReadPerMicrobatch)
      r.inputsReadPerMicrobatch.insert(item.first);
    else if (evidence[i] == EvidenceOutputWritten)
      r.outputsWritten.insert(item);
  }
  m = recvControl(c, src, TagOutputCount, timeoutS);
  int64_t count = 0;
  std::memcpy(&count, m.payload.data(), sizeof(count));
  for (int64_t i = 0; i < count; ++i) {
    m = recvControl(c, src, TagOutput, timeoutS);
    HostTensor t;
    t.dtype = DType(m.header.dtype);
    t.shape = m.header.getShape();
    t.data = std::move(m.payload);
    r.outputs[{m.header.valueIndex, m.header.microbatch}] = std::move(t);
  }
  m = recvControl(c, src, TagStash, timeoutS);
  int64_t stash[2] = {0, 0};
  if (m.payload.size() == sizeof(stash))
    std::memcpy(stash, m.payload.data(), sizeof(stash));
  r.stashUsed = stash[0] != 0;
  r.stashPeak = stash[1];
  m = recvControl(c, src, TagReducedCount, timeoutS);
  std::memcpy(&count, m.payload.data(), sizeof(count));
  for (int64_t i = 0; i < count; ++i) {
    m = recvControl(c, src, TagReduced, timeoutS);
    std::vector<double> &sum = r.reducedSums[m.header.valueIndex];
    sum.resize(m.payload.size() / sizeof(double));
    std::memcpy(sum.data(), m.payload.data(), sum.size() * sizeof(double));
  }
  return r;
}

/// Sends a control message whose payload is `values` (f64).
void sendDoubles(Communicator &c, int dst, int32_t tag,
                 const std::vector<double> &values, int index, int step,
                 double timeoutS) {
  sendControl(c, dst, tag, values.data(), values.size() * sizeof(double),
              timeoutS, DType::F64, {int64_t(values.size())}, index, step);
}

/// Receives a control message `tag` from `src` about parameter `index` in
/// step `step`; checks both against its header (the ranks must agree on the
/// parameters and the step). `what` names the exchange for errors.
Message recvAbout(Communicator &c, int src, int32_t tag, int index, int step,
                  double timeoutS, const std::string &what) {
  Message msg;
  try {
    msg = recvControl(c, src, tag, timeoutS);
  } catch (const RuntimeError &e) {
    throw RuntimeError(what + ": " + e.what());
  }
  if (msg.header.valueIndex != index || msg.header.microbatch != step)
    throw RuntimeError(what + ": rank " + std::to_string(src) +
                       " sent parameter " +
                       std::to_string(msg.header.valueIndex) + " of step " +
                       std::to_string(msg.header.microbatch) +
                       ": the ranks disagree on the parameters (is it the "
                       "manifest of this model?)");
  return msg;
}

} // namespace runner

} // namespace rt
} // namespace pipeopt
