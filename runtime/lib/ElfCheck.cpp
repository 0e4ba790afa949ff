//===- ElfCheck.cpp - Sanity check of a model .so before dlopen -*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// Reads only the ELF header and the program and section header tables (with
// pread, so a large model .so is not read whole) and compares every range
// they describe with the file size.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/ElfCheck.h"
#include "pipeopt/runtime/Types.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <sstream>

namespace pipeopt {
namespace rt {

namespace {

/// Reads `size` bytes at `offset` into `dst`; the range is known to lie
/// within the file. Returns false on an I/O error.
using ReadFn = std::function<bool(uint64_t offset, size_t size, void *dst)>;

/// The e_machine of this build's target: a model for another
/// architecture is caught here, not by dlopen, which reports it as
/// "cannot open shared object file: No such file or directory".
#if defined(__x86_64__)
constexpr int kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr int kHostMachine = EM_AARCH64;
#else
constexpr int kHostMachine = -1; // unknown host: no check
#endif

std::string machineName(uint32_t machine) {
  switch (machine) {
  case EM_X86_64:
    return "x86-64 (EM_X86_64)";
  case EM_AARCH64:
    return "AArch64 (EM_AARCH64)";
  case EM_386:
    return "x86 (EM_386)";
  case EM_ARM:
    return "32-bit ARM (EM_ARM)";
  case EM_PPC64:
    return "PowerPC 64 (EM_PPC64)";
  case EM_S390:
    return "IBM S/390 (EM_S390)";
#ifdef EM_RISCV
  case EM_RISCV:
    return "RISC-V (EM_RISCV)";
#endif
  default:
    return "machine " + std::to_string(machine);
  }
}

const char *segmentTypeName(uint32_t type) {
  switch (type) {
  case PT_LOAD:
    return "PT_LOAD";
  case PT_DYNAMIC:
    return "PT_DYNAMIC";
  case PT_INTERP:
    return "PT_INTERP";
  case PT_NOTE:
    return "PT_NOTE";
  case PT_PHDR:
    return "PT_PHDR";
  case PT_TLS:
    return "PT_TLS";
  case PT_GNU_EH_FRAME:
    return "PT_GNU_EH_FRAME";
  case PT_GNU_RELRO:
    return "PT_GNU_RELRO";
  default:
    return nullptr;
  }
}

class ElfChecker {
public:
  ElfChecker(std::string path, uint64_t fileSize, ReadFn read)
      : path(std::move(path)), fileSize(fileSize), read(std::move(read)) {}

