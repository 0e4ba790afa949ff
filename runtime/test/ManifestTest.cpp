//===- ManifestTest.cpp - Manifest loader tests -----------------*- C++ -*-===//

#include "pipeopt/runtime/Manifest.h"

#include <gtest/gtest.h>

using namespace pipeopt::rt;

namespace {

void expectError(const std::string &json, const std::string &needle) {
  try {
    parseManifest(json, "m.json");
    FAIL() << "expected error containing '" << needle << "'";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << e.what();
  }
}

TEST(Manifest, Minimal) {
  Manifest m = parseManifest(
      R"({"num_ranks": 2, "num_stages": 2, "num_microbatches": 4})", "m");
  EXPECT_EQ(m.numRanks, 2);
  ASSERT_EQ(m.entryPoints.size(), 2u);
  EXPECT_EQ(m.entryPoints[1], "pipeopt_rank_1");
  EXPECT_TRUE(m.inputs.empty());
  EXPECT_TRUE(m.actions.empty());
}

TEST(Manifest, Full) {
  Manifest m = parseManifest(R"({
    "format_version": 1, "num_ranks": 2, "num_stages": 2,
    "num_microbatches": 2, "schedule": "1f1b",
    "entry_points": ["a", "b"],
    "inputs": [{"index": 1, "shape": [3], "dtype": "f32"},
               {"index": 0, "shape": [2, 3], "dtype": "bf16",
                "microbatched": true, "name": "x"}],
    "outputs": [{"index": 0, "shape": [], "dtype": "i1",
                 "microbatched": false}],
    "stage_rank": [0, 1],
    "actions": [[{"kind": "F", "stage": 0, "microbatch": 0},
                 {"kind": 3, "stage": 0, "microbatch": 1}], []],
    "something_new": {"ignored": true}
  })",
                             "m");
  EXPECT_EQ(m.schedule, "1f1b");
  EXPECT_EQ(m.entryPoints[0], "a");
  ASSERT_EQ(m.inputs.size(), 2u);
  EXPECT_EQ(m.inputs[0].index, 0); // sorted
  EXPECT_EQ(m.inputs[0].dtype, DType::BF16);
  EXPECT_TRUE(m.inputs[0].microbatched);
  EXPECT_FALSE(m.inputs[1].microbatched);
  EXPECT_FALSE(m.outputs[0].microbatched);
  EXPECT_EQ(m.outputs[0].shape, Shape{});
  EXPECT_EQ(m.stageRank, (std::vector<int>{0, 1}));
  ASSERT_EQ(m.actions.size(), 2u);
  EXPECT_EQ(m.actions[0][1].kind, PIPEOPT_RT_ACTION_BW);
}

TEST(Manifest, StrictOnWrongFields) {
  expectError("[1,2]", "must be a JSON object");
  expectError("{", "invalid JSON");
  expectError(R"({"num_stages": 2, "num_microbatches": 4})",
              "'num_ranks' is required but missing");
  expectError(R"({"num_ranks": "2", "num_stages": 2, "num_microbatches": 4})",
              "'num_ranks' must be an integer");
  expectError(R"({"num_ranks": 0, "num_stages": 2, "num_microbatches": 4})",
              "'num_ranks' must be in [1,");
  expectError(R"({"num_ranks": 2, "num_stages": 2, "num_microbatches": 4,
                  "entry_points": ["a"]})",
              "'entry_points' must list num_ranks = 2 names");
  expectError(R"({"num_ranks": 1, "num_stages": 1, "num_microbatches": 1,
                  "inputs": [{"index": 0, "shape": [2], "dtype": "float"}]})",
              "'inputs[0].dtype' must be one of");
  expectError(R"({"num_ranks": 1, "num_stages": 1, "num_microbatches": 1,
                  "inputs": [{"index": 0, "shape": [-1], "dtype": "f32"}]})",
              "'inputs[0].shape[0]' must be in");
  expectError(R"({"num_ranks": 1, "num_stages": 1, "num_microbatches": 1,
                  "inputs": [{"index": 0, "dtype": "f32"}]})",
              "'inputs[0].shape' is required");
  expectError(R"({"num_ranks": 1, "num_stages": 1, "num_microbatches": 1,
                  "inputs": [{"index": 0, "shape": [1], "dtype": "f32",
                              "microbatched": 1}]})",
              "'inputs[0].microbatched' must be true or false");
  expectError(R"({"num_ranks": 1, "num_stages": 1, "num_microbatches": 1,
                  "inputs": [{"index": 0, "shape": [1], "dtype": "f32"},
                             {"index": 0, "shape": [1], "dtype": "f32"}]})",
              "duplicates input index 0");
  expectError(R"({"num_ranks": 2, "num_stages": 2, "num_microbatches": 1,
                  "stage_rank": [0, 2]})",
              "'stage_rank[1]' must be in [0, 1]");
  expectError(R"({"num_ranks": 1, "num_stages": 1, "num_microbatches": 1,
                  "actions": [[{"kind": "X", "stage": 0, "microbatch": 0}]]})",
              "'actions[0][0].kind' must be F, B, W or BW");
  expectError(R"({"num_ranks": 1, "num_stages": 1, "num_microbatches": 1,
                  "actions": [[{"kind": "F", "stage": 0, "microbatch": 5}]]})",
              "'actions[0][0].microbatch' must be in [0, 0]");
}

