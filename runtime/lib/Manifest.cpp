//===- Manifest.cpp - Loading <model>.manifest.json -------------*- C++ -*-===//

#include "pipeopt/runtime/Manifest.h"
#include "pipeopt/runtime/ManifestKeys.h"
#include "pipeopt/runtime/Reduce.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace pipeopt {
namespace rt {

using Json = nlohmann::json;

namespace {
/// Field accessors that throw RuntimeError naming the JSON path.
class Reader {
public:
  explicit Reader(std::string what) : what(std::move(what)) {}

  [[noreturn]] void fail(const std::string &path,
                         const std::string &msg) const {
    throw RuntimeError(what + ": field '" + path + "' " + msg);
  }
  const Json *get(const Json &obj, const std::string &key) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null())
      return nullptr;
    return &*it;
  }
  int64_t integer(const Json &v, const std::string &path, int64_t lo,
                  int64_t hi) const {
    if (!v.is_number_integer())
      fail(path, "must be an integer, got " + std::string(v.type_name()) + " " +
                     v.dump());
    int64_t x = v.get<int64_t>();
    if (x < lo || x > hi)
      fail(path, "must be in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], got " + std::to_string(x));
    return x;
  }
  int64_t requiredInt(const Json &obj, const std::string &key,
                      const std::string &path, int64_t lo, int64_t hi) const {
    const Json *v = get(obj, key);
    if (!v)
      fail(path, "is required but missing");
    return integer(*v, path, lo, hi);
  }
  std::string string(const Json &v, const std::string &path) const {
    if (!v.is_string())
      fail(path, "must be a string, got " + std::string(v.type_name()));
    return v.get<std::string>();
  }
  bool boolean(const Json &v, const std::string &path) const {
    if (!v.is_boolean())
      fail(path, "must be true or false, got " + v.dump());
    return v.get<bool>();
  }
  double number(const Json &v, const std::string &path) const {
    if (!v.is_number())
      fail(path, "must be a number, got " + std::string(v.type_name()) + " " +
                     v.dump());
    double x = v.get<double>();
    if (!std::isfinite(x))
      fail(path, "must be finite, got " + v.dump());
    return x;
  }
  /// 16 lower-case hex digits (a 64-bit hash).
  uint64_t hex64(const Json &v, const std::string &path) const {
    std::string text = string(v, path);
    bool hex = text.size() == 16;
    uint64_t value = 0;
    for (char c : text) {
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                     : -1;
      hex = hex && d >= 0;
      value = value << 4 | uint64_t(d < 0 ? 0 : d);
    }
    if (!hex)
      fail(path, "must be 16 lower-case hex digits; got '" + text + "'");
    return value;
  }
  const Json &array(const Json &v, const std::string &path) const {
    if (!v.is_array())
      fail(path, "must be an array, got " + std::string(v.type_name()));
    return v;
  }
  const Json &object(const Json &v, const std::string &path) const {
    if (!v.is_object())
      fail(path, "must be an object, got " + std::string(v.type_name()));
    return v;
  }
  Shape shape(const Json &obj, const std::string &path) const {
    const Json *v = get(obj, manifest::kShape);
    if (!v)
      fail(path + ".shape", "is required but missing");
    array(*v, path + ".shape");
    Shape s;
    for (size_t i = 0; i < v->size(); ++i)
      s.push_back(integer((*v)[i], path + ".shape[" + std::to_string(i) + "]",
                          0, int64_t(1) << 48));
    if (s.size() > PIPEOPT_RT_MAX_RANK)
      fail(path + ".shape", "has more than " +
                                std::to_string(PIPEOPT_RT_MAX_RANK) +
                                " dimensions");
    return s;
  }
  DType dtype(const Json &obj, const std::string &path) const {
    const Json *v = get(obj, manifest::kDType);
    if (!v)
      fail(path + ".dtype", "is required but missing");
    std::string name = string(*v, path + ".dtype");
    DType t;
    if (!parseDType(name, t))
      fail(path + ".dtype",
           "must be one of f32, f64, f16, bf16, i64, i32, i8, i1; got '" +
               name + "'");
    return t;
  }

private:
  std::string what;
};
} // namespace

