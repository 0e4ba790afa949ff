//===- Checkpoint.cpp - checkpoints -----------------------------*- C++ -*-===//
//
// Reading, verifying and writing training checkpoints
// (docs/Runtime.md, "Checkpoints"; Checkpoint.h), and the checks of a
// --checkpoint-dir before a run (its lock, no stale checkpoints).
//
//===----------------------------------------------------------------------===//

#include "RunnerInternal.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

namespace pipeopt {
namespace rt {

using namespace runner;

std::string runner::numberText(double x) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", x);
  return text;
}

using Json = nlohmann::json;

// <dir>/step-<k>/ holds loss.npy, optimizer.json, weight_<i>.npy and the
// optimizer state (momentum_<i>.npy, adam_m_<i>.npy, adam_v_<i>.npy), and
// checkpoint.json, which records the format version and the size and
// 64-bit FNV-1a checksum of every other file. <dir>/latest names the newest
// complete one. See Checkpoint.h (writeCheckpoint, readCheckpoint).

namespace {

/// A checkpoint that verifies but does not fit the manifest: --resume fails
/// at once instead of falling back to an older one (which would not fit
/// either).
class CheckpointMismatch : public RuntimeError {
public:
  using RuntimeError::RuntimeError;
};

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)v);
  return buf;
}

/// `bytes` for a message: printable ASCII as is, every other byte (NUL,
/// newline, 0xff) as \xHH, at most `max` bytes of it (then "...").
std::string printable(const std::string &bytes, size_t max = 64) {
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < max; ++i) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += char(c);
    } else {
      char buf[5];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  if (bytes.size() > max)
    out += "...";
  return out;
}

/// Parses "step-<k>" (k: decimal digits, 1 <= k < 2^31); -1 otherwise.
int64_t stepOfName(const std::string &name) {
  if (name.rfind("step-", 0) != 0 || name.size() == 5 || name.size() > 15)
    return -1;
  int64_t k = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9')
      return -1;
    k = k * 10 + (name[i] - '0');
  }
  if (name[5] == '0' || k < 1 || k > INT32_MAX)
    return -1;
  return k;
}

/// Reads checkpoint files, checking them against checkpoint.json; every
/// error names the file and the field.
class CheckpointReader {
public:
  CheckpointReader(const Manifest &m, std::string ck)
      : m(m), ck(std::move(ck)) {}

  Checkpoint read() {
    std::string cj = ck + "/checkpoint.json";
    std::vector<uint8_t> bytes = readFileBytes(cj, "checkpoint");
    Json j = parseJson(cj, bytes);
    try {
      return readFrom(cj, j);
    } catch (const Json::exception &e) {
      // Every field is type-checked below; this is the last line of
      // defence, still naming the file.
      throw RuntimeError(cj + ": " + e.what());
    }
  }

private:
  const Manifest &m;
  std::string ck;
  Json files;
  std::set<std::string> used; ///< the names verified() read

  static Json parseJson(const std::string &file,
                        const std::vector<uint8_t> &bytes) {
    if (bytes.empty())
      throw RuntimeError(file + ": empty file (an interrupted or failed "
                                "write)");
    try {
      return Json::parse(std::string(bytes.begin(), bytes.end()));
    } catch (const Json::exception &e) {
      throw RuntimeError(file + ": invalid JSON: " + e.what());
    }
  }

  /// The integer field `key` of object `o` in [lo, hi].
  static int64_t intField(const Json &o, const std::string &key, int64_t lo,
                          int64_t hi, const std::string &file,
                          const std::string &field) {
    if (!o.contains(key))
      throw RuntimeError(file + ": field \"" + field + "\" is missing");
    const Json &v = o.at(key);
    bool big =
        v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX);
    if (!v.is_number_integer() || big)
      throw RuntimeError(file + ": field \"" + field +
                         "\" must be an integer in [" + std::to_string(lo) +
                         ", " + std::to_string(hi) + "], got " + v.dump());
    int64_t x = v.get<int64_t>();
    if (x < lo || x > hi)
      throw RuntimeError(file + ": field \"" + field + "\" is " +
                         std::to_string(x) + ", outside [" +
                         std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
  }

