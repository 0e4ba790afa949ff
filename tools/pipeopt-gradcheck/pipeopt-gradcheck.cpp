//===- pipeopt-gradcheck.cpp - check a gradient numerically -----*- C++ -*-===//
//
// Part of pipeopt. Compares the gradient pipe-differentiate generates for a
// model (@f_grad) with finite differences of its loss (@f_loss), in the
// spirit of torch.autograd.gradcheck (docs/Gradcheck.md):
//
//   1. parse the model (func + tosa / linalg), keep the model function and
//      what it uses, pipe-prepare (inline calls), TOSA -> linalg;
//   2. --precision f64: convert the model (or, with --use-existing-gradient,
//      @f_loss and @f_grad) to f64 (pipeopt::convertFunctionToF64);
//   3. pipe-differentiate, or --use-existing-gradient: functions already in
//      the input; both are found through the model's `pipe.gradient`;
//   4. lower @f_loss and @f_grad to LLVM and JIT-compile them (PipeoptJIT);
//   5. inputs: random (seeded) or --input i=file.npy;
//   6. compare: central differences per element (fd) or along random
//      directions (directional), print a table, exit 0 (PASS), 1 (FAIL) or
//      2 (usage, input or IR error).
//
//===----------------------------------------------------------------------===//

#include "NpyInput.h"

#include "pipeopt/Conversion/PipeToRuntime/PipeToRuntime.h"
#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"
#include "pipeopt/InitAll.h"
#include "pipeopt/JIT/JitModule.h"
#include "pipeopt/Pipelines/Pipelines.h"
#include "pipeopt/Support/CommandLine.h"
#include "pipeopt/Support/Plural.h"
#include "pipeopt/Transforms/ConvertToF64.h"
#include "pipeopt/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

using namespace mlir;
using pipeopt::jit::ElementKind;
using pipeopt::jit::Tensor;
namespace cl = llvm::cl;

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

static cl::OptionCategory category("pipeopt-gradcheck options");

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.mlir>"),
                                      cl::Required, cl::cat(category));
static cl::opt<std::string> function(
    "function",
    cl::desc("Model function (default: the only public function with a "
             "body; with --use-existing-gradient, the only function with a "
             "pipe.gradient attribute)"),
    cl::value_desc("name"), cl::cat(category));

enum class LossKind { None, MSE, CrossEntropy };
static cl::opt<LossKind> loss(
    "loss", cl::desc("Loss pipe-differentiate appends over result 0"),
    cl::values(clEnumValN(LossKind::None, "none",
                          "none: the model returns its loss (one scalar)"),
               clEnumValN(LossKind::MSE, "mse",
                          "mean((y - target)^2); target: type of result 0"),
               clEnumValN(LossKind::CrossEntropy, "cross-entropy",
                          "mean cross-entropy of logits [..., C] and i64 "
                          "class targets [...]")),
    cl::init(LossKind::None), cl::cat(category));
static cl::opt<std::string> trainable(
    "trainable",
    cl::desc("pipe-differentiate trainable=: auto, all, none or argument "
             "indices I,J,..."),
    cl::init("auto"), cl::cat(category));
static cl::opt<std::string> microbatchArgs(
    "microbatch-args",
    cl::desc("pipe-differentiate microbatch-args=: auto, all, none or "
             "argument indices I,J,..."),
    cl::init("auto"), cl::cat(category));
static cl::opt<bool> useExisting(
    "use-existing-gradient",
    cl::desc("Do not run pipe-differentiate: check the @f_loss / @f_grad the "
             "input already has (named by the model's pipe.gradient)"),
    cl::cat(category));
static cl::alias useExistingAlias("no-differentiate",
                                  cl::desc("Alias for --use-existing-gradient"),
                                  cl::aliasopt(useExisting), cl::cat(category));

enum class Mode { FD, Directional, Auto };
static cl::opt<Mode> mode(
    "mode", cl::desc("What to compare"),
    cl::values(clEnumValN(Mode::FD, "fd",
                          "central difference per element (--max-elements per "
                          "argument)"),
               clEnumValN(Mode::Directional, "directional",
                          "central difference along random unit directions "
                          "(--directions per argument and over all arguments)"),
               clEnumValN(Mode::Auto, "auto",
                          "fd if the differentiated arguments have at most "
                          "--auto-fd-limit elements in all, else directional")),
    cl::init(Mode::Auto), cl::cat(category));
enum class Scope { PerArgument, Global, Both };
static cl::opt<Scope> directionsScope(
    "directions-scope", cl::desc("Directions of --mode directional"),
    cl::values(clEnumValN(Scope::PerArgument, "per-argument",
                          "--directions per argument"),
               clEnumValN(Scope::Global, "global",
                          "--directions over all arguments at once"),
               clEnumValN(Scope::Both, "both", "both (default)")),
    cl::init(Scope::Both), cl::cat(category));
enum class Precision { F64, F32 };
static cl::opt<Precision>
    precision("precision", cl::desc("Precision of the check"),
              cl::values(clEnumValN(Precision::F64, "f64",
                                    "convert the model to f64 first (default)"),
                         clEnumValN(Precision::F32, "f32",
                                    "run the model in its own precision")),
              cl::init(Precision::F64), cl::cat(category));
static cl::opt<double>
    epsOpt("eps",
           cl::desc("Finite-difference step h (default 1e-6 with f64, 1e-3 "
                    "with f32)"),
           cl::cat(category));
static cl::opt<double> rtolOpt(
    "rtol",
    cl::desc("Largest relative error that passes (default: f64 1e-6 for fd, "
             "1e-5 for directional; f32 1e-2)"),
    cl::cat(category));
