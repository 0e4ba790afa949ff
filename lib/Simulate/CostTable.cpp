//===- CostTable.cpp - Per-stage cost tables ------------------------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Simulate/CostTable.h"
#include "pipeopt/Support/JSONKeys.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>

using namespace pipeopt;
using namespace pipeopt::sim;

static llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

//===----------------------------------------------------------------------===//
// CostTable
//===----------------------------------------------------------------------===//

CostTable CostTable::uniform(int n, double stageSec, double activationBytes,
                             double weightBytes, double boundaryBytes) {
  CostTable t;
  t.name = llvm::formatv("uniform-{0}s", stageSec).str();
  StageCost c;
  c.forwardSec = stageSec;
  c.backwardInputSec = stageSec;
  c.backwardWeightSec = stageSec;
  c.activationBytes = activationBytes;
  c.weightBytes = weightBytes;
  c.boundaryBytes = boundaryBytes;
  t.stages.assign(std::max(n, 0), c);
  return t;
}

CostTable CostTable::resample(int n) const {
  if (n == size() || n <= 0 || stages.empty())
    return *this;
  CostTable out;
  out.name = name;
  out.stages.resize(n);
  const int L = size();
  bool anyGradientBytes = false, anyExchanged = false;
  for (const StageCost &x : stages) {
    anyGradientBytes |= x.gradientBytes >= 0;
    anyExchanged |= x.exchangedGradientBytes >= 0;
  }
  // Stage s covers entries [s*L/n, (s+1)*L/n) in fractional units; use
  // exact integer arithmetic on the scaled axis [s*L, (s+1)*L) with entry e
  // covering [e*n, (e+1)*n).
  for (int s = 0; s < n; ++s) {
    long lo = static_cast<long>(s) * L, hi = static_cast<long>(s + 1) * L;
    StageCost &c = out.stages[s];
    for (int e = 0; e < L; ++e) {
      long elo = static_cast<long>(e) * n, ehi = static_cast<long>(e + 1) * n;
      long overlap = std::min(hi, ehi) - std::max(lo, elo);
      if (overlap <= 0)
        continue;
      double f = static_cast<double>(overlap) / n; // fraction of entry e
      const StageCost &x = stages[e];
      c.forwardSec += f * x.forwardSec;
      c.backwardInputSec += f * x.backwardInputSec;
      c.backwardWeightSec += f * x.backwardWeightSec;
      c.activationBytes += f * x.activationBytes;
      c.weightGradHoldBytes += f * x.weightGradHoldBytes;
      c.weightBytes += f * x.weightBytes;
      c.optimizerSec += f * x.optimizerSec;
      c.gradientAccumulateSec += f * x.gradientAccumulateSec;
      c.parameterElements += f * x.parameterElements;
      if (anyGradientBytes)
        c.gradientBytes =
            std::max(c.gradientBytes, 0.0) + f * x.reducedGradientBytes();
      if (anyExchanged)
        c.exchangedGradientBytes =
            std::max(c.exchangedGradientBytes, 0.0) + f * x.exchangeBytes();
    }
    // Boundary of the entry containing the right cut (position hi - 1 on
    // the scaled axis).
    int cutEntry = static_cast<int>((hi - 1) / n);
    c.boundaryBytes = stages[std::min(cutEntry, L - 1)].boundaryBytes;
  }
  // Entry e starts at e*n on the scaled axis, inside stage (e*n) / L.
  for (const TiedGroup &g : tied) {
    TiedGroup m;
    m.bytes = g.bytes;
    for (int e : g.stages) {
      int st = static_cast<int>(static_cast<long>(e) * n / L);
      if (std::find(m.stages.begin(), m.stages.end(), st) == m.stages.end())
        m.stages.push_back(st);
    }
    std::sort(m.stages.begin(), m.stages.end());
    out.tied.push_back(std::move(m));
  }
  return out;
}

