//===- PartitionErrorTest.cpp - Fields of partition::PartitionError -*- C++
//-*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// partition() and evaluate() name the node, stage or weight an error is
// about; pipe-partition places its diagnostic at that node's op.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Partition/Partitioner.h"

#include "gtest/gtest.h"

#include <optional>
#include <string>

using namespace pipeopt::partition;

namespace {

Node op(const std::string &name, double t, double params = 0, double acts = 0) {
  Node n;
  n.name = name;
  n.forwardSeconds = t;
  n.paramBytes = params;
  n.outputBytes = acts;
  return n;
}

/// The PartitionError of a failed result, taken out with llvm::handleErrors;
/// fails the test on success or another kind of error.
template <typename T>
std::optional<PartitionError> caught(llvm::Expected<T> v) {
  std::optional<PartitionError> out;
  if (v) {
    ADD_FAILURE() << "expected an error";
    return out;
  }
  llvm::Error rest = llvm::handleErrors(
      v.takeError(), [&](const PartitionError &pe) { out = pe; });
  if (rest)
    ADD_FAILURE() << "not a PartitionError: "
                  << llvm::toString(std::move(rest));
  return out;
}

/// a -> b -> c -> d, one second each.
Graph chain4() {
  Graph g;
  for (const char *n : {"a", "b", "c", "d"})
    g.addNode(op(n, 1));
  for (int k = 0; k + 1 < 4; ++k)
    g.addEdge(k, k + 1, 8);
  return g;
}

TEST(PartitionError, ManualDecreasingStageNamesBothNodes) {
  Graph g = chain4();
  for (int k = 0; k < 4; ++k)
    g.nodes[k].fixedStage = k < 2 ? 0 : 1;
  g.nodes[2].fixedStage = 1;
  g.nodes[3].fixedStage = 0; // c (stage 1) feeds d (stage 0)
  Options o;
  o.strategy = Strategy::Manual;
  auto e = caught(partition(g, o));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->text, "manual strategy: op 'c' (stage 1) feeds op 'd' (stage "
                     "0): stages must not decrease along dependencies");
  EXPECT_EQ(e->node, 2);
  EXPECT_EQ(e->otherNode, 3);
  EXPECT_EQ(e->stage, -1);
}

TEST(PartitionError, NodeOfBadGraphs) {
  Graph g = chain4();
  g.nodes[2].backwardInputSeconds = -1;
  Options o;
  auto e = caught(partition(g, o));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->text, "op 'c' has a negative or non-finite time/size");
  EXPECT_EQ(e->node, 2);
  EXPECT_EQ(e->otherNode, -1);

  Graph back = chain4();
  back.addEdge(3, 1, 4);
  e = caught(partition(back, o));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->node, 3);
  EXPECT_EQ(e->otherNode, 1);

  Graph weights = chain4();
  weights.weightBytes = {16, -4};
  weights.weightNames = {"w0", "w1"};
  e = caught(partition(weights, o));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->text, "weight 'w1' has a negative or non-finite size");
  EXPECT_EQ(e->weight, 1);
  EXPECT_EQ(e->node, -1);
}

TEST(PartitionError, PinsAndStages) {
  Graph g = chain4();
  g.nodes[1].fixedStage = 7;
  Options o;
  auto e = caught(partition(g, o));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->text, "op 'b' is fixed to stage 7 but there are only 2 stages");
  EXPECT_EQ(e->node, 1);
  EXPECT_EQ(e->stage, 7);

  // evaluate(): a stage without ops.
  e = caught(evaluate(chain4(), o, {0, 0, 0, 0}));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->text, "evaluate: stage 1 has no ops");
  EXPECT_EQ(e->stage, 1);
  EXPECT_EQ(e->node, -1);
}

TEST(PartitionError, MemoryNamesTheStage) {
  Graph g;
  for (int k = 0; k < 4; ++k)
    g.addNode(op("layer" + std::to_string(k), 1, 3e9, 1.55e9));
  Options o;
  o.numStages = 4;
  o.memory.capacityBytes = {10e9, 10e9, 10e9, 9e9};
  o.memory.inFlight = gpipeInFlight(4, 4);
  auto e = caught(partition(g, o));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->stage, 3);
  EXPECT_EQ(e->node, -1);
  o.strategy = Strategy::Uniform;
  e = caught(partition(g, o));
  ASSERT_TRUE(e);
  EXPECT_EQ(
      e->text.rfind("the uniform split does not fit in memory: stage 3 ", 0),
      0u);
  EXPECT_EQ(e->stage, 3);
}

} // namespace