  /// The number field `key` of object `o`: finite, above `lo` (or equal,
  /// unless `loOpen`), below `hi` (or equal, unless `hiOpen`).
  static double numberField(const Json &o, const std::string &key, double lo,
                            bool loOpen, double hi, const std::string &file,
                            const std::string &range, bool hiOpen = true) {
    if (!o.contains(key))
      throw RuntimeError(file + ": field \"" + key + "\" is missing");
    const Json &v = o.at(key);
    double x = v.is_number() ? v.get<double>() : 0;
    if (!v.is_number() || !std::isfinite(x) || (loOpen ? x <= lo : x < lo) ||
        (hiOpen ? x >= hi : x > hi))
      throw RuntimeError(file + ": field \"" + key + "\" must be a number in " +
                         range + ", got " + v.dump());
    return x;
  }

  static std::string stringField(const Json &o, const std::string &key,
                                 const std::string &file,
                                 const std::string &field) {
    if (!o.contains(key))
      throw RuntimeError(file + ": field \"" + field + "\" is missing");
    if (!o.at(key).is_string())
      throw RuntimeError(file + ": field \"" + field +
                         "\" must be a string, got " + o.at(key).dump());
    return o.at(key).get<std::string>();
  }

  /// The bytes of checkpoint file `name`, checked against its size and
  /// checksum in checkpoint.json.
  std::vector<uint8_t> verified(const std::string &name) {
    std::string path = ck + "/" + name;
    std::string cj = ck + "/checkpoint.json";
    if (!files.contains(name))
      throw RuntimeError(cj + ": field \"files\" lists no \"" + name +
                         "\" (the checkpoint is incomplete)");
    used.insert(name);
    const Json &f = files.at(name);
    std::string field = "files." + name;
    if (!f.is_object())
      throw RuntimeError(cj + ": field \"" + field + "\" must be an object");
    int64_t size = intField(f, "bytes", 0, INT64_MAX, cj, field + ".bytes");
    std::string sum = stringField(f, "fnv1a64", cj, field + ".fnv1a64");
    std::vector<uint8_t> bytes = readFileBytes(path, "checkpoint");
    if (int64_t(bytes.size()) != size)
      throw RuntimeError(path + ": " + std::to_string(bytes.size()) +
                         " bytes, but checkpoint.json records " +
                         std::to_string(size) +
                         " (the file is truncated "
                         "or was replaced)");
    std::string got = hex64(fnv1a64(bytes.data(), bytes.size()));
    if (got != sum)
      throw RuntimeError(path + ": FNV-1a checksum " + got +
                         " differs from the " + sum +
                         " that checkpoint.json "
                         "records (the file is corrupt)");
    return bytes;
  }

  HostTensor npy(const std::string &name) {
    std::vector<uint8_t> bytes = verified(name);
    return parseNpy(bytes, ck + "/" + name);
  }

  /// Weights and optimizer state are finite: a NaN or infinity would train
  /// on silently (the checksum only proves the file is what was written).
  static void checkFinite(const std::vector<double> &v,
                          const std::string &path) {
    for (size_t e = 0; e < v.size(); ++e)
      if (!std::isfinite(v[e]))
        throw RuntimeError(path + ": element " + std::to_string(e) + " is " +
                           (std::isnan(v[e]) ? "nan"
                            : v[e] > 0       ? "inf"
                                             : "-inf") +
                           " (weights and optimizer state must be finite)");
  }

  std::vector<double> f64(const std::string &name, const Shape &shape) {
    HostTensor t = npy(name);
    if (t.dtype != DType::F64 || t.shape != shape)
      throw RuntimeError(ck + "/" + name + " is " +
                         typeString(t.dtype, t.shape) + ", expected " +
                         typeString(DType::F64, shape));
    std::vector<double> v(t.data.size() / 8);
    if (!v.empty())
      std::memcpy(v.data(), t.data.data(), t.data.size());
    checkFinite(v, ck + "/" + name);
    return v;
  }

