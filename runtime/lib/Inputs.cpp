//===- Inputs.cpp - model inputs --------------------------------*- C++ -*-===//
//
// The inputs of a run: seeded random data, .npy files and in-memory
// tensors, checked against the manifest (Inputs.h).
//
//===----------------------------------------------------------------------===//

#include "RunnerInternal.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <random>
#include <sstream>

namespace pipeopt {
namespace rt {

using namespace runner;

static uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (exp <= 0) {
    if (exp < -10)
      return uint16_t(sign);
    mant |= 0x800000;
    return uint16_t(sign | (mant >> (14 - exp)));
  }
  if (exp >= 31)
    return uint16_t(sign | 0x7c00);
  return uint16_t(sign | (uint32_t(exp) << 10) | (mant >> 13));
}

static uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  x += 0x7fff + ((x >> 16) & 1); // round to nearest even
  return uint16_t(x >> 16);
}

/// Largest input the runner materializes (all microbatches together):
/// 64 GiB. Larger manifests are almost certainly wrong, and failing up
/// front names the input instead of a bare std::bad_alloc.
constexpr uint64_t kMaxInputBytes = uint64_t(64) << 30;

/// Checks every input of `m` (with its microbatch dimension) for element
/// count / byte size overflow and against kMaxInputBytes before anything is
/// allocated; throws a RuntimeError naming the input and its size.
void checkInputSizes(const Manifest &m) {
  for (const ManifestInput &in : m.inputs) {
    Shape full = in.shape;
    if (in.microbatched)
      full.insert(full.begin(), m.numMicrobatches);
    std::string what = "input " + std::to_string(in.index) +
                       (in.name.empty() ? "" : " ('" + in.name + "')") +
                       " of shape " + typeString(in.dtype, full);
    int64_t n;
    try {
      n = numElements(full);
    } catch (const RuntimeError &) {
      throw RuntimeError(what + ": the element count overflows 64 bits");
    }
    uint64_t elemBytes = dtypeSize(in.dtype);
    if (elemBytes != 0 && uint64_t(n) > kMaxInputBytes / elemBytes) {
      std::ostringstream os;
      os.precision(3);
      os << what << " needs " << double(n) * double(elemBytes) << " bytes ("
         << double(n) * double(elemBytes) / double(uint64_t(1) << 30)
         << " GiB), more than the limit of 64 GiB per input";
      throw RuntimeError(os.str());
    }
  }
}

HostTensor randomInput(const ManifestInput &input, int numMicrobatches,
                       uint64_t seed) {
  HostTensor t;
  t.dtype = input.dtype;
  t.shape = input.shape;
  if (input.microbatched)
    t.shape.insert(t.shape.begin(), numMicrobatches);
  DType dtype = t.dtype;
  int64_t n = numElements(t.shape);
  t.data.resize(size_t(n) * dtypeSize(dtype));
  // The rule and its rationale: Inputs.h. Data: unscaled. Weights: by the
  // shape without its leading 1s (the batch dimension of TOSA's rank-3
  // matmul operands and of broadcast biases such as [1, 1, N]).
  double lo = -1.0, hi = 1.0;
  if (!input.microbatched) {
    Shape w = input.shape;
    w.erase(w.begin(),
            std::find_if(w.begin(), w.end(), [](int64_t d) { return d != 1; }));
    if (w.size() <= 1) {
      lo = 0.5;
      hi = 1.5;
    } else {
      int64_t fanIn = numElements(Shape(w.begin() + 1, w.end()));
      double a = fanIn > 0 ? std::sqrt(3.0 / double(fanIn)) : 1.0;
      lo = -a;
      hi = a;
    }
  }
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> uniform(lo, hi);
  // Integers: [0, 10), or [0, index_bound) for gather indices (an embedding
  // lookup must stay inside its table).
  std::uniform_int_distribution<int64_t> small(
      0, input.indexBound > 0 ? input.indexBound - 1 : 9);
  std::uniform_int_distribution<int> bit(0, 1);
  auto real = [&] { return uniform(gen); };
  for (int64_t i = 0; i < n; ++i) {
    uint8_t *p = t.data.data() + size_t(i) * dtypeSize(dtype);
    switch (dtype) {
    case DType::F32: {
      float v = float(real());
      std::memcpy(p, &v, 4);
      break;
    }
    case DType::F64: {
      double v = real();
      std::memcpy(p, &v, 8);
      break;
    }
    case DType::F16: {
      uint16_t v = floatToHalf(float(real()));
      std::memcpy(p, &v, 2);
      break;
    }
    case DType::BF16: {
      uint16_t v = floatToBf16(float(real()));
      std::memcpy(p, &v, 2);
      break;
    }
    case DType::I64: {
      int64_t v = small(gen);
      std::memcpy(p, &v, 8);
      break;
    }
    case DType::I32: {
      int32_t v = int32_t(std::min<int64_t>(small(gen), INT32_MAX));
      std::memcpy(p, &v, 4);
      break;
    }
    case DType::I8:
      *p = uint8_t(std::min<int64_t>(small(gen), 127));
      break;
    case DType::I1:
      *p = uint8_t(bit(gen));
      break;
    }
  }
  return t;
}

