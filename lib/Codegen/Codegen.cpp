//===- Codegen.cpp - LLVM-dialect module to a shared library ---------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Codegen/Codegen.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <optional>

using namespace pipeopt;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
codegen::createHostTargetMachine(const TargetOptions &options) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string err;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target)
    return makeError("no LLVM target for " + triple.str() + ": " + err);
  if (options.cpu != "native") {
    // A subtarget for the default CPU, only to ask it about the CPU name
    // (creating one for an unknown CPU would print LLVM's warning).
    std::unique_ptr<llvm::MCSubtargetInfo> sti(
        target->createMCSubtargetInfo(triple, "", ""));
    if (options.cpu.empty() || !sti || !sti->isCPUStringValid(options.cpu))
      return makeError("--mcpu: unknown CPU '" + options.cpu +
                       "' for target " + triple.str() +
                       " (use 'native', or a name listed by `llc-" +
                       std::to_string(LLVM_VERSION_MAJOR) + " -mcpu=help`)");
  }
  std::string cpuName = options.cpu == "native"
                            ? std::string(llvm::sys::getHostCPUName())
                            : options.cpu;
  std::string features;
  if (options.cpu == "native") {
    llvm::StringMap<bool> hostFeatures = llvm::sys::getHostCPUFeatures();
    for (auto &f : hostFeatures)
      features += (f.second ? "+" : "-") + f.first().str() + ",";
  }
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpuName, features, llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt,
      options.optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
      : options.optLevel == 0 ? llvm::CodeGenOptLevel::None
                              : llvm::CodeGenOptLevel::Default));
  if (!tm)
    return makeError("cannot create a target machine for " + triple.str());
  return std::move(tm);
}

llvm::Expected<std::unique_ptr<llvm::Module>>
codegen::translateAndOptimize(mlir::ModuleOp module,
                              llvm::LLVMContext &context,
                              llvm::TargetMachine &tm, unsigned optLevel,
                              llvm::StringRef name) {
  mlir::registerBuiltinDialectTranslation(*module.getContext());
  mlir::registerLLVMDialectTranslation(*module.getContext());
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, context, name);
  if (!llvmModule)
    return makeError("translation to LLVM IR failed");
  llvmModule->setTargetTriple(tm.getTargetTriple());
  llvmModule->setDataLayout(tm.createDataLayout());
  if (llvm::Error e =
          mlir::makeOptimizingTransformer(optLevel, 0, &tm)(llvmModule.get()))
    return makeError("LLVM optimization failed: " +
                     llvm::toString(std::move(e)));
  return std::move(llvmModule);
}

llvm::Error codegen::emitObjectFile(llvm::Module &module,
                                    llvm::TargetMachine &tm,
                                    llvm::StringRef path) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return makeError("cannot write " + path + ": " + ec.message());
  llvm::legacy::PassManager passes;
  if (tm.addPassesToEmitFile(passes, os, nullptr,
                             llvm::CodeGenFileType::ObjectFile)) {
    os.close();
    llvm::sys::fs::remove(path);
    return makeError("the target cannot emit object files");
  }
  passes.run(module);
  return llvm::Error::success();
}

bool codegen::needsCRunnerUtils(const llvm::Module &module) {
  return module.getFunction("memrefCopy") != nullptr;
}

llvm::Error codegen::linkSharedLibrary(llvm::StringRef objectPath,
                                       llvm::StringRef outputPath,
                                       llvm::StringRef cc,
                                       bool withCRunnerUtils,
                                       llvm::ArrayRef<std::string> extraArgs) {
  llvm::ErrorOr<std::string> ccPath = llvm::sys::findProgramByName(cc);
  if (!ccPath)
    return makeError("C compiler '" + cc + "' not found (use --cc)");
  // A regular file left from an earlier build must not pass for this link's
  // output (checked below); anything else (-o /dev/null) is left alone.
  if (llvm::sys::fs::is_regular_file(outputPath))
    if (std::error_code ec = llvm::sys::fs::remove(outputPath))
      return makeError("linking " + outputPath + ": cannot replace it: " +
                       ec.message());
  llvm::SmallVector<std::string> args = {*ccPath, "-shared", "-o",
                                         outputPath.str(), objectPath.str()};
  if (withCRunnerUtils) {
    args.push_back("-L" PIPEOPT_LLVM_LIB_DIR);
    args.push_back("-lmlir_c_runner_utils");
    args.push_back("-Wl,-rpath," PIPEOPT_LLVM_LIB_DIR);
  }
  args.push_back("-lm");
  args.append(extraArgs.begin(), extraArgs.end());
  llvm::SmallVector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::string execErr;
  int rc = llvm::sys::ExecuteAndWait(*ccPath, argRefs, std::nullopt, {}, 0, 0,
                                     &execErr);
  if (rc != 0)
    return makeError("linking " + outputPath + " failed (" + *ccPath + ")" +
                     (execErr.empty() ? "" : ": " + execErr));
  // A compiler that exits 0 without writing the output (a wrong --cc, a
  // wrapper that ignores -o) would leave nothing, or nothing usable, to load.
  llvm::sys::fs::file_status status;
  if (llvm::sys::fs::status(outputPath, status) ||
      !llvm::sys::fs::exists(status) ||
      (llvm::sys::fs::is_regular_file(status) && status.getSize() == 0)) {
    if (llvm::sys::fs::is_regular_file(status))
      llvm::sys::fs::remove(outputPath);
    return makeError("linking " + outputPath +
                     ": the C compiler exited 0 but wrote no " + outputPath +
                     " (" + *ccPath + ")");
  }
  return llvm::Error::success();
}
