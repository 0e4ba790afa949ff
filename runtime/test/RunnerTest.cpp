//===- RunnerTest.cpp - pipeopt-run end to end on the fake model -*- C++
//-*-===//
//
// Runs the pipeopt-run executable on FakeModel.so (see FakeModel.cpp) under
// loopback and, when MPI was found, under `mpirun -np 2 ... --comm=mpi`.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Runner.h"
#include "pipeopt/runtime/Npy.h"
#include "pipeopt/runtime/Placement.h"

#include "TestCommand.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <tuple>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace pipeopt::rt;

namespace {

using pipeopt_test::CmdResult;
using pipeopt_test::runCommand;

std::string tmpDir(const std::string &name) {
  std::string d = ::testing::TempDir() + "/pipeopt_rt_" + name + "_" +
                  std::to_string(::getpid());
  std::string cmd = "rm -rf '" + d + "' && mkdir -p '" + d + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return d;
}

HostTensor f32(Shape shape, const std::vector<float> &v) {
  HostTensor t;
  t.dtype = DType::F32;
  t.shape = shape;
  t.data.resize(v.size() * 4);
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

std::vector<float> values(const HostTensor &t) {
  std::vector<float> v(t.data.size() / 4);
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

/// x: 4 microbatches of 2x3; w: 3.
struct Data {
  std::vector<float> x, w;
  Data() {
    for (int i = 0; i < 24; ++i)
      x.push_back(float(i) * 0.5f - 3.0f);
    w = {1.0f, -2.0f, 0.5f};
  }
  std::vector<float> y() const {
    std::vector<float> r;
    for (int i = 0; i < 24; ++i)
      r.push_back(x[i] * w[i % 3] + 1.0f);
    return r;
  }
  std::vector<float> gsum() const {
    std::vector<float> yy = y(), g(6, 0.0f);
    for (int i = 0; i < 24; ++i)
      g[i % 6] += 2.0f * yy[i];
    return g;
  }
};

std::string base() {
  return std::string("'") + PIPEOPT_RUN_EXE + "' '" + FAKE_MODEL_SO +
         "' --manifest '" + FAKE_MANIFEST + "'";
}

void checkOutputs(const std::string &dir, const Data &d) {
  HostTensor y = readNpy(dir + "/output_0.npy");
  EXPECT_EQ(y.shape, (Shape{4, 2, 3}));
  EXPECT_EQ(values(y), d.y());
  HostTensor g = readNpy(dir + "/output_1.npy");
  EXPECT_EQ(g.shape, (Shape{2, 3}));
  std::vector<float> gv = values(g), want = d.gsum();
  ASSERT_EQ(gv.size(), want.size());
  for (size_t i = 0; i < gv.size(); ++i)
    EXPECT_FLOAT_EQ(gv[i], want[i]);
}

nlohmann::json readJson(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

TEST(Runner, LoopbackEndToEnd) {
  std::string dir = tmpDir("loopback");
  Data d;
  writeNpy(dir + "/x.npy", f32({4, 2, 3}, d.x));
  writeNpy(dir + "/w.npy", f32({3}, d.w));
  CmdResult r =
      runCommand(base() + " --input 0=" + dir + "/x.npy --input 1=" + dir +
                 "/w.npy --output-dir " + dir +
                 "/out --iterations 3 "
                 "--warmup 1 --trace " +
                 dir + "/trace.json --profile " + dir + "/profile.json");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("microbatches/s"), std::string::npos) << r.output;
  checkOutputs(dir + "/out", d);

  nlohmann::json trace = readJson(dir + "/trace.json");
  int f1 = 0;
  for (const auto &e : trace["traceEvents"])
    if (e["ph"] == "X" && e["name"] == "F s1 mb3") {
      EXPECT_EQ(e["tid"], 1);
      ++f1;
    }
  EXPECT_EQ(f1, 3); // once per measured iteration
  // The runtime calls around the actions, by name -> (count, rank, bytes).
  std::map<std::string, std::tuple<int, int, int64_t>> calls;
  for (const auto &e : trace["traceEvents"])
    if (e["ph"] == "X" && e["cat"] != "F" && e["cat"] != "BW") {
      auto &c = calls[e["name"].get<std::string>()];
      ++std::get<0>(c);
      std::get<1>(c) = e["tid"].get<int>();
      std::get<2>(c) = e["args"]["bytes"].get<int64_t>();
      EXPECT_GE(e["dur"].get<double>(), 0.0);
    }
  using Call = std::tuple<int, int, int64_t>;
  EXPECT_EQ(calls["send s0 mb3 to rank 1"], Call(3, 0, 24));
  EXPECT_EQ(calls["recv s1 mb3 from rank 0"], Call(3, 1, 24));
  EXPECT_EQ(calls["send s1 mb2 to rank 0"], Call(3, 1, 24));
  EXPECT_EQ(calls["recv s0 mb2 from rank 1"], Call(3, 0, 24));
  EXPECT_EQ(calls["input 0 mb1"], Call(3, 0, 24));
  // w is shared: read once per F (4 per iteration), 3 floats.
  EXPECT_EQ(calls["input 1 (shared)"], Call(12, 0, 12));
  EXPECT_EQ(calls["output 0 mb0"], Call(3, 1, 24));
  EXPECT_EQ(calls["output 1 (shared)"], Call(3, 0, 24));
  // Per microbatch: two sends, two recvs, input x and output y; plus the
  // shared input w and output acc.
  EXPECT_EQ(calls.size(), 4u * 6 + 2) << trace.dump(1);
  nlohmann::json prof = readJson(dir + "/profile.json");
  EXPECT_EQ(prof["format"], "pipeopt-profile");
  for (const char *key : {"send_s", "recv_s"}) {
    EXPECT_GT(prof["ranks"][0][key].get<double>(), 0.0) << key;
    EXPECT_GT(prof["ranks"][1][key].get<double>(), 0.0) << key;
  }
  EXPECT_GT(prof["ranks"][0]["input_s"].get<double>(), 0.0);
  EXPECT_EQ(prof["ranks"][1]["input_s"].get<double>(), 0.0);
  EXPECT_GT(prof["ranks"][1]["output_s"].get<double>(), 0.0);
  ASSERT_EQ(prof["stages"].size(), 2u);
  EXPECT_TRUE(prof["stages"][0]["forward_s"].is_number());
  EXPECT_TRUE(prof["stages"][1]["backward_s"].is_number());
  EXPECT_EQ(prof["stages"][1]["count"]["F"], 12);
  EXPECT_EQ(prof["iteration_s"].size(), 3u);
  EXPECT_GT(prof["microbatches_per_s"].get<double>(), 0.0);
}

TEST(Runner, InputLayouts) {
  std::string dir = tmpDir("layouts");
  Data d;
  // Whole batch split along dim 0: [8, 3].
  writeNpy(dir + "/xb.npy", f32({8, 3}, d.x));
  writeNpy(dir + "/w.npy", f32({3}, d.w));
  std::string list;
  for (int mb = 0; mb < 4; ++mb) {
    std::vector<float> part(d.x.begin() + mb * 6, d.x.begin() + mb * 6 + 6);
    std::string f = dir + "/x" + std::to_string(mb) + ".npy";
    writeNpy(f, f32({2, 3}, part));
    list += (mb ? "," : "") + f;
  }
  CmdResult r =
      runCommand(base() + " --input 0=" + dir + "/xb.npy --input 1=" + dir +
                 "/w.npy --output-dir " + dir + "/o1 --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  checkOutputs(dir + "/o1", d);
  r = runCommand(base() + " --input=0=" + list + " --input 1=" + dir +
                 "/w.npy --output-dir=" + dir + "/o2 --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  checkOutputs(dir + "/o2", d);
}

TEST(Runner, SeededRandomInputsAndSingleRankSelfSend) {
  std::string dir = tmpDir("random");
  CmdResult a = runCommand(base() + " --seed 7 --output-dir " + dir + "/a");
  ASSERT_EQ(a.code, 0) << a.output;
  CmdResult b =
      runCommand(std::string("'") + PIPEOPT_RUN_EXE + "' '" + FAKE_MODEL_SO +
                 "' --manifest '" + FAKE_SINGLE_MANIFEST +
                 "' --seed 7 --output-dir " + dir + "/b");
  ASSERT_EQ(b.code, 0) << b.output;
  EXPECT_EQ(readNpy(dir + "/a/output_0.npy").data,
            readNpy(dir + "/b/output_0.npy").data);
  EXPECT_EQ(readNpy(dir + "/a/output_1.npy").data,
            readNpy(dir + "/b/output_1.npy").data);
  CmdResult c = runCommand(base() + " --seed 8 --output-dir " + dir + "/c");
  ASSERT_EQ(c.code, 0) << c.output;
  EXPECT_NE(readNpy(dir + "/a/output_0.npy").data,
            readNpy(dir + "/c/output_0.npy").data);
}

TEST(Runner, MismatchIsReportedWithRankStageMicrobatch) {
  CmdResult r =
      runCommand("PIPEOPT_FAKE_MODEL_BUG=shape " + base() + " --timeout-s 5");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("pipeopt-run: error: rank 1: recv for stage 1 "
                          "microbatch 0 value 0 expected f32[2x4] (32 bytes) "
                          "but rank 0 sent f32[2x3] (24 bytes)"),
            std::string::npos)
      << r.output;
}

TEST(Runner, StalledPeerTimesOut) {
  CmdResult r =
      runCommand("PIPEOPT_FAKE_MODEL_BUG=stall " + base() + " --timeout-s 0.5");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_LT(r.seconds, 15.0);
  EXPECT_NE(r.output.find("rank 1: recv for stage 1 microbatch 0 value 0 "
                          "(activation from rank 0 stage 0)"),
            std::string::npos)
      << r.output;
}

TEST(Runner, FailingRankIsReported) {
  CmdResult r =
      runCommand("PIPEOPT_FAKE_MODEL_BUG=fail " + base() + " --timeout-s 20");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_LT(r.seconds, 15.0);
  EXPECT_NE(r.output.find("rank 0: pipeopt_rank_0 returned 1"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("rank 1: recv for stage 1 microbatch 0 value 0 "
                          "(activation from rank 0 stage 0): rank 0 exited"),
            std::string::npos)
      << r.output;
}

TEST(Runner, AssignRanksToCoresLongestFirst) {
  // The demo's four ranks on two cores: the busiest rank alone.
  EXPECT_EQ(assignRanksToCores({1.144, 0.008, 0.293, 0.685}, 2),
            (std::vector<int>{0, 1, 1, 1}));
  // LPT's classic case: 3, 3, 2, 2, 2 on 2 cores -> {3, 3} and {2, 2, 2}
  // would be optimal (6 / 6); LPT gives 3+2+2 / 3+2 = 7 / 5.
  EXPECT_EQ(assignRanksToCores({3, 3, 2, 2, 2}, 2),
            (std::vector<int>{0, 1, 0, 1, 0}));
  // Ties: lower rank first, lower core first; more cores than ranks.
  EXPECT_EQ(assignRanksToCores({1, 1}, 4), (std::vector<int>{0, 1}));
  EXPECT_EQ(assignRanksToCores({}, 2), (std::vector<int>{}));
  EXPECT_EQ(assignRanksToCores({5, 1, 1}, 1), (std::vector<int>{0, 0, 0}));
}

TEST(Runner, PinRanksOption) {
  std::string dir = tmpDir("pin");
  // Forced: the two ranks are pinned after the warm-up, and it says where.
  CmdResult r = runCommand(base() +
                           " --pin-ranks on --warmup 1 "
                           "--iterations 2 --output-dir " +
                           dir + "/out");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("ranks pinned to cores from iteration 2 (by their "
                          "CPU time in iteration 1): rank 0 -> cpu "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(", rank 1 -> cpu "), std::string::npos) << r.output;
  // Without warm-up the first iteration is measured, and the ranks are
  // pinned from the second; one iteration in all is not pinned (a note).
  r = runCommand(base() + " --pin-ranks on --warmup 0 --iterations 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("ranks pinned to cores from iteration 2 (by their "
                          "CPU time in iteration 1)"),
            std::string::npos)
      << r.output;
  r = runCommand(base() + " --pin-ranks on --warmup 0 --iterations 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("--pin-ranks needs 2 or more iterations"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("ranks pinned"), std::string::npos) << r.output;
  r = runCommand(base() + " --pin-ranks off --warmup 1 --iterations 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("ranks pinned"), std::string::npos) << r.output;
  r = runCommand(base() + " --pin-ranks=sometimes");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("--pin-ranks expects auto, on or off, got "
                          "'sometimes'"),
            std::string::npos)
      << r.output;
}

TEST(Runner, BadInputsAndOptions) {
  std::string dir = tmpDir("bad");
  { std::ofstream(dir + "/junk.npy") << "hello"; }
  CmdResult r = runCommand(base() + " --input 0=" + dir + "/junk.npy");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find(dir + "/junk.npy: not a .npy file"),
            std::string::npos)
      << r.output;
  writeNpy(dir + "/x.npy", f32({5, 3}, std::vector<float>(15, 1.0f)));
  r = runCommand(base() + " --input 0=" + dir + "/x.npy");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("input 0 is microbatched data (\"microbatched\": "
                          "true in the manifest; pipeopt-compile "
                          "--microbatch-args) with per-microbatch shape "
                          "f32[2x3] and 4 microbatches, so the file must be "
                          "f32[4x2x3] or f32[8x3]"),
            std::string::npos)
      << r.output;
  r = runCommand(base() + " --input 5=" + dir + "/x.npy");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("manifest lists no input with that index"),
            std::string::npos);
  r = runCommand(base() + " --comm=carrier-pigeon");
  EXPECT_EQ(r.code, 2);
  r = runCommand(std::string("'") + PIPEOPT_RUN_EXE + "' '" + FAKE_MODEL_SO +
                 "' --manifest /nonexistent.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("/nonexistent.json: cannot open manifest"),
            std::string::npos);
}

TEST(Runner, BadModelSeedAndHugeInputs) {
  // A missing model is reported as such, before its (default) manifest.
  CmdResult r = runCommand(std::string("'") + PIPEOPT_RUN_EXE +
                           "' /nonexistent/model.so");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("/nonexistent/model.so: cannot open model .so: No "
                          "such file or directory"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("manifest"), std::string::npos) << r.output;

  // --seed takes a non-negative integer, as its message says: "-1" is not
  // taken as 2^64 - 1, and values that overflow 64 bits are rejected.
  for (const char *bad : {"-1", "abc", "+3", "18446744073709551616"}) {
    r = runCommand(base() + " --seed " + bad);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.output.find("--seed expects a non-negative integer"),
              std::string::npos)
        << r.output;
  }

  // An input too large to allocate is named with its size up front, not a
  // bare std::bad_alloc.
  std::string dir = tmpDir("huge");
  std::string manifest = dir + "/huge.manifest.json";
  {
    std::ifstream in(FAKE_MANIFEST);
    std::stringstream text;
    text << in.rdbuf();
    std::string json = text.str();
    size_t pos = json.find("\"shape\": [3]");
    ASSERT_NE(pos, std::string::npos);
    json.replace(pos, 12, "\"shape\": [100000, 100000, 100000]");
    std::ofstream(manifest) << json;
  }
  r = runCommand(std::string("'") + PIPEOPT_RUN_EXE + "' '" + FAKE_MODEL_SO +
                 "' --manifest '" + manifest + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("input 1 ('w') of shape f32[100000x100000x100000] "
                          "needs 4e+15 bytes"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("bad_alloc"), std::string::npos) << r.output;

  {
    std::ifstream in(FAKE_MANIFEST);
    std::stringstream text;
    text << in.rdbuf();
    std::string json = text.str();
    size_t pos = json.find("\"shape\": [3]");
    json.replace(pos, 12, "\"shape\": [4294967296, 4294967296, 4294967296]");
    std::ofstream(manifest) << json;
  }
  r = runCommand(std::string("'") + PIPEOPT_RUN_EXE + "' '" + FAKE_MODEL_SO +
                 "' --manifest '" + manifest + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("the element count overflows 64 bits"),
            std::string::npos)
      << r.output;
}

TEST(Runner, ManifestRanksMustMatchTheModel) {
  // Every entry point is looked up before anything runs, and a manifest of
  // fewer ranks than the model exports is caught too.
  std::ifstream in(FAKE_MANIFEST);
  std::stringstream text;
  text << in.rdbuf();
  std::string json = text.str();
  std::string dir = tmpDir("ranks");
  auto withRanks = [&](const std::string &ranks, const std::string &entries) {
    std::string j = json;
    size_t pos = j.find("\"num_ranks\": 2");
    EXPECT_NE(pos, std::string::npos);
    j.replace(pos, 14, "\"num_ranks\": " + ranks);
    pos = j.find("[\"pipeopt_rank_0\", \"pipeopt_rank_1\"]");
    EXPECT_NE(pos, std::string::npos);
    j.replace(pos, 36, entries);
    std::string path = dir + "/m" + ranks + ".manifest.json";
    std::ofstream(path) << j;
    return path;
  };
  std::string three = withRanks(
      "3", "[\"pipeopt_rank_0\", \"pipeopt_rank_1\", \"pipeopt_rank_2\"]");
  CmdResult r = runCommand(std::string("'") + PIPEOPT_RUN_EXE + "' '" +
                           FAKE_MODEL_SO + "' --manifest '" + three + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("has no entry point 'pipeopt_rank_2' for rank 2 (the "
                          "manifest " +
                          three + " says num_ranks = 3"),
            std::string::npos)
      << r.output;

  // (Both stages on the one rank, so that the manifest itself is valid.)
  size_t sr = json.find("\"stage_rank\": [0, 1]");
  ASSERT_NE(sr, std::string::npos);
  json.replace(sr, 20, "\"stage_rank\": [0, 0]");
  std::string one = withRanks("1", "[\"pipeopt_rank_0\"]");
  r = runCommand(std::string("'") + PIPEOPT_RUN_EXE + "' '" + FAKE_MODEL_SO +
                 "' --manifest '" + one + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("exports the entry point 'pipeopt_rank_1', but the "
                          "manifest " +
                          one + " says num_ranks = 1"),
            std::string::npos)
      << r.output;
}

/// FAKE_MANIFEST with `from` replaced by `to`, written to `dir`/`name`.
std::string editedManifest(const std::string &dir, const std::string &name,
                           const std::string &from, const std::string &to) {
  std::ifstream in(FAKE_MANIFEST);
  std::stringstream text;
  text << in.rdbuf();
  std::string json = text.str();
  size_t pos = json.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos)
    json.replace(pos, from.size(), to);
  std::string path = dir + "/" + name;
  std::ofstream(path) << json;
  return path;
}

std::string withManifest(const std::string &manifest) {
  return std::string("'") + PIPEOPT_RUN_EXE + "' '" + FAKE_MODEL_SO +
         "' --manifest '" + manifest + "'";
}

TEST(Runner, TruncatedModelIsAClearError) {
  // dlopen maps segments past the end of a truncated file, where the first
  // access raises SIGBUS (exit 135): pipeopt-run must report a clear error
  // instead.
  std::string dir = tmpDir("truncated");
  std::vector<uint8_t> so = readFileBytes(FAKE_MODEL_SO, "model");
  for (size_t size :
       {size_t(0), size_t(100), size_t(3000), so.size() / 2, so.size() - 1}) {
    std::string path = dir + "/t" + std::to_string(size) + ".so";
    {
      std::ofstream out(path, std::ios::binary);
      out.write(reinterpret_cast<const char *>(so.data()),
                std::streamsize(size));
    }
    CmdResult r = runCommand(std::string("'") + PIPEOPT_RUN_EXE + "' '" + path +
                             "' --manifest '" + FAKE_MANIFEST + "'");
    EXPECT_EQ(r.code, 2) << size << ": " << r.output;
    EXPECT_NE(r.output.find("pipeopt-run: error: " + path +
                            " is truncated or corrupt: "),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("but the file has " + std::to_string(size) +
                            " bytes (an interrupted copy?)"),
              std::string::npos)
        << r.output;
  }
}

TEST(Runner, FifoIsAClearErrorNotAHang) {
  // A named pipe as the model, the manifest or an input is an error, not an
  // open() that blocks forever. `timeout` keeps a regression from hanging
  // the test (exit 124).
  std::string dir = tmpDir("fifo");
  std::string fifo = dir + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  std::string run = std::string("timeout 20 '") + PIPEOPT_RUN_EXE + "' ";
  struct Case {
    std::string args, error;
  } cases[] = {
      {"'" + fifo + "' --manifest '" + FAKE_MANIFEST + "'",
       fifo + ": is a FIFO (named pipe), not a regular file; a model .so "
              "must be one"},
      {"'" + std::string(FAKE_MODEL_SO) + "' --manifest '" + fifo + "'",
       fifo + ": is a FIFO (named pipe), not a regular file; a manifest "
              "must be one"},
      {"'" + std::string(FAKE_MODEL_SO) + "' --manifest '" + FAKE_MANIFEST +
           "' --input 1=" + fifo,
       fifo + ": is a FIFO (named pipe), not a regular file; a .npy file "
              "must be one"},
  };
  for (const Case &c : cases) {
    CmdResult r = runCommand(run + c.args);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.output;
    EXPECT_NE(r.output.find("pipeopt-run: error: " + c.error),
              std::string::npos)
        << r.output;
    EXPECT_LT(r.seconds, 10.0) << c.args;
  }
}

TEST(Runner, ManifestMustDescribeTheModel) {
  std::string dir = tmpDir("describe");
  // The fake model's true schedule (GPipe): passes as it is.
  std::string actions = R"("actions": [[)"
                        R"({"kind": "F", "stage": 0, "microbatch": 0},)"
                        R"({"kind": "F", "stage": 0, "microbatch": 1},)"
                        R"({"kind": "F", "stage": 0, "microbatch": 2},)"
                        R"({"kind": "F", "stage": 0, "microbatch": 3},)"
                        R"({"kind": "BW", "stage": 0, "microbatch": 0},)"
                        R"({"kind": "BW", "stage": 0, "microbatch": 1},)"
                        R"({"kind": "BW", "stage": 0, "microbatch": 2},)"
                        R"({"kind": "BW", "stage": 0, "microbatch": 3}], [)"
                        R"({"kind": "F", "stage": 1, "microbatch": 0},)"
                        R"({"kind": "BW", "stage": 1, "microbatch": 0},)"
                        R"({"kind": "F", "stage": 1, "microbatch": 1},)"
                        R"({"kind": "BW", "stage": 1, "microbatch": 1},)"
                        R"({"kind": "F", "stage": 1, "microbatch": 2},)"
                        R"({"kind": "BW", "stage": 1, "microbatch": 2},)"
                        R"({"kind": "F", "stage": 1, "microbatch": 3},)"
                        R"({"kind": "BW", "stage": 1, "microbatch": 3}]],)";
  std::string good = editedManifest(dir, "good.json", "\"stage_rank\"",
                                    actions + "\n  \"stage_rank\"");
  CmdResult r = runCommand(withManifest(good) + " --iterations 2 --warmup 1");
  EXPECT_EQ(r.code, 0) << r.output;

  // Actions in another order than the model runs them.
  auto replaceFirst = [](std::string text, const std::string &from,
                         const std::string &to) {
    size_t pos = text.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    return pos == std::string::npos ? text : text.replace(pos, from.size(), to);
  };
  std::string swapped =
      replaceFirst(replaceFirst(actions, R"("F", "stage": 1, "microbatch": 1})",
                                R"("F", "stage": 1, "microbatch": X})"),
                   R"("F", "stage": 1, "microbatch": 2})",
                   R"("F", "stage": 1, "microbatch": 1})");
  swapped = replaceFirst(swapped, R"("microbatch": X})", R"("microbatch": 2})");
  std::string wrong = editedManifest(dir, "order.json", "\"stage_rank\"",
                                     swapped + "\n  \"stage_rank\"");
  r = runCommand(withManifest(wrong));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("rank 1: action F for stage 1 microbatch 1 is this "
                          "rank's action 2 in this call, but the manifest " +
                          wrong + " lists F for stage 1 microbatch 2 there"),
            std::string::npos)
      << r.output;

  // A manifest that lists fewer actions than the model runs.
  std::string shortList = replaceFirst(
      actions, R"(,{"kind": "BW", "stage": 1, "microbatch": 3})", "");
  std::string fewer = editedManifest(dir, "fewer.json", "\"stage_rank\"",
                                     shortList + "\n  \"stage_rank\"");
  r = runCommand(withManifest(fewer));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("rank 1: action BW for stage 1 microbatch 3 is this "
                          "rank's action 7 in this call, but the manifest " +
                          fewer + " lists only 7 for rank 1"),
            std::string::npos)
      << r.output;

