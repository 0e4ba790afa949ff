//===- Abi.cpp - The C ABI of pipeopt_runtime.h -----------------*- C++ -*-===//
//
// Thin extern "C" wrappers (generated from RuntimeFunctions.def) around the
// C++ implementation. Every wrapper catches all exceptions: nothing crosses
// the C ABI; the first error poisons the rank's context.
//
//===----------------------------------------------------------------------===//

#include "DataParallel.h"
#include "pipeopt/runtime/Context.h"
#include "pipeopt/runtime/Device.h"
#include "pipeopt/runtime/Optimizer.h"
#include "pipeopt/runtime/Reduce.h"
#include "pipeopt/runtime/pipeopt_runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <sstream>

using namespace pipeopt::rt;

namespace {

/// Runs `f(ctx)` with the calling thread's context; converts exceptions into
/// a poisoned context and a nonzero return.
template <typename F>
int32_t guarded(const char *fn, F &&f) {
  RankContext *ctx = currentContext();
  if (!ctx) {
    std::fprintf(stderr,
                 "pipeopt runtime: %s called on a thread with no rank context "
                 "(the program must be run by pipeopt-run)\n",
                 fn);
    return 2;
  }
  if (ctx->isPoisoned())
    return 1;
  try {
    // cuda builds: an error of a kernel or library call since the last
    // ABI call (CudaApi.h last_error) fails the rank here.
    if (pollDeviceError(*ctx))
      return 1;
    f(*ctx);
    return 0;
  } catch (const std::exception &e) {
    ctx->fail(e.what());
  } catch (...) {
    ctx->fail(std::string(fn) + ": unknown error");
  }
  return 1;
}

std::string direction(int64_t backward) {
  return backward ? "gradient" : "activation";
}

void checkPeer(const RankContext &ctx, int64_t peer, const std::string &what) {
  if (!ctx.comm)
    throw RuntimeError(what + ": no communicator");
  if (peer < 0 || peer >= ctx.comm->size())
    throw RuntimeError(what + ": peer rank " + std::to_string(peer) +
                       " is out of range (world size " +
                       std::to_string(ctx.comm->size()) + ")");
}

/// Records a call event when the call returns normally (not on an error).
struct CallRecorder {
  RankContext &ctx;
  int kind, stage, microbatch, peer;
  int64_t bytes = 0;
  double beginS = ctx.recordCalls ? ctx.now() : 0;
  int uncaught = std::uncaught_exceptions();
  ~CallRecorder() {
    if (std::uncaught_exceptions() == uncaught)
      ctx.recordCall(kind, stage, microbatch, peer, bytes, beginS);
  }
};

int32_t sendImpl(DType dtype, int64_t peer, int64_t srcStage, int64_t dstStage,
                 int64_t mb, int64_t value, int64_t backward,
                 pipeopt_rt_unranked_memref *buf) {
  return guarded("pipeopt_rt_send", [&](RankContext &ctx) {
    CallRecorder record{ctx, TraceSend, int(srcStage), int(mb), int(peer)};
    std::string what = "send for stage " + std::to_string(srcStage) +
                       " microbatch " + std::to_string(mb) + " value " +
                       std::to_string(value) + " (" + direction(backward) +
                       " to rank " + std::to_string(peer) + " stage " +
                       std::to_string(dstStage) + ")";
    checkPeer(ctx, peer, what);
    MemRefView v;
    try {
      v = decodeMemRef(buf, dtype);
    } catch (const RuntimeError &e) {
      throw RuntimeError(what + ": " + e.what());
    }
    MessageHeader h;
    h.kind = MessageHeader::Tensor;
    h.dtype = static_cast<uint8_t>(dtype);
    h.setShape(v.sizes);
    h.bytes = int64_t(v.byteSize());
    h.srcRank = ctx.rank;
    h.dstRank = int32_t(peer);
    h.srcStage = int32_t(srcStage);
    h.dstStage = int32_t(dstStage);
    h.microbatch = int32_t(mb);
    h.valueIndex = int32_t(value);
    h.backward = backward ? 1 : 0;
    h.seal();
    try {
      if (ctx.device) {
        // Device memory: the communicator carries it (Communicator.h,
        // sendDevice); a strided view is gathered on the device first.
        if (v.isContiguous()) {
          ctx.comm->sendDevice(int(peer), h, v.base, v.byteSize(), *ctx.device,
                               ctx.timeoutS);
        } else {
          DeviceBuffer packed(*ctx.device, v.byteSize());
          ctx.device->gather(packed.data(), v);
          ctx.comm->sendDevice(int(peer), h, packed.data(), v.byteSize(),
                               *ctx.device, ctx.timeoutS);
        }
      } else if (v.isContiguous()) {
        ctx.comm->send(int(peer), h, v.base, v.byteSize(), ctx.timeoutS);
      } else {
        std::vector<uint8_t> packed(v.byteSize());
        memorySpace(ctx).toHost(v, packed.data());
        ctx.comm->send(int(peer), h, packed.data(), packed.size(),
                       ctx.timeoutS);
      }
    } catch (const RuntimeError &e) {
      throw RuntimeError(what + ": " + e.what());
    }
    record.bytes = int64_t(v.byteSize());
  });
}

int32_t recvImpl(DType dtype, int64_t peer, int64_t srcStage, int64_t dstStage,
                 int64_t mb, int64_t value, int64_t backward,
                 pipeopt_rt_unranked_memref *buf) {
  return guarded("pipeopt_rt_recv", [&](RankContext &ctx) {
    CallRecorder record{ctx, TraceRecv, int(dstStage), int(mb), int(peer)};
    std::string what = "recv for stage " + std::to_string(dstStage) +
                       " microbatch " + std::to_string(mb) + " value " +
                       std::to_string(value);
    std::string from = direction(backward) + " from rank " +
                       std::to_string(peer) + " stage " +
                       std::to_string(srcStage);
    checkPeer(ctx, peer, what + " (" + from + ")");
    MemRefView v;
    try {
      v = decodeMemRef(buf, dtype);
    } catch (const RuntimeError &e) {
      throw RuntimeError(what + " (" + from + "): " + e.what());
    }
    Message m;
    try {
      m = ctx.device
              ? ctx.comm->recvDevice(int(peer), *ctx.device, ctx.timeoutS)
              : ctx.comm->recv(int(peer), ctx.timeoutS);
    } catch (const RuntimeError &e) {
      throw RuntimeError(what + " (" + from + "): " + e.what());
    }
    const MessageHeader &h = m.header;
    std::string bad = h.validate();
    if (!bad.empty())
      throw RuntimeError(what + " (" + from +
                         "): received a bad message from rank " +
                         std::to_string(peer) + ": " + bad);
    if (h.kind != MessageHeader::Tensor)
      throw RuntimeError(what + " (" + from + "): rank " +
                         std::to_string(peer) +
                         " sent a launcher control message instead of a "
                         "tensor: the programs disagree on the message order");
    if (h.srcStage != srcStage || h.dstStage != dstStage ||
        h.microbatch != mb || h.valueIndex != value ||
        h.backward != (backward ? 1 : 0) || h.dstRank != ctx.rank) {
      std::ostringstream os;
      os << what << " (" << from << ") but rank " << h.srcRank << " sent stage "
         << h.srcStage << " -> " << h.dstStage << " microbatch " << h.microbatch
         << " value " << h.valueIndex << " (" << direction(h.backward) << ", "
         << h.describeType()
         << "): the two programs disagree on the message order";
      throw RuntimeError(os.str());
    }
    MessageHeader want;
    want.dtype = static_cast<uint8_t>(dtype);
    want.setShape(v.sizes);
    want.bytes = int64_t(v.byteSize());
    if (h.dtype != want.dtype || h.getShape() != v.sizes ||
        h.bytes != want.bytes)
      throw RuntimeError(what + " expected " + want.describeType() +
                         " but rank " + std::to_string(h.srcRank) + " sent " +
                         h.describeType());
    size_t got = m.devicePayload ? m.devicePayloadBytes : m.payload.size();
    if (got != size_t(h.bytes))
      throw RuntimeError(what + " (" + from + "): payload of " +
                         std::to_string(got) +
                         " bytes does not match its header (" +
                         std::to_string(h.bytes) + " bytes)");
    if (m.devicePayload)
      memorySpace(ctx).fromDevice(v, m.devicePayload);
    else
      memorySpace(ctx).fromHost(v, m.payload.data());
    record.bytes = int64_t(v.byteSize());
  });
}

/// " <path>" of the context's manifest, or "" if unknown.
std::string manifestName(const RankContext &ctx) {
  return ctx.manifest && !ctx.manifest->source.empty()
             ? " " + ctx.manifest->source
             : "";
}

std::string inputName(const ManifestInput &in) {
  std::string s = "input " + std::to_string(in.index);
  if (!in.name.empty())
    s += " ('" + in.name + "')";
  return s;
}

std::string outputName(const ManifestOutput &out) {
  std::string s = "output " + std::to_string(out.index);
  if (!out.name.empty())
    s += " ('" + out.name + "')";
  return s;
}

/// Where the data of model input argIndex for microbatch mb lies, once every
/// check of pipeopt_rt_input passed (pipeopt_runtime.h).
struct InputLocation {
  std::string what;              ///< "input 3 ('w') for microbatch 0"
  const uint8_t *host = nullptr; ///< the slice in host memory, or
  const void *device = nullptr;  ///< a cuda build's device copy
  bool microbatched = false;
};

/// Checks a read of input argIndex for microbatch mb with `sizes` and
/// `dtype` against the manifest and the loaded data and records it (the
/// per-call read checks); throws RuntimeError naming the input otherwise.
InputLocation locateInput(RankContext &ctx, DType dtype, int64_t argIndex,
                          int64_t mb, const Shape &sizes) {
  std::string what = "input " + std::to_string(argIndex) + " for microbatch " +
                     std::to_string(mb);
  const auto *entry = ctx.inputs ? ctx.inputs->find(int(argIndex)) : nullptr;
  if (!entry)
    throw RuntimeError(what + ": no such model input was loaded (check the "
                              "manifest's \"inputs\")");
  const ManifestInput &meta = entry->first;
  const HostTensor *data = &entry->second;
  const ParameterState *param = nullptr;
  what = inputName(meta) + " for microbatch " + std::to_string(mb);
  // A parameter of a training build: this rank's current copy.
  if (ctx.manifest && ctx.manifest->findParameter(meta.index)) {
    auto it = ctx.parameters.find(meta.index);
    if (it == ctx.parameters.end())
      throw RuntimeError(
          what + ": the input is a parameter that the manifest" +
          manifestName(ctx) +
          " does not give this rank (its \"ranks\" in "
          "\"parameters\" lack rank " +
          std::to_string(ctx.rank) +
          "), so this rank keeps no copy of it that the optimizer updates");
    data = &it->second.value;
    param = &it->second;
  }
  const HostTensor &t = *data;
  if (dtype != meta.dtype || sizes != meta.shape)
    throw RuntimeError(
        what + ": the program reads " + typeString(dtype, sizes) +
        " but the manifest declares " + typeString(meta.dtype, meta.shape));
  size_t slice = numElements(sizes) * dtypeSize(dtype);
  size_t offset = 0;
  if (meta.microbatched) {
    // A dataset [steps, M, ...] gives the current step's slice.
    int steps = ctx.inputs->dataSteps(meta.index);
    size_t leading = steps > 0 ? 1 : 0;
    int64_t m = t.shape.size() <= leading ? 0 : t.shape[leading];
    if (mb < 0 || mb >= m)
      throw RuntimeError(what + ": microbatch out of range [0, " +
                         std::to_string(m) + ")");
    offset = size_t(mb) * slice;
    if (steps > 0) {
      if (ctx.dataStep < 0 || ctx.dataStep >= steps)
        throw RuntimeError(what + ": step " + std::to_string(ctx.dataStep + 1) +
                           " has no data (the dataset has " +
                           std::to_string(steps) + " steps)");
      offset += size_t(ctx.dataStep) * size_t(m) * slice;
    }
    ctx.microbatchedInputReads.insert({meta.index, int(mb)});
    auto [firstRead, isNew] =
        ctx.microbatchedInputFirstRead.insert({meta.index, mb});
    if (!isNew && firstRead->second != mb)
      ctx.inputsReadPerMicrobatch.insert(meta.index);
  } else {
    // A shared input is read once per call (convert-pipe-to-runtime reads
    // it at its first use and reuses the tensor). Reads for two different
    // microbatches mean that the program takes one slice per microbatch:
    // the manifest's "microbatched": false is not this model's.
    // Asynchronous training reads a parameter at every microbatch's first
    // use: it may have changed since the previous read.
    bool rereadParameter = ctx.manifest &&
                           ctx.manifest->training.updateEvery > 0 &&
                           ctx.manifest->findParameter(meta.index);
    auto [it, first] = ctx.sharedInputReads.insert({meta.index, mb});
    if (!first && it->second != mb && !rereadParameter)
      throw RuntimeError(
          what + ": the manifest" + manifestName(ctx) +
          " says this input "
          "is shared by all microbatches (\"microbatched\": false), but "
          "the program already read it for microbatch " +
          std::to_string(it->second) +
          " in this call: it reads one slice "
          "per microbatch, so the input is microbatched in this model");
  }
  if (offset + slice > t.data.size())
    throw RuntimeError(what + ": loaded data is too small");
  InputLocation loc;
  loc.what = what;
  loc.microbatched = meta.microbatched;
  if (param && param->device) // cuda builds: the weights stay there
    loc.device = param->device->value.data();
  else
    loc.host = t.data.data() + offset;
  return loc;
}

int32_t inputImpl(DType dtype, int64_t argIndex, int64_t mb,
                  pipeopt_rt_unranked_memref *buf) {
  return guarded("pipeopt_rt_input", [&](RankContext &ctx) {
    CallRecorder record{ctx, TraceInput, -1, int(mb), int(argIndex)};
    MemRefView v = decodeMemRef(buf, dtype);
    InputLocation loc = locateInput(ctx, dtype, argIndex, mb, v.sizes);
    try {
      if (loc.device)
        memorySpace(ctx).fromDevice(v, loc.device);
      else
        memorySpace(ctx).fromHost(v, loc.host);
    } catch (const RuntimeError &e) {
      throw RuntimeError(loc.what + ": " + e.what());
    }
    record.microbatch = loc.microbatched ? int(mb) : -1;
    record.bytes = int64_t(v.byteSize());
  });
}

/// Zero-filled host memory of `bytes` (at least 1) that stays valid for the
/// thread's lifetime: what a failed view shows (the rank is poisoned, so
/// the run stops at its next status check).
const void *zerosForFailedView(size_t bytes) {
  thread_local std::deque<std::vector<uint64_t>> zeros;
  zeros.emplace_back((std::max<size_t>(bytes, 1) + 7) / 8, 0);
  return zeros.back().data();
}

void inputViewImpl(DType dtype, pipeopt_rt_unranked_memref *result,
                   int64_t argIndex, int64_t mb,
                   pipeopt_rt_unranked_memref *shapeBuf) {
  Shape shape;
  const void *data = nullptr;
  guarded("pipeopt_rt_input_view", [&](RankContext &ctx) {
    CallRecorder record{ctx, TraceInput, -1, int(mb), int(argIndex)};
    std::string what = "input view " + std::to_string(argIndex) +
                       " for microbatch " + std::to_string(mb);
    if (!result)
      throw RuntimeError(what + ": null result descriptor");
    MemRefView s = decodeMemRef(shapeBuf, DType::I64);
    if (s.sizes.size() != 1 || s.sizes[0] > PIPEOPT_RT_MAX_RANK)
      throw RuntimeError(what +
                         ": the shape operand must be a rank-1 i64 "
                         "memref of at most " +
                         std::to_string(PIPEOPT_RT_MAX_RANK) + " dimensions");
    for (int64_t i = 0; i < s.sizes[0]; ++i) {
      int64_t d;
      std::memcpy(&d, s.base + i * s.strides[0] * int64_t(sizeof(int64_t)),
                  sizeof(d));
      if (d < 0)
        throw RuntimeError(what + ": negative dimension in the shape");
      shape.push_back(d);
    }
    if (ctx.device)
      throw RuntimeError(what + ": views are host memory, but this rank "
                                "runs on a cuda device (cuda builds read "
                                "inputs with pipeopt_rt_input)");
    InputLocation loc = locateInput(ctx, dtype, argIndex, mb, shape);
    // An empty input has no data to point at (null); any valid pointer
    // will do, since nothing is read.
    if (!loc.host && numElements(shape) == 0)
      loc.host = static_cast<const uint8_t *>(zerosForFailedView(0));
    if (!loc.host)
      throw RuntimeError(loc.what + ": the data is not in host memory");
    data = loc.host;
    record.microbatch = loc.microbatched ? int(mb) : -1;
  });
  if (!result)
    return;
  if (!data)
    data = zerosForFailedView(numElements(shape) * dtypeSize(dtype));
  // {allocated, aligned, offset, sizes[R], strides[R]}, row-major.
  size_t r = shape.size();
  auto *head = static_cast<pipeopt_rt_memref_head *>(
      std::malloc(sizeof(pipeopt_rt_memref_head) + 2 * r * sizeof(int64_t)));
  if (!head) {
    std::fprintf(stderr, "pipeopt runtime: out of memory for a view\n");
    std::abort();
  }
  head->allocated = head->aligned = const_cast<void *>(data);
  head->offset = 0;
  auto *sizes = reinterpret_cast<int64_t *>(head + 1);
  int64_t stride = 1;
  for (size_t i = r; i-- > 0;) {
    sizes[i] = shape[i];
    sizes[r + i] = stride;
    stride *= std::max<int64_t>(shape[i], 1);
  }
  result->rank = int64_t(r);
  result->descriptor = head;
}

int32_t outputImpl(DType dtype, int64_t resultIndex, int64_t mb,
                   pipeopt_rt_unranked_memref *buf) {
  return guarded("pipeopt_rt_output", [&](RankContext &ctx) {
    CallRecorder record{ctx, TraceOutput, -1, int(mb), int(resultIndex)};
    std::string what = "output " + std::to_string(resultIndex) +
                       " for microbatch " + std::to_string(mb);
    MemRefView v = decodeMemRef(buf, dtype);
    record.bytes = int64_t(v.byteSize());
    int key = int(mb);
    if (ctx.manifest) {
      const ManifestOutput *meta = ctx.manifest->findOutput(int(resultIndex));
      if (!meta)
        throw RuntimeError(what + ": the manifest lists no such output");
      if (dtype != meta->dtype || v.sizes != meta->shape)
        throw RuntimeError(what + ": the program writes " +
                           typeString(dtype, v.sizes) +
                           " but the manifest declares " +
                           typeString(meta->dtype, meta->shape));
      if (meta->microbatched) {
        if (mb < 0 || mb >= ctx.manifest->numMicrobatches)
          throw RuntimeError(what + ": microbatch out of range [0, " +
                             std::to_string(ctx.manifest->numMicrobatches) +
                             ")");
        if (meta->reduce == OutputReduce::Mean) {
          // Summed as it is written (Reduce.h); a second write of one
          // microbatch would count it twice.
          ReducedOutput &acc = ctx.reducedOutputs[int(resultIndex)];
          if (!acc.microbatches.insert(int(mb)).second)
            throw RuntimeError(
                outputName(*meta) + " for microbatch " + std::to_string(mb) +
                ": the program already wrote it for this microbatch in this "
                "call, but the manifest" +
                manifestName(ctx) +
                " averages this output over the microbatches (\"reduce\": "
                "\"mean\"), which counts every microbatch once");
          std::vector<uint8_t> packed(v.byteSize());
          try {
            memorySpace(ctx).toHost(v, packed.data());
          } catch (const RuntimeError &e) {
            throw RuntimeError(what + ": " + e.what());
          }
          if (acc.sum.empty())
            acc.sum.assign(size_t(numElements(v.sizes)), 0.0);
          addToSum(dtype, packed.data(), acc.sum);
          return;
        }
      } else {
        // A shared output is stored once per call. Writes for two
        // different microbatches mean that the program produces one value
        // per microbatch: storing them under one key would keep only the
        // last and drop the others silently.
        auto [it, first] =
            ctx.sharedOutputWrites.insert({int(resultIndex), mb});
        if (!first && it->second != mb)
          throw RuntimeError(
              outputName(*meta) + " for microbatch " + std::to_string(mb) +
              ": the manifest" + manifestName(ctx) +
              " says this output is "
              "shared by all microbatches (\"microbatched\": false), but the "
              "program already wrote it for microbatch " +
              std::to_string(it->second) +
              " in this call: it writes one "
              "value per microbatch, so the output is microbatched in this "
              "model");
        key = -1;
      }
    }
    HostTensor t;
    t.dtype = dtype;
    t.shape = v.sizes;
    t.data.resize(v.byteSize());
    try {
      memorySpace(ctx).toHost(v, t.data.data());
    } catch (const RuntimeError &e) {
      throw RuntimeError(what + ": " + e.what());
    }
    ctx.outputs[{int(resultIndex), key}] = std::move(t);
  });
}

/// pipeopt_rt_gradient of a cuda build: adds the device view `v` to the
/// parameter's device gradient sum; with asynchronous updates (k >= 1)
/// applies the optimizer on the device when k contributions are in, with
/// the same mean (sum / k) and at the same points as the host path.
void gradientOnDevice(RankContext &ctx, ParameterState &st, const MemRefView &v,
                      int k) {
  const Device &dev = *ctx.device;
  DeviceParameterState &d = *st.device;
  int64_t n = numElements(v.sizes);
  auto *sum = static_cast<double *>(d.gradSum.data());
  if (v.isContiguous()) {
    dev.accumulate(sum, v.base, v.dtype, n);
  } else {
    DeviceBuffer packed(dev, v.byteSize());
    dev.gather(packed.data(), v);
    dev.accumulate(sum, packed.data(), v.dtype, n);
  }
  if (k > 0 && ++st.pending == k) {
    deviceParameterStep(ctx, st, sum, 1.0 / double(k));
    // The update's sum becomes the last mean gradient (--save-grads).
    std::swap(d.gradSum, d.lastGradSum);
    d.lastGradScale = 1.0 / double(k);
    d.hostMeanGrad = false;
    dev.zero(d.gradSum.data(), d.gradSum.size());
    st.pending = 0;
  }
}

int32_t gradientImpl(DType dtype, int64_t argIndex, int64_t stage, int64_t mb,
                     pipeopt_rt_unranked_memref *buf) {
  return guarded("pipeopt_rt_gradient", [&](RankContext &ctx) {
    std::string what = "gradient of input " + std::to_string(argIndex) +
                       " from stage " + std::to_string(stage) +
                       " for microbatch " + std::to_string(mb);
    const Manifest *m = ctx.manifest;
    const ManifestParameter *param =
        m ? m->findParameter(int(argIndex)) : nullptr;
    if (!param)
      throw RuntimeError(what + ": input " + std::to_string(argIndex) +
                         " is not a parameter of the manifest" +
                         manifestName(ctx) + " (\"parameters\")");
    const ManifestInput *in = m->findInput(param->index);
    what = "gradient of parameter " + std::to_string(argIndex) +
           (in->name.empty() ? "" : " ('" + in->name + "')") + " from stage " +
           std::to_string(stage) + " for microbatch " + std::to_string(mb);
    auto it = ctx.parameters.find(param->index);
    if (it == ctx.parameters.end()) {
      std::string list;
      for (int r : param->ranks)
        list += (list.empty() ? "" : ", ") + std::to_string(r);
      throw RuntimeError(what + ": the manifest" + manifestName(ctx) +
                         " lists the parameter on rank(s) " + list +
                         " (\"parameters\"), not on rank " +
                         std::to_string(ctx.rank));
    }
    if (!isFloatDType(dtype))
      throw RuntimeError(what +
                         ": a gradient needs f32, f64, f16 or bf16, "
                         "but the program reports " +
                         std::string(dtypeName(dtype)));
    MemRefView v;
    try {
      v = decodeMemRef(buf, dtype);
    } catch (const RuntimeError &e) {
      throw RuntimeError(what + ": " + e.what());
    }
    if (dtype != in->dtype || v.sizes != in->shape)
      throw RuntimeError(what + ": the program reports " +
                         typeString(dtype, v.sizes) +
                         " but the manifest declares the parameter " +
                         typeString(in->dtype, in->shape));
    if (mb < 0 || mb >= m->numMicrobatches)
      throw RuntimeError(what + ": microbatch out of range [0, " +
                         std::to_string(m->numMicrobatches) + ")");
    ParameterState &st = it->second;
    const int k = m->training.updateEvery;
    if (k > 0 && st.microbatches.count(int(mb)))
      throw RuntimeError(what +
                         ": reported twice for this microbatch in this "
                         "call; asynchronous updates (\"update_every\" " +
                         std::to_string(k) + " in the manifest" +
                         manifestName(ctx) +
                         ") count one gradient per microbatch");
    if (st.device) {
      // cuda builds: summed on the device, updated on the device.
      try {
        gradientOnDevice(ctx, st, v, k);
      } catch (const RuntimeError &e) {
        throw RuntimeError(what + ": " + e.what());
      }
      st.microbatches.insert(int(mb));
      return;
    }
    const double addBeginS = ctx.now();
    const size_t n = size_t(numElements(v.sizes));
    if (!ctx.device && v.isContiguous() && n > 0) {
      // Host memory (no device in cpu builds): kept or added where it lies.
      if (dtype == DType::F32 && st.optimizer.dtype == DType::F32 &&
          m->numMicrobatches == 1 && k == 0 && !ctx.dataParallel &&
          st.microbatches.empty()) {
        // The step's only gradient (so far): kept in f32 (soleGradient).
        const float *g = reinterpret_cast<const float *>(v.base);
        st.soleGradient.assign(g, g + n);
      } else {
        addToSum(dtype, v.base, gradientSumOf(st));
      }
    } else {
      std::vector<uint8_t> packed(v.byteSize());
      memorySpace(ctx).toHost(v, packed.data());
      addToSum(dtype, packed.data(), gradientSumOf(st));
    }
    ctx.addTime(ctx.gradientS, ctx.now() - addBeginS);
    st.microbatches.insert(int(mb));
    if (ctx.dataParallel)
      ctx.dataParallel->onGradient(ctx, param->index, int(mb));
    if (k > 0 && ++st.pending == k) {
      // PipeDream (k = 1) / PipeDream-2BW: update now with the mean of the
      // last k microbatches' gradients; later reads see the new version,
      // earlier reads keep theirs (the program holds their buffers).
      for (double &x : st.gradSum)
        x /= double(k);
      optimizerStepTensor(m->training, st.value, st.gradSum, st.optimizer);
      if (ctx.keepMeanGradients)
        st.meanGrad = st.gradSum;
      std::fill(st.gradSum.begin(), st.gradSum.end(), 0.0);
      st.pending = 0;
    }
  });
}

/// Throws `what`: stage/microbatch out of range, when the manifest is known.
void checkStageAndMicrobatch(const RankContext &ctx, const std::string &what,
                             int64_t stage, int64_t mb) {
  if (ctx.manifest && (stage < 0 || stage >= ctx.manifest->numStages))
    throw RuntimeError(what + ": stage out of range [0, " +
                       std::to_string(ctx.manifest->numStages) + ")");
  if (ctx.manifest && (mb < 0 || mb >= ctx.manifest->numMicrobatches))
    throw RuntimeError(what + ": microbatch out of range [0, " +
                       std::to_string(ctx.manifest->numMicrobatches) + ")");
}

int32_t stashImpl(int64_t stage, int64_t mb, int64_t bytes) {
  return guarded("pipeopt_rt_stash", [&](RankContext &ctx) {
    std::string what = "stash for stage " + std::to_string(stage) +
                       " microbatch " + std::to_string(mb);
    if (bytes < 0)
      throw RuntimeError(what + ": negative size " + std::to_string(bytes) +
                         " bytes");
    checkStageAndMicrobatch(ctx, what, stage, mb);
    int64_t &held = ctx.stash[{int(stage), int(mb)}];
    ctx.stashBytes += bytes - held;
    held = bytes;
    ctx.stashPeakBytes = std::max(ctx.stashPeakBytes, ctx.stashBytes);
    ctx.stashUsed = true;
  });
}

void checkAction(const RankContext &ctx, int64_t kind, int64_t stage,
                 int64_t mb, const char *fn) {
  std::string what = std::string(fn) + " for stage " + std::to_string(stage) +
                     " microbatch " + std::to_string(mb);
  if (kind < 0 || kind > 3)
    throw RuntimeError(what + ": invalid action kind " + std::to_string(kind) +
                       " (0=F, 1=B, 2=W, 3=BW)");
  checkStageAndMicrobatch(ctx, what, stage, mb);
}

/// The program's actions must be the manifest's: the next entry of this
/// rank's "actions" (when listed), on a rank that "stage_rank" gives the
/// stage (forward actions, when listed).
void checkActionAgainstManifest(RankContext &ctx, int64_t kind, int64_t stage,
                                int64_t mb) {
  const Manifest *m = ctx.manifest;
  if (!m)
    return;
  std::string what = std::string("action ") + actionKindName(int(kind)) +
                     " for stage " + std::to_string(stage) + " microbatch " +
                     std::to_string(mb);
  size_t index = ctx.actionsBegun++;
  if (size_t(ctx.rank) < m->actions.size()) {
    const std::vector<ManifestAction> &list = m->actions[size_t(ctx.rank)];
    if (index >= list.size())
      throw RuntimeError(
          what + " is this rank's action " + std::to_string(index) +
          " in this call, but the "
          "manifest" +
          manifestName(ctx) + " lists only " + std::to_string(list.size()) +
          " for rank " + std::to_string(ctx.rank) +
          " (is it the manifest of this model?)");
    const ManifestAction &want = list[index];
    if (want.kind != kind || want.stage != stage || want.microbatch != mb)
      throw RuntimeError(
          what + " is this rank's action " + std::to_string(index) +
          " in this call, but the "
          "manifest" +
          manifestName(ctx) + " lists " + actionKindName(want.kind) +
          " for stage " + std::to_string(want.stage) + " microbatch " +
          std::to_string(want.microbatch) +
          " there (is it the manifest of this model?)");
  }
  if (kind == PIPEOPT_RT_ACTION_F && !m->stageRankPipelines.empty()) {
    bool placed = false;
    for (const auto &pipeline : m->stageRankPipelines)
      placed = placed || pipeline[size_t(stage)] == ctx.rank;
    if (!placed)
      throw RuntimeError(what + " runs on rank " + std::to_string(ctx.rank) +
                         ", but the manifest" + manifestName(ctx) +
                         " puts stage " + std::to_string(stage) +
                         " on another rank (field 'stage_rank')");
  }
}

int32_t actionBegin(int64_t kind, int64_t stage, int64_t mb) {
  return guarded("pipeopt_rt_action_begin", [&](RankContext &ctx) {
    // The gradients of an action are reported after its end: the
    // all-reduce of those it completed starts before the next one.
    if (ctx.dataParallel)
      ctx.dataParallel->onActionsCompleted(ctx, ctx.actionsBegun);
    checkAction(ctx, kind, stage, mb, "action begin");
    checkActionAgainstManifest(ctx, kind, stage, mb);
    if (ctx.openKind >= 0)
      throw RuntimeError(
          std::string("action begin ") + actionKindName(int(kind)) +
          " for stage " + std::to_string(stage) + " microbatch " +
          std::to_string(mb) + " while " + actionKindName(ctx.openKind) +
          " for stage " + std::to_string(ctx.openStage) + " microbatch " +
          std::to_string(ctx.openMicrobatch) + " is still open");
    ctx.openKind = int(kind);
    ctx.openStage = int(stage);
    ctx.openMicrobatch = int(mb);
    ctx.openBeginS = ctx.now();
  });
}

int32_t actionEnd(int64_t kind, int64_t stage, int64_t mb) {
  return guarded("pipeopt_rt_action_end", [&](RankContext &ctx) {
    checkAction(ctx, kind, stage, mb, "action end");
    if (ctx.openKind != kind || ctx.openStage != stage ||
        ctx.openMicrobatch != mb)
      throw RuntimeError(
          std::string("action end ") + actionKindName(int(kind)) +
          " for stage " + std::to_string(stage) + " microbatch " +
          std::to_string(mb) + " does not match the open action" +
          (ctx.openKind < 0
               ? std::string(" (none)")
               : std::string(" ") + actionKindName(ctx.openKind) +
                     " for stage " + std::to_string(ctx.openStage) +
                     " microbatch " + std::to_string(ctx.openMicrobatch)));
    TraceEvent e;
    e.kind = int(kind);
    e.stage = int(stage);
    e.microbatch = int(mb);
    e.iteration = ctx.iteration;
    e.beginS = ctx.openBeginS;
    e.endS = ctx.now();
    ctx.events.push_back(e);
    ctx.openKind = ctx.openStage = ctx.openMicrobatch = -1;
    if (ctx.dataParallel)
      ctx.dataParallel->progress(ctx);
  });
}

} // namespace