/// The fields that describe the schedule must agree: every forward action
/// runs on a rank that stage_rank gives its stage (in some pipeline), no
/// forward action (stage, microbatch) is listed twice, and every microbatch
/// has an action. A manifest edited by hand, or one of another build of the
/// model, fails here rather than producing wrong profiles or silently
/// running fewer microbatches than it claims.
static void checkSchedule(const Manifest &m, const Reader &r) {
  std::map<std::pair<int, int>, std::string> forwards; // (stage, mb) -> path
  for (size_t k = 0; k < m.actions.size(); ++k) {
    for (size_t i = 0; i < m.actions[k].size(); ++i) {
      const ManifestAction &a = m.actions[k][i];
      if (a.kind != PIPEOPT_RT_ACTION_F)
        continue;
      std::string path =
          "actions[" + std::to_string(k) + "][" + std::to_string(i) + "]";
      std::string action = "F for stage " + std::to_string(a.stage) +
                           " microbatch " + std::to_string(a.microbatch);
      auto [it, inserted] = forwards.insert({{a.stage, a.microbatch}, path});
      if (!inserted)
        r.fail(path, "repeats " + action + ", which '" + it->second +
                         "' already lists: every forward action runs once");
      if (m.stageRankPipelines.empty())
        continue;
      std::set<int> ranks;
      for (const auto &pipeline : m.stageRankPipelines)
        ranks.insert(pipeline[size_t(a.stage)]);
      if (ranks.count(int(k)))
        continue;
      std::string where;
      for (int rank : ranks)
        where += (where.empty() ? "" : ", ") + std::to_string(rank);
      std::string field =
          m.stageRankPipelines.size() == 1
              ? "stage_rank[" + std::to_string(a.stage) + "]"
              : "stage_rank[*][" + std::to_string(a.stage) + "]";
      r.fail(field, "puts stage " + std::to_string(a.stage) + " on rank " +
                        where + ", but '" + path + "' (" + action +
                        ") runs it on rank " + std::to_string(k));
    }
  }
  if (m.actions.empty())
    return;
  std::vector<bool> seen(size_t(m.numMicrobatches), false);
  for (const auto &list : m.actions)
    for (const ManifestAction &a : list)
      seen[size_t(a.microbatch)] = true;
  for (int mb = 0; mb < m.numMicrobatches; ++mb)
    if (!seen[size_t(mb)])
      r.fail("actions", "lists no action for microbatch " + std::to_string(mb) +
                            ", but num_microbatches = " +
                            std::to_string(m.numMicrobatches) +
                            ": every microbatch runs through the model");
}

int parseActionKind(const std::string &name) {
  if (name == "F")
    return PIPEOPT_RT_ACTION_F;
  if (name == "B")
    return PIPEOPT_RT_ACTION_B;
  if (name == "W")
    return PIPEOPT_RT_ACTION_W;
  if (name == "BW")
    return PIPEOPT_RT_ACTION_BW;
  return -1;
}

const char *actionKindName(int kind) {
  switch (kind) {
  case PIPEOPT_RT_ACTION_F:
    return "F";
  case PIPEOPT_RT_ACTION_B:
    return "B";
  case PIPEOPT_RT_ACTION_W:
    return "W";
  case PIPEOPT_RT_ACTION_BW:
    return "BW";
  }
  return "?";
}

const ManifestInput *Manifest::findInput(int index) const {
  for (const auto &i : inputs)
    if (i.index == index)
      return &i;
  return nullptr;
}

const ManifestParameter *Manifest::findParameter(int index) const {
  for (const auto &p : parameters)
    if (p.index == index)
      return &p;
  return nullptr;
}

const char *optimizerName(OptimizerKind kind) {
  switch (kind) {
  case OptimizerKind::None:
    return "none";
  case OptimizerKind::Sgd:
    return "sgd";
  case OptimizerKind::Momentum:
    return "momentum";
  case OptimizerKind::AdamW:
    return "adamw";
  }
  return "?";
}

const char *targetName(Target target) {
  return target == Target::Cuda ? "cuda" : "cpu";
}

