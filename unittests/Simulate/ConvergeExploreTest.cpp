//===- ConvergeExploreTest.cpp - Best method per stage count --------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Simulate/Converge.h"

#include "gtest/gtest.h"

using namespace pipeopt;
using namespace pipeopt::converge;

// The explorer's rows are the tuned results of tuneMethod per (S, method);
// on the quadratic PipeDream beats LocalSGD (docs/Convergence.md) and the
// margin is LocalSGD's f - f* over PipeDream's.
TEST(ConvergeExplore, BestMethodPerStageCountAndMargin) {
  ObjectiveParams p;
  p.kind = ObjectiveKind::Quadratic;
  llvm::Expected<std::unique_ptr<Objective>> obj = makeObjective(p);
  ASSERT_TRUE(static_cast<bool>(obj));
  RunConfig base;
  base.budgetSlots = 500;
  base.numSamples = 20;
  const std::vector<double> steps = stepGrid((*obj)->smoothness(), -8, 1);
  const std::vector<uint64_t> seeds = {1};
  const std::vector<Method> methods = {Method::LocalSGD, Method::PipeDream};
  llvm::Expected<ExploreResult> r =
      exploreStages(**obj, base, {2, 8}, methods, steps, seeds);
  ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
  ASSERT_EQ(r->rows.size(), 2u);
  for (const ExploreRow &row : r->rows) {
    SCOPED_TRACE("S = " + std::to_string(row.stages));
    ASSERT_EQ(row.entries.size(), 2u);
    for (size_t i = 0; i < methods.size(); ++i) {
      RunConfig c = base;
      c.stages = row.stages;
      c.method = methods[i];
      llvm::Expected<MethodResult> t = tuneMethod(**obj, c, steps, seeds);
      ASSERT_TRUE(static_cast<bool>(t));
      EXPECT_EQ(row.entries[i].method, methods[i]);
      EXPECT_EQ(row.entries[i].stepSize, t->best().stepSize);
      EXPECT_EQ(row.entries[i].finalSubopt, t->best().finalMean);
    }
    EXPECT_EQ(row.best, 1); // pipedream
    EXPECT_EQ(row.runnerUp, 0);
    EXPECT_GT(row.margin, 1.0);
    EXPECT_DOUBLE_EQ(row.margin,
                     row.entries[0].finalSubopt / row.entries[1].finalSubopt);
  }
  // PipeDream's lead grows with S on the quadratic (the docs' table: 8 to
  // 11 orders of magnitude at the default budget).
  EXPECT_GT(r->rows[1].margin, r->rows[0].margin);
  std::string text = exploreTable(*r);
  EXPECT_NE(text.find("pipedream"), std::string::npos);

  llvm::Expected<ExploreResult> none =
      exploreStages(**obj, base, {}, methods, steps, seeds);
  ASSERT_FALSE(static_cast<bool>(none));
  EXPECT_NE(llvm::toString(none.takeError()).find("at least one stage count"),
            std::string::npos);
}
