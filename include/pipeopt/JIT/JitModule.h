//===- JitModule.h - JIT-compile tensor functions and call them -*- C++ -*-===//
//
// Part of pipeopt (internal library PipeoptJIT, not installed). A small
// harness for tools and tests that run functions of a model in-process:
// lower func + linalg-on-tensors (+ tensor/arith/math/scf) to LLVM with plain
// loops, JIT-compile it with mlir::ExecutionEngine and call functions with
// host tensors (dense row-major buffers + shapes), getting their results
// back as host tensors. Used by pipeopt-gradcheck.
//
// It does not use the runtime (no convert-pipe-to-runtime, no BLAS kernels):
// every linalg op becomes a loop nest, so it is simple and exact rather than
// fast.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_JIT_JITMODULE_H
#define PIPEOPT_JIT_JITMODULE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class ExecutionEngine;
class OpPassManager;
} // namespace mlir

namespace pipeopt {
namespace jit {

/// Element types a host tensor can hold (the tensor element types the
/// harness can pass): f32, f64 and signless integers i64, i32, i8, i1 (i1 is
/// stored as one byte per element, 0 or 1, as MLIR's memref lowering does).
enum class ElementKind { F32, F64, I64, I32, I8, I1 };

/// Bytes per element of `kind`.
size_t elementSize(ElementKind kind);
/// "f32", "f64", "i64", ...
llvm::StringRef elementName(ElementKind kind);
/// The kind of MLIR element type `type`, or nullopt if it is none of the
/// supported ones.
std::optional<ElementKind> elementKindOf(mlir::Type type);
/// True for F32 and F64.
inline bool isFloat(ElementKind kind) {
  return kind == ElementKind::F32 || kind == ElementKind::F64;
}

/// A dense row-major tensor in host memory (8-byte aligned storage). A rank-0
/// tensor has an empty shape and one element.
class Tensor {
public:
  Tensor() = default;
  /// A zero-filled tensor. Sizes must be non-negative.
  Tensor(ElementKind kind, llvm::ArrayRef<int64_t> shape);

  ElementKind kind() const { return elemKind; }
  llvm::ArrayRef<int64_t> shape() const { return dims; }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  int64_t numElements() const { return count; }
  size_t byteSize() const { return count * elementSize(elemKind); }

  void *data() { return storage.data(); }
  const void *data() const { return storage.data(); }
  /// Typed access; T must match kind() (float, double, int64_t, int32_t,
  /// int8_t; uint8_t or int8_t for i1).
  template <typename T>
  T *as() {
    return static_cast<T *>(data());
  }
  template <typename T>
  const T *as() const {
    return static_cast<const T *>(data());
  }

  /// Element `i` (row-major linear index) converted to double.
  double get(int64_t i) const;
  /// Sets element `i` to `value`, rounded to the element type (integers:
  /// truncated toward zero; i1: value != 0).
  void set(int64_t i, double value);

  /// "f32[4x3]" ("f32[]" for rank 0).
  std::string typeString() const;

private:
  ElementKind elemKind = ElementKind::F32;
  llvm::SmallVector<int64_t> dims;
  int64_t count = 0;
  std::vector<uint64_t> storage;
};

/// Argument and result types of a function the harness can call: ranked
/// tensors of supported element types (dimensions may be dynamic).
struct Signature {
  llvm::SmallVector<mlir::RankedTensorType> inputs;
  llvm::SmallVector<mlir::RankedTensorType> results;
};

/// Options of JitModule::create.
struct JitOptions {
  /// LLVM optimization level of the JIT-compiled code (0-3).
  unsigned optLevel = 2;
  /// Shared libraries whose symbols the JIT code may call, in addition to
  /// the process's own (libc, libm). By default the MLIR C runner utilities
  /// (memrefCopy, used for non-contiguous copies) when they exist next to
  /// libMLIR.
  llvm::SmallVector<std::string> sharedLibs = defaultSharedLibs();
  static llvm::SmallVector<std::string> defaultSharedLibs();
};

/// Adds the CPU lowering of tensor functions to LLVM dialect to `pm`
/// (anchored on builtin.module). The input is func + linalg-on-tensors +
/// tensor / arith / math / scf (TOSA must be lowered before, e.g. with
/// pipeopt::addTosaToLinalgPasses): element-wise ops to linalg, canonicalize,
/// pipeopt-expand-math (math.erf has no LLVM lowering), one-shot
/// bufferization across function boundaries with identity layouts (results
/// become memrefs allocated by the callee), ownership-based buffer
/// deallocation (temporaries are freed, every returned buffer is a fresh
/// allocation the caller owns), linalg to loops, scf to cf,
/// expand-strided-metadata, lower-affine, convert-to-llvm,
/// reconcile-unrealized-casts. Functions to be called from C need
/// `llvm.emit_c_interface` (JitModule::create sets it).
void buildJitLoweringPipeline(mlir::OpPassManager &pm);

/// JIT-compiled functions of one module, callable with host tensors.
class JitModule {
public:
  ~JitModule();

  /// Lowers `module` in place (it ends in the LLVM dialect) and JIT-compiles
  /// it. `entries` name the functions to call later; each must be a
  /// func.func with a body whose arguments and results are ranked tensors of
  /// a supported element type (else an error naming the function and the
  /// argument). Every other function is made private and removed when no
  /// entry uses it. The entries get `llvm.emit_c_interface`, and their
  /// arguments `bufferization.writable = false` (the compiled code never
  /// writes into the caller's input buffers).
  ///
  /// The module's context must have the dialects and interfaces of
  /// pipeopt::registerAllDialects (bufferization models). Lowering errors
  /// are reported as MLIR diagnostics on the context and then as the
  /// returned error.
  static llvm::Expected<std::unique_ptr<JitModule>>
  create(mlir::ModuleOp module, llvm::ArrayRef<std::string> entries,
         const JitOptions &options = {});

  /// The signature recorded for entry `name` (before lowering), or null.
  const Signature *signature(llvm::StringRef name) const;

  /// Calls entry `name` with `args` (one per input, of the input's element
  /// kind and shape; a dynamic dimension takes the tensor's size). Inputs
  /// are passed without copying and are not modified. Returns the results,
  /// copied into new host tensors; the buffers the compiled code allocated
  /// for them are freed. Errors: unknown entry, wrong number of arguments,
  /// an argument of the wrong element type or shape, or a result whose
  /// shape does not match its static type.
  llvm::Expected<llvm::SmallVector<Tensor>>
  call(llvm::StringRef name, llvm::ArrayRef<const Tensor *> args);

private:
  JitModule() = default;
  struct Entry {
    Signature signature;
    void (*packed)(void **) = nullptr;
  };
  std::unique_ptr<mlir::ExecutionEngine> engine;
  llvm::StringMap<Entry> entryPoints;
};

} // namespace jit
} // namespace pipeopt

#endif // PIPEOPT_JIT_JITMODULE_H
