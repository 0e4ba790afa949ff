//===- SetOptimizerPass.cpp - the optimizer of a training build -----------===//
//
// Part of pipeopt. pipe-set-optimizer (Passes.td): records the optimizer the
// runtime applies after each training step as the module attribute
// pipe.optimizer, with the update period of asynchronous schedules, and
// checks the rules of asynchronous updates (ProgramChecks.h).
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"
#include "pipeopt/Programs/ProgramChecks.h"
#include "pipeopt/Support/NumberText.h"
#include "pipeopt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

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
              << numberText(r.value);
      return signalPassFailure();
    }

  // An option the optimizer does not use, set to another value than its
  // default, is an error rather than ignored (as #pipe.optimizer's verifier
  // and pipeopt-compile have it). A pass built from SetOptimizerPassOptions
  // has every option set, so only a changed value counts.
  using pipe::OptimizerKind;
  const SetOptimizerPassOptions defaults;
  struct Applies {
    llvm::StringRef name;
    bool given;
    bool applies;
  };
  Applies applies[] = {
      {"lr", lr != defaults.lr, kind != OptimizerKind::None},
      {"weight-decay", weightDecay != defaults.weightDecay,
       kind != OptimizerKind::None},
      {"momentum", momentum != defaults.momentum,
       kind == OptimizerKind::Momentum},
      {"beta1", beta1 != defaults.beta1, kind == OptimizerKind::AdamW},
      {"beta2", beta2 != defaults.beta2, kind == OptimizerKind::AdamW},
      {"eps", eps != defaults.eps, kind == OptimizerKind::AdamW}};
  for (const Applies &a : applies)
    if (a.given && !a.applies) {
      error() << a.name << " does not apply to optimizer="
              << pipe::stringifyOptimizerKind(kind);
      return signalPassFailure();
    }

  FailureOr<BuiltPrograms> built = inspectPrograms(module);
  if (failed(built) || failed(checkAsynchronousUpdates(module, *built)))
    return signalPassFailure();

  std::optional<double> lrValue, weightDecayValue, momentumValue, beta1Value,
      beta2Value, epsValue;
  std::optional<int64_t> updateEvery;
  if (kind != OptimizerKind::None) {
    lrValue = lr;
    weightDecayValue = weightDecay;
  }
  if (kind == OptimizerKind::Momentum)
    momentumValue = momentum;
  if (kind == OptimizerKind::AdamW) {
    beta1Value = beta1;
    beta2Value = beta2;
    epsValue = eps;
  }
  // Asynchronous schedules update a stage's weights as its gradients
  // arrive: PipeDream after every backward (weight stashing keeps the
  // version each microbatch's forward read for its backward), PipeDream-2BW
  // once per S backwards (double-buffered weights). The schedule table's
  // weight versions (schedule::assignWeightVersions) follow the same rule.
  if (const auto *info = schedule::findScheduleByKey(built->schedule)) {
    using WV = schedule::WeightVersions;
    if (info->weightVersions == WV::PerBackward)
      updateEvery = 1;
    else if (info->weightVersions == WV::PerRound)
      updateEvery = built->stages;
  }
  pipe::PipeDialect::OptimizerAttrHelper(module.getContext())
      .setAttr(module, pipe::OptimizerAttr::get(
                           module.getContext(), kind, lrValue, weightDecayValue,
                           momentumValue, beta1Value, beta2Value, epsValue,
                           updateEvery));
}
