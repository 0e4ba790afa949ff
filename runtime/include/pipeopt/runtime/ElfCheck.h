//===- ElfCheck.h - Sanity check of a model .so before dlopen ---*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// dlopen maps a shared object's segments without checking that the file is
// as long as its program headers say. A truncated .so (an interrupted copy)
// then loads "successfully" and the process dies with SIGBUS at the first
// access to a page past the end of the file. pipeopt-run therefore checks
// the ELF structure against the file size first and reports a clear error
// instead.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_ELFCHECK_H
#define PIPEOPT_RUNTIME_ELFCHECK_H

#include <cstdint>
#include <string>
#include <vector>

namespace pipeopt {
namespace rt {

/// Checks that `bytes`, the contents of the file `path`, are a complete
/// 64-bit little-endian ELF file: the ELF header, the program header table,
/// the section header table, every segment's file bytes
/// [p_offset, p_offset + p_filesz) and every section's file bytes (all but
/// SHT_NOBITS) lie within the file. Throws RuntimeError naming `path` and
/// the first piece that does not, e.g.
///   "m.so is truncated or corrupt: segment 2 (PT_LOAD) needs bytes
///    [4096, 9000) but the file has 8000 bytes (an interrupted copy?)".
/// A file that is not ELF, or an ELF file of another class or byte order,
/// is rejected with a message that says so. Only the structure is checked,
/// not the contents (symbols, relocations): this is what dlopen needs to
/// not map pages past the end of the file.
void checkElfImage(const std::vector<uint8_t> &bytes, const std::string &path);

/// Reads the file at `path` and runs checkElfImage on it. Throws
/// RuntimeError naming `path` if it cannot be read or fails the check.
void checkElfFile(const std::string &path);

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_ELFCHECK_H
