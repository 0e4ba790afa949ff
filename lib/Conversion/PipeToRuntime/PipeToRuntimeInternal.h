//===- PipeToRuntimeInternal.h - Parts of convert-pipe-to-runtime -*- C++
//-*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Private to lib/Conversion/PipeToRuntime. convert-pipe-to-runtime runs in
/// three parts, each in its own file:
///
///  1. Checks.cpp: everything that can reject the input, before the IR is
///     changed (the program structure through the shared program checker,
///     ProgramChecks.h, plus what only the lowering to the runtime needs);
///  2. Lowering.cpp: conversion patterns under a ConversionTarget that
///     turn every pipe.program into an entry point calling the runtime C
///     ABI, recording what they lower in a LoweringResults;
///  3. Manifest.cpp: the manifest JSON, built from the LoweringResults.
///
/// MicrobatchPolicy.cpp decides which model arguments differ per
/// microbatch (option microbatch-args); the three parts read it.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_LIB_CONVERSION_PIPETORUNTIME_PIPETORUNTIMEINTERNAL_H
#define PIPEOPT_LIB_CONVERSION_PIPETORUNTIMEINTERNAL_H

#include "pipeopt/Conversion/RuntimeABI.h"
#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace pipeopt {
namespace pipe_to_runtime {

//===----------------------------------------------------------------------===//
// Microbatch policy (MicrobatchPolicy.cpp)
//===----------------------------------------------------------------------===//

/// Which model arguments differ per microbatch (option microbatch-args).
struct MicrobatchPolicy {
  enum class Kind { Auto, All, None, List } kind = Kind::Auto;
  std::set<int64_t> indices;

  /// Parses the option's entries (pipeopt/Analysis/ArgumentSelection.h):
  /// none or "auto", "all", "none", or argument indices; else `err` says
  /// why not.
  static mlir::FailureOr<MicrobatchPolicy>
  parse(llvm::ArrayRef<std::string> entries, std::string &err);

  /// With a list: every index must be a model argument the programs read
  /// (`arguments`: the `pipe.input` indices), else `err` names the first
  /// one that is not and the valid range.
  mlir::LogicalResult checkIndices(const std::set<int64_t> &arguments,
                                   std::string &err) const;

  /// Whether model argument `index` of type `type` differs per microbatch.
  bool isMicrobatched(int64_t index, mlir::RankedTensorType type) const;

  /// For `auto`: model arguments that a stage function reading them
  /// classifies as per-example data (cost::classifyArguments, the rule
  /// pipe-differentiate uses too).
  std::set<int64_t> data;

  /// Model arguments that a stage function marks `pipe.microbatched` (a
  /// training target, which pipeopt-compile --train appends): per
  /// microbatch whatever the policy says.
  std::set<int64_t> forced;

