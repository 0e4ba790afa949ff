//===- pipeopt-compile.cpp - model.mlir -> model.so + manifest -----*- C++
//-*-===//
//
// Part of pipeopt. Compiles a model into the shared object and manifest that
// pipeopt-run executes (docs/Runtime.md):
//
//   1. parse the input (func + tosa/linalg, optionally already scheduled);
//   2. if it has no pipe.program: either build the unpartitioned reference
//      program (--reference; with --train over the training step @f_grad
//      that pipe-differentiate derives), or run the front half
//      (pipe-prepare, pipe-partition, pipe-outline-stages, pipe-schedule);
//   3. run pipeopt-lower-to-llvm (--target=cuda: pipeopt-lower-to-cuda, which
//      also builds the kernels' fatbin with the CUDA toolkit) in-process
//      (writes the manifest);
//   4. translate to LLVM IR, optimize (-O3 by default) and emit an object
//      for the host, in-process;
//   5. link it into a shared object with the C compiler (--target=cuda:
//      against libpipeopt_rt_cuda.so, libcudart and libcublas).
//
// Before step 1, every output path is checked: it must be in an existing
// directory and name neither the input nor another output.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Support/CommandLine.h"
#include "pipeopt/Analysis/ArgumentSelection.h"
#include "pipeopt/Support/Plural.h"
#include "pipeopt/Codegen/Codegen.h"
#include "pipeopt/Conversion/PipeToRuntime/PipeToRuntime.h"
#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"
#include "pipeopt/InitAll.h"
#include "pipeopt/Pipelines/Pipelines.h"
#include "pipeopt/Schedule/Schedule.h"
#include "pipeopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <chrono>
#include <optional>

using namespace mlir;
namespace cl = llvm::cl;

#ifndef PIPEOPT_DEFAULT_CC
#define PIPEOPT_DEFAULT_CC "cc"
#endif
#ifndef PIPEOPT_LLVM_LIB_DIR
#define PIPEOPT_LLVM_LIB_DIR "/usr/lib/llvm-22/lib"
#endif
// Where libpipeopt_rt_cuda.so is built, and the CUDA toolkit's libraries
// (configured paths; both are the RUNPATH of a --target=cuda model).
#ifndef PIPEOPT_RUNTIME_LIB_DIR
#define PIPEOPT_RUNTIME_LIB_DIR ""
#endif
#ifndef PIPEOPT_CUDA_LIB_DIR
#define PIPEOPT_CUDA_LIB_DIR ""
#endif

static cl::OptionCategory category("pipeopt-compile options");

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input.mlir>"),
                                      cl::init("-"), cl::cat(category));
// Output paths (-o, --manifest, the --save-temps files) are checked before
// any work: each must be in an existing directory (none is created) and be
// a different file from the input and from every other output.
static cl::opt<std::string> outputFile(
    "o",
    cl::desc("Output shared object (default: <input stem>.so); its "
             "directory must exist, and it must not be the input file"),
    cl::value_desc("model.so"), cl::cat(category));
static cl::opt<std::string> manifestFile(
    "manifest",
    cl::desc("Manifest path (default: <output stem>.manifest.json); must "
             "differ from the input and -o"),
    cl::cat(category));
static cl::opt<bool> reference(
    "reference",
    cl::desc("Compile the unpartitioned model as one stage on one rank (the "
             "reference for pipelined runs); ignores pipe.programs in the "
             "input"),
    cl::cat(category));
static cl::opt<std::string> function(
    "function",
    cl::desc("Model function to compile (default: the only public function "
             "with a body); other public functions it does not call are "
             "left out"),
    cl::cat(category));
static cl::opt<int64_t> numStages("num-stages",
                                  cl::desc("Pipeline stages (front half)"),
                                  cl::init(2), cl::cat(category));
static cl::opt<int64_t>
    numMicrobatches("num-microbatches",
                    cl::desc("Microbatches per iteration (front half and "
                             "--reference)"),
                    cl::init(4), cl::cat(category));
static cl::opt<std::string>
    schedule("schedule",
             cl::desc("Schedule for pipe-schedule (front half); default "
                      "forward-only, with --train 1f1b; 'auto': the "
                      "explorer's choice of schedule, microbatches (unless "
                      "--num-microbatches is given) and chunks per rank "
                      "for --num-stages ranks (pipe-auto-schedule)"),
             cl::init(std::string(pipeopt::schedule::kInferenceSchedule)),
             cl::cat(category));
static cl::opt<std::string> memoryLimitOpt(
    "memory-limit",
    cl::desc("Per-device memory limit (80GiB, 16GB, 8e9; front half): "
             "pipe-partition's, and with --schedule auto the limit the "
             "chosen configuration's peak per-rank memory must fit "
             "(default: the device's capacity)"),
    cl::value_desc("bytes"), cl::cat(category));
static cl::opt<std::string> partitionOptions(
    "partition-options",
    cl::desc("Extra pipeopt-pipeline options, e.g. 'strategy=uniform "
             "memory-limit=16GB', added after device=cpu (--target=cuda: "
             "device=h200) and this tool's options (they override them, "
             "e.g. device=h100)"),
    cl::cat(category));
static cl::opt<std::string> frontHalf(
    "front-half",
    cl::desc("Replace the front-half pipeline (pass pipeline text without "
             "builtin.module(...))"),
    cl::cat(category));
static cl::list<std::string> microbatchArgs(
    "microbatch-args", cl::CommaSeparated,
    cl::desc("Model arguments that differ per microbatch: auto (the "
             "default), all, none or a comma-separated index list "
             "(convert-pipe-to-runtime; pipeopt/Analysis/ArgumentSelection.h)"),
    cl::cat(category));

// Training (--train): pipe-differentiate's options, forwarded as they are
// (the pass checks them), and the optimizer the runtime applies.
static cl::opt<bool>
    train("train",
          cl::desc("Compile a training step: loss and gradients of every "
                   "trainable argument, averaged over the microbatches, and "
                   "the --optimizer update (pipe-differentiate; pipelined: "
                   "pipe-materialize-backward)"),
          cl::cat(category));
static cl::opt<std::string> optimizer(
    "optimizer",
    cl::desc("Update after each training step: none, sgd, momentum (SGD with "
             "momentum) or adamw; default none with --reference (loss and "
             "gradients only), sgd otherwise"),
    cl::cat(category));
static cl::opt<double> lr("lr", cl::desc("Learning rate (default 0.01)"),
                          cl::init(0.01), cl::cat(category));
static cl::opt<double> momentumOpt(
    "momentum", cl::desc("Momentum of --optimizer momentum (default 0.9)"),
    cl::init(0.9), cl::cat(category));
static cl::opt<std::string>
    betas("betas", cl::desc("AdamW's B1,B2 (default 0.9,0.999)"),
          cl::init("0.9,0.999"), cl::cat(category));
static cl::opt<double> epsOpt("eps",
                              cl::desc("AdamW's epsilon (default 1e-8)"),
                              cl::init(1e-8), cl::cat(category));
static cl::opt<double> weightDecay(
    "weight-decay",
    cl::desc("Weight decay: L2 added to the gradient for sgd / momentum "
             "(torch.optim.SGD), decoupled for adamw (torch.optim.AdamW); "
             "default 0"),
    cl::init(0.0), cl::cat(category));
static cl::opt<std::string>
    loss("loss",
         cl::desc("Loss for --train: none (the model returns its own f32 "
                  "scalar loss), mse (target: the type of result 0) or "
                  "cross-entropy (result 0 is logits [..., C]; target: i64 "
                  "class indices [...])"),
         cl::init("none"), cl::cat(category));
