//===- SharedObject.cpp - LLVM-dialect module to a shared library -------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Target/SharedObject.h"
#include "pipeopt/Support/FileOutput.h"
#include "pipeopt/runtime/ManifestKeys.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/InstrTypes.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/SystemLibraries.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ELF.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

using namespace pipeopt;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
target::createHostTargetMachine(const TargetOptions &options) {
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
      return makeError("--mcpu: unknown CPU '" + options.cpu + "' for target " +
                       triple.str() +
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
target::translateAndOptimize(mlir::ModuleOp module, llvm::LLVMContext &context,
                             llvm::TargetMachine &tm, unsigned optLevel,
                             llvm::StringRef name) {
  llvm::Expected<std::unique_ptr<llvm::Module>> llvmModule =
      translateToLLVMIR(module, context, tm, name);
  if (llvmModule)
    optimizeModule(**llvmModule, tm, optLevel);
  return llvmModule;
}

/// Whether `f` calls a function that pipeopt-outline-repeats made.
static bool callsRepeats(const llvm::Function &f) {
  for (const llvm::BasicBlock &block : f)
    for (const llvm::Instruction &inst : block)
      if (const auto *call = llvm::dyn_cast<llvm::CallBase>(&inst))
        if (const llvm::Function *callee = call->getCalledFunction())
          if (callee->getName().starts_with("pipeopt_repeat_"))
            return true;
  return false;
}

unsigned target::markEntryPointsOptNone(llvm::Module &module) {
  unsigned marked = 0;
  for (llvm::Function &f : module) {
    if (f.isDeclaration() ||
        (!f.getName().starts_with("pipeopt_rank_") && !callsRepeats(f)))
      continue;
    f.addFnAttr(llvm::Attribute::NoInline);
    f.addFnAttr(llvm::Attribute::OptimizeNone);
    ++marked;
  }
  return marked;
}

llvm::Expected<std::unique_ptr<llvm::Module>>
target::translateToLLVMIR(mlir::ModuleOp module, llvm::LLVMContext &context,
                          llvm::TargetMachine &tm, llvm::StringRef name) {
  mlir::registerBuiltinDialectTranslation(*module.getContext());
  mlir::registerLLVMDialectTranslation(*module.getContext());
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, context, name);
  if (!llvmModule)
    return makeError("translation to LLVM IR failed");
  llvmModule->setTargetTriple(tm.getTargetTriple());
  llvmModule->setDataLayout(tm.createDataLayout());
  markEntryPointsOptNone(*llvmModule);
  return std::move(llvmModule);
}

void target::optimizeModule(llvm::Module &module, llvm::TargetMachine &tm,
                            unsigned optLevel) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = optLevel > 1;
  tuning.SLPVectorization = optLevel > 1;
  // Passes that cannot change this module are skipped: the generated code
  // calls no function through a pointer, so CalledValuePropagation (which
  // annotates indirect calls with their possible callees) has nothing to
  // find, and its time grew with the entry points' size (GPT-2 16 x 512:
  // 0.18 s, the 8-layer build 0.06 s).
  llvm::PassInstrumentationCallbacks instrumentation;
  instrumentation.registerShouldRunOptionalPassCallback(
      [](llvm::StringRef pass, llvm::Any) {
        return pass != "CalledValuePropagationPass";
      });
  llvm::PassBuilder builder(&tm, tuning, std::nullopt, &instrumentation);
  // Registered before the builder's defaults, so this one is used.
  llvm::TargetLibraryInfoImpl libraryInfo(module.getTargetTriple());
  libraryInfo.addVectorizableFunctionsFromVecLib(llvm::VectorLibrary::LIBMVEC,
                                                 module.getTargetTriple());
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(libraryInfo); });
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = optLevel == 0   ? llvm::OptimizationLevel::O0
                                  : optLevel == 1 ? llvm::OptimizationLevel::O1
                                  : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                  : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager passes =
      optLevel == 0 ? builder.buildO0DefaultPipeline(level)
                    : builder.buildPerModuleDefaultPipeline(level);
  passes.run(module, mam);
}

bool target::needsVectorMath(const llvm::Module &module) {
  for (const llvm::Function &f : module)
    if (f.isDeclaration() && f.getName().starts_with("_ZGV"))
      return true;
  return false;
}

llvm::Error target::emitObjectFile(llvm::Module &module,
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
  // A write that failed (a full disk) leaves a short object: report it with
  // the reason instead of linking it (and instead of raw_fd_ostream's fatal
  // "IO failure on output stream" when it is destroyed with the error set).
  os.close();
  if (os.has_error()) {
    std::error_code writeError = os.error();
    os.clear_error();
    llvm::sys::fs::remove(path);
    return makeError("cannot write " + path + ": " + writeError.message());
  }
  return llvm::Error::success();
}

