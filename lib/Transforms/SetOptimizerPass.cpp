//===- SetOptimizerPass.cpp - the optimizer of a training build -----------===//
//
// Part of pipeopt. pipe-set-optimizer (Passes.td): records the optimizer the
// runtime applies after each training step as the module attribute
// pipe.optimizer, with the update period of asynchronous schedules, and
// checks the rules of asynchronous updates (ProgramChecks.h).
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"
#include "pipeopt/Transforms/Passes.h"
#include "pipeopt/Programs/ProgramChecks.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace pipeopt {
#define GEN_PASS_DEF_SETOPTIMIZERPASS
#include "pipeopt/Transforms/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;
using namespace pipeopt;

namespace {

struct SetOptimizerPass
    : pipeopt::impl::SetOptimizerPassBase<SetOptimizerPass> {
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

void SetOptimizerPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto error = [&]() {
    InFlightDiagnostic d = emitError(module.getLoc());
    d << "pipe-set-optimizer: ";
    return d;
  };
  if (!llvm::is_contained({"none", "sgd", "momentum", "adamw"}, kind.getValue())) {
    error() << "optimizer: expected none, sgd, momentum or adamw, got '"
            << kind << "'";
    return signalPassFailure();
  }
  // The ranges the runtime's manifest reader enforces (torch.optim's).
  struct Range {
    llvm::StringRef name;
    double value;
    bool ok;
    llvm::StringRef expected;
  };
  Range ranges[] = {
      {"lr", lr, lr >= 0 && std::isfinite(lr), "a finite value >= 0"},
      {"weight-decay", weightDecay,
       weightDecay >= 0 && std::isfinite(weightDecay), "a finite value >= 0"},
      {"momentum", momentum, momentum >= 0 && momentum <= 1,
       "a value in [0, 1]"},
      {"beta1", beta1, beta1 >= 0 && beta1 < 1, "a value in [0, 1)"},
      {"beta2", beta2, beta2 >= 0 && beta2 < 1, "a value in [0, 1)"},
      {"eps", eps, eps > 0 && std::isfinite(eps), "a finite value > 0"}};
  for (const Range &r : ranges)
    if (!r.ok) {
      error() << r.name << ": expected " << r.expected << ", got "
              << llvm::formatv("{0}", r.value).str();
      return signalPassFailure();
    }

  FailureOr<BuiltPrograms> built = inspectPrograms(module);
  if (failed(built) || failed(checkAsynchronousUpdates(module, *built)))
    return signalPassFailure();

  Builder b(module.getContext());
  SmallVector<NamedAttribute> entries{
      b.getNamedAttr("name", b.getStringAttr(kind))};
  if (kind != "none") {
    entries.push_back(b.getNamedAttr("lr", b.getF64FloatAttr(lr)));
    entries.push_back(
        b.getNamedAttr("weight_decay", b.getF64FloatAttr(weightDecay)));
  }
  if (kind == "momentum")
    entries.push_back(b.getNamedAttr("momentum", b.getF64FloatAttr(momentum)));
  // Asynchronous schedules update a stage's weights as its gradients
  // arrive: PipeDream after every backward (weight stashing keeps the
  // version each microbatch's forward read for its backward), PipeDream-2BW
  // once per S backwards (double-buffered weights). The schedule table's
  // weight versions (schedule::assignWeightVersions) follow the same rule.
  if (const auto *info = schedule::findScheduleByKey(built->schedule)) {
    using WV = schedule::WeightVersions;
    if (info->weightVersions == WV::PerBackward)
      entries.push_back(b.getNamedAttr("update_every", b.getI64IntegerAttr(1)));
    else if (info->weightVersions == WV::PerRound)
      entries.push_back(b.getNamedAttr("update_every",
                                       b.getI64IntegerAttr(built->stages)));
  }
  if (kind == "adamw") {
    entries.push_back(b.getNamedAttr("beta1", b.getF64FloatAttr(beta1)));
    entries.push_back(b.getNamedAttr("beta2", b.getF64FloatAttr(beta2)));
    entries.push_back(b.getNamedAttr("eps", b.getF64FloatAttr(eps)));
  }
  module->setAttr(pipe::PipeDialect::OptimizerAttrHelper::getNameStr(),
                  b.getDictionaryAttr(entries));
}