static llvm::Expected<double> getNumber(const llvm::json::Object &o,
                                        llvm::StringRef key, double dflt,
                                        bool required, llvm::StringRef where) {
  const llvm::json::Value *v = o.get(key);
  if (!v) {
    if (required)
      return makeError(llvm::formatv("{0}: missing \"{1}\"", where, key));
    return dflt;
  }
  std::optional<double> d = v->getAsNumber();
  if (!d)
    return makeError(
        llvm::formatv("{0}: \"{1}\" must be a number", where, key));
  if (!std::isfinite(*d) || *d < 0)
    return makeError(llvm::formatv(
        "{0}: \"{1}\" must be finite and >= 0, got {2}", where, key, *d));
  return *d;
}

llvm::Expected<CostTable> sim::parseCostTable(llvm::StringRef json) {
  llvm::Expected<llvm::json::Value> root = parseJSONRejectingDuplicates(json);
  if (!root)
    return makeError("cost table: invalid JSON: " +
                     llvm::toString(root.takeError()));
  CostTable t;
  const llvm::json::Array *arr = root->getAsArray();
  if (const llvm::json::Object *o = root->getAsObject()) {
    if (std::optional<llvm::StringRef> n = o->getString("name"))
      t.name = n->str();
    arr = o->getArray("stages");
    if (!arr)
      return makeError("cost table: missing \"stages\" array");
  }
  if (!arr)
    return makeError("cost table: expected an object or an array");
  if (arr->empty())
    return makeError("cost table: \"stages\" is empty");
  int idx = 0;
  for (const llvm::json::Value &v : *arr) {
    std::string where = llvm::formatv("cost table: stages[{0}]", idx++).str();
    const llvm::json::Object *o = v.getAsObject();
    if (!o)
      return makeError(where + ": expected an object");
    StageCost c;
    auto get = [&](llvm::StringRef key, double &out,
                   bool required) -> llvm::Error {
      llvm::Expected<double> d = getNumber(*o, key, out, required, where);
      if (!d)
        return d.takeError();
      out = *d;
      return llvm::Error::success();
    };
    if (llvm::Error e = get("forward_s", c.forwardSec, true))
      return std::move(e);
    bool hasSplit = o->get("backward_input_s") || o->get("backward_weight_s");
    if (o->get("backward_s")) {
      if (hasSplit)
        return makeError(where + ": give either \"backward_s\" or "
                                 "\"backward_input_s\"/\"backward_weight_s\"");
      double bw = 0;
      if (llvm::Error e = get("backward_s", bw, true))
        return std::move(e);
      c.backwardInputSec = c.backwardWeightSec = bw / 2;
    } else {
      if (llvm::Error e = get("backward_input_s", c.backwardInputSec, false))
        return std::move(e);
      if (llvm::Error e = get("backward_weight_s", c.backwardWeightSec, false))
        return std::move(e);
    }
    if (llvm::Error e = get("activation_bytes", c.activationBytes, false))
      return std::move(e);
    if (llvm::Error e =
            get("weight_grad_hold_bytes", c.weightGradHoldBytes, false))
      return std::move(e);
    if (c.weightGradHoldBytes > c.activationBytes)
      return makeError(where + ": \"weight_grad_hold_bytes\" exceeds "
                               "\"activation_bytes\"");
    if (llvm::Error e = get("weight_bytes", c.weightBytes, false))
      return std::move(e);
    if (llvm::Error e = get("boundary_bytes", c.boundaryBytes, false))
      return std::move(e);
    if (llvm::Error e = get("optimizer_s", c.optimizerSec, false))
      return std::move(e);
    if (o->get("gradient_bytes"))
      if (llvm::Error e = get("gradient_bytes", c.gradientBytes, true))
        return std::move(e);
    if (o->get("exchanged_gradient_bytes"))
      if (llvm::Error e =
              get("exchanged_gradient_bytes", c.exchangedGradientBytes, true))
        return std::move(e);
    if (llvm::Error e =
            get("gradient_accumulate_s", c.gradientAccumulateSec, false))
      return std::move(e);
    if (llvm::Error e = get("parameter_elements", c.parameterElements, false))
      return std::move(e);
    t.stages.push_back(c);
  }
  const llvm::json::Object *top = root->getAsObject();
  const llvm::json::Value *tiedValue = top ? top->get("tied") : nullptr;
  if (tiedValue) {
    const llvm::json::Array *groups = tiedValue->getAsArray();
    if (!groups)
      return makeError("cost table: \"tied\" must be an array");
    int gi = 0;
    for (const llvm::json::Value &gv : *groups) {
      std::string where = llvm::formatv("cost table: tied[{0}]", gi++).str();
      const llvm::json::Object *go = gv.getAsObject();
      if (!go)
        return makeError(where + ": expected an object");
      if (auto bad = unknownKey(*go, {"stages", "bytes"}, where))
        return makeError(*bad);
      TiedGroup g;
      llvm::Expected<double> bytes = getNumber(*go, "bytes", 0, true, where);
      if (!bytes)
        return bytes.takeError();
      g.bytes = *bytes;
      const llvm::json::Array *st = go->getArray("stages");
      if (!st)
        return makeError(where + ": missing \"stages\" array");
      for (const llvm::json::Value &sv : *st) {
        std::optional<int64_t> i = sv.getAsInteger();
        if (!i || *i < 0 || *i >= t.size())
          return makeError(llvm::formatv(
              "{0}: \"stages\" must hold entry indices in [0, {1})", where,
              t.size()));
        if (std::find(g.stages.begin(), g.stages.end(), *i) == g.stages.end())
          g.stages.push_back(static_cast<int>(*i));
      }
      if (g.stages.size() < 2)
        return makeError(where + ": a tied group needs at least two distinct "
                                 "entries in \"stages\"");
      std::sort(g.stages.begin(), g.stages.end());
      t.tied.push_back(std::move(g));
    }
  }
  return t;
}

