//===- pipeopt-npy-diff.cpp - compare .npy outputs ----------------*- C++
//-*-===//
//
// Part of pipeopt. Compares tensors written by pipeopt-run (--output-dir)
// against a reference:
//
//   pipeopt-npy-diff [--rtol R] [--atol A] [--allow-nan] ACTUAL REFERENCE
//
// ACTUAL and REFERENCE are two .npy files, or two directories (every
// output_<i>.npy, grad_<i>.npy, weight_<i>.npy and loss.npy of REFERENCE,
// i.e. what pipeopt-run --output-dir writes with and without --save-grads
// and after training steps, is compared
// with the same file in ACTUAL; a file that only one of them has is an error
// naming it). For each pair it
// prints one line:
//
//   PATH: ok: N elements T, max abs error E (element I) <= bound B
//       (1e-05 x max abs reference R)
//
// (FAIL and ">" when E exceeds B; " + atol A" inside the parentheses when
// --atol is set). The pair passes when dtype and shape are equal and
//   max|actual - reference| <= rtol * max|reference| + atol
// (defaults rtol = 1e-5, atol = 0). Integer dtypes (i64, i32, i8, i1) are
// compared exactly as integers, not through double (which holds 53 bits),
// against the bound rounded down. NaN or Inf in either tensor fails unless
// --allow-nan, since such a comparison proves nothing; --allow-nan ignores
// only positions that are non-finite in the same way in both tensors (both
// NaN, or the same infinity). A NaN or Inf where the other tensor is finite
// or differently non-finite always fails. Exit status: 0 all
// pass, 1 some tensor differs, 2 usage or I/O error, or a file that only one
// directory has. Uses the runtime's .npy reader (pipeopt_rt).
//
//   pipeopt-npy-diff --make-inputs MANIFEST DIR [--seed N]
//
// creates DIR if needed (like pipeopt-run --output-dir) and writes
// DIR/input_<i>.npy for every input of a model manifest (for
// pipeopt-run --input i=DIR/input_<i>.npy): exactly the data pipeopt-run
// generates itself for --seed N (the runtime's randomInput, whose comment in
// Inputs.h gives the distributions: microbatched inputs uniform in [-1, 1),
// weights scaled by their fan-in, rank <= 1 weights in [0.5, 1.5)), written
// out for other tools. The data of input i depends only on (seed, i, its
// manifest entry, the number of microbatches), so manifests of the same
// model (reference, pipelined) get identical inputs.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/ArgParser.h"
#include "pipeopt/runtime/Manifest.h"
#include "pipeopt/runtime/Npy.h"
#include "pipeopt/runtime/Runner.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <exception>
#include <new>
#include <string>
#include <sys/stat.h>
#include <vector>

using namespace pipeopt::rt;