/// The SHA-256 of `bytes`, 64 lower-case hex digits.
static std::string sha256Hex(llvm::StringRef bytes) {
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(bytes)),
                     /*LowerCase=*/true);
}

/// The contents of the file at `path`; nothing if it cannot be read.
static std::unique_ptr<llvm::MemoryBuffer> readBytes(const llvm::Twine &path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  return file ? std::move(*file) : nullptr;
}

/// The SHA-256 (hex) of the file that holds this code (pipeopt-compile, or
/// the Python extension): a rebuilt compiler makes other objects from the
/// same input. "" if it cannot be read.
static const std::string &compilerIdentity() {
  static const std::string identity = [] {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void *>(&compilerIdentity), &info) ||
        !info.dli_fname)
      return std::string();
    // For the main program dladdr gives argv[0], which may be a bare name
    // found on PATH (or anything the caller passed): its file is
    // /proc/self/exe. A shared library's name is the path it was loaded
    // from.
    std::string path = info.dli_fname;
    if (path == program_invocation_name || path.find('/') == std::string::npos)
      path = "/proc/self/exe";
    std::unique_ptr<llvm::MemoryBuffer> file = readBytes(path);
    return file ? sha256Hex(file->getBuffer()) : std::string();
  }();
  return identity;
}

std::string target::objectCacheKey(llvm::ArrayRef<llvm::StringRef> inputs,
                                   const llvm::TargetMachine &tm,
                                   unsigned optLevel) {
  if (compilerIdentity().empty())
    return "";
  llvm::SHA256 hash;
  auto add = [&](llvm::StringRef text) {
    hash.update(text);
    hash.update(llvm::StringRef("\0", 1));
  };
  // Bump the version when the entries' format changes.
  add("pipeopt-object-cache-v1");
  add(compilerIdentity());
  add(LLVM_VERSION_STRING);
  add(tm.getTargetTriple().str());
  add(tm.getTargetCPU());
  add(tm.getTargetFeatureString());
  add(std::to_string(optLevel));
  for (llvm::StringRef input : inputs)
    add(input);
  return llvm::toHex(hash.final(), /*LowerCase=*/true);
}

std::string target::defaultObjectCacheDir() {
  if (const char *dir = std::getenv("PIPEOPT_CACHE_DIR"); dir && *dir)
    return dir;
  llvm::SmallString<256> path;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    path = xdg;
  else if (!llvm::sys::path::home_directory(path))
    return "";
  else
    llvm::sys::path::append(path, ".cache");
  llvm::sys::path::append(path, "pipeopt", "objects");
  return std::string(path);
}

std::optional<target::CachedObject>
target::lookupCachedObject(llvm::StringRef dir, llvm::StringRef key) {
  llvm::SmallString<256> object(dir), info(dir);
  llvm::sys::path::append(object, key + ".o");
  llvm::sys::path::append(info, key + ".link");
  std::unique_ptr<llvm::MemoryBuffer> text = readBytes(info);
  std::unique_ptr<llvm::MemoryBuffer> bytesRead = readBytes(object);
  if (!text || !bytesRead)
    return std::nullopt;
  // "<object bytes> <c runner utils 0/1> <libmvec 0/1> <object SHA-256>":
  // an entry whose object is not the one written (cut short, damaged) is a
  // miss.
  unsigned long long bytes = 0;
  int crunner = 0, mvec = 0;
  char digest[65] = {0};
  if (std::sscanf(text->getBuffer().str().c_str(), "%llu %d %d %64s", &bytes,
                  &crunner, &mvec, digest) != 4 ||
      bytes != bytesRead->getBufferSize() ||
      sha256Hex(bytesRead->getBuffer()) != llvm::StringRef(digest))
    return std::nullopt;
  return CachedObject{std::string(object), crunner != 0, mvec != 0};
}

