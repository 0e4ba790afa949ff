//===- ModelLibrary.cpp - Symbols of a loaded model .so ---------*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/ModelLibrary.h"
#include "pipeopt/runtime/Npy.h"
#include "pipeopt/runtime/Types.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <cinttypes>
#include <cstdio>

namespace pipeopt {
namespace rt {

namespace {
constexpr const char kModuleHashSymbol[] = "pipeopt_module_hash";

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}
} // namespace

void *findModelFunction(void *handle, const std::string &name,
                        const std::string &modelPath, std::string &why) {
  struct link_map *model = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &model) != 0 || !model) {
    why = "cannot be looked up (dlinfo failed)";
    return nullptr;
  }
  dlerror();
  void *sym = dlsym(handle, name.c_str());
  if (!sym) {
    why = "is not defined in " + modelPath;
    return nullptr;
  }
  Dl_info info{};
  struct link_map *owner = nullptr;
  void *entryPtr = nullptr;
  if (!dladdr1(sym, &info, reinterpret_cast<void **>(&owner),
               RTLD_DL_LINKMAP) ||
      owner != model) {
    why = std::string("is defined in ") +
          (info.dli_fname && *info.dli_fname ? info.dli_fname
                                             : "another object") +
          ", not in " + modelPath;
    return nullptr;
  }
  if (!dladdr1(sym, &info, &entryPtr, RTLD_DL_SYMENT) || !entryPtr ||
      ELF64_ST_TYPE(static_cast<const ElfW(Sym) *>(entryPtr)->st_info) !=
          STT_FUNC) {
    why = "is not a function in " + modelPath;
    return nullptr;
  }
  return sym;
}

void checkModelFile(const Manifest &m, const std::string &modelPath,
                    const std::string &manifestPath) {
  if (!m.modelFile)
    return;
  std::vector<uint8_t> bytes = readFileBytes(modelPath, "model");
  uint64_t hash = fnv1a64(bytes.data(), bytes.size());
  if (bytes.size() != m.modelFile->bytes || hash != m.modelFile->fnv1a64)
    throw RuntimeError(
        modelPath + " is not the file the manifest " + manifestPath +
        " was written for: it has " + std::to_string(bytes.size()) +
        " bytes with FNV-1a hash " + hex16(hash) + ", but the manifest "
        "records " + std::to_string(m.modelFile->bytes) +
        " bytes with hash " + hex16(m.modelFile->fnv1a64) +
        " (a corrupt or partial copy of the .so, or the manifest of another "
        "build: use the manifest pipeopt-compile wrote next to the .so, or "
        "rebuild both)");
}

void checkModelMatchesManifest(void *handle, const Manifest &m,
                               const std::string &modelPath,
                               const std::string &manifestPath) {
  std::string why;
  void *sym = findModelFunction(handle, kModuleHashSymbol, modelPath, why);
  if (!m.moduleHash) {
    if (sym)
      throw RuntimeError(
          "the manifest " + manifestPath + " has no module_hash, but " +
          modelPath + " was built with one: the manifest is not the one " +
          "pipeopt-compile wrote with this model (another build, or " +
          "edited); use the manifest written next to the .so");
    return;
  }
  if (!sym)
    throw RuntimeError("the manifest " + manifestPath +
                       " records module_hash " + hex16(*m.moduleHash) +
                       ", but " + kModuleHashSymbol + " " + why +
                       ": the model was not built with this manifest");
  auto fn = reinterpret_cast<int64_t (*)()>(sym);
  uint64_t built = static_cast<uint64_t>(fn());
  if (built != *m.moduleHash)
    throw RuntimeError(
        "the manifest " + manifestPath + " (module_hash " +
        hex16(*m.moduleHash) + ") and the model " + modelPath +
        " (module hash " + hex16(built) +
        ") come from different builds; running them together would give "
        "wrong results. Use the manifest pipeopt-compile wrote with this "
        ".so (or rebuild both)");
  for (int r = 0; r < m.numRanks; ++r) {
    std::string expected = "pipeopt_rank_" + std::to_string(r);
    if (m.entryPoints[r] != expected)
      throw RuntimeError("the manifest " + manifestPath + " names '" +
                         m.entryPoints[r] + "' as the entry point of rank " +
                         std::to_string(r) + "; a compiled model's is '" +
                         expected + "'");
  }
}

} // namespace rt
} // namespace pipeopt
