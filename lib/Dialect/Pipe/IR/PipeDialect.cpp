//===- PipeDialect.cpp - pipe dialect and attributes --------------*- C++
//-*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"
#include "pipeopt/Dialect/Pipe/IR/PipeAttributes.h"
#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir;
using namespace pipeopt::pipe;

#include "pipeopt/Dialect/Pipe/IR/PipeEnums.cpp.inc"
#include "pipeopt/Dialect/Pipe/IR/PipeOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "pipeopt/Dialect/Pipe/IR/PipeAttributes.cpp.inc"

void PipeDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "pipeopt/Dialect/Pipe/IR/PipeOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "pipeopt/Dialect/Pipe/IR/PipeAttributes.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// TagAttr
//===----------------------------------------------------------------------===//

LogicalResult TagAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              Direction direction, int64_t srcStage,
                              int64_t dstStage, int64_t microbatch,
                              int64_t valueIndex) {
  if (srcStage < 0 || dstStage < 0)
    return emitError() << "tag stages must be non-negative, got " << srcStage
                       << " -> " << dstStage;
  if (srcStage == dstStage)
    return emitError() << "tag source and destination stage must differ, got "
                       << srcStage << " -> " << dstStage;
  // Activations flow to later stages, gradients to earlier ones.
  if (direction == Direction::Forward && dstStage < srcStage)
    return emitError() << "forward tag must flow to a later stage, got "
                       << srcStage << " -> " << dstStage;
  if (direction == Direction::Backward && dstStage > srcStage)
    return emitError() << "backward tag must flow to an earlier stage, got "
                       << srcStage << " -> " << dstStage;
  if (microbatch < 0)
    return emitError() << "tag microbatch must be non-negative, got "
                       << microbatch;
  if (valueIndex < 0)
    return emitError() << "tag value index must be non-negative, got "
                       << valueIndex;
  return success();
}

//===----------------------------------------------------------------------===//
// CostAttr
//===----------------------------------------------------------------------===//

LogicalResult CostAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               llvm::APFloat flopsAP, llvm::APFloat bytesAP,
                               llvm::APFloat timeAP) {
  double flops = flopsAP.convertToDouble(), bytes = bytesAP.convertToDouble(),
         time = timeAP.convertToDouble();
  auto check = [&](double v, StringRef name) -> LogicalResult {
    if (std::isfinite(v) && v >= 0.0)
      return success();
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::format("%g", v);
    return emitError() << "cost " << name
                       << " must be finite and non-negative, got " << text;
  };
  return success(succeeded(check(flops, "flops")) &&
                 succeeded(check(bytes, "bytes")) &&
                 succeeded(check(time, "time")));
}

//===----------------------------------------------------------------------===//
// The training contract
//===----------------------------------------------------------------------===//

/// `v` as the diagnostics print a double.
static std::string formatDouble(double v) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%g", v);
  return text;
}

LogicalResult GradientAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, LossKind loss,
    DenseI64ArrayAttr wrt, DenseI64ArrayAttr trainable, DenseI64ArrayAttr data,
    DenseI64ArrayAttr seeded, std::optional<int64_t> numSaved,
    std::optional<int64_t> savedBytes, std::optional<int64_t> numStash,
    std::optional<int64_t> stashBytes, FlatSymbolRefAttr fwd,
    FlatSymbolRefAttr bwd, FlatSymbolRefAttr b, FlatSymbolRefAttr w,
    FlatSymbolRefAttr lossFn, FlatSymbolRefAttr grad) {
  if (!wrt)
    return emitError() << "pipe.gradient needs its wrt list";
  // wrt and seeded are ascending (pipe-differentiate lists them in argument
  // / result order); trainable and data keep the order they were given in.
  for (auto [name, list, ascending] :
       {std::tuple<StringRef, DenseI64ArrayAttr, bool>{"wrt", wrt, true},
        {"trainable", trainable, false},
        {"data", data, false},
        {"seeded", seeded, true}}) {
    if (!list)
      continue;
    for (auto [k, i] : llvm::enumerate(list.asArrayRef()))
      if (i < 0 || (ascending && k && i <= list[k - 1])) {
        std::string text;
        llvm::raw_string_ostream os(text);
        list.printWithoutBraces(os);
        return emitError() << "pipe.gradient " << name << " must list "
                           << (ascending ? "ascending " : "")
                           << "non-negative indices, got [" << text << "]";
      }
  }
  for (auto [name, n] :
       {std::pair<StringRef, std::optional<int64_t>>{"num_saved", numSaved},
        {"saved_bytes", savedBytes},
        {"num_stash", numStash},
        {"stash_bytes", stashBytes}})
    if (n && *n < 0)
      return emitError() << "pipe.gradient " << name
                         << " must be non-negative, got " << *n;
  if (loss == LossKind::None && (lossFn || grad))
    return emitError() << "pipe.gradient with loss = none names no loss_fn "
                          "or grad function";
  return success();
}