  // More microbatches than the model runs (no actions listed): caught by
  // the outputs, even without --output-dir.
  std::string five = editedManifest(dir, "five.json", "\"num_microbatches\": 4",
                                    "\"num_microbatches\": 5");
  r = runCommand(withManifest(five));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("pipeopt-run: error: output 0 for microbatch 4 was "
                          "never written by any rank (the manifest " +
                          five + " says num_microbatches = 5"),
            std::string::npos)
      << r.output;

  // stage_rank edited to put both stages on rank 0 (no actions listed, so
  // only the run can tell).
  std::string stages = editedManifest(
      dir, "stages.json", "\"stage_rank\": [0, 1]", "\"stage_rank\": [0, 0]");
  r = runCommand(withManifest(stages));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("rank 1: action F for stage 1 microbatch 0 runs on "
                          "rank 1, but the manifest " +
                          stages +
                          " puts stage 1 on another rank (field "
                          "'stage_rank')"),
            std::string::npos)
      << r.output;
}

TEST(Runner, MicrobatchedFlagMustMatchTheModel) {
  std::string dir = tmpDir("flag");
  // x is read once per microbatch: flipping it to shared is caught at the
  // second read.
  std::string shared = editedManifest(
      dir, "shared.json", R"("dtype": "f32", "microbatched": true})",
      R"("dtype": "f32", "microbatched": false})");
  CmdResult r = runCommand(withManifest(shared));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("rank 0: input 0 ('x') for microbatch 1: the "
                          "manifest " +
                          shared +
                          " says this input is shared "
                          "by all microbatches (\"microbatched\": false), but "
                          "the program already read it for microbatch 0 in "
                          "this call"),
            std::string::npos)
      << r.output;
  // w is read once per call: flipping it to microbatched is caught when the
  // ranks' reads are put together.
  std::string mb = editedManifest(dir, "mb.json",
                                  R"("dtype": "f32", "microbatched": false})",
                                  R"("dtype": "f32", "microbatched": true})");
  r = runCommand(withManifest(mb) + " --output-dir " + dir + "/out");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("pipeopt-run: error: input 1 ('w') is microbatched "
                          "in the manifest " +
                          mb +
                          ", but the program read "
                          "it only for microbatch(es) 0 of 4 (on rank(s) 0): "
                          "it reads the input once and shares it"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::ifstream(dir + "/out/output_0.npy").good());

  // y is written once per microbatch: a manifest that marks it shared is an
  // error, not an exit 0 with only the last microbatch's value in
  // output_0.npy.
  std::string sharedOut = editedManifest(
      dir, "shared_out.json",
      R"("name": "y", "shape": [2, 3], "dtype": "f32"})",
      R"("name": "y", "shape": [2, 3], "dtype": "f32", "microbatched": false})");
  r = runCommand(withManifest(sharedOut) + " --output-dir " + dir + "/out2");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("rank 1: output 0 ('y') for microbatch 1: the "
                          "manifest " +
                          sharedOut +
                          " says this output is "
                          "shared by all microbatches (\"microbatched\": "
                          "false), but the program already wrote it for "
                          "microbatch 0 in this call: it writes one value per "
                          "microbatch, so the output is microbatched in this "
                          "model"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::ifstream(dir + "/out2/output_0.npy").good());
}

