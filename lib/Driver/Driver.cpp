//===- Driver.cpp - the pipeopt compiler driver ---------------------------===//
//
// Part of pipeopt. The stages of a compilation (Driver.h).
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Driver/Driver.h"
#include "OutputFiles.h"

#include "pipeopt/Analysis/ArgumentSelection.h"
#include "pipeopt/Conversion/PipeToRuntime/PipeToRuntime.h"
#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"
#include "pipeopt/InitAll.h"
#include "pipeopt/Pipelines/Pipelines.h"
#include "pipeopt/Programs/ProgramChecks.h"
#include "pipeopt/Schedule/Schedule.h"
#include "pipeopt/Support/NumberText.h"
#include "pipeopt/Support/Plural.h"
#include "pipeopt/Target/SharedObject.h"
#include "pipeopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Target/TargetMachine.h"

#include <chrono>
#include <cmath>

using namespace mlir;
using namespace pipeopt;
using namespace pipeopt::driver;

#ifndef PIPEOPT_DEFAULT_CC
#define PIPEOPT_DEFAULT_CC "cc"
#endif
// Where libpipeopt_rt_cuda.so is built, and the CUDA toolkit's libraries
// (configured paths; both are the RUNPATH of a --target=cuda model).
#ifndef PIPEOPT_RUNTIME_LIB_DIR
#define PIPEOPT_RUNTIME_LIB_DIR ""
#endif
#ifndef PIPEOPT_CUDA_LIB_DIR
#define PIPEOPT_CUDA_LIB_DIR ""
#endif

char DiagnosedError::ID = 0;

void DiagnosedError::log(llvm::raw_ostream &os) const {
  os << "the error has been reported";
}

std::error_code DiagnosedError::convertToErrorCode() const {
  return llvm::inconvertibleErrorCode();
}

int pipeopt::driver::reportError(llvm::Error error, llvm::StringRef tool) {
  llvm::handleAllErrors(
      std::move(error), [](const DiagnosedError &) {},
      [&](const llvm::ErrorInfoBase &e) {
        llvm::errs() << tool << ": error: " << e.message() << "\n";
      });
  return 1;
}

static llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static llvm::Error diagnosed() { return llvm::make_error<DiagnosedError>(); }

/// "--name" for errors about option `name`.
static std::string flag(llvm::StringRef name) { return ("--" + name).str(); }

/// The first of `names` that is given, for "... applies only to ..." errors.
static std::optional<std::string>
firstGiven(const CompileOptions &o,
           std::initializer_list<llvm::StringRef> names) {
  for (llvm::StringRef name : names)
    if (o.isGiven(name))
      return name.str();
  return std::nullopt;
}

