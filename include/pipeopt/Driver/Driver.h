//===- Driver.h - the pipeopt compiler driver as a library -------*- C++
//-*-===//
//
// Part of pipeopt. What pipeopt-compile does, callable from any tool or
// library: a model (func + tosa / linalg, optionally already scheduled) to
// the shared object and manifest that pipeopt-run executes
// (docs/Runtime.md), in stages that can also be run one at a time:
//
//   1. checkOptions:     validate a CompileOptions and fill in its defaults
//                        (the output paths; every output is checked before
//                        any work);
//   2. parseInput:       read the input module;
//   3. buildPrograms:    the per-rank pipe.programs: the unpartitioned
//                        reference (--reference) or the front half
//                        (pipe-prepare, pipe-partition, pipe-outline-stages,
//                        pipe-schedule); with `train`, training preparation
//                        first (pipe-prepare-training) and
//                        pipe-materialize-backward / pipe-set-optimizer
//                        after;
//   4. lowerToLLVMDialect: pipeopt-lower-to-llvm (cuda: pipeopt-lower-to-cuda),
//                        which writes the manifest;
//   5. emit:             LLVM IR, optimization, object, link (Codegen.h).
//
// `compile` runs them all and writes what `emit` asks for, as
// pipeopt-compile does. Errors are returned as llvm::Error: a plain message
// (the tool prints "<tool>: error: <message>"), or a DiagnosedError when
// MLIR diagnostics have been reported already (nothing more to print).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_DRIVER_DRIVER_H
#define PIPEOPT_DRIVER_DRIVER_H

#include "pipeopt/Autodiff/Autodiff.h"
#include "pipeopt/Dialect/Pipe/IR/PipeAttributes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
namespace cl {
class OptionCategory;
} // namespace cl
} // namespace llvm

namespace pipeopt::driver {

/// Where a compilation stops; the output (`CompileOptions::outputFile`)
/// holds that step's result.
enum class Emit { Scheduled, LLVMDialect, LLVMIR, Object, SharedObject };

/// Everything a compilation is configured by. The defaults are
/// pipeopt-compile's; `given` records the options a user set explicitly
/// (by their command-line names, e.g. "lr"), because several are errors
/// when they would be ignored (a training option without `train`, a
/// front-half option with `reference`, ...).
struct CompileOptions {
  /// The tool name errors and --timing lines begin with.
  std::string toolName = "pipeopt-compile";

  // Files.
  std::string inputFile = "-";
  /// Default: <input stem> with the extension of `emit` (.so, .o, ...).
  std::string outputFile;
  /// Default: <output stem>.manifest.json.
  std::string manifestFile;
  Emit emit = Emit::SharedObject;
  /// Keep <output stem>.scheduled.mlir, .llvm.mlir, .ll and .o.
  bool saveTemps = false;
  /// Print the time of every stage (seconds) to stderr.
  bool timing = false;

  // Programs.
  /// One stage on one rank: the unpartitioned model.
  bool reference = false;
  /// The model function (default: the only public function with a body).
  std::string function;
  int64_t numStages = 2;
  int64_t numMicrobatches = 4;
  /// A schedule key (schedule::findScheduleByKey) or "auto"; default
  /// forward-only, with `train` 1f1b.
  std::string schedule;
  /// Per-device memory limit text ("80GiB"); empty: the device's capacity.
  std::string memoryLimit;
  /// Extra pipeopt-pipeline options, parsed after this struct's.
  std::string partitionOptions;
  /// Replaces the front-half pipeline (pass pipeline text).
  std::string frontHalf;
  /// auto, all, none or argument indices (ArgumentSelection.h).
  std::vector<std::string> microbatchArgs;
  /// Check pipe.programs given in the input with pipe-verify-schedule.
  bool verifySchedule = true;

  // Training.
  bool train = false;
  /// none, sgd, momentum or adamw; empty: none with `reference`, else sgd.
  std::string optimizer;
  double lr = 0.01;
  double momentum = 0.9;
  /// AdamW's "B1,B2".
  std::string betas = "0.9,0.999";
  double eps = 1e-8;
  double weightDecay = 0.0;
  /// pipe-differentiate's loss (none, mse or cross-entropy; `self` is what
  /// it finds for a model that returns its loss).
  pipe::LossKind loss = pipe::LossKind::None;
  /// auto, all, none or argument indices.
  std::string trainable = "auto";
  /// What the backward recomputes instead of saving.
  autodiff::Recompute recompute = autodiff::Recompute::None;