void target::storeCachedObject(llvm::StringRef dir, llvm::StringRef key,
                               llvm::StringRef objectPath,
                               bool needsCRunnerUtils, bool needsVectorMath) {
  // Best effort: a cache that cannot be written costs the next build its
  // time, never this one its result. Each file is written to a temporary
  // and renamed, the object before its .link, so a reader sees a complete
  // entry or none.
  if (llvm::sys::fs::create_directories(dir))
    return;
  std::unique_ptr<llvm::MemoryBuffer> object = readBytes(objectPath);
  if (!object)
    return;
  // Writes `bytes` as `<dir>/<name>` through a temporary and a rename.
  auto publish = [&](const llvm::Twine &name, llvm::StringRef bytes) {
    llvm::SmallString<256> final(dir), tmp;
    llvm::sys::path::append(final, name);
    int fd = -1;
    if (llvm::sys::fs::createUniqueFile(final + ".tmp-%%%%%%", fd, tmp))
      return false;
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << bytes;
    os.close();
    bool written = !os.has_error();
    os.clear_error();
    if (!written || llvm::sys::fs::rename(tmp, final)) {
      llvm::sys::fs::remove(tmp);
      return false;
    }
    return true;
  };
  std::string link = llvm::formatv("{0} {1} {2} {3}\n", object->getBufferSize(),
                                   int(needsCRunnerUtils), int(needsVectorMath),
                                   sha256Hex(object->getBuffer()));
  if (publish(key + ".o", object->getBuffer()))
    publish(key + ".link", link);
}

bool target::needsCRunnerUtils(const llvm::Module &module) {
  return module.getFunction("memrefCopy") != nullptr;
}