uint64_t parseSeed(const std::string &v) {
  // strtoull alone accepts "-1" (as 2^64 - 1) and saturates on
  // overflow: require digits only, and no ERANGE.
  char *end = nullptr;
  errno = 0;
  uint64_t seed = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end || errno == ERANGE ||
      !std::all_of(v.begin(), v.end(),
                   [](char c) { return c >= '0' && c <= '9'; }))
    throw RuntimeError("--seed expects a non-negative integer below "
                       "2^64, got '" +
                       v + "'");
  return seed;
}

uint64_t inputSeed(uint64_t seed, int64_t index) {
  return seed * 1000003ull + uint64_t(index) + 1;
}

/// Every value of a class-index input (a cross-entropy target) must be a
/// class: in [0, index_bound).
void checkClassIndices(const ManifestInput &in, const HostTensor &t,
                       const std::string &file) {
  size_t n = size_t(numElements(t.shape));
  size_t width = t.data.size() / std::max<size_t>(n, 1);
  for (size_t i = 0; i < n; ++i) {
    int64_t v = 0;
    const uint8_t *p = t.data.data() + i * width;
    if (width == 8) {
      std::memcpy(&v, p, 8);
    } else if (width == 4) {
      int32_t x;
      std::memcpy(&x, p, 4);
      v = x;
    } else {
      v = int8_t(*p);
    }
    if (v < 0 || v >= in.indexBound)
      throw RuntimeError(file + ": input " + std::to_string(in.index) +
                         " holds class indices in [0, " +
                         std::to_string(in.indexBound) +
                         ") (a cross-entropy target; \"class_indices\" in "
                         "the manifest), but element " +
                         std::to_string(i) + " is " + std::to_string(v));
  }
}

namespace {
/// readNpy, naming the file and its size when it does not fit in memory.
HostTensor readInputNpy(const std::string &file, const std::string &what) {
  try {
    return readNpy(file);
  } catch (const std::bad_alloc &) {
    std::error_code ec;
    uintmax_t size = std::filesystem::file_size(file, ec);
    throw RuntimeError(
        file + ": " + what + ": out of memory reading the " +
        (ec ? std::string("file") : std::to_string(size) + "-byte file"));
  }
}
} // namespace

namespace {
/// The --microbatch-args value that adds input `index` to the microbatched
/// inputs of `m`.
std::string microbatchArgsWith(const Manifest &m, int index) {
  std::vector<int> data;
  for (const ManifestInput &in : m.inputs)
    if (in.microbatched || in.index == index)
      data.push_back(in.index);
  std::string s;
  for (int i : data)
    s += (s.empty() ? "" : ",") + std::to_string(i);
  return s;
}

/// The error for a shared input (a parameter or another input that is not
/// microbatched) whose tensor `got` has not its shape: how the build
/// classified it and how to change that (never a smaller slice of the
/// data).
std::string sharedShapeError(const Manifest &m, const ManifestInput &in,
                             const std::string &origin, const HostTensor &got) {
  std::string what = "input " + std::to_string(in.index);
  bool parameter = m.findParameter(in.index) != nullptr;
  std::string s = origin + ": " + what + " must be " +
                  typeString(in.dtype, in.shape) + " but the file is " +
                  typeString(got.dtype, got.shape) + ": the build takes " +
                  what + " as " +
                  (parameter ? "a trainable parameter (\"parameters\" in "
                               "the manifest: a weight, the same for every "
                               "microbatch)"
                             : "a shared input (\"microbatched\": false in "
                               "the manifest: the same tensor for every "
                               "microbatch)") +
                  ", which has exactly the shape the model was compiled "
                  "with";
  Shape batch = in.shape;
  bool wholeBatch = !batch.empty() && m.numMicrobatches > 1 &&
                    got.dtype == in.dtype && got.shape.size() == batch.size() &&
                    (batch[0] *= m.numMicrobatches, got.shape == batch);
  s += std::string(". If ") + what + " is per-example data" +
       (wholeBatch
            ? " (the file would then be the whole batch: " +
                  std::to_string(m.numMicrobatches) + " microbatches of " +
                  typeString(in.dtype, in.shape) + " along dim 0)"
            : "") +
       ", recompile with pipeopt-compile --microbatch-args=" +
       microbatchArgsWith(m, in.index) +
       (parameter ? " (and --trainable naming only the weights)" : "") +
       ": pipeopt-run then takes the whole batch and splits it into " +
       std::to_string(m.numMicrobatches) + " microbatches along dim 0";
  return s;
}
} // namespace

