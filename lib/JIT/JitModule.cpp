//===- JitModule.cpp - JIT-compile tensor functions and call them ---------===//
//
// Part of pipeopt. See pipeopt/JIT/JitModule.h.
//
// Calling convention. An entry @f with `llvm.emit_c_interface` gets the C
// wrapper `_mlir_ciface_f(R *results, M0 *a0, M1 *a1, ...)`, where every Mk
// is a strided memref descriptor (StridedMemRefType<T, rank> of
// mlir/ExecutionEngine/CRunnerUtils.h: allocated pointer, aligned pointer,
// offset, sizes[rank], strides[rank]) and R is the descriptor of the only
// result, or a struct of the results' descriptors, in order. Every field is
// 8 bytes, so R is a plain array of 64-bit words; the descriptors are built
// and read here as such arrays for any rank. The ExecutionEngine adds a
// packed wrapper `_mlir__mlir_ciface_f(void **)` that takes the addresses of
// those pointer arguments, which is what call() invokes.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/JIT/JitModule.h"

#include "pipeopt/Backend/Passes.h"
#include "pipeopt/Conversion/Passes.h"

#include "mlir/Conversion/ConvertToLLVM/ToLLVMPass.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>

#ifndef PIPEOPT_LLVM_LIB_DIR
#define PIPEOPT_LLVM_LIB_DIR "/usr/lib/llvm-22/lib"
#endif

using namespace mlir;
using namespace pipeopt::jit;

// The descriptors built below as word arrays have the layout of
// StridedMemRefType: two pointers, the offset, sizes, strides.
static_assert(sizeof(void *) == sizeof(int64_t), "64-bit hosts only");
static_assert(sizeof(StridedMemRefType<float, 0>) == 3 * sizeof(int64_t));
static_assert(sizeof(StridedMemRefType<double, 2>) == 7 * sizeof(int64_t));
static_assert(sizeof(StridedMemRefType<int64_t, 4>) == 11 * sizeof(int64_t));

//===----------------------------------------------------------------------===//
// Element kinds and host tensors
//===----------------------------------------------------------------------===//

size_t pipeopt::jit::elementSize(ElementKind kind) {
  switch (kind) {
  case ElementKind::F64:
  case ElementKind::I64:
    return 8;
  case ElementKind::F32:
  case ElementKind::I32:
    return 4;
  case ElementKind::I8:
  case ElementKind::I1:
    return 1;
  }
  return 0;
}

llvm::StringRef pipeopt::jit::elementName(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return "f32";
  case ElementKind::F64:
    return "f64";
  case ElementKind::I64:
    return "i64";
  case ElementKind::I32:
    return "i32";
  case ElementKind::I8:
    return "i8";
  case ElementKind::I1:
    return "i1";
  }
  return "?";
}

std::optional<ElementKind> pipeopt::jit::elementKindOf(Type type) {
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF64())
    return ElementKind::F64;
  if (type.isSignlessInteger(64))
    return ElementKind::I64;
  if (type.isSignlessInteger(32))
    return ElementKind::I32;
  if (type.isSignlessInteger(8))
    return ElementKind::I8;
  if (type.isSignlessInteger(1))
    return ElementKind::I1;
  return std::nullopt;
}

Tensor::Tensor(ElementKind kind, llvm::ArrayRef<int64_t> shape)
    : elemKind(kind), dims(shape.begin(), shape.end()), count(1) {
  for (int64_t d : shape)
    count *= d;
  storage.assign((byteSize() + 7) / 8, 0);
}

double Tensor::get(int64_t i) const {
  switch (elemKind) {
  case ElementKind::F32:
    return as<float>()[i];
  case ElementKind::F64:
    return as<double>()[i];
  case ElementKind::I64:
    return static_cast<double>(as<int64_t>()[i]);
  case ElementKind::I32:
    return as<int32_t>()[i];
  case ElementKind::I8:
  case ElementKind::I1:
    return as<int8_t>()[i];
  }
  return 0;
}

void Tensor::set(int64_t i, double value) {
  switch (elemKind) {
  case ElementKind::F32:
    as<float>()[i] = static_cast<float>(value);
    return;
  case ElementKind::F64:
    as<double>()[i] = value;
    return;
  case ElementKind::I64:
    as<int64_t>()[i] = static_cast<int64_t>(value);
    return;
  case ElementKind::I32:
    as<int32_t>()[i] = static_cast<int32_t>(value);
    return;
  case ElementKind::I8:
    as<int8_t>()[i] = static_cast<int8_t>(value);
    return;
  case ElementKind::I1:
    as<int8_t>()[i] = value != 0 ? 1 : 0;
    return;
  }
}

