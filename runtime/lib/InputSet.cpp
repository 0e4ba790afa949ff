//===- InputSet.cpp - every model input from one directory or .npz -*- C++
//-*-===//
//
// readInputSet (Inputs.h): the .npy files of a directory, or the entries of
// an .npz archive (a zip file, as numpy.savez and numpy.savez_compressed
// write it, read with libzip), each named by the model input it holds.
//
//===----------------------------------------------------------------------===//

#include "RunnerInternal.h"

#include <zip.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <sys/stat.h>

namespace pipeopt {
namespace rt {

namespace {

/// "<digits>" -> its value if it is a non-negative int; else -1.
int parseIndexText(const std::string &s) {
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) {
        return c >= '0' && c <= '9';
      }))
    return -1;
  return std::atoi(s.c_str());
}

/// The inputs' names and indices as the error of an unknown entry lists
/// them.
std::string acceptedNames(const Manifest &m) {
  std::string s;
  for (const ManifestInput &in : m.inputs) {
    if (!s.empty())
      s += ", ";
    s += std::to_string(in.index);
    if (!in.name.empty())
      s += " ('" + in.name + "')";
  }
  return s.empty() ? "none" : s;
}

/// The zip library's error for `code` as text.
std::string zipErrorText(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string s = zip_error_strerror(&e);
  zip_error_fini(&e);
  return s;
}

struct ZipCloser {
  void operator()(zip_t *z) const { zip_discard(z); }
};
struct ZipFileCloser {
  void operator()(zip_file_t *f) const { zip_fclose(f); }
};

} // namespace

const ManifestInput *inputForEntryName(const Manifest &m,
                                       const std::string &entry) {
  std::string stem = entry;
  if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".npy") == 0)
    stem.resize(stem.size() - 4);
  // The manifest's name first: an exact name wins over an index form.
  for (const ManifestInput &in : m.inputs)
    if (!in.name.empty() && in.name == stem)
      return &in;
  int index = -1;
  for (const char *prefix : {"arg_", "arg", "input_", ""}) {
    size_t n = std::strlen(prefix);
    if (stem.compare(0, n, prefix) == 0 &&
        (index = parseIndexText(stem.substr(n))) >= 0)
      break;
  }
  return index >= 0 ? m.findInput(index) : nullptr;
}

GivenInputs readInputSet(const Manifest &m, const std::string &path) {
  GivenInputs set;
  std::map<int, std::string> entryOf; // input index -> entry, for duplicates
  auto add = [&](const std::string &entry, const std::string &label,
                 const std::function<HostTensor()> &read) {
    const ManifestInput *in = inputForEntryName(m, entry);
    if (!in)
      throw RuntimeError(
          path + ": entry '" + entry +
          "' names no model input: entries are named by input index (" +
          "'3', 'arg_3', 'arg3' or 'input_3', with or without '.npy') or by "
          "the manifest's input name; this model's inputs are " +
          acceptedNames(m));
    auto [it, inserted] = entryOf.emplace(in->index, entry);
    if (!inserted)
      throw RuntimeError(path + ": entries '" + it->second + "' and '" + entry +
                         "' both name input " + std::to_string(in->index));
    set[in->index] = {read(), label};
  };

  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw RuntimeError(path +
                       ": cannot read the inputs: " + std::strerror(errno) +
                       " (expected a directory of .npy files or an .npz "
                       "archive)");
  if (S_ISDIR(st.st_mode)) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto &e : std::filesystem::directory_iterator(path, ec)) {
      std::string name = e.path().filename().string();
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0)
        names.push_back(name);
    }
    if (ec)
      throw RuntimeError(path + ": cannot list the directory: " + ec.message());
    if (names.empty())
      throw RuntimeError(path + ": the directory holds no .npy file");
    std::sort(names.begin(), names.end());
    for (const std::string &name : names) {
      std::string file = (std::filesystem::path(path) / name).string();
      add(name, file, [&] { return readNpy(file); });
    }
    return set;
  }

  int err = 0;
  std::unique_ptr<zip_t, ZipCloser> z(zip_open(path.c_str(), ZIP_RDONLY, &err));
  if (!z)
    throw RuntimeError(path +
                       ": not a directory or a readable .npz archive "
                       "(a zip file as numpy.savez writes): " +
                       zipErrorText(err));
  zip_int64_t n = zip_get_num_entries(z.get(), 0);
  if (n <= 0)
    throw RuntimeError(path + ": the archive holds no entry");
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t zs;
    zip_stat_init(&zs);
    if (zip_stat_index(z.get(), zip_uint64_t(i), 0, &zs) != 0 ||
        !(zs.valid & ZIP_STAT_NAME) || !(zs.valid & ZIP_STAT_SIZE))
      throw RuntimeError(path + ": entry " + std::to_string(i) +
                         " cannot be read: " + zip_strerror(z.get()));
    std::string name = zs.name;
    if (!name.empty() && name.back() == '/')
      continue; // a directory entry
    std::string label = path + ":" + name;
    if (name.size() <= 4 || name.compare(name.size() - 4, 4, ".npy") != 0)
      throw RuntimeError(label + ": not a .npy entry (an .npz archive holds "
                                 "one <name>.npy per array)");
    if ((zs.valid & ZIP_STAT_ENCRYPTION_METHOD) &&
        zs.encryption_method != ZIP_EM_NONE)
      throw RuntimeError(label + ": the entry is encrypted");
    if ((zs.valid & ZIP_STAT_COMP_METHOD) &&
        !zip_compression_method_supported(zs.comp_method, 0))
      throw RuntimeError(
          label + ": the entry is compressed with zip method " +
          std::to_string(zs.comp_method) +
          ", which this libzip cannot decompress (numpy.savez stores "
          "entries, numpy.savez_compressed deflates them; both are read)");
    add(name, label, [&] {
      if (zs.size > uint64_t(64) << 30)
        throw RuntimeError(label + ": " + std::to_string(zs.size) +
                           " bytes, more than the limit of 64 GiB per input");
      std::vector<uint8_t> bytes(size_t(zs.size));
      std::unique_ptr<zip_file_t, ZipFileCloser> f(
          zip_fopen_index(z.get(), zip_uint64_t(i), 0));
      if (!f)
        throw RuntimeError(label +
                           ": cannot open the entry: " + zip_strerror(z.get()));
      size_t got = 0;
      while (got < bytes.size()) {
        zip_int64_t r = zip_fread(f.get(), bytes.data() + got,
                                  zip_uint64_t(bytes.size() - got));
        if (r < 0)
          throw RuntimeError(
              label + ": cannot read the entry: " + zip_file_strerror(f.get()));
        if (r == 0)
          break;
        got += size_t(r);
      }
      if (got != bytes.size())
        throw RuntimeError(label + ": the entry is truncated (" +
                           std::to_string(got) + " of " +
                           std::to_string(bytes.size()) + " bytes)");
      return parseNpy(bytes, label);
    });
  }
  if (set.empty())
    throw RuntimeError(path + ": the archive holds no .npy entry");
  return set;
}

} // namespace rt
} // namespace pipeopt