HostTensor checkInputTensor(const Manifest &m, const ManifestInput &in,
                            HostTensor t, const std::string &origin,
                            int iterations, int &dataSteps) {
  std::string what = "input " + std::to_string(in.index);
  Shape full = in.shape;
  if (in.microbatched)
    full.insert(full.begin(), m.numMicrobatches);
  dataSteps = 0;
  if (t.dtype != in.dtype)
    throw RuntimeError(origin + ": " + what + " has dtype " +
                       dtypeName(t.dtype) + " but the manifest says " +
                       dtypeName(in.dtype));
  // A dataset: one of the single-file forms per step, [N, M, ...shape]
  // or [N, M*d0, d1, ...] (one more dimension than the form; N = the
  // steps of the run).
  Shape split = in.shape;
  if (!split.empty())
    split[0] *= m.numMicrobatches;
  Shape rest(t.shape.empty() ? t.shape.begin() : t.shape.begin() + 1,
             t.shape.end());
  bool perStepFull = t.shape.size() == full.size() + 1 && rest == full;
  bool perStepSplit = !in.shape.empty() && t.shape.size() == full.size() &&
                      rest == split && t.shape != full;
  if (in.microbatched && (perStepFull || perStepSplit)) {
    int64_t n = t.shape[0];
    if (n != iterations)
      throw RuntimeError(
          origin + ": " + what + " is a dataset of " + std::to_string(n) +
          " step(s) (" + typeString(t.dtype, t.shape) + ": steps x " +
          typeString(t.dtype, rest) + "), but the run has " +
          std::to_string(iterations) +
          " step(s) (--steps / --iterations): a dataset gives every "
          "step its own data");
    dataSteps = int(n);
    Shape perStep = full;
    perStep.insert(perStep.begin(), n);
    t.shape = perStep; // same bytes in C order
  } else if (in.microbatched && t.shape != full) {
    // Accept [M*d0, d1, ...]: the whole batch, split along dim 0.
    if (split.empty() || t.shape != split)
      throw RuntimeError(
          origin + ": " + what +
          " is microbatched data (\"microbatched\": true in the manifest; "
          "pipeopt-compile --microbatch-args) with per-microbatch "
          "shape " +
          typeString(in.dtype, in.shape) + " and " +
          std::to_string(m.numMicrobatches) +
          " microbatches, so the file "
          "must be " +
          typeString(in.dtype, full) +
          (split.empty() ? "" : " or " + typeString(in.dtype, split)) +
          " (or a comma list of " + std::to_string(m.numMicrobatches) +
          " files), but it is " + typeString(t.dtype, t.shape));
    t.shape = full; // same bytes in C order
  } else if (!in.microbatched && t.shape != full) {
    throw RuntimeError(sharedShapeError(m, in, origin, t));
  }
  return t;
}

namespace {
InputStore loadInputsUnchecked(const Manifest &m, const RunOptions &o,
                               const GivenInputs &given, bool randomForMissing,
                               const ManifestInput **current);
} // namespace

InputStore loadInputs(const Manifest &m, const RunOptions &o) {
  return loadInputs(m, o, GivenInputs(), true);
}

InputStore loadInputs(const Manifest &m, const RunOptions &o,
                      const GivenInputs &given, bool randomForMissing) {
  checkInputSizes(m);
  const ManifestInput *current = nullptr;
  try {
    return loadInputsUnchecked(m, o, given, randomForMissing, &current);
  } catch (const std::bad_alloc &) {
    if (!current)
      throw RuntimeError("out of memory loading the model's inputs");
    Shape full = current->shape;
    if (current->microbatched)
      full.insert(full.begin(), m.numMicrobatches);
    uint64_t bytes = uint64_t(numElements(full)) * dtypeSize(current->dtype);
    auto it = o.inputFiles.find(current->index);
    throw RuntimeError(
        "input " + std::to_string(current->index) +
        (current->name.empty() ? "" : " ('" + current->name + "')") + " " +
        typeString(current->dtype, full) + ": out of memory allocating its " +
        std::to_string(bytes) + " bytes" +
        (it == o.inputFiles.end() ? std::string(" (random data)")
                                  : " (from " + it->second[0] + ")"));
  }
}