TEST(Manifest, StageRankMustAgreeWithActions) {
  // A hand edit that puts both stages on rank 0 while the actions still run
  // stage 1 on rank 1 (accepted silently before).
  const char *actions = R"("actions": [
      [{"kind": "F", "stage": 0, "microbatch": 0},
       {"kind": "F", "stage": 0, "microbatch": 1}],
      [{"kind": "F", "stage": 1, "microbatch": 0},
       {"kind": "F", "stage": 1, "microbatch": 1}]])";
  auto manifest = [&](const std::string &stageRank) {
    return std::string(R"({"num_ranks": 2, "num_stages": 2,
        "num_microbatches": 2, "stage_rank": )") +
           stageRank + ", " + actions + "}";
  };
  Manifest ok = parseManifest(manifest("[0, 1]"), "m.json");
  EXPECT_EQ(ok.stageRank, (std::vector<int>{0, 1}));
  EXPECT_EQ(ok.stageRankPipelines, (std::vector<std::vector<int>>{{0, 1}}));
  EXPECT_EQ(ok.source, "m.json");
  try {
    parseManifest(manifest("[0, 0]"), "m.json");
    FAIL() << "no error";
  } catch (const RuntimeError &e) {
    EXPECT_EQ(std::string(e.what()),
              "m.json: field 'stage_rank[1]' puts stage 1 on rank 0, but "
              "'actions[1][0]' (F for stage 1 microbatch 0) runs it on "
              "rank 1");
  }
  expectError(manifest("[1, 1]"),
              "field 'stage_rank[0]' puts stage 0 on rank 1, but "
              "'actions[0][0]' (F for stage 0 microbatch 0) runs it on rank 0");
  // Several pipelines: a stage may run on any rank that some pipeline gives
  // it, and every pipeline must list every stage.
  Manifest two = parseManifest(manifest("[[0, 1], [1, 0]]"), "m.json");
  EXPECT_EQ(two.stageRank, (std::vector<int>{0, 1}));
  EXPECT_EQ(two.stageRankPipelines.size(), 2u);
  expectError(manifest("[[0, 0], [0, 0]]"),
              "field 'stage_rank[*][1]' puts stage 1 on rank 0, but "
              "'actions[1][0]' (F for stage 1 microbatch 0) runs it on rank 1");
  expectError(manifest("[[0, 1], [1]]"),
              "field 'stage_rank[1]' must have num_stages = 2 entries, got 1");
  // The same forward twice.
  expectError(R"({"num_ranks": 2, "num_stages": 2, "num_microbatches": 2,
                  "actions": [[{"kind": "F", "stage": 0, "microbatch": 1}],
                              [{"kind": "F", "stage": 0, "microbatch": 1}]]})",
              "field 'actions[1][0]' repeats F for stage 0 microbatch 1, "
              "which 'actions[0][0]' already lists");
  // num_microbatches raised by hand: the actions run only two of three.
  std::string three = manifest("[0, 1]");
  three.replace(three.find("\"num_microbatches\": 2"), 21,
                "\"num_microbatches\": 3");
  expectError(three, "m.json: field 'actions' lists no action for microbatch "
                     "2, but num_microbatches = 3");
}