/// The fake training step (FakeModel.cpp) computed independently, in double:
/// per microbatch loss = mean(y^2), grad_w[j] = sum_i 2 y[i][j] x[i][j] / 6,
/// y = x * w; averaged over the 4 microbatches.
struct TrainingReference {
  double loss = 0;
  std::vector<double> grad = std::vector<double>(3, 0.0);
  explicit TrainingReference(const Data &d) {
    for (int mb = 0; mb < 4; ++mb)
      for (int i = 0; i < 6; ++i) {
        double x = d.x[mb * 6 + i], w = d.w[i % 3], y = x * w;
        loss += y * y / 6 / 4;
        grad[i % 3] += 2 * y * x / 6 / 4;
      }
  }
};

std::string trainRun(const std::string &manifest = FAKE_TRAIN_MANIFEST) {
  return withManifest(manifest);
}

/// Writes x and w of Data to `dir` and returns the --input options.
std::string trainInputs(const std::string &dir, const Data &d) {
  writeNpy(dir + "/x.npy", f32({4, 2, 3}, d.x));
  writeNpy(dir + "/w.npy", f32({3}, d.w));
  return " --input 0=" + dir + "/x.npy --input 1=" + dir + "/w.npy";
}

void checkTrainingOutputs(const std::string &lossFile,
                          const std::string &gradFile, const Data &d) {
  TrainingReference ref(d);
  // The mean over microbatches: a sum would be 4 times as large, the last
  // microbatch alone or a stacked [4, ...] array would differ too.
  HostTensor loss = readNpy(lossFile);
  EXPECT_EQ(loss.shape, Shape{});
  ASSERT_EQ(values(loss).size(), 1u);
  EXPECT_FLOAT_EQ(values(loss)[0], float(ref.loss));
  HostTensor grad = readNpy(gradFile);
  EXPECT_EQ(grad.shape, Shape{3});
  std::vector<float> g = values(grad);
  ASSERT_EQ(g.size(), 3u);
  for (int j = 0; j < 3; ++j)
    EXPECT_FLOAT_EQ(g[j], float(ref.grad[j])) << j;
}

TEST(RunnerTraining, OutputsAreAveragedOverMicrobatches) {
  std::string dir = tmpDir("train");
  Data d;
  TrainingReference ref(d);
  // The reference values differ clearly from what a wrong reduction gives.
  double last = 0;
  for (int i = 18; i < 24; ++i)
    last += std::pow(d.x[i] * d.w[i % 3], 2) / 6;
  ASSERT_GT(std::fabs(last - ref.loss), 0.1 * ref.loss);

  std::string in = trainInputs(dir, d);
  CmdResult r = runCommand(trainRun() + in + " --output-dir " + dir + "/out");
  ASSERT_EQ(r.code, 0) << r.output;
  checkTrainingOutputs(dir + "/out/output_0.npy", dir + "/out/output_1.npy", d);
  // An output without "reduce" is still stacked per microbatch.
  HostTensor y = readNpy(dir + "/out/output_2.npy");
  EXPECT_EQ(y.shape, (Shape{4, 2, 3}));
  std::vector<float> yv = values(y);
  for (int i = 0; i < 24; ++i)
    EXPECT_EQ(yv[i], d.x[i] * d.w[i % 3]);
  EXPECT_NE(r.output.find("1 rank(s) over loopback, 1 stage(s), 4 "
                          "microbatch(es), 1 training step(s)"),
            std::string::npos)
      << r.output;
  // The printed loss is the written one (8 significant digits).
  size_t at = r.output.find("pipeopt-run: loss ");
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_NEAR(std::strtod(r.output.c_str() + at + 18, nullptr), ref.loss,
              1e-6 * ref.loss)
      << r.output;
  EXPECT_NE(r.output.find("(mean over 4 microbatches, last step)", at),
            std::string::npos)
      << r.output;

  // --save-grads names the files after the outputs; --steps runs 3 steps,
  // which without an optimizer compute the same values. Two ranks that
  // each write half of the microbatches give the same means.
  for (const std::string &manifest : {std::string(FAKE_TRAIN_MANIFEST),
                                      std::string(FAKE_TRAIN_SPLIT_MANIFEST)}) {
    std::string out = dir + "/grads" + std::to_string(manifest.size());
    r = runCommand(trainRun(manifest) + in +
                   " --save-grads --steps 3 "
                   "--warmup 1 --output-dir " +
                   out + " --profile " + out + ".json");
    ASSERT_EQ(r.code, 0) << r.output;
    checkTrainingOutputs(out + "/loss.npy", out + "/grad_1.npy", d);
    EXPECT_EQ(readNpy(out + "/y.npy").shape, (Shape{4, 2, 3}));
    EXPECT_FALSE(std::ifstream(out + "/output_0.npy").good());
    EXPECT_NE(r.output.find("microbatch(es), 3 training step(s)"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("median training step"), std::string::npos)
        << r.output;
    EXPECT_EQ(readJson(out + ".json")["iterations"], 3);
  }
}

TEST(RunnerTraining, EveryMicrobatchOnceInTheMean) {
  std::string dir = tmpDir("train_bad");
  CmdResult r = runCommand("PIPEOPT_FAKE_MODEL_BUG=skip-mb3 " + trainRun() +
                           " --output-dir " + dir + "/a");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("pipeopt-run: error: output 1 ('grad_1') is averaged "
                          "over microbatches (\"reduce\": \"mean\" in the "
                          "manifest " FAKE_TRAIN_MANIFEST
                          "), but no rank wrote "
                          "it for microbatch 3 of 4 in the last call (written "
                          "for microbatch(es) 0, 1, 2): the mean needs every "
                          "microbatch's value"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::ifstream(dir + "/a/output_1.npy").good());
  // Without --output-dir too.
  r = runCommand("PIPEOPT_FAKE_MODEL_BUG=skip-mb3 " + trainRun());
  EXPECT_EQ(r.code, 1) << r.output;

  r = runCommand("PIPEOPT_FAKE_MODEL_BUG=twice " + trainRun());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(
      r.output.find(
          "pipeopt-run: error: rank 0: output 1 ('grad_1') for "
          "microbatch 0: the program already wrote it for "
          "this microbatch in this call, but the manifest " FAKE_TRAIN_MANIFEST
          " averages this output over the "
          "microbatches (\"reduce\": \"mean\"), which counts "
          "every microbatch once"),
      std::string::npos)
      << r.output;

  r = runCommand("PIPEOPT_FAKE_MODEL_BUG=overlap " +
                 trainRun(FAKE_TRAIN_SPLIT_MANIFEST));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("pipeopt-run: error: output 0 ('loss') is averaged "
                          "over microbatches (\"reduce\": \"mean\" in the "
                          "manifest " FAKE_TRAIN_SPLIT_MANIFEST
                          "), but ranks 0 "
                          "and 1 both wrote it for microbatch 1 in the last "
                          "call: a mean counts every microbatch once"),
            std::string::npos)
      << r.output;
}

TEST(RunnerTraining, OptionErrors) {
  std::string dir = tmpDir("train_opts");
  // Forward builds have no gradients to save and no training steps.
  CmdResult r = runCommand(base() + " --save-grads --output-dir " + dir);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(
      r.output.find("pipeopt-run: error: --save-grads: the model is not "
                    "a training build (no output of the manifest " FAKE_MANIFEST
                    " has \"reduce\": \"mean\", i.e. no "
                    "loss or gradients averaged over microbatches); "
                    "compile a training step with pipeopt-compile "
                    "--reference --train"),
      std::string::npos)
      << r.output;
  r = runCommand(base() + " --steps 2");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--steps: the model is not a training build"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("or count forward runs with --iterations"),
            std::string::npos)
      << r.output;
  r = runCommand(trainRun() + " --save-grads");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--save-grads needs --output-dir DIR"),
            std::string::npos)
      << r.output;
  r = runCommand(trainRun() + " --steps 2 --iterations 2");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--steps and --iterations both given"),
            std::string::npos)
      << r.output;
  r = runCommand(trainRun() + " --steps 0");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--steps expects an integer >= 1, got '0'"),
            std::string::npos)
      << r.output;

  // Names that are not plain file names, and two outputs with one file.
  auto edited = [&](const std::string &name, const std::string &from,
                    const std::string &to) {
    std::ifstream in(FAKE_TRAIN_MANIFEST);
    std::stringstream text;
    text << in.rdbuf();
    std::string json = text.str();
    size_t pos = json.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    json.replace(pos, from.size(), to);
    std::string path = dir + "/" + name;
    std::ofstream(path) << json;
    return path;
  };
  std::string escape =
      edited("escape.json", "\"name\": \"grad_1\"", "\"name\": \"../grad_1\"");
  r = runCommand(withManifest(escape) + " --save-grads --output-dir " + dir +
                 "/o");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--save-grads: output 1 of the manifest " + escape +
                          " is named '../grad_1', which is not a plain file "
                          "name"),
            std::string::npos)
      << r.output;
  std::string clash =
      edited("clash.json", "\"name\": \"y\"", "\"name\": \"loss\"");
  r = runCommand(withManifest(clash) + " --save-grads --output-dir " + dir +
                 "/o");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--save-grads: outputs 0 and 2 of the manifest " +
                          clash + " would both be written to loss.npy"),
            std::string::npos)
      << r.output;
}

//===----------------------------------------------------------------------===//
// Training with parameters: reduction, optimizers, per-step losses, stash
//===----------------------------------------------------------------------===//

/// The fake model's training (FakeModel.cpp, "Training with parameters")
/// computed here: each microbatch's gradients in f32 in the model's order,
/// their sum over microbatches in double, / 4, then the optimizer in double
/// (the formulas of docs/Runtime.md) and the weights rounded to f32.
struct ParamReference {
  std::string optimizer = "sgd";
  double lr = 0.1, mu = 0.9, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0;
  std::vector<float> x, w, b;
  std::vector<float> losses;
  std::vector<double> gw, gb; // the last step's mean gradients
  std::vector<double> mw, mb, vw, vb;
  int t = 0;

  explicit ParamReference(const Data &d) : x(d.x), w(d.w) {
    b = {0.1f, 0.2f, -0.3f};
  }
  void update(std::vector<float> &p, const std::vector<double> &g,
              std::vector<double> &m, std::vector<double> &v) {
    for (size_t j = 0; j < p.size(); ++j) {
      double wj = p[j];
      if (optimizer == "sgd") {
        wj -= lr * (g[j] + wd * wj);
      } else if (optimizer == "momentum") {
        double gp = g[j] + wd * wj;
        m[j] = t == 1 ? gp : mu * m[j] + gp;
        wj -= lr * m[j];
      } else if (optimizer == "adamw") {
        wj *= 1 - lr * wd;
        m[j] = b1 * m[j] + (1 - b1) * g[j];
        v[j] = b2 * v[j] + (1 - b2) * g[j] * g[j];
        double mhat = m[j] / (1 - std::pow(b1, t)),
               vhat = v[j] / (1 - std::pow(b2, t));
        wj -= lr * mhat / (std::sqrt(vhat) + eps);
      }
      p[j] = float(wj);
    }
  }
  void step() {
    ++t;
    gw.assign(3, 0);
    gb.assign(3, 0);
    double loss = 0;
    for (int mb = 0; mb < 4; ++mb) {
      const float *xm = x.data() + 6 * mb;
      float y[6], l = 0, fw[3] = {0, 0, 0}, fb[3] = {0, 0, 0};
      for (int i = 0; i < 6; ++i) {
        y[i] = xm[i] * w[i % 3] + b[i % 3];
        l += y[i] * y[i] / 6.0f;
      }
      for (int i = 0; i < 6; ++i) {
        float dy = 2.0f * y[i] / 6.0f;
        fb[i % 3] += dy;
        fw[i % 3] += dy * xm[i];
      }
      loss += l;
      for (int j = 0; j < 3; ++j) {
        gw[j] += fw[j];
        gb[j] += fb[j];
      }
    }
    losses.push_back(float(loss / 4));
    for (int j = 0; j < 3; ++j) {
      gw[j] /= 4;
      gb[j] /= 4;
    }
    if (mw.empty())
      mw = mb = vw = vb = std::vector<double>(3, 0.0);
    update(w, gw, mw, vw);
    update(b, gb, mb, vb);
  }
};

/// `manifest` with its "training" object replaced by `training`.
std::string withTraining(const std::string &dir, const std::string &manifest,
                         const std::string &training) {
  std::ifstream in(manifest);
  std::stringstream text;
  text << in.rdbuf();
  std::string json = text.str();
  std::string from = R"("training": {"optimizer": "sgd", "lr": 0.1})";
  size_t pos = json.find(from);
  EXPECT_NE(pos, std::string::npos);
  json.replace(pos, from.size(), training);
  static int n = 0;
  std::string path = dir + "/m" + std::to_string(n++) + ".manifest.json";
  std::ofstream(path) << json;
  return path;
}

std::string paramInputs(const std::string &dir, const Data &d) {
  writeNpy(dir + "/x.npy", f32({4, 2, 3}, d.x));
  writeNpy(dir + "/w.npy", f32({3}, d.w));
  writeNpy(dir + "/b.npy", f32({3}, {0.1f, 0.2f, -0.3f}));
  return " --input 0=" + dir + "/x.npy --input 1=" + dir +
         "/w.npy --input 2=" + dir + "/b.npy";
}

void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6 * std::fabs(want[i]) + 1e-12)
        << what << "[" << i << "]";
}

