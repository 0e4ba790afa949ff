//===- RuntimeABI.cpp - Declarations of the runtime's C ABI in MLIR -------===//
//
// Part of pipeopt. See RuntimeABI.h.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Conversion/RuntimeABI.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace {

/// Which element types a function of RuntimeFunctions.def is instantiated
/// for.
enum class Instances { Untyped, AllDTypes, FloatDTypes };

/// One function of the runtime ABI as listed in RuntimeFunctions.def.
struct RuntimeFnSpec {
  const char *name;    ///< base name, e.g. "pipeopt_rt_send"
  Instances instances; ///< typed functions are named <name>_<dtype>
  const char *ret;     ///< kind of the result ("I32", "View")
  const char *params;  ///< parenthesised kind list, e.g. "(I64, I64, MemRef)"
};

const RuntimeFnSpec kRuntimeFns[] = {
#define PIPEOPT_RT_TYPED_FN(Name, Ret, Params)                                 \
  {#Name, Instances::AllDTypes, #Ret, #Params},
#define PIPEOPT_RT_FLOAT_FN(Name, Ret, Params)                                 \
  {#Name, Instances::FloatDTypes, #Ret, #Params},
#define PIPEOPT_RT_FN(Name, Ret, Params)                                       \
  {#Name, Instances::Untyped, #Ret, #Params},
// Returns memref<*xT>, a view of the runtime's memory.
#define PIPEOPT_RT_VIEW_FN(Name, Params)                                       \
  {#Name, Instances::AllDTypes, "View", #Params},
// Defined by libpipeopt_rt_cuda.so; same element types as the CPU kernels.
#define PIPEOPT_RT_GPU_FLOAT_FN(Name, Ret, Params)                             \
  {#Name, Instances::FloatDTypes, #Ret, #Params},
#include "pipeopt/runtime/RuntimeFunctions.def"
};

/// Element type suffixes the runtime instantiates its typed functions for.
const char *const kRuntimeDTypes[] = {
#define PIPEOPT_RT_DTYPE(Suffix, CType, DTypeEnum, Bytes) #Suffix,
#include "pipeopt/runtime/RuntimeFunctions.def"
};

/// Element type suffixes of the library kernels.
const char *const kKernelDTypes[] = {
#define PIPEOPT_RT_KERNEL_DTYPE_(Suffix, CType, Ctx) #Suffix,
    PIPEOPT_RT_FLOAT_DTYPE_LIST(PIPEOPT_RT_KERNEL_DTYPE_, _)
#undef PIPEOPT_RT_KERNEL_DTYPE_
};

/// The suffix of `type` if it is one of `list`.
template <size_t N>
std::optional<std::string> suffixIn(Type type, const char *const (&list)[N]) {
  std::string name;
  if (type.isF32())
    name = "f32";
  else if (type.isF64())
    name = "f64";
  else if (type.isF16())
    name = "f16";
  else if (type.isBF16())
    name = "bf16";
  else if (auto intType = dyn_cast<IntegerType>(type);
           intType && intType.isSignless())
    name = "i" + std::to_string(intType.getWidth());
  else
    return std::nullopt;
  for (const char *s : list)
    if (name == s)
      return name;
  return std::nullopt;
}

/// Maps a RuntimeFunctions.def parameter or result kind to an MLIR type;
/// `element` is the element type of MemRef parameters and View results.
Type kindToType(StringRef kind, Type element, MLIRContext *ctx) {
  if (kind == "I32")
    return IntegerType::get(ctx, 32);
  if (kind == "I64")
    return IntegerType::get(ctx, 64);
  if ((kind == "MemRef" || kind == "View") && element)
    return UnrankedMemRefType::get(element, /*memorySpace=*/0);
  if (kind == "Dims")
    return UnrankedMemRefType::get(IntegerType::get(ctx, 64),
                                   /*memorySpace=*/0);
  return {};
}

} // namespace

std::optional<std::string> pipeopt::runtimeDTypeName(Type type) {
  return suffixIn(type, kRuntimeDTypes);
}

std::string pipeopt::runtimeDTypeList() {
  std::string list;
  for (const char *s : kRuntimeDTypes)
    list += (list.empty() ? "" : ", ") + std::string(s);
  return list;
}

bool pipeopt::runtimeHasKernelsFor(Type type) {
  return suffixIn(type, kKernelDTypes).has_value();
}

FailureOr<func::FuncOp> pipeopt::RuntimeDecls::get(Location loc, StringRef base,
                                                   Type element) {
  const RuntimeFnSpec *spec = nullptr;
  for (const RuntimeFnSpec &s : kRuntimeFns)
    if (base == s.name)
      spec = &s;
  if (!spec)
    return emitError(loc) << "internal error: '" << base
                          << "' is not in RuntimeFunctions.def";
  std::string name = base.str();
  if (spec->instances != Instances::Untyped) {
    std::optional<std::string> dtype = spec->instances == Instances::AllDTypes
                                           ? suffixIn(element, kRuntimeDTypes)
                                           : suffixIn(element, kKernelDTypes);
    if (!dtype)
      return emitError(loc) << "element type " << element
                            << " is not supported by the runtime's " << base;
    name += "_" + *dtype;
  }
  MLIRContext *ctx = module.getContext();
  SmallVector<Type> inputs;
  StringRef params = StringRef(spec->params).trim().drop_front().drop_back();
  SmallVector<StringRef> kinds;
  params.split(kinds, ',', -1, /*KeepEmpty=*/false);
  for (StringRef kind : kinds) {
    Type t = kindToType(kind.trim(), element, ctx);
    if (!t)
      return emitError(loc) << "internal error: unknown parameter kind '"
                            << kind.trim() << "' of " << name;
    inputs.push_back(t);
  }
  Type result = kindToType(spec->ret, element, ctx);
  if (!result)
    return emitError(loc) << "internal error: unknown result kind of " << name;
  auto type = FunctionType::get(ctx, inputs, result);
  if (auto existing = symbols.lookup<func::FuncOp>(name)) {
    if (existing.getFunctionType() != type)
      return emitError(loc)
             << "runtime function @" << name << " is already declared as "
             << existing.getFunctionType() << ", expected " << type;
    return existing;
  }
  if (symbols.lookup(name))
    return emitError(loc) << "symbol @" << name
                          << " is reserved for the runtime ABI";
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(b, module.getLoc(), name, type);
  fn.setPrivate();
  fn->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), UnitAttr::get(ctx));
  symbols.insert(fn);
  return fn;
}

LogicalResult pipeopt::checkRuntimeTarget(ModuleOp module, StringRef target) {
  if (target == "cpu" || target == "cuda")
    return success();
  return emitError(module.getLoc())
         << "unknown target '" << target << "' (expected cpu or cuda)";
}