  // Code generation.
  /// cpu or cuda.
  std::string target = "cpu";
  std::string cudaArch = "sm_90";
  unsigned optLevel = 3;
  /// Target CPU ("native": this host's).
  std::string cpu = "native";
  /// The C compiler that links.
  std::string cc;
  bool kernels = true;
  bool fuse = true;
  bool approximateMath = false;
  bool inputViews = true;
  /// pipeopt-outline-loop-nests (cpu only).
  bool outlineLoopNests = true;
  /// pipeopt-outline-repeats (cpu only).
  bool outlineRepeats = true;
  /// The object cache (Target/SharedObject.h): read and write it.
  bool cache = true;
  /// Its directory; empty: target::defaultObjectCacheDir().
  std::string cacheDir;

  /// Options set explicitly, by command-line name ("lr", "schedule", ...).
  llvm::StringSet<> given;
  bool isGiven(llvm::StringRef name) const { return given.contains(name); }
};

/// Registers pipeopt-compile's command-line options (llvm::cl, in the
/// category "pipeopt-compile options") for a tool that wants them; call
/// before llvm::cl::ParseCommandLineOptions.
void registerCompileCLOptions();

/// The category of those options (for llvm::cl::HideUnrelatedOptions).
llvm::cl::OptionCategory &getCompileCLCategory();

/// The CompileOptions the registered command-line options give (after
/// parsing), with `given` filled in.
CompileOptions getCompileOptionsFromCL();

/// An error whose diagnostics have been reported (MLIR diagnostics, or a
/// message printed by a stage): the caller prints nothing more.
class DiagnosedError : public llvm::ErrorInfo<DiagnosedError> {
public:
  static char ID;
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;
};

/// Prints `error` as "<tool>: error: <message>" (nothing for a
/// DiagnosedError); returns 1, a tool's exit status.
int reportError(llvm::Error error, llvm::StringRef tool);

/// Stage 1. Checks `options` (ranges, options that would be ignored,
/// --target and --cuda-arch, the output paths) and fills in the defaults:
/// the optimizer, the schedule, the output and manifest paths. Every file
/// the compilation writes is checked: its directory exists and it is
/// neither the input nor another output.
llvm::Error checkOptions(CompileOptions &options);

/// Stage 2. Parses `options.inputFile` ("-": stdin) into `context`
/// (diagnostics through `sourceMgr`); drops an input's pipe.auto_schedule.
/// An op (or type, attribute) of a dialect `context` does not load, such
/// as torch-mlir's `tm_tensor.scan`, is the error unsupportedDialectMessage
/// (InitAll.h) at its location: the dialect and op, what pipeopt takes and
/// what to do.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
parseInput(mlir::MLIRContext &context, llvm::SourceMgr &sourceMgr,
           const CompileOptions &options);

/// What buildPrograms decided that later stages follow.
struct BuiltModel {
  /// The microbatch arguments convert-pipe-to-runtime gets (training
  /// marks its data and target arguments).
  std::vector<std::string> microbatchArgs;
  /// The schedule and microbatch count of the pipe.programs (--schedule
  /// auto: the explorer's choice).
  std::string schedule;
  int64_t numMicrobatches = 0;
};

/// Stage 3. Builds the module's pipe.programs: the reference, the front
/// half, or (programs in the input) their verification; with `train`, the
/// training step (pipe-prepare-training, pipe-materialize-backward,
/// pipe-set-optimizer). `options` must have passed checkOptions.
llvm::Expected<BuiltModel> buildPrograms(mlir::ModuleOp module,
                                         const CompileOptions &options);

/// Stage 4. Lowers the programs to the LLVM dialect (cuda: with the
/// kernels' fatbin) and writes the manifest to `manifestPath`.
llvm::Error lowerToLLVMDialect(mlir::ModuleOp module,
                               const CompileOptions &options,
                               const BuiltModel &built,
                               llvm::StringRef manifestPath);

/// Runs every stage and writes the outputs `options.emit` asks for
/// (--save-temps: the intermediate files too). A failed compilation leaves
/// neither a shared object nor a fresh manifest.
llvm::Error compile(CompileOptions options);

} // namespace pipeopt::driver

#endif // PIPEOPT_DRIVER_DRIVER_H