std::string fileBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(RunnerParameters, SgdStepsMatchTheReference) {
  std::string dir = tmpDir("params_sgd");
  Data d;
  std::string in = paramInputs(dir, d);
  CmdResult r = runCommand(withManifest(FAKE_PTRAIN_MANIFEST) + in +
                           " --steps 3 --save-grads --output-dir " + dir +
                           "/out --profile " + dir + "/profile.json");
  ASSERT_EQ(r.code, 0) << r.output;
  ParamReference ref(d);
  for (int s = 0; s < 3; ++s)
    ref.step();
  // The weights after 3 updates, the per-step losses (before each update),
  // the last step's mean gradient.
  expectClose(values(readNpy(dir + "/out/weight_1.npy")), ref.w, "w");
  expectClose(values(readNpy(dir + "/out/weight_2.npy")), ref.b, "b");
  HostTensor losses = readNpy(dir + "/out/loss.npy");
  EXPECT_EQ(losses.shape, Shape{3});
  expectClose(values(losses), ref.losses, "loss");
  EXPECT_LT(ref.losses[2], ref.losses[0]);
  std::vector<float> gw(ref.gw.begin(), ref.gw.end());
  expectClose(values(readNpy(dir + "/out/grad_1.npy")), gw, "grad_w");
  // No output file for the loss output besides loss.npy.
  EXPECT_FALSE(std::ifstream(dir + "/out/output_0.npy").good());
  EXPECT_FALSE(std::ifstream(dir + "/out/momentum_1.npy").good());
  nlohmann::json opt = readJson(dir + "/out/optimizer.json");
  EXPECT_EQ(opt["optimizer"], "sgd");
  EXPECT_EQ(opt["parameters"]["1"]["step"], 3);
  // The progress lines, and the stash: 2 stages x 24 B on the one rank.
  for (int s = 0; s < 3; ++s) {
    char want[64];
    std::snprintf(want, sizeof(want), "pipeopt-run: step %d/3: loss %.6g (",
                  s + 1, double(ref.losses[size_t(s)]));
    EXPECT_NE(r.output.find(want), std::string::npos) << want << r.output;
  }
  EXPECT_NE(r.output.find("pipeopt-run: peak stashed activations per rank: "
                          "48 B\n"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(readJson(dir + "/profile.json")["peak_stash_bytes_per_rank"],
            nlohmann::json::array({48}));

  // Two stages on two ranks (GPipe: 4 microbatches stashed on each), and
  // the same weight reported in two halves from two stages: the same bits.
  r = runCommand(withManifest(FAKE_PPIPE_MANIFEST) + in +
                 " --steps 3 --output-dir " + dir + "/pipe");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("peak stashed activations per rank: 96 B, 96 B"),
            std::string::npos)
      << r.output;
  r = runCommand("PIPEOPT_FAKE_MODEL_BUG=tied " +
                 withManifest(FAKE_PTRAIN_MANIFEST) + in +
                 " --steps 3 --output-dir " + dir + "/tied --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output, "");
  for (const char *f : {"weight_1.npy", "weight_2.npy", "loss.npy"}) {
    EXPECT_EQ(fileBytes(dir + "/pipe/" + f), fileBytes(dir + "/out/" + f)) << f;
    EXPECT_EQ(fileBytes(dir + "/tied/" + f), fileBytes(dir + "/out/" + f)) << f;
  }
}

TEST(RunnerParameters, DataParallelReductionAcrossRanks) {
  // Both ranks keep both parameters and see half of the microbatches each:
  // the gradients are summed across the ranks (rank 0 checks that the two
  // copies stay bit-identical) and match the reference.
  std::string dir = tmpDir("params_dp");
  Data d;
  std::string in = paramInputs(dir, d);
  for (const std::string &opt :
       {std::string("sgd"), std::string("momentum"), std::string("adamw")}) {
    std::string training =
        opt == "sgd"
            ? R"("training": {"optimizer": "sgd", "lr": 0.1, "weight_decay": 0.01})"
        : opt == "momentum"
            ? R"("training": {"optimizer": "momentum", "lr": 0.05, "momentum": 0.8, "weight_decay": 0.01})"
            : R"("training": {"optimizer": "adamw", "lr": 0.01, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6, "weight_decay": 0.1})";
    ParamReference ref(d);
    ref.optimizer = opt;
    ref.wd = opt == "adamw" ? 0.1 : 0.01;
    if (opt == "momentum") {
      ref.lr = 0.05;
      ref.mu = 0.8;
    } else if (opt == "adamw") {
      ref.lr = 0.01;
      ref.b1 = 0.8;
      ref.b2 = 0.99;
      ref.eps = 1e-6;
    }
    for (int s = 0; s < 2; ++s)
      ref.step();
    for (const char *manifest : {FAKE_PTRAIN_MANIFEST, FAKE_PDP_MANIFEST}) {
      std::string out = dir + "/" + opt + std::to_string(std::strlen(manifest));
      CmdResult r =
          runCommand(withManifest(withTraining(dir, manifest, training)) + in +
                     " --steps 2 --quiet --output-dir " + out);
      ASSERT_EQ(r.code, 0) << opt << r.output;
      expectClose(values(readNpy(out + "/weight_1.npy")), ref.w, opt + " w");
      expectClose(values(readNpy(out + "/weight_2.npy")), ref.b, opt + " b");
      expectClose(values(readNpy(out + "/loss.npy")), ref.losses,
                  opt + " loss");
      if (opt == "sgd")
        continue;
      std::string m = opt == "adamw" ? "/adam_m_1.npy" : "/momentum_1.npy";
      HostTensor state = readNpy(out + m);
      ASSERT_EQ(state.dtype, DType::F64);
      std::vector<double> sv(3);
      std::memcpy(sv.data(), state.data.data(), 24);
      for (int j = 0; j < 3; ++j)
        EXPECT_NEAR(sv[j], ref.mw[j], 1e-6 * std::fabs(ref.mw[j])) << opt;
      if (opt == "adamw") {
        HostTensor v = readNpy(out + "/adam_v_2.npy");
        std::memcpy(sv.data(), v.data.data(), 24);
        for (int j = 0; j < 3; ++j)
          EXPECT_NEAR(sv[j], ref.vb[j], 1e-6 * std::fabs(ref.vb[j])) << opt;
        EXPECT_EQ(readJson(out + "/optimizer.json")["parameters"]["2"]["step"],
                  2);
      }
    }
  }
}

TEST(RunnerParameters, OptimizerNoneKeepsTheWeights) {
  std::string dir = tmpDir("params_none");
  Data d;
  std::string in = paramInputs(dir, d);
  std::string manifest = withTraining(dir, FAKE_PDP_MANIFEST,
                                      R"("training": {"optimizer": "none"})");
  // --warmup is allowed without an optimizer.
  CmdResult r =
      runCommand(withManifest(manifest) + in +
                 " --steps 2 --warmup 1 --output-dir " + dir + "/out");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(fileBytes(dir + "/out/weight_1.npy"), fileBytes(dir + "/w.npy"));
  std::vector<float> l = values(readNpy(dir + "/out/loss.npy"));
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0], l[1]);
  EXPECT_NE(r.output.find("step 2/2: loss"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("step 3/2"), std::string::npos) << r.output;
}

TEST(RunnerParameters, Errors) {
  std::string dir = tmpDir("params_err");
  CmdResult r = runCommand(withManifest(FAKE_PTRAIN_MANIFEST) + " --warmup 1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(
      r.output.find(
          "pipeopt-run: error: --warmup 1: the manifest " FAKE_PTRAIN_MANIFEST
          " trains with optimizer 'sgd', and warm-up steps "
          "would change the weights; run without --warmup"),
      std::string::npos)
      << r.output;
  r = runCommand("PIPEOPT_FAKE_MODEL_BUG=p-none " +
                 withManifest(FAKE_PDP_MANIFEST) + " --steps 2");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find(": parameter 1 ('w'): rank 1 is in its \"ranks\" "
                          "(0, 1) in the manifest " FAKE_PDP_MANIFEST
                          " but reported no gradient for it in step 1 (a "
                          "rank that reads a parameter reports its gradient "
                          "with pipeopt_rt_gradient)"),
            std::string::npos)
      << r.output;
  r = runCommand("PIPEOPT_FAKE_MODEL_BUG=p-skip3 " +
                 withManifest(FAKE_PDP_MANIFEST) + " --steps 2");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("error: rank 0: parameter 1 ('w'): no rank of its "
                          "\"ranks\" (0, 1) reported a gradient for "
                          "microbatch 3 of 4 in step 1 (reported for "
                          "microbatch(es) 0, 1, 2): the schedule misses a "
                          "weight-gradient (W or backward) action"),
            std::string::npos)
      << r.output;
  r = runCommand("PIPEOPT_FAKE_MODEL_BUG=p-unknown " +
                 withManifest(FAKE_PTRAIN_MANIFEST));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("error: rank 0: gradient of input 0 from stage 0 "
                          "for microbatch 0: input 0 is not a parameter of "
                          "the manifest " FAKE_PTRAIN_MANIFEST
                          " (\"parameters\")"),
            std::string::npos)
      << r.output;
}

TEST(RunnerParameters, CheckpointAndResumeAreBitIdentical) {
  std::string dir = tmpDir("params_ckpt");
  Data d;
  std::string in = paramInputs(dir, d);
  std::string manifest = withTraining(
      dir, FAKE_PDP_MANIFEST,
      R"("training": {"optimizer": "adamw", "lr": 0.01, "weight_decay": 0.1})");
  std::string run = withManifest(manifest) + in + " --quiet";
  CmdResult r = runCommand(run + " --steps 10 --output-dir " + dir + "/full");
  ASSERT_EQ(r.code, 0) << r.output;
  // 4 steps with a checkpoint every 2, then the remaining 6 from it.
  r = runCommand(run + " --steps 4 --checkpoint-dir " + dir +
                 "/ck --checkpoint-every 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(fileBytes(dir + "/ck/latest"), "step-4\n");
  EXPECT_TRUE(std::ifstream(dir + "/ck/step-2/weight_1.npy").good());
  EXPECT_FALSE(std::ifstream(dir + "/ck/tmp-4/weight_1.npy").good());
  // A checkpoint that a crash left half-written is never taken.
  std::system(("mkdir -p " + dir + "/ck/tmp-6 && echo junk > " + dir +
               "/ck/tmp-6/weight_1.npy")
                  .c_str());
  r = runCommand(run + " --steps 10 --resume " + dir + "/ck --output-dir " +
                 dir + "/resumed");
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char *f : {"weight_1.npy", "weight_2.npy", "adam_m_1.npy",
                        "adam_v_2.npy", "loss.npy", "optimizer.json"})
    EXPECT_EQ(fileBytes(dir + "/resumed/" + f), fileBytes(dir + "/full/" + f))
        << f;
  EXPECT_EQ(readNpy(dir + "/resumed/loss.npy").shape, Shape{10});

  // The process dies in step 5 of 10 with a checkpoint every 2: resuming
  // loses steps 5 only and ends with the same weights.
  r = runCommand("PIPEOPT_FAKE_MODEL_BUG=die5 " + run +
                 " --steps 10 --checkpoint-dir " + dir +
                 "/ck2 --checkpoint-every 2");
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_EQ(fileBytes(dir + "/ck2/latest"), "step-4\n");
  r = runCommand(run + " --steps 10 --resume " + dir +
                 "/ck2 --checkpoint-dir " + dir +
                 "/ck2 --checkpoint-every 2 --output-dir " + dir + "/killed");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(fileBytes(dir + "/ck2/latest"), "step-10\n");
  for (const char *f : {"weight_1.npy", "weight_2.npy", "loss.npy"})
    EXPECT_EQ(fileBytes(dir + "/killed/" + f), fileBytes(dir + "/full/" + f))
        << f;

  // Errors: nothing left to run, no checkpoint, options.
  r = runCommand(run + " --steps 4 --resume " + dir + "/ck");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("the latest checkpoint is of step 4, but --steps 4 "
                          "asks for no more steps"),
            std::string::npos)
      << r.output;
  r = runCommand(run + " --steps 4 --resume " + dir + "/none");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(dir + "/none/latest"), std::string::npos) << r.output;
  r = runCommand(run + " --checkpoint-every 2");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--checkpoint-dir and --checkpoint-every K go "
                          "together"),
            std::string::npos)
      << r.output;
  r = runCommand(trainRun() + " --checkpoint-dir " + dir +
                 "/x --checkpoint-every 1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("has no \"parameters\"; checkpoints hold"),
            std::string::npos)
      << r.output;
  // A checkpoint of another optimizer does not fit.
  r = runCommand(withManifest(FAKE_PDP_MANIFEST) + in +
                 " --steps 10 --resume " + dir + "/ck");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("the checkpoint was written with optimizer "
                          "'adamw', the manifest " FAKE_PDP_MANIFEST
                          " trains with 'sgd'"),
            std::string::npos)
      << r.output;
}

TEST(RunnerParameters, DatasetGivesEveryStepItsData) {
  std::string dir = tmpDir("params_data");
  Data d;
  paramInputs(dir, d);
  // 3 steps of their own x: step s is d.x scaled by (1 + s / 2).
  std::vector<float> all;
  ParamReference ref(d);
  for (int s = 0; s < 3; ++s) {
    std::vector<float> xs;
    for (float v : d.x)
      xs.push_back(v * (1.0f + 0.5f * float(s)));
    all.insert(all.end(), xs.begin(), xs.end());
    ref.x = xs;
    ref.step();
  }
  writeNpy(dir + "/data.npy", f32({3, 4, 2, 3}, all));
  writeNpy(dir + "/data_split.npy", f32({3, 8, 3}, all));
  std::string rest = " --input 1=" + dir + "/w.npy --input 2=" + dir +
                     "/b.npy --steps 3 --quiet --output-dir ";
  CmdResult r =
      runCommand(withManifest(FAKE_PPIPE_MANIFEST) + " --input 0=" + dir +
                 "/data.npy" + rest + dir + "/a");
  ASSERT_EQ(r.code, 0) << r.output;
  expectClose(values(readNpy(dir + "/a/weight_1.npy")), ref.w, "w");
  expectClose(values(readNpy(dir + "/a/loss.npy")), ref.losses, "loss");
  r = runCommand(withManifest(FAKE_PPIPE_MANIFEST) + " --input 0=" + dir +
                 "/data_split.npy" + rest + dir + "/b");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(fileBytes(dir + "/a/weight_1.npy"),
            fileBytes(dir + "/b/weight_1.npy"));
  // A resumed run reads the steps after its checkpoint.
  r = runCommand(withManifest(FAKE_PPIPE_MANIFEST) + " --input 0=" + dir +
                 "/data.npy --input 1=" + dir + "/w.npy --input 2=" + dir +
                 "/b.npy --steps 3 --quiet --checkpoint-dir " + dir +
                 "/ck --checkpoint-every 1");
  ASSERT_EQ(r.code, 0) << r.output;
  std::system(("printf 'step-1\\n' > " + dir + "/ck/latest").c_str());
  r = runCommand(withManifest(FAKE_PPIPE_MANIFEST) + " --input 0=" + dir +
                 "/data.npy --resume " + dir + "/ck" + rest + dir + "/c");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(fileBytes(dir + "/a/weight_2.npy"),
            fileBytes(dir + "/c/weight_2.npy"));
  // The number of steps must match.
  r = runCommand(withManifest(FAKE_PPIPE_MANIFEST) + " --input 0=" + dir +
                 "/data.npy --steps 2");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(dir +
                          "/data.npy: input 0 is a dataset of 3 step(s) "
                          "(f32[3x4x2x3]: steps x f32[4x2x3]), but the run "
                          "has 2 step(s)"),
            std::string::npos)
      << r.output;
}

