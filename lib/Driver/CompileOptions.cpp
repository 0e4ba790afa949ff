//===- CompileOptions.cpp - pipeopt-compile's command-line options
//---------===//
//
// Part of pipeopt. The llvm::cl options of the compiler driver
// (registerCompileCLOptions), registered once, in their own category, and
// read into a CompileOptions (getCompileOptionsFromCL).
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Driver/Driver.h"
#include "pipeopt/Schedule/Schedule.h"
#include "pipeopt/Transforms/Passes.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ManagedStatic.h"

#include <memory>

using namespace pipeopt::driver;
namespace cl = llvm::cl;

#ifndef PIPEOPT_DEFAULT_CC
#define PIPEOPT_DEFAULT_CC "cc"
#endif

namespace {
struct CompileCLOptions {
  cl::OptionCategory category{"pipeopt-compile options"};

  cl::opt<std::string> inputFile{cl::Positional, cl::desc("<input.mlir>"),
                                 cl::init("-"), cl::cat(category)};
  // Output paths (-o, --manifest, the --save-temps files) are checked before
  // any work: each must be in an existing directory (none is created) and be
  // a different file from the input and from every other output.
  cl::opt<std::string> outputFile{
      "o",
      cl::desc("Output shared object (default: <input stem>.so); its "
               "directory must exist, and it must not be the input file"),
      cl::value_desc("model.so"), cl::cat(category)};
  cl::opt<std::string> manifestFile{
      "manifest",
      cl::desc("Manifest path (default: <output stem>.manifest.json); must "
               "differ from the input and -o"),
      cl::cat(category)};
  cl::opt<bool> reference{
      "reference",
      cl::desc("Compile the unpartitioned model as one stage on one rank (the "
               "reference for pipelined runs); ignores pipe.programs in the "
               "input"),
      cl::cat(category)};
  cl::opt<std::string> function{
      "function",
      cl::desc("Model function to compile (default: the only public function "
               "with a body); other public functions it does not call are "
               "left out"),
      cl::cat(category)};
  cl::opt<int64_t> numStages{"num-stages",
                             cl::desc("Pipeline stages (front half)"),
                             cl::init(2), cl::cat(category)};
  cl::opt<int64_t> numMicrobatches{
      "num-microbatches",
      cl::desc("Microbatches per iteration (front half and "
               "--reference)"),
      cl::init(4), cl::cat(category)};
  cl::opt<std::string> schedule{
      "schedule",
      cl::desc("Schedule for pipe-schedule (front half); default "
               "forward-only, with --train 1f1b; 'auto': the "
               "explorer's choice of schedule, microbatches (unless "
               "--num-microbatches is given) and chunks per rank "
               "for --num-stages ranks (pipe-auto-schedule)"),
      cl::init(std::string(pipeopt::schedule::kInferenceSchedule)),
      cl::cat(category)};
  cl::opt<std::string> memoryLimitOpt{
      "memory-limit",
      cl::desc("Per-device memory limit (80GiB, 16GB, 8e9; front half): "
               "pipe-partition's, and with --schedule auto the limit the "
               "chosen configuration's peak per-rank memory must fit "
               "(default: the device's capacity)"),
      cl::value_desc("bytes"), cl::cat(category)};
  cl::opt<std::string> partitionOptions{
      "partition-options",
      cl::desc("Extra pipeopt-pipeline options, e.g. 'strategy=uniform "
               "memory-limit=16GB', added after device=cpu (--target=cuda: "
               "device=h200) and this tool's options (they override them, "
               "e.g. device=h100)"),
      cl::cat(category)};
  cl::opt<std::string> frontHalf{
      "front-half",
      cl::desc("Replace the front-half pipeline (pass pipeline text without "
               "builtin.module(...))"),
      cl::cat(category)};
  cl::list<std::string> microbatchArgs{
      "microbatch-args", cl::CommaSeparated,
      cl::desc(
          "Model arguments that differ per microbatch (data: the model "
          "takes one microbatch, pipeopt-run the whole batch, split along "
          "dim 0): auto (the default: found by the batch dimension; "
          "integer tensors such as token ids are data, never weights), "
          "all, none or a comma-separated index list "
          "(convert-pipe-to-runtime; pipeopt/Analysis/ArgumentSelection.h)"),
      cl::cat(category)};