static cl::opt<double> atolOpt(
    "atol",
    cl::desc("Absolute error that always passes (default 100 u |L| / h, u: "
             "unit roundoff, L: the loss; the finite differences' rounding "
             "noise)"),
    cl::cat(category));
static cl::opt<int64_t>
    directions("directions",
               cl::desc("Random directions per argument and global (K)"),
               cl::init(2), cl::cat(category));
static cl::opt<uint64_t> seed("seed",
                              cl::desc("Seed of random inputs, element "
                                       "subsets and directions"),
                              cl::init(0), cl::cat(category));
static cl::list<std::string> inputs(
    "input",
    cl::desc("Argument from a .npy file: I=file.npy (I: argument index of "
             "the model function, or 'target' for the loss target); "
             "repeatable"),
    cl::value_desc("I=file.npy"), cl::cat(category));
static cl::opt<int64_t> maxElements(
    "max-elements",
    cl::desc("fd: elements checked per argument, a seeded random subset "
             "when the argument has more (0: all)"),
    cl::init(256), cl::cat(category));
static cl::opt<int64_t> autoFdLimit(
    "auto-fd-limit",
    cl::desc("--mode auto picks fd up to this many differentiated elements"),
    cl::init(4096), cl::cat(category));
static cl::opt<bool> verbose(
    "verbose",
    cl::desc("Progress and timings on stderr (also shown when stderr is a "
             "terminal)"),
    cl::cat(category));

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {
/// Exit codes.
constexpr int kPass = 0, kFail = 1, kError = 2;

int error(const llvm::Twine &msg) {
  llvm::errs() << "pipeopt-gradcheck: error: " << msg << "\n";
  return kError;
}

bool showProgress() {
  return verbose || llvm::sys::Process::StandardErrIsDisplayed();
}

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// Deterministic random stream `stream` of `seed` (std::mt19937_64 and
/// std::seed_seq are fully specified, so the same seed gives the same
/// numbers everywhere).
std::mt19937_64 rng(uint64_t seed, uint64_t stream, uint64_t sub = 0) {
  std::seed_seq seq{uint32_t(seed),   uint32_t(seed >> 32),
                    uint32_t(stream), uint32_t(stream >> 32),
                    uint32_t(sub),    uint32_t(sub >> 32)};
  return std::mt19937_64(seq);
}
/// True if `arg` reaches the operand of a sqrt, rsqrt or log through
/// additions (x + eps), copies, broadcasts and reshapes only.
bool needsPositive(Value arg) {
  SmallVector<Value> work{arg};
  llvm::DenseSet<Value> seen{arg};
  auto push = [&](Value v) {
    if (seen.insert(v).second)
      work.push_back(v);
  };
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<math::SqrtOp, math::RsqrtOp, math::LogOp, math::Log2Op,
              math::Log10Op>(user))
        return true;
      if (auto l = dyn_cast<linalg::LinalgOp>(user)) {
        if (l.getBlock() && l.isDpsInput(&use))
          push(l.getMatchingBlockArgument(&use));
      } else if (auto y = dyn_cast<linalg::YieldOp>(user)) {
        push(y->getParentOp()->getResult(use.getOperandNumber()));
      } else if (isa<arith::AddFOp, tensor::ExpandShapeOp,
                     tensor::CollapseShapeOp, tensor::CastOp,
                     tensor::ExtractSliceOp>(user)) {
        push(user->getResult(0));
      }
    }
  }
  return false;
}

/// Uniform in [-1, 1), from 53 random bits.
double uniformPM1(std::mt19937_64 &g) {
  return double(g() >> 11) * 0x1.0p-52 - 1.0;
}

/// Random streams.
enum Stream : uint64_t { kInputs = 1, kSubset = 2, kDirection = 3 };

std::string typeString(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

/// "[i, j, k]" of the row-major linear index `linear` in `shape`.
std::string multiIndex(int64_t linear, llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> idx(shape.size());
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    idx[d] = linear % shape[d];
    linear /= shape[d];
  }
  std::string s = "[";
  for (auto [k, v] : llvm::enumerate(idx))
    s += (k ? ", " : "") + std::to_string(v);
  return s + "]";
}

/// The name shown for argument `i` of `fn`: its location's name (`loc("w")`)
/// or "%arg<i>".
std::string argumentName(func::FuncOp fn, unsigned i) {
  Location loc = fn.getArgument(i).getLoc();
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "%arg" + std::to_string(i);
}

/// What the model's `pipe.gradient` attribute says.
struct GradientInfo {
  std::string lossKind; ///< "mse", "cross-entropy", "self", "none"
  std::string lossFn, gradFn;
  llvm::SmallVector<int64_t> wrt;
};

LogicalResult readGradientInfo(func::FuncOp model, GradientInfo &info) {
  auto dict = pipeopt::pipe::PipeDialect::GradientAttrHelper(model.getContext())
                  .getAttr(model);
  if (!dict)
    return model.emitError()
           << "@" << model.getSymName()
           << " has no pipe.gradient attribute (with --use-existing-gradient "
              "the input must name its @f_loss and @f_grad there)";
  info.lossKind = pipeopt::pipe::stringifyLossKind(dict.getLoss()).str();
  FlatSymbolRefAttr lossFn = dict.getLossFn();
  FlatSymbolRefAttr gradFn = dict.getGrad();
  if (!lossFn || !gradFn || info.lossKind == "none")
    return model.emitError()
           << "@" << model.getSymName()
           << " has no loss: its pipe.gradient names no loss_fn / grad "
              "function (a model without a scalar loss needs --loss mse or "
              "--loss cross-entropy)";
  info.lossFn = lossFn.getValue().str();
  info.gradFn = gradFn.getValue().str();
  DenseI64ArrayAttr wrt = dict.getWrt();
  info.wrt.assign(wrt.asArrayRef().begin(), wrt.asArrayRef().end());
  if (info.wrt.empty())
    return model.emitError()
           << "pipe.gradient of @" << model.getSymName()
           << " differentiates no argument (wrt is empty); nothing to check";
  for (auto [k, i] : llvm::enumerate(info.wrt))
    if (i < 0 || i >= int64_t(model.getNumArguments()) ||
        (k && i <= info.wrt[k - 1]))
      return model.emitError()
             << "pipe.gradient of @" << model.getSymName()
             << ": wrt must list argument indices in ascending order, each "
                "below "
             << model.getNumArguments() << ", got " << i;
  return success();
}