//===----------------------------------------------------------------------===//
// Issue 34: nothing lost, nothing injected (files, checkpoints, options)
//===----------------------------------------------------------------------===//

/// `s` quoted for the shell (any bytes, quotes included).
std::string shq(const std::string &s) {
  std::string r = "'";
  for (char c : s)
    r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

/// The fake data-parallel build trained with AdamW (2 ranks, 2 parameters),
/// its inputs, and the reference: 10 uninterrupted steps into `dir`/full.
struct AdamRun {
  std::string dir, manifest, run;
  explicit AdamRun(const std::string &name) {
    dir = tmpDir(name);
    Data d;
    std::string in = paramInputs(dir, d);
    manifest = withTraining(
        dir, FAKE_PDP_MANIFEST,
        R"("training": {"optimizer": "adamw", "lr": 0.01, "weight_decay": 0.1})");
    run = withManifest(manifest) + in + " --quiet --timeout-s 20";
    CmdResult r = runCommand(run + " --steps 10 --output-dir " + dir + "/full");
    EXPECT_EQ(r.code, 0) << r.output;
  }
  /// Checkpoints of steps 2, 4 and 6 in `ck`.
  void checkpoints(const std::string &ck) {
    CmdResult r = runCommand(run + " --steps 6 --checkpoint-dir " + shq(ck) +
                             " --checkpoint-every 2");
    ASSERT_EQ(r.code, 0) << r.output;
  }
  /// Resumes from `ck` to step 10 into `out`.
  CmdResult resume(const std::string &ck, const std::string &out) {
    return runCommand(run + " --steps 10 --resume " + shq(ck) +
                      " --output-dir " + shq(out));
  }
  void expectSameAsFull(const std::string &out) {
    for (const char *f : {"weight_1.npy", "weight_2.npy", "adam_m_1.npy",
                          "adam_v_2.npy", "loss.npy", "optimizer.json"})
      EXPECT_EQ(fileBytes(out + "/" + f), fileBytes(dir + "/full/" + f))
          << out << "/" << f;
  }
};

/// Replaces checkpoint file `name` of `stepDir` by `bytes` and records its
/// new size and checksum in checkpoint.json (a consistent but wrong
/// checkpoint: what the field checks must catch).
void rewriteCheckpointFile(const std::string &stepDir, const std::string &name,
                           const std::string &bytes) {
  std::ofstream(stepDir + "/" + name, std::ios::binary | std::ios::trunc)
      << bytes;
  nlohmann::json j = readJson(stepDir + "/checkpoint.json");
  char sum[17];
  std::snprintf(sum, sizeof(sum), "%016llx",
                (unsigned long long)fnv1a64(bytes.data(), bytes.size()));
  j["files"][name] = {{"bytes", bytes.size()}, {"fnv1a64", sum}};
  std::ofstream(stepDir + "/checkpoint.json", std::ios::trunc) << j.dump(2);
}

std::string checkpointError(const Manifest &m, const std::string &stepDir) {
  try {
    readCheckpointStep(m, stepDir);
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RunnerFiles, FullDiskIsAnErrorNamingTheFile) {
  // Item 1: a small file on a full disk was "written" (the error sat in
  // the stream buffer until its destructor) and the run exited 0.
  std::string dir = tmpDir("fulldisk");
  Data d;
  std::string in = paramInputs(dir, d);
  for (const char *opt : {"--profile", "--trace"}) {
    CmdResult r = runCommand(withManifest(FAKE_PTRAIN_MANIFEST) + in +
                             " --steps 2 --quiet " + opt + " /dev/full");
    EXPECT_EQ(r.code, 1) << opt << r.output;
    EXPECT_NE(r.output.find("/dev/full: cannot write: No space left on "
                            "device"),
              std::string::npos)
        << r.output;
  }
}

/// A tmpfs of `size` mounted on `dir` for the test's lifetime.
struct TmpfsMount {
  std::string dir;
  bool ok = false;
  std::string error;
  TmpfsMount(const std::string &dir, const std::string &size) : dir(dir) {
    ::mkdir(dir.c_str(), 0777);
    ok = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size).c_str()) ==
         0;
    if (!ok)
      error = std::strerror(errno);
  }
  ~TmpfsMount() {
    if (ok)
      ::umount2(dir.c_str(), MNT_DETACH);
  }
};

TEST(RunnerFiles, NearlyFullFilesystemNeverPublishesAPartialCheckpoint) {
  // Item 1: checkpoints every step onto a small tmpfs until it fills. One
  // checkpoint is 9 files of one 4 KiB page each and a directory; the sizes
  // step by one page over more than a checkpoint, so that the disk fills in
  // every kind of file (an .npy, optimizer.json, checkpoint.json, latest),
  // and in the first checkpoint (12k).
  AdamRun a("tmpfs");
  Manifest m = readManifest(a.manifest);
  std::vector<int> sizesK = {12};
  for (int k = 100; k <= 148; k += 4)
    sizesK.push_back(k);
  for (int sizeK : sizesK) {
    SCOPED_TRACE("tmpfs of " + std::to_string(sizeK) + " KiB");
    TmpfsMount mnt(a.dir + "/mnt" + std::to_string(sizeK),
                   std::to_string(sizeK) + "k");
    if (!mnt.ok)
      GTEST_SKIP() << "cannot mount a tmpfs here (" << mnt.error
                   << "); needs root or CAP_SYS_ADMIN. FileIO.* cover "
                      "/dev/full and a failing write";
    std::string ck = mnt.dir + "/ck";
    CmdResult r = runCommand(a.run + " --steps 10 --checkpoint-dir " + ck +
                             " --checkpoint-every 1");
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_NE(r.output.find("No space left on device"), std::string::npos)
        << r.output;
    // Every published step directory verifies, no temporary is left, and
    // `latest` names one of them (it is absent only before the first).
    int published = 0, newest = 0;
    for (int k = 1; k <= 10; ++k) {
      struct stat st;
      EXPECT_NE(::stat((ck + "/tmp-" + std::to_string(k)).c_str(), &st), 0);
      std::string sd = ck + "/step-" + std::to_string(k);
      if (::stat(sd.c_str(), &st) != 0)
        continue;
      ++published;
      newest = k;
      EXPECT_EQ(checkpointError(m, sd), "(no error)") << sd;
    }
    EXPECT_EQ(published, newest);
    struct stat st;
    if (::stat((ck + "/latest").c_str(), &st) != 0) {
      EXPECT_LE(published, 1);
      continue;
    }
    std::string latest = fileBytes(ck + "/latest");
    ASSERT_EQ(latest.rfind("step-", 0), 0u) << latest;
    Checkpoint c = readCheckpoint(m, ck);
    EXPECT_TRUE(c.notes.empty());
    EXPECT_EQ("step-" + std::to_string(c.step) + "\n", latest);
    EXPECT_LT(c.step, 10);
    // Steps 1..latest, and one more if the disk filled while `latest` was
    // being replaced (that step is complete too).
    EXPECT_TRUE(published == c.step || published == c.step + 1) << published;
    if (sizeK != sizesK.back())
      continue;
    // --output-dir on the full file system: an error, and no empty file.
    // (Filled up first: the failed checkpoint removed its temporaries, and
    // what they freed may be enough for the output.)
    {
      std::ofstream filler(mnt.dir + "/filler", std::ios::binary);
      std::string page(4096, 'x');
      while (filler.write(page.data(), page.size()) && filler.flush()) {
      }
    }
    ::mkdir((mnt.dir + "/out").c_str(), 0777);
    r = runCommand(a.run + " --steps 2 --output-dir " + mnt.dir + "/out");
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_NE(r.output.find("No space left on device"), std::string::npos)
        << r.output;
    for (const char *f : {"weight_1.npy", "weight_2.npy", "adam_m_1.npy",
                          "adam_v_1.npy", "loss.npy", "optimizer.json"})
      if (::stat((mnt.dir + "/out/" + f).c_str(), &st) == 0)
        EXPECT_GT(st.st_size, 0) << f;
    // Resuming from what is on the full disk ends bit-identical.
    r = a.resume(ck, a.dir + "/resumed");
    ASSERT_EQ(r.code, 0) << r.output;
    a.expectSameAsFull(a.dir + "/resumed");
  }
}

TEST(RunnerCheckpoint, ResumeFallsBackToTheNewestCompleteCheckpoint) {
  // Item 1: an empty `latest` (a full disk) made --resume fail although
  // complete checkpoints were on disk.
  AdamRun a("fallback");
  std::string ck = a.dir + "/ck";
  a.checkpoints(ck);
  std::ofstream(ck + "/latest", std::ios::trunc);
  CmdResult r = a.resume(ck, a.dir + "/r1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("pipeopt-run: warning: --resume " + ck +
                          ": skipped: " + ck +
                          "/latest: names '', not a "
                          "checkpoint step-<k>"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("resuming from " + ck +
                          "/step-6, the newest "
                          "complete checkpoint that verifies"),
            std::string::npos)
      << r.output;
  a.expectSameAsFull(a.dir + "/r1");
  // `latest` names a checkpoint whose data was damaged: the older one.
  std::ofstream(ck + "/latest", std::ios::trunc) << "step-6\n";
  {
    std::string w = fileBytes(ck + "/step-6/weight_1.npy");
    w[w.size() - 1] ^= 0x10;
    std::ofstream(ck + "/step-6/weight_1.npy", std::ios::trunc) << w;
  }
  r = a.resume(ck, a.dir + "/r2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("skipped: " + ck +
                          "/step-6/weight_1.npy: FNV-1a "
                          "checksum "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("resuming from " + ck + "/step-4"), std::string::npos)
      << r.output;
  a.expectSameAsFull(a.dir + "/r2");
  // No `latest`, step-4 incomplete (a file missing): step-2.
  ::unlink((ck + "/latest").c_str());
  ::unlink((ck + "/step-4/adam_v_2.npy").c_str());
  r = a.resume(ck, a.dir + "/r3");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("resuming from " + ck + "/step-2"), std::string::npos)
      << r.output;
  a.expectSameAsFull(a.dir + "/r3");
  // None verifies: an error that lists each.
  ::unlink((ck + "/step-2/loss.npy").c_str());
  r = a.resume(ck, a.dir + "/r4");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("no complete checkpoint in " + ck + " verifies"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(ck + "/step-2/loss.npy"), std::string::npos)
      << r.output;
}