/// "training" and "parameters" (docs/Runtime.md, "Manifest"): a parameter is a
/// shared floating-point input; its ranks are distinct ranks of the run.
static void parseTraining(const Json &root, Manifest &m, const Reader &r) {
  using namespace manifest;
  if (const Json *v = r.get(root, kTraining)) {
    const Json &o = r.object(*v, kTraining);
    TrainingConfig &t = m.training;
    std::string base = std::string(kTraining) + ".";
    if (const Json *opt = r.get(o, kOptimizer)) {
      std::string path = base + kOptimizer;
      std::string name = r.string(*opt, path);
      if (name == "none")
        t.optimizer = OptimizerKind::None;
      else if (name == "sgd")
        t.optimizer = OptimizerKind::Sgd;
      else if (name == "momentum")
        t.optimizer = OptimizerKind::Momentum;
      else if (name == "adamw")
        t.optimizer = OptimizerKind::AdamW;
      else
        r.fail(path,
               "must be one of none, sgd, momentum, adamw; got '" + name + "'");
    }
    auto read = [&](const char *key, double &into, double lo, bool loOpen,
                    double hi, bool hiOpen, const char *range) {
      const Json *x = r.get(o, key);
      if (!x)
        return false;
      std::string path = base + key;
      double value = r.number(*x, path);
      if ((loOpen ? value <= lo : value < lo) ||
          (hiOpen ? value >= hi : value > hi))
        r.fail(path, std::string("must be in ") + range + ", got " + x->dump());
      into = value;
      return true;
    };
    const double inf = std::numeric_limits<double>::infinity();
    bool hasLr = read(kLr, t.lr, 0, false, inf, true, "[0, inf)");
    read(kMomentum, t.momentum, 0, false, 1, false, "[0, 1]");
    read(kBeta1, t.beta1, 0, false, 1, true, "[0, 1)");
    read(kBeta2, t.beta2, 0, false, 1, true, "[0, 1)");
    read(kEps, t.eps, 0, true, inf, true, "(0, inf)");
    read(kWeightDecay, t.weightDecay, 0, false, inf, true, "[0, inf)");
    if (r.get(o, kUpdateEvery))
      t.updateEvery =
          int(r.requiredInt(o, kUpdateEvery, base + kUpdateEvery, 0, 1 << 20));
    if (!hasLr && t.optimizer != OptimizerKind::None)
      r.fail(base + kLr, std::string("is required with optimizer '") +
                             optimizerName(t.optimizer) + "' but missing");
  }
  const Json *v = r.get(root, kParameters);
  if (!v)
    return;
  r.array(*v, kParameters);
  std::set<int> seen;
  for (size_t i = 0; i < v->size(); ++i) {
    std::string p = std::string(kParameters) + "[" + std::to_string(i) + "]";
    const Json &o = r.object((*v)[i], p);
    ManifestParameter param;
    std::string indexPath = p + "." + kIndex;
    param.index = int(r.requiredInt(o, kIndex, indexPath, 0, 1 << 20));
    const ManifestInput *in = m.findInput(param.index);
    if (!in)
      r.fail(indexPath, "is " + std::to_string(param.index) +
                            ", but 'inputs' lists no input with that index");
    if (in->microbatched)
      r.fail(indexPath, "is input " + std::to_string(param.index) +
                            ", which is microbatched (data); a parameter is "
                            "shared by all microbatches (\"microbatched\": "
                            "false)");
    if (!isFloatDType(in->dtype))
      r.fail(indexPath, "is input " + std::to_string(param.index) +
                            " of dtype " + dtypeName(in->dtype) +
                            "; a parameter needs f32, f64, f16 or bf16");
    if (!seen.insert(param.index).second)
      r.fail(indexPath, "repeats parameter " + std::to_string(param.index));
    std::string ranksPath = p + "." + kRanks;
    const Json *ranks = r.get(o, kRanks);
    if (!ranks)
      r.fail(ranksPath, "is required but missing");
    r.array(*ranks, ranksPath);
    if (ranks->empty())
      r.fail(ranksPath, "must list at least one rank");
    for (size_t k = 0; k < ranks->size(); ++k) {
      int rank =
          int(r.integer((*ranks)[k], ranksPath + "[" + std::to_string(k) + "]",
                        0, m.numRanks - 1));
      if (std::find(param.ranks.begin(), param.ranks.end(), rank) !=
          param.ranks.end())
        r.fail(ranksPath + "[" + std::to_string(k) + "]",
               "repeats rank " + std::to_string(rank));
      param.ranks.push_back(rank);
    }
    std::sort(param.ranks.begin(), param.ranks.end());
    m.parameters.push_back(std::move(param));
  }
  std::sort(m.parameters.begin(), m.parameters.end(),
            [](const auto &a, const auto &b) { return a.index < b.index; });
  // An empty list (the compiler's unpartitioned --train reference, which
  // writes its gradients as outputs) trains nothing: such a manifest runs as
  // a training build without parameters.
  m.hasParameters = !m.parameters.empty();
  // Asynchronous updates happen on the one rank that holds a parameter, as
  // its gradients arrive: copies on several ranks would need a reduction
  // per update.
  if (m.training.updateEvery > 0 &&
      m.numMicrobatches % m.training.updateEvery != 0)
    r.fail(std::string(kTraining) + "." + kUpdateEvery,
           "is " + std::to_string(m.training.updateEvery) +
               ", which does not divide num_microbatches (" +
               std::to_string(m.numMicrobatches) +
               "): an asynchronous update may not straddle two steps");
  if (m.training.updateEvery > 0)
    for (size_t i = 0; i < m.parameters.size(); ++i)
      if (m.parameters[i].ranks.size() != 1)
        r.fail(std::string(kParameters) + "[" + std::to_string(i) + "]." +
                   kRanks,
               "lists " + std::to_string(m.parameters[i].ranks.size()) +
                   " ranks, but asynchronous updates (\"training\": "
                   "\"update_every\") need every parameter on one rank");
}