LogicalResult
OptimizerAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      OptimizerKind kind, FloatAttr lr, FloatAttr weightDecay,
                      FloatAttr momentum, FloatAttr beta1, FloatAttr beta2,
                      FloatAttr eps, std::optional<int64_t> updateEvery) {
  // What applies to each kind; the runtime needs all of it.
  struct Field {
    StringRef name;
    FloatAttr value;
    bool applies;
    double lo;
    bool loOpen;
    double hi;
    bool hiOpen;
    StringRef range;
  };
  const double inf = std::numeric_limits<double>::infinity();
  bool any = kind != OptimizerKind::None;
  Field fields[] = {
      {"lr", lr, any, 0, false, inf, true, "[0, inf)"},
      {"weight_decay", weightDecay, any, 0, false, inf, true, "[0, inf)"},
      {"momentum", momentum, kind == OptimizerKind::Momentum, 0, false, 1,
       false, "[0, 1]"},
      {"beta1", beta1, kind == OptimizerKind::AdamW, 0, false, 1, true,
       "[0, 1)"},
      {"beta2", beta2, kind == OptimizerKind::AdamW, 0, false, 1, true,
       "[0, 1)"},
      {"eps", eps, kind == OptimizerKind::AdamW, 0, true, inf, true,
       "(0, inf)"},
  };
  for (const Field &f : fields) {
    if (!f.applies && f.value)
      return emitError() << "pipe.optimizer " << f.name
                         << " does not apply to optimizer "
                         << stringifyOptimizerKind(kind);
    if (f.applies && !f.value)
      return emitError() << "pipe.optimizer " << f.name
                         << " is required with optimizer "
                         << stringifyOptimizerKind(kind);
    if (!f.value)
      continue;
    if (!f.value.getType().isF64())
      return emitError() << "pipe.optimizer " << f.name
                         << " must be an f64, got " << f.value.getType();
    double v = f.value.getValueAsDouble();
    bool inside = !std::isnan(v) && (f.loOpen ? v > f.lo : v >= f.lo) &&
                  (f.hiOpen ? v < f.hi : v <= f.hi);
    if (!inside)
      return emitError() << "pipe.optimizer " << f.name << " must be in "
                         << f.range << ", got " << formatDouble(v);
  }
  if (updateEvery && (*updateEvery < 1 || *updateEvery > (1 << 20)))
    return emitError() << "pipe.optimizer update_every must be in [1, 2^20] "
                          "(absent: synchronous), got "
                       << *updateEvery;
  return success();
}