TEST(RunnerCheckpoint, DirectoryNamesNeverGoThroughAShell) {
  // Item 3: `rm -rf '<dir>/tmp-k'` through std::system:
  // --checkpoint-dir "victim' 'ck" deleted ./victim.
  AdamRun a("shell");
  ::mkdir((a.dir + "/victim").c_str(), 0777);
  std::ofstream(a.dir + "/victim/keep") << "precious\n";
  CmdResult r = runCommand("cd " + shq(a.dir) + " && " + a.run +
                           " --steps 4 --checkpoint-dir " + shq("victim' 'ck") +
                           " --checkpoint-every 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(fileBytes(a.dir + "/victim/keep"), "precious\n");
  EXPECT_EQ(fileBytes(a.dir + "/victim' 'ck/latest"), "step-4\n");
  // A directory with a quote in its name works, for writing and resuming.
  std::string ck = a.dir + "/John's runs/ck";
  a.checkpoints(ck);
  EXPECT_EQ(fileBytes(ck + "/latest"), "step-6\n");
  r = a.resume(ck, a.dir + "/John's runs/out");
  ASSERT_EQ(r.code, 0) << r.output;
  a.expectSameAsFull(a.dir + "/John's runs/out");
}

TEST(RunnerCheckpoint, CorruptOptimizerJsonIsNotIgnored) {
  // Item 4: a corrupt optimizer.json was ignored (the step count fell back
  // to the checkpoint's). Even with a matching checksum it is an error
  // naming the file; --resume takes the older checkpoint and says so.
  AdamRun a("optjson");
  std::string ck = a.dir + "/ck";
  a.checkpoints(ck);
  Manifest m = readManifest(a.manifest);
  rewriteCheckpointFile(ck + "/step-6", "optimizer.json", "{\"optimizer\": ");
  EXPECT_NE(checkpointError(m, ck + "/step-6")
                .find(ck + "/step-6/optimizer.json: invalid JSON"),
            std::string::npos)
      << checkpointError(m, ck + "/step-6");
  CmdResult r = a.resume(ck, a.dir + "/r");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("skipped: " + ck +
                          "/step-6/optimizer.json: "
                          "invalid JSON"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("resuming from " + ck + "/step-4"), std::string::npos)
      << r.output;
  a.expectSameAsFull(a.dir + "/r");
  // With no older checkpoint it is an error (exit 2), not a silent resume.
  std::string ck1 = a.dir + "/ck1";
  r = runCommand(a.run + " --steps 2 --checkpoint-dir " + ck1 +
                 " --checkpoint-every 2");
  ASSERT_EQ(r.code, 0) << r.output;
  rewriteCheckpointFile(ck1 + "/step-2", "optimizer.json", "[]");
  r = a.resume(ck1, a.dir + "/r1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(ck1 + "/step-2/optimizer.json: not a JSON object"),
            std::string::npos)
      << r.output;
}

TEST(RunnerCheckpoint, ContentsAreVerifiedAndRangeChecked) {
  // Item 5: a flipped data byte, a negative, zero, huge or fractional AdamW
  // step, "version": 2 were all accepted; a JSON type error named no file.
  AdamRun a("verify");
  std::string ck = a.dir + "/ck";
  CmdResult r = runCommand(a.run + " --steps 2 --checkpoint-dir " + ck +
                           " --checkpoint-every 2");
  ASSERT_EQ(r.code, 0) << r.output;
  Manifest m = readManifest(a.manifest);
  std::string sd = ck + "/step-2", cj = sd + "/checkpoint.json",
              oj = sd + "/optimizer.json";
  EXPECT_EQ(checkpointError(m, sd), "(no error)");
  nlohmann::json ckJson = readJson(cj);
  EXPECT_EQ(ckJson["format_version"], 1);
  EXPECT_EQ(ckJson["checksum"], "fnv1a64");
  EXPECT_EQ(ckJson["files"].size(), 8u); // all but checkpoint.json
  std::string optText = fileBytes(oj);
  std::string ckText = fileBytes(cj);
  auto restore = [&] {
    std::ofstream(cj, std::ios::trunc) << ckText;
    rewriteCheckpointFile(sd, "optimizer.json", optText);
  };

  // A flipped data byte: the checksum, through pipeopt-run too.
  std::string w = fileBytes(sd + "/weight_2.npy");
  std::string flipped = w;
  flipped[flipped.size() - 2] ^= 1;
  std::ofstream(sd + "/weight_2.npy", std::ios::trunc) << flipped;
  r = a.resume(ck, a.dir + "/r");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(sd + "/weight_2.npy: FNV-1a checksum "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("that checkpoint.json records (the file is "
                          "corrupt)"),
            std::string::npos)
      << r.output;
  std::ofstream(sd + "/weight_2.npy", std::ios::trunc) << w;
  EXPECT_EQ(checkpointError(m, sd), "(no error)");
  // Truncated: the size.
  std::ofstream(sd + "/weight_2.npy", std::ios::trunc) << w.substr(0, 10);
  EXPECT_NE(checkpointError(m, sd).find(sd + "/weight_2.npy: 10 bytes, but "
                                             "checkpoint.json records "),
            std::string::npos);
  std::ofstream(sd + "/weight_2.npy", std::ios::trunc) << w;

  // checkpoint.json fields.
  struct Case {
    std::string field, value, want;
  };
  std::vector<Case> ckCases = {
      {"format_version", "2",
       "field \"format_version\" is 2, but this pipeopt-run reads version 1"},
      {"format_version", "\"1\"",
       "field \"format_version\" must be an integer"},
      {"step", "-1", "field \"step\" is -1, outside [1, 2147483646]"},
      {"step", "0", "field \"step\" is 0, outside [1, 2147483646]"},
      {"step", "2.5",
       "field \"step\" must be an integer in [1, 2147483646], "
       "got 2.5"},
      {"step", "4294967298", "field \"step\" is 4294967298, outside"},
      {"step", "99999999999999999999", "field \"step\" must be an integer"},
      {"step", "\"2\"", "field \"step\" must be an integer"},
      {"step", "3", "field \"step\" is 3, but the directory is step-2"},
      {"num_microbatches", "null",
       "field \"num_microbatches\" must be an "
       "integer"},
      {"files", "[]",
       "field \"files\" (the size and checksum of every file) "
       "is missing or not an object"},
      {"parameters", "[1, -2]", "field \"parameters\" holds -2"},
  };
  for (const Case &c : ckCases) {
    nlohmann::json j = nlohmann::json::parse(ckText);
    j[c.field] = nlohmann::json::parse(c.value);
    std::ofstream(cj, std::ios::trunc) << j.dump();
    std::string e = checkpointError(m, sd);
    EXPECT_EQ(e.rfind(cj + ": ", 0), 0u)
        << c.field << "=" << c.value << ": " << e;
    EXPECT_NE(e.find(c.want), std::string::npos)
        << c.field << "=" << c.value << ": " << e;
  }
  std::ofstream(cj, std::ios::trunc) << "{\"format\": \"pipeopt-checkpoint\"}";
  EXPECT_NE(checkpointError(m, sd).find(cj + ": field \"format_version\" is "
                                             "missing"),
            std::string::npos);
  restore();
  // optimizer.json: the AdamW step of a parameter.
  std::vector<Case> optCases = {
      {"-1", "", "field \"parameters.1.step\" is -1, outside [2, 2]"},
      {"0", "", "field \"parameters.1.step\" is 0, outside [2, 2]"},
      {"1.5", "",
       "field \"parameters.1.step\" must be an integer in [2, 2], "
       "got 1.5"},
      {"1e300", "", "field \"parameters.1.step\" must be an integer"},
      {"9223372036854775808", "",
       "field \"parameters.1.step\" must be an "
       "integer"},
      {"4294967297", "", "field \"parameters.1.step\" is 4294967297, outside"},
      {"\"x\"", "", "field \"parameters.1.step\" must be an integer"},
  };
  for (const Case &c : optCases) {
    nlohmann::json j = nlohmann::json::parse(optText);
    j["parameters"]["1"]["step"] = nlohmann::json::parse(c.field);
    rewriteCheckpointFile(sd, "optimizer.json", j.dump());
    std::string e = checkpointError(m, sd);
    EXPECT_NE(e.find(oj + ": " + c.want), std::string::npos)
        << c.field << ": " << e;
  }
  // Through pipeopt-run: a negative AdamW step is an error, not NaN weights.
  {
    nlohmann::json j = nlohmann::json::parse(optText);
    j["parameters"]["1"]["step"] = -1;
    rewriteCheckpointFile(sd, "optimizer.json", j.dump());
    r = a.resume(ck, a.dir + "/r2");
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find(oj + ": field \"parameters.1.step\" is -1"),
              std::string::npos)
        << r.output;
  }
  restore();
  {
    nlohmann::json j = nlohmann::json::parse(optText);
    j["steps"] = "two";
    rewriteCheckpointFile(sd, "optimizer.json", j.dump());
    EXPECT_NE(checkpointError(m, sd).find(oj + ": field \"steps\" must be an "
                                               "integer"),
              std::string::npos);
  }
  restore();
  // A negative AdamW second moment (sqrt of it: NaN).
  std::string adamV = fileBytes(sd + "/adam_v_1.npy");
  {
    HostTensor v = readNpy(sd + "/adam_v_1.npy");
    double neg = -1.0;
    std::memcpy(v.data.data(), &neg, 8);
    std::vector<uint8_t> head = serializeNpy(v);
    rewriteCheckpointFile(sd, "adam_v_1.npy",
                          std::string(head.begin(), head.end()));
    EXPECT_NE(checkpointError(m, sd).find(sd + "/adam_v_1.npy: element 0 is "
                                               "-1 (a second moment is >= 0)"),
              std::string::npos)
        << checkpointError(m, sd);
  }
  rewriteCheckpointFile(sd, "adam_v_1.npy", adamV);
  restore();
  EXPECT_EQ(checkpointError(m, sd), "(no error)");
  r = a.resume(ck, a.dir + "/r3");
  ASSERT_EQ(r.code, 0) << r.output;
  a.expectSameAsFull(a.dir + "/r3");
}

