//===- FuzzCheckpoint.cpp - libFuzzer target: checkpoint directories ------===//
//
// pipeopt::rt::readCheckpoint (runtime/lib/Checkpoint.cpp, declared in
// Checkpoint.h) reads what `pipeopt-run --resume DIR` trusts: DIR/latest, and
// in the step directory it names checkpoint.json, optimizer.json, loss.npy and
// per parameter weight_<i>.npy, momentum_<i>.npy, adam_m_<i>.npy,
// adam_v_<i>.npy.
//
// Input layout: byte 0 picks the manifest (sgd, momentum or adamw; two
// parameters, f32[3,2] and f32[2]); the rest is split at "\n@@\n" into the
// contents of the files of kFiles, in that order (a missing part: no file).
// The files are written into a fresh directory on /dev/shm (else $TMPDIR)
// before every call. A RuntimeError is the reader rejecting the directory;
// a crash or a sanitizer report is a bug.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Manifest.h"
#include "pipeopt/runtime/Runner.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

const char *const kManifestHead = R"({
  "format_version": 1, "num_ranks": 2, "num_stages": 2, "num_microbatches": 4,
  "schedule": "1f1b", "entry_points": ["pipeopt_rank_0", "pipeopt_rank_1"],
  "inputs": [
    {"index": 0, "name": "x", "shape": [2, 3], "dtype": "f32", "microbatched": true},
    {"index": 1, "name": "w", "shape": [3, 2], "dtype": "f32", "microbatched": false},
    {"index": 2, "name": "b", "shape": [2], "dtype": "f32", "microbatched": false}
  ],
  "outputs": [{"index": 0, "name": "loss", "shape": [], "dtype": "f32", "reduce": "mean"}],
  "parameters": [{"index": 1, "ranks": [0]}, {"index": 2, "ranks": [1]}],
  "training": )";

const char *const kTraining[] = {
    R"({"optimizer": "sgd", "lr": 0.1}})",
    R"({"optimizer": "momentum", "lr": 0.1, "momentum": 0.9}})",
    R"({"optimizer": "adamw", "lr": 0.01, "weight_decay": 0.01}})",
};

const char *const kFiles[] = {
    "latest",       "checkpoint.json", "optimizer.json", "loss.npy",
    "weight_1.npy", "weight_2.npy",    "momentum_1.npy", "momentum_2.npy",
    "adam_m_1.npy", "adam_m_2.npy",    "adam_v_1.npy",   "adam_v_2.npy",
};

std::vector<pipeopt::rt::Manifest> manifests;
std::string root;

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(text.data(), std::streamsize(text.size()));
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  for (const char *t : kTraining)
    manifests.push_back(pipeopt::rt::parseManifest(
        std::string(kManifestHead) + t, "fuzz.manifest.json"));
  std::string base = fs::is_directory("/dev/shm") ? "/dev/shm"
                     : std::getenv("TMPDIR")      ? std::getenv("TMPDIR")
                                                  : "/tmp";
  std::string tmpl = base + "/pipeopt-fuzz-ck-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) {
    std::perror("mkdtemp");
    std::abort();
  }
  root = buf.data();
  // Removed at exit (libFuzzer exits through exit() on a normal end).
  std::atexit([] {
    std::error_code ec;
    fs::remove_all(root, ec);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const pipeopt::rt::Manifest &m = manifests[data[0] % manifests.size()];
  std::string rest(reinterpret_cast<const char *>(data + 1), size - 1);
  std::vector<std::string> parts;
  const std::string sep = "\n@@\n";
  for (size_t pos = 0;;) {
    size_t at = rest.find(sep, pos);
    parts.push_back(rest.substr(pos, at == std::string::npos ? at : at - pos));
    if (at == std::string::npos)
      break;
    pos = at + sep.size();
  }

  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(root, ec);
  // The step directory: what `latest` names if it is a plain file name
  // (the reader rejects anything else), else step-1.
  std::string step = "step-1";
  if (!parts.empty()) {
    std::string name = parts[0];
    while (!name.empty() &&
           std::isspace(static_cast<unsigned char>(name.back())))
      name.pop_back();
    if (name.rfind("step-", 0) == 0 && name.size() < 200 &&
        name.find('/') == std::string::npos &&
        name.find('\0') == std::string::npos)
      step = name;
  }
  fs::create_directories(root + "/" + step, ec);
  if (ec)
    return 0;
  for (size_t i = 0; i < parts.size() && i < std::size(kFiles); ++i)
    writeFile(i == 0 ? root + "/latest" : root + "/" + step + "/" + kFiles[i],
              parts[i]);

  try {
    pipeopt::rt::Checkpoint c = pipeopt::rt::readCheckpoint(m, root);
    if (c.losses.size() != size_t(c.step))
      std::abort();
  } catch (const std::exception &) {
  }
  return 0;
}