namespace {
InputStore loadInputsUnchecked(const Manifest &m, const RunOptions &o,
                               const GivenInputs &given, bool randomForMissing,
                               const ManifestInput **current) {
  for (const auto &kv : o.inputFiles)
    if (!m.findInput(kv.first))
      throw RuntimeError("--input " + std::to_string(kv.first) +
                         ": the manifest lists no input with that index");
  // --inputs: read up front, so that an entry that names no input or holds
  // no valid .npy is an error even where --input overrides it.
  GivenInputs set;
  if (!o.inputSet.empty())
    set = readInputSet(m, o.inputSet);
  InputStore store;
  for (const ManifestInput &in : m.inputs) {
    *current = &in;
    std::string what = "input " + std::to_string(in.index);
    Shape full = in.shape;
    if (in.microbatched)
      full.insert(full.begin(), m.numMicrobatches);
    if (auto g = given.find(in.index); g != given.end()) {
      int dataSteps = 0;
      HostTensor t = checkInputTensor(m, in, g->second.first, g->second.second,
                                      o.iterations, dataSteps);
      if (in.classIndices)
        checkClassIndices(in, t, g->second.second);
      store.set(in, m.numMicrobatches, std::move(t), dataSteps);
      continue;
    }
    auto it = o.inputFiles.find(in.index);
    if (auto e = set.find(in.index);
        e != set.end() && it == o.inputFiles.end()) {
      int dataSteps = 0;
      HostTensor t =
          checkInputTensor(m, in, std::move(e->second.first), e->second.second,
                           o.iterations, dataSteps);
      if (in.classIndices)
        checkClassIndices(in, t, e->second.second);
      store.set(in, m.numMicrobatches, std::move(t), dataSteps);
      continue;
    }
    if (it == o.inputFiles.end() && !randomForMissing)
      throw RuntimeError(what +
                         (in.name.empty() ? "" : " ('" + in.name + "')") +
                         " of " + typeString(in.dtype, full) +
                         " was not set (no data and no file given)");
    if (it == o.inputFiles.end()) {
      store.set(
          in, m.numMicrobatches,
          randomInput(in, m.numMicrobatches, inputSeed(o.seed, in.index)));
      continue;
    }
    const auto &files = it->second;
    HostTensor t;
    int dataSteps = 0;
    if (files.size() == 1) {
      t = checkInputTensor(m, in, readInputNpy(files[0], what), files[0],
                           o.iterations, dataSteps);
    } else {
      if (!in.microbatched || files.size() != size_t(m.numMicrobatches))
        throw RuntimeError("--input " + std::to_string(in.index) + ": got " +
                           std::to_string(files.size()) +
                           " files; a list must have one "
                           "file per microbatch (" +
                           std::to_string(m.numMicrobatches) +
                           ") and the input must be microbatched");
      t.dtype = in.dtype;
      t.shape = full;
      for (const auto &f : files) {
        HostTensor part = readInputNpy(f, what);
        if (part.dtype != in.dtype || part.shape != in.shape)
          throw RuntimeError(f + ": " + what + " needs one microbatch of " +
                             typeString(in.dtype, in.shape) +
                             " per file, but the file is " +
                             typeString(part.dtype, part.shape));
        t.data.insert(t.data.end(), part.data.begin(), part.data.end());
      }
    }
    if (in.classIndices)
      checkClassIndices(in, t, files[0]);
    store.set(in, m.numMicrobatches, std::move(t), dataSteps);
  }
  return store;
}
} // namespace

void setReplicaInput(InputStore &out, const InputStore &global,
                     const ManifestInput &meta, int numMicrobatches,
                     int replicas, int replica) {
  const auto *entry = global.find(int(meta.index));
  if (!entry)
    return;
  const HostTensor &t = entry->second;
  const int steps = global.dataSteps(int(meta.index));
  if (!meta.microbatched) {
    out.set(meta, numMicrobatches, t, steps);
    return;
  }
  const size_t M = size_t(numMicrobatches), D = size_t(replicas);
  const size_t mbBytes =
      size_t(numElements(meta.shape)) * dtypeSize(meta.dtype);
  const size_t stepCount = steps > 0 ? size_t(steps) : 1;
  if (t.data.size() != stepCount * D * M * mbBytes)
    throw RuntimeError("internal: input " + std::to_string(meta.index) +
                       " holds " + std::to_string(t.data.size()) +
                       " bytes, not the global batch of " +
                       std::to_string(D * M) + " microbatches");
  HostTensor slice;
  slice.dtype = t.dtype;
  if (steps > 0)
    slice.shape.push_back(int64_t(steps));
  slice.shape.push_back(int64_t(M));
  slice.shape.insert(slice.shape.end(), meta.shape.begin(), meta.shape.end());
  slice.data.resize(stepCount * M * mbBytes);
  for (size_t n = 0; n < stepCount; ++n)
    std::memcpy(slice.data.data() + n * M * mbBytes,
                t.data.data() + (n * D + size_t(replica)) * M * mbBytes,
                M * mbBytes);
  out.set(meta, numMicrobatches, std::move(slice), steps);
}

} // namespace rt
} // namespace pipeopt