  Checkpoint readFrom(const std::string &cj, const Json &j) {
    if (!j.is_object())
      throw RuntimeError(cj + ": not a JSON object");
    if (!j.contains("format") || !j["format"].is_string() ||
        j["format"].get<std::string>() != "pipeopt-checkpoint")
      throw RuntimeError(cj + ": field \"format\" must be "
                              "\"pipeopt-checkpoint\" (not a pipeopt "
                              "checkpoint)");
    if (!j.contains("format_version"))
      throw RuntimeError(cj + ": field \"format_version\" is missing (a "
                              "checkpoint of an older pipeopt-run, without "
                              "checksums, or not a checkpoint)");
    int64_t version =
        intField(j, "format_version", 0, INT64_MAX, cj, "format_version");
    if (version != kCheckpointFormatVersion)
      throw RuntimeError(cj + ": field \"format_version\" is " +
                         std::to_string(version) +
                         ", but this pipeopt-run "
                         "reads version " +
                         std::to_string(kCheckpointFormatVersion));
    Checkpoint c;
    c.path = ck;
    c.step = int(intField(j, "step", 1, INT32_MAX - 1, cj, "step"));
    std::string base =
        ck.substr(ck.rfind('/') == std::string::npos ? 0 : ck.rfind('/') + 1);
    if (base.rfind("step-", 0) == 0 && stepOfName(base) != c.step)
      throw RuntimeError(cj + ": field \"step\" is " + std::to_string(c.step) +
                         ", but the directory is " + base);
    if (!j.contains("files") || !j["files"].is_object())
      throw RuntimeError(cj + ": field \"files\" (the size and checksum of "
                              "every file) is missing or not an object");
    files = j["files"];
    std::string checksum = stringField(j, "checksum", cj, "checksum");
    if (checksum != "fnv1a64")
      throw RuntimeError(cj + ": field \"checksum\" is \"" +
                         printable(checksum) +
                         "\", but this pipeopt-run verifies \"fnv1a64\"");
    for (auto it = files.begin(); it != files.end(); ++it) {
      const std::string &name = it.key();
      if (name.empty() || name == "." || name == ".." ||
          name.find('/') != std::string::npos)
        throw RuntimeError(cj + ": field \"files\" lists \"" + printable(name) +
                           "\", not a file name");
    }
    int64_t mbs =
        intField(j, "num_microbatches", 1, INT32_MAX, cj, "num_microbatches");
    std::string opt = stringField(j, "optimizer", cj, "optimizer");
    if (!j.contains("parameters") || !j["parameters"].is_array())
      throw RuntimeError(cj + ": field \"parameters\" must be an array of "
                              "parameter indices");
    std::set<int64_t> listed;
    for (const Json &p : j["parameters"]) {
      if (!p.is_number_integer() || p.get<int64_t>() < 0 ||
          p.get<int64_t>() > INT32_MAX)
        throw RuntimeError(cj + ": field \"parameters\" holds " + p.dump() +
                           ", not a parameter index");
      listed.insert(p.get<int64_t>());
    }
    // The contents first (corruption), then whether it fits the manifest.
    HostTensor losses = npy("loss.npy");
    if (losses.dtype != DType::F32 || losses.shape != Shape{c.step})
      throw RuntimeError(ck + "/loss.npy is " +
                         typeString(losses.dtype, losses.shape) +
                         ", expected f32[" + std::to_string(c.step) + "]");
    c.losses.resize(size_t(c.step));
    std::memcpy(c.losses.data(), losses.data.data(), losses.data.size());
    std::string oj = ck + "/optimizer.json";
    Json o = parseJson(oj, verified("optimizer.json"));
    if (!o.is_object())
      throw RuntimeError(oj + ": not a JSON object");
    if (stringField(o, "optimizer", oj, "optimizer") != opt)
      throw RuntimeError(oj + ": field \"optimizer\" is '" +
                         o["optimizer"].get<std::string>() +
                         "', but checkpoint.json says '" + opt + "'");
    intField(o, "steps", c.step, c.step, oj, "steps");
    // The hyperparameters, in the ranges the manifest allows (the run uses
    // the manifest's; a checkpoint holding others is corrupt).
    const double inf = std::numeric_limits<double>::infinity();
    numberField(o, "lr", 0, false, inf, oj, "[0, inf)");
    numberField(o, "momentum", 0, false, 1, oj, "[0, 1]", false);
    numberField(o, "beta1", 0, false, 1, oj, "[0, 1)");
    numberField(o, "beta2", 0, false, 1, oj, "[0, 1)");
    numberField(o, "eps", 0, true, inf, oj, "(0, inf)");
    numberField(o, "weight_decay", 0, false, inf, oj, "[0, inf)");
    if (!o.contains("parameters") || !o["parameters"].is_object())
      throw RuntimeError(oj + ": field \"parameters\" is missing or not an "
                              "object");
    const Json &ps = o["parameters"];

    if (mbs != m.numMicrobatches)
      throw CheckpointMismatch(ck + ": the checkpoint has " +
                               std::to_string(mbs) +
                               " microbatches, the manifest " + m.source + " " +
                               std::to_string(m.numMicrobatches));
    if (opt != optimizerName(m.training.optimizer))
      throw CheckpointMismatch(ck +
                               ": the checkpoint was written with "
                               "optimizer '" +
                               opt + "', the manifest " + m.source +
                               " trains with '" +
                               optimizerName(m.training.optimizer) + "'");
    std::set<int64_t> want;
    for (const ManifestParameter &p : m.parameters)
      want.insert(p.index);
    if (listed != want)
      throw CheckpointMismatch(
          cj +
          ": field \"parameters\" lists other parameters than the "
          "manifest " +
          m.source + " (\"parameters\")");
    // Optimizer updates per step: one (synchronous), or one per
    // update_every microbatches (asynchronous schedules).
    int64_t perStep = m.training.updateEvery > 0
                          ? std::max<int64_t>(1, m.numMicrobatches)
                          : 1;
    OptimizerKind k = m.training.optimizer;
    for (const ManifestParameter &p : m.parameters) {
      std::string i = std::to_string(p.index);
      const ManifestInput *in = m.findInput(p.index);
      GatheredParameter g;
      g.value = npy("weight_" + i + ".npy");
      if (g.value.dtype != in->dtype || g.value.shape != in->shape)
        throw CheckpointMismatch(ck + "/weight_" + i + ".npy is " +
                                 typeString(g.value.dtype, g.value.shape) +
                                 ", but the manifest " + m.source +
                                 " declares " + parameterName(m, p.index) +
                                 " " + typeString(in->dtype, in->shape));
      checkFinite(tensorToDoubles(g.value), ck + "/weight_" + i + ".npy");
      if (k == OptimizerKind::Momentum)
        g.first = f64("momentum_" + i + ".npy", in->shape);
      if (k == OptimizerKind::AdamW) {
        g.first = f64("adam_m_" + i + ".npy", in->shape);
        g.second = f64("adam_v_" + i + ".npy", in->shape);
        for (size_t e = 0; e < g.second.size(); ++e)
          if (!(g.second[e] >= 0))
            throw RuntimeError(ck + "/adam_v_" + i + ".npy: element " +
                               std::to_string(e) + " is " +
                               numberText(g.second[e]) +
                               " (a second moment is >= 0)");
      }
      // An f32 parameter of a cpu build keeps f32 state: a value beyond
      // f32's range would become an infinity when it is loaded.
      if (optimizerStateDType(in->dtype, m.target) == DType::F32) {
        const char *kind =
            k == OptimizerKind::Momentum ? "momentum_" : "adam_m_";
        const std::pair<const std::vector<double> *, std::string> parts[2] = {
            {&g.first, kind}, {&g.second, "adam_v_"}};
        for (const auto &[values, file] : parts)
          for (size_t e = 0; e < values->size(); ++e)
            if (std::isinf(float((*values)[e])))
              throw RuntimeError(ck + "/" + file + i + ".npy: element " +
                                 std::to_string(e) + " is " +
                                 numberText((*values)[e]) +
                                 ", beyond the range of the f32 optimizer "
                                 "state of an f32 parameter");
      }
      if (!ps.contains(i) || !ps[i].is_object())
        throw RuntimeError(oj + ": field \"parameters." + i +
                           "\" is missing or not an object");
      // AdamW's bias correction divides by 1 - beta^step: step >= 1.
      int64_t lo = k == OptimizerKind::AdamW ? 1 : 0;
      int64_t hi = m.training.updateEvery > 0 ? c.step * perStep : c.step;
      if (m.training.updateEvery == 0)
        lo = c.step;
      g.step = intField(ps[i], "step", lo, hi, oj, "parameters." + i + ".step");
      c.parameters[p.index] = std::move(g);
    }
    // Every file listed is one this checkpoint has (each needed one was
    // required by verified()).
    for (auto it = files.begin(); it != files.end(); ++it)
      if (!used.count(it.key()))
        throw RuntimeError(cj + ": field \"files\" lists \"" +
                           printable(it.key()) +
                           "\", which is not a file of this checkpoint");
    return c;
  }
};

} // namespace

