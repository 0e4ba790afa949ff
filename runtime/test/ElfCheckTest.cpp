//===- ElfCheckTest.cpp - checkElfImage / checkElfFile tests ----*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// Truncates a real shared object (the fake model) at many sizes, including
// just inside and just outside every segment, and checks that each cut is
// reported with the piece it cuts, while the complete file passes.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/ElfCheck.h"
#include "pipeopt/runtime/Types.h"

#include <gtest/gtest.h>

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <set>
#include <string>
#include <thread>

using namespace pipeopt::rt;

namespace {

std::vector<uint8_t> fakeModel() {
  return readFileBytes(FAKE_MODEL_SO, "shared object");
}

/// The message of the RuntimeError checkElfImage throws, "" if none.
std::string errorOf(const std::vector<uint8_t> &bytes) {
  try {
    checkElfImage(bytes, "m.so");
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "";
}

std::vector<uint8_t> prefix(const std::vector<uint8_t> &bytes, size_t n) {
  return std::vector<uint8_t>(bytes.begin(), bytes.begin() + n);
}

TEST(ElfCheck, CompleteFilePasses) {
  EXPECT_EQ(errorOf(fakeModel()), "");
  EXPECT_NO_THROW(checkElfFile(FAKE_MODEL_SO));
}

TEST(ElfCheck, EveryTruncationIsReported) {
  std::vector<uint8_t> so = fakeModel();
  ASSERT_GT(so.size(), 4096u);
  Elf64_Ehdr eh;
  std::memcpy(&eh, so.data(), sizeof(eh));
  // Cuts: inside the identification and the header, and one byte before
  // and at the end of every segment and of the section header table.
  std::set<size_t> cuts = {
      0, 1, 3, 10, 16, 40, 63, so.size() / 4, so.size() / 2, so.size() - 1};
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, so.data() + eh.e_phoff + i * sizeof(ph), sizeof(ph));
    if (ph.p_filesz > 0 && ph.p_offset + ph.p_filesz < so.size()) {
      cuts.insert(ph.p_offset + ph.p_filesz - 1);
      cuts.insert(ph.p_offset + 1);
    }
  }
  cuts.insert(eh.e_shoff);
  cuts.insert(eh.e_shoff + 1);
  for (size_t n : cuts) {
    std::string e = errorOf(prefix(so, n));
    EXPECT_NE(e.find("m.so is truncated or corrupt: "), std::string::npos)
        << "cut at " << n << ": " << e;
    EXPECT_NE(e.find("but the file has " + std::to_string(n) +
                     " bytes (an interrupted copy?)"),
              std::string::npos)
        << "cut at " << n << ": " << e;
  }
}

TEST(ElfCheck, NamesThePieceThatIsCut) {
  std::vector<uint8_t> so = fakeModel();
  Elf64_Ehdr eh;
  std::memcpy(&eh, so.data(), sizeof(eh));
  EXPECT_EQ(errorOf(prefix(so, 0)),
            "m.so is truncated or corrupt: the ELF identification needs "
            "bytes [0, 16) but the file has 0 bytes (an interrupted copy?)");
  EXPECT_EQ(errorOf(prefix(so, 40)),
            "m.so is truncated or corrupt: the ELF header needs bytes [0, 64) "
            "but the file has 40 bytes (an interrupted copy?)");
  // The last PT_LOAD segment, cut one byte short: named with its index and
  // its exact byte range. (The section header table lies after it, so cut
  // it off too by clearing e_shoff.)
  int last = -1;
  Elf64_Phdr lastPh{};
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, so.data() + eh.e_phoff + i * sizeof(ph), sizeof(ph));
    if (ph.p_type == PT_LOAD) {
      last = i;
      lastPh = ph;
    }
  }
  ASSERT_GE(last, 0);
  uint64_t end = lastPh.p_offset + lastPh.p_filesz;
  std::vector<uint8_t> cut = prefix(so, end - 1);
  Elf64_Ehdr noSections = eh;
  noSections.e_shoff = 0;
  noSections.e_shnum = 0;
  std::memcpy(cut.data(), &noSections, sizeof(noSections));
  EXPECT_EQ(errorOf(cut),
            "m.so is truncated or corrupt: segment " + std::to_string(last) +
                " (PT_LOAD) needs bytes [" + std::to_string(lastPh.p_offset) +
                ", " + std::to_string(end) + ") but the file has " +
                std::to_string(end - 1) + " bytes (an interrupted copy?)");
  // The section header table, which is at the end of a linked .so.
  EXPECT_EQ(errorOf(prefix(so, so.size() - 1)),
            "m.so is truncated or corrupt: the section header table needs "
            "bytes [" +
                std::to_string(eh.e_shoff) + ", " +
                std::to_string(eh.e_shoff +
                               uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr)) +
                ") but the file has " + std::to_string(so.size() - 1) +
                " bytes (an interrupted copy?)");
}