static cl::opt<std::string> trainable(
    "trainable",
    cl::desc("Arguments that get gradients for --train: auto, all, none or "
             "a comma-separated index list"),
    cl::init("auto"), cl::cat(category));
static cl::opt<std::string> recompute(
    "recompute",
    cl::desc("What backward recomputes instead of saving, for --train: none, "
             "elementwise or all"),
    cl::init("none"), cl::cat(category));

enum class Emit { Scheduled, LLVMDialect, LLVMIR, Object, SharedObject };
static cl::opt<Emit> emit(
    "emit", cl::desc("Stop after a step and write its result to -o"),
    cl::values(clEnumValN(Emit::Scheduled, "scheduled",
                          "MLIR with pipe.programs (before lowering)"),
               clEnumValN(Emit::LLVMDialect, "mlir-llvm",
                          "MLIR in the LLVM dialect"),
               clEnumValN(Emit::LLVMIR, "llvm-ir", "optimized LLVM IR (.ll)"),
               clEnumValN(Emit::Object, "obj", "object file"),
               clEnumValN(Emit::SharedObject, "so",
                          "shared object + manifest (default)")),
    cl::init(Emit::SharedObject), cl::cat(category));
static cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimization level (0-3)"),
                                  cl::init(3), cl::Prefix, cl::cat(category));
static cl::opt<std::string>
    cpu("mcpu", cl::desc("Target CPU ('native' = this host's; default)"),
        cl::init("native"), cl::cat(category));
static cl::opt<bool> verifySchedule(
    "verify-schedule",
    cl::desc("Check pipe.programs given in the input with "
             "pipe-verify-schedule before lowering (default; =false only to "
             "build deliberately broken models that test the runtime's own "
             "checks)"),
    cl::init(true), cl::cat(category));
static cl::opt<std::string> ccPath("cc", cl::desc("C compiler used to link"),
                                   cl::init(PIPEOPT_DEFAULT_CC),
                                   cl::cat(category));
static cl::opt<bool> kernels(
    "kernels",
    cl::desc("Call the runtime's BLAS kernels (OpenBLAS; --target=cuda: "
             "cuBLAS / cuDNN) for f32/f64 contractions and convolutions "
             "(default; =false: naive loops or generated kernels, for "
             "comparisons)"),
    cl::init(true), cl::cat(category));
static cl::opt<std::string> target(
    "target",
    cl::desc("Where stage bodies run: cpu (default) or cuda (GPU kernels "
             "and cuBLAS/cuDNN calls, every buffer in device memory; the "
             ".so needs libpipeopt_rt_cuda.so; docs/CUDA.md)"),
    cl::init("cpu"), cl::cat(category));
static cl::opt<std::string> cudaArch(
    "cuda-arch",
    cl::desc("--target=cuda: GPU architecture of the kernels' cubin "
             "(default sm_90; the fatbin also carries PTX for it)"),
    cl::init("sm_90"), cl::cat(category));
static cl::opt<bool>
    fuse("fuse",
         cl::desc("Fuse element-wise linalg chains before bufferization "
                  "(default; =false: one loop nest per op, for comparisons)"),
         cl::init(true), cl::cat(category));
static cl::opt<bool> approximateMath(
    "approximate-math",
    cl::desc("Approximate f32 exp, log, tanh, ... with vectorizable "
             "polynomials instead of libm calls (erf/erfc always are)"),
    cl::init(false), cl::cat(category));

static cl::opt<bool> inputViews(
    "input-views",
    cl::desc("Read model inputs (weights, microbatch slices) in place from "
             "the runtime's memory (default); =false: copy them into new "
             "buffers at every call, as cuda builds do (for comparisons)"),
    cl::init(true), cl::cat(category));

static cl::opt<bool> saveTemps(
    "save-temps",
    cl::desc("Keep <output stem>.scheduled.mlir, .llvm.mlir, .ll and .o "
             "(each must differ from the input and the other outputs)"),
    cl::cat(category));
static cl::opt<bool> timing("timing",
                            cl::desc("Print the time of every step (s)"),
                            cl::cat(category));

namespace {
/// Prints "pipeopt-compile: <step> <seconds> s" with --timing.
class StepTimer {
public:
  void done(llvm::StringRef step) {
    auto now = std::chrono::steady_clock::now();
    if (timing)
      llvm::errs() << llvm::format("pipeopt-compile: %-12s %8.3f s\n",
                                   step.str().c_str(),
                                   std::chrono::duration<double>(now - last)
                                       .count());
    last = now;
  }

private:
  std::chrono::steady_clock::time_point last =
      std::chrono::steady_clock::now();
};
} // namespace

static int fail(const llvm::Twine &msg) {
  llvm::errs() << "pipeopt-compile: error: " << msg << "\n";
  return 1;
}

/// Writes `text` to `path`.
static LogicalResult writeText(llvm::StringRef path,
                               llvm::function_ref<void(llvm::raw_ostream &)> fn) {
  std::string err;
  auto out = openOutputFile(path, &err);
  if (!out) {
    llvm::errs() << "pipeopt-compile: error: " << err << "\n";
    return failure();
  }
  fn(out->os());
  out->keep();
  return success();
}

/// The manifest is written to a unique temporary file next to it and
/// renamed into place only when the build has succeeded, so a failed build
/// (a failed link, ...) never leaves a fresh manifest next to an old or
/// missing shared object. The temporary file is removed otherwise.
class PendingManifest {
public:
  PendingManifest() = default;
  PendingManifest(const PendingManifest &) = delete;
  PendingManifest &operator=(const PendingManifest &) = delete;
  ~PendingManifest() {
    if (!tmp.empty()) {
      llvm::sys::fs::remove(tmp);
      llvm::sys::DontRemoveFileOnSignal(tmp);
    }
  }

  /// Creates the temporary file for the manifest `path`; returns the path
  /// convert-pipe-to-runtime writes ("-", stdout, a symbolic link and an
  /// existing file that is not a regular one, such as /dev/stdout, are
  /// written directly).
  FailureOr<std::string> start(llvm::StringRef path) {
    // A symbolic link (/dev/stdout redirected to a file) is written
    // through: renaming over it would replace the link itself.
    if (path == "-" || llvm::sys::fs::is_symlink_file(path) ||
        (llvm::sys::fs::exists(path) && !llvm::sys::fs::is_regular_file(path)))
      return path.str();
    llvm::SmallString<256> unique;
    if (std::error_code ec = llvm::sys::fs::createUniqueFile(
            path + ".tmp-%%%%%%%%", unique)) {
      fail("cannot create a temporary file next to the manifest '" + path +
           "': " + ec.message());
      return failure();
    }
    tmp = std::string(unique);
    final = path.str();
    // Also gone when a signal (Ctrl-C, SIGPIPE, SIGTERM) ends the build.
    llvm::sys::RemoveFileOnSignal(tmp);
    return tmp;
  }

  /// The temporary the manifest is being written to, if it is a file that
  /// will be renamed into place (not "-" or a device).
  std::optional<std::string> pendingPath() const {
    if (tmp.empty())
      return std::nullopt;
    return tmp;
  }

  /// Moves the manifest into place (after the last step succeeded).
  LogicalResult commit() {
    if (tmp.empty())
      return success();
    std::error_code ec = llvm::sys::fs::rename(tmp, final);
    llvm::sys::DontRemoveFileOnSignal(tmp);
    if (ec) {
      fail("cannot write the manifest '" + final + "': " + ec.message());
      return failure();
    }
    tmp.clear();
    return success();
  }

private:
  std::string tmp, final;
};