bool isSymlink(const std::string &path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

TEST(RunnerFiles, LinksInOutputAndCheckpointDirsAreReplacedNotFollowed) {
  // A symbolic link planted in --output-dir or the checkpoint directory
  // redirected the write: its target (../victim.txt) was overwritten.
  AdamRun a("links");
  std::string victim = a.dir + "/victim.txt";
  std::ofstream(victim) << "precious\n";
  std::string so = a.dir + "/so";
  ::mkdir(so.c_str(), 0777);
  ASSERT_EQ(::symlink("../victim.txt", (so + "/weight_1.npy").c_str()), 0);
  ASSERT_EQ(::symlink("../victim.txt", (so + "/optimizer.json").c_str()), 0);
  CmdResult r = runCommand(a.run + " --steps 10 --output-dir " + so);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(fileBytes(victim), "precious\n");
  EXPECT_FALSE(isSymlink(so + "/weight_1.npy"));
  a.expectSameAsFull(so);
  // `latest` of a checkpoint directory resumed and written again.
  std::string ck = a.dir + "/ck";
  a.checkpoints(ck);
  ASSERT_EQ(::unlink((ck + "/latest").c_str()), 0);
  ASSERT_EQ(::symlink("../victim.txt", (ck + "/latest").c_str()), 0);
  r = runCommand(a.run + " --steps 10 --resume " + ck + " --checkpoint-dir " +
                 ck + " --checkpoint-every 2 --output-dir " + a.dir + "/r");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(fileBytes(victim), "precious\n");
  EXPECT_FALSE(isSymlink(ck + "/latest"));
  EXPECT_EQ(fileBytes(ck + "/latest"), "step-10\n");
  a.expectSameAsFull(a.dir + "/r");
}

TEST(RunnerFiles, TraceToRedirectedStdoutKeepsDevStdout) {
  // --trace /dev/stdout with stdout redirected to a file: /dev/stdout is a
  // link (to /proc/self/fd/1, to the file); it is written through, never
  // renamed over.
  std::string dir = tmpDir("stdout");
  Data d;
  std::string in = paramInputs(dir, d);
  bool wasLink = isSymlink("/dev/stdout");
  // The file stdout goes to stays that file (written in place, not
  // renamed over: a shell's later output would go to a deleted file).
  std::ofstream(dir + "/trace.json") << "";
  struct stat before, after;
  ASSERT_EQ(::stat((dir + "/trace.json").c_str(), &before), 0);
  CmdResult r = runCommand("{ " + withManifest(FAKE_PTRAIN_MANIFEST) + in +
                           " --steps 2 --quiet --trace /dev/stdout > " + dir +
                           "/trace.json; }");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(isSymlink("/dev/stdout"), wasLink);
  ASSERT_EQ(::stat((dir + "/trace.json").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  nlohmann::json j = readJson(dir + "/trace.json");
  EXPECT_TRUE(j.contains("traceEvents")) << fileBytes(dir + "/trace.json");
}

TEST(RunnerFiles, UnwritableOutputLocationsFailBeforeStep1) {
  // An unwritable --output-dir, --trace or --profile was found only after
  // the training, an unwritable --checkpoint-dir at the first checkpoint.
  std::string dir = tmpDir("unwritable");
  Data d;
  std::string run =
      withManifest(FAKE_PTRAIN_MANIFEST) + paramInputs(dir, d) + " --steps 5 ";
  auto expectEarlyError = [&](const std::string &opts,
                              const std::string &want) {
    CmdResult r = runCommand(run + opts);
    EXPECT_EQ(r.code, 2) << opts << "\n" << r.output;
    EXPECT_NE(r.output.find("pipeopt-run: error: " + want), std::string::npos)
        << opts << "\n"
        << r.output;
    EXPECT_EQ(r.output.find("step 1/"), std::string::npos) << opts << "\n"
                                                           << r.output;
  };
  std::ofstream(dir + "/file") << "x";
  expectEarlyError("--output-dir " + dir + "/file/o",
                   "--output-dir: cannot create directory " + dir +
                       "/file/o: Not a directory");
  expectEarlyError("--checkpoint-dir " + dir + "/file/ck --checkpoint-every 2",
                   "--checkpoint-dir: cannot create directory " + dir +
                       "/file/ck: Not a directory");
  expectEarlyError("--trace " + dir + "/no/t.json",
                   "--trace " + dir + "/no/t.json: the directory " + dir +
                       "/no: No such file or directory");
  expectEarlyError("--profile " + dir, "--profile " + dir + ": Is a directory");

  // A read-only file system (root can write into a mode 0555 directory).
  std::string ro = dir + "/ro";
  ::mkdir(ro.c_str(), 0777);
  if (::mount("tmpfs", ro.c_str(), "tmpfs", MS_RDONLY, "size=64k") != 0)
    GTEST_SKIP() << "cannot mount a read-only tmpfs: " << std::strerror(errno);
  struct Unmount {
    std::string dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{ro};
  expectEarlyError("--output-dir " + ro + "/o",
                   "--output-dir: cannot create directory " + ro +
                       "/o: Read-only file system");
  expectEarlyError("--output-dir " + ro, "--output-dir " + ro +
                                             ": cannot create a file there: "
                                             "Read-only file system");
  expectEarlyError("--checkpoint-dir " + ro + " --checkpoint-every 2",
                   "--checkpoint-dir " + ro +
                       ": cannot create a file there: Read-only file system");
  for (const char *opt : {"--trace", "--profile"})
    expectEarlyError(std::string(opt) + " " + ro + "/x.json",
                     std::string(opt) + " " + ro + "/x.json: the directory " +
                         ro +
                         ": cannot create a file there: Read-only file "
                         "system");
  // Devices are still fine (written in place); the steps are reported, so
  // their absence above means the run stopped before step 1.
  CmdResult r = runCommand(run + "--trace /dev/null");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("step 1/5"), std::string::npos) << r.output;
}

// Two runs writing checkpoints into one directory at once published
// incomplete step directories; the second is now refused while the first
// holds C/.lock, and a lock left by a dead process does not count.
TEST(RunnerCheckpoint, ADirectoryInUseIsRefused) {
  AdamRun a("locked");
  std::string ck = a.dir + "/ck";
  ::mkdir(ck.c_str(), 0777);
  int fd = ::open((ck + "/.lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  ASSERT_EQ(::write(fd, "4242\n", 5), 5);
  std::string run =
      a.run + " --steps 2 --checkpoint-dir " + ck + " --checkpoint-every 1";
  CmdResult r = runCommand(run);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("pipeopt-run: error: --checkpoint-dir " + ck +
                          " is in use by another pipeopt-run (pid 4242): two "
                          "runs must not write checkpoints into one "
                          "directory"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(ck + "/latest"));
  ::close(fd); // the holder ends
  r = runCommand(run);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(fileBytes(ck + "/latest"), "step-2\n");
}

TEST(RunnerCheckpoint, FreshRunRefusesADirectoryWithCheckpoints) {
  // A run without --resume into a directory of checkpoints overwrote and
  // mixed them.
  AdamRun a("reuse");
  std::string ck = a.dir + "/ck";
  a.checkpoints(ck);
  std::string fresh =
      a.run + " --steps 4 --checkpoint-dir " + ck + " --checkpoint-every 2";
  CmdResult r = runCommand(fresh);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("pipeopt-run: error: " + ck +
                          " already holds checkpoints (latest names step-6): "
                          "pass --resume " +
                          ck +
                          " to continue from them, or choose another "
                          "--checkpoint-dir"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(fileBytes(ck + "/latest"), "step-6\n");
  // Without `latest`, a step-* directory is enough.
  ::unlink((ck + "/latest").c_str());
  r = runCommand(fresh);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(ck + " already holds checkpoints (step-2, step-4, "
                               "step-6): pass --resume"),
            std::string::npos)
      << r.output;
  // With --resume it continues (covered above); an empty directory is fine.
  std::string empty = a.dir + "/empty";
  ::mkdir(empty.c_str(), 0777);
  r = runCommand(a.run + " --steps 2 --checkpoint-dir " + empty +
                 " --checkpoint-every 2");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(fileBytes(empty + "/latest"), "step-2\n");
}

TEST(RunnerCheckpoint, UnreadableLatestIsEscapedInTheWarning) {
  // The fallback warning printed `latest`'s raw bytes (NUL, 0xff,
  // newlines), however many.
  AdamRun a("latestbytes");
  std::string ck = a.dir + "/ck";
  a.checkpoints(ck);
  std::string junk("st\0p\xff\nzz", 8);
  junk += std::string(1000, 'y');
  std::ofstream(ck + "/latest", std::ios::binary | std::ios::trunc) << junk;
  CmdResult r = a.resume(ck, a.dir + "/r");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find(ck + "/latest: names 'st\\x00p\\xff\\x0azzyyy"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("yyy...', not a checkpoint step-<k>"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find('\0'), std::string::npos);
  EXPECT_EQ(r.output.find(std::string(100, 'y')), std::string::npos);
  a.expectSameAsFull(a.dir + "/r");
}

TEST(RunnerCheckpoint, ChecksumKindAndFileListAreChecked) {
  // "checksum": "sha256" or none was accepted, and "files" entries that are
  // not files of the checkpoint ("zz.npy", "../step-2/weight_1.npy") were
  // ignored.
  AdamRun a("filelist");
  std::string ck = a.dir + "/ck";
  CmdResult r = runCommand(a.run + " --steps 2 --checkpoint-dir " + ck +
                           " --checkpoint-every 2");
  ASSERT_EQ(r.code, 0) << r.output;
  Manifest m = readManifest(a.manifest);
  std::string sd = ck + "/step-2", cj = sd + "/checkpoint.json";
  std::string ckText = fileBytes(cj);
  auto errorWith = [&](const std::function<void(nlohmann::json &)> &edit) {
    nlohmann::json j = nlohmann::json::parse(ckText);
    edit(j);
    std::ofstream(cj, std::ios::trunc) << j.dump();
    return checkpointError(m, sd);
  };
  nlohmann::json entry = nlohmann::json::parse(ckText)["files"]["loss.npy"];
  EXPECT_EQ(errorWith([](nlohmann::json &j) { j["checksum"] = "sha256"; }),
            cj + ": field \"checksum\" is \"sha256\", but this pipeopt-run "
                 "verifies \"fnv1a64\"");
  EXPECT_EQ(errorWith([](nlohmann::json &j) { j.erase("checksum"); }),
            cj + ": field \"checksum\" is missing");
  EXPECT_EQ(errorWith([](nlohmann::json &j) { j["checksum"] = 1; }),
            cj + ": field \"checksum\" must be a string, got 1");
  EXPECT_EQ(errorWith([&](nlohmann::json &j) { j["files"]["zz.npy"] = entry; }),
            cj + ": field \"files\" lists \"zz.npy\", which is not a file of "
                 "this checkpoint");
  EXPECT_EQ(errorWith([&](nlohmann::json &j) {
              j["files"]["checkpoint.json"] = entry;
            }),
            cj + ": field \"files\" lists \"checkpoint.json\", which is not "
                 "a file of this checkpoint");
  EXPECT_EQ(errorWith([&](nlohmann::json &j) {
              j["files"]["../step-2/weight_1.npy"] = entry;
            }),
            cj + ": field \"files\" lists \"../step-2/weight_1.npy\", not a "
                 "file name");
  EXPECT_EQ(
      errorWith([](nlohmann::json &j) { j["files"].erase("adam_v_2.npy"); }),
      cj + ": field \"files\" lists no \"adam_v_2.npy\" (the "
           "checkpoint is incomplete)");
  // Through pipeopt-run: the only checkpoint does not verify.
  errorWith([&](nlohmann::json &j) { j["files"]["zz.npy"] = entry; });
  r = a.resume(ck, a.dir + "/r");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("lists \"zz.npy\", which is not a file"),
            std::string::npos)
      << r.output;
  std::ofstream(cj, std::ios::trunc) << ckText;
  EXPECT_EQ(checkpointError(m, sd), "(no error)");
}

TEST(RunnerCheckpoint, NonFiniteStateIsRejected) {
  // +inf in adam_v, NaN in adam_m or a weight: resumed (exit 0) with other
  // results.
  AdamRun a("nonfinite");
  std::string ck = a.dir + "/ck";
  CmdResult r = runCommand(a.run + " --steps 2 --checkpoint-dir " + ck +
                           " --checkpoint-every 2");
  ASSERT_EQ(r.code, 0) << r.output;
  Manifest m = readManifest(a.manifest);
  std::string sd = ck + "/step-2";
  std::string ckText = fileBytes(sd + "/checkpoint.json");
  struct Case {
    std::string file;
    size_t element;
    double value;
    std::string shown;
  };
  // Writes c.value into element c.element of the checkpoint's c.file (the
  // checksum updated); returns the file's old bytes.
  auto corrupt = [&](const Case &c) {
    std::string old = fileBytes(sd + "/" + c.file);
    HostTensor t = readNpy(sd + "/" + c.file);
    EXPECT_GT(numElements(t.shape), int64_t(c.element)) << c.file;
    if (t.dtype == DType::F64) {
      std::memcpy(t.data.data() + 8 * c.element, &c.value, 8);
    } else {
      EXPECT_EQ(t.dtype, DType::F32) << c.file;
      float f = float(c.value);
      std::memcpy(t.data.data() + 4 * c.element, &f, 4);
    }
    std::vector<uint8_t> bytes = serializeNpy(t);
    rewriteCheckpointFile(sd, c.file, std::string(bytes.begin(), bytes.end()));
    return old;
  };
  auto restore = [&](const Case &c, const std::string &old) {
    std::ofstream(sd + "/" + c.file, std::ios::binary | std::ios::trunc) << old;
    std::ofstream(sd + "/checkpoint.json", std::ios::trunc) << ckText;
  };
  for (const Case &c : {Case{"adam_v_1.npy", 1, INFINITY, "inf"},
                        Case{"adam_m_2.npy", 0, NAN, "nan"},
                        Case{"adam_m_1.npy", 2, -INFINITY, "-inf"},
                        Case{"weight_2.npy", 1, NAN, "nan"},
                        Case{"weight_1.npy", 0, INFINITY, "inf"}}) {
    std::string old = corrupt(c);
    EXPECT_EQ(checkpointError(m, sd),
              sd + "/" + c.file + ": element " + std::to_string(c.element) +
                  " is " + c.shown +
                  " (weights and optimizer state must be finite)");
    if (c.file == "adam_v_1.npy") {
      r = a.resume(ck, a.dir + "/r");
      EXPECT_EQ(r.code, 2) << r.output;
      EXPECT_NE(r.output.find(sd + "/adam_v_1.npy: element 1 is inf"),
                std::string::npos)
          << r.output;
    }
    restore(c, old);
  }
  // The parameters are f32 on a cpu build, so their state is f32: a finite
  // value beyond f32's range would become an infinity when loaded. A
  // negative second moment prints with its sign.
  const std::string beyond =
      ", beyond the range of the f32 optimizer state of an f32 parameter";
  for (const Case &c :
       {Case{"adam_v_1.npy", 1, 1e300, "1e+300" + beyond},
        Case{"adam_m_2.npy", 0, -3.5e38, "-3.5e+38" + beyond},
        Case{"adam_v_1.npy", 2, -1e-30, "-1e-30 (a second moment is >= 0)"}}) {
    std::string old = corrupt(c);
    EXPECT_EQ(checkpointError(m, sd), sd + "/" + c.file + ": element " +
                                          std::to_string(c.element) + " is " +
                                          c.shown);
    restore(c, old);
  }
  EXPECT_EQ(checkpointError(m, sd), "(no error)");
  // optimizer.json's hyperparameters: numbers in the manifest's ranges.
  std::string oj = sd + "/optimizer.json", optText = fileBytes(oj);
  for (const auto &[key, value, range] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"lr", "\"0.01\"", "[0, inf)"},
           {"lr", "-1", "[0, inf)"},
           {"beta1", "1", "[0, 1)"},
           {"beta2", "null", "[0, 1)"},
           {"eps", "0", "(0, inf)"},
           {"momentum", "1.5", "[0, 1]"},
           {"weight_decay", "-0.1", "[0, inf)"}}) {
    nlohmann::json j = nlohmann::json::parse(optText);
    j[key] = nlohmann::json::parse(value);
    std::string text = j.dump();
    rewriteCheckpointFile(sd, "optimizer.json", text);
    std::string e = checkpointError(m, sd);
    EXPECT_EQ(e.rfind(oj + ": field \"" + key + "\" must be a number in " +
                          range + ", got ",
                      0),
              0u)
        << key << "=" << value << ": " << e;
  }
  nlohmann::json j = nlohmann::json::parse(optText);
  j.erase("eps");
  rewriteCheckpointFile(sd, "optimizer.json", j.dump());
  EXPECT_EQ(checkpointError(m, sd), oj + ": field \"eps\" is missing");
  rewriteCheckpointFile(sd, "optimizer.json", optText);
  std::ofstream(sd + "/checkpoint.json", std::ios::trunc) << ckText;
  EXPECT_EQ(checkpointError(m, sd), "(no error)");
}

TEST(RunnerOptions, EmptyValuesAreRejected) {
  // Item 10: --resume "$CK" with CK empty retrained from step 1 over the
  // checkpoints; --output-dir "" wrote nothing; both exited 0.
  AdamRun a("empty");
  std::string ck = a.dir + "/ck";
  a.checkpoints(ck);
  std::string before = fileBytes(ck + "/step-2/weight_1.npy");
  for (const std::string &opt :
       {std::string("--resume ''"), std::string("--resume="),
        std::string("--output-dir ''"), std::string("--output-dir="),
        std::string("--trace ''"), std::string("--profile ''"),
        std::string("--manifest ''"), std::string("--seed ''"),
        std::string("--comm ''"), std::string("--input ''"),
        std::string("--pin-ranks ''"), std::string("--devices ''")}) {
    CmdResult r = runCommand(a.run + " --steps 8 --checkpoint-dir " + ck +
                             " --checkpoint-every 2 " + opt);
    EXPECT_EQ(r.code, 2) << opt << r.output;
    std::string name = opt.substr(0, opt.find_first_of(" ="));
    EXPECT_NE(r.output.find("error: " + name +
                            " needs a value, got an "
                            "empty string"),
              std::string::npos)
        << opt << r.output;
  }
  CmdResult r = runCommand(a.run + " --steps 8 --checkpoint-dir '' "
                                   "--checkpoint-every 2");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--checkpoint-dir needs a value, got an empty "
                          "string"),
            std::string::npos)
      << r.output;
  r = runCommand(a.run + " --steps 8 --input 0=" + a.dir + "/x.npy,");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("an empty file name in the list"), std::string::npos)
      << r.output;
  r = runCommand(std::string("'") + PIPEOPT_RUN_EXE + "' ''");
  EXPECT_EQ(r.code, 2) << r.output;
  // The checkpoints are untouched.
  EXPECT_EQ(fileBytes(ck + "/latest"), "step-6\n");
  EXPECT_EQ(fileBytes(ck + "/step-2/weight_1.npy"), before);
}

/// `manifest` (FAKE_MANIFEST) with input 1's shape replaced by `shape`.
std::string manifestWithShape(const std::string &dir,
                              const std::string &shape) {
  std::ifstream in(FAKE_MANIFEST);
  std::stringstream text;
  text << in.rdbuf();
  std::string json = text.str();
  size_t pos = json.find("\"shape\": [3]");
  EXPECT_NE(pos, std::string::npos);
  json.replace(pos, 12, "\"shape\": " + shape);
  std::string path = dir + "/shape.manifest.json";
  std::ofstream(path) << json;
  return path;
}

#if defined(__SANITIZE_ADDRESS__)
#define PIPEOPT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PIPEOPT_TEST_ASAN 1
#endif
#endif

