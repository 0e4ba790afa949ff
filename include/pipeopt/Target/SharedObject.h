//===- SharedObject.h - LLVM-dialect module to a shared library -*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The back end of pipeopt-compile as a library: a module in the LLVM
/// dialect (the output of pipeopt-lower-to-llvm) becomes LLVM IR, is
/// optimized for the host CPU, emitted as an object file and linked into the
/// shared library that pipeopt-run loads. Another compiler that builds
/// pipeopt programs calls these in this order:
///
/// \code
///   auto tm = pipeopt::target::createHostTargetMachine({"native", 3});
///   auto ir = pipeopt::target::translateAndOptimize(module, ctx, **tm, 3,
///                                                    "model");
///   pipeopt::target::emitObjectFile(**ir, **tm, "model.o");
///   pipeopt::target::linkSharedLibrary("model.o", "model.so", "cc",
///       pipeopt::target::needsCRunnerUtils(**ir));
/// \endcode
///
/// Every function reports failure as an llvm::Error whose message says what
/// failed and how to fix it (pipeopt-compile prints it after "error: ").
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_TARGET_SHAREDOBJECT_H
#define PIPEOPT_TARGET_SHAREDOBJECT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <optional>
#include <string>

namespace pipeopt {
namespace target {

/// The host target machine to generate code for.
struct TargetOptions {
  /// "native" (the host CPU and all its features) or an LLVM CPU name
  /// (`llc -mcpu=help` lists them), e.g. "x86-64-v3".
  std::string cpu = "native";
  /// LLVM optimization level 0..3 (3 also selects aggressive codegen).
  unsigned optLevel = 3;
};

/// Initializes the native target (once per process) and creates a target
/// machine for the process triple, position-independent (for a shared
/// library). The CPU name is checked first: LLVM only warns about an unknown
/// CPU and dies later, so this is the place to reject it. Errors: no LLVM
/// target for the process triple; "--mcpu: unknown CPU '<cpu>' for target
/// <triple> (use 'native', or a name listed by `llc-<N> -mcpu=help`)"; the
/// target cannot create a target machine.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createHostTargetMachine(const TargetOptions &options);

/// Translates `module` (LLVM dialect only) to LLVM IR in `context`, named
/// `name`, sets `tm`'s triple and data layout and runs optimizeModule.
/// Errors: "translation to LLVM IR failed" (after the MLIR diagnostics of
/// the translation).
llvm::Expected<std::unique_ptr<llvm::Module>>
translateAndOptimize(mlir::ModuleOp module, llvm::LLVMContext &context,
                     llvm::TargetMachine &tm, unsigned optLevel,
                     llvm::StringRef name);

/// Marks the rank entry points of `module` (`pipeopt_rank_<r>`, defined
/// here) `optnone noinline`; returns how many. An entry point is a
/// straight-line sequence of runtime calls and stage calls, run once per
/// step: optimizing it gains nothing measurable, but instruction selection
/// compares the stores of a call's stack arguments in pairs, and a stage
/// function takes every weight, gradient and activation buffer as five or
/// more scalars (GPT-2 16 x 512's training step: 2,240 arguments). That
/// made code generation grow with the square of the model's depth (16 x
/// 512: 5.7 of 8.0 s in the entry point). With optnone the entry point
/// goes through the fast instruction selector. A function that calls the
/// functions pipeopt-outline-repeats made (`pipeopt_repeat_<N>`; a stage
/// function whose layers were outlined) is marked too: what is left in it
/// is glue and calls that pass ~70 buffers each, the same case (GPT-2 16 x
/// 512: its code generation 0.25 s faster, the 8-layer build's 0.05 s; no
/// measurable change of the step time).
unsigned markEntryPointsOptNone(llvm::Module &module);

/// Translates `module` (LLVM dialect only) to LLVM IR in `context`, named
/// `name`, with `tm`'s triple and data layout, unoptimized; the entry
/// points are marked optnone (markEntryPointsOptNone). Errors:
/// "translation to LLVM IR failed" (after the MLIR diagnostics).
llvm::Expected<std::unique_ptr<llvm::Module>>
translateToLLVMIR(mlir::ModuleOp module, llvm::LLVMContext &context,
                  llvm::TargetMachine &tm, llvm::StringRef name);

/// The object cache: an object compiled by the same compiler from the same
/// input for the same target is the same object, so pipeopt-compile keeps
/// objects under a key (objectCacheKey, 64 hex digits) and a rebuild of an
/// unchanged model skips LLVM's optimization and code generation. An entry
/// is `<dir>/<key>.o` and `<dir>/<key>.link` ("<object bytes> <needs C
/// runner utils> <needs libmvec> <the object's SHA-256>").
///
/// The key is the SHA-256 of the compiler itself (the file that holds this
/// code: pipeopt-compile or the Python extension), LLVM's version, `tm`'s
/// triple, CPU and features, `optLevel` and `inputs` (the driver's: the
/// scheduled module as text and the lowering options). It is computed
/// before lowering: MLIR 22's buffer deallocation orders some of the
/// conditions it emits by pointer, so the lowered IR of one model differs
/// from run to run and cannot serve as a key. "" (no caching) when the
/// compiler's file cannot be read.
std::string objectCacheKey(llvm::ArrayRef<llvm::StringRef> inputs,
                           const llvm::TargetMachine &tm, unsigned optLevel);

/// $PIPEOPT_CACHE_DIR, else $XDG_CACHE_HOME/pipeopt/objects, else
/// ~/.cache/pipeopt/objects; "" when there is no home directory.
std::string defaultObjectCacheDir();

/// A cache entry: the object's path and what its link needs.
struct CachedObject {
  std::string objectPath;
  bool needsCRunnerUtils = false;
  bool needsVectorMath = false;
};

/// The entry `key` in `dir`, if it is complete and intact (its object has
/// the size and SHA-256 its .link records); otherwise nothing (a miss).
std::optional<CachedObject> lookupCachedObject(llvm::StringRef dir,
                                               llvm::StringRef key);

/// Copies the object at `objectPath` into `dir` (created if missing) as the
/// entry `key`. Best effort and silent: a cache that cannot be written
/// never fails the build. Each file goes through a temporary and a rename,
/// so a concurrent build reads a complete entry or none.
void storeCachedObject(llvm::StringRef dir, llvm::StringRef key,
                       llvm::StringRef objectPath, bool needsCRunnerUtils,
                       bool needsVectorMath);

/// Runs LLVM's default optimization pipeline at `optLevel` (0-3; the loop
/// and SLP vectorizers from 2 on) for `tm`, with glibc's vector math
/// library (libmvec) known to the vectorizer: a loop that calls exp or tanh
/// (softmax, GELU, SiLU) vectorizes with _ZGV* calls instead of staying a
/// scalar loop around libm. libmvec's functions are within a few ulp of
/// libm's (glibc's manual, "Known Maximum Errors in Math Functions").
void optimizeModule(llvm::Module &module, llvm::TargetMachine &tm,
                    unsigned optLevel);

/// True if `module` calls libmvec (optimizeModule vectorized a math call),
/// so the link needs -lmvec.
bool needsVectorMath(const llvm::Module &module);

/// Writes `module` as an object file to `path` (created or replaced).
/// Errors: the file cannot be written; the target cannot emit objects (the
/// partly written file is removed).
llvm::Error emitObjectFile(llvm::Module &module, llvm::TargetMachine &tm,
                           llvm::StringRef path);

/// True if `module` calls MLIR's C runner utilities (memrefCopy: lowered
/// non-contiguous memref copies), so the link needs
/// libmlir_c_runner_utils.
bool needsCRunnerUtils(const llvm::Module &module);

/// Checks that the file at `path` is a complete 64-bit little-endian ELF
/// shared object (ET_DYN): its header, program header table and section
/// header table parse (llvm::object::ELFFile) and every segment's and every
/// section's file bytes lie within the file. Only the structure is checked,
/// which is what a truncated write breaks. Errors: "cannot read <path>:
/// <reason>"; "<path> is not a complete shared object: <what> (file size N
/// bytes; ...)".
llvm::Error checkSharedLibrary(llvm::StringRef path);

/// Records the shared object `soPath` in the manifest `manifestPath` (a
/// JSON object, rewritten in place through a temporary): "model_file":
/// {"bytes": <size>, "fnv1a64": "<16 hex digits>"}, the 64-bit FNV-1a hash
/// (offset basis 0xcbf29ce484222325, prime 0x100000001b3) of the file's
/// bytes. pipeopt-run compares both before it loads the model, so a bit
/// flip or a short copy of the .so is an error instead of a crash. Errors
/// name the file (as `manifestName`, when the manifest is a temporary to be
/// renamed later) and the reason.
llvm::Error recordModelFile(llvm::StringRef manifestPath,
                            llvm::StringRef soPath,
                            llvm::StringRef manifestName = {});

/// Links the object `objectPath` into the shared library `outputPath` with
/// the C compiler `cc` (a path, or a name looked up in PATH): `cc -shared -o
/// OUT OBJ [-lmlir_c_runner_utils with an rpath to LLVM's library
/// directory] -lm EXTRA...` (`extraArgs`: further libraries and linker
/// flags, after the object). Errors: "C compiler '<cc>' not found (use --cc)";
/// "linking <out> failed (<cc>): <reason>" when it exits non-zero;
/// "linking <out>: the C compiler exited 0 but wrote no <out> (<cc>)" when
/// it leaves no file (or an empty regular file); "linking <out> (<cc>, exit
/// status 0): <out> is not a complete shared object: ..." when what it wrote
/// fails checkSharedLibrary (a linker that exits 0 with a short file on a
/// full disk). The link writes a temporary in `outputPath`'s directory that
/// is checked, fsync'ed and renamed to `outputPath`: on any error the
/// temporary is removed, so a failed link never publishes a partial file.
/// An existing regular file `outputPath` is removed before the link, so a
/// file of an earlier build never passes for this build's output. A device such
/// as /dev/null is linked to directly and not checked.
llvm::Error linkSharedLibrary(llvm::StringRef objectPath,
                              llvm::StringRef outputPath, llvm::StringRef cc,
                              bool withCRunnerUtils,
                              llvm::ArrayRef<std::string> extraArgs = {});

} // namespace target
} // namespace pipeopt

#endif // PIPEOPT_TARGET_SHAREDOBJECT_H