/// A file this run writes, with the option that names it (for errors).
struct OutputFile {
  std::string role;
  std::string path;
};

/// The parent directory of `path` ("." for a bare file name).
static std::string parentOf(llvm::StringRef path) {
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  return dir.empty() ? std::string(".") : dir.str();
}

/// `path` with its directory resolved (symlinks, "..", "."): two paths that
/// name the same file give the same string even when the file does not exist
/// yet. The directory must exist (checked before).
static std::string canonicalPath(llvm::StringRef path) {
  llvm::SmallString<256> dir;
  if (llvm::sys::fs::real_path(parentOf(path), dir)) {
    // Not resolvable: fall back to the normalized absolute path.
    llvm::SmallString<256> abs(path);
    llvm::sys::fs::make_absolute(abs);
    llvm::sys::path::remove_dots(abs, /*remove_dot_dot=*/true);
    return std::string(abs);
  }
  llvm::sys::path::append(dir, llvm::sys::path::filename(path));
  return std::string(dir);
}

/// True if `a` and `b` name the same file: the same inode when both exist
/// (hard links, symlinks), else the same canonical path.
static bool sameFile(llvm::StringRef a, llvm::StringRef b) {
  bool equivalent = false;
  if (llvm::sys::fs::exists(a) && llvm::sys::fs::exists(b) &&
      !llvm::sys::fs::equivalent(a, b, equivalent))
    return equivalent;
  return canonicalPath(a) == canonicalPath(b);
}

/// Checks, before any work, that every file this run writes can be written
/// without destroying another: its directory exists (pipeopt-compile does
/// not create directories), it is not a directory, and it is neither the
/// input nor another output. "-" (stdout) is exempt.
static LogicalResult checkOutputs(llvm::StringRef input,
                                  llvm::ArrayRef<OutputFile> outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const OutputFile &o = outputs[i];
    if (o.path == "-")
      continue;
    auto error = [&](const llvm::Twine &msg) {
      llvm::errs() << "pipeopt-compile: error: cannot write the " << o.role
                   << " '" << o.path << "': " << msg << "\n";
      return failure();
    };
    std::string dir = parentOf(o.path);
    if (!llvm::sys::fs::is_directory(dir))
      return error(llvm::sys::fs::exists(dir)
                       ? "'" + dir + "' is not a directory"
                       : "directory '" + dir +
                             "' does not exist (pipeopt-compile does not "
                             "create directories; create it first)");
    if (llvm::sys::fs::is_directory(o.path))
      return error("it is a directory");
    if (input != "-" && sameFile(o.path, input))
      return error("it is the input file '" + input +
                   "' (the input would be overwritten); choose another "
                   "output path");
    for (size_t j = 0; j < i; ++j)
      if (outputs[j].path != "-" && sameFile(o.path, outputs[j].path))
        return error("it is also the " + outputs[j].role + " ('" +
                     outputs[j].path +
                     "'); the two outputs need different paths");
  }
  return success();
}

/// `<dir>/<stem>` of `path` without its last extension.
static std::string stemOf(llvm::StringRef path) {
  llvm::SmallString<256> s(path);
  llvm::sys::path::replace_extension(s, "");
  return std::string(s);
}

/// Name of the dictionary attribute pipe-differentiate puts on the model
/// function (the generated functions, `wrt`, `loss`, ...).
static constexpr llvm::StringLiteral kGradientAttr =
    pipeopt::pipe::PipeDialect::GradientAttrHelper::getNameStr();

/// The trainable arguments pipe-differentiate chose (`info` = its
/// pipe.gradient attribute): none is an error (training would change
/// nothing), and so is data among them (its value differs per microbatch).
static LogicalResult checkTrainable(pipeopt::pipe::GradientAttr info,
                                    llvm::StringRef modelName) {
  DenseI64ArrayAttr t = info.getTrainable();
  DenseI64ArrayAttr data = info.getData();
  if (!t || t.empty()) {
    fail("--train: @" + modelName +
         " has no trainable argument (--trainable " + trainable +
         "): training would change nothing. Its weights may be constants: "
         "make them arguments with pipeopt -pipe-lift-constants");
    return failure();
  }
  if (data)
    for (int64_t i : t.asArrayRef())
      if (llvm::is_contained(data.asArrayRef(), i)) {
        fail("--trainable: argument " + Twine(i) + " of @" + modelName +
             " is per-microbatch data (--microbatch-args " +
             pipeopt::formatArgumentList(microbatchArgs) +
             "), not a parameter");
        return failure();
      }
  return success();
}

/// Runs the pass pipeline `pipeline` (pipe-differentiate of `modelName`) on
/// `module`; prints the error and fails if it cannot be parsed or fails.
static LogicalResult runDifferentiate(ModuleOp module,
                                      llvm::StringRef pipeline,
                                      llvm::StringRef modelName) {
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  std::string perr;
  llvm::raw_string_ostream perrs(perr);
  if (failed(parsePassPipeline(pipeline, pm, perrs))) {
    fail("--train: cannot run '" + pipeline +
         "': " + llvm::StringRef(perr).trim());
    return failure();
  }
  if (failed(pm.run(module))) {
    fail("--train: pipe-differentiate failed on @" + modelName);
    return failure();
  }
  return success();
}