Checkpoint readCheckpointStep(const Manifest &m, const std::string &stepDir) {
  return CheckpointReader(m, stepDir).read();
}

Checkpoint readCheckpoint(const Manifest &m, const std::string &dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> notes;
  std::set<std::string> tried;
  std::string latest = dir + "/latest";
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw RuntimeError(
        dir + ": " + (ec ? ec.message() : std::string("not a directory")) +
        " (no checkpoint to resume from; " + latest + " cannot be read)");
  std::string name;
  try {
    std::vector<uint8_t> bytes = readFileBytes(latest, "checkpoint");
    name.assign(bytes.begin(), bytes.end());
    while (!name.empty() &&
           std::isspace(static_cast<unsigned char>(name.back())))
      name.pop_back();
    if (stepOfName(name) < 0)
      throw RuntimeError(latest + ": names '" + printable(name) +
                         "', not a checkpoint step-<k>");
    tried.insert(name);
    Checkpoint c = readCheckpointStep(m, dir + "/" + name);
    return c;
  } catch (const CheckpointMismatch &) {
    throw;
  } catch (const RuntimeError &e) {
    notes.push_back(std::string("skipped: ") + e.what());
  }
  // The newest step-<k> that verifies.
  std::vector<std::pair<int64_t, std::string>> steps;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string n = it->path().filename().string();
    if (stepOfName(n) > 0 && !tried.count(n))
      steps.push_back({stepOfName(n), n});
  }
  if (ec)
    throw RuntimeError(dir + ": cannot list the checkpoints: " + ec.message());
  std::sort(steps.rbegin(), steps.rend());
  for (const auto &s : steps) {
    try {
      Checkpoint c = readCheckpointStep(m, dir + "/" + s.second);
      c.notes = notes;
      c.notes.push_back("resuming from " + c.path +
                        ", the newest complete checkpoint that verifies");
      return c;
    } catch (const CheckpointMismatch &) {
      throw;
    } catch (const RuntimeError &e) {
      notes.push_back(std::string("skipped: ") + e.what());
    }
  }
  std::string all;
  for (const std::string &n : notes)
    all += "; " + n;
  throw RuntimeError("no complete checkpoint in " + dir + " verifies" + all);
}

