//===- ModelLibrary.cpp - Symbols of a loaded model .so ---------*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/ModelLibrary.h"
#include "pipeopt/runtime/ManifestKeys.h"
#include "pipeopt/runtime/Npy.h"
#include "pipeopt/runtime/Types.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <nlohmann/json.hpp>

#include <cinttypes>
#include <cstdio>

namespace pipeopt {
namespace rt {

namespace {
constexpr const char kModuleHashSymbol[] = "pipeopt_module_hash";
constexpr const char kEmbeddedManifestSymbol[] = "pipeopt_manifest";

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}
} // namespace

namespace {
/// The symbol `name` that the object `handle` defines itself, of ELF type
/// `type` (STT_FUNC, STT_OBJECT); its size in `size`. nullptr and `why`
/// otherwise (findModelFunction).
void *findModelSymbol(void *handle, const std::string &name,
                      const std::string &modelPath, unsigned type,
                      std::string &why, uint64_t *size = nullptr) {
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
  const auto *entry = static_cast<const ElfW(Sym) *>(nullptr);
  if (dladdr1(sym, &info, &entryPtr, RTLD_DL_SYMENT))
    entry = static_cast<const ElfW(Sym) *>(entryPtr);
  if (!entry || ELF64_ST_TYPE(entry->st_info) != type) {
    why = std::string("is not ") +
          (type == STT_FUNC ? "a function" : "a data object") + " in " +
          modelPath;
    return nullptr;
  }
  if (size)
    *size = entry->st_size;
  return sym;
}
} // namespace

void *findModelFunction(void *handle, const std::string &name,
                        const std::string &modelPath, std::string &why) {
  return findModelSymbol(handle, name, modelPath, STT_FUNC, why);
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
        " bytes with FNV-1a hash " + hex16(hash) +
        ", but the manifest "
        "records " +
        std::to_string(m.modelFile->bytes) + " bytes with hash " +
        hex16(m.modelFile->fnv1a64) +
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
  // Every field of the manifest as the compiler wrote it, built into the
  // model: an edited copy (update_every, the optimizer, the schedule ...)
  // would run the code with wrong assumptions.
  uint64_t size = 0;
  void *embedded = findModelSymbol(handle, kEmbeddedManifestSymbol, modelPath,
                                   STT_OBJECT, why, &size);
  if (!embedded)
    throw RuntimeError("the manifest " + manifestPath +
                       " records module_hash " + hex16(*m.moduleHash) +
                       ", but " + kEmbeddedManifestSymbol + " " + why +
                       ": the model was not built with this manifest");
  nlohmann::json builtJson, given;
  try {
    builtJson = nlohmann::json::parse(
        std::string(static_cast<const char *>(embedded), size));
  } catch (const std::exception &e) {
    throw RuntimeError(modelPath + ": the manifest built into it (" +
                       kEmbeddedManifestSymbol +
                       ") is not valid JSON: " + e.what());
  }
  std::vector<uint8_t> bytes = readFileBytes(manifestPath, "manifest");
  try {
    given = nlohmann::json::parse(bytes.begin(), bytes.end());
  } catch (const std::exception &e) {
    throw RuntimeError(manifestPath + ": invalid JSON: " + e.what());
  }
  if (given.is_object())
    given.erase(manifest::kModelFile); // added after the link
  nlohmann::json patch = nlohmann::json::diff(builtJson, given);
  if (!patch.empty()) {
    const nlohmann::json &first = patch.front();
    std::string path = first.value("path", "");
    nlohmann::json::json_pointer pointer(path);
    auto show = [&](const nlohmann::json &doc) {
      if (!doc.contains(pointer))
        return std::string("absent");
      std::string text = doc.at(pointer).dump();
      return text.size() > 200 ? text.substr(0, 200) + "..." : text;
    };
    throw RuntimeError(
        "the manifest " + manifestPath + " is not the one built into " +
        modelPath + ": '" + path + "' is " + show(given) + " in the file but " +
        show(builtJson) + " in the build" +
        (patch.size() > 1
             ? " (and " + std::to_string(patch.size() - 1) + " more)"
             : "") +
        "; edited manifests are refused, rebuild with the options you want");
  }
}

} // namespace rt
} // namespace pipeopt