TEST(Manifest, OutputReduction) {
  // A training build's outputs: the loss and a gradient, averaged over
  // microbatches, and a plain (stacked) output next to them.
  Manifest m = parseManifest(R"({
    "num_ranks": 1, "num_stages": 1, "num_microbatches": 2,
    "outputs": [{"index": 0, "shape": [], "dtype": "f32", "reduce": "mean",
                 "name": "loss"},
                {"index": 1, "shape": [3], "dtype": "bf16", "reduce": "mean",
                 "microbatched": true, "name": "grad_0"},
                {"index": 2, "shape": [2], "dtype": "i32"}]
  })",
                             "m");
  ASSERT_EQ(m.outputs.size(), 3u);
  EXPECT_EQ(m.outputs[0].reduce, OutputReduce::Mean);
  EXPECT_EQ(m.outputs[0].name, "loss");
  EXPECT_EQ(m.outputs[1].reduce, OutputReduce::Mean);
  EXPECT_EQ(m.outputs[1].name, "grad_0");
  EXPECT_EQ(m.outputs[2].reduce, OutputReduce::None);
  EXPECT_TRUE(m.outputs[2].microbatched);

  auto output = [](const std::string &fields) {
    return R"({"num_ranks": 1, "num_stages": 1, "num_microbatches": 2,
               "outputs": [{"index": 0, "shape": [3], )" +
           fields + "}]}";
  };
  try {
    parseManifest(output(R"("dtype": "f32", "reduce": "sum")"), "m.json");
    FAIL() << "no error";
  } catch (const RuntimeError &e) {
    EXPECT_EQ(std::string(e.what()),
              "m.json: field 'outputs[0].reduce' must be \"mean\" (the mean "
              "over all microbatches) or absent (one value per microbatch); "
              "got 'sum'");
  }
  expectError(output(R"("dtype": "f32", "reduce": "none")"),
              "field 'outputs[0].reduce' must be \"mean\"");
  expectError(output(R"("dtype": "f32", "reduce": true)"),
              "field 'outputs[0].reduce' must be a string, got boolean");
  expectError(output(R"("dtype": "f32", "reduce": "mean",
                        "microbatched": false)"),
              "m.json: field 'outputs[0].reduce' is \"mean\", but the output "
              "is not microbatched (\"microbatched\": false): a mean is over "
              "the values of all microbatches");
  expectError(output(R"("dtype": "i64", "reduce": "mean")"),
              "m.json: field 'outputs[0].reduce' is \"mean\", but the "
              "output's dtype is i64; a mean needs f32, f64, f16 or bf16");
}

/// A 3-rank manifest with inputs 0 (data), 1 (w f32[2,2]), 2 (b bf16[2]),
/// 3 (ids i32[2]), and `rest` appended.
std::string trainManifest(const std::string &rest) {
  return R"({"num_ranks": 3, "num_stages": 3, "num_microbatches": 2,
    "inputs": [{"index": 0, "shape": [2], "dtype": "f32", "microbatched": true},
               {"index": 1, "shape": [2, 2], "dtype": "f32"},
               {"index": 2, "shape": [2], "dtype": "bf16"},
               {"index": 3, "shape": [2], "dtype": "i32"}])" +
         (rest.empty() ? "" : ", " + rest) + "}";
}

TEST(Manifest, TrainingAndParameters) {
  Manifest m = parseManifest(trainManifest(""), "m.json");
  EXPECT_FALSE(m.hasParameters);
  EXPECT_EQ(m.training.optimizer, OptimizerKind::None);

  m = parseManifest(
      trainManifest(R"("training": {"optimizer": "adamw", "lr": 0.01},
                       "parameters": [{"index": 2, "ranks": [2, 0]},
                                      {"index": 1, "ranks": [1]}])"),
      "m.json");
  EXPECT_TRUE(m.hasParameters);
  const TrainingConfig &t = m.training;
  EXPECT_EQ(t.optimizer, OptimizerKind::AdamW);
  EXPECT_EQ(t.lr, 0.01);
  // Defaults.
  EXPECT_EQ(t.momentum, 0.9);
  EXPECT_EQ(t.beta1, 0.9);
  EXPECT_EQ(t.beta2, 0.999);
  EXPECT_EQ(t.eps, 1e-8);
  EXPECT_EQ(t.weightDecay, 0.0);
  ASSERT_EQ(m.parameters.size(), 2u);
  EXPECT_EQ(m.parameters[0].index, 1); // sorted
  EXPECT_EQ(m.parameters[1].ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(m.findParameter(2), &m.parameters[1]);
  EXPECT_EQ(m.findParameter(0), nullptr);

  m = parseManifest(
      trainManifest(R"("training": {"optimizer": "momentum", "lr": 1,
                       "momentum": 0.5, "beta1": 0.8, "beta2": 0.99,
                       "eps": 1e-6, "weight_decay": 0.1})"),
      "m.json");
  // "training" without parameters (or with an empty list) trains nothing.
  EXPECT_FALSE(m.hasParameters);
  EXPECT_FALSE(parseManifest(trainManifest(R"("parameters": [])"), "m.json")
                   .hasParameters);
  EXPECT_EQ(m.training.momentum, 0.5);
  EXPECT_EQ(m.training.beta1, 0.8);
  EXPECT_EQ(m.training.beta2, 0.99);
  EXPECT_EQ(m.training.eps, 1e-6);
  EXPECT_EQ(m.training.weightDecay, 0.1);
  // "parameters" without "training": optimizer none.
  m = parseManifest(
      trainManifest(R"("parameters": [{"index": 1, "ranks": [0]}])"), "m.json");
  EXPECT_TRUE(m.hasParameters);
  EXPECT_EQ(m.training.optimizer, OptimizerKind::None);
  EXPECT_EQ(std::string(optimizerName(OptimizerKind::Momentum)), "momentum");
}