LogicalResult
AutoScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         StringRef schedule, int64_t numMicrobatches,
                         int64_t virtualStages, int64_t numStages,
                         FloatAttr makespanAttr) {
  if (schedule.empty())
    return emitError() << "pipe.auto_schedule schedule must name a schedule";
  if (numMicrobatches < 1)
    return emitError() << "pipe.auto_schedule num_microbatches must be "
                          "positive, got "
                       << numMicrobatches;
  if (virtualStages < 1)
    return emitError() << "pipe.auto_schedule virtual_stages must be "
                          "positive, got "
                       << virtualStages;
  if (numStages < 1)
    return emitError() << "pipe.auto_schedule num_stages must be positive, got "
                       << numStages;
  if (!makespanAttr || !makespanAttr.getType().isF64())
    return emitError() << "pipe.auto_schedule makespan_s must be an f64";
  double makespanS = makespanAttr.getValueAsDouble();
  if (!std::isfinite(makespanS) || makespanS < 0)
    return emitError() << "pipe.auto_schedule makespan_s must be finite and "
                          "non-negative, got "
                       << formatDouble(makespanS);
  return success();
}

/// Parses `<flops = F, bytes = B, time = T>`.
Attribute CostAttr::parse(AsmParser &parser, Type) {
  double values[3] = {0.0, 0.0, 0.0};
  const char *names[3] = {"flops", "bytes", "time"};
  if (parser.parseLess())
    return {};
  for (int i = 0; i < 3; ++i) {
    if (i > 0 && parser.parseComma())
      return {};
    if (parser.parseKeyword(names[i]) || parser.parseEqual() ||
        parser.parseFloat(values[i]))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return CostAttr::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), llvm::APFloat(values[0]), llvm::APFloat(values[1]),
      llvm::APFloat(values[2]));
}

void CostAttr::print(AsmPrinter &printer) const {
  printer << "<flops = ";
  printer.printFloat(getFlops());
  printer << ", bytes = ";
  printer.printFloat(getBytes());
  printer << ", time = ";
  printer.printFloat(getTime());
  printer << ">";
}

//===----------------------------------------------------------------------===//
// Discardable attributes on other dialects' ops
//===----------------------------------------------------------------------===//

LogicalResult PipeDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto mustBe = [&](StringRef what) {
    return op->emitOpError() << "attribute '" << name << "' must be " << what;
  };
  auto nonNegative = [&](StringRef what) -> LogicalResult {
    auto intAttr = dyn_cast<IntegerAttr>(value);
    if (!intAttr || !intAttr.getType().isSignlessInteger(64))
      return mustBe(("a 64-bit integer " + what).str());
    if (intAttr.getInt() < 0)
      return op->emitOpError()
             << "attribute '" << name << "' must be non-negative, got "
             << intAttr.getInt();
    return success();
  };
  if (name == StageAttrHelper::getNameStr())
    return nonNegative("stage index");
  if (name == NumStagesAttrHelper::getNameStr())
    return nonNegative("stage count");
  if (name == StashBytesAttrHelper::getNameStr())
    return nonNegative("byte count");
  if (name == RankAttrHelper::getNameStr())
    return nonNegative("rank");
  if (name == CostAttrHelper::getNameStr())
    return isa<CostAttr>(value) ? success() : mustBe("a #pipe.cost");
  if (name == RematAttrHelper::getNameStr())
    return isa<UnitAttr>(value) ? success() : mustBe("a unit attribute");
  if (name == GradientAttrHelper::getNameStr()) {
    auto gradient = dyn_cast<GradientAttr>(value);
    if (!gradient)
      return mustBe("a #pipe.gradient");
    // Its indices name arguments (and results) of the function it is on.
    auto fn = dyn_cast<FunctionOpInterface>(op);
    if (!fn)
      return op->emitOpError()
             << "attribute '" << name
             << "' belongs on the function pipe-differentiate differentiated";
    auto checkIndices = [&](StringRef field, DenseI64ArrayAttr indices,
                            unsigned bound, StringRef what) -> LogicalResult {
      if (indices)
        for (int64_t i : indices.asArrayRef())
          if (i >= int64_t(bound))
            return op->emitOpError()
                   << "attribute '" << name << "': " << field << " names "
                   << what << " " << i << ", but the function has " << bound;
      return success();
    };
    unsigned numArgs = fn.getNumArguments();
    if (failed(checkIndices("wrt", gradient.getWrt(), numArgs, "argument")) ||
        failed(checkIndices("trainable", gradient.getTrainable(), numArgs,
                            "argument")) ||
        failed(checkIndices("data", gradient.getData(), numArgs, "argument")) ||
        failed(checkIndices("seeded", gradient.getSeeded(), fn.getNumResults(),
                            "result")))
      return failure();
    // The trainable arguments are differentiated ones, each named once.
    if (DenseI64ArrayAttr trainable = gradient.getTrainable()) {
      ArrayRef<int64_t> wrt = gradient.getWrt().asArrayRef();
      llvm::SmallDenseSet<int64_t> seen;
      for (int64_t i : trainable.asArrayRef()) {
        if (!seen.insert(i).second)
          return op->emitOpError()
                 << "attribute '" << name << "': trainable names argument " << i
                 << " twice";
        if (!llvm::is_contained(wrt, i))
          return op->emitOpError()
                 << "attribute '" << name << "': trainable argument " << i
                 << " is not in wrt (the differentiated arguments)";
      }
    }
    return success();
  }
  if (name == OptimizerAttrHelper::getNameStr())
    return isa<OptimizerAttr>(value) ? success() : mustBe("a #pipe.optimizer");
  if (name == AutoScheduleAttrHelper::getNameStr())
    return isa<AutoScheduleAttr>(value) ? success()
                                        : mustBe("a #pipe.auto_schedule");
  if (name == LiftedConstantsAttrHelper::getNameStr() ||
      name == TrainableAttrHelper::getNameStr())
    return isa<DenseI64ArrayAttr>(value)
               ? success()
               : mustBe("an array<i64> of argument indices");
  return op->emitOpError()
         << "unknown attribute '" << name
         << "' (the pipe dialect's op attributes are pipe.stage, pipe.cost, "
            "pipe.remat, pipe.num_stages, pipe.stash_bytes, pipe.rank, "
            "pipe.gradient, pipe.lifted_constants, pipe.trainable, "
            "pipe.optimizer and pipe.auto_schedule)";
}