  // Training (--train): pipe-differentiate's options, forwarded as they are
  // (the pass checks them), and the optimizer the runtime applies.
  cl::opt<bool> train{
      "train",
      cl::desc("Compile a training step: loss and gradients of every "
               "trainable argument, averaged over the microbatches, and "
               "the --optimizer update (pipe-prepare-training; pipelined: "
               "pipe-materialize-backward; pipe-set-optimizer)"),
      cl::cat(category)};
  cl::opt<std::string> optimizer{
      "optimizer",
      cl::desc("Update after each training step: none, sgd, momentum (SGD with "
               "momentum) or adamw; default none with --reference (loss and "
               "gradients only), sgd otherwise"),
      cl::cat(category)};
  cl::opt<double> lr{"lr", cl::desc("Learning rate (default 0.01)"),
                     cl::init(0.01), cl::cat(category)};
  cl::opt<double> momentumOpt{
      "momentum", cl::desc("Momentum of --optimizer momentum (default 0.9)"),
      cl::init(0.9), cl::cat(category)};
  cl::opt<std::string> betas{"betas",
                             cl::desc("AdamW's B1,B2 (default 0.9,0.999)"),
                             cl::init("0.9,0.999"), cl::cat(category)};
  cl::opt<double> epsOpt{"eps", cl::desc("AdamW's epsilon (default 1e-8)"),
                         cl::init(1e-8), cl::cat(category)};
  cl::opt<double> weightDecay{
      "weight-decay",
      cl::desc("Weight decay: L2 added to the gradient for sgd / momentum "
               "(torch.optim.SGD), decoupled for adamw (torch.optim.AdamW); "
               "default 0"),
      cl::init(0.0), cl::cat(category)};
  cl::opt<pipeopt::pipe::LossKind> loss{
      "loss",
      cl::desc("Loss for --train: none (the model returns its own f32 "
               "scalar loss), mse (target: the type of result 0) or "
               "cross-entropy (result 0 is logits [..., C]; target: i64 "
               "class indices [...])"),
      pipeopt::lossOptionValues(), cl::init(pipeopt::pipe::LossKind::None),
      cl::cat(category)};
  cl::opt<std::string> trainable{
      "trainable",
      cl::desc("Arguments that get gradients for --train: auto, all, none or "
               "a comma-separated index list"),
      cl::init("auto"), cl::cat(category)};
  cl::opt<pipeopt::autodiff::Recompute> recompute{
      "recompute",
      cl::desc("What backward recomputes instead of saving, for --train: none, "
               "elementwise or all"),
      pipeopt::recomputeOptionValues(),
      cl::init(pipeopt::autodiff::Recompute::None), cl::cat(category)};

  cl::opt<Emit> emit{
      "emit", cl::desc("Stop after a step and write its result to -o"),
      cl::values(clEnumValN(Emit::Scheduled, "scheduled",
                            "MLIR with pipe.programs (before lowering)"),
                 clEnumValN(Emit::LLVMDialect, "mlir-llvm",
                            "MLIR in the LLVM dialect"),
                 clEnumValN(Emit::LLVMIR, "llvm-ir", "optimized LLVM IR (.ll)"),
                 clEnumValN(Emit::Object, "obj", "object file"),
                 clEnumValN(Emit::SharedObject, "so",
                            "shared object + manifest (default)")),
      cl::init(Emit::SharedObject), cl::cat(category)};
  cl::opt<unsigned> optLevel{"O", cl::desc("LLVM optimization level (0-3)"),
                             cl::init(3), cl::Prefix, cl::cat(category)};
  cl::opt<std::string> cpu{
      "mcpu", cl::desc("Target CPU ('native' = this host's; default)"),
      cl::init("native"), cl::cat(category)};
  cl::opt<bool> verifySchedule{
      "verify-schedule",
      cl::desc("Check pipe.programs given in the input with "
               "pipe-verify-schedule before lowering (default; =false only to "
               "build deliberately broken models that test the runtime's own "
               "checks)"),
      cl::init(true), cl::cat(category)};
  cl::opt<std::string> ccPath{"cc", cl::desc("C compiler used to link"),
                              cl::init(PIPEOPT_DEFAULT_CC), cl::cat(category)};
  cl::opt<bool> kernels{
      "kernels",
      cl::desc("Call the runtime's BLAS kernels (OpenBLAS; --target=cuda: "
               "cuBLAS / cuDNN) for f32/f64 contractions and convolutions "
               "(default; =false: naive loops or generated kernels, for "
               "comparisons)"),
      cl::init(true), cl::cat(category)};
  cl::opt<std::string> target{
      "target",
      cl::desc("Where stage bodies run: cpu (default) or cuda (GPU kernels "
               "and cuBLAS/cuDNN calls, every buffer in device memory; the "
               ".so needs libpipeopt_rt_cuda.so; docs/CUDA.md)"),
      cl::init("cpu"), cl::cat(category)};
  cl::opt<std::string> cudaArch{
      "cuda-arch",
      cl::desc("--target=cuda: GPU architecture of the kernels' cubin "
               "(default sm_90; the fatbin also carries PTX for it)"),
      cl::init("sm_90"), cl::cat(category)};
  cl::opt<bool> fuse{
      "fuse",
      cl::desc("Fuse element-wise linalg chains before bufferization "
               "(default; =false: one loop nest per op, for comparisons)"),
      cl::init(true), cl::cat(category)};
  cl::opt<bool> approximateMath{
      "approximate-math",
      cl::desc("Approximate f32 exp, log, ... with vectorizable "
               "polynomials instead of libm calls (erf, erfc and tanh "
               "always are)"),
      cl::init(false), cl::cat(category)};