std::string Tensor::typeString() const {
  std::string s = elementName(elemKind).str() + "[";
  for (auto [i, d] : llvm::enumerate(dims))
    s += (i ? "x" : "") + std::to_string(d);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Lowering
//===----------------------------------------------------------------------===//

void pipeopt::jit::buildJitLoweringPipeline(OpPassManager &pm) {
  // Element-wise arith/math on tensors -> linalg.generic, which bufferizes.
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  pm.addPass(createCanonicalizerPass());

  // math.erf / erfc have no LLVM lowering (f32: polynomial; f64: libm).
  pm.addPass(createExpandMathPass());

  // Tensors -> memrefs across function boundaries, identity layouts; loops
  // may yield new buffers (scf.for with loop-carried tensors).
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));

  // Temporaries are freed (a gradient check calls the loss thousands of
  // times), and every returned memref is owned by the caller: a returned
  // argument or constant is cloned.
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());

  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

llvm::SmallVector<std::string> JitOptions::defaultSharedLibs() {
  llvm::SmallString<256> path(PIPEOPT_LLVM_LIB_DIR);
  llvm::sys::path::append(path, "libmlir_c_runner_utils.so");
  if (llvm::sys::fs::exists(path))
    return {std::string(path)};
  return {};
}

//===----------------------------------------------------------------------===//
// JitModule
//===----------------------------------------------------------------------===//

JitModule::~JitModule() = default;

static llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static std::string typeString(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

/// Records the signature of entry `fn`; an unsupported argument or result
/// type is an error naming it.
static llvm::Expected<Signature> entrySignature(func::FuncOp fn) {
  Signature sig;
  auto check = [&](Type t, StringRef what,
                   size_t index) -> llvm::Expected<RankedTensorType> {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor || !elementKindOf(tensor.getElementType()))
      return makeError(llvm::formatv(
          "@{0}: {1} {2} has type {3}; the JIT harness passes ranked tensors "
          "of f32, f64, i64, i32, i8 or i1 only",
          fn.getSymName(), what, index, typeString(t)));
    return tensor;
  };
  for (auto [i, t] : llvm::enumerate(fn.getArgumentTypes())) {
    auto tensor = check(t, "argument", i);
    if (!tensor)
      return tensor.takeError();
    sig.inputs.push_back(*tensor);
  }
  for (auto [i, t] : llvm::enumerate(fn.getResultTypes())) {
    auto tensor = check(t, "result", i);
    if (!tensor)
      return tensor.takeError();
    sig.results.push_back(*tensor);
  }
  return sig;
}

llvm::Expected<std::unique_ptr<JitModule>>
JitModule::create(ModuleOp module, llvm::ArrayRef<std::string> entries,
                  const JitOptions &options) {
  static std::once_flag targetInit;
  std::call_once(targetInit, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  MLIRContext *context = module.getContext();
  registerBuiltinDialectTranslation(*context);
  registerLLVMDialectTranslation(*context);

  std::unique_ptr<JitModule> jit(new JitModule);
  llvm::DenseSet<Operation *> entryOps;
  for (const std::string &name : entries) {
    auto fn = module.lookupSymbol<func::FuncOp>(name);
    if (!fn)
      return makeError("no function @" + name + " in the module");
    if (fn.isExternal())
      return makeError("@" + name + " has no body");
    auto sig = entrySignature(fn);
    if (!sig)
      return sig.takeError();
    jit->entryPoints[name].signature = std::move(*sig);
    entryOps.insert(fn);
  }
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!entryOps.contains(fn)) {
      fn.setPrivate();
      continue;
    }
    fn.setPublic();
    fn->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                UnitAttr::get(context));
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      fn.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                    BoolAttr::get(context, false));
  }

  PassManager pm(context, ModuleOp::getOperationName());
  pm.addPass(createSymbolDCEPass());
  buildJitLoweringPipeline(pm);
  if (failed(pm.run(module)))
    return makeError("lowering to the LLVM dialect failed (see the errors "
                     "above)");

  ExecutionEngineOptions engineOptions;
  auto transformer = makeOptimizingTransformer(std::min(options.optLevel, 3u),
                                               /*sizeLevel=*/0,
                                               /*targetMachine=*/nullptr);
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel =
      options.optLevel == 0   ? llvm::CodeGenOptLevel::None
      : options.optLevel >= 3 ? llvm::CodeGenOptLevel::Aggressive
                              : llvm::CodeGenOptLevel::Default;
  llvm::SmallVector<StringRef> libs(options.sharedLibs.begin(),
                                    options.sharedLibs.end());
  engineOptions.sharedLibPaths = libs;
  // No debugger / profiler registration of the JIT code.
  engineOptions.enableGDBNotificationListener = false;
  engineOptions.enablePerfNotificationListener = false;
  auto engine = ExecutionEngine::create(module, engineOptions);
  if (!engine)
    return engine.takeError();
  jit->engine = std::move(*engine);
  jit->engine->initialize();

  for (auto &entry : jit->entryPoints) {
    auto packed =
        jit->engine->lookupPacked(("_mlir_ciface_" + entry.first()).str());
    if (!packed)
      return packed.takeError();
    entry.second.packed = *packed;
  }
  return jit;
}

const Signature *JitModule::signature(llvm::StringRef name) const {
  auto it = entryPoints.find(name);
  return it == entryPoints.end() ? nullptr : &it->second.signature;
}