static llvm::Expected<std::string> readFile(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buf =
      llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!buf)
    return makeError(llvm::formatv("cannot read '{0}': {1}", path,
                                   buf.getError().message()));
  return (*buf)->getBuffer().str();
}

llvm::Expected<CostTable> sim::loadCostTable(llvm::StringRef path) {
  llvm::Expected<std::string> text = readFile(path);
  if (!text)
    return text.takeError();
  llvm::Expected<CostTable> t = parseCostTable(*text);
  if (!t)
    return makeError(path + ": " + llvm::toString(t.takeError()));
  if (t->name.empty())
    t->name = path.str();
  return t;
}

std::string sim::costTableToJSON(const CostTable &t) {
  llvm::json::Array stages;
  for (const StageCost &c : t.stages) {
    llvm::json::Object o{{"forward_s", c.forwardSec},
                         {"backward_input_s", c.backwardInputSec},
                         {"backward_weight_s", c.backwardWeightSec},
                         {"activation_bytes", c.activationBytes},
                         {"weight_grad_hold_bytes", c.weightGradHoldBytes},
                         {"weight_bytes", c.weightBytes},
                         {"boundary_bytes", c.boundaryBytes}};
    if (c.optimizerSec > 0)
      o["optimizer_s"] = c.optimizerSec;
    if (c.gradientBytes >= 0)
      o["gradient_bytes"] = c.gradientBytes;
    if (c.exchangedGradientBytes >= 0)
      o["exchanged_gradient_bytes"] = c.exchangedGradientBytes;
    if (c.gradientAccumulateSec > 0)
      o["gradient_accumulate_s"] = c.gradientAccumulateSec;
    if (c.parameterElements > 0)
      o["parameter_elements"] = c.parameterElements;
    stages.push_back(std::move(o));
  }
  llvm::json::Object root{{"name", t.name}, {"stages", std::move(stages)}};
  if (!t.tied.empty()) {
    llvm::json::Array groups;
    for (const TiedGroup &g : t.tied) {
      llvm::json::Array st;
      for (int i : g.stages)
        st.push_back(i);
      groups.push_back(
          llvm::json::Object{{"stages", std::move(st)}, {"bytes", g.bytes}});
    }
    root["tied"] = std::move(groups);
  }
  return llvm::formatv("{0:2}", llvm::json::Value(std::move(root))).str();
}