TEST(Manifest, TrainingFieldErrors) {
  auto params = [](const std::string &entry) {
    return trainManifest(R"("parameters": [)" + entry + "]");
  };
  auto training = [](const std::string &body) {
    return trainManifest(R"("training": {)" + body + "}");
  };
  expectError(params(R"({"index": 5, "ranks": [0]})"),
              "m.json: field 'parameters[0].index' is 5, but 'inputs' lists "
              "no input with that index");
  expectError(params(R"({"index": 0, "ranks": [0]})"),
              "m.json: field 'parameters[0].index' is input 0, which is "
              "microbatched (data); a parameter is shared by all microbatches");
  expectError(params(R"({"index": 3, "ranks": [0]})"),
              "m.json: field 'parameters[0].index' is input 3 of dtype i32; a "
              "parameter needs f32, f64, f16 or bf16");
  expectError(
      params(R"({"index": 1, "ranks": [0]}, {"index": 1, "ranks": [1]})"),
      "m.json: field 'parameters[1].index' repeats parameter 1");
  expectError(params(R"({"ranks": [0]})"),
              "m.json: field 'parameters[0].index' is required but missing");
  expectError(params(R"({"index": 1})"),
              "m.json: field 'parameters[0].ranks' is required but missing");
  expectError(
      params(R"({"index": 1, "ranks": []})"),
      "m.json: field 'parameters[0].ranks' must list at least one rank");
  expectError(
      params(R"({"index": 1, "ranks": [0, 3]})"),
      "m.json: field 'parameters[0].ranks[1]' must be in [0, 2], got 3");
  expectError(params(R"({"index": 1, "ranks": [1, 0, 1]})"),
              "m.json: field 'parameters[0].ranks[2]' repeats rank 1");
  expectError(params(R"({"index": 1, "ranks": 0})"),
              "m.json: field 'parameters[0].ranks' must be an array");
  expectError(trainManifest(R"("parameters": {})"),
              "m.json: field 'parameters' must be an array");
  expectError(training(R"("optimizer": "adam", "lr": 1)"),
              "m.json: field 'training.optimizer' must be one of none, sgd, "
              "momentum, adamw; got 'adam'");
  expectError(training(R"("optimizer": "sgd")"),
              "m.json: field 'training.lr' is required with optimizer 'sgd' "
              "but missing");
  expectError(training(R"("optimizer": "sgd", "lr": "0.1")"),
              "m.json: field 'training.lr' must be a number, got string");
  expectError(training(R"("optimizer": "sgd", "lr": -1)"),
              "m.json: field 'training.lr' must be in [0, inf), got -1");
  expectError(training(R"("optimizer": "adamw", "lr": 1, "beta2": 1)"),
              "m.json: field 'training.beta2' must be in [0, 1), got 1");
  expectError(training(R"("optimizer": "adamw", "lr": 1, "eps": 0)"),
              "m.json: field 'training.eps' must be in (0, inf), got 0");
  expectError(training(R"("optimizer": "momentum", "lr": 1, "momentum": 2)"),
              "m.json: field 'training.momentum' must be in [0, 1], got 2");
  expectError(training(R"("optimizer": "sgd", "lr": 1, "weight_decay": -0.5)"),
              "m.json: field 'training.weight_decay' must be in [0, inf), got "
              "-0.5");
  expectError(trainManifest(R"("training": [])"),
              "m.json: field 'training' must be an object");
  // Optimizer none needs no lr.
  EXPECT_NO_THROW(parseManifest(training(R"("optimizer": "none")"), "m.json"));
}

TEST(Manifest, DefaultPath) {
  EXPECT_EQ(defaultManifestPath("/a/b/model.so"), "/a/b/model.manifest.json");
  EXPECT_EQ(defaultManifestPath("model"), "model.manifest.json");
  EXPECT_EQ(defaultManifestPath("./x.y/model.so"), "./x.y/model.manifest.json");
}

} // namespace

namespace {
TEST(Manifest, Target) {
  const std::string base =
      R"({"num_ranks": 1, "num_stages": 1, "num_microbatches": 1)";
  EXPECT_EQ(parseManifest(base + "}", "m").target, Target::Cpu);
  EXPECT_EQ(parseManifest(base + R"(, "target": "cpu"})", "m").target,
            Target::Cpu);
  EXPECT_EQ(parseManifest(base + R"(, "target": "cuda"})", "m").target,
            Target::Cuda);
  expectError(base + R"(, "target": "rocm"})",
              "field 'target' must be \"cpu\" or \"cuda\"; got 'rocm'");
  expectError(base + R"(, "target": 1})", "'target'");
  EXPECT_STREQ(targetName(Target::Cuda), "cuda");
}
} // namespace