/// AdamW's betas from `text`, "B1,B2" (each in [0, 1)).
static llvm::Expected<std::pair<double, double>>
parseBetas(llvm::StringRef text) {
  auto [first, second] = text.split(',');
  double beta1, beta2;
  if (first.trim().getAsDouble(beta1) || second.trim().getAsDouble(beta2) ||
      !(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
    return makeError("--betas: expected two numbers B1,B2 in [0, 1), got '" +
                     text + "'");
  return std::pair{beta1, beta2};
}

/// The training options.
static llvm::Error checkTrainingOptions(CompileOptions &o) {
  // Training options without --train would be ignored.
  if (!o.train) {
    if (auto name =
            firstGiven(o, {"loss", "trainable", "recompute", "optimizer", "lr",
                           "momentum", "betas", "eps", "weight-decay"}))
      return makeError(flag(*name) +
                       " applies only to training builds (--train)");
    return llvm::Error::success();
  }
  // An empty value would mean `auto` to pipe-differentiate; as for
  // --microbatch-args, it is more likely a script's empty variable.
  if (o.isGiven("trainable") && llvm::StringRef(o.trainable).trim().empty())
    return makeError("--trainable: empty value (expected auto, all, none or "
                     "a comma-separated list of argument indices such as "
                     "'0,3')");
  if (o.optimizer.empty())
    o.optimizer = o.reference ? "none" : "sgd";
  if (!pipe::symbolizeOptimizerKind(o.optimizer))
    return makeError("--optimizer: expected none, sgd, momentum or adamw; "
                     "got '" +
                     o.optimizer + "'");
  if (auto betas = parseBetas(o.betas); !betas)
    return betas.takeError();
  for (auto [name, value] : {std::pair<llvm::StringRef, double>{"lr", o.lr},
                             {"momentum", o.momentum},
                             {"weight-decay", o.weightDecay}})
    if (!(value >= 0) || !std::isfinite(value))
      return makeError(flag(name) + ": expected a finite value >= 0, got " +
                       numberText(value));
  if (!(o.eps > 0) || !std::isfinite(o.eps))
    return makeError("--eps: expected a finite value > 0, got " +
                     numberText(o.eps));
  if (o.optimizer == "none")
    if (auto name =
            firstGiven(o, {"lr", "momentum", "betas", "eps", "weight-decay"}))
      return makeError(flag(*name) +
                       " applies only with an optimizer (--optimizer "
                       "sgd|momentum|adamw)");
  if (o.optimizer != "momentum" && o.isGiven("momentum"))
    return makeError("--momentum applies only to --optimizer momentum");
  // The ranges the runtime's manifest reader enforces, checked here so
  // that no .so is built that pipeopt-run would refuse.
  if (o.momentum > 1)
    return makeError("--momentum: expected a value in [0, 1], got " +
                     numberText(o.momentum));
  if (o.optimizer != "adamw")
    if (auto name = firstGiven(o, {"betas", "eps"}))
      return makeError(flag(*name) + " applies only to --optimizer adamw");
  return llvm::Error::success();
}

llvm::Error pipeopt::driver::checkOptions(CompileOptions &o) {
  // --microbatch-args is checked here (its indices against the model by
  // convert-pipe-to-runtime).
  if (llvm::Expected<ArgumentSelection> sel =
          ArgumentSelection::parse(o.microbatchArgs, "--microbatch-args");
      !sel)
    return sel.takeError();
  if (llvm::Error e = checkTrainingOptions(o))
    return e;
  if (o.schedule.empty())
    o.schedule = o.train && !o.reference
                     ? "1f1b"
                     : std::string(schedule::kInferenceSchedule);
  if (o.cc.empty())
    o.cc = PIPEOPT_DEFAULT_CC;

  if (o.target != "cpu" && o.target != "cuda")
    return makeError("--target: expected cpu or cuda, got '" + o.target + "'");
  if (o.target == "cuda" && !haveCUDA())
    return makeError("--target=cuda: pipeopt was built without CUDA: the "
                     "toolkit was not found at configure time (install it, "
                     "e.g. in /usr/local/cuda, and configure again)");
  if (o.target != "cuda" && o.isGiven("cuda-arch"))
    return makeError("--cuda-arch applies only to --target=cuda");
  if (o.target == "cuda" && !llvm::StringRef(o.cudaArch).starts_with("sm_"))
    return makeError("--cuda-arch: expected an architecture such as sm_90, "
                     "got '" +
                     o.cudaArch + "'");
  if (o.target == "cuda" && o.approximateMath)
    return makeError("--approximate-math applies only to --target=cpu (on the "
                     "GPU math functions are CUDA's libdevice)");
  if (!o.cache && o.isGiven("cache-dir"))
    return makeError("--cache-dir applies only with the object cache on "
                     "(--cache=false turns it off)");
  if (o.target == "cuda" && o.isGiven("outline-loop-nests"))
    return makeError("--outline-loop-nests applies only to --target=cpu (a "
                     "cuda build's loop nests are GPU kernels, outlined by "
                     "gpu-kernel-outlining)");
  if (o.target == "cuda")
    if (llvm::Error e = checkCUDAChip(o.cudaArch))
      return makeError("--cuda-arch: " + llvm::toString(std::move(e)));
  if (o.optLevel > 3)
    return makeError("-O: expected an optimization level 0, 1, 2 or 3, got " +
                     llvm::Twine(o.optLevel));
  // --mcpu is checked before any work: LLVM only warns about an unknown CPU
  // (once per subtarget it creates) and later dies with a fatal error.
  if (auto tm = target::createHostTargetMachine({o.cpu, o.optLevel}); !tm)
    return tm.takeError();

  if (o.isGiven("o") && o.outputFile.empty())
    return makeError("-o needs a file name (got an empty one)");
  if (o.outputFile.empty()) {
    if (o.inputFile == "-")
      return makeError("-o is required when reading stdin");
    // foo.tosa.mlir -> foo.so
    std::string stem = stemOf(stemOf(llvm::sys::path::filename(o.inputFile)));
    static constexpr llvm::StringLiteral extensions[] = {
        ".scheduled.mlir", ".llvm.mlir", ".ll", ".o", ".so"};
    o.outputFile = stem + extensions[size_t(o.emit)].str();
  }
  std::string outStem = stemOf(o.outputFile);
  if (o.isGiven("manifest") && o.manifestFile.empty())
    return makeError("--manifest needs a file name (got an empty one)");
  if (o.manifestFile.empty() && o.emit != Emit::Scheduled) {
    // -o /dev/null would put the manifest at /dev/null.manifest.json, and
    // -o - (standard output) at ./-.manifest.json.
    llvm::sys::fs::file_status status;
    if (o.outputFile == "-")
      return makeError("-o - is standard output, so the manifest's path "
                       "cannot be derived from it; give --manifest=<file>");
    if (!llvm::sys::fs::status(o.outputFile, status) &&
        llvm::sys::fs::exists(status) &&
        !llvm::sys::fs::is_regular_file(status) &&
        !llvm::sys::fs::is_directory(status)) // reported with the outputs
      return makeError("-o " + o.outputFile +
                       " is not a regular file, so the manifest's path cannot "
                       "be derived from it; give --manifest=<file>");
    o.manifestFile = outStem + ".manifest.json";
  }

  // Every file this run writes, in the order of the steps; all are checked
  // before any work (an output path equal to the input would replace the
  // model with the shared object or the manifest).
  llvm::SmallVector<OutputFile> outputs = {{"output (-o)", o.outputFile}};
  if (o.emit != Emit::Scheduled)
    outputs.push_back({"manifest (--manifest)", o.manifestFile});
  if (o.saveTemps) {
    auto temp = [&](Emit step, llvm::StringRef ext) {
      if (o.emit > step)
        outputs.push_back({("--save-temps file"), outStem + ext.str()});
    };
    temp(Emit::Scheduled, ".scheduled.mlir");
    temp(Emit::LLVMDialect, ".llvm.mlir");
    temp(Emit::LLVMIR, ".ll");
    temp(Emit::Object, ".o");
  }
  return checkOutputs(o.toolName, o.inputFile, outputs);
}

/// Name of the module attribute pipe-auto-schedule writes.
static constexpr llvm::StringLiteral kAutoScheduleAttr =
    pipe::PipeDialect::AutoScheduleAttrHelper::getNameStr();
/// Name of the #pipe.gradient attribute pipe-differentiate puts on the
/// model function (the generated functions, `wrt`, `loss`, ...).
static constexpr llvm::StringLiteral kGradientAttr =
    pipe::PipeDialect::GradientAttrHelper::getNameStr();

llvm::Expected<OwningOpRef<ModuleOp>>
pipeopt::driver::parseInput(MLIRContext &context, llvm::SourceMgr &sourceMgr,
                            const CompileOptions &options) {
  std::string err;
  auto buffer = openInputFile(options.inputFile, &err);
  if (!buffer)
    return makeError(err);
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  OwningOpRef<ModuleOp> parsed;
  {
    // An op or type of a dialect the context does not load: MLIR says which
    // dialects are available; the error says what pipeopt takes and what
    // to do (unsupportedDialectMessage), at the same location.
    ScopedDiagnosticHandler unsupported(&context, [](Diagnostic &d) {
      if (d.getSeverity() != DiagnosticSeverity::Error)
        return failure();
      std::string text = d.str();
      llvm::StringRef m(text), dialect, op;
      if (m.consume_front("Dialect `")) {
        auto [name, rest] = m.split("' not found for custom op '");
        if (!rest.empty())
          dialect = name, op = rest.split('\'').first;
      } else if (m.consume_front("`!\"") || m.consume_front("`#\"")) {
        auto [name, rest] = m.split('"');
        if (rest.contains("created with unregistered dialect"))
          dialect = name, op = text.substr(1, 1) == "!" ? "!" : "#";
      }
      if (dialect.empty())
        return failure();
      std::string what =
          op == "!" || op == "#" ? op.str() + dialect.str() : op.str();
      Diagnostic replacement(d.getLocation(), DiagnosticSeverity::Error);
      replacement << unsupportedDialectMessage(dialect, what);
      d = std::move(replacement);
      return failure(); // the next handler reports it
    });
    parsed = parseSourceFile<ModuleOp>(sourceMgr, &context);
  }
  OwningOpRef<ModuleOp> module = std::move(parsed);
  if (!module)
    return diagnosed();
  // pipe.auto_schedule records what pipe-auto-schedule chose in the run that
  // wrote it. An input's (e.g. the output of --emit scheduled) describes an
  // earlier run: it is dropped, so that only this run's --schedule auto
  // choice is ever read (the build follows its own pipe.programs).
  (*module)->removeAttr(kAutoScheduleAttr);
  return module;
}

/// Runs `pm` on `module`; `what` names it in the error.
static llvm::Error runPasses(PassManager &pm, ModuleOp module,
                             const llvm::Twine &what) {
  if (failed(pm.run(module)))
    return makeError(what);
  return llvm::Error::success();
}

/// The indices of the arguments of `fn` marked pipe.microbatched, as
/// microbatch-args entries ("none" if there are none).
static std::vector<std::string> microbatchedArguments(func::FuncOp fn) {
  std::vector<std::string> args;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (fn.getArgAttr(i, pipe::PipeDialect::getMicrobatchedAttrName()))
      args.push_back(std::to_string(i));
  if (args.empty())
    args.push_back("none");
  return args;
}

/// pipe-prepare-training's options from `o`.
static PrepareTrainingPassOptions trainingOptions(const CompileOptions &o,
                                                  llvm::StringRef function) {
  PrepareTrainingPassOptions t;
  t.function = function.str();
  t.reference = o.reference;
  t.optimizer = o.optimizer != "none";
  t.loss = o.loss;
  // The text of --trainable is a comma-separated list, as the option of
  // pipe-differentiate parses it.
  llvm::SmallVector<llvm::StringRef> trainable;
  llvm::StringRef(o.trainable).split(trainable, ',');
  for (llvm::StringRef entry : trainable)
    t.trainable.push_back(entry.str());
  t.microbatchArgs.assign(o.microbatchArgs.begin(), o.microbatchArgs.end());
  t.recompute = o.recompute;
  return t;
}

/// The function a training build compiles (pipe-prepare-training): the
/// reference's one-microbatch step or the loss function to partition.
static llvm::Expected<func::FuncOp> prepareTraining(ModuleOp module,
                                                    func::FuncOp model,
                                                    const CompileOptions &o,
                                                    BuiltModel &built) {
  std::string modelName = model.getSymName().str();
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  pm.addPass(createPrepareTrainingPass(trainingOptions(o, modelName)));
  if (failed(pm.run(module)))
    return makeError("--train: pipe-prepare-training failed on @" + modelName);
  model = module.lookupSymbol<func::FuncOp>(modelName);
  auto info = model->getAttrOfType<pipe::GradientAttr>(kGradientAttr);
  FlatSymbolRefAttr ref = o.reference ? info.getGrad() : info.getLossFn();
  auto fn = module.lookupSymbol<func::FuncOp>(ref.getAttr());
  // The runtime feeds per-microbatch slices to exactly the arguments the
  // pass marked (data and target). A reference of a model differentiated
  // before without a `data` entry keeps --microbatch-args.
  if (!o.reference || info.getData())
    built.microbatchArgs = microbatchedArguments(fn);
  return fn;
}

/// --reference: one stage on one rank, the unpartitioned model (with
/// --train its training step).
static llvm::Error buildReference(ModuleOp module, const CompileOptions &o,
                                  BuiltModel &built) {
  // The reference ignores any schedule in the input.
  for (auto p : llvm::make_early_inc_range(module.getOps<pipe::ProgramOp>()))
    p.erase();
  FailureOr<func::FuncOp> model =
      findModelFunction(module, o.function, "choose one with --function=NAME");
  if (failed(model))
    return diagnosed();
  std::string modelName = model->getSymName().str();
  // --train on a model that was differentiated before (pipe.gradient, e.g.
  // `pipeopt -pipe-differentiate` run by hand): its functions are used as
  // they are, and the functions pipe.gradient names are kept.
  SmallVector<func::FuncOp> roots{*model};
  bool differentiated = o.train && (*model)->hasAttr(kGradientAttr);
  if (differentiated) {
    if (auto name = firstGiven(o, {"loss", "trainable", "recompute"}))
      return makeError(flag(*name) + " does not apply: @" + modelName +
                       " was differentiated before (it has '" + kGradientAttr +
                       "'), so its gradient function is compiled as it is");
    auto info = (*model)->getAttrOfType<pipe::GradientAttr>(kGradientAttr);
    for (FlatSymbolRefAttr ref :
         {info.getB(), info.getBwd(), info.getFwd(), info.getGrad(),
          info.getLossFn(), info.getW()})
      if (ref)
        if (auto fn = module.lookupSymbol<func::FuncOp>(ref.getAttr()))
          roots.push_back(fn);
  }
  keepReachedFunctions(module, roots);
  // pipe-prepare's checks and inlining, as for pipelined builds: a
  // recursive model or a call of an external function is a diagnostic
  // here, not a crash or a failed dlopen at run time.
  {
    PassManager pm(module.getContext(), ModuleOp::getOperationName());
    pm.addPass(createPreparePass());
    if (llvm::Error e =
            runPasses(pm, module, "pipe-prepare failed on the reference model"))
      return e;
  }
  // --train: the program runs the training step of each microbatch
  // (loss and gradients, averaged over microbatches) instead of the model.
  std::string programFunction = modelName;
  if (o.train) {
    llvm::Expected<func::FuncOp> step =
        prepareTraining(module, *model, o, built);
    if (!step)
      return step.takeError();
    programFunction = step->getSymName().str();
    // Only what the training step reaches is compiled (not the model
    // function or the split F / B / W functions it was derived with).
    keepReachedFunctions(module, {*step});
  }
  if (failed(
          buildSingleStageProgram(module, programFunction, o.numMicrobatches)))
    return diagnosed();
  return llvm::Error::success();
}

/// The front half: partition and schedule the model (with --train its
/// loss, then pipe-materialize-backward).
static llvm::Error buildPipeline(ModuleOp module, const CompileOptions &o,
                                 BuiltModel &built) {
  bool autoSchedule = o.schedule == "auto";
  FailureOr<func::FuncOp> model =
      findModelFunction(module, o.function, "choose one with --function=NAME");
  if (failed(model))
    return diagnosed();
  if (o.train) {
    llvm::Expected<func::FuncOp> lossFn =
        prepareTraining(module, *model, o, built);
    if (!lossFn)
      return lossFn.takeError();
    model = *lossFn;
  }
  keepReachedFunctions(module, {*model});
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  std::string description;
  if (!o.frontHalf.empty()) {
    std::string perr;
    llvm::raw_string_ostream perrs(perr);
    if (failed(parsePassPipeline(o.frontHalf, pm, perrs)))
      return makeError("front-half pipeline '" + o.frontHalf + "': " + perr);
    description = o.frontHalf;
  } else {
    // The registered pipeopt-pipeline, with the device and this tool's
    // options first and --partition-options (pipeopt-pipeline options
    // text) after, so they win. With --schedule auto, num-microbatches is
    // only passed when given (pipe-auto-schedule then keeps it; otherwise
    // it chooses M). --target=cuda plans for the GPU the backend is built
    // for (the h200 preset: its FLOP/s, memory capacity and links), not
    // the host.
    PipeoptPipelineOptions options;
    options.device = o.target == "cuda" ? "h200" : "cpu";
    options.numStages = o.numStages;
    if (!autoSchedule || o.isGiven("num-microbatches"))
      options.numMicrobatches = o.numMicrobatches;
    options.schedule = o.schedule;
    options.training = o.train;
    if (o.isGiven("memory-limit"))
      options.memoryLimit = o.memoryLimit;
    std::string perr;
    llvm::raw_string_ostream perrs(perr);
    if (failed(options.parseFromString(o.partitionOptions, perrs)))
      return makeError("invalid pipeopt-pipeline options '" +
                       o.partitionOptions + "'");
    if (autoSchedule && options.schedule != "auto")
      return makeError("--schedule auto lets the explorer choose the "
                       "schedule, but --partition-options sets schedule=" +
                       options.schedule.getValue() + "; give one or the other");
    buildPipeoptPipeline(pm, options);
    llvm::raw_string_ostream os(description);
    os << "pipeopt-pipeline";
    options.print(os);
  }
  if (o.train) {
    // trainable: auto (the default), i.e. the pipe.trainable of the loss
    // function that pipe-prepare-training recorded.
    MaterializeBackwardPassOptions materialize;
    materialize.recompute = o.recompute;
    pm.addPass(createMaterializeBackwardPass(materialize));
  }
  if (llvm::Error e =
          runPasses(pm, module,
                    "front half failed (" + description +
                        (o.train ? ", pipe-materialize-backward" : "") + ")"))
    return e;
  // --schedule auto: the rest of the build follows the choice that
  // pipe-auto-schedule made in this run.
  if (autoSchedule) {
    auto choice =
        module->getAttrOfType<pipe::AutoScheduleAttr>(kAutoScheduleAttr);
    if (!choice)
      return makeError("--schedule auto: the front half left no '" +
                       kAutoScheduleAttr + "' attribute");
    // The attribute's verifier checked num_microbatches > 0.
    built.schedule = choice.getSchedule().str();
    built.numMicrobatches = choice.getNumMicrobatches();
  }
  return llvm::Error::success();
}

/// Checks of an input that has pipe.programs already: front-half options
/// would be ignored, and training needs materialized programs.
static llvm::Error checkScheduledInput(ModuleOp module,
                                       const CompileOptions &o) {
  if (o.train && !o.reference) {
    // pipe-materialize-backward's programs are compiled as they are; a
    // schedule with callee-less backward actions was built without the
    // loss, which --train appends before partitioning.
    bool materialized = true;
    module->walk(
        [&](pipe::BackwardOp op) { materialized &= bool(op.getCallee()); });
    if (!materialized)
      return makeError(
          "--train: this input already has pipe.programs whose "
          "backward actions have no callee; --train appends the loss "
          "before partitioning, so give it the unscheduled model (or "
          "run pipe-materialize-backward on a schedule of a model "
          "that returns its loss)");
    if (auto name = firstGiven(o, {"loss", "trainable", "recompute"}))
      return makeError(flag(*name) +
                       " does not apply to this input: its training programs "
                       "are already materialized (pipe-materialize-backward)");
  }
  return llvm::Error::success();
}

llvm::Expected<BuiltModel>
pipeopt::driver::buildPrograms(ModuleOp module, const CompileOptions &o) {
  BuiltModel built;
  built.microbatchArgs = o.microbatchArgs;
  built.schedule = o.schedule;
  built.numMicrobatches = o.numMicrobatches;
  bool autoSchedule = o.schedule == "auto";
  bool hasPrograms = !module.getOps<pipe::ProgramOp>().empty();
  // Front-half options that would be ignored are errors, not silent no-ops:
  // an input that is already scheduled is compiled as it is, and the
  // reference is one stage.
  if (hasPrograms && !o.reference)
    if (llvm::Error e = checkScheduledInput(module, o))
      return std::move(e);
  if (autoSchedule && !o.frontHalf.empty())
    return makeError("--schedule auto chooses the front half's "
                     "configuration; it does not apply with --front-half");
  if (o.reference || hasPrograms) {
    std::vector<llvm::StringRef> unused{"num-stages", "schedule",
                                        "partition-options", "front-half",
                                        "memory-limit"};
    if (!o.reference) {
      unused.push_back("num-microbatches");
      unused.push_back("function");
    }
    for (llvm::StringRef name : unused)
      if (o.isGiven(name))
        return makeError(
            flag(name) +
            (o.reference ? " does not apply to --reference (one stage, the "
                           "unpartitioned model)"
                         : " does not apply to this input: it already has "
                           "pipe.program ops, which are compiled as they are "
                           "(give the unscheduled model to partition and "
                           "schedule it)"));
  }
  if (o.reference) {
    if (llvm::Error e = buildReference(module, o, built))
      return std::move(e);
  } else if (!hasPrograms) {
    if (llvm::Error e = buildPipeline(module, o, built))
      return std::move(e);
  } else if (o.verifySchedule) {
    // Programs given in the input (hand-written or edited) get the checks
    // the front half ends with, so an inconsistent table (a missing send,
    // a deadlock) is a precise diagnostic here and not a failed run later.
    PassManager pm(module.getContext(), ModuleOp::getOperationName());
    pm.addPass(createVerifySchedulePass());
    if (llvm::Error e = runPasses(
            pm, module,
            "the pipe.programs of the input do not form a valid schedule "
            "(pipe-verify-schedule)"))
      return std::move(e);
  }
  // The training rules follow the schedule that was built, as the
  // pipe.programs name it, not --schedule: --partition-options
  // (schedule=...), --front-half or --schedule auto may have chosen another
  // one, and programs given in the input name their own.
  if (!o.reference) {
    FailureOr<BuiltPrograms> programs = inspectPrograms(module);
    if (failed(programs))
      return diagnosed();
    if (autoSchedule && (programs->schedule != built.schedule ||
                         programs->microbatches != built.numMicrobatches))
      return makeError(
          "--schedule auto chose " + built.schedule + " with " +
          countOf(built.numMicrobatches, "microbatch", "microbatches") +
          ", but the pipe.programs are " +
          (programs->schedule.empty() ? "unnamed" : programs->schedule) +
          " with " + llvm::Twine(programs->microbatches));
  }
  // The optimizer (and the rules of asynchronous updates). A reference
  // without an optimizer keeps the plain manifest (loss and gradients as
  // outputs).
  if (o.train && !(o.reference && o.optimizer == "none")) {
    SetOptimizerPassOptions opt;
    opt.kind = *pipe::symbolizeOptimizerKind(o.optimizer);
    opt.lr = o.lr;
    opt.momentum = o.momentum;
    auto betas = parseBetas(o.betas);
    if (!betas)
      return betas.takeError();
    opt.beta1 = betas->first;
    opt.beta2 = betas->second;
    opt.eps = o.eps;
    opt.weightDecay = o.weightDecay;
    PassManager pm(module.getContext(), ModuleOp::getOperationName());
    pm.addPass(createSetOptimizerPass(opt));
    if (llvm::Error e = runPasses(pm, module, "pipe-set-optimizer failed"))
      return std::move(e);
  }
  if (!o.train) {
    bool hasBackward = false;
    module->walk([&](pipe::BackwardOp op) {
      hasBackward = !op.getCallee();
      return hasBackward ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (hasBackward)
      return makeError(
          (hasPrograms ? llvm::Twine("the input's programs have")
                       : "--schedule " + o.schedule + " has") +
          " backward actions: compile the unscheduled model with --train "
          "(and --loss) for a training step, or use --schedule forward-only");
  }
  return built;
}

llvm::Error pipeopt::driver::lowerToLLVMDialect(ModuleOp module,
                                                const CompileOptions &o,
                                                const BuiltModel &built,
                                                llvm::StringRef manifestPath) {
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  // Both pipelines take the same front options.
  auto common = [&](auto &options) {
    options.manifest = manifestPath.str();
    options.microbatchArgs = llvm::ArrayRef<std::string>(built.microbatchArgs);
    options.kernels = o.kernels;
    options.fuse = o.fuse;
  };
  if (o.target == "cuda") {
    LowerToCUDAOptions options;
    common(options);
    options.chip = o.cudaArch;
    buildLowerToCUDAPipeline(pm, options);
  } else {
    LowerToLLVMOptions options;
    common(options);
    options.approximateMath = o.approximateMath;
    options.inputViews = o.inputViews;
    options.outlineLoopNests = o.outlineLoopNests;
    options.outlineRepeats = o.outlineRepeats;
    buildLowerToLLVMPipeline(pm, options);
  }
  return runPasses(pm, module,
                   o.target == "cuda" ? "pipeopt-lower-to-cuda failed"
                                      : "pipeopt-lower-to-llvm failed");
}

namespace {
/// Prints "<tool>: <stage> <seconds> s" with `timing`.
class StageTimer {
public:
  StageTimer(const CompileOptions &o) : o(o) {}
  void done(llvm::StringRef stage) {
    auto now = std::chrono::steady_clock::now();
    if (o.timing)
      llvm::errs() << o.toolName
                   << llvm::format(
                          ": %-12s %8.3f s\n", stage.str().c_str(),
                          std::chrono::duration<double>(now - last).count());
    last = now;
  }

private:
  const CompileOptions &o;
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
};
} // namespace

static llvm::Error linkModel(const CompileOptions &o, PendingManifest &manifest,
                             StageTimer &timer, const std::string &objPath,
                             bool temporaryObject, bool needsCRunnerUtils,
                             bool needsVectorMath);

/// Stage 5: LLVM IR, optimization, object and link; writes what `o.emit`
/// asks for (and the --save-temps files).
static llvm::Error emit(ModuleOp module, const CompileOptions &o,
                        PendingManifest &manifest, StageTimer &timer,
                        llvm::ArrayRef<llvm::StringRef> cacheInputs) {
  std::string outStem = stemOf(o.outputFile);
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> tm =
      target::createHostTargetMachine({o.cpu, o.optLevel});
  if (!tm)
    return tm.takeError();
  // The object cache (SharedObject.h): an unchanged module is not
  // translated, optimized and compiled again.
  std::string cacheDir, cacheKey;
  std::optional<target::CachedObject> cached;
  if (!cacheInputs.empty()) {
    cacheDir =
        o.cacheDir.empty() ? target::defaultObjectCacheDir() : o.cacheDir;
    if (!cacheDir.empty()) {
      cacheKey = target::objectCacheKey(cacheInputs, **tm, o.optLevel);
      if (!cacheKey.empty())
        cached = target::lookupCachedObject(cacheDir, cacheKey);
    }
  }
  if (cached) {
    timer.done("cached");
    return linkModel(o, manifest, timer, cached->objectPath,
                     /*temporaryObject=*/false, cached->needsCRunnerUtils,
                     cached->needsVectorMath);
  }
  llvm::LLVMContext llvmContext;
  llvm::Expected<std::unique_ptr<llvm::Module>> translated =
      target::translateToLLVMIR(module, llvmContext, **tm,
                                llvm::sys::path::filename(outStem));
  if (!translated)
    return translated.takeError();
  std::unique_ptr<llvm::Module> llvmModule = std::move(*translated);
  target::optimizeModule(*llvmModule, **tm, o.optLevel);
  timer.done("llvm-opt");
  if (o.saveTemps || o.emit == Emit::LLVMIR) {
    std::string path = o.emit == Emit::LLVMIR ? o.outputFile : outStem + ".ll";
    if (llvm::Error e = writeText(path, [&](llvm::raw_ostream &os) {
          llvmModule->print(os, nullptr);
        }))
      return e;
    if (o.emit == Emit::LLVMIR)
      return llvm::Error::success();
  }

  // The object is the output (--emit=obj), a kept temporary (--save-temps)
  // or a unique temporary file that is removed after linking (so an
  // unrelated <stem>.o next to the output is never touched).
  std::string objPath;
  bool temporaryObject = o.emit != Emit::Object && !o.saveTemps;
  if (o.emit == Emit::Object) {
    objPath = o.outputFile;
  } else if (o.saveTemps) {
    objPath = outStem + ".o";
  } else {
    llvm::SmallString<256> tmp;
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
            "pipeopt-compile-" + llvm::sys::path::filename(outStem), "o", tmp))
      return makeError("cannot create a temporary object file: " +
                       ec.message());
    objPath = std::string(tmp);
    llvm::sys::RemoveFileOnSignal(objPath);
  }
  if (llvm::Error e = target::emitObjectFile(*llvmModule, **tm, objPath)) {
    if (temporaryObject)
      llvm::sys::fs::remove(objPath);
    return e;
  }
  timer.done("codegen");
  bool crunner = target::needsCRunnerUtils(*llvmModule);
  bool mvec = target::needsVectorMath(*llvmModule);
  if (!cacheKey.empty())
    target::storeCachedObject(cacheDir, cacheKey, objPath, crunner, mvec);
  return linkModel(o, manifest, timer, objPath, temporaryObject, crunner, mvec);
}

/// Links the object at `objPath` into the model .so (or, with --emit=obj,
/// copies a cached object to the output) and records the .so in the
/// manifest; removes a temporary object.
static llvm::Error linkModel(const CompileOptions &o, PendingManifest &manifest,
                             StageTimer &timer, const std::string &objPath,
                             bool temporaryObject, bool needsCRunnerUtils,
                             bool needsVectorMath) {
  if (o.emit == Emit::Object) {
    if (objPath != o.outputFile)
      if (std::error_code ec = llvm::sys::fs::copy_file(objPath, o.outputFile))
        return makeError("cannot write " + o.outputFile + ": " + ec.message());
    return llvm::Error::success();
  }

  // A cuda model calls the mgpu* functions and pipeopt_rt_gpu_* kernels of
  // libpipeopt_rt_cuda.so, which runs them with the CUDA runtime and cuBLAS:
  // all three are NEEDED (even the ones the model references no symbol of)
  // and found through the model's RUNPATH.
  std::vector<std::string> extraLinkArgs;
  if (o.target == "cuda")
    extraLinkArgs = {"-Wl,--no-as-needed",
                     "-L" PIPEOPT_RUNTIME_LIB_DIR,
                     "-lpipeopt_rt_cuda",
                     "-L" PIPEOPT_CUDA_LIB_DIR,
                     "-lcudart",
                     "-lcublas",
                     "-Wl,--enable-new-dtags",
                     "-Wl,-rpath," PIPEOPT_RUNTIME_LIB_DIR,
                     "-Wl,-rpath," PIPEOPT_CUDA_LIB_DIR};
  if (needsVectorMath)
    extraLinkArgs.push_back("-lmvec");
  llvm::Error linked = target::linkSharedLibrary(
      objPath, o.outputFile, o.cc, needsCRunnerUtils, extraLinkArgs);
  if (temporaryObject)
    llvm::sys::fs::remove(objPath);
  if (linked)
    return linked;
  // The manifest records the linked file (model_file). If that fails (a
  // full disk), the .so goes too: a failed build leaves neither.
  if (std::optional<std::string> pending = manifest.pendingPath())
    if (llvm::Error e =
            target::recordModelFile(*pending, o.outputFile, o.manifestFile)) {
      llvm::sys::fs::remove(o.outputFile);
      return e;
    }
  timer.done("link");
  return llvm::Error::success();
}

llvm::Error pipeopt::driver::compile(CompileOptions o) {
  StageTimer timer(o);
  if (llvm::Error e = checkOptions(o))
    return e;

  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics point at the source; dumping whole model functions as the
  // "current operation" (e.g. for partitioner warnings) is only noise.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  llvm::Expected<OwningOpRef<ModuleOp>> module =
      parseInput(context, sourceMgr, o);
  if (!module)
    return module.takeError();
  timer.done("parse");

  llvm::Expected<BuiltModel> built = buildPrograms(**module, o);
  if (!built)
    return built.takeError();
  timer.done("schedule");
  std::string outStem = stemOf(o.outputFile);
  if (o.saveTemps || o.emit == Emit::Scheduled) {
    std::string path =
        o.emit == Emit::Scheduled ? o.outputFile : outStem + ".scheduled.mlir";
    if (llvm::Error e = writeText(
            path, [&](llvm::raw_ostream &os) { (*module)->print(os); }))
      return e;
    if (o.emit == Emit::Scheduled)
      return llvm::Error::success();
  }

  // The object cache's key (Target/SharedObject.h, objectCacheKey): the
  // scheduled module and what the lowering does with it, taken before the
  // lowering, whose output differs from run to run. Not with --save-temps
  // or --emit=llvm-ir, which want the optimized IR.
  std::string cacheModule, cacheOptions;
  llvm::SmallVector<llvm::StringRef, 2> cacheInputs;
  if (o.cache && !o.saveTemps && o.emit != Emit::LLVMIR &&
      o.emit != Emit::LLVMDialect) {
    llvm::raw_string_ostream os(cacheModule);
    (*module)->print(os);
    cacheOptions = llvm::formatv(
        "target={0} cuda-arch={1} kernels={2} fuse={3} approximate-math={4} "
        "input-views={5} outline-loop-nests={6} outline-repeats={7} "
        "microbatch-args={8}",
        o.target, o.cudaArch, o.kernels, o.fuse, o.approximateMath,
        o.inputViews, o.outlineLoopNests, o.outlineRepeats,
        llvm::join(built->microbatchArgs, ","));
    cacheInputs = {cacheModule, cacheOptions};
  }

  // Every later successful return commits the manifest.
  PendingManifest manifest;
  llvm::Expected<std::string> manifestPath = manifest.start(o.manifestFile);
  if (!manifestPath)
    return manifestPath.takeError();
  if (llvm::Error e = lowerToLLVMDialect(**module, o, *built, *manifestPath))
    return e;
  timer.done("lower");
  if (o.saveTemps || o.emit == Emit::LLVMDialect) {
    std::string path =
        o.emit == Emit::LLVMDialect ? o.outputFile : outStem + ".llvm.mlir";
    if (llvm::Error e = writeText(
            path, [&](llvm::raw_ostream &os) { (*module)->print(os); }))
      return e;
  }
  if (o.emit != Emit::LLVMDialect)
    if (llvm::Error e = emit(**module, o, manifest, timer, cacheInputs))
      return e;
  return manifest.commit();
}