const ManifestOutput *Manifest::findOutput(int index) const {
  for (const auto &o : outputs)
    if (o.index == index)
      return &o;
  return nullptr;
}

Manifest parseManifest(const std::string &text, const std::string &what) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::exception &e) {
    throw RuntimeError(what + ": invalid JSON: " + e.what());
  }
  Reader r(what);
  if (!root.is_object())
    throw RuntimeError(what + ": manifest must be a JSON object");
  Manifest m;
  if (const Json *v = r.get(root, manifest::kFormatVersion))
    m.formatVersion = int(r.integer(*v, manifest::kFormatVersion, 1, 1));
  m.numRanks = int(r.requiredInt(root, manifest::kNumRanks, manifest::kNumRanks,
                                 1, 1 << 20));
  m.numStages = int(r.requiredInt(root, manifest::kNumStages,
                                  manifest::kNumStages, 1, 1 << 20));
  m.numMicrobatches =
      int(r.requiredInt(root, manifest::kNumMicrobatches,
                        manifest::kNumMicrobatches, 1, 1 << 24));
  if (const Json *v = r.get(root, manifest::kSchedule))
    m.schedule = r.string(*v, manifest::kSchedule);
  if (const Json *v = r.get(root, manifest::kTarget)) {
    std::string name = r.string(*v, manifest::kTarget);
    if (name == targetName(Target::Cpu))
      m.target = Target::Cpu;
    else if (name == targetName(Target::Cuda))
      m.target = Target::Cuda;
    else
      r.fail(manifest::kTarget,
             "must be \"cpu\" or \"cuda\"; got '" + name + "'");
  }

  if (const Json *v = r.get(root, manifest::kModuleHash))
    m.moduleHash = r.hex64(*v, manifest::kModuleHash);
  if (const Json *v = r.get(root, manifest::kModelFile)) {
    r.object(*v, manifest::kModelFile);
    std::string base = std::string(manifest::kModelFile) + ".";
    ModelFileDigest d;
    d.bytes = uint64_t(r.requiredInt(*v, manifest::kBytes,
                                     base + manifest::kBytes, 1, INT64_MAX));
    const Json *h = r.get(*v, manifest::kFnv1a64);
    if (!h)
      r.fail(base + manifest::kFnv1a64, "is required but missing");
    d.fnv1a64 = r.hex64(*h, base + manifest::kFnv1a64);
    m.modelFile = d;
  }

  if (const Json *v = r.get(root, manifest::kEntryPoints)) {
    r.array(*v, manifest::kEntryPoints);
    if (v->size() != size_t(m.numRanks))
      r.fail("entry_points",
             "must list num_ranks = " + std::to_string(m.numRanks) +
                 " names, got " + std::to_string(v->size()));
    for (size_t i = 0; i < v->size(); ++i)
      m.entryPoints.push_back(
          r.string((*v)[i], "entry_points[" + std::to_string(i) + "]"));
  } else {
    for (int k = 0; k < m.numRanks; ++k)
      m.entryPoints.push_back("pipeopt_rank_" + std::to_string(k));
  }

  std::set<int> seen;
  if (const Json *v = r.get(root, manifest::kInputs)) {
    r.array(*v, manifest::kInputs);
    for (size_t i = 0; i < v->size(); ++i) {
      std::string p = "inputs[" + std::to_string(i) + "]";
      const Json &o = r.object((*v)[i], p);
      ManifestInput in;
      in.index = int(r.requiredInt(o, manifest::kIndex,
                                   p + "." + manifest::kIndex, 0, 1 << 20));
      in.shape = r.shape(o, p);
      in.dtype = r.dtype(o, p);
      if (const Json *mb = r.get(o, manifest::kMicrobatched))
        in.microbatched = r.boolean(*mb, p + "." + manifest::kMicrobatched);
      if (const Json *n = r.get(o, manifest::kName))
        in.name = r.string(*n, p + "." + manifest::kName);
      if (r.get(o, manifest::kIndexBound))
        in.indexBound =
            r.requiredInt(o, manifest::kIndexBound,
                          p + "." + manifest::kIndexBound, 1, INT64_MAX);
      if (const Json *c = r.get(o, manifest::kClassIndices)) {
        in.classIndices = r.boolean(*c, p + "." + manifest::kClassIndices);
        if (in.classIndices && (in.indexBound == 0 || isFloatDType(in.dtype)))
          r.fail(p + "." + manifest::kClassIndices,
                 "is true, but class indices need an integer dtype and "
                 "\"index_bound\" (the number of classes)");
      }
      if (!seen.insert(in.index).second)
        r.fail(p + ".index",
               "duplicates input index " + std::to_string(in.index));
      m.inputs.push_back(in);
    }
  }
  seen.clear();
  if (const Json *v = r.get(root, manifest::kOutputs)) {
    r.array(*v, manifest::kOutputs);
    for (size_t i = 0; i < v->size(); ++i) {
      std::string p = "outputs[" + std::to_string(i) + "]";
      const Json &o = r.object((*v)[i], p);
      ManifestOutput out;
      out.index = int(r.requiredInt(o, manifest::kIndex,
                                    p + "." + manifest::kIndex, 0, 1 << 20));
      out.shape = r.shape(o, p);
      out.dtype = r.dtype(o, p);
      if (const Json *mb = r.get(o, manifest::kMicrobatched))
        out.microbatched = r.boolean(*mb, p + "." + manifest::kMicrobatched);
      if (const Json *n = r.get(o, manifest::kName))
        out.name = r.string(*n, p + "." + manifest::kName);
      if (const Json *red = r.get(o, manifest::kReduce)) {
        std::string path = p + "." + manifest::kReduce;
        std::string value = r.string(*red, path);
        if (value != manifest::kReduceMean)
          r.fail(path, "must be \"mean\" (the mean over all microbatches) "
                       "or absent (one value per microbatch); got '" +
                           value + "'");
        out.reduce = OutputReduce::Mean;
        if (!out.microbatched)
          r.fail(path, "is \"mean\", but the output is not microbatched "
                       "(\"microbatched\": false): a mean is over the values "
                       "of all microbatches");
        if (!isFloatDType(out.dtype))
          r.fail(path, "is \"mean\", but the output's dtype is " +
                           std::string(dtypeName(out.dtype)) +
                           "; a mean needs f32, f64, f16 or bf16");
      }
      if (!seen.insert(out.index).second)
        r.fail(p + ".index",
               "duplicates output index " + std::to_string(out.index));
      m.outputs.push_back(out);
    }
  }
  std::sort(m.inputs.begin(), m.inputs.end(),
            [](const auto &a, const auto &b) { return a.index < b.index; });
  std::sort(m.outputs.begin(), m.outputs.end(),
            [](const auto &a, const auto &b) { return a.index < b.index; });

  if (const Json *v = r.get(root, manifest::kStageRank)) {
    r.array(*v, manifest::kStageRank);
    // Either [stage] -> rank or [pipeline][stage] -> rank (first pipeline
    // is used for the profile's stage -> rank column).
    if (!v->empty() && (*v)[0].is_array()) {
      for (size_t p = 0; p < v->size(); ++p) {
        std::string path = "stage_rank[" + std::to_string(p) + "]";
        r.array((*v)[p], path);
        std::vector<int> pipeline;
        for (size_t s = 0; s < (*v)[p].size(); ++s)
          pipeline.push_back(
              int(r.integer((*v)[p][s], path + "[" + std::to_string(s) + "]", 0,
                            m.numRanks - 1)));
        if (pipeline.size() != size_t(m.numStages))
          r.fail(path, "must have num_stages = " + std::to_string(m.numStages) +
                           " entries, got " + std::to_string(pipeline.size()));
        m.stageRankPipelines.push_back(std::move(pipeline));
      }
    } else {
      std::vector<int> pipeline;
      for (size_t s = 0; s < v->size(); ++s)
        pipeline.push_back(
            int(r.integer((*v)[s], "stage_rank[" + std::to_string(s) + "]", 0,
                          m.numRanks - 1)));
      if (pipeline.size() != size_t(m.numStages))
        r.fail("stage_rank",
               "must have num_stages = " + std::to_string(m.numStages) +
                   " entries, got " + std::to_string(pipeline.size()));
      m.stageRankPipelines.push_back(std::move(pipeline));
    }
    m.stageRank = m.stageRankPipelines.front();
  }

  if (const Json *v = r.get(root, manifest::kActions)) {
    r.array(*v, manifest::kActions);
    if (v->size() != size_t(m.numRanks))
      r.fail("actions", "must have one list per rank (" +
                            std::to_string(m.numRanks) + "), got " +
                            std::to_string(v->size()));
    for (size_t k = 0; k < v->size(); ++k) {
      std::string pk = "actions[" + std::to_string(k) + "]";
      r.array((*v)[k], pk);
      std::vector<ManifestAction> list;
      for (size_t i = 0; i < (*v)[k].size(); ++i) {
        std::string p = pk + "[" + std::to_string(i) + "]";
        const Json &o = r.object((*v)[k][i], p);
        ManifestAction a;
        const Json *kind = r.get(o, manifest::kKind);
        if (!kind)
          r.fail(p + ".kind", "is required but missing");
        if (kind->is_string()) {
          a.kind = parseActionKind(kind->get<std::string>());
          if (a.kind < 0)
            r.fail(p + ".kind",
                   "must be F, B, W or BW (or 0-3), got " + kind->dump());
        } else {
          a.kind = int(r.integer(*kind, p + ".kind", 0, 3));
        }
        a.stage =
            int(r.requiredInt(o, manifest::kStage, p + "." + manifest::kStage,
                              0, m.numStages - 1));
        a.microbatch = int(r.requiredInt(o, manifest::kMicrobatch,
                                         p + "." + manifest::kMicrobatch, 0,
                                         m.numMicrobatches - 1));
        list.push_back(a);
      }
      m.actions.push_back(std::move(list));
    }
  }
  parseTraining(root, m, r);
  checkSchedule(m, r);
  m.source = what;
  return m;
}

Manifest readManifest(const std::string &path) {
  std::vector<uint8_t> bytes = readFileBytes(path, "manifest");
  return parseManifest(std::string(bytes.begin(), bytes.end()), path);
}

std::string defaultManifestPath(const std::string &modelPath) {
  std::string stem = modelPath;
  size_t slash = stem.find_last_of('/');
  size_t dot = stem.rfind('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash))
    stem = stem.substr(0, dot);
  return stem + ".manifest.json";
}

} // namespace rt
} // namespace pipeopt