  /// Model arguments used as gather indices (an embedding's token ids) ->
  /// the smallest extent they index; written to the manifest as
  /// "index_bound" so that pipeopt-run's random inputs stay in range.
  std::map<int64_t, int64_t> indexBounds;
  /// Model arguments that hold class indices (pipe.class_count): their
  /// values must be in [0, index bound); the runtime checks them on load.
  std::set<int64_t> classIndices;
};

/// Fills the facts `policy` reads from the stage functions that the
/// programs' pipe.forward ops call: `data`, `forced`, `indexBounds` and
/// `classIndices` (per model argument a pipe.input reads).
void classifyArguments(llvm::ArrayRef<pipe::ProgramOp> programs,
                       MicrobatchPolicy &policy);

//===----------------------------------------------------------------------===//
// Checks (Checks.cpp)
//===----------------------------------------------------------------------===//

/// Whether `fn` is a stage graph (it holds pipe.stage_call ops): the pass
/// removes those before the lowering (PipeToRuntime.cpp).
bool isStageGraphFunction(mlir::func::FuncOp fn);

/// Runs every check of convert-pipe-to-runtime on `module` (whose
/// pipe.programs are `programs`, non-empty) before anything is changed.
/// Errors are diagnostics at the op; on success, `byRank` holds the
/// programs ordered by rank. `microbatchArgs` is the option's entries
/// joined by commas (formatArgumentList), for messages. See Passes.td for the
/// list.
mlir::LogicalResult checkConversion(mlir::ModuleOp module,
                                    llvm::ArrayRef<pipe::ProgramOp> programs,
                                    const MicrobatchPolicy &policy,
                                    llvm::StringRef microbatchArgs,
                                    std::vector<pipe::ProgramOp> &byRank);

//===----------------------------------------------------------------------===//
// Lowering (Lowering.cpp)
//===----------------------------------------------------------------------===//

/// A tensor crossing the model boundary (input or output).
struct BoundaryTensor {
  mlir::RankedTensorType type;
};

/// A model result and how the programs write it.
struct BoundaryOutput {
  BoundaryTensor tensor;
  /// The pipe.output ops' `reduce mean` and `name` (all agree).
  bool mean = false;
  std::string name;
};

/// What the lowering did, for the manifest: one entry per model input and
/// output, every rank's actions, the trainable arguments.
struct LoweringResults {
  int64_t numRanks = 0;
  /// 1 + the largest stage of a pipe.forward (the pass raises it to a
  /// larger pipe.num_stages left in the module, and to at least 1).
  int64_t numStages = 0;
  int64_t numMicrobatches = 0;
  std::string schedule;
  std::map<int64_t, BoundaryTensor> inputs;
  std::map<int64_t, BoundaryOutput> outputs;
  /// One action of a rank: kind (PIPEOPT_RT_ACTION_*: 0 F, 1 B, 2 W,
  /// 3 BW), stage, microbatch.
  struct Action {
    int64_t kind, stage, microbatch;
  };
  /// [rank] -> actions in program order.
  std::map<int64_t, std::vector<Action>> actions;
  /// Trainable model argument -> ranks that hand the runtime its gradient
  /// (pipe.gradient).
  std::map<int64_t, std::set<int64_t>> parameters;
  /// The module's pipe.optimizer attribute (null: none given).
  pipe::OptimizerAttr optimizer;
  /// (stage, microbatch) -> rank that runs its forward.
  std::map<std::pair<int64_t, int64_t>, int64_t> forwardRank;
  /// Runtime calls emitted.
  uint64_t numCalls = 0;
};

/// Lowers every pipe.program of `module` (checked by checkConversion(),
/// ordered by rank in `byRank`) to its entry point
/// (runtimeEntryPointName()) and every ml_program.global_load_const to an
/// arith.constant, with applyPartialConversion under a ConversionTarget
/// for which the pipe dialect is illegal: a pipe op that is left anywhere in
/// the module is reported by the conversion framework at its location.
/// Fills `results` (numRanks, numMicrobatches, schedule and optimizer are
/// taken from the programs and the module).
/// With `inputViews`, pipe.input reads the runtime's data in place: see
/// materializeInputViews() (PipeToRuntime.h).
mlir::LogicalResult lowerPrograms(mlir::ModuleOp module,
                                  llvm::ArrayRef<pipe::ProgramOp> byRank,
                                  const MicrobatchPolicy &policy,
                                  LoweringResults &results, bool inputViews);

//===----------------------------------------------------------------------===//
// Manifest (Manifest.cpp)
//===----------------------------------------------------------------------===//

/// The manifest JSON of a lowered module (format: docs/Runtime.md; parser:
/// runtime/lib/Manifest.cpp; keys: runtime/include/pipeopt/runtime/
/// ManifestKeys.def, shared with the runtime).
/// `target` is the code generation target: "cuda" is written as the
/// manifest's "target" key; "cpu" (the default) writes no key.
llvm::json::Value manifestJson(const LoweringResults &results,
                               const MicrobatchPolicy &policy,
                               llvm::StringRef target = "cpu");

/// The symbol of the function every lowered module exports,
/// `int64_t pipeopt_module_hash(void)`, returning moduleHash(); the
/// manifest's "module_hash" holds the same value (formatModuleHash), and
/// pipeopt-run refuses a manifest and a model whose hashes differ
/// (docs/Runtime.md, "Faults and what they cost").
inline constexpr const char kModuleHashSymbol[] = "pipeopt_module_hash";

/// The symbol of the constant the lowered module exports with the manifest
/// JSON (compact, without "model_file", which pipeopt-compile adds after the
/// link): `pipeopt_manifest`, an i8 array of exactly the text's length (no
/// NUL). pipeopt-run compares the manifest file it is given with it, so an
/// edited manifest (another update_every, optimizer or schedule) is an error
/// instead of wrong results (ModelLibrary.h).
inline constexpr const char kEmbeddedManifestSymbol[] = "pipeopt_manifest";

/// Appends `memref.global "public" constant @pipeopt_manifest` holding
/// `json` as text to `module`.
void addEmbeddedManifest(mlir::ModuleOp module, const llvm::json::Value &json);

/// A 64-bit fingerprint of a build: the first 8 bytes of the BLAKE3 hash of
/// `module` printed in generic form (locations left out), a NUL byte and
/// the manifest `json` (without the hash). Deterministic: the same input
/// and options give the same value, so builds stay reproducible; two
/// builds that differ in any op, attribute or manifest field differ.
uint64_t moduleHash(mlir::ModuleOp module, const llvm::json::Value &json);

/// `hash` as the manifest writes it: 16 lower-case hex digits.
std::string formatModuleHash(uint64_t hash);

/// Appends `func.func @pipeopt_module_hash() -> i64` returning `hash` (as
/// the i64 with the same bits) to `module`, public, so that the shared
/// object exports it.
void addModuleHashFunction(mlir::ModuleOp module, uint64_t hash);

/// Writes the manifest `json` to `path` (a temporary renamed over it); an
/// error at `module` naming the file and the reason when it cannot be
/// written.
mlir::LogicalResult writeManifest(mlir::ModuleOp module, llvm::StringRef path,
                                  const llvm::json::Value &json);

} // namespace pipe_to_runtime
} // namespace pipeopt

#endif // PIPEOPT_LIB_CONVERSION_PIPETORUNTIMEINTERNAL_H