//===----------------------------------------------------------------------===//
// Argument and result attributes of functions
//===----------------------------------------------------------------------===//

LogicalResult PipeDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  if (attr.getName() == getMicrobatchedAttrName() &&
      !isa<UnitAttr>(attr.getValue()))
    return op->emitOpError()
           << "argument " << argIndex << ": attribute '"
           << getMicrobatchedAttrName() << "' must be a unit attribute";
  // Other pipe.* argument attributes are documented by the passes that set
  // them; accept them.
  return success();
}

LogicalResult PipeDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  if (attr.getName() == getOutputNameAttrName()) {
    auto name = dyn_cast<StringAttr>(attr.getValue());
    if (!name || name.getValue().empty())
      return op->emitOpError()
             << "result " << resultIndex << ": attribute '"
             << getOutputNameAttrName() << "' must be a non-empty string";
    return success();
  }
  if (attr.getName() == getReduceAttrName()) {
    auto reduce = dyn_cast<StringAttr>(attr.getValue());
    if (!reduce || !symbolizeOutputReduction(reduce.getValue()))
      return op->emitOpError()
             << "result " << resultIndex << ": attribute '"
             << getReduceAttrName() << "' must be \"mean\" (the mean over "
             << "microbatches), got " << attr.getValue();
    if (auto fn = dyn_cast<FunctionOpInterface>(op)) {
      Type type = fn.getResultTypes()[resultIndex];
      auto shaped = dyn_cast<ShapedType>(type);
      if (!shaped || !isa<FloatType>(shaped.getElementType()))
        return op->emitOpError()
               << "result " << resultIndex << ": attribute '"
               << getReduceAttrName() << "' needs a floating-point tensor, got "
               << type;
    }
    return success();
  }
  if (attr.getName() == getGradientOfAttrName() &&
      !isa<IntegerAttr>(attr.getValue()))
    return op->emitOpError() << "result " << resultIndex << ": attribute '"
                             << getGradientOfAttrName()
                             << "' must be an integer (a model argument)";
  return success();
}
