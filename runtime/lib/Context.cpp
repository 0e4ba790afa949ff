//===- Context.cpp - Per-rank state and memref descriptors ------*- C++ -*-===//

#include "pipeopt/runtime/Context.h"
#include "DataParallel.h"
#include "pipeopt/runtime/Device.h"

#include <cstring>

namespace pipeopt {
namespace rt {

//===----------------------------------------------------------------------===//
// InputStore
//===----------------------------------------------------------------------===//

void InputStore::set(const ManifestInput &meta, int numMicrobatches,
                     HostTensor tensor, int dataSteps) {
  std::string what = "input " + std::to_string(meta.index);
  if (!meta.name.empty())
    what += " ('" + meta.name + "')";
  if (tensor.dtype != meta.dtype)
    throw RuntimeError(what + ": the manifest says dtype " +
                       dtypeName(meta.dtype) + " but the data is " +
                       dtypeName(tensor.dtype));
  Shape want = meta.shape;
  if (meta.microbatched)
    want.insert(want.begin(), numMicrobatches);
  if (dataSteps > 0) {
    if (!meta.microbatched)
      throw RuntimeError(what + ": only a microbatched input can be a "
                                "dataset (one slice per step)");
    want.insert(want.begin(), dataSteps);
  }
  if (tensor.shape != want)
    throw RuntimeError(what + ": expected " + typeString(meta.dtype, want) +
                       (meta.microbatched ? " (microbatches x per-microbatch "
                                            "shape)"
                                          : "") +
                       " but got " + typeString(tensor.dtype, tensor.shape));
  entries[meta.index] = {meta, std::move(tensor)};
  if (dataSteps > 0)
    steps[meta.index] = dataSteps;
  else
    steps.erase(meta.index);
}

void InputStore::releaseData(int index) {
  if (auto it = entries.find(index); it != entries.end())
    std::vector<uint8_t>().swap(it->second.second.data);
}

const std::pair<ManifestInput, HostTensor> *InputStore::find(int index) const {
  auto it = entries.find(index);
  return it == entries.end() ? nullptr : &it->second;
}

//===----------------------------------------------------------------------===//
// RankContext
//===----------------------------------------------------------------------===//

RankContext::RankContext(int rank, Communicator *comm, const Manifest *manifest,
                         const InputStore *inputs, double timeoutS)
    : rank(rank), comm(comm), manifest(manifest), inputs(inputs),
      timeoutS(timeoutS) {}

void RankContext::initParameters() {
  parameters.clear();
  if (!manifest)
    return;
  for (const ManifestParameter &p : manifest->parameters) {
    if (!std::binary_search(p.ranks.begin(), p.ranks.end(), rank))
      continue;
    const auto *entry = inputs ? inputs->find(p.index) : nullptr;
    if (!entry)
      throw RuntimeError("parameter " + std::to_string(p.index) +
                         ": its input was not loaded");
    ParameterState &st = parameters[p.index];
    st.param = &p;
    st.input = manifest->findInput(p.index);
    st.value = entry->second; // this rank's own copy
    st.optimizer.dtype = optimizerStateDType(st.value.dtype, manifest->target);
  }
}

std::vector<double> &gradientSumOf(ParameterState &st) {
  const size_t n = size_t(numElements(st.value.shape));
  if (st.gradSum.size() != n)
    st.gradSum.assign(n, 0.0);
  if (!st.soleGradient.empty()) {
    // gradSum is zero here (beginCall): the sum the gradient would have
    // been added to.
    for (size_t i = 0; i < n; ++i)
      st.gradSum[i] += double(st.soleGradient[i]);
    std::vector<float>().swap(st.soleGradient);
  }
  return st.gradSum;
}

void RankContext::beginCall() {
  for (auto &kv : parameters) {
    ParameterState &st = kv.second;
    if (st.device && device)
      device->zero(st.device->gradSum.data(), st.device->gradSum.size());
    else
      std::fill(st.gradSum.begin(), st.gradSum.end(), 0.0);
    st.soleGradient.clear();
    st.microbatches.clear();
  }
  actionsBegun = 0;
  if (dataParallel)
    dataParallel->beginStep();
  sharedInputReads.clear();
  sharedOutputWrites.clear();
  microbatchedInputFirstRead.clear();
  reducedOutputs.clear();
}

void RankContext::fail(const std::string &message) {
  if (poisoned)
    return;
  poisoned = true;
  error = "rank " + std::to_string(rank) + ": " + message;
}

double RankContext::now() const {
  return std::chrono::duration<double>(Clock::now() - origin).count();
}

void RankContext::recordCall(int kind, int stage, int microbatch, int peer,
                             int64_t bytes, double beginS) {
  if (!recordCalls)
    return;
  events.push_back(
      {kind, stage, microbatch, iteration, beginS, now(), peer, bytes});
}

static thread_local RankContext *tlsContext = nullptr;

RankContext *currentContext() { return tlsContext; }

ScopedContext::ScopedContext(RankContext *ctx) : previous(tlsContext) {
  tlsContext = ctx;
}
ScopedContext::~ScopedContext() { tlsContext = previous; }

} // namespace rt
} // namespace pipeopt