llvm::Error target::checkSharedLibrary(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError("cannot read " + path + ": " +
                     buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  auto bad = [&](const llvm::Twine &what) {
    return makeError(path + " is not a complete shared object: " + what +
                     " (file size " + llvm::Twine(bytes.size()) +
                     " bytes; a full disk during the link?)");
  };
  if (bytes.size() < llvm::ELF::EI_NIDENT ||
      !bytes.starts_with(llvm::ELF::ElfMagic))
    return bad("no ELF header");
  if (bytes[llvm::ELF::EI_CLASS] != llvm::ELF::ELFCLASS64 ||
      bytes[llvm::ELF::EI_DATA] != llvm::ELF::ELFDATA2LSB)
    return bad("not a 64-bit little-endian ELF file");
  llvm::Expected<llvm::object::ELF64LEFile> elf =
      llvm::object::ELF64LEFile::create(bytes);
  if (!elf)
    return bad(llvm::toString(elf.takeError()));
  if (elf->getHeader().e_type != llvm::ELF::ET_DYN)
    return bad("ELF type " + llvm::Twine(elf->getHeader().e_type) +
               ", not ET_DYN");
  uint64_t size = bytes.size();
  // Every byte range the loader or a reader maps must lie in the file.
  auto outside = [&](uint64_t offset, uint64_t length) {
    return offset > size || length > size - offset;
  };
  llvm::Expected<llvm::object::ELF64LEFile::Elf_Phdr_Range> phdrs =
      elf->program_headers();
  if (!phdrs)
    return bad(llvm::toString(phdrs.takeError()));
  if (phdrs->empty())
    return bad("no program headers");
  for (auto [i, ph] : llvm::enumerate(*phdrs))
    if (outside(ph.p_offset, ph.p_filesz))
      return bad("segment " + llvm::Twine(i) + " needs bytes [" +
                 llvm::Twine(uint64_t(ph.p_offset)) + ", " +
                 llvm::Twine(uint64_t(ph.p_offset) + ph.p_filesz) + ")");
  llvm::Expected<llvm::object::ELF64LEFile::Elf_Shdr_Range> shdrs =
      elf->sections();
  if (!shdrs)
    return bad(llvm::toString(shdrs.takeError()));
  for (auto [i, sh] : llvm::enumerate(*shdrs))
    if (sh.sh_type != llvm::ELF::SHT_NOBITS &&
        outside(sh.sh_offset, sh.sh_size))
      return bad("section " + llvm::Twine(i) + " needs bytes [" +
                 llvm::Twine(uint64_t(sh.sh_offset)) + ", " +
                 llvm::Twine(uint64_t(sh.sh_offset) + sh.sh_size) + ")");
  return llvm::Error::success();
}

llvm::Error target::linkSharedLibrary(llvm::StringRef objectPath,
                                      llvm::StringRef outputPath,
                                      llvm::StringRef cc, bool withCRunnerUtils,
                                      llvm::ArrayRef<std::string> extraArgs) {
  llvm::ErrorOr<std::string> ccPath = llvm::sys::findProgramByName(cc);
  if (!ccPath)
    return makeError("C compiler '" + cc + "' not found (use --cc)");
  // A regular file left from an earlier build must not pass for this link's
  // output: it is removed first. The link then writes a temporary next to
  // the output, which is checked and renamed to it: a failed or short link
  // (a full disk) never leaves a file under the output's name. Anything
  // other than a regular file (-o /dev/null) is linked to directly and not
  // checked. A symbolic link (/dev/stdout when the shell redirects it to a
  // file) is linked through, never removed or renamed over, and checked.
  bool viaLink = llvm::sys::fs::is_symlink_file(outputPath);
  if (!viaLink && llvm::sys::fs::is_regular_file(outputPath))
    if (std::error_code ec = llvm::sys::fs::remove(outputPath))
      return makeError("linking " + outputPath +
                       ": cannot replace it: " + ec.message());
  bool direct = llvm::sys::fs::exists(outputPath);
  std::string linkPath = outputPath.str();
  if (!direct) {
    llvm::SmallString<256> tmp;
    llvm::SmallString<256> model(outputPath);
    model += ".link-%%%%%%";
    if (std::error_code ec = llvm::sys::fs::createUniqueFile(model, tmp))
      return makeError(
          "linking " + outputPath +
          ": cannot create a temporary next to it: " + ec.message());
    linkPath = std::string(tmp);
    // The C compiler must create the file itself: an existing empty one
    // would pass for its output when it writes nothing.
    llvm::sys::fs::remove(linkPath);
    llvm::sys::RemoveFileOnSignal(linkPath);
  }
  auto discard = [&]() {
    if (!direct) {
      llvm::sys::fs::remove(linkPath);
      llvm::sys::DontRemoveFileOnSignal(linkPath);
    }
  };
  llvm::SmallVector<std::string> args = {*ccPath, "-shared", "-o", linkPath,
                                         objectPath.str()};
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
  if (rc != 0) {
    discard();
    return makeError("linking " + outputPath + " failed (" + *ccPath + ")" +
                     (execErr.empty() ? "" : ": " + execErr));
  }
  if (direct && !(viaLink && llvm::sys::fs::is_regular_file(outputPath)))
    return llvm::Error::success();
  if (direct) {
    if (llvm::Error e = checkSharedLibrary(outputPath))
      return makeError("linking " + outputPath + " (" + *ccPath +
                       ", exit status 0): " + llvm::toString(std::move(e)));
    return llvm::Error::success();
  }
  // A compiler that exits 0 without writing the output (a wrong --cc, a
  // wrapper that ignores -o) would leave nothing, or nothing usable, to load.
  llvm::sys::fs::file_status status;
  if (llvm::sys::fs::status(linkPath, status) ||
      !llvm::sys::fs::is_regular_file(status) || status.getSize() == 0) {
    discard();
    return makeError("linking " + outputPath +
                     ": the C compiler exited 0 but wrote no " + outputPath +
                     " (" + *ccPath + ")");
  }
  // A linker that exits 0 with a short file (seen with a full disk).
  if (llvm::Error e = checkSharedLibrary(linkPath)) {
    discard();
    return makeError("linking " + outputPath + " (" + *ccPath +
                     ", exit status 0): " + llvm::toString(std::move(e)));
  }
  // Durable before it is published under the output's name.
  int fd = ::open(linkPath.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    std::string reason = std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    discard();
    return makeError("linking " + outputPath + ": cannot sync " + linkPath +
                     ": " + reason);
  }
  ::close(fd);
  if (std::error_code ec = llvm::sys::fs::rename(linkPath, outputPath)) {
    discard();
    return makeError("linking " + outputPath + ": cannot rename " + linkPath +
                     " to it: " + ec.message());
  }
  llvm::sys::DontRemoveFileOnSignal(linkPath);
  return llvm::Error::success();
}

llvm::Error target::recordModelFile(llvm::StringRef manifestPath,
                                    llvm::StringRef soPath,
                                    llvm::StringRef manifestName) {
  if (manifestName.empty())
    manifestName = manifestPath;
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> so =
      llvm::MemoryBuffer::getFile(soPath, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!so)
    return makeError("cannot read " + soPath + ": " + so.getError().message());
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : (*so)->getBuffer()) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text =
      llvm::MemoryBuffer::getFile(manifestPath, /*IsText=*/true);
  if (!text)
    return makeError("cannot read the manifest " + manifestName + ": " +
                     text.getError().message());
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*text)->getBuffer());
  if (!json)
    return makeError("the manifest " + manifestName +
                     " is not JSON: " + llvm::toString(json.takeError()));
  llvm::json::Object *root = json->getAsObject();
  if (!root)
    return makeError("the manifest " + manifestName + " is not a JSON object");
  (*root)[pipeopt::manifest::kModelFile] = llvm::json::Object{
      {pipeopt::manifest::kBytes, int64_t((*so)->getBufferSize())},
      {pipeopt::manifest::kFnv1a64, llvm::formatv("{0:x-16}", hash).str()}};
  std::string out = llvm::formatv("{0:2}", *json).str() + "\n";
  if (std::error_code ec = pipeopt::writeFileAtomically(manifestPath, out))
    return makeError("cannot write the manifest " + manifestName + ": " +
                     ec.message());
  return llvm::Error::success();
}