/// --train: runs pipe-differentiate on the model function `modelName` with
/// this tool's options and prepares the function that computes one
/// microbatch's loss and gradients (`@<f>_grad(args..., [target]) -> (loss,
/// grad_i...)`) for the reference program: its results are named "loss" and
/// "grad_<i>" and averaged over microbatches (result attributes
/// pipe.output_name / pipe.reduce, which buildSingleStageProgram moves onto
/// the pipe.output ops), and a target argument (loss mse / cross-entropy) is
/// marked pipe.microbatched (it is data, whatever --microbatch-args says).
/// With `runPass` false the model was differentiated before (it carries
/// pipe.gradient) and its functions are used as they are. Returns the name
/// of that function, or failure after printing an error.
static FailureOr<std::string>
buildTrainingStep(ModuleOp module, llvm::StringRef modelName, bool runPass) {
  MLIRContext *ctx = module.getContext();
  std::string pipeline =
      ("pipe-differentiate{functions=" + modelName + " loss=" + loss +
       " trainable=" + trainable +
       " microbatch-args=" + pipeopt::formatArgumentList(microbatchArgs) +
       " recompute=" + recompute + "}")
          .str();
  if (runPass && failed(runDifferentiate(module, pipeline, modelName)))
    return failure();
  auto model = module.lookupSymbol<func::FuncOp>(modelName);
  auto info =
      model ? model->getAttrOfType<pipeopt::pipe::GradientAttr>(kGradientAttr)
            : pipeopt::pipe::GradientAttr();
  if (!info) {
    fail("--train: pipe-differentiate left no '" + kGradientAttr +
         "' attribute on @" + modelName);
    return failure();
  }
  FlatSymbolRefAttr gradRef = info.getGrad();
  DenseI64ArrayAttr wrt = info.getWrt();
  pipeopt::pipe::LossKind lossKind = info.getLoss();
  if (!gradRef) {
    fail("--train: the model has no loss to differentiate (" + kGradientAttr +
         " of @" + modelName +
         " names no 'grad' function): give "
         "--loss=mse or --loss=cross-entropy, or let the model return its "
         "loss as one f32 scalar (tensor<f32>)");
    return failure();
  }
  auto grad = module.lookupSymbol<func::FuncOp>(gradRef.getAttr());
  FunctionType modelType = model.getFunctionType();
  bool hasTarget = lossKind == pipeopt::pipe::LossKind::MSE ||
                   lossKind == pipeopt::pipe::LossKind::CrossEntropy;
  unsigned wantArgs = modelType.getNumInputs() + (hasTarget ? 1 : 0);
  if (!grad || grad.isExternal()) {
    fail("--train: " + kGradientAttr + " of @" + modelName + " names @" +
         gradRef.getValue() +
         " as its gradient function, but the module has no function with a "
         "body of that name");
    return failure();
  }
  if (grad.getNumArguments() != wantArgs ||
      grad.getNumResults() != 1 + wrt.size()) {
    std::string type;
    llvm::raw_string_ostream os(type);
    os << grad.getFunctionType();
    fail("--train: the gradient function @" + gradRef.getValue() +
         " has type '" + type + "', but " + Twine(wantArgs) +
         " arguments (the model's" + (hasTarget ? " and a target" : "") +
         ") and " + Twine(1 + wrt.size()) +
         " results (the loss and one gradient per 'wrt' index of " +
         kGradientAttr + ") were expected");
    return failure();
  }
  if (optimizer != "none" && failed(checkTrainable(info, modelName)))
    return failure();
  // The outputs are the loss and the gradients of the trainable arguments
  // (grad_<i>); the data's gradients pipe-differentiate also computes are
  // dropped (and their code with them, as dead code).
  SmallVector<int64_t> outputWrt(wrt.asArrayRef());
  if (DenseI64ArrayAttr trainableArgs = info.getTrainable()) {
    Operation *ret = grad.getBody().front().getTerminator();
    SmallVector<Value> keep{ret->getOperand(0)};
    outputWrt.clear();
    for (auto [k, i] : llvm::enumerate(wrt.asArrayRef()))
      if (llvm::is_contained(trainableArgs.asArrayRef(), i)) {
        keep.push_back(ret->getOperand(k + 1));
        outputWrt.push_back(i);
      }
    ret->setOperands(keep);
    grad.setFunctionType(FunctionType::get(
        ctx, grad.getArgumentTypes(), ValueRange(keep).getTypes()));
  }
  Builder b(ctx);
  auto mean = b.getStringAttr("mean");
  grad.setResultAttr(0, pipeopt::pipe::PipeDialect::getOutputNameAttrName(),
                     b.getStringAttr("loss"));
  grad.setResultAttr(0, pipeopt::pipe::PipeDialect::getReduceAttrName(), mean);
  for (auto [k, i] : llvm::enumerate(outputWrt)) {
    grad.setResultAttr(k + 1,
                       pipeopt::pipe::PipeDialect::getOutputNameAttrName(),
                       b.getStringAttr("grad_" + std::to_string(i)));
    grad.setResultAttr(k + 1, pipeopt::pipe::PipeDialect::getReduceAttrName(),
                       mean);
    // With an optimizer the runtime takes the gradients (pipe.gradient),
    // as in pipelined builds, and updates the weights after each step.
    if (optimizer != "none")
      grad.setResultAttr(k + 1,
                         pipeopt::pipe::PipeDialect::getGradientOfAttrName(),
                         b.getI64IntegerAttr(i));
  }
  if (hasTarget) {
    grad.setArgAttr(wantArgs - 1,
                    pipeopt::pipe::PipeDialect::getMicrobatchedAttrName(),
                    b.getUnitAttr());
    // Class indices of a cross entropy are checked by the runtime.
    FlatSymbolRefAttr lossRef = info.getLossFn();
    if (auto lossFn = lossRef ? module.lookupSymbol<func::FuncOp>(
                                    lossRef.getAttr())
                              : func::FuncOp())
      if (Attribute c = lossFn.getArgAttr(lossFn.getNumArguments() - 1,
                                          pipeopt::pipe::PipeDialect::getClassCountAttrName()))
        grad.setArgAttr(wantArgs - 1, pipeopt::pipe::PipeDialect::getClassCountAttrName(), c);
  }
  // The arguments pipe-differentiate took for per-microbatch data (its
  // batch-dimension analysis, or --microbatch-args) are per microbatch in
  // the program too, and only they (with the target):
  // convert-pipe-to-runtime's `auto` would classify the arguments of
  // @<f>_grad, whose results are gradients, not per-example values. A model
  // differentiated before without a `data` entry keeps --microbatch-args.
  if (DenseI64ArrayAttr data = info.getData()) {
    auto microbatched = pipeopt::pipe::PipeDialect::getMicrobatchedAttrName();
    for (int64_t i : data.asArrayRef())
      if (i >= 0 && i < int64_t(grad.getNumArguments()))
        grad.setArgAttr(i, microbatched, b.getUnitAttr());
    microbatchArgs.clear();
    for (unsigned i = 0; i < grad.getNumArguments(); ++i)
      if (grad.getArgAttr(i, microbatched))
        microbatchArgs.push_back(std::to_string(i));
    if (microbatchArgs.empty())
      microbatchArgs.push_back("none");
  }
  return gradRef.getValue().str();
}


/// AdamW's betas from --betas "B1,B2" (each in [0, 1)).
static double beta1 = 0.9, beta2 = 0.999;
static LogicalResult parseBetas() {
  auto [first, second] = llvm::StringRef(betas).split(',');
  if (first.trim().getAsDouble(beta1) || second.trim().getAsDouble(beta2) ||
      !(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1)) {
    fail("--betas: expected two numbers B1,B2 in [0, 1), got '" + betas + "'");
    return failure();
  }
  return success();
}

/// What the module's pipe.programs were built with: the schedule their
/// `schedule` attribute names (empty if none does), their microbatch count
/// and the number of stages their forward actions run.
struct BuiltPrograms {
  std::string schedule;
  int64_t microbatches = 0;
  int64_t stages = 1;
};
static BuiltPrograms built;

/// Reads BuiltPrograms from the programs of `module`; programs that
/// disagree on the schedule or the microbatch count are an error.
static FailureOr<BuiltPrograms> inspectPrograms(ModuleOp module) {
  BuiltPrograms info;
  pipeopt::pipe::ProgramOp first;
  for (auto p : module.getOps<pipeopt::pipe::ProgramOp>()) {
    std::string name = p.getSchedule() ? p.getSchedule()->str() : "";
    if (!first) {
      first = p;
      info.schedule = name;
      info.microbatches = p.getNumMicrobatches();
    } else if (name != info.schedule) {
      fail("the pipe.programs name different schedules: '" + info.schedule +
           "' (@" + first.getSymName() + ") and '" + name + "' (@" +
           p.getSymName() + ")");
      return failure();
    } else if (int64_t(p.getNumMicrobatches()) != info.microbatches) {
      fail("the pipe.programs run different numbers of microbatches: " +
           Twine(info.microbatches) + " (@" + first.getSymName() + ") and " +
           Twine(p.getNumMicrobatches()) + " (@" + p.getSymName() + ")");
      return failure();
    }
    p.walk([&](pipeopt::pipe::ForwardOp f) {
      info.stages = std::max<int64_t>(info.stages, f.getStage() + 1);
    });
  }
  return info;
}