  cl::opt<bool> inputViews{
      "input-views",
      cl::desc("Read model inputs (weights, microbatch slices) in place from "
               "the runtime's memory (default); =false: copy them into new "
               "buffers at every call, as cuda builds do (for comparisons)"),
      cl::init(true), cl::cat(category)};
  cl::opt<bool> outlineLoopNests{
      "outline-loop-nests",
      cl::desc("Compile each distinct loop nest once, as a function called "
               "wherever it occurs, so that repeated layers add calls, not "
               "code (default); =false: every loop nest inline in its "
               "stage function (for comparisons)"),
      cl::init(true), cl::cat(category)};
  cl::opt<bool> outlineRepeats{
      "outline-repeats",
      cl::desc("Compile each distinct repeated op sequence (a transformer "
               "layer's forward or backward code) once, as a function called "
               "wherever it occurs, so that build time hardly grows with "
               "depth (default); =false: every layer inline in its stage "
               "function (for comparisons)"),
      cl::init(true), cl::cat(category)};

  cl::opt<bool> cache{
      "cache",
      cl::desc("Keep compiled objects in the object cache and reuse them: "
               "a rebuild of an unchanged model skips LLVM's optimization and "
               "code generation (default; =false: neither read nor write it)"),
      cl::init(true), cl::cat(category)};
  cl::opt<std::string> cacheDir{
      "cache-dir",
      cl::desc("The object cache's directory (default: $PIPEOPT_CACHE_DIR, "
               "else $XDG_CACHE_HOME/pipeopt/objects, else "
               "~/.cache/pipeopt/objects)"),
      cl::cat(category)};

  cl::opt<bool> saveTemps{
      "save-temps",
      cl::desc("Keep <output stem>.scheduled.mlir, .llvm.mlir, .ll and .o "
               "(each must differ from the input and the other outputs)"),
      cl::cat(category)};
  cl::opt<bool> timing{"timing", cl::desc("Print the time of every step (s)"),
                       cl::cat(category)};

  /// Every option above, for `given`.
  std::vector<cl::Option *> all() {
    return {&outputFile,
            &manifestFile,
            &reference,
            &function,
            &numStages,
            &numMicrobatches,
            &schedule,
            &memoryLimitOpt,
            &partitionOptions,
            &frontHalf,
            std::addressof(microbatchArgs),
            &train,
            &optimizer,
            &lr,
            &momentumOpt,
            &betas,
            &epsOpt,
            &weightDecay,
            &loss,
            &trainable,
            &recompute,
            &emit,
            &optLevel,
            &cpu,
            &verifySchedule,
            &ccPath,
            &kernels,
            &target,
            &cudaArch,
            &fuse,
            &approximateMath,
            &inputViews,
            &outlineLoopNests,
            &outlineRepeats,
            &cache,
            &cacheDir,
            &saveTemps,
            &timing};
  }
};
} // namespace

static llvm::ManagedStatic<CompileCLOptions> clOptions;

void pipeopt::driver::registerCompileCLOptions() { *clOptions; }

llvm::cl::OptionCategory &pipeopt::driver::getCompileCLCategory() {
  return clOptions->category;
}

CompileOptions pipeopt::driver::getCompileOptionsFromCL() {
  CompileCLOptions &cli = *clOptions;
  CompileOptions o;
  o.inputFile = cli.inputFile;
  o.outputFile = cli.outputFile;
  o.manifestFile = cli.manifestFile;
  o.emit = cli.emit;
  o.saveTemps = cli.saveTemps;
  o.timing = cli.timing;
  o.reference = cli.reference;
  o.function = cli.function;
  o.numStages = cli.numStages;
  o.numMicrobatches = cli.numMicrobatches;
  // Empty: the default of the build (checkOptions).
  if (cli.schedule.getNumOccurrences())
    o.schedule = cli.schedule;
  o.memoryLimit = cli.memoryLimitOpt;
  o.partitionOptions = cli.partitionOptions;
  o.frontHalf = cli.frontHalf;
  o.microbatchArgs.assign(cli.microbatchArgs.begin(), cli.microbatchArgs.end());
  o.verifySchedule = cli.verifySchedule;
  o.train = cli.train;
  o.optimizer = cli.optimizer;
  o.lr = cli.lr;
  o.momentum = cli.momentumOpt;
  o.betas = cli.betas;
  o.eps = cli.epsOpt;
  o.weightDecay = cli.weightDecay;
  o.loss = cli.loss;
  o.trainable = cli.trainable;
  o.recompute = cli.recompute;
  o.target = cli.target;
  o.cudaArch = cli.cudaArch;
  o.optLevel = cli.optLevel;
  o.cpu = cli.cpu;
  o.cc = cli.ccPath;
  o.kernels = cli.kernels;
  o.fuse = cli.fuse;
  o.approximateMath = cli.approximateMath;
  o.inputViews = cli.inputViews;
  o.outlineLoopNests = cli.outlineLoopNests;
  o.outlineRepeats = cli.outlineRepeats;
  o.cache = cli.cache;
  o.cacheDir = cli.cacheDir;
  for (cl::Option *opt : cli.all())
    if (opt->getNumOccurrences())
      o.given.insert(opt->ArgStr);
  return o;
}