TEST(RunnerFiles, OutOfMemoryNamesTheInputAndSize) {
  // Item 12: "error: std::bad_alloc", naming no input or size.
  // pipeopt-npy-diff --make-inputs applies pipeopt-run's size limits.
  std::string dir = tmpDir("oom");
  std::string manifest = manifestWithShape(dir, "[100000, 100000, 100000]");
  CmdResult r =
      runCommand("'" + std::string(NPY_DIFF_EXE) + "' --make-inputs '" +
                 manifest + "' '" + dir + "/in'");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("input 1 ('w') of shape f32[100000x100000x100000] "
                          "needs 4e+15 bytes"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("bad_alloc"), std::string::npos) << r.output;
#ifdef PIPEOPT_TEST_ASAN
  GTEST_SKIP() << "AddressSanitizer needs more address space than the "
                  "ulimit -v of the out-of-memory cases";
#endif
  // A 16 GiB input is under the 64 GiB limit; with the address space
  // limited to 4 GB it cannot be allocated.
  manifest = manifestWithShape(dir, "[4, 1024, 1024, 1024]");
  r = runCommand("ulimit -v 4000000; '" + std::string(PIPEOPT_RUN_EXE) + "' '" +
                 FAKE_MODEL_SO + "' --manifest '" + manifest + "'");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("input 1 ('w') f32[4x1024x1024x1024]: out of "
                          "memory allocating its 17179869184 bytes (random "
                          "data)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("bad_alloc"), std::string::npos) << r.output;
  r = runCommand("ulimit -v 4000000; '" + std::string(NPY_DIFF_EXE) +
                 "' --make-inputs '" + manifest + "' '" + dir + "/in'");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("input 1 ('w') f32[4x1024x1024x1024]: out of "
                          "memory allocating its 17179869184 bytes"),
            std::string::npos)
      << r.output;
}

TEST(NpyDiff, EmptyToleranceIsRejected) {
  // --rtol "" and --atol "" were read as 0.
  std::string dir = tmpDir("npydiff_empty");
  HostTensor t;
  t.dtype = DType::F32;
  t.shape = {1};
  t.data.resize(4, 0);
  writeNpy(dir + "/a.npy", t);
  std::string exe = std::string("'") + NPY_DIFF_EXE + "'";
  for (const char *opt : {"--rtol", "--atol"}) {
    for (const char *value : {"''", "' 1'", "x", "-1"}) {
      CmdResult r = runCommand(exe + " " + opt + " " + value + " " + dir +
                               "/a.npy " + dir + "/a.npy");
      EXPECT_EQ(r.code, 2) << opt << " " << value << ": " << r.output;
      EXPECT_NE(r.output.find(std::string(opt) + " expects a number >= 0"),
                std::string::npos)
          << r.output;
    }
    CmdResult r =
        runCommand(exe + " " + opt + " 0 " + dir + "/a.npy " + dir + "/a.npy");
    EXPECT_EQ(r.code, 0) << opt << ": " << r.output;
  }
}

TEST(NpyDiff, IntegersAreComparedExactly) {
  // Item 12: i64 values above 2^53 that differ by 1 compared equal in
  // double, even with --rtol 0.
  std::string dir = tmpDir("npydiff");
  auto i64 = [](const std::vector<int64_t> &v) {
    HostTensor t;
    t.dtype = DType::I64;
    t.shape = {int64_t(v.size())};
    t.data.resize(v.size() * 8);
    std::memcpy(t.data.data(), v.data(), t.data.size());
    return t;
  };
  int64_t big = (int64_t(1) << 60) + 1;
  writeNpy(dir + "/a.npy", i64({big, -3, 7}));
  writeNpy(dir + "/b.npy", i64({big + 1, -3, 7}));
  writeNpy(dir + "/c.npy", i64({big, -3, 7}));
  std::string exe = std::string("'") + NPY_DIFF_EXE + "'";
  CmdResult r =
      runCommand(exe + " --rtol 0 " + dir + "/a.npy " + dir + "/b.npy");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("FAIL: 3 elements i64[3], max abs error 1 (element "
                          "0) > bound 0"),
            std::string::npos)
      << r.output;
  r = runCommand(exe + " --rtol 0 " + dir + "/a.npy " + dir + "/c.npy");
  EXPECT_EQ(r.code, 0) << r.output;
  // The tolerance still applies, exactly: 1 <= floor(1e-18 * 2^60 + 0).
  r = runCommand(exe + " --rtol 1e-18 " + dir + "/a.npy " + dir + "/b.npy");
  EXPECT_EQ(r.code, 0) << r.output;
  // Extremes do not overflow.
  writeNpy(dir + "/d.npy", i64({INT64_MIN, 0, 0}));
  writeNpy(dir + "/e.npy", i64({INT64_MAX, 0, 0}));
  r = runCommand(exe + " --rtol 0 " + dir + "/d.npy " + dir + "/e.npy");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("max abs error 18446744073709551615"),
            std::string::npos)
      << r.output;
}

TEST(RandomInput, DataWeightsAndBiases) {
  auto input = [](Shape shape, bool microbatched, DType t = DType::F32) {
    ManifestInput in;
    in.shape = shape;
    in.dtype = t;
    in.microbatched = microbatched;
    return in;
  };
  auto range = [](const HostTensor &t) {
    std::vector<float> v = values(t);
    return std::make_pair(*std::min_element(v.begin(), v.end()),
                          *std::max_element(v.begin(), v.end()));
  };
  // Data [1, 16, 256], 8 microbatches: unscaled [-1, 1), different per
  // microbatch (not scaled by 1/16 into near-equal values).
  HostTensor x = randomInput(input({1, 16, 256}, true), 8, 42);
  EXPECT_EQ(x.shape, (Shape{8, 1, 16, 256}));
  auto [xlo, xhi] = range(x);
  EXPECT_GE(xlo, -1.0f);
  EXPECT_LT(xhi, 1.0f);
  EXPECT_LT(xlo, -0.99f);
  EXPECT_GT(xhi, 0.99f);
  std::vector<float> xv = values(x);
  EXPECT_NE(std::vector<float>(xv.begin(), xv.begin() + 4096),
            std::vector<float>(xv.begin() + 7 * 4096, xv.end()));
  // TOSA matmul weight [1, 256, 32]: leading 1 dropped, fan_in = 32, so
  // within sqrt(3 / 32) = 0.306 (not 1 / sqrt(256 * 32) = 0.011, which
  // counts the leading 1 and the rows).
  HostTensor w = randomInput(input({1, 256, 32}, false), 8, 42);
  EXPECT_EQ(w.shape, (Shape{1, 256, 32}));
  auto [wlo, whi] = range(w);
  double a = std::sqrt(3.0 / 32);
  EXPECT_GE(wlo, -a);
  EXPECT_LE(whi, a);
  EXPECT_LT(wlo, -0.95 * a);
  EXPECT_GT(whi, 0.95 * a);
  // Convolution kernel OIHW [64, 3, 7, 7]: fan_in = 147.
  auto [klo, khi] = range(randomInput(input({64, 3, 7, 7}, false), 1, 3));
  EXPECT_GE(klo, -std::sqrt(3.0 / 147));
  EXPECT_GT(khi, 0.95 * std::sqrt(3.0 / 147));
  // Broadcast bias [1, 1, 256] and plain bias [256]: [0.5, 1.5) (the first
  // was treated as a weight before).
  for (Shape bias : {Shape{1, 1, 256}, Shape{256}, Shape{}}) {
    auto [blo, bhi] = range(randomInput(input(bias, false), 8, 5));
    EXPECT_GE(blo, 0.5f);
    EXPECT_LT(bhi, 1.5f);
  }
  // Deterministic, and the seed matters.
  EXPECT_EQ(randomInput(input({1, 16, 256}, true), 8, 42).data, x.data);
  EXPECT_NE(randomInput(input({1, 16, 256}, true), 8, 43).data, x.data);
  // Integers stay in [0, 10).
  HostTensor ids = randomInput(input({4, 8}, true, DType::I32), 2, 1);
  std::vector<int32_t> iv(ids.data.size() / 4);
  std::memcpy(iv.data(), ids.data.data(), ids.data.size());
  EXPECT_EQ(*std::min_element(iv.begin(), iv.end()), 0);
  EXPECT_EQ(*std::max_element(iv.begin(), iv.end()), 9);
}

#ifdef MPIEXEC
std::string mpiBase(const char *bug = nullptr) {
  std::string env = bug ? std::string("-x PIPEOPT_FAKE_MODEL_BUG=") + bug : "";
  return std::string("'") + MPIEXEC + "' " + MPIEXEC_FLAGS + " " + env +
         " -np 2 " + base() + " --comm=mpi";
}

TEST(RunnerMpi, EndToEnd) {
  std::string dir = tmpDir("mpi");
  Data d;
  writeNpy(dir + "/x.npy", f32({4, 2, 3}, d.x));
  writeNpy(dir + "/w.npy", f32({3}, d.w));
  CmdResult r = runCommand(mpiBase() + " --input 0=" + dir +
                           "/x.npy --input 1=" + dir + "/w.npy --output-dir " +
                           dir + "/out --iterations 2" + " --trace " + dir +
                           "/trace.json --profile " + dir + "/profile.json");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("over mpi"), std::string::npos) << r.output;
  checkOutputs(dir + "/out", d);
  nlohmann::json prof = readJson(dir + "/profile.json");
  EXPECT_EQ(prof["communicator"], "mpi");
  EXPECT_EQ(prof["stages"][1]["count"]["BW"], 8);
  EXPECT_GT(prof["ranks"][1]["recv_s"].get<double>(), 0.0);
}

TEST(RunnerMpi, MismatchAndTimeout) {
  CmdResult r = runCommand(mpiBase("shape") + " --timeout-s 5");
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 1: recv for stage 1 microbatch 0 value 0 "
                          "expected f32[2x4] (32 bytes) but rank 0 sent "
                          "f32[2x3] (24 bytes)"),
            std::string::npos)
      << r.output;
  r = runCommand(mpiBase("stall") + " --timeout-s 1");
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_LT(r.seconds, 30.0);
  EXPECT_NE(r.output.find("timed out after 1 s waiting for rank"),
            std::string::npos)
      << r.output;
}

TEST(RunnerMpi, KilledRankMakesOthersTimeOut) {
  // Rank 0's process is killed (SIGKILL) before it sends anything. With
  // mpirun told not to tear the job down on that, rank 1 must fail on its
  // own with a timeout error naming rank, stage and microbatch, within the
  // configured 2 s (plus start-up), instead of hanging.
  std::string cmd = std::string("'") + MPIEXEC + "' " + MPIEXEC_FLAGS +
                    " --mca orte_abort_on_non_zero_status 0"
                    " -x PIPEOPT_FAKE_MODEL_BUG=kill -np 2 " +
                    base() + " --comm=mpi --timeout-s 2";
  CmdResult r = runCommand(cmd);
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 1: recv for stage 1 microbatch 0 value 0"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("timed out after 2 s waiting for rank 0"),
            std::string::npos)
      << r.output;
  // With 2 ranks there are no others to quote: no empty "the others:".
  EXPECT_NE(r.output.find("rank 0 (stage 0) made no progress"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("the others:"), std::string::npos) << r.output;
  EXPECT_LT(r.seconds, 12.0) << r.output;
}

TEST(RunnerMpi, ParametersReduceOverMpi) {
  // The data-parallel training (gradients summed across the two processes)
  // gives the loopback run's weights bit for bit.
  std::string dir = tmpDir("mpi_params");
  Data d;
  std::string in = paramInputs(dir, d);
  CmdResult r = runCommand(withManifest(FAKE_PDP_MANIFEST) + in +
                           " --steps 3 --quiet --output-dir " + dir + "/lb");
  ASSERT_EQ(r.code, 0) << r.output;
  r = runCommand(std::string("'") + MPIEXEC + "' " + MPIEXEC_FLAGS + " -np 2 " +
                 withManifest(FAKE_PDP_MANIFEST) + " --comm=mpi" + in +
                 " --steps 3 --output-dir " + dir + "/mpi");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("step 3/3: loss"), std::string::npos) << r.output;
  for (const char *f : {"weight_1.npy", "weight_2.npy", "loss.npy"})
    EXPECT_EQ(fileBytes(dir + "/mpi/" + f), fileBytes(dir + "/lb/" + f)) << f;
}

TEST(RunnerMpi, SessionStepsOverMpi) {
  // A Session training loop under mpirun (one process per rank): three
  // run(1) without gathering, each process keeping its rank's parameters,
  // then synchronize() in every process, give pipeopt-run --steps 3's
  // weights and losses bit for bit. Before synchronize(), rank 0's weight()
  // asks for it (code 2).
  std::string dir = tmpDir("mpi_session");
  Data d;
  std::string in = paramInputs(dir, d);
  CmdResult r = runCommand(withManifest(FAKE_PDP_MANIFEST) + in +
                           " --steps 3 --quiet --output-dir " + dir + "/run");
  ASSERT_EQ(r.code, 0) << r.output;
  std::filesystem::create_directories(dir + "/session");
  r = runCommand(std::string("'") + MPIEXEC + "' " + MPIEXEC_FLAGS +
                 " -np 2 '" + SESSION_STEPS_EXE + "' '" + FAKE_MODEL_SO +
                 "' '" + FAKE_PDP_MANIFEST + "' mpi 3 " + dir + "/session 0=" +
                 dir + "/x.npy 1=" + dir + "/w.npy 2=" + dir + "/b.npy");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("session-steps: ok"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("before synchronize: code 2: weight: rank 0 has "
                          "no current copy of the parameters"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("call synchronize() in every process first"),
            std::string::npos)
      << r.output;
  for (const char *f : {"weight_1.npy", "weight_2.npy", "loss.npy"})
    EXPECT_EQ(fileBytes(dir + "/session/" + f), fileBytes(dir + "/run/" + f))
        << f;
}

TEST(RunnerMpi, KilledRankEndsTheJob) {
  // Rank 0's process exits without MPI_Finalize; the job must end (mpirun
  // tears it down, or rank 1 times out) with a nonzero status, never hang.
  CmdResult r = runCommand(mpiBase("exit") + " --timeout-s 2");
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_LT(r.seconds, 60.0);
}
#endif

} // namespace