extern "C" {

#define PIPEOPT_RT_DTYPE(Suffix, CType, DTypeEnum, Bytes)                      \
  int32_t _mlir_ciface_pipeopt_rt_send_##Suffix(                               \
      int64_t peer, int64_t srcStage, int64_t dstStage, int64_t mb,            \
      int64_t value, int64_t backward, pipeopt_rt_unranked_memref *buf) {      \
    return sendImpl(DType::DTypeEnum, peer, srcStage, dstStage, mb, value,     \
                    backward, buf);                                            \
  }                                                                            \
  int32_t _mlir_ciface_pipeopt_rt_recv_##Suffix(                               \
      int64_t peer, int64_t srcStage, int64_t dstStage, int64_t mb,            \
      int64_t value, int64_t backward, pipeopt_rt_unranked_memref *buf) {      \
    return recvImpl(DType::DTypeEnum, peer, srcStage, dstStage, mb, value,     \
                    backward, buf);                                            \
  }                                                                            \
  int32_t _mlir_ciface_pipeopt_rt_input_##Suffix(                              \
      int64_t argIndex, int64_t mb, pipeopt_rt_unranked_memref *buf) {         \
    return inputImpl(DType::DTypeEnum, argIndex, mb, buf);                     \
  }                                                                            \
  void _mlir_ciface_pipeopt_rt_input_view_##Suffix(                            \
      pipeopt_rt_unranked_memref *result, int64_t argIndex, int64_t mb,        \
      pipeopt_rt_unranked_memref *shape) {                                     \
    inputViewImpl(DType::DTypeEnum, result, argIndex, mb, shape);              \
  }                                                                            \
  int32_t _mlir_ciface_pipeopt_rt_output_##Suffix(                             \
      int64_t resultIndex, int64_t mb, pipeopt_rt_unranked_memref *buf) {      \
    return outputImpl(DType::DTypeEnum, resultIndex, mb, buf);                 \
  }                                                                            \
  int32_t _mlir_ciface_pipeopt_rt_gradient_##Suffix(                           \
      int64_t argIndex, int64_t stage, int64_t mb,                             \
      pipeopt_rt_unranked_memref *buf) {                                       \
    return gradientImpl(DType::DTypeEnum, argIndex, stage, mb, buf);           \
  }