TEST(ElfCheck, CorruptHeadersAndOtherFiles) {
  std::vector<uint8_t> so = fakeModel();
  std::vector<uint8_t> b = so;
  b[EI_CLASS] = ELFCLASS32;
  EXPECT_EQ(errorOf(b), "m.so is a 32-bit ELF file; pipeopt-run loads 64-bit "
                        "(ELFCLASS64) models only");
  b = so;
  b[EI_DATA] = ELFDATA2MSB;
  EXPECT_EQ(errorOf(b), "m.so is a big-endian ELF file; pipeopt-run loads "
                        "little-endian models only");
  std::string text = "#!/bin/sh\necho not a model\n";
  EXPECT_EQ(errorOf(std::vector<uint8_t>(text.begin(), text.end())),
            "m.so is not an ELF shared object (it does not start with the "
            "ELF magic bytes 7f 45 4c 46)");
  // A segment whose offset + size overflows 64 bits.
  b = so;
  Elf64_Ehdr eh;
  std::memcpy(&eh, b.data(), sizeof(eh));
  Elf64_Phdr ph;
  std::memcpy(&ph, b.data() + eh.e_phoff, sizeof(ph));
  ph.p_type = PT_NOTE;
  ph.p_offset = 16;
  ph.p_filesz = UINT64_MAX;
  std::memcpy(b.data() + eh.e_phoff, &ph, sizeof(ph));
  EXPECT_NE(errorOf(b).find("segment 0 (PT_NOTE) needs bytes [16, 16 + "
                            "18446744073709551615)"),
            std::string::npos)
      << errorOf(b);
  // A wrong program header entry size.
  b = so;
  eh.e_phentsize = 12;
  std::memcpy(b.data(), &eh, sizeof(eh));
  EXPECT_EQ(errorOf(b), "m.so is truncated or corrupt: the program header "
                        "entry size is 12 bytes instead of 56");
}

TEST(ElfCheck, AnotherArchitectureIsNamed) {
  // dlopen reports a .so for another machine as "cannot open shared object
  // file: No such file or directory".
  std::vector<uint8_t> so = fakeModel();
  Elf64_Ehdr eh;
  std::memcpy(&eh, so.data(), sizeof(eh));
#if defined(__x86_64__)
  ASSERT_EQ(eh.e_machine, EM_X86_64);
  eh.e_machine = EM_AARCH64;
  std::memcpy(so.data(), &eh, sizeof(eh));
  EXPECT_EQ(errorOf(so), "m.so is built for AArch64 (EM_AARCH64), but this "
                         "pipeopt-run runs on x86-64 (EM_X86_64) (was the "
                         "model compiled for another target?)");
#elif defined(__aarch64__)
  ASSERT_EQ(eh.e_machine, EM_AARCH64);
  eh.e_machine = EM_X86_64;
  std::memcpy(so.data(), &eh, sizeof(eh));
  EXPECT_EQ(errorOf(so), "m.so is built for x86-64 (EM_X86_64), but this "
                         "pipeopt-run runs on AArch64 (EM_AARCH64) (was the "
                         "model compiled for another target?)");
#else
  GTEST_SKIP() << "no e_machine check on this host";
#endif
  // An unnamed machine gets its number.
  eh.e_machine = 4242;
  std::memcpy(so.data(), &eh, sizeof(eh));
  EXPECT_NE(errorOf(so).find("m.so is built for machine 4242, but this "
                             "pipeopt-run runs on "),
            std::string::npos)
      << errorOf(so);
}

/// Runs `f` (which must throw RuntimeError) against the FIFO `fifo`; returns
/// its message. A blocking open() of a FIFO waits for a writer forever: if
/// `f` has not returned after 10 s, a writer is opened to release it and
/// the test fails instead of hanging.
std::string errorOnFifo(const std::string &fifo, std::function<void()> f) {
  auto done = std::async(std::launch::async, [f]() -> std::string {
    try {
      f();
    } catch (const RuntimeError &e) {
      return e.what();
    }
    return "";
  });
  if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "blocked on the FIFO " << fifo;
    while (done.wait_for(std::chrono::milliseconds(10)) !=
           std::future_status::ready) {
      int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (w >= 0)
        ::close(w);
    }
  }
  return done.get();
}

TEST(ElfCheck, FifoFailsFast) {
  // A named pipe given as the model, manifest or .npy input is an error at
  // once, not an open() that waits for a writer.
  std::string fifo = ::testing::TempDir() + "/pipeopt_elf_check_fifo_" +
                     std::to_string(::getpid());
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(errorOnFifo(fifo, [&] { checkElfFile(fifo); }),
            fifo + ": is a FIFO (named pipe), not a regular file; a model "
                   ".so must be one");
  EXPECT_EQ(errorOnFifo(fifo, [&] { readFileBytes(fifo, "manifest"); }),
            fifo + ": is a FIFO (named pipe), not a regular file; a "
                   "manifest must be one");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                .count(),
            5.0);
  ::unlink(fifo.c_str());
  // A character device likewise (it would be read to its end, if any).
  EXPECT_EQ(errorOnFifo("/dev/null", [] { checkElfFile("/dev/null"); }),
            "/dev/null: is a character device, not a regular file; a model "
            ".so must be one");
}

TEST(ElfCheck, FileErrors) {
  std::string dir = ::testing::TempDir();
  try {
    checkElfFile("/nonexistent/model.so");
    ADD_FAILURE() << "no error";
  } catch (const RuntimeError &e) {
    EXPECT_STREQ(e.what(), "/nonexistent/model.so: cannot open model .so: No "
                           "such file or directory");
  }
  try {
    checkElfFile(dir);
    ADD_FAILURE() << "no error";
  } catch (const RuntimeError &e) {
    EXPECT_EQ(std::string(e.what()), dir + ": is a directory, not a model .so");
  }
  std::vector<uint8_t> so = fakeModel();
  std::string path = dir + "/pipeopt_elf_check_truncated.so";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(so.data()), 3000);
  }
  try {
    checkElfFile(path);
    ADD_FAILURE() << "no error";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find(path + " is truncated or corrupt: "),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(
                  "but the file has 3000 bytes (an interrupted copy?)"),
              std::string::npos)
        << e.what();
  }
  std::remove(path.c_str());
}

} // namespace