/// --train: the module attribute pipe.optimizer that convert-pipe-to-runtime
/// writes to the manifest ("training"); the runtime applies the update.
static void setOptimizer(ModuleOp module) {
  using pipeopt::pipe::OptimizerKind;
  OptimizerKind kind =
      *pipeopt::pipe::symbolizeOptimizerKind(optimizer.getValue());
  std::optional<double> lrValue, weightDecayValue, momentumValue, beta1Value,
      beta2Value, epsValue;
  std::optional<int64_t> updateEvery;
  if (kind != OptimizerKind::None) {
    lrValue = lr;
    weightDecayValue = weightDecay;
  }
  if (kind == OptimizerKind::Momentum)
    momentumValue = momentumOpt;
  // Asynchronous schedules update a stage's weights as its gradients
  // arrive: PipeDream after every backward (weight stashing keeps the
  // version each microbatch's forward read for its backward), PipeDream-2BW
  // once per S backwards (double-buffered weights). The schedule table's
  // weight versions (schedule::assignWeightVersions) follow the same rule.
  if (!reference)
    if (const auto *info =
            pipeopt::schedule::findScheduleByKey(built.schedule)) {
      using WV = pipeopt::schedule::WeightVersions;
      if (info->weightVersions == WV::PerBackward)
        updateEvery = 1;
      else if (info->weightVersions == WV::PerRound)
        updateEvery = built.stages;
    }
  if (kind == OptimizerKind::AdamW) {
    beta1Value = beta1;
    beta2Value = beta2;
    epsValue = epsOpt;
  }
  pipeopt::pipe::PipeDialect::OptimizerAttrHelper(module.getContext())
      .setAttr(module, pipeopt::pipe::OptimizerAttr::get(
                           module.getContext(), kind, lrValue, weightDecayValue,
                           momentumValue, beta1Value, beta2Value, epsValue,
                           updateEvery));
}