  void run() {
    unsigned char ident[EI_NIDENT] = {0};
    size_t have = size_t(std::min<uint64_t>(fileSize, EI_NIDENT));
    readOrFail(0, have, ident, "the ELF identification");
    if (std::memcmp(ident, ELFMAG, std::min<size_t>(have, SELFMAG)) != 0)
      throw RuntimeError(path + " is not an ELF shared object (it does not "
                                "start with the ELF magic bytes 7f 45 4c 46)");
    if (fileSize < EI_NIDENT)
      truncated("the ELF identification", 0, EI_NIDENT);
    if (ident[EI_CLASS] != ELFCLASS64)
      throw RuntimeError(
          path + " is a " +
          (ident[EI_CLASS] == ELFCLASS32
               ? std::string("32-bit")
               : "class " + std::to_string(ident[EI_CLASS])) +
          " ELF file; pipeopt-run loads 64-bit (ELFCLASS64) models only");
    if (ident[EI_DATA] != ELFDATA2LSB)
      throw RuntimeError(
          path + " is a " +
          (ident[EI_DATA] == ELFDATA2MSB
               ? std::string("big-endian")
               : "byte order " + std::to_string(ident[EI_DATA])) +
          " ELF file; pipeopt-run loads little-endian models only");
    Elf64_Ehdr eh;
    need("the ELF header", 0, sizeof(eh));
    readOrFail(0, sizeof(eh), &eh, "the ELF header");
    if (kHostMachine >= 0 && eh.e_machine != uint32_t(kHostMachine))
      throw RuntimeError(path + " is built for " + machineName(eh.e_machine) +
                         ", but this pipeopt-run runs on " +
                         machineName(uint32_t(kHostMachine)) +
                         " (was the model compiled for another target?)");

    // With more than 0xfff0 sections or 0xffff program headers the real
    // counts live in section header 0.
    uint64_t shnum = eh.e_shoff != 0 ? eh.e_shnum : 0, phnum = eh.e_phnum;
    if (eh.e_shoff != 0 && eh.e_shentsize != sizeof(Elf64_Shdr))
      corrupt("the section header entry size is " +
              std::to_string(eh.e_shentsize) + " bytes instead of " +
              std::to_string(sizeof(Elf64_Shdr)));
    if (eh.e_shoff != 0 && (shnum == 0 || phnum == PN_XNUM)) {
      Elf64_Shdr sh0;
      need("section header 0", eh.e_shoff, sizeof(sh0));
      readOrFail(eh.e_shoff, sizeof(sh0), &sh0, "section header 0");
      if (shnum == 0)
        shnum = sh0.sh_size;
      if (phnum == PN_XNUM)
        phnum = sh0.sh_info;
    }
    if (phnum != 0 && eh.e_phentsize != sizeof(Elf64_Phdr))
      corrupt("the program header entry size is " +
              std::to_string(eh.e_phentsize) + " bytes instead of " +
              std::to_string(sizeof(Elf64_Phdr)));

    // What dlopen maps first, so that a cut names the segment it cuts
    // rather than the section header table at the end of the file.
    needTable("the program header table", eh.e_phoff, phnum,
              sizeof(Elf64_Phdr));
    for (uint64_t i = 0; i < phnum; ++i) {
      Elf64_Phdr ph;
      readOrFail(eh.e_phoff + i * sizeof(ph), sizeof(ph), &ph,
                 "the program header table");
      if (ph.p_type == PT_NULL || ph.p_filesz == 0)
        continue;
      std::string what = "segment " + std::to_string(i);
      if (const char *n = segmentTypeName(ph.p_type))
        what += std::string(" (") + n + ")";
      need(what, ph.p_offset, ph.p_filesz);
    }
    needTable("the section header table", eh.e_shoff, shnum,
              sizeof(Elf64_Shdr));
    for (uint64_t i = 1; i < shnum; ++i) {
      Elf64_Shdr sh;
      readOrFail(eh.e_shoff + i * sizeof(sh), sizeof(sh), &sh,
                 "the section header table");
      if (sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL)
        continue;
      need("section " + std::to_string(i), sh.sh_offset, sh.sh_size);
    }
  }

private:
  std::string path;
  uint64_t fileSize;
  ReadFn read;

  [[noreturn]] void corrupt(const std::string &why) const {
    throw RuntimeError(path + " is truncated or corrupt: " + why);
  }

  [[noreturn]] void truncated(const std::string &what, uint64_t offset,
                              uint64_t size) const {
    std::ostringstream os;
    os << what << " needs bytes [" << offset << ", ";
    if (size > UINT64_MAX - offset)
      os << offset << " + " << size;
    else
      os << offset + size;
    os << ") but the file has " << fileSize << " bytes (an interrupted copy?)";
    corrupt(os.str());
  }

  /// [offset, offset + size) must lie within the file.
  void need(const std::string &what, uint64_t offset, uint64_t size) const {
    if (size > fileSize || offset > fileSize - size)
      truncated(what, offset, size);
  }

  void needTable(const std::string &what, uint64_t offset, uint64_t count,
                 uint64_t entrySize) const {
    if (count == 0)
      return;
    if (count > UINT64_MAX / entrySize)
      corrupt(what + " has " + std::to_string(count) +
              " entries, more than "
              "any file can hold");
    need(what, offset, count * entrySize);
  }

  void readOrFail(uint64_t offset, size_t size, void *dst,
                  const std::string &what) const {
    if (!read(offset, size, dst))
      throw RuntimeError(path + ": cannot read " + what + ": " +
                         std::strerror(errno ? errno : EIO));
  }
};

} // namespace

void checkElfImage(const std::vector<uint8_t> &bytes, const std::string &path) {
  ElfChecker(path, bytes.size(), [&](uint64_t offset, size_t size, void *dst) {
    if (size)
      std::memcpy(dst, bytes.data() + offset, size);
    return true;
  }).run();
}

void checkElfFile(const std::string &path) {
  uint64_t size = 0;
  int fd = openRegularFile(path, "model .so", &size);
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  ElfChecker(path, size, [fd](uint64_t offset, size_t size, void *dst) {
    auto *out = static_cast<uint8_t *>(dst);
    while (size > 0) {
      ssize_t n = ::pread(fd, out, size, off_t(offset));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        if (n == 0)
          errno = EIO; // the file shrank under us
        return false;
      }
      out += n;
      offset += uint64_t(n);
      size -= size_t(n);
    }
    return true;
  }).run();
}

} // namespace rt
} // namespace pipeopt
