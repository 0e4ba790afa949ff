//===- DriverTests.cpp - The compiler driver as a library ---------------===//
//
// Part of pipeopt. Calls lib/Driver the way another tool or compiler would:
// a CompileOptions in memory, the stages one by one, errors as llvm::Error.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"
#include "pipeopt/Driver/Driver.h"
#include "pipeopt/InitAll.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include "gtest/gtest.h"

using namespace pipeopt::driver;

namespace {

const std::string kMlp = PIPEOPT_SOURCE_DIR "/examples/mlp4.tosa.mlir";

/// A fresh directory for outputs, removed at the end of the test.
class DriverTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> path;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("driver-test", path));
    dir = std::string(path);
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }
  std::string file(llvm::StringRef name) { return dir + "/" + name.str(); }

  std::string dir;
};

/// The message of `e` ("" for success; "<diagnosed>" for a DiagnosedError).
std::string messageOf(llvm::Error e) {
  std::string msg;
  llvm::handleAllErrors(
      std::move(e), [&](const DiagnosedError &) { msg = "<diagnosed>"; },
      [&](const llvm::ErrorInfoBase &info) { msg = info.message(); });
  return msg;
}

TEST_F(DriverTest, CheckOptionsFillsInTheDefaults) {
  CompileOptions o;
  o.inputFile = kMlp;
  o.outputFile = file("m.so");
  o.train = true;
  ASSERT_EQ(messageOf(checkOptions(o)), "");
  EXPECT_EQ(o.optimizer, "sgd");
  EXPECT_EQ(o.schedule, "1f1b");
  EXPECT_EQ(o.manifestFile, file("m.manifest.json"));

  CompileOptions ref;
  ref.inputFile = kMlp;
  ref.outputFile = file("r.so");
  ref.train = true;
  ref.reference = true;
  ASSERT_EQ(messageOf(checkOptions(ref)), "");
  EXPECT_EQ(ref.optimizer, "none");
  EXPECT_EQ(ref.schedule, "forward-only");
}

TEST_F(DriverTest, CheckOptionsRejectsWhatWouldBeIgnored) {
  CompileOptions o;
  o.inputFile = kMlp;
  o.outputFile = file("m.so");
  o.lr = 0.5;
  o.given.insert("lr");
  EXPECT_EQ(messageOf(checkOptions(o)),
            "--lr applies only to training builds (--train)");

  o.train = true;
  o.optimizer = "adamw";
  o.betas = "0.9";
  EXPECT_EQ(messageOf(checkOptions(o)),
            "--betas: expected two numbers B1,B2 in [0, 1), got '0.9'");

  CompileOptions same;
  same.inputFile = kMlp;
  same.outputFile = kMlp;
  EXPECT_NE(messageOf(checkOptions(same)).find("it is the input file"),
            std::string::npos);
}

TEST_F(DriverTest, StagesBuildTrainingProgramsWithTheOptimizer) {
  CompileOptions o;
  o.inputFile = kMlp;
  o.outputFile = file("m.so");
  o.train = true;
  o.loss = pipeopt::pipe::LossKind::MSE;
  o.optimizer = "adamw";
  o.numStages = 2;
  o.numMicrobatches = 4;
  o.schedule = "zb-h1";
  ASSERT_EQ(messageOf(checkOptions(o)), "");

  mlir::DialectRegistry registry;
  pipeopt::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  auto module = parseInput(context, sourceMgr, o);
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());
  llvm::Expected<BuiltModel> built = buildPrograms(**module, o);
  ASSERT_TRUE(bool(built)) << llvm::toString(built.takeError());

  // Two ranks of zb-h1 with materialized backward actions.
  int programs = 0;
  for (auto p : (*module)->getOps<pipeopt::pipe::ProgramOp>()) {
    ++programs;
    EXPECT_EQ(p.getSchedule(), "zb-h1");
    EXPECT_EQ(p.getNumMicrobatches(), 4u);
    p.walk([](pipeopt::pipe::BackwardOp b) { EXPECT_TRUE(b.getCallee()); });
  }
  EXPECT_EQ(programs, 2);
  // The data argument (x, 0) and the mse target (9, last) are per
  // microbatch.
  EXPECT_EQ(built->microbatchArgs, (std::vector<std::string>{"0", "9"}));
  auto optimizer = (**module)->getAttrOfType<pipeopt::pipe::OptimizerAttr>(
      pipeopt::pipe::PipeDialect::OptimizerAttrHelper::getNameStr());
  ASSERT_TRUE(optimizer);
  EXPECT_EQ(optimizer.getKind(), pipeopt::pipe::OptimizerKind::AdamW);
  // zb-h1 is synchronous: no update period.
  EXPECT_FALSE(optimizer.getUpdateEvery().has_value());
}

TEST_F(DriverTest, CompileWritesTheScheduledModuleAndNothingOnError) {
  CompileOptions o;
  o.inputFile = kMlp;
  o.outputFile = file("m.scheduled.mlir");
  o.emit = Emit::Scheduled;
  o.numStages = 2;
  ASSERT_EQ(messageOf(compile(o)), "");
  EXPECT_TRUE(llvm::sys::fs::exists(file("m.scheduled.mlir")));

  // A 2BW schedule whose update period (2) does not divide 3 microbatches:
  // the error is a diagnostic of pipe-materialize-backward, and no output
  // is written.
  CompileOptions bad = o;
  bad.outputFile = file("bad.scheduled.mlir");
  bad.train = true;
  bad.loss = pipeopt::pipe::LossKind::MSE;
  bad.schedule = "pipedream-2bw";
  bad.numMicrobatches = 3;
  EXPECT_NE(messageOf(compile(bad)).find("front half failed"),
            std::string::npos);
  EXPECT_FALSE(llvm::sys::fs::exists(file("bad.scheduled.mlir")));
}

} // namespace