namespace {
/// std::filesystem::remove_all that throws naming `path` and the reason.
void removeAll(const std::string &path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec)
    throw RuntimeError("cannot remove " + path + ": " + ec.message());
}

void renamePath(const std::string &from, const std::string &to) {
  std::error_code ec;
  std::filesystem::rename(from, to, ec);
  if (ec)
    throw RuntimeError("cannot rename " + from + " to " + to + ": " +
                       ec.message());
}
} // namespace

void writeCheckpoint(const Manifest &m, const std::string &dir, int step,
                     const std::vector<float> &losses,
                     const std::map<int, GatheredParameter> &params) {
  namespace fs = std::filesystem;
  ensureDir(dir);
  std::string name = "step-" + std::to_string(step);
  std::string tmp = dir + "/tmp-" + std::to_string(step);
  std::string final = dir + "/" + name;
  removeAll(tmp);
  // Temporaries of `latest` that a killed run left behind.
  {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec))
      if (it->path().filename().string().rfind(".latest.tmp.", 0) == 0)
        fs::remove(it->path(), ec);
  }
  try {
    std::error_code ec;
    fs::create_directory(tmp, ec);
    if (ec)
      throw RuntimeError("cannot create directory " + tmp + ": " +
                         ec.message());
    RankResult r;
    r.losses = losses;
    r.parameters = params;
    RunOptions files;
    files.outputDir = tmp;
    writeTrainingFiles(m, files, r);
    // checkpoint.json, last: the size and checksum of every other file,
    // read back from the disk.
    Json sums = Json::object();
    std::vector<std::string> names;
    for (fs::directory_iterator it(tmp, ec), end; !ec && it != end;
         it.increment(ec))
      names.push_back(it->path().filename().string());
    if (ec)
      throw RuntimeError("cannot list " + tmp + ": " + ec.message());
    std::sort(names.begin(), names.end());
    for (const std::string &f : names) {
      std::vector<uint8_t> bytes = readFileBytes(tmp + "/" + f, "checkpoint");
      sums[f] = {{"bytes", bytes.size()},
                 {"fnv1a64", hex64(fnv1a64(bytes.data(), bytes.size()))}};
    }
    Json j = {{"format", "pipeopt-checkpoint"},
              {"format_version", kCheckpointFormatVersion},
              {"step", step},
              {"num_microbatches", m.numMicrobatches},
              {"optimizer", optimizerName(m.training.optimizer)},
              {"parameters", Json::array()},
              {"checksum", "fnv1a64"},
              {"files", sums}};
    for (const auto &kv : params)
      j["parameters"].push_back(kv.first);
    writeFileAtomic(tmp + "/checkpoint.json", j.dump(2) + "\n",
                    FollowLinks::Never, false);
    syncDirectory(tmp);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  // A checkpoint of this step from an earlier run is moved aside first
  // (rename cannot replace a non-empty directory).
  std::error_code ec;
  if (fs::exists(final, ec)) {
    std::string old = dir + "/old-" + std::to_string(step);
    removeAll(old);
    renamePath(final, old);
    removeAll(old);
  }
  renamePath(tmp, final);
  syncDirectory(dir);
  writeFileAtomic(dir + "/latest", name + "\n", FollowLinks::Never);
}