/// Pipelined --train: replaces the model function `modelName` by its loss
/// function (`@<f>_loss(args..., [target]) -> tensor<f32>`, built by
/// pipe-differentiate with this tool's --loss / --trainable /
/// --microbatch-args) so that the front half partitions and schedules the
/// loss too. The data arguments and the target are marked
/// pipe.microbatched and the trainable arguments recorded as pipe.trainable
/// (pipe-materialize-backward reads both). Returns the loss function's name.
static FailureOr<std::string> buildTrainingModel(ModuleOp module,
                                                 llvm::StringRef modelName) {
  MLIRContext *ctx = module.getContext();
  std::string pipeline =
      ("pipe-prepare,pipe-differentiate{functions=" + modelName +
       " loss=" + loss + " trainable=" + trainable +
       " microbatch-args=" + pipeopt::formatArgumentList(microbatchArgs) +
       "}")
          .str();
  if (failed(runDifferentiate(module, pipeline, modelName)))
    return failure();
  auto model = module.lookupSymbol<func::FuncOp>(modelName);
  auto info =
      model ? model->getAttrOfType<pipeopt::pipe::GradientAttr>(kGradientAttr)
            : pipeopt::pipe::GradientAttr();
  FlatSymbolRefAttr lossRef = info ? info.getLossFn() : FlatSymbolRefAttr();
  auto lossFn = lossRef ? module.lookupSymbol<func::FuncOp>(lossRef.getAttr())
                        : func::FuncOp();
  if (!lossFn) {
    fail("--train: @" + modelName +
         " has no loss to train: give --loss=mse or --loss=cross-entropy, or "
         "let the model return its loss as one f32 scalar (tensor<f32>)");
    return failure();
  }
  Builder b(ctx);
  auto microbatched = pipeopt::pipe::PipeDialect::getMicrobatchedAttrName();
  bool hasTarget = lossFn.getNumArguments() > model.getNumArguments();
  if (hasTarget)
    lossFn.setArgAttr(lossFn.getNumArguments() - 1, microbatched,
                      b.getUnitAttr());
  if (DenseI64ArrayAttr data = info.getData())
    for (int64_t i : data.asArrayRef())
      lossFn.setArgAttr(i, microbatched, b.getUnitAttr());
  if (failed(checkTrainable(info, modelName)))
    return failure();
  if (DenseI64ArrayAttr t = info.getTrainable())
    lossFn->setAttr(
        pipeopt::pipe::PipeDialect::TrainableAttrHelper::getNameStr(), t);
  lossFn.setPublic();
  // The runtime feeds per-microbatch slices to exactly these arguments (the
  // loss function's target is data whatever the analysis says).
  microbatchArgs.clear();
  for (unsigned i = 0; i < lossFn.getNumArguments(); ++i)
    if (lossFn.getArgAttr(i, microbatched))
      microbatchArgs.push_back(std::to_string(i));
  if (microbatchArgs.empty())
    microbatchArgs.push_back("none");
  std::string name = lossFn.getSymName().str();
  pipeopt::keepReachedFunctions(module, {lossFn});
  return name;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  pipeopt::registerAllPasses();
  cl::HideUnrelatedOptions(category);
  if (!pipeopt::rejectHelpTypos(argc, argv, "pipeopt-compile"))
    return 1;
  if (!pipeopt::rejectEmptyValues(argc, argv, "pipeopt-compile",
                                  {"o", "manifest", "trainable"}))
    return 1;
  cl::ParseCommandLineOptions(
      argc, argv,
      "pipeopt-compile: compile a model to <model>.so + "
      "<model>.manifest.json for pipeopt-run\n");
  StepTimer timer;

  // --microbatch-args is checked here (its indices against the model by
  // convert-pipe-to-runtime).
  if (llvm::Expected<pipeopt::ArgumentSelection> sel =
          pipeopt::ArgumentSelection::parse(microbatchArgs, "--microbatch-args");
      !sel)
    return fail(llvm::toString(sel.takeError()));

  // Training options without --train would be ignored.
  if (!train)
    for (cl::Option *opt : std::initializer_list<cl::Option *>{
             &loss, &trainable, &recompute, &optimizer, &lr, &momentumOpt,
             &betas, &epsOpt, &weightDecay})
      if (opt->getNumOccurrences())
        return fail("--" + opt->ArgStr +
                    " applies only to training builds "
                    "(--train)");
  if (train) {
    // An empty value would mean `auto` to pipe-differentiate; as for
    // --microbatch-args, it is more likely a script's empty variable.
    if (trainable.getNumOccurrences() && StringRef(trainable).trim().empty())
      return fail("--trainable: empty value (expected auto, all, none or a "
                  "comma-separated list of argument indices such as '0,3')");
    if (optimizer.empty())
      optimizer = reference ? "none" : "sgd";
    if (!pipeopt::pipe::symbolizeOptimizerKind(optimizer.getValue()))
      return fail("--optimizer: expected none, sgd, momentum or adamw; got '" +
                  optimizer + "'");
    if (failed(parseBetas()))
      return 1;
    for (auto [opt, value] : {std::pair<cl::opt<double> *, double>{&lr, lr},
                              {&momentumOpt, momentumOpt},
                              {&epsOpt, epsOpt},
                              {&weightDecay, weightDecay}})
      if (!(value >= 0) || !std::isfinite(value))
        return fail("--" + opt->ArgStr + ": expected a finite value >= 0, got " +
                    llvm::formatv("{0}", value).str());
    if (optimizer == "none")
      for (cl::Option *opt : std::initializer_list<cl::Option *>{
               &lr, &momentumOpt, &betas, &epsOpt, &weightDecay})
        if (opt->getNumOccurrences())
          return fail("--" + opt->ArgStr +
                      " applies only with an optimizer (--optimizer "
                      "sgd|momentum|adamw)");
    if (optimizer != "momentum" && momentumOpt.getNumOccurrences())
      return fail("--momentum applies only to --optimizer momentum");
    // The ranges the runtime's manifest reader enforces, checked here so
    // that no .so is built that pipeopt-run would refuse.
    if (momentumOpt > 1)
      return fail("--momentum: expected a value in [0, 1], got " +
                  llvm::formatv("{0}", momentumOpt.getValue()).str());
    if (optimizer == "adamw" && !(epsOpt > 0))
      return fail("--eps: expected a value > 0, got " +
                  llvm::formatv("{0}", epsOpt.getValue()).str());
    if (optimizer != "adamw")
      for (cl::Option *opt : std::initializer_list<cl::Option *>{&betas, &epsOpt})
        if (opt->getNumOccurrences())
          return fail("--" + opt->ArgStr + " applies only to --optimizer adamw");
    if (!reference && schedule.getNumOccurrences() == 0)
      schedule = "1f1b";
  }

  if (target != "cpu" && target != "cuda")
    return fail("--target: expected cpu or cuda, got '" + target + "'");
  if (target == "cuda" && !pipeopt::haveCUDA())
    return fail("--target=cuda: pipeopt was built without CUDA: the toolkit "
                "was not found at configure time (install it, e.g. in "
                "/usr/local/cuda, and configure again)");
  if (target != "cuda" && cudaArch.getNumOccurrences())
    return fail("--cuda-arch applies only to --target=cuda");
  if (target == "cuda" &&
      !llvm::StringRef(cudaArch.getValue()).starts_with("sm_"))
    return fail("--cuda-arch: expected an architecture such as sm_90, got '" +
                cudaArch + "'");
  if (target == "cuda" && approximateMath)
    return fail("--approximate-math applies only to --target=cpu (on the GPU "
                "math functions are CUDA's libdevice)");
  if (target == "cuda")
    if (llvm::Error e = pipeopt::checkCUDAChip(cudaArch))
      return fail("--cuda-arch: " + llvm::toString(std::move(e)));

  if (optLevel > 3)
    return fail("-O: expected an optimization level 0, 1, 2 or 3, got " +
                Twine(optLevel.getValue()));
  // --mcpu is checked before any work: LLVM only warns about an unknown CPU
  // (once per subtarget it creates) and later dies with a fatal error.
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> tm =
      pipeopt::codegen::createHostTargetMachine(
          {cpu.getValue(), optLevel.getValue()});
  if (!tm)
    return fail(llvm::toString(tm.takeError()));

  if (outputFile.getNumOccurrences() && outputFile.empty())
    return fail("-o needs a file name (got an empty one)");
  if (outputFile.empty()) {
    if (inputFile == "-")
      return fail("-o is required when reading stdin");
    std::string stem = stemOf(llvm::sys::path::filename(inputFile));
    // foo.tosa.mlir -> foo.so
    stem = stemOf(stem);
    switch (emit) {
    case Emit::Scheduled:
      outputFile = stem + ".scheduled.mlir";
      break;
    case Emit::LLVMDialect:
      outputFile = stem + ".llvm.mlir";
      break;
    case Emit::LLVMIR:
      outputFile = stem + ".ll";
      break;
    case Emit::Object:
      outputFile = stem + ".o";
      break;
    case Emit::SharedObject:
      outputFile = stem + ".so";
      break;
    }
  }
  std::string outStem = stemOf(outputFile);
  if (manifestFile.getNumOccurrences() && manifestFile.empty())
    return fail("--manifest needs a file name (got an empty one)");
  if (manifestFile.empty() && emit != Emit::Scheduled) {
    // -o /dev/null would put the manifest at /dev/null.manifest.json.
    llvm::sys::fs::file_status status;
    if (!llvm::sys::fs::status(outputFile.getValue(), status) &&
        llvm::sys::fs::exists(status) &&
        !llvm::sys::fs::is_regular_file(status) &&
        !llvm::sys::fs::is_directory(status)) // reported with the outputs
      return fail("-o " + outputFile + " is not a regular file, so the "
                  "manifest's path cannot be derived from it; give "
                  "--manifest=<file>");
    manifestFile = outStem + ".manifest.json";
  }

  // Every file this run writes, in the order of the steps; all are checked
  // before any work (an output path equal to the input would replace the
  // model with the shared object or the manifest).
  llvm::SmallVector<OutputFile> outputs = {
      {"output (-o)", outputFile.getValue()}};
  if (emit != Emit::Scheduled)
    outputs.push_back({"manifest (--manifest)", manifestFile.getValue()});
  if (saveTemps) {
    auto temp = [&](Emit step, llvm::StringRef ext) {
      if (emit > step)
        outputs.push_back({("--save-temps file"), outStem + ext.str()});
    };
    temp(Emit::Scheduled, ".scheduled.mlir");
    temp(Emit::LLVMDialect, ".llvm.mlir");
    temp(Emit::LLVMIR, ".ll");
    temp(Emit::Object, ".o");
  }
  if (failed(checkOutputs(inputFile, outputs)))
    return 1;

  DialectRegistry registry;
  pipeopt::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics point at the source; dumping whole model functions as the
  // "current operation" (e.g. for partitioner warnings) is only noise.
  context.printOpOnDiagnostic(false);

  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  std::string err;
  auto buffer = openInputFile(inputFile, &err);
  if (!buffer)
    return fail(err);
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;
  timer.done("parse");
  // pipe.auto_schedule records what pipe-auto-schedule chose in the run that
  // wrote it. An input's (e.g. the output of --emit scheduled) describes an
  // earlier run: it is dropped, so that only this run's --schedule auto
  // choice is ever read (the build follows its own pipe.programs).
  constexpr llvm::StringLiteral kAutoScheduleAttr =
      pipeopt::pipe::PipeDialect::AutoScheduleAttrHelper::getNameStr();
  (*module)->removeAttr(kAutoScheduleAttr);
  const bool autoSchedule = schedule == "auto";

  // --- Per-rank programs ----------------------------------------------------
  bool hasPrograms = !module->getOps<pipeopt::pipe::ProgramOp>().empty();
  // Front-half options that would be ignored are errors, not silent no-ops:
  // an input that is already scheduled is compiled as it is, and the
  // reference is one stage.
  if (train && hasPrograms && !reference) {
    // pipe-materialize-backward's programs are compiled as they are; a
    // schedule with callee-less backward actions was built without the
    // loss, which --train appends before partitioning.
    bool materialized = true;
    module->walk([&](pipeopt::pipe::BackwardOp op) {
      materialized &= bool(op.getCallee());
    });
    if (!materialized)
      return fail("--train: this input already has pipe.programs whose "
                  "backward actions have no callee; --train appends the loss "
                  "before partitioning, so give it the unscheduled model (or "
                  "run pipe-materialize-backward on a schedule of a model "
                  "that returns its loss)");
    for (cl::Option *opt :
         std::initializer_list<cl::Option *>{&loss, &trainable, &recompute})
      if (opt->getNumOccurrences())
        return fail("--" + opt->ArgStr +
                    " does not apply to this input: its training programs "
                    "are already materialized (pipe-materialize-backward)");
  }
  if (autoSchedule && !frontHalf.empty())
    return fail("--schedule auto chooses the front half's configuration; it "
                "does not apply with --front-half");
  if (reference || hasPrograms) {
    SmallVector<cl::Option *> unused{&numStages, &schedule, &partitionOptions,
                                     &frontHalf, &memoryLimitOpt};
    if (!reference) {
      unused.push_back(&numMicrobatches);
      unused.push_back(&function);
    }
    for (cl::Option *opt : unused)
      if (opt->getNumOccurrences())
        return fail(
            "--" + opt->ArgStr.str() +
            (reference ? " does not apply to --reference (one stage, the "
                         "unpartitioned model)"
                       : " does not apply to this input: it already has "
                         "pipe.program ops, which are compiled as they are "
                         "(give the unscheduled model to partition and "
                         "schedule it)"));
  }
  if (reference) {
    // The reference ignores any schedule in the input.
    for (auto p : llvm::make_early_inc_range(
             module->getOps<pipeopt::pipe::ProgramOp>()))
      p.erase();
    FailureOr<func::FuncOp> model = pipeopt::findModelFunction(
        *module, function, "choose one with --function=NAME");
    if (failed(model))
      return 1;
    // pipe-prepare's checks and inlining, as for pipelined builds: a
    // recursive model or a call of an external function is a diagnostic
    // here, not a crash or a failed dlopen at run time.
    std::string modelName = model->getSymName().str();
    // --train on a model that was differentiated before (pipe.gradient, e.g.
    // `pipeopt -pipe-differentiate` run by hand): its functions are used as
    // they are, and the functions pipe.gradient names are kept.
    SmallVector<func::FuncOp> roots{*model};
    bool differentiated = train && (*model)->hasAttr(kGradientAttr);
    if (differentiated) {
      for (cl::Option *opt :
           std::initializer_list<cl::Option *>{&loss, &trainable, &recompute})
        if (opt->getNumOccurrences())
          return fail("--" + opt->ArgStr + " does not apply: @" + modelName +
                      " was differentiated before (it has '" + kGradientAttr +
                      "'), so its gradient function is compiled as it is");
      auto info =
          (*model)->getAttrOfType<pipeopt::pipe::GradientAttr>(kGradientAttr);
      for (FlatSymbolRefAttr ref :
           {info.getB(), info.getBwd(), info.getFwd(), info.getGrad(),
            info.getLossFn(), info.getW()})
        if (ref)
          if (auto fn = module->lookupSymbol<func::FuncOp>(ref.getAttr()))
            roots.push_back(fn);
    }
    pipeopt::keepReachedFunctions(*module, roots);
    {
      PassManager pm(&context, ModuleOp::getOperationName());
      pm.addPass(pipeopt::createPreparePass());
      if (failed(pm.run(*module)))
        return fail("pipe-prepare failed on the reference model");
    }
    // --train: the program runs the training step of each microbatch
    // (loss and gradients, averaged over microbatches) instead of the model.
    std::string programFunction = modelName;
    if (train) {
      FailureOr<std::string> step =
          buildTrainingStep(*module, modelName, !differentiated);
      if (failed(step))
        return 1;
      programFunction = *step;
      // Only what the training step reaches is compiled (not the model
      // function or the split F / B / W functions it was derived with).
      pipeopt::keepReachedFunctions(*module,
                           {module->lookupSymbol<func::FuncOp>(*step)});
    }
    if (failed(pipeopt::buildSingleStageProgram(*module, programFunction,
                                                numMicrobatches)))
      return 1;
  } else if (!hasPrograms) {
    FailureOr<func::FuncOp> model = pipeopt::findModelFunction(
        *module, function, "choose one with --function=NAME");
    if (failed(model))
      return 1;
    if (train) {
      FailureOr<std::string> lossName =
          buildTrainingModel(*module, model->getSymName());
      if (failed(lossName))
        return 1;
      model = module->lookupSymbol<func::FuncOp>(*lossName);
    }
    pipeopt::keepReachedFunctions(*module, {*model});
    PassManager pm(&context, ModuleOp::getOperationName());
    std::string pipeline;
    if (!frontHalf.empty()) {
      pipeline = frontHalf;
      std::string perr;
      llvm::raw_string_ostream perrs(perr);
      if (failed(parsePassPipeline(pipeline, pm, perrs)))
        return fail("front-half pipeline '" + pipeline + "': " + perr);
    } else {
      // The registered pipeopt-pipeline, with the device and this tool's
      // options first and --partition-options (pipeopt-pipeline options)
      // after, so they win.
      // With --schedule auto, num-microbatches is only passed when given
      // (pipe-auto-schedule then keeps it; otherwise it chooses M).
      // --target=cuda plans for the GPU the backend is built for (the h200
      // preset: its FLOP/s, memory capacity and links), not the host.
      pipeline = std::string(target == "cuda" ? "device=h200" : "device=cpu") +
                 " num-stages=" + std::to_string(numStages) +
                 (!autoSchedule || numMicrobatches.getNumOccurrences()
                      ? " num-microbatches=" + std::to_string(numMicrobatches)
                      : std::string()) +
                 " schedule=" + schedule + (train ? " training=true" : "") +
                 (memoryLimitOpt.getNumOccurrences()
                      ? " memory-limit=" + memoryLimitOpt
                      : std::string()) +
                 " " + partitionOptions;
      auto options =
          pipeopt::PipeoptPipelineOptions::createFromString(pipeline);
      if (!options)
        return fail("invalid pipeopt-pipeline options '" + pipeline + "'");
      pipeopt::buildPipeoptPipeline(pm, *options);
      pipeline = "pipeopt-pipeline{" + pipeline + "}";
    }
    if (train) {
      // trainable: auto (the default), i.e. pipe.trainable of the loss
      // function that buildTrainingModel recorded.
      pipeopt::MaterializeBackwardPassOptions materialize;
      std::optional<pipeopt::autodiff::Recompute> recomputeKind =
          pipeopt::autodiff::parseRecompute(recompute);
      if (!recomputeKind)
        return fail("--recompute: expected none, elementwise or all, got '" +
                    recompute + "'");
      materialize.recompute = *recomputeKind;
      pm.addPass(pipeopt::createMaterializeBackwardPass(materialize));
    }
    if (failed(pm.run(*module)))
      return fail("front half failed (" + pipeline +
                  (train ? ", pipe-materialize-backward" : "") + ")");
    // --schedule auto: the rest of the build follows the choice that
    // pipe-auto-schedule made in this run.
    if (autoSchedule) {
      auto choice = (*module)->getAttrOfType<pipeopt::pipe::AutoScheduleAttr>(
          kAutoScheduleAttr);
      if (!choice)
        return fail("--schedule auto: the front half left no '" +
                    kAutoScheduleAttr + "' attribute");
      // The attribute's verifier checked num_microbatches > 0.
      schedule = choice.getSchedule().str();
      numMicrobatches = choice.getNumMicrobatches();
    }
  } else if (verifySchedule) {
    // Programs given in the input (hand-written or edited) get the checks
    // the front half ends with, so an inconsistent table (a missing send,
    // a deadlock) is a precise diagnostic here and not a failed run later.
    PassManager pm(&context, ModuleOp::getOperationName());
    pm.addPass(pipeopt::createVerifySchedulePass());
    if (failed(pm.run(*module)))
      return fail("the pipe.programs of the input do not form a valid "
                  "schedule (pipe-verify-schedule)");
  }
  // The training rules below follow the schedule that was built, as the
  // pipe.programs name it, not --schedule: --partition-options
  // (schedule=...), --front-half or --schedule auto may have chosen another
  // one, and programs given in the input name their own.
  if (!reference) {
    FailureOr<BuiltPrograms> programs = inspectPrograms(*module);
    if (failed(programs))
      return 1;
    built = *programs;
    if (autoSchedule && (built.schedule != schedule.getValue() ||
                         built.microbatches != numMicrobatches))
      return fail("--schedule auto chose " + schedule + " with " +
                  pipeopt::countOf(numMicrobatches.getValue(), "microbatch",
                                   "microbatches") +
                  ", but the pipe.programs are " +
                  (built.schedule.empty() ? "unnamed" : built.schedule) +
                  " with " + Twine(built.microbatches));
  }
  const pipeopt::schedule::ScheduleInfo *builtInfo =
      reference ? nullptr
                : pipeopt::schedule::findScheduleByKey(built.schedule);
  // PipeDream-2BW updates every S backwards; an update may not straddle
  // two steps (the runtime's rule).
  if (train && builtInfo &&
      builtInfo->weightVersions ==
          pipeopt::schedule::WeightVersions::PerRound &&
      built.microbatches % built.stages != 0)
    return fail("the schedule " + built.schedule +
                " updates the weights every " +
                pipeopt::countOf(built.stages, "microbatch", "microbatches") +
                " (one per stage), which must divide the "
                "number of microbatches (" +
                Twine(built.microbatches) + ")");
  // Asynchronous updates happen on the one rank that holds a weight.
  if (train && builtInfo && builtInfo->async()) {
        std::map<uint64_t, std::set<uint64_t>> ranksOf;
        module->walk([&](pipeopt::pipe::GradientOp g) {
          ranksOf[g.getArgument()].insert(
              g->getParentOfType<pipeopt::pipe::ProgramOp>().getRank());
        });
        for (auto &[arg, ranks] : ranksOf)
          if (ranks.size() > 1)
            return fail("the schedule " + built.schedule +
                        " updates each weight on its own rank as its "
                        "gradients arrive, but argument " + Twine(arg) +
                        " is read by stages on " + Twine(ranks.size()) +
                        " ranks (a tied weight); use a synchronous schedule "
                        "such as 1f1b");
  }
  // A reference without an optimizer keeps the plain manifest (loss and
  // gradients as outputs).
  if (train && !(reference && optimizer == "none"))
    setOptimizer(*module);
  if (!train) {
    bool hasBackward = false;
    module->walk([&](pipeopt::pipe::BackwardOp op) {
      hasBackward = !op.getCallee();
      return hasBackward ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (hasBackward)
      return fail(
          (hasPrograms ? Twine("the input's programs have")
                       : "--schedule " + schedule + " has") +
          " backward actions: compile the unscheduled model with --train "
          "(and --loss) for a training step, or use --schedule forward-only");
  }
  timer.done("schedule");
  if (saveTemps || emit == Emit::Scheduled) {
    std::string path =
        emit == Emit::Scheduled ? outputFile.getValue()
                                : outStem + ".scheduled.mlir";
    if (failed(writeText(path, [&](llvm::raw_ostream &os) {
          module->print(os);
        })))
      return 1;
    if (emit == Emit::Scheduled)
      return 0;
  }

  // --- MLIR lowering --------------------------------------------------------
  // Every later successful return commits the manifest (finished()).
  PendingManifest pendingManifest;
  auto finished = [&] { return succeeded(pendingManifest.commit()) ? 0 : 1; };
  {
    PassManager pm(&context, ModuleOp::getOperationName());
    FailureOr<std::string> manifestPath =
        pendingManifest.start(manifestFile.getValue());
    if (failed(manifestPath))
      return 1;
    std::vector<std::string> mbArgs(microbatchArgs.begin(),
                                    microbatchArgs.end());
    // Both pipelines take the same front options.
    auto common = [&](auto &options) {
      options.manifest = *manifestPath;
      options.microbatchArgs = llvm::ArrayRef<std::string>(mbArgs);
      options.kernels = kernels;
      options.fuse = fuse;
    };
    if (target == "cuda") {
      pipeopt::LowerToCUDAOptions options;
      common(options);
      options.chip = cudaArch.getValue();
      pipeopt::buildLowerToCUDAPipeline(pm, options);
    } else {
      pipeopt::LowerToLLVMOptions options;
      common(options);
      options.approximateMath = approximateMath;
      options.inputViews = inputViews;
      pipeopt::buildLowerToLLVMPipeline(pm, options);
    }
    if (failed(pm.run(*module)))
      return fail(target == "cuda" ? "pipeopt-lower-to-cuda failed"
                                   : "pipeopt-lower-to-llvm failed");
  }
  timer.done("lower");
  if (saveTemps || emit == Emit::LLVMDialect) {
    std::string path = emit == Emit::LLVMDialect ? outputFile.getValue()
                                                 : outStem + ".llvm.mlir";
    if (failed(writeText(path, [&](llvm::raw_ostream &os) {
          module->print(os);
        })))
      return 1;
    if (emit == Emit::LLVMDialect)
      return finished();
  }

  // --- LLVM IR, optimization, object ----------------------------------------
  llvm::LLVMContext llvmContext;
  llvm::Expected<std::unique_ptr<llvm::Module>> optimized =
      pipeopt::codegen::translateAndOptimize(
          *module, llvmContext, **tm, optLevel,
          llvm::sys::path::filename(outStem));
  if (!optimized)
    return fail(llvm::toString(optimized.takeError()));
  std::unique_ptr<llvm::Module> llvmModule = std::move(*optimized);
  timer.done("llvm-opt");
  if (saveTemps || emit == Emit::LLVMIR) {
    std::string path =
        emit == Emit::LLVMIR ? outputFile.getValue() : outStem + ".ll";
    if (failed(writeText(path, [&](llvm::raw_ostream &os) {
          llvmModule->print(os, nullptr);
        })))
      return 1;
    if (emit == Emit::LLVMIR)
      return finished();
  }

  // The object is the output (--emit=obj), a kept temporary (--save-temps)
  // or a unique temporary file that is removed after linking (so an
  // unrelated <stem>.o next to the output is never touched).
  std::string objPath;
  if (emit == Emit::Object) {
    objPath = outputFile.getValue();
  } else if (saveTemps) {
    objPath = outStem + ".o";
  } else {
    llvm::SmallString<256> tmp;
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
            "pipeopt-compile-" + llvm::sys::path::filename(outStem), "o",
            tmp))
      return fail("cannot create a temporary object file: " + ec.message());
    objPath = std::string(tmp);
    llvm::sys::RemoveFileOnSignal(objPath);
  }
  if (llvm::Error e =
          pipeopt::codegen::emitObjectFile(*llvmModule, **tm, objPath)) {
    if (emit != Emit::Object && !saveTemps)
      llvm::sys::fs::remove(objPath);
    return fail(llvm::toString(std::move(e)));
  }
  timer.done("codegen");
  if (emit == Emit::Object)
    return finished();

  // --- Link -----------------------------------------------------------------
  // A cuda model calls the mgpu* functions and pipeopt_rt_gpu_* kernels of
  // libpipeopt_rt_cuda.so, which runs them with the CUDA runtime and cuBLAS:
  // all three are NEEDED (even the ones the model references no symbol of)
  // and found through the model's RUNPATH.
  std::vector<std::string> extraLinkArgs;
  if (target == "cuda")
    extraLinkArgs = {"-Wl,--no-as-needed",
                     "-L" PIPEOPT_RUNTIME_LIB_DIR,
                     "-lpipeopt_rt_cuda",
                     "-L" PIPEOPT_CUDA_LIB_DIR,
                     "-lcudart",
                     "-lcublas",
                     "-Wl,--enable-new-dtags",
                     "-Wl,-rpath," PIPEOPT_RUNTIME_LIB_DIR,
                     "-Wl,-rpath," PIPEOPT_CUDA_LIB_DIR};
  llvm::Error linked = pipeopt::codegen::linkSharedLibrary(
      objPath, outputFile, ccPath,
      pipeopt::codegen::needsCRunnerUtils(*llvmModule), extraLinkArgs);
  if (!saveTemps)
    llvm::sys::fs::remove(objPath);
  if (linked)
    return fail(llvm::toString(std::move(linked)));
  // The manifest records the linked file (model_file). If that fails (a
  // full disk), the .so goes too: a failed build leaves neither.
  if (std::optional<std::string> manifest = pendingManifest.pendingPath())
    if (llvm::Error e = pipeopt::codegen::recordModelFile(
            *manifest, outputFile, manifestFile.getValue())) {
      llvm::sys::fs::remove(outputFile);
      return fail(llvm::toString(std::move(e)));
    }
  timer.done("link");
  return finished();
}
