//===- SessionTest.cpp - Tests of the runtime's Session API
//----------------===//
//
// Loads the fake models (FakeModel.cpp and its manifests) through
// pipeopt::rt::Session: inputs from memory and .npy files, inference and
// training steps on one and two ranks (loopback threads), outputs and
// weights read back and checked against values computed here, checkpoints
// written and resumed, and the errors of the API. Also the runtime tools'
// ArgParser and the communicator registry.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Session.h"
#include "pipeopt/runtime/ArgParser.h"
#include "pipeopt/runtime/CommRegistry.h"
#include "pipeopt/runtime/Npy.h"
#include "pipeopt/runtime/Runner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace pipeopt::rt;

namespace {

std::string tmpDir(const std::string &name) {
  std::string d = ::testing::TempDir() + "/pipeopt_rt_session_" + name + "_" +
                  std::to_string(::getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

HostTensor f32(Shape shape, const std::vector<float> &v) {
  HostTensor t;
  t.dtype = DType::F32;
  t.shape = std::move(shape);
  t.data.resize(v.size() * 4);
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

std::vector<float> values(const HostTensor &t) {
  std::vector<float> v(t.data.size() / 4);
  std::memcpy(v.data(), t.data.data(), v.size() * 4);
  return v;
}

RunOptions options(const char *manifest) {
  RunOptions o;
  o.modelPath = FAKE_MODEL_SO;
  o.manifestPath = manifest;
  o.quiet = true;
  o.threads = 1;
  return o;
}

/// x of the fake models: f32[4x2x3] (4 microbatches of [2x3]), element k =
/// (k % 7 - 3) / 4.
std::vector<float> xData() {
  std::vector<float> x(24);
  for (int k = 0; k < 24; ++k)
    x[size_t(k)] = float(k % 7 - 3) / 4.0f;
  return x;
}

#define ASSERT_OK(expr)                                                        \
  do {                                                                         \
    Status st_ = (expr);                                                       \
    ASSERT_TRUE(st_.ok()) << st_.message();                                    \
  } while (0)

/// Expects `st` to fail with `code` and a message containing `text`.
void expectError(const Status &st, int code, const std::string &text) {
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), code) << st.message();
  EXPECT_NE(st.message().find(text), std::string::npos) << st.message();
}

} // namespace

//===----------------------------------------------------------------------===//
// Inference (fake_model: 2 ranks, y = x * w + 1, grad_sum = sum_mb 2 y)
//===----------------------------------------------------------------------===//

TEST(Session, InferenceOutputsFromMemoryInputs) {
  Session s;
  ASSERT_OK(s.load(options(FAKE_MANIFEST)));
  EXPECT_TRUE(s.loaded());
  EXPECT_TRUE(s.hasRank0());
  EXPECT_EQ(s.manifest().numRanks, 2);
  std::vector<float> x = xData(), w = {1.0f, -2.0f, 0.5f};
  ASSERT_OK(s.setInput("x", f32({4, 2, 3}, x)));
  ASSERT_OK(s.setInput(1, f32({3}, w)));
  ASSERT_OK(s.step());
  EXPECT_EQ(s.stepsDone(), 1);

  HostTensor y, g;
  ASSERT_OK(s.output("y", y));
  ASSERT_OK(s.output(1, g));
  ASSERT_EQ(y.shape, (Shape{4, 2, 3}));
  ASSERT_EQ(g.shape, (Shape{2, 3}));
  std::vector<float> yv = values(y), gv = values(g);
  std::vector<float> sum(6, 0.0f);
  for (int k = 0; k < 24; ++k) {
    float expect = x[size_t(k)] * w[size_t(k % 3)] + 1.0f;
    EXPECT_EQ(yv[size_t(k)], expect) << "y element " << k;
    sum[size_t(k % 6)] += 2.0f * expect;
  }
  for (int k = 0; k < 6; ++k)
    EXPECT_EQ(gv[size_t(k)], sum[size_t(k)]) << "grad_sum element " << k;

  // Another iteration with a new w: the outputs follow.
  ASSERT_OK(s.setInput("w", f32({3}, {2.0f, 2.0f, 2.0f})));
  ASSERT_OK(s.run(2));
  EXPECT_EQ(s.stepsDone(), 3);
  ASSERT_OK(s.output("y", y));
  EXPECT_EQ(values(y)[5], x[5] * 2.0f + 1.0f);
}

TEST(Session, InputsFromNpyInEveryForm) {
  std::string dir = tmpDir("npy");
  std::vector<float> x = xData(), w = {0.25f, 4.0f, -1.0f};
  // The whole batch [M*2, 3], split along dim 0 into the microbatches.
  writeNpy(dir + "/x.npy", f32({8, 3}, x));
  writeNpy(dir + "/w.npy", f32({3}, w));
  Session s;
  ASSERT_OK(s.load(options(FAKE_MANIFEST)));
  ASSERT_OK(s.setInputFromNpy("x", dir + "/x.npy"));
  ASSERT_OK(s.setInputFromNpy("w", dir + "/w.npy"));
  ASSERT_OK(s.step());
  HostTensor y;
  ASSERT_OK(s.output("y", y));
  ASSERT_EQ(y.shape, (Shape{4, 2, 3}));
  std::vector<float> yv = values(y);
  for (int k = 0; k < 24; ++k)
    EXPECT_EQ(yv[size_t(k)], x[size_t(k)] * w[size_t(k % 3)] + 1.0f);
}

/// y of the fake model for the inputs of runtime/test/inputs/*.npz.
void expectYOfInputSet(Session &s) {
  std::vector<float> x = xData(), w = {0.25f, 4.0f, -1.0f};
  HostTensor y;
  ASSERT_OK(s.output("y", y));
  ASSERT_EQ(y.shape, (Shape{4, 2, 3}));
  std::vector<float> yv = values(y);
  for (int k = 0; k < 24; ++k)
    EXPECT_EQ(yv[size_t(k)], x[size_t(k)] * w[size_t(k % 3)] + 1.0f)
        << "y element " << k;
}

TEST(Session, InputsFromNpzAndDirectory) {
  std::string in = FAKE_INPUTS_DIR;
  // numpy.savez (stored entries), named "x" and "arg_1".
  {
    Session s;
    ASSERT_OK(s.load(options(FAKE_MANIFEST)));
    ASSERT_OK(s.setInputsFrom(in + "/fake_inputs.npz"));
    ASSERT_OK(s.step());
    expectYOfInputSet(s);
  }
  // numpy.savez_compressed (deflated), named "0" and "w".
  {
    Session s;
    ASSERT_OK(s.load(options(FAKE_MANIFEST)));
    ASSERT_OK(s.setInputsFrom(in + "/fake_inputs_deflated.npz"));
    ASSERT_OK(s.step());
    expectYOfInputSet(s);
  }
  // A directory of .npy files ("arg0.npy", "input_1.npy"); other files are
  // not read.
  std::string dir = tmpDir("inputset");
  writeNpy(dir + "/arg0.npy", f32({8, 3}, xData()));
  writeNpy(dir + "/input_1.npy", f32({3}, {0.25f, 4.0f, -1.0f}));
  { std::ofstream(dir + "/README") << "not an input"; }
  {
    Session s;
    ASSERT_OK(s.load(options(FAKE_MANIFEST)));
    ASSERT_OK(s.setInputsFrom(dir));
    ASSERT_OK(s.step());
    expectYOfInputSet(s);
  }
  // An --input file (options.inputFiles) overrides the set's entry; a later
  // setInput replaces one.
  {
    std::string odir = tmpDir("inputset_override");
    writeNpy(odir + "/w.npy", f32({3}, {1.0f, 1.0f, 1.0f}));
    RunOptions o = options(FAKE_MANIFEST);
    o.inputFiles[1] = {odir + "/w.npy"};
    Session s;
    ASSERT_OK(s.load(o));
    ASSERT_OK(s.setInputsFrom(in + "/fake_inputs.npz"));
    ASSERT_OK(s.step());
    HostTensor y;
    ASSERT_OK(s.output("y", y));
    EXPECT_EQ(values(y)[1], xData()[1] + 1.0f);
    ASSERT_OK(s.setInput("x", f32({8, 3}, std::vector<float>(24, 2.0f))));
    ASSERT_OK(s.step());
    ASSERT_OK(s.output("y", y));
    EXPECT_EQ(values(y)[0], 3.0f);
  }
}

TEST(Session, InputSetErrorsNameFileAndEntry) {
  std::string in = FAKE_INPUTS_DIR;
  Session s;
  ASSERT_OK(s.load(options(FAKE_MANIFEST)));
  expectError(s.setInputsFrom(in + "/fake_inputs_unknown.npz"), 2,
              in + "/fake_inputs_unknown.npz: entry 'z.npy' names no model "
                   "input: entries are named by input index ('3', 'arg_3', "
                   "'arg3' or 'input_3', with or without '.npy') or by the "
                   "manifest's input name; this model's inputs are 0 ('x'), "
                   "1 ('w')");
  expectError(s.setInputsFrom(in + "/fake_inputs_twice.npz"), 2,
              "entries 'x.npy' and 'arg0.npy' both name input 0");
  expectError(s.setInputsFrom(in + "/fake_inputs_badshape.npz"), 2,
              in + "/fake_inputs_badshape.npz:w.npy: input 1 must be f32[3] "
                   "but the file is f32[4]");
  expectError(s.setInputsFrom(in + "/not_a_zip.npz"), 2,
              in + "/not_a_zip.npz: not a directory or a readable .npz "
                   "archive");
  expectError(s.setInputsFrom(in + "/missing.npz"), 2,
              in + "/missing.npz: cannot read the inputs: No such file");
  std::string dir = tmpDir("inputset_bad");
  expectError(s.setInputsFrom(dir), 2,
              dir + ": the directory holds no .npy file");
  { std::ofstream(dir + "/0.npy") << "hello"; }
  expectError(s.setInputsFrom(dir), 2, dir + "/0.npy: not a .npy file");
  // All or nothing: the session is usable after the errors, and nothing
  // was set.
  expectError(s.step(), 2, "was not set");
}

TEST(Session, ADatasetGivesEveryStepItsSlice) {
  RunOptions o = options(FAKE_MANIFEST);
  o.iterations = 2; // the steps the session will run in all
  Session s;
  ASSERT_OK(s.load(o));
  std::vector<float> x = xData(), data = x;
  for (float v : x)
    data.push_back(v * 3.0f); // step 2's slice
  ASSERT_OK(s.setInput("x", f32({2, 4, 2, 3}, data)));
  ASSERT_OK(s.setInput("w", f32({3}, {1.0f, 1.0f, 1.0f})));
  ASSERT_OK(s.step());
  HostTensor y;
  ASSERT_OK(s.output("y", y));
  EXPECT_EQ(values(y)[1], x[1] + 1.0f);
  ASSERT_OK(s.step());
  ASSERT_OK(s.output("y", y));
  EXPECT_EQ(values(y)[1], x[1] * 3.0f + 1.0f);
  // A third step has no data.
  expectError(s.step(), 2,
              "input 0 is a dataset of 2 step(s), but steps 3 "
              "to 3 were asked for");
  // A dataset of another length than the session's steps is refused.
  expectError(s.setInput("x", f32({3, 4, 2, 3}, std::vector<float>(72))), 2,
              "is a dataset of 3 step(s)");
}

TEST(Session, RandomInputsAreTheSeededOnes) {
  Session s;
  ASSERT_OK(s.load(options(FAKE_MANIFEST)));
  s.setRandomInputs(true, 42);
  ASSERT_OK(s.step());
  const Manifest &m = s.manifest();
  std::vector<float> x =
      values(randomInput(*m.findInput(0), m.numMicrobatches, inputSeed(42, 0)));
  std::vector<float> w =
      values(randomInput(*m.findInput(1), m.numMicrobatches, inputSeed(42, 1)));
  HostTensor y;
  ASSERT_OK(s.output("y", y));
  std::vector<float> yv = values(y);
  ASSERT_EQ(yv.size(), 24u);
  for (int k = 0; k < 24; ++k)
    EXPECT_EQ(yv[size_t(k)], x[size_t(k)] * w[size_t(k % 3)] + 1.0f);
}

TEST(Session, InputErrorsNameTheProblem) {
  Session s;
  // Nothing loaded yet.
  expectError(s.setInput("x", f32({3}, {1, 2, 3})), 2, "no build is loaded");
  ASSERT_OK(s.load(options(FAKE_MANIFEST)));
  // Unknown name and index.
  expectError(s.setInput("z", f32({3}, {1, 2, 3})), 2,
              "has no input named 'z' (inputs: x, w)");
  expectError(s.setInput(7, f32({3}, {1, 2, 3})), 2,
              "lists no input with index 7");
  // Wrong shape and dtype.
  expectError(s.setInput("w", f32({4}, {1, 2, 3, 4})), 2,
              "input 1 ('w'): input 1 must be f32[3] but the file is f32[4]: "
              "the build takes input 1 as a shared input (\"microbatched\": "
              "false in the manifest: the same tensor for every "
              "microbatch), which has exactly the shape the model was "
              "compiled with. If input 1 is per-example data, recompile "
              "with pipeopt-compile --microbatch-args=0,1: pipeopt-run "
              "then takes the whole batch and splits it into 4 "
              "microbatches along dim 0");
  // The whole batch of a shared input: the message says what it would be,
  // and never asks for a slice of it.
  Status whole = s.setInput("w", f32({12}, std::vector<float>(12, 1.0f)));
  expectError(whole, 2,
              "If input 1 is per-example data (the file would then be the "
              "whole batch: 4 microbatches of f32[3] along dim 0), recompile "
              "with pipeopt-compile --microbatch-args=0,1");
  EXPECT_EQ(whole.message().find("slice"), std::string::npos)
      << whole.message();
  HostTensor i64;
  i64.dtype = DType::I64;
  i64.shape = {3};
  i64.data.resize(24);
  expectError(s.setInput("w", i64), 2,
              "has dtype i64 but the manifest says f32");
  expectError(s.setInput("x", f32({2, 3}, std::vector<float>(6, 1.0f))), 2,
              "is microbatched data (\"microbatched\": true in the "
              "manifest; pipeopt-compile --microbatch-args) with "
              "per-microbatch shape f32[2x3] and 4 "
              "microbatches, so the file must be f32[4x2x3] or f32[8x3]");
  // Bad paths.
  expectError(s.setInputFromNpy("x", "/nonexistent/x.npy"), 2,
              "/nonexistent/x.npy");
  expectError(s.setInputFromNpy("q", "/nonexistent/x.npy"), 2,
              "has no input named 'q'");
  // A missing input fails the run, not the process; the session stays
  // usable.
  ASSERT_OK(s.setInput("x", f32({4, 2, 3}, xData())));
  expectError(s.step(), 2, "input 1 ('w') of f32[3] was not set");
  HostTensor y;
  expectError(s.output("y", y), 2, "no run has completed");
  ASSERT_OK(s.setInput("w", f32({3}, {1, 1, 1})));
  ASSERT_OK(s.step());
  ASSERT_OK(s.output("y", y));
  EXPECT_EQ(values(y)[0], xData()[0] + 1.0f);
  // Unknown outputs, run(0).
  expectError(s.output("nope", y), 2, "has no output named 'nope'");
  expectError(s.output(9, y), 2, "lists no output with index 9");
  expectError(s.run(0), 2, "at least 1");
}

TEST(Session, LoadErrors) {
  {
    Session s;
    RunOptions o = options(FAKE_MANIFEST);
    o.modelPath = "/nonexistent/model.so";
    expectError(s.load(o), 2, "/nonexistent/model.so");
    EXPECT_FALSE(s.loaded());
    EXPECT_FALSE(s.usesMpi());
  }
  {
    Session s;
    expectError(s.load(options("/nonexistent/m.manifest.json")), 2,
                "/nonexistent/m.manifest.json: cannot open manifest");
  }
  {
    Session s;
    RunOptions o = options(FAKE_MANIFEST);
    o.comm = "tcp";
    expectError(s.load(o), 2, "--comm must be loopback, mpi or nccl");
  }
  {
    Session s;
    ASSERT_OK(s.load(options(FAKE_MANIFEST)));
    expectError(s.load(options(FAKE_MANIFEST)), 2, "already loaded");
  }
  {
    // Without a manifest path: <model stem>.manifest.json, as documented.
    Session s;
    RunOptions o = options(FAKE_MANIFEST);
    o.manifestPath.clear();
    std::string model = FAKE_MODEL_SO;
    std::string expected = model.substr(0, model.rfind('.')) + ".manifest.json";
    expectError(s.load(o), 2, expected + ": cannot open manifest");
  }
}

TEST(Session, OutputsAreNotKeptWhenNotCollected) {
  Session s;
  ASSERT_OK(s.load(options(FAKE_MANIFEST)));
  s.setCollectOutputs(false);
  s.setRandomInputs(true, 1);
  ASSERT_OK(s.step());
  HostTensor y;
  expectError(s.output("y", y), 2, "did not collect them");
}

//===----------------------------------------------------------------------===//
// Training with parameters (fake_ptrain / fake_pdp: y = x * w + b, loss =
// mean(y^2), SGD with lr 0.1)
//===----------------------------------------------------------------------===//

namespace {

struct Weights {
  std::vector<float> w, b;
  float loss = 0;
};

/// One SGD step of the fake model, computed here as the model and the
/// runtime compute it: per-microbatch gradients in f32, their sum over the
/// microbatches in f64, the mean, the update in f64, rounded to f32.
Weights referenceStep(const std::vector<float> &x, const Weights &in) {
  std::vector<double> gw(3, 0.0), gb(3, 0.0);
  double loss = 0;
  for (int mb = 0; mb < 4; ++mb) {
    float y[6], l = 0, mw[3] = {0, 0, 0}, mbias[3] = {0, 0, 0};
    for (int i = 0; i < 6; ++i) {
      float xi = x[size_t(mb * 6 + i)];
      y[i] = xi * in.w[size_t(i % 3)] + in.b[size_t(i % 3)];
      l += y[i] * y[i] / 6.0f;
    }
    for (int i = 0; i < 6; ++i) {
      float dy = 2.0f * y[i] / 6.0f;
      mbias[i % 3] += dy;
      mw[i % 3] += dy * x[size_t(mb * 6 + i)];
    }
    for (int j = 0; j < 3; ++j) {
      gw[size_t(j)] += mw[j];
      gb[size_t(j)] += mbias[j];
    }
    loss += l;
  }
  Weights out;
  for (int j = 0; j < 3; ++j) {
    out.w.push_back(float(double(in.w[size_t(j)]) - 0.1 * (gw[size_t(j)] / 4)));
    out.b.push_back(float(double(in.b[size_t(j)]) - 0.1 * (gb[size_t(j)] / 4)));
  }
  out.loss = float(loss / 4);
  return out;
}

void setTrainingInputs(Session &s, const Weights &start) {
  ASSERT_OK(s.setInput("x", f32({4, 2, 3}, xData())));
  ASSERT_OK(s.setInput("w", f32({3}, start.w)));
  ASSERT_OK(s.setInput("b", f32({3}, start.b)));
}

Weights weightsOf(const Session &s) {
  Weights r;
  HostTensor w, b;
  Status st = s.weight("w", w);
  EXPECT_TRUE(st.ok()) << st.message();
  st = s.weight("b", b);
  EXPECT_TRUE(st.ok()) << st.message();
  r.w = values(w);
  r.b = values(b);
  return r;
}

const Weights kStart = {{0.5f, -1.0f, 2.0f}, {0.1f, 0.2f, -0.3f}, 0};

} // namespace

TEST(SessionTraining, OneStepMatchesTheReferenceUpdate) {
  Session s;
  ASSERT_OK(s.load(options(FAKE_PTRAIN_MANIFEST)));
  setTrainingInputs(s, kStart);
  HostTensor w;
  expectError(s.weight("w", w), 2, "no weights yet");
  ASSERT_OK(s.step());
  Weights expect = referenceStep(xData(), kStart);
  Weights got = weightsOf(s);
  ASSERT_EQ(got.w.size(), 3u);
  ASSERT_EQ(got.b.size(), 3u);
  for (int j = 0; j < 3; ++j) {
    EXPECT_FLOAT_EQ(got.w[size_t(j)], expect.w[size_t(j)]) << "w " << j;
    EXPECT_FLOAT_EQ(got.b[size_t(j)], expect.b[size_t(j)]) << "b " << j;
    // The step moved the weights.
    EXPECT_NE(got.w[size_t(j)], kStart.w[size_t(j)]);
  }
  // By input index too (models whose inputs have no names): w is input 1.
  HostTensor byIndex;
  ASSERT_OK(s.weight(1, byIndex));
  EXPECT_EQ(values(byIndex), got.w);
  expectError(s.weight(0, byIndex), 2, "input 0 is not a parameter");
  expectError(s.weight(7, byIndex), 2, "input index 7 is out of range");
  ASSERT_EQ(s.losses().size(), 1u);
  EXPECT_NEAR(s.losses()[0], expect.loss, 1e-6 * std::fabs(expect.loss));
  // Two more steps continue from the updated weights.
  ASSERT_OK(s.run(2));
  Weights e3 = referenceStep(xData(), referenceStep(xData(), expect));
  Weights g3 = weightsOf(s);
  for (int j = 0; j < 3; ++j)
    EXPECT_FLOAT_EQ(g3.w[size_t(j)], e3.w[size_t(j)]);
  ASSERT_EQ(s.losses().size(), 3u);
  EXPECT_LT(s.losses()[2], s.losses()[0]); // gradient descent
  EXPECT_EQ(s.stepsDone(), 3);
}

TEST(SessionTraining, StepByStepEqualsOneRunBitForBit) {
  Session a, b;
  ASSERT_OK(a.load(options(FAKE_PTRAIN_MANIFEST)));
  ASSERT_OK(b.load(options(FAKE_PTRAIN_MANIFEST)));
  setTrainingInputs(a, kStart);
  setTrainingInputs(b, kStart);
  ASSERT_OK(a.run(4));
  for (int i = 0; i < 4; ++i)
    ASSERT_OK(b.step());
  Weights wa = weightsOf(a), wb = weightsOf(b);
  EXPECT_EQ(wa.w, wb.w);
  EXPECT_EQ(wa.b, wb.b);
  EXPECT_EQ(a.losses(), b.losses());
}

TEST(SessionTraining, TwoRanksDataParallelMatchTheReference) {
  Session s;
  ASSERT_OK(s.load(options(FAKE_PDP_MANIFEST)));
  EXPECT_EQ(s.manifest().numRanks, 2);
  setTrainingInputs(s, kStart);
  ASSERT_OK(s.run(2));
  Weights expect = referenceStep(xData(), referenceStep(xData(), kStart));
  Weights got = weightsOf(s);
  for (int j = 0; j < 3; ++j) {
    EXPECT_FLOAT_EQ(got.w[size_t(j)], expect.w[size_t(j)]) << "w " << j;
    EXPECT_FLOAT_EQ(got.b[size_t(j)], expect.b[size_t(j)]) << "b " << j;
  }
  ASSERT_EQ(s.losses().size(), 2u);
}

TEST(SessionTraining, CheckpointAndResumeContinueExactly) {
  std::string dir = tmpDir("ck");
  Session full;
  ASSERT_OK(full.load(options(FAKE_PPIPE_MANIFEST)));
  setTrainingInputs(full, kStart);
  ASSERT_OK(full.run(3));

  Session first;
  ASSERT_OK(first.load(options(FAKE_PPIPE_MANIFEST)));
  setTrainingInputs(first, kStart);
  expectError(first.writeCheckpoint(dir + "/ck"), 2, "no weights to write");
  ASSERT_OK(first.run(2));
  ASSERT_OK(first.writeCheckpoint(dir + "/ck"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/ck/step-2/checkpoint.json"));
  Checkpoint c = readCheckpoint(first.manifest(), dir + "/ck");
  EXPECT_EQ(c.step, 2);
  EXPECT_EQ(values(c.parameters.at(1).value), weightsOf(first).w);

  Session resumed;
  ASSERT_OK(resumed.load(options(FAKE_PPIPE_MANIFEST)));
  ASSERT_OK(resumed.setInput("x", f32({4, 2, 3}, xData())));
  // The parameters come from the checkpoint; their inputs need no data.
  ASSERT_OK(resumed.setInput("w", f32({3}, {0, 0, 0})));
  ASSERT_OK(resumed.setInput("b", f32({3}, {0, 0, 0})));
  std::vector<std::string> notes;
  ASSERT_OK(resumed.resume(dir + "/ck", &notes));
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(resumed.stepsDone(), 2);
  EXPECT_EQ(weightsOf(resumed).w, weightsOf(first).w);
  ASSERT_OK(resumed.step());
  EXPECT_EQ(resumed.stepsDone(), 3);
  EXPECT_EQ(weightsOf(resumed).w, weightsOf(full).w);
  EXPECT_EQ(weightsOf(resumed).b, weightsOf(full).b);
  EXPECT_EQ(resumed.losses(), full.losses());
}

TEST(SessionTraining, CheckpointErrors) {
  std::string dir = tmpDir("ckerr");
  Session inference;
  ASSERT_OK(inference.load(options(FAKE_MANIFEST)));
  expectError(inference.resume(dir), 2, "has no \"parameters\"");
  expectError(inference.writeCheckpoint(dir), 2, "has no \"parameters\"");
  HostTensor t;
  expectError(inference.weight("w", t), 2, "is not a parameter");

  Session s;
  ASSERT_OK(s.load(options(FAKE_PTRAIN_MANIFEST)));
  expectError(s.resume(dir + "/none"), 2, dir + "/none");
  // An empty directory holds no checkpoint.
  expectError(s.resume(dir), 2, "no complete checkpoint in " + dir);
  expectError(s.weight("x", t), 2, "is not a parameter");
  expectError(s.weight("nope", t), 2, "has no input named 'nope'");
}

//===----------------------------------------------------------------------===//
// Training loops of run(1): the state the ranks keep between runs
//===----------------------------------------------------------------------===//

namespace {

/// A copy of the manifest at `base` whose "training" is `training` (JSON),
/// written into `dir`: the fake models with another optimizer.
std::string manifestWithTraining(const std::string &dir, const char *base,
                                 const std::string &training) {
  std::ifstream in(base);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::string key = "\"training\": ";
  size_t at = text.find(key);
  EXPECT_NE(at, std::string::npos);
  size_t end = text.find('}', at);
  text = text.substr(0, at + key.size()) + training + text.substr(end + 1);
  std::string path = dir + "/manifest.json";
  std::ofstream(path) << text;
  return path;
}

const char *kAdamW = R"({"optimizer": "adamw", "lr": 0.05, "beta1": 0.9, )"
                     R"("beta2": 0.99, "eps": 1e-8, "weight_decay": 0.01})";

/// The bytes of `t` (bit-for-bit comparisons).
std::vector<uint8_t> bytesOf(const Session &s, const std::string &name) {
  HostTensor t;
  Status st = s.weight(name, t);
  EXPECT_TRUE(st.ok()) << st.message();
  return t.data;
}

struct Moments {
  HostTensor first, second;
  int64_t step = -1;
};

Moments momentsOf(const Session &s, const std::string &name) {
  Moments r;
  Status st = s.optimizerState(name, r.first, r.second, r.step);
  EXPECT_TRUE(st.ok()) << st.message();
  return r;
}

HostTensor f64(Shape shape, const std::vector<double> &v) {
  HostTensor t;
  t.dtype = DType::F64;
  t.shape = std::move(shape);
  t.data.resize(v.size() * 8);
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

} // namespace

TEST(SessionLoop, StepsWithoutGatheringEqualOneRunBitForBit) {
  // Twenty run(1) without gathering, then synchronize(), give one
  // run(20)'s weights, optimizer state and losses bit for bit: each rank
  // carries its parameters and AdamW moments from run to run. On the
  // data-parallel build (both ranks hold every parameter) and the
  // pipelined one (each parameter on one rank).
  std::string dir = tmpDir("loop");
  for (const char *base : {FAKE_PDP_MANIFEST, FAKE_PPIPE_MANIFEST}) {
    SCOPED_TRACE(base);
    std::string manifest = manifestWithTraining(dir, base, kAdamW);
    Session one, loop;
    ASSERT_OK(one.load(options(manifest.c_str())));
    ASSERT_OK(loop.load(options(manifest.c_str())));
    setTrainingInputs(one, kStart);
    setTrainingInputs(loop, kStart);
    ASSERT_OK(one.run(20));
    loop.setGatherAfterRun(false);
    for (int i = 0; i < 20; ++i)
      ASSERT_OK(loop.run(1));
    EXPECT_EQ(loop.stepsDone(), 20);
    // The losses reach rank 0 without a gather.
    EXPECT_EQ(loop.losses(), one.losses());
    ASSERT_OK(loop.synchronize());
    for (const char *name : {"w", "b"}) {
      EXPECT_EQ(bytesOf(loop, name), bytesOf(one, name)) << name;
      Moments a = momentsOf(one, name), b = momentsOf(loop, name);
      EXPECT_EQ(a.step, 20);
      EXPECT_EQ(b.step, 20);
      EXPECT_EQ(a.first.shape, Shape({3}));
      EXPECT_EQ(a.first.data.size(), 24u);
      EXPECT_EQ(b.first.data, a.first.data) << name;
      EXPECT_EQ(b.second.data, a.second.data) << name;
    }
    ASSERT_EQ(loop.losses().size(), 20u);
    EXPECT_LT(loop.losses()[19], loop.losses()[0]);
  }
}

TEST(SessionLoop, LoopbackGathersAStaleCopyByItself) {
  // Without synchronize(), weight() and writeCheckpoint() of a loopback
  // session gather first; the checkpoint resumes to the same weights.
  std::string dir = tmpDir("stale");
  Session one, loop;
  ASSERT_OK(one.load(options(FAKE_PDP_MANIFEST)));
  ASSERT_OK(loop.load(options(FAKE_PDP_MANIFEST)));
  setTrainingInputs(one, kStart);
  setTrainingInputs(loop, kStart);
  ASSERT_OK(one.run(3));
  loop.setGatherAfterRun(false);
  HostTensor t;
  expectError(loop.weight("w", t), 2, "no weights yet");
  for (int i = 0; i < 3; ++i)
    ASSERT_OK(loop.step());
  EXPECT_EQ(bytesOf(loop, "w"), bytesOf(one, "w"));
  ASSERT_OK(loop.step()); // stale again
  ASSERT_OK(loop.writeCheckpoint(dir + "/ck"));
  Checkpoint c = readCheckpoint(loop.manifest(), dir + "/ck");
  EXPECT_EQ(c.step, 4);
  ASSERT_OK(one.step());
  EXPECT_EQ(c.parameters.at(1).value.data, bytesOf(one, "w"));
  EXPECT_EQ(c.parameters.at(2).value.data, bytesOf(one, "b"));
}

TEST(SessionLoop, SetWeightThenAStepEqualsAFreshSession) {
  // After two steps, new values for w and b (on both ranks of the
  // data-parallel build), then one step: the same as a fresh session whose
  // inputs held those values. AdamW's moments are reset with them.
  std::string dir = tmpDir("setw");
  const Weights next = {{0.25f, 0.75f, -1.5f}, {-0.2f, 0.05f, 0.4f}, 0};
  for (bool adamw : {false, true}) {
    SCOPED_TRACE(adamw ? "adamw" : "sgd");
    std::string manifest =
        adamw ? manifestWithTraining(dir, FAKE_PDP_MANIFEST, kAdamW)
              : std::string(FAKE_PDP_MANIFEST);
    Session s, fresh;
    ASSERT_OK(s.load(options(manifest.c_str())));
    ASSERT_OK(fresh.load(options(manifest.c_str())));
    setTrainingInputs(s, kStart);
    setTrainingInputs(fresh, next);
    s.setGatherAfterRun(false);
    ASSERT_OK(s.run(2));
    ASSERT_OK(s.setWeight("w", f32({3}, next.w)));
    ASSERT_OK(s.setWeight(2, f32({3}, next.b))); // b by index
    if (adamw) {
      ASSERT_OK(s.setOptimizerState("w", HostTensor(), HostTensor(), 0));
      ASSERT_OK(s.setOptimizerState(2, HostTensor(), HostTensor(), 0));
    }
    // The new value reads back before any step.
    EXPECT_EQ(values([&] {
                HostTensor t;
                EXPECT_TRUE(s.weight("w", t).ok());
                return t;
              }()),
              next.w);
    ASSERT_OK(s.step());
    ASSERT_OK(fresh.step());
    EXPECT_EQ(bytesOf(s, "w"), bytesOf(fresh, "w"));
    EXPECT_EQ(bytesOf(s, "b"), bytesOf(fresh, "b"));
    ASSERT_EQ(s.losses().size(), 3u);
    EXPECT_EQ(s.losses()[2], fresh.losses()[0]);
    // The step moved them (the comparison is not of untouched values).
    EXPECT_NE(values(f32({3}, next.w)), values([&] {
                HostTensor t;
                EXPECT_TRUE(s.weight("w", t).ok());
                return t;
              }()));
  }

  // Before the first run, setWeight overrides the input's value.
  Session early, fresh;
  ASSERT_OK(early.load(options(FAKE_PPIPE_MANIFEST)));
  ASSERT_OK(fresh.load(options(FAKE_PPIPE_MANIFEST)));
  setTrainingInputs(early, kStart);
  setTrainingInputs(fresh, next);
  ASSERT_OK(early.setWeight("w", f32({3}, next.w)));
  ASSERT_OK(early.setWeight("b", f32({3}, next.b)));
  ASSERT_OK(early.run(2));
  ASSERT_OK(fresh.run(2));
  EXPECT_EQ(bytesOf(early, "w"), bytesOf(fresh, "w"));
  EXPECT_EQ(bytesOf(early, "b"), bytesOf(fresh, "b"));
  EXPECT_EQ(early.losses(), fresh.losses());
}

TEST(SessionLoop, SetWeightErrors) {
  Session s;
  ASSERT_OK(s.load(options(FAKE_PTRAIN_MANIFEST)));
  expectError(s.setWeight("w", f32({4}, {1, 2, 3, 4})), 2,
              "setWeight: parameter 1 ('w') is f32[3], got f32[4]");
  HostTensor wrongType = f64({3}, {1, 2, 3});
  expectError(s.setWeight("b", wrongType), 2,
              "parameter 2 ('b') is f32[3], got f64[3]");
  expectError(s.setWeight("x", f32({2, 3}, {1, 2, 3, 4, 5, 6})), 2,
              "input 0 is not a parameter");
  expectError(s.setWeight("nope", f32({3}, {1, 2, 3})), 2,
              "has no input named 'nope'");
  expectError(s.setWeight(9, f32({3}, {1, 2, 3})), 2,
              "lists no input with index 9");
  // The ranks' state is made from the inputs: they must be complete.
  expectError(s.setWeight("w", f32({3}, {1, 2, 3})), 2, "was not set");
  // SGD keeps no moments.
  setTrainingInputs(s, kStart);
  expectError(s.setOptimizerState("w", f64({3}, {1, 2, 3}), HostTensor(), 1), 2,
              "the optimizer 'sgd' keeps no first moment");
  ASSERT_OK(s.setOptimizerState("w", HostTensor(), HostTensor(), 4));
  ASSERT_OK(s.step());
  Moments m = momentsOf(s, "w");
  EXPECT_EQ(m.step, 5);
  EXPECT_TRUE(m.first.data.empty());
  EXPECT_TRUE(m.second.data.empty());
}

TEST(SessionLoop, ABatchPerStepEqualsADataset) {
  // A loop that sets the next batch before each run(1) (the prepared
  // inputs take it in place) trains as one run(3) over a dataset of the
  // three batches.
  std::vector<float> data;
  for (int k = 0; k < 3; ++k)
    for (float v : xData())
      data.push_back(v * float(k + 1) - 0.125f * float(k));
  RunOptions o = options(FAKE_PDP_MANIFEST);
  o.iterations = 3;
  Session whole, loop;
  ASSERT_OK(whole.load(o));
  ASSERT_OK(loop.load(o));
  setTrainingInputs(whole, kStart);
  setTrainingInputs(loop, kStart);
  ASSERT_OK(whole.setInput("x", f32({3, 4, 2, 3}, data)));
  ASSERT_OK(whole.run(3));
  loop.setGatherAfterRun(false);
  for (int k = 0; k < 3; ++k) {
    std::vector<float> batch(data.begin() + 24 * k,
                             data.begin() + 24 * (k + 1));
    ASSERT_OK(loop.setInput("x", f32({4, 2, 3}, batch)));
    ASSERT_OK(loop.run(1));
  }
  EXPECT_EQ(loop.losses(), whole.losses());
  EXPECT_NE(loop.losses()[0], loop.losses()[1]);
  EXPECT_EQ(bytesOf(loop, "w"), bytesOf(whole, "w"));
  EXPECT_EQ(bytesOf(loop, "b"), bytesOf(whole, "b"));
}

TEST(SessionLoop, ReleasedParameterInputs) {
  // With the inputs' copies of the parameters freed after the first run
  // (setReleaseParameterInputs, as pipeopt-run does), training, a failed
  // run continued from the gathered state, and resume() give the bits of a
  // session that keeps them.
  std::string dir = tmpDir("released");
  Session keep, freed;
  for (Session *x : {&keep, &freed}) {
    ASSERT_OK(x->load(options(FAKE_PDP_MANIFEST)));
    setTrainingInputs(*x, kStart);
  }
  freed.setReleaseParameterInputs(true);
  ASSERT_OK(keep.run(2));
  ASSERT_OK(freed.run(2));
  EXPECT_EQ(bytesOf(freed, "w"), bytesOf(keep, "w"));
  ASSERT_OK(freed.writeCheckpoint(dir + "/ck"));
  ::setenv("PIPEOPT_FAKE_MODEL_BUG", "p-none", 1);
  Status failed = freed.run(1);
  ::unsetenv("PIPEOPT_FAKE_MODEL_BUG");
  expectError(failed, 1, "rank");
  ASSERT_OK(keep.run(1));
  ASSERT_OK(freed.run(1)); // from the state gathered after step 2
  EXPECT_EQ(bytesOf(freed, "w"), bytesOf(keep, "w"));
  EXPECT_EQ(bytesOf(freed, "b"), bytesOf(keep, "b"));
  ASSERT_OK(freed.resume(dir + "/ck"));
  ASSERT_OK(freed.run(1));
  EXPECT_EQ(bytesOf(freed, "w"), bytesOf(keep, "w"));
  EXPECT_EQ(freed.losses(), keep.losses());
}

TEST(SessionLoop, AfterAFailedRun) {
  // A failed run (rank 1 reports no gradient of w: PIPEOPT_FAKE_MODEL_BUG
  // p-none) does not count: a loopback session that gathered after its
  // last run continues from that copy; without the copy the training state
  // is lost until resume().
  std::string dir = tmpDir("failed");
  Session whole, s, lost;
  for (Session *x : {&whole, &s, &lost}) {
    ASSERT_OK(x->load(options(FAKE_PDP_MANIFEST)));
    setTrainingInputs(*x, kStart);
  }
  ASSERT_OK(whole.run(3));
  ASSERT_OK(s.run(2));
  lost.setGatherAfterRun(false);
  ASSERT_OK(lost.run(2));
  ASSERT_OK(lost.writeCheckpoint(dir + "/ck"));
  ASSERT_OK(lost.run(1)); // stale again
  ::setenv("PIPEOPT_FAKE_MODEL_BUG", "p-none", 1);
  Status failed = s.run(1);
  Status failedLost = lost.run(1);
  ::unsetenv("PIPEOPT_FAKE_MODEL_BUG");
  expectError(failed, 1, "rank");
  expectError(failedLost, 1, "rank");
  EXPECT_EQ(s.stepsDone(), 2);
  EXPECT_EQ(s.losses().size(), 2u);
  ASSERT_OK(s.run(1));
  EXPECT_EQ(bytesOf(s, "w"), bytesOf(whole, "w"));
  EXPECT_EQ(bytesOf(s, "b"), bytesOf(whole, "b"));
  EXPECT_EQ(s.losses(), whole.losses());

  expectError(lost.run(1), 2, "the training state was lost");
  HostTensor t;
  expectError(lost.weight("w", t), 2, "the training state was lost");
  ASSERT_OK(lost.resume(dir + "/ck"));
  ASSERT_OK(lost.run(1));
  EXPECT_EQ(bytesOf(lost, "w"), bytesOf(whole, "w"));
  EXPECT_EQ(lost.losses(), whole.losses());
}

TEST(SessionLoop, OptimizerStateRoundTrip) {
  // A session that takes another's weights and AdamW state continues
  // exactly as the other does.
  std::string dir = tmpDir("optstate");
  std::string manifest = manifestWithTraining(dir, FAKE_PPIPE_MANIFEST, kAdamW);
  Session a, b;
  ASSERT_OK(a.load(options(manifest.c_str())));
  ASSERT_OK(b.load(options(manifest.c_str())));
  setTrainingInputs(a, kStart);
  setTrainingInputs(b, {{0, 0, 0}, {0, 0, 0}, 0});
  ASSERT_OK(a.run(3));
  for (const char *name : {"w", "b"}) {
    HostTensor v;
    ASSERT_OK(a.weight(name, v));
    ASSERT_OK(b.setWeight(name, v));
    Moments m = momentsOf(a, name);
    ASSERT_EQ(m.step, 3);
    ASSERT_EQ(m.first.data.size(), 24u);
    ASSERT_EQ(m.second.data.size(), 24u);
    ASSERT_OK(b.setOptimizerState(name, m.first, m.second, m.step));
    // Read back as set.
    Moments back = momentsOf(b, name);
    EXPECT_EQ(back.first.data, m.first.data);
    EXPECT_EQ(back.second.data, m.second.data);
    EXPECT_EQ(back.step, 3);
  }
  ASSERT_OK(a.run(2));
  ASSERT_OK(b.run(2));
  for (const char *name : {"w", "b"}) {
    EXPECT_EQ(bytesOf(b, name), bytesOf(a, name)) << name;
    Moments ma = momentsOf(a, name), mb = momentsOf(b, name);
    EXPECT_EQ(mb.first.data, ma.first.data) << name;
    EXPECT_EQ(mb.second.data, ma.second.data) << name;
    EXPECT_EQ(mb.step, 5);
  }
  ASSERT_EQ(b.losses().size(), 2u);
  EXPECT_EQ(b.losses()[0], a.losses()[3]);
  EXPECT_EQ(b.losses()[1], a.losses()[4]);

  // "w" is f32 on a cpu build: its state is f32, so what is set is rounded
  // once to f32 and read back as the ranks hold it, also from the copy
  // gathered after a run.
  ASSERT_OK(b.setOptimizerState("w", f64({3}, {0.1, -1.0 / 3, 1e-40}),
                                f64({3}, {0.2, 0.3, 0.7}), 5));
  Moments r = momentsOf(b, "w");
  double first[3], second[3];
  std::memcpy(first, r.first.data.data(), sizeof(first));
  std::memcpy(second, r.second.data.data(), sizeof(second));
  EXPECT_EQ(first[0], double(0.1f));
  EXPECT_EQ(first[1], double(float(-1.0 / 3)));
  EXPECT_EQ(first[2], double(float(1e-40)));
  EXPECT_EQ(second[2], double(0.7f));

  expectError(b.setOptimizerState("w", f64({2}, {1, 2}), HostTensor(), 1), 2,
              "parameter 1 ('w'): the first moment must be f64[3] (or "
              "empty), got f64[2]");
  expectError(b.setOptimizerState("w", HostTensor(), f32({3}, {1, 2, 3}), 1), 2,
              "the second moment must be f64[3]");
  expectError(b.setOptimizerState("w", HostTensor(), HostTensor(), -1), 2,
              "the step count must be >= 0, got -1");
  // Values that would not train on are refused, as in a checkpoint: beyond
  // f32's range for this f32 parameter's state, not finite, a negative
  // second moment (printed so that its sign shows).
  expectError(
      b.setOptimizerState("w", f64({3}, {0, 1e300, 0}), HostTensor(), 1), 2,
      "parameter 1 ('w'): element 1 of the first moment is 1e+300 (it "
      "must be finite and within f32's range: this parameter's state "
      "is f32)");
  expectError(b.setOptimizerState("w", f64({3}, {NAN, 0, 0}), HostTensor(), 1),
              2, "element 0 of the first moment is nan");
  expectError(
      b.setOptimizerState("w", HostTensor(), f64({3}, {0, 0, -1e-30}), 1), 2,
      "element 2 of the second moment is -1e-30 (a second moment is >= 0)");
}

//===----------------------------------------------------------------------===//
// ArgParser
//===----------------------------------------------------------------------===//

namespace {
struct Parsed {
  std::string out;
  int n = 0;
  bool quiet = false;
  std::vector<std::string> positional;
};

void parse(std::vector<std::string> args, Parsed &p, bool rejectEmpty = true) {
  ArgParser parser(rejectEmpty);
  parser.value({"--out", "-o"},
               [&](const std::string &, const std::string &v) { p.out = v; });
  parser.value(
      {"--n"},
      [&](const std::string &, const std::string &v) { p.n = std::stoi(v); },
      "--n wants a count");
  parser.flag({"--quiet", "-q"}, [&](const std::string &) { p.quiet = true; });
  args.insert(args.begin(), "tool");
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  parser.parse(int(argv.size()), argv.data(),
               [&](const std::string &a) { p.positional.push_back(a); });
}

std::string parseError(std::vector<std::string> args, bool rejectEmpty = true) {
  Parsed p;
  try {
    parse(std::move(args), p, rejectEmpty);
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "";
}
} // namespace

TEST(ArgParser, BothSpellingsAndPositionals) {
  Parsed p;
  parse({"a.so", "--out", "x", "--n=3", "-q", "b"}, p);
  EXPECT_EQ(p.out, "x");
  EXPECT_EQ(p.n, 3);
  EXPECT_TRUE(p.quiet);
  EXPECT_EQ(p.positional, (std::vector<std::string>{"a.so", "b"}));
  Parsed q;
  parse({"--out=a=b", "-o", "--n"}, q); // values may contain '=' or '-'
  EXPECT_EQ(q.out, "--n");
}

TEST(ArgParser, ErrorsNameTheOption) {
  EXPECT_EQ(parseError({"--bogus=1"}), "unknown option '--bogus'");
  EXPECT_EQ(parseError({"-x"}), "unknown option '-x'");
  EXPECT_EQ(parseError({"--out"}), "--out needs a value");
  EXPECT_EQ(parseError({"--n"}), "--n wants a count");
  EXPECT_EQ(parseError({"--quiet=yes"}), "--quiet takes no value");
  EXPECT_EQ(parseError({"--out="}),
            "--out needs a value, got an empty string (an unset shell "
            "variable?)");
  EXPECT_EQ(parseError({"--out", ""}, /*rejectEmpty=*/false), "");
}

//===----------------------------------------------------------------------===//
// The communicator registry
//===----------------------------------------------------------------------===//

TEST(CommRegistry, OneRowPerCommunicator) {
  const std::vector<CommunicatorKind> &kinds = communicatorKinds();
  ASSERT_EQ(kinds.size(), 3u);
  EXPECT_STREQ(kinds[0].name, "loopback");
  EXPECT_EQ(communicatorNameList(), "loopback, mpi or nccl");
  EXPECT_EQ(communicatorDescriptions(),
            "loopback (default; ranks as threads) | mpi (one rank per "
            "process under mpirun) | nccl (one rank per GPU)");
  EXPECT_EQ(findCommunicatorKind("tcp"), nullptr);
  ASSERT_NE(findCommunicatorKind("mpi"), nullptr);
  EXPECT_EQ(findCommunicatorKind("mpi")->availability().empty(), haveMpi());
  EXPECT_EQ(findCommunicatorKind("loopback")->availability(), "");
  // The help text is built from the table.
  EXPECT_NE(runUsage().find("loopback (default; ranks as threads) | mpi (one "
                            "rank\n                         per process"),
            std::string::npos)
      << runUsage();
}

TEST(CommRegistry, FactoryOfARow) {
  CommWorld w;
  w.comm = "loopback";
  Communicators c = createCommunicators(w, 3, {0, 1, 2}, 5.0);
  EXPECT_EQ(c.name, "loopback");
  ASSERT_EQ(c.comms.size(), 3u);
  EXPECT_EQ(c.comms[2]->rank(), 2);
  EXPECT_EQ(c.comms[0]->size(), 3);
  w.comm = "tcp";
  EXPECT_THROW(createCommunicators(w, 1, {0}, 5.0), RuntimeError);
}