namespace {

struct Options {
  double rtol = 1e-5;
  double atol = 0;
  bool allowNan = false;
  std::string actual, reference;
};

double halfToDouble(uint16_t h) {
  int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0)
    v = std::ldexp(double(mant), -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(double(mant | 0x400), exp - 25);
  return sign ? -v : v;
}

double bf16ToDouble(uint16_t b) {
  uint32_t x = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

/// Element i of `t` as a double.
double element(const HostTensor &t, size_t i) {
  const uint8_t *p = t.data.data() + i * dtypeSize(t.dtype);
  switch (t.dtype) {
  case DType::F32: {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::F64: {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  case DType::F16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return halfToDouble(v);
  }
  case DType::BF16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return bf16ToDouble(v);
  }
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return double(v);
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::I8:
    return int8_t(*p);
  case DType::I1:
    return *p ? 1 : 0;
  }
  return 0;
}

bool isIntegerType(DType t) {
  return t == DType::I64 || t == DType::I32 || t == DType::I8 || t == DType::I1;
}

/// Element i of an integer tensor, exactly.
int64_t intElement(const HostTensor &t, size_t i) {
  const uint8_t *p = t.data.data() + i * dtypeSize(t.dtype);
  switch (t.dtype) {
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::I8:
    return int8_t(*p);
  default:
    return *p ? 1 : 0;
  }
}

/// |x - y| without overflow (as an unsigned 64-bit integer).
uint64_t absDiff(int64_t x, int64_t y) {
  return x >= y ? uint64_t(x) - uint64_t(y) : uint64_t(y) - uint64_t(x);
}

/// Integer dtypes are compared exactly, as integers: a double holds only
/// 53 bits, so i64 values above 2^53 that differ by 1 would compare equal.
/// The bound is the same as for floats (rtol x max|reference| + atol),
/// rounded down to an integer; with --rtol 0 --atol 0 only equal tensors
/// pass.
int compareIntegers(const std::string &actualPath, const HostTensor &a,
                    const HostTensor &r, size_t n, const Options &o) {
  uint64_t maxErr = 0, maxRef = 0;
  size_t worst = 0;
  for (size_t i = 0; i < n; ++i) {
    int64_t x = intElement(a, i), y = intElement(r, i);
    uint64_t e = absDiff(x, y);
    if (e > maxErr) {
      maxErr = e;
      worst = i;
    }
    maxRef = std::max(maxRef, absDiff(y, 0));
  }
  // bound = floor(rtol * maxRef + atol), exact where it matters: an error
  // of e passes when e <= bound.
  long double b =
      (long double)o.rtol * (long double)maxRef + (long double)o.atol;
  uint64_t bound =
      b >= 18446744073709551615.0L ? UINT64_MAX : uint64_t(std::floor(b));
  bool ok = maxErr <= bound;
  std::printf("%s: %s: %zu elements %s, max abs error %llu (element %zu) %s "
              "bound %llu (%g x max abs reference %llu",
              actualPath.c_str(), ok ? "ok" : "FAIL", n,
              typeString(a.dtype, a.shape).c_str(), (unsigned long long)maxErr,
              worst, ok ? "<=" : ">", (unsigned long long)bound, o.rtol,
              (unsigned long long)maxRef);
  if (o.atol != 0)
    std::printf(" + atol %g", o.atol);
  std::printf(", integers compared exactly)\n");
  return ok ? 0 : 1;
}

/// Compares one pair; returns 0 (pass), 1 (differs) or 2 (error).
int compare(const std::string &actualPath, const std::string &refPath,
            const Options &o) {
  HostTensor a, r;
  try {
    a = readNpy(actualPath);
    r = readNpy(refPath);
  } catch (const RuntimeError &e) {
    std::fprintf(stderr, "pipeopt-npy-diff: error: %s\n", e.what());
    return 2;
  }
  if (a.dtype != r.dtype || a.shape != r.shape) {
    std::printf("%s: FAIL: %s but the reference %s is %s\n", actualPath.c_str(),
                typeString(a.dtype, a.shape).c_str(), refPath.c_str(),
                typeString(r.dtype, r.shape).c_str());
    return 1;
  }
  size_t n = size_t(numElements(a.shape));
  if (isIntegerType(a.dtype))
    return compareIntegers(actualPath, a, r, n, o);
  double maxErr = 0, maxRef = 0;
  size_t worst = 0, nonFinite = 0, mismatched = 0, firstMismatch = 0;
  for (size_t i = 0; i < n; ++i) {
    double x = element(a, i), y = element(r, i);
    if (!std::isfinite(x) || !std::isfinite(y)) {
      // Both NaN, or the same infinity: a match --allow-nan may ignore.
      // Anything else (NaN or Inf against a finite value, NaN against Inf,
      // +Inf against -Inf) is a difference, with or without --allow-nan.
      bool same = (std::isnan(x) && std::isnan(y)) || x == y;
      if (same) {
        ++nonFinite;
      } else if (mismatched++ == 0) {
        firstMismatch = i;
      }
      continue;
    }
    double e = std::fabs(x - y);
    if (e > maxErr) {
      maxErr = e;
      worst = i;
    }
    maxRef = std::fmax(maxRef, std::fabs(y));
  }
  double bound = o.rtol * maxRef + o.atol;
  bool ok =
      maxErr <= bound && mismatched == 0 && (o.allowNan || nonFinite == 0);
  // The bound is absolute (rtol scales the largest reference magnitude):
  // print how it is made, next to the comparison, so that the line cannot
  // be misread as a relative error above a relative bound.
  std::printf("%s: %s: %zu elements %s, max abs error %.6g (element %zu) "
              "%s bound %.6g (%g x max abs reference %.6g",
              actualPath.c_str(), ok ? "ok" : "FAIL", n,
              typeString(a.dtype, a.shape).c_str(), maxErr, worst,
              maxErr <= bound ? "<=" : ">", bound, o.rtol, maxRef);
  if (o.atol != 0)
    std::printf(" + atol %g", o.atol);
  std::printf(")");
  if (nonFinite)
    std::printf(", %zu NaN/Inf element(s) equal in both%s", nonFinite,
                o.allowNan ? " ignored" : " (use --allow-nan to ignore)");
  if (mismatched)
    std::printf(", %zu element(s) NaN/Inf in one tensor but not the same in "
                "the other (first: element %zu, actual %g, reference %g)",
                mismatched, firstMismatch, element(a, firstMismatch),
                element(r, firstMismatch));
  std::printf("\n");
  return ok ? 0 : 1;
}

/// --make-inputs: see the file header.
int makeInputs(const std::string &manifestPath, const std::string &dir,
               uint64_t seed) {
  try {
    Manifest m = readManifest(manifestPath);
    // The limits pipeopt-run applies, before anything is allocated.
    checkInputSizes(m);
    ensureDir(dir); // like pipeopt-run --output-dir
    for (const ManifestInput &in : m.inputs) {
      HostTensor t;
      try {
        t = randomInput(in, m.numMicrobatches, inputSeed(seed, in.index));
      } catch (const std::bad_alloc &) {
        Shape full = in.shape;
        if (in.microbatched)
          full.insert(full.begin(), m.numMicrobatches);
        throw RuntimeError(
            "input " + std::to_string(in.index) +
            (in.name.empty() ? "" : " ('" + in.name + "')") + " " +
            typeString(in.dtype, full) + ": out of memory allocating its " +
            std::to_string(uint64_t(numElements(full)) * dtypeSize(in.dtype)) +
            " bytes");
      }
      writeNpy(dir + "/input_" + std::to_string(in.index) + ".npy", t,
               FollowLinks::Never);
    }
  } catch (const RuntimeError &e) {
    std::fprintf(stderr, "pipeopt-npy-diff: error: %s\n", e.what());
    return 2;
  }
  return 0;
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// The output_<i>.npy, grad_<i>.npy, weight_<i>.npy and loss.npy names in
/// `dir`, sorted
/// (none if it cannot be read).
std::vector<std::string> outputFiles(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string n = e->d_name;
      bool npy = n.size() > 4 && n.compare(n.size() - 4, 4, ".npy") == 0;
      if (npy && (n.rfind("output_", 0) == 0 || n.rfind("grad_", 0) == 0 ||
                  n.rfind("weight_", 0) == 0 || n == "loss.npy"))
        names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

int usage() {
  std::fprintf(stderr,
               "usage: pipeopt-npy-diff [--rtol R] [--atol A] [--allow-nan] "
               "ACTUAL REFERENCE\n"
               "  ACTUAL, REFERENCE: .npy files, or directories of "
               "output_<i>.npy, grad_<i>.npy, weight_<i>.npy, loss.npy\n"
               "  (pipeopt-run --output-dir [--save-grads])\n"
               "  passes when max|actual-reference| <= rtol*max|reference| + "
               "atol (default rtol 1e-5, atol 0)\n"
               "  NaN/Inf fails; --allow-nan ignores positions that are NaN "
               "in both or the same Inf in both\n"
               "       pipeopt-npy-diff --make-inputs MANIFEST DIR [--seed N]\n"
               "  writes DIR/input_<i>.npy with well-conditioned random data "
               "for every input of MANIFEST\n");
  return 2;
}

/// A tolerance: a whole finite number >= 0. An empty value (--rtol "")
/// or leading blanks are rejected (strtod would read "" as 0).
bool parseDouble(const char *s, double &v) {
  if (!*s || std::isspace(static_cast<unsigned char>(*s)))
    return false;
  char *end = nullptr;
  v = std::strtod(s, &end);
  return end && end != s && *end == 0 && std::isfinite(v) && v >= 0;
}

int run(int argc, char **argv) {
  Options o;
  std::vector<std::string> files;
  bool make = false;
  uint64_t seed = 0;
  // The runtime tools' one parser (ArgParser.h): --rtol R and --rtol=R.
  ArgParser p;
  using Name = const std::string &;
  p.value({"--rtol", "--atol"}, [&](Name a, Name v) {
    if (!parseDouble(v.c_str(), a == "--rtol" ? o.rtol : o.atol))
      throw RuntimeError(a + " expects a number >= 0");
  });
  p.flag({"--make-inputs"}, [&](Name) { make = true; });
  p.value({"--seed"}, [&](Name, Name v) {
    seed = parseSeed(v); // the same check as pipeopt-run
  });
  p.flag({"--allow-nan"}, [&](Name) { o.allowNan = true; });
  // --help answers at once, whatever follows.
  p.flag({"--help", "-h"}, [](Name) { throw RuntimeError("help"); });
  try {
    p.parse(argc, argv, [&](const std::string &a) { files.push_back(a); });
  } catch (const RuntimeError &e) {
    if (std::string(e.what()) == "help") {
      usage();
      return 0;
    }
    std::fprintf(stderr, "pipeopt-npy-diff: error: %s\n", e.what());
    return usage();
  }
  if (files.size() != 2)
    return usage();
  if (make)
    return makeInputs(files[0], files[1], seed);
  o.actual = files[0];
  o.reference = files[1];

  if (!isDirectory(o.reference))
    return compare(o.actual, o.reference, o);

  std::vector<std::string> names = outputFiles(o.reference);
  if (names.empty()) {
    std::fprintf(stderr,
                 "pipeopt-npy-diff: error: no output_<i>.npy, grad_<i>.npy, "
                 "weight_<i>.npy or loss.npy in %s\n",
                 o.reference.c_str());
    return 2;
  }
  int worst = 0;
  for (const auto &n : names) {
    int rc = compare(o.actual + "/" + n, o.reference + "/" + n, o);
    worst = std::max(worst, rc);
  }
  // An output the reference lacks is as wrong as one the actual run lacks
  // (which compare() reports when it cannot read the file): a model that
  // writes more outputs than the reference is not the same model.
  if (isDirectory(o.actual)) {
    for (const auto &n : outputFiles(o.actual)) {
      if (std::binary_search(names.begin(), names.end(), n))
        continue;
      std::fprintf(stderr,
                   "pipeopt-npy-diff: error: %s/%s has no counterpart in the "
                   "reference directory %s\n",
                   o.actual.c_str(), n.c_str(), o.reference.c_str());
      worst = 2;
    }
  }
  return worst;
}

} // namespace

int main(int argc, char **argv) {
  // Every expected failure is reported where it happens; this is the last
  // line of defence so that no exception ever aborts the tool.
  try {
    return run(argc, argv);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "pipeopt-npy-diff: error: %s\n", e.what());
    return 2;
  }
}