/// Copies a strided buffer (`sizes`, `strides` in elements) into the dense
/// row-major `out`.
static void copyStrided(const char *src, llvm::ArrayRef<int64_t> sizes,
                        llvm::ArrayRef<int64_t> strides, size_t elem,
                        char *out) {
  int64_t rank = sizes.size();
  int64_t total = 1;
  for (int64_t s : sizes)
    total *= s;
  if (total == 0)
    return;
  bool dense = true;
  for (int64_t d = rank - 1, expected = 1; d >= 0; --d) {
    if (sizes[d] != 1 && strides[d] != expected)
      dense = false;
    expected *= sizes[d];
  }
  if (dense) {
    std::memcpy(out, src, total * elem);
    return;
  }
  llvm::SmallVector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d)
      offset += index[d] * strides[d];
    std::memcpy(out + n * elem, src + offset * elem, elem);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < sizes[d])
        break;
      index[d] = 0;
    }
  }
}

llvm::Expected<llvm::SmallVector<Tensor>>
JitModule::call(llvm::StringRef name, llvm::ArrayRef<const Tensor *> args) {
  auto it = entryPoints.find(name);
  if (it == entryPoints.end())
    return makeError("@" + name + " is not an entry of this JIT module");
  const Signature &sig = it->second.signature;
  if (args.size() != sig.inputs.size())
    return makeError(llvm::formatv(
        "@{0} takes {1} argument{2}, got {3}", name, sig.inputs.size(),
        sig.inputs.size() == 1 ? "" : "s", args.size()));

  // Argument descriptors.
  llvm::SmallVector<std::vector<int64_t>> descriptors(args.size());
  llvm::SmallVector<void *> descriptorPtrs(args.size());
  llvm::DenseSet<const void *> inputBuffers;
  for (auto [i, arg] : llvm::enumerate(args)) {
    RankedTensorType type = sig.inputs[i];
    ElementKind kind = *elementKindOf(type.getElementType());
    bool shapeOk = arg->kind() == kind && arg->rank() == type.getRank();
    for (int64_t d = 0; shapeOk && d < type.getRank(); ++d)
      shapeOk = type.isDynamicDim(d) || type.getDimSize(d) == arg->shape()[d];
    if (!shapeOk)
      return makeError(llvm::formatv("@{0} argument {1}: expected {2}, got {3}",
                                     name, i, typeString(type),
                                     arg->typeString()));
    std::vector<int64_t> &w = descriptors[i];
    auto ptr = reinterpret_cast<int64_t>(arg->data());
    w = {ptr, ptr, 0};
    w.insert(w.end(), arg->shape().begin(), arg->shape().end());
    std::vector<int64_t> strides(arg->rank(), 1);
    for (int64_t d = arg->rank() - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * arg->shape()[d + 1];
    w.insert(w.end(), strides.begin(), strides.end());
    descriptorPtrs[i] = w.data();
    inputBuffers.insert(arg->data());
  }

  // Result descriptors: one word array, filled by the callee.
  size_t resultWords = 0;
  for (RankedTensorType t : sig.results)
    resultWords += 3 + 2 * t.getRank();
  std::vector<int64_t> results(resultWords, 0);
  void *resultPtr = results.data();

  llvm::SmallVector<void *> packedArgs;
  if (!sig.results.empty())
    packedArgs.push_back(&resultPtr);
  for (void *&p : descriptorPtrs)
    packedArgs.push_back(&p);
  it->second.packed(packedArgs.data());

  // Copy the results out, then free the buffers the callee allocated (each
  // once: a value returned twice is one buffer).
  llvm::SmallVector<Tensor> out;
  llvm::DenseSet<void *> toFree;
  std::string error;
  size_t pos = 0;
  for (auto [j, type] : llvm::enumerate(sig.results)) {
    int64_t rank = type.getRank();
    auto *allocated = reinterpret_cast<void *>(results[pos]);
    auto *aligned = reinterpret_cast<char *>(results[pos + 1]);
    int64_t offset = results[pos + 2];
    llvm::ArrayRef<int64_t> sizes(&results[pos + 3], rank);
    llvm::ArrayRef<int64_t> strides(&results[pos + 3 + rank], rank);
    pos += 3 + 2 * rank;
    if (allocated && !inputBuffers.contains(allocated))
      toFree.insert(allocated);
    for (int64_t d = 0; d < rank; ++d)
      if (!type.isDynamicDim(d) && type.getDimSize(d) != sizes[d] &&
          error.empty())
        error = llvm::formatv("@{0} result {1}: expected {2}, got size {3} "
                              "in dimension {4}",
                              name, j, typeString(type), sizes[d], d);
    ElementKind kind = *elementKindOf(type.getElementType());
    Tensor t(kind, sizes);
    size_t elem = elementSize(kind);
    if (error.empty())
      copyStrided(aligned + offset * elem, sizes, strides, elem,
                  static_cast<char *>(t.data()));
    out.push_back(std::move(t));
  }
  for (void *p : toFree)
    std::free(p);
  if (!error.empty())
    return makeError(error);
  return out;
}