#include "pipeopt/runtime/RuntimeFunctions.def"

int32_t pipeopt_rt_action_begin(int64_t kind, int64_t stage, int64_t mb) {
  return actionBegin(kind, stage, mb);
}
int32_t _mlir_ciface_pipeopt_rt_action_begin(int64_t kind, int64_t stage,
                                             int64_t mb) {
  return actionBegin(kind, stage, mb);
}
int32_t pipeopt_rt_action_end(int64_t kind, int64_t stage, int64_t mb) {
  return actionEnd(kind, stage, mb);
}
int32_t _mlir_ciface_pipeopt_rt_action_end(int64_t kind, int64_t stage,
                                           int64_t mb) {
  return actionEnd(kind, stage, mb);
}

int32_t pipeopt_rt_stash(int64_t stage, int64_t mb, int64_t bytes) {
  return stashImpl(stage, mb, bytes);
}
int32_t _mlir_ciface_pipeopt_rt_stash(int64_t stage, int64_t mb,
                                      int64_t bytes) {
  return stashImpl(stage, mb, bytes);
}

const char *pipeopt_rt_last_error(void) {
  RankContext *ctx = currentContext();
  if (!ctx || !ctx->isPoisoned())
    return nullptr;
  return ctx->errorMessage().c_str();
}

int32_t pipeopt_rt_abi_version(void) { return PIPEOPT_RT_ABI_VERSION; }

} // extern "C"