/// Checks the ABI of docs/Gradcheck.md (pipe-differentiate's): @f_loss(args...,
/// [target]) -> tensor<f32|f64>, @f_grad(same) -> (loss, grad_i...).
LogicalResult checkABI(func::FuncOp model, func::FuncOp lossFn,
                       func::FuncOp gradFn, const GradientInfo &info,
                       bool hasTarget) {
  unsigned n = model.getNumArguments() + (hasTarget ? 1 : 0);
  auto inputsOk = [&](func::FuncOp fn) -> LogicalResult {
    if (fn.getNumArguments() != n)
      return fn.emitError()
             << "@" << fn.getSymName() << " takes "
             << pipeopt::countOf(fn.getNumArguments(), "argument")
             << "; expected " << n << " (the " << model.getNumArguments()
             << " of @" << model.getSymName()
             << (hasTarget ? " and the loss target)" : ")");
    for (unsigned i = 0; i < model.getNumArguments(); ++i)
      if (fn.getArgumentTypes()[i] != model.getArgumentTypes()[i])
        return fn.emitError()
               << "@" << fn.getSymName() << " argument " << i << " is "
               << fn.getArgumentTypes()[i] << " but @" << model.getSymName()
               << "'s is " << model.getArgumentTypes()[i];
    return success();
  };
  if (failed(inputsOk(lossFn)) || failed(inputsOk(gradFn)))
    return failure();
  if (hasTarget &&
      lossFn.getArgumentTypes().back() != gradFn.getArgumentTypes().back())
    return gradFn.emitError()
           << "the target argument of @" << gradFn.getSymName()
           << " differs from @" << lossFn.getSymName() << "'s";
  auto scalarLoss = [](Type t) {
    auto tt = dyn_cast<RankedTensorType>(t);
    return tt && tt.getRank() == 0 &&
           (tt.getElementType().isF32() || tt.getElementType().isF64());
  };
  if (lossFn.getNumResults() != 1 || !scalarLoss(lossFn.getResultTypes()[0]))
    return lossFn.emitError() << "@" << lossFn.getSymName()
                              << " must return one tensor<f32> or "
                                 "tensor<f64> (the loss)";
  if (gradFn.getNumResults() != 1 + info.wrt.size())
    return gradFn.emitError()
           << "@" << gradFn.getSymName() << " returns "
           << gradFn.getNumResults() << " values; expected "
           << 1 + info.wrt.size() << " (the loss and one gradient per wrt "
           << "argument)";
  if (gradFn.getResultTypes()[0] != lossFn.getResultTypes()[0])
    return gradFn.emitError() << "result 0 of @" << gradFn.getSymName()
                              << " (the loss) must have the type of @"
                              << lossFn.getSymName() << "'s result";
  for (auto [k, i] : llvm::enumerate(info.wrt)) {
    Type argType = model.getArgumentTypes()[i];
    auto tt = dyn_cast<RankedTensorType>(argType);
    if (!tt || !(tt.getElementType().isF32() || tt.getElementType().isF64()))
      return model.emitError()
             << "argument " << i << " of @" << model.getSymName() << " ("
             << argType << ") is differentiated, but only f32 / f64 tensors "
             << "can be perturbed";
    if (gradFn.getResultTypes()[k + 1] != argType)
      return gradFn.emitError()
             << "result " << k + 1 << " of @" << gradFn.getSymName()
             << " (the gradient of argument " << i << ") is "
             << gradFn.getResultTypes()[k + 1] << "; expected " << argType;
  }
  return success();
}

/// Converts `t` (from a .npy file) to kind `kind`.
Tensor convertTensor(const Tensor &t, ElementKind kind) {
  if (t.kind() == kind)
    return t;
  Tensor out(kind, t.shape());
  for (int64_t i = 0; i < t.numElements(); ++i)
    out.set(i, t.get(i));
  return out;
}

/// Statistics of one row of the table.
struct Row {
  std::string label, name, type;
  int64_t checks = 0;
  double worstRel = 0, worstAbs = 0;
  bool pass = true;
  std::string worstWhere; ///< element index or direction of the worst
  double worstAnalytic = 0, worstNumeric = 0;
};

/// The error of one comparison (docs/Gradcheck.md "Errors"):
///   rel = |a - n| / max(|a|, |n|, atol / rtol),
/// so rel <= rtol exactly when |a - n| <= max(rtol * max(|a|, |n|), atol).
/// A non-finite value is an infinite error.
void record(Row &row, double analytic, double numeric, double rtolV,
            double atolV, const std::string &where) {
  double abs = std::fabs(analytic - numeric);
  double scale = std::max({std::fabs(analytic), std::fabs(numeric),
                           atolV / rtolV, std::numeric_limits<double>::min()});
  double rel = abs / scale;
  if (!std::isfinite(analytic) || !std::isfinite(numeric))
    rel = abs = std::numeric_limits<double>::infinity();
  ++row.checks;
  if (row.checks == 1 || rel > row.worstRel || std::isnan(rel)) {
    row.worstRel = rel;
    row.worstWhere = where;
    row.worstAnalytic = analytic;
    row.worstNumeric = numeric;
  }
  row.worstAbs = std::max(row.worstAbs, abs);
  if (!(rel <= rtolV))
    row.pass = false;
}

