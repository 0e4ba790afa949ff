//===- ModelLibraryTest.cpp - Only the model's own functions run ----------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/ModelLibrary.h"
#include "pipeopt/runtime/Types.h"

#include "TestCommand.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <fstream>
#include <sstream>

using namespace pipeopt::rt;

namespace {

struct Model {
  void *handle = dlopen(FAKE_MODEL_SO, RTLD_NOW | RTLD_LOCAL);
  ~Model() {
    if (handle)
      dlclose(handle);
  }
};

TEST(ModelLibrary, FindsTheModelsOwnFunctions) {
  Model model;
  ASSERT_NE(model.handle, nullptr) << dlerror();
  std::string why;
  EXPECT_NE(findModelFunction(model.handle, "pipeopt_rank_0", "m.so", why),
            nullptr)
      << why;
  EXPECT_EQ(why, "");
}

// dlsym(handle, name) also searches the model's dependencies: these used to
// resolve to the C library and pipeopt-run called them as entry points.
TEST(ModelLibrary, RefusesFunctionsOfItsDependencies) {
  Model model;
  ASSERT_NE(model.handle, nullptr) << dlerror();
  ASSERT_NE(dlsym(model.handle, "exit"), nullptr); // what the old lookup saw
  for (const char *name : {"exit", "abort", "pause", "stdout"}) {
    std::string why;
    EXPECT_EQ(findModelFunction(model.handle, name, "m.so", why), nullptr)
        << name;
    EXPECT_NE(why.find("libc"), std::string::npos) << name << ": " << why;
    EXPECT_NE(why.find(", not in m.so"), std::string::npos) << why;
  }
  std::string why;
  EXPECT_EQ(findModelFunction(model.handle, "no_such_symbol", "m.so", why),
            nullptr);
  EXPECT_EQ(why, "is not defined in m.so");
}

TEST(ModelLibrary, ManifestWithoutHashFitsAModelWithoutOne) {
  Model model;
  ASSERT_NE(model.handle, nullptr) << dlerror();
  Manifest m;
  m.numRanks = 2;
  m.entryPoints = {"pipeopt_rank_0", "pipeopt_rank_1"};
  EXPECT_NO_THROW(checkModelMatchesManifest(model.handle, m, "m.so", "m.json"));
  // A hash the fake model (which exports none) cannot match.
  m.moduleHash = 0x0123456789abcdefULL;
  try {
    checkModelMatchesManifest(model.handle, m, "m.so", "m.json");
    ADD_FAILURE() << "no error";
  } catch (const RuntimeError &e) {
    EXPECT_EQ(std::string(e.what()),
              "the manifest m.json records module_hash 0123456789abcdef, but "
              "pipeopt_module_hash is not defined in m.so: the model was not "
              "built with this manifest");
  }
}

/// pipeopt-run with the fake model and its manifest, rank 0's entry point
/// renamed to `entry`: exit status and output.
std::pair<int, std::string> runWithEntryPoint(const std::string &entry) {
  std::ifstream in(FAKE_MANIFEST);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string json = ss.str();
  size_t pos = json.find("\"pipeopt_rank_0\"");
  EXPECT_NE(pos, std::string::npos);
  json.replace(pos, 16, "\"" + entry + "\"");
  std::string path =
      ::testing::TempDir() + "/entry_" + entry + ".manifest.json";
  std::ofstream(path) << json;
  pipeopt_test::CmdResult r = pipeopt_test::runCommand(
      std::string("'") + PIPEOPT_RUN_EXE + "' '" + FAKE_MODEL_SO +
      "' --manifest '" + path + "' --timeout-s 20");
  return {r.code, r.output};
}

// A manifest naming `exit` made pipeopt-run exit 0 with no outputs,
// `abort` aborted, `stdout` crashed: now each is refused before any step.
TEST(ModelLibrary, PipeoptRunRefusesLibcEntryPoints) {
  for (const char *name : {"exit", "abort", "stdout"}) {
    auto [code, out] = runWithEntryPoint(name);
    EXPECT_EQ(code, 2) << name << ": " << out;
    EXPECT_NE(
        out.find("has no entry point '" + std::string(name) + "' for rank 0"),
        std::string::npos)
        << out;
    EXPECT_NE(out.find("libc"), std::string::npos) << out;
  }
}

} // namespace