namespace runner {

/// A fresh run (no --resume) refuses a checkpoint directory that already
/// holds checkpoints (`latest` or a step-* directory): it would overwrite
/// them and mix its checkpoints with theirs.
void refuseExistingCheckpoints(const std::string &dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return;
  std::string what;
  fs::file_status latest = fs::symlink_status(dir + "/latest", ec);
  if (fs::is_regular_file(latest)) {
    std::ifstream in(dir + "/latest", std::ios::binary);
    std::string name(256, '\0');
    in.read(name.data(), std::streamsize(name.size()));
    name.resize(size_t(in.gcount()));
    while (!name.empty() &&
           std::isspace(static_cast<unsigned char>(name.back())))
      name.pop_back();
    what = "latest names " + printable(name);
  } else if (fs::exists(latest)) {
    what = "it has a latest";
  } else {
    std::vector<std::string> steps;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec)) {
      std::string n = it->path().filename().string();
      if (n.rfind("step-", 0) == 0)
        steps.push_back(printable(n));
    }
    if (steps.empty())
      return;
    std::sort(steps.begin(), steps.end());
    what = steps.front();
    for (size_t i = 1; i < steps.size() && i < 4; ++i)
      what += ", " + steps[i];
    if (steps.size() > 4)
      what += ", ...";
  }
  throw RuntimeError(dir + " already holds checkpoints (" + what +
                     "): pass --resume " + dir +
                     " to continue from them, or choose another "
                     "--checkpoint-dir");
}

/// Takes an exclusive lock (flock) on `dir`/.lock for the rest of the
/// process, so that two runs never write checkpoints into one directory
/// (they published incomplete step directories and failed with "cannot
/// write" naming a temporary). The lock file records the holder's pid for
/// the error; the kernel releases the lock when the process ends, also on
/// kill -9, so a stale file never blocks a later run.
void lockCheckpointDir(const std::string &dir) {
  std::string path = dir + "/.lock";
  int fd =
      ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0)
    throw RuntimeError("--checkpoint-dir: cannot open " + path + ": " +
                       std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    char pid[32] = {0};
    ssize_t n = ::pread(fd, pid, sizeof(pid) - 1, 0);
    ::close(fd);
    std::string holder;
    for (ssize_t i = 0;
         i < n && std::isdigit(static_cast<unsigned char>(pid[i])); ++i)
      holder += pid[i];
    if (err == EWOULDBLOCK)
      throw RuntimeError(
          "--checkpoint-dir " + dir + " is in use by another pipeopt-run" +
          (holder.empty() ? "" : " (pid " + holder + ")") +
          ": two runs must not write checkpoints into one directory");
    throw RuntimeError("--checkpoint-dir: cannot lock " + path + ": " +
                       std::strerror(err));
  }
  std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, me.data(), me.size(), 0) != ssize_t(me.size()))
    throw RuntimeError("--checkpoint-dir: cannot write " + path + ": " +
                       std::strerror(errno));
  // Kept open (and locked) until the process ends.
}

} // namespace runner

} // namespace rt
} // namespace pipeopt