/// m distinct indices of [0, n), sorted (Floyd's sampling).
std::vector<int64_t> sampleIndices(int64_t n, int64_t m, std::mt19937_64 &g) {
  std::set<int64_t> chosen;
  for (int64_t j = n - m; j < n; ++j) {
    int64_t t = int64_t(g() % uint64_t(j + 1));
    if (!chosen.insert(t).second)
      chosen.insert(j);
  }
  return std::vector<int64_t>(chosen.begin(), chosen.end());
}
} // namespace

//===----------------------------------------------------------------------===//
// main
//===----------------------------------------------------------------------===//

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  pipeopt::registerAllPasses();
  cl::HideUnrelatedOptions(category);
  if (!pipeopt::rejectHelpTypos(argc, argv, "pipeopt-gradcheck"))
    return 1;
  if (!pipeopt::rejectEmptyValues(argc, argv, "pipeopt-gradcheck"))
    return 1;
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "pipeopt-gradcheck: compare a model's gradient (pipe-differentiate) "
          "with finite differences of its loss\n\n"
          "Exit status: 0 PASS, 1 FAIL, 2 usage, input or IR error. See "
          "docs/Gradcheck.md.\n",
          &llvm::errs()))
    return kError;

  // --- Option checks -------------------------------------------------------
  if (useExisting)
    for (cl::Option *opt : std::initializer_list<cl::Option *>{
             &loss, &trainable, &microbatchArgs})
      if (opt->getNumOccurrences())
        return error("--" + opt->ArgStr +
                     " configures pipe-differentiate and does not apply "
                     "with --use-existing-gradient (the input's "
                     "pipe.gradient says what its functions compute)");
  bool f64 = precision == Precision::F64;
  double h = epsOpt.getNumOccurrences() ? epsOpt : (f64 ? 1e-6 : 1e-3);
  if (!(h > 0) || !std::isfinite(h))
    return error("--eps must be a positive finite number, got " +
                 std::to_string(h));
  if (rtolOpt.getNumOccurrences() && !(rtolOpt > 0 && std::isfinite(rtolOpt)))
    return error("--rtol must be a positive finite number");
  if (atolOpt.getNumOccurrences() && !(atolOpt >= 0 && std::isfinite(atolOpt)))
    return error("--atol must be a non-negative finite number");
  if (directions < 1)
    return error("--directions must be at least 1, got " +
                 std::to_string(directions));
  if (maxElements < 0)
    return error("--max-elements must be 0 (all) or positive");
  if (autoFdLimit < 0)
    return error("--auto-fd-limit must not be negative");
  for (const std::string &s : {trainable.getValue(), microbatchArgs.getValue()})
    if (s.empty() || s.find_first_of(" \t{}") != std::string::npos)
      return error("--trainable / --microbatch-args: expected auto, all, "
                   "none or comma-separated indices, got '" +
                   s + "'");

  // --inputs: index -> path ("target" is resolved once the arity is known).
  std::map<std::string, std::string> inputPaths;
  for (const std::string &spec : inputs) {
    auto [key, path] = llvm::StringRef(spec).split('=');
    if (key.empty() || path.empty() || spec.find('=') == std::string::npos)
      return error("--input expects I=file.npy (I: an argument index or "
                   "'target'), got '" +
                   spec + "'");
    if (key != "target" && !llvm::all_of(key, llvm::isDigit))
      return error("--input " + spec + ": '" + key +
                   "' is neither an argument index nor 'target'");
    if (!inputPaths.emplace(key.str(), path.str()).second)
      return error("--input: argument " + key + " is given twice");
  }

  // --- Parse ---------------------------------------------------------------
  DialectRegistry registry;
  pipeopt::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  std::string err;
  auto buffer = openInputFile(inputFile, &err);
  if (!buffer)
    return error(err);
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return error("cannot parse " + inputFile);
  auto tStart = Clock::now();

  // --- Model function ------------------------------------------------------
  func::FuncOp model;
  if (useExisting) {
    if (!function.empty()) {
      model = module->lookupSymbol<func::FuncOp>(function);
      if (!model || model.isExternal())
        return error("no function @" + function + " with a body in " +
                     inputFile);
    } else {
      SmallVector<func::FuncOp> candidates;
      for (auto fn : module->getOps<func::FuncOp>())
        if (pipeopt::pipe::PipeDialect::GradientAttrHelper(&context)
                .isAttrPresent(fn))
          candidates.push_back(fn);
      if (candidates.size() != 1) {
        std::string names;
        for (func::FuncOp fn : candidates)
          names += " @" + fn.getSymName().str();
        return error(
            candidates.empty()
                ? "no function has a pipe.gradient attribute (with "
                  "--use-existing-gradient the model names its @f_loss / "
                  "@f_grad there)"
                : "several functions have a pipe.gradient attribute:" + names +
                      "; choose one with --function=NAME");
      }
      model = candidates.front();
    }
    GradientInfo info;
    if (failed(readGradientInfo(model, info)))
      return kError;
    SmallVector<func::FuncOp> roots{model};
    for (const std::string &name : {info.lossFn, info.gradFn}) {
      auto fn = module->lookupSymbol<func::FuncOp>(name);
      if (!fn || fn.isExternal())
        return error("pipe.gradient of @" + model.getSymName().str() +
                     " names @" + name +
                     ", which is not a function with a body in " + inputFile);
      fn.setPublic();
      roots.push_back(fn);
    }
    pipeopt::keepReachedFunctions(*module, roots);
  } else {
    FailureOr<func::FuncOp> found = pipeopt::findModelFunction(
        *module, function, "choose one with --function=NAME");
    if (failed(found))
      return kError;
    model = *found;
    pipeopt::keepReachedFunctions(*module, {model});
  }
  std::string modelName = model.getSymName().str();

  // --- pipe-prepare, TOSA -> linalg ----------------------------------------
  {
    PassManager pm(&context, ModuleOp::getOperationName());
    pm.addPass(pipeopt::createPreparePass());
    pipeopt::addTosaToLinalgPasses(pm);
    if (failed(pm.run(*module)))
      return error("pipe-prepare / TOSA lowering failed");
  }
  model = module->lookupSymbol<func::FuncOp>(modelName);

  // --- Precision, differentiation ------------------------------------------
  GradientInfo info;
  if (useExisting) {
    if (failed(readGradientInfo(model, info)))
      return kError;
    // The functions that are called, and the model (its argument types are
    // the reference of the ABI check); each once (@f may be its own loss).
    if (f64)
      for (const std::string &name :
           std::set<std::string>{info.lossFn, info.gradFn, modelName})
        if (failed(pipeopt::convertFunctionToF64(
                module->lookupSymbol<func::FuncOp>(name))))
          return error("cannot convert @" + name +
                       " to f64 (--precision f32 checks it in its own "
                       "precision)");
  } else {
    if (f64 && failed(pipeopt::convertFunctionToF64(model)))
      return error("cannot convert @" + modelName +
                   " to f64 (--precision f32 checks it in its own precision)");
    static const pipeopt::pipe::LossKind lossKinds[] = {
        pipeopt::pipe::LossKind::None, pipeopt::pipe::LossKind::MSE,
        pipeopt::pipe::LossKind::CrossEntropy};
    pipeopt::DifferentiatePassOptions options;
    options.functions = {modelName};
    options.loss = lossKinds[int(loss.getValue())];
    // --trainable and --microbatch-args are comma-separated lists, as the
    // pass's options parse them.
    auto split = [](llvm::StringRef text) {
      llvm::SmallVector<llvm::StringRef> parts;
      text.split(parts, ',');
      llvm::SmallVector<std::string> entries;
      for (llvm::StringRef part : parts)
        entries.push_back(part.str());
      return entries;
    };
    options.trainable = split(trainable);
    options.microbatchArgs = split(microbatchArgs);
    PassManager pm(&context, ModuleOp::getOperationName());
    pm.addPass(pipeopt::createDifferentiatePass(options));
    if (failed(pm.run(*module))) {
      std::string pipeline;
      llvm::raw_string_ostream os(pipeline);
      pm.printAsTextualPipeline(os);
      return error("pipe-differentiate failed (" + pipeline + ")");
    }
    model = module->lookupSymbol<func::FuncOp>(modelName);
    if (!model)
      return error("pipe-differentiate removed @" + modelName);
    if (failed(readGradientInfo(model, info)))
      return kError;
  }
  auto lossFn = module->lookupSymbol<func::FuncOp>(info.lossFn);
  auto gradFn = module->lookupSymbol<func::FuncOp>(info.gradFn);
  if (!lossFn || !gradFn || lossFn.isExternal() || gradFn.isExternal())
    return error("pipe.gradient of @" + modelName + " names @" + info.lossFn +
                 " and @" + info.gradFn +
                 ", which must be functions with bodies");
  bool hasTarget = info.lossKind == "mse" || info.lossKind == "cross-entropy";
  if (failed(checkABI(model, lossFn, gradFn, info, hasTarget)))
    return kError;

  // --- Argument facts (before the IR is lowered) ---------------------------
  unsigned numModelArgs = model.getNumArguments();
  unsigned numInputs = numModelArgs + (hasTarget ? 1 : 0);
  SmallVector<RankedTensorType> inputTypes;
  SmallVector<std::string> names;
  for (unsigned i = 0; i < numInputs; ++i) {
    auto t = dyn_cast<RankedTensorType>(lossFn.getArgumentTypes()[i]);
    if (!t || !pipeopt::jit::elementKindOf(t.getElementType()))
      return error(llvm::formatv(
          "@{0} argument {1} has type {2}; pipeopt-gradcheck passes ranked "
          "tensors of f32, f64, i64, i32, i8 or i1",
          info.lossFn, i, typeString(lossFn.getArgumentTypes()[i])));
    inputTypes.push_back(t);
    names.push_back(i < numModelArgs ? argumentName(model, i)
                                     : std::string("target"));
  }
  // Integer inputs used as gather indices must stay below the extent they
  // index (the compiled code does not check them): `indexBounds`, checked
  // on --input. Random ones are drawn below `drawBounds`: those, and the
  // number of classes for a cross-entropy target (outside [0, C) a target
  // is legal: it picks no class).
  std::map<unsigned, int64_t> indexBounds;
  for (unsigned i = 0; i < numInputs; ++i) {
    if (!inputTypes[i].getElementType().isSignlessInteger())
      continue;
    for (func::FuncOp fn : {lossFn, gradFn})
      if (auto b = pipeopt::gatherIndexBound(fn.getArgument(i)))
        indexBounds[i] =
            indexBounds.count(i) ? std::min(indexBounds[i], *b) : *b;
    if (i < numModelArgs)
      if (auto b = pipeopt::gatherIndexBound(model.getArgument(i)))
        indexBounds[i] =
            indexBounds.count(i) ? std::min(indexBounds[i], *b) : *b;
  }
  std::map<unsigned, int64_t> drawBounds = indexBounds;
  // Float arguments that reach sqrt, rsqrt or log through additions,
  // copies, broadcasts and reshapes (a batch normalization's variance, to
  // which eps is added) are drawn positive, so the loss is finite.
  std::set<unsigned> positive;
  for (unsigned i = 0; i < numInputs; ++i)
    if (isa<FloatType>(inputTypes[i].getElementType()) &&
        needsPositive(lossFn.getArgument(i)))
      positive.insert(i);
  if (info.lossKind == "cross-entropy") {
    auto logits = dyn_cast<RankedTensorType>(
        model.getResultTypes().empty() ? Type() : model.getResultTypes()[0]);
    if (!logits || logits.getRank() < 1 ||
        logits.isDynamicDim(logits.getRank() - 1))
      return error("cross-entropy: result 0 of @" + modelName +
                   " must be a tensor [..., C] with a static class "
                   "dimension C");
    int64_t classes = logits.getDimSize(logits.getRank() - 1);
    if (!inputTypes.back().getElementType().isSignlessInteger())
      return error("cross-entropy: the target argument of @" + info.lossFn +
                   " must be an integer tensor, got " +
                   typeString(inputTypes.back()));
    drawBounds[numInputs - 1] =
        drawBounds.count(numInputs - 1)
            ? std::min(drawBounds[numInputs - 1], classes)
            : classes;
  }

  // --- Inputs --------------------------------------------------------------
  SmallVector<Tensor> args(numInputs);
  for (auto &[key, path] : inputPaths) {
    unsigned index;
    if (key == "target") {
      if (!hasTarget)
        return error("--input target=...: the loss '" + info.lossKind +
                     "' has no target");
      index = numInputs - 1;
    } else {
      if (llvm::StringRef(key).getAsInteger(10, index) || index >= numInputs)
        return error("--input " + key + "=" + path + ": @" + modelName +
                     " has " + std::to_string(numModelArgs) +
                     " arguments (0 to " + std::to_string(numModelArgs - 1) +
                     (hasTarget ? ", and " + std::to_string(numModelArgs) +
                                      " or 'target' for the target)"
                                : ")"));
    }
    Tensor loaded;
    if (!pipeopt::gradcheck::readNpyTensor(path, loaded, err))
      return error("--input " + key + ": " + err);
    RankedTensorType type = inputTypes[index];
    ElementKind kind = *pipeopt::jit::elementKindOf(type.getElementType());
    bool shapeOk = loaded.rank() == type.getRank();
    for (int64_t d = 0; shapeOk && d < type.getRank(); ++d)
      shapeOk = type.isDynamicDim(d) || type.getDimSize(d) == loaded.shape()[d];
    if (!shapeOk)
      return error("--input " + key + ": " + path + " holds " +
                   loaded.typeString() + " but argument " +
                   std::to_string(index) + " is " + typeString(type));
    if (pipeopt::jit::isFloat(kind) != pipeopt::jit::isFloat(loaded.kind()))
      return error("--input " + key + ": " + path + " holds " +
                   pipeopt::jit::elementName(loaded.kind()) +
                   " data but argument " + std::to_string(index) + " is " +
                   typeString(type));
    args[index] = convertTensor(loaded, kind);
    Tensor &t = args[index];
    for (int64_t e = 0; e < t.numElements(); ++e) {
      double v = t.get(e);
      if (pipeopt::jit::isFloat(kind) ? !std::isfinite(v)
                                      : (indexBounds.count(index) &&
                                         (v < 0 || v >= indexBounds[index])))
        return error(llvm::formatv(
            "--input {0}: element {1} of {2} is {3}, {4}", key,
            multiIndex(e, t.shape()), path,
            pipeopt::jit::isFloat(kind) ? llvm::formatv("{0}", v).str()
                                        : std::to_string(int64_t(v)),
            pipeopt::jit::isFloat(kind)
                ? std::string("which is not finite")
                : llvm::formatv("outside [0, {0}): the argument is used as "
                                "an index",
                                indexBounds[index])
                      .str()));
    }
  }
  for (unsigned i = 0; i < numInputs; ++i) {
    if (inputPaths.count(std::to_string(i)) ||
        (hasTarget && i == numInputs - 1 && inputPaths.count("target")))
      continue;
    RankedTensorType type = inputTypes[i];
    if (!type.hasStaticShape())
      return error(llvm::formatv("argument {0} ({1}) has a dynamic shape; "
                                 "give it with --input {0}=file.npy",
                                 i, typeString(type)));
    ElementKind kind = *pipeopt::jit::elementKindOf(type.getElementType());
    Tensor t(kind, type.getShape());
    std::mt19937_64 g = rng(seed, kInputs, i);
    int64_t bound = kind == ElementKind::I1 ? 2
                    : drawBounds.count(i)   ? drawBounds[i]
                                            : 10;
    if (!pipeopt::jit::isFloat(kind) && bound <= 0)
      return error(llvm::formatv("argument {0} indexes an empty dimension; "
                                 "no index is valid",
                                 i));
    bool pos = positive.count(i) != 0;
    for (int64_t e = 0; e < t.numElements(); ++e)
      t.set(e, !pipeopt::jit::isFloat(kind) ? double(g() % uint64_t(bound))
               : pos                        ? 1.0 + 0.5 * uniformPM1(g)
                                            : 0.5 * uniformPM1(g));
    if (showProgress())
      llvm::errs() << llvm::formatv(
          "pipeopt-gradcheck: argument {0} ({1}, {2}): random {3}\n", i,
          names[i], t.typeString(),
          pipeopt::jit::isFloat(kind)
              ? std::string(pos ? "uniform in [0.5, 1.5) (it reaches a "
                                  "sqrt, rsqrt or log)"
                                : "uniform in [-0.5, 0.5)")
              : llvm::formatv("integers in [0, {0}){1}", bound,
                              kind == ElementKind::I1 ? ""
                              : indexBounds.count(i)
                                  ? " (the extent it indexes)"
                              : drawBounds.count(i) ? " (the classes)"
                                                    : " (not used as an index)")
                    .str());
    args[i] = std::move(t);
  }

  // --- JIT -----------------------------------------------------------------
  std::string lossName = info.lossFn, gradName = info.gradFn;
  auto tJit = Clock::now();
  auto jit = pipeopt::jit::JitModule::create(*module, {lossName, gradName});
  if (!jit)
    return error(llvm::toString(jit.takeError()));
  if (showProgress())
    llvm::errs() << llvm::formatv(
        "pipeopt-gradcheck: prepared in {0:F2} s, JIT-compiled in {1:F2} s\n",
        secondsSince(tStart) - secondsSince(tJit), secondsSince(tJit));

  SmallVector<const Tensor *> argPtrs;
  for (Tensor &t : args)
    argPtrs.push_back(&t);
  int64_t evaluations = 0;
  double evalSeconds = 0;
  std::string callError;
  auto evalLoss = [&]() -> double {
    auto t0 = Clock::now();
    auto r = (*jit)->call(lossName, argPtrs);
    evalSeconds += secondsSince(t0);
    ++evaluations;
    if (!r) {
      if (callError.empty())
        callError = llvm::toString(r.takeError());
      else
        llvm::consumeError(r.takeError());
      return std::numeric_limits<double>::quiet_NaN();
    }
    return (*r)[0].get(0);
  };

  double l0 = evalLoss();
  if (!callError.empty())
    return error(callError);
  if (!std::isfinite(l0))
    return error(llvm::formatv("the loss @{0} is {1} at the inputs; "
                               "choose other inputs (--seed, --input)",
                               lossName, l0));
  auto gradResults = (*jit)->call(gradName, argPtrs);
  if (!gradResults)
    return error(llvm::toString(gradResults.takeError()));
  double lossFromGrad = (*gradResults)[0].get(0);

  // --- Defaults ------------------------------------------------------------
  int64_t totalElements = 0;
  for (int64_t i : info.wrt)
    totalElements += args[i].numElements();
  Mode m = mode;
  if (m == Mode::Auto)
    m = totalElements <= autoFdLimit ? Mode::FD : Mode::Directional;
  // Unit roundoff of the computation's precision.
  bool computesF64 = inputTypes[info.wrt.front()].getElementType().isF64();
  double u = computesF64 ? 0x1.0p-53 : 0x1.0p-24;
  double rtolV = rtolOpt.getNumOccurrences()
                     ? rtolOpt.getValue()
                     : (computesF64 ? (m == Mode::FD ? 1e-6 : 1e-5) : 1e-2);
  double atolV = atolOpt.getNumOccurrences() ? atolOpt.getValue()
                                             : 100 * u * std::fabs(l0) / h;

  llvm::outs() << llvm::formatv(
      "pipeopt-gradcheck: @{0}: loss {1} (@{2}, @{3}), {4} computation, loss "
      "{5:E6}\n",
      modelName, info.lossKind, lossName, gradName, computesF64 ? "f64" : "f32",
      l0);
  llvm::outs() << llvm::formatv(
      "pipeopt-gradcheck: mode {0}, h = {1:E1}, rtol = {2:E1}, atol = "
      "{3:E1}; error = |a - n| / max(|a|, |n|, atol / rtol), a: analytic, "
      "n: numeric\n",
      m == Mode::FD ? "fd (central differences per element)"
                    : "directional (central differences along random unit "
                      "directions)",
      h, rtolV, atolV);

  // --- Checks --------------------------------------------------------------
  SmallVector<Row> rows;
  auto argRow = [&](unsigned i) {
    Row row;
    row.label = std::to_string(i);
    row.name = names[i];
    row.type = args[i].typeString();
    return row;
  };
  auto progress = [&](size_t k, int64_t i, llvm::StringRef what) {
    if (showProgress())
      llvm::errs() << llvm::formatv(
          "pipeopt-gradcheck: checking arg {0}/{1} (argument {2}, {3}, {4}) "
          "...\n",
          k + 1, info.wrt.size(), i, args[i].typeString(), what);
  };

  if (m == Mode::FD) {
    for (auto [k, i] : llvm::enumerate(info.wrt)) {
      Tensor &x = args[i];
      const Tensor &g = (*gradResults)[k + 1];
      int64_t n = x.numElements();
      std::vector<int64_t> elements;
      if (maxElements == 0 || n <= maxElements) {
        elements.resize(n);
        for (int64_t e = 0; e < n; ++e)
          elements[e] = e;
      } else {
        std::mt19937_64 gen = rng(seed, kSubset, i);
        elements = sampleIndices(n, maxElements, gen);
      }
      progress(k, i, std::to_string(elements.size()) + " elements");
      Row row = argRow(i);
      for (int64_t e : elements) {
        double orig = x.get(e);
        x.set(e, orig + h);
        double xp = x.get(e);
        double lp = evalLoss();
        x.set(e, orig - h);
        double xm = x.get(e);
        if (xp == xm)
          return error(llvm::formatv(
              "--eps {0:E1} is below the resolution of element {1} of "
              "argument {2} (value {3:E6}, {4}); use a larger --eps",
              h, multiIndex(e, x.shape()), i, orig,
              pipeopt::jit::elementName(x.kind())));
        double lm = evalLoss();
        x.set(e, orig);
        double numeric = (lp - lm) / (xp - xm);
        record(row, g.get(e), numeric, rtolV, atolV, multiIndex(e, x.shape()));
      }
      rows.push_back(std::move(row));
    }
  } else {
    // Perturbs `which` (positions in info.wrt) along a random unit direction
    // (norm over all of them) and records one comparison in `row`.
    auto direction = [&](ArrayRef<size_t> which, uint64_t stream, Row &row,
                         const std::string &where) {
      SmallVector<std::vector<double>> v(which.size());
      double norm2 = 0;
      for (auto [w, k] : llvm::enumerate(which)) {
        std::mt19937_64 gen = rng(seed, kDirection, stream * 1000003 + k);
        v[w].resize(args[info.wrt[k]].numElements());
        for (double &x : v[w]) {
          x = uniformPM1(gen);
          norm2 += x * x;
        }
      }
      double scale = norm2 > 0 ? 1 / std::sqrt(norm2) : 0;
      SmallVector<Tensor> saved;
      for (size_t k : which)
        saved.push_back(args[info.wrt[k]]);
      // x + h v, then x - h v; the analytic side uses the displacement the
      // rounded arguments really have (x+ - x-), which is 2 h v up to
      // rounding.
      double analytic = 0;
      auto shift = [&](double sign) {
        for (auto [w, k] : llvm::enumerate(which)) {
          Tensor &x = args[info.wrt[k]];
          for (int64_t e = 0; e < x.numElements(); ++e)
            x.set(e, saved[w].get(e) + sign * h * scale * v[w][e]);
        }
      };
      shift(+1);
      SmallVector<Tensor> plus;
      for (size_t k : which)
        plus.push_back(args[info.wrt[k]]);
      double lp = evalLoss();
      shift(-1);
      double lm = evalLoss();
      for (auto [w, k] : llvm::enumerate(which)) {
        Tensor &x = args[info.wrt[k]];
        const Tensor &g = (*gradResults)[k + 1];
        for (int64_t e = 0; e < x.numElements(); ++e)
          analytic += g.get(e) * (plus[w].get(e) - x.get(e));
        x = std::move(saved[w]);
      }
      analytic /= 2 * h;
      double numeric = (lp - lm) / (2 * h);
      record(row, analytic, numeric, rtolV, atolV, where);
    };
    if (directionsScope != Scope::Global)
      for (auto [k, i] : llvm::enumerate(info.wrt)) {
        progress(k, i, std::to_string(directions) + " directions");
        Row row = argRow(i);
        for (int64_t d = 0; d < directions; ++d)
          direction({k}, uint64_t(d), row, "direction " + std::to_string(d));
        rows.push_back(std::move(row));
      }
    if (directionsScope != Scope::PerArgument) {
      if (showProgress())
        llvm::errs() << "pipeopt-gradcheck: checking all arguments together "
                        "...\n";
      Row row;
      row.label = "all";
      row.name = "(all " + std::to_string(info.wrt.size()) + ")";
      row.type = std::to_string(totalElements) + " elements";
      SmallVector<size_t> all;
      for (size_t k = 0; k < info.wrt.size(); ++k)
        all.push_back(k);
      for (int64_t d = 0; d < directions; ++d)
        direction(all, uint64_t(1000 + d), row,
                  "global direction " + std::to_string(d));
      rows.push_back(std::move(row));
    }
  }
  if (!callError.empty())
    return error(callError);

  // The loss @f_grad returns is @f_loss's.
  Row lossRow;
  lossRow.label = "loss";
  lossRow.name = "@" + gradName + " result 0";
  lossRow.type = "vs @" + lossName;
  record(lossRow, lossFromGrad, l0, rtolV, 0, "loss");

  // --- Report --------------------------------------------------------------
  size_t nameWidth = 4, typeWidth = 4;
  for (const Row &r : rows) {
    nameWidth = std::max(nameWidth, r.name.size());
    typeWidth = std::max(typeWidth, r.type.size());
  }
  nameWidth = std::max(nameWidth, lossRow.name.size());
  typeWidth = std::max(typeWidth, lossRow.type.size());
  auto printRow = [&](const Row &r) {
    llvm::outs() << llvm::formatv(
        "  {0,-4}  {1}  {2}  {3,7}  {4,13:E2}  "
        "{5,13:E2}  {6}\n",
        r.label, llvm::left_justify(r.name, nameWidth),
        llvm::left_justify(r.type, typeWidth), r.checks, r.worstRel, r.worstAbs,
        r.pass ? "PASS" : "FAIL");
    if (!r.pass)
      llvm::outs() << llvm::formatv(
          "        worst at {0}: analytic {1:E6}, numeric {2:E6}\n",
          r.worstWhere, r.worstAnalytic, r.worstNumeric);
  };
  llvm::outs() << llvm::formatv("  {0,-4}  {1}  {2}  {3,7}  {4,13}  {5,13}  "
                                "{6}\n",
                                "arg", llvm::left_justify("name", nameWidth),
                                llvm::left_justify("type", typeWidth), "checks",
                                "worst rel err", "worst abs err", "result");
  bool pass = lossRow.pass;
  double worst = 0;
  SmallVector<std::string> failed;
  for (const Row &r : rows) {
    printRow(r);
    pass &= r.pass;
    worst = std::max(worst, r.worstRel);
    if (!r.pass)
      failed.push_back(r.label == "all"
                           ? "all arguments together"
                           : "argument " + r.label + " (" + r.name + ")");
  }
  printRow(lossRow);
  if (!lossRow.pass)
    failed.push_back("the loss @" + gradName + " returns");
  if (showProgress())
    llvm::errs() << llvm::formatv(
        "pipeopt-gradcheck: {0} loss evaluations, {1:E2} s each\n", evaluations,
        evaluations ? evalSeconds / evaluations : 0.0);
  std::string argumentsText =
      std::to_string(info.wrt.size()) +
      (info.wrt.size() == 1 ? " argument" : " arguments");
  if (pass) {
    llvm::outs() << llvm::formatv(
        "pipeopt-gradcheck: PASS ({0}, worst relative error {1:E2})\n",
        argumentsText, worst);
    return kPass;
  }
  llvm::outs() << llvm::formatv(
      "pipeopt-gradcheck: FAIL ({0}, worst relative error {1:E2}; failed: "
      "{2})\n",
      argumentsText, worst, llvm::join(failed, ", "));
  return kFail;
}
