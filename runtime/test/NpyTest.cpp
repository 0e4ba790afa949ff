//===- NpyTest.cpp - .npy reader/writer tests -------------------*- C++ -*-===//

#include "pipeopt/runtime/Npy.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace pipeopt::rt;

namespace {

std::vector<uint8_t> bytesOf(const std::string &s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

/// Builds a v1.0 .npy file with a hand-written header dict.
std::vector<uint8_t> makeNpy(const std::string &dict, size_t dataBytes,
                             int major = 1) {
  std::string header = dict;
  size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY", 6);
  out += char(major);
  out += char(0);
  out += char(header.size() & 0xff);
  out += char((header.size() >> 8) & 0xff);
  if (major != 1) {
    out += char(0);
    out += char(0);
  }
  out += header;
  out += std::string(dataBytes, '\x01');
  return bytesOf(out);
}

void expectError(const std::vector<uint8_t> &bytes, const std::string &needle) {
  try {
    parseNpy(bytes, "in.npy");
    FAIL() << "expected an error containing '" << needle << "'";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("in.npy", 0), 0u) << e.what();
  }
}

TEST(Npy, RoundTripAllDTypes) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64,
                  DType::I32, DType::I8, DType::I1}) {
    for (Shape shape :
         {Shape{}, Shape{5}, Shape{2, 3}, Shape{2, 0, 4}, Shape{1, 2, 3, 4}}) {
      HostTensor a;
      a.dtype = t;
      a.shape = shape;
      a.data.resize(size_t(numElements(shape)) * dtypeSize(t));
      for (size_t i = 0; i < a.data.size(); ++i)
        a.data[i] = uint8_t(t == DType::I1 ? i % 2 : i * 7 + 3);
      std::vector<uint8_t> bytes = serializeNpy(a);
      EXPECT_EQ((bytes.size() - a.data.size()) % 64, 0u);
      HostTensor b = parseNpy(bytes, "rt");
      EXPECT_EQ(b.dtype, a.dtype) << dtypeName(t);
      EXPECT_EQ(b.shape, a.shape) << dtypeName(t);
      EXPECT_EQ(b.data, a.data) << dtypeName(t);
    }
  }
}

TEST(Npy, FileRoundTrip) {
  HostTensor a;
  a.dtype = DType::F32;
  a.shape = {2, 2};
  float v[4] = {1.5f, -2, 3, 4};
  a.data.resize(16);
  std::memcpy(a.data.data(), v, 16);
  std::string path = ::testing::TempDir() + "/npy_roundtrip.npy";
  writeNpy(path, a);
  HostTensor b = readNpy(path);
  EXPECT_EQ(b.shape, a.shape);
  EXPECT_EQ(b.data, a.data);
}

TEST(Npy, DirectoryOrMissingFileIsARuntimeError) {
  // A directory is a RuntimeError naming the path, not a
  // std::ios_base::failure ("Is a directory") escaping from the stream read
  // and aborting pipeopt-run and pipeopt-npy-diff.
  std::string dir = ::testing::TempDir();
  try {
    readNpy(dir);
    FAIL() << "no error for a directory";
  } catch (const RuntimeError &e) {
    EXPECT_EQ(std::string(e.what()), dir + ": is a directory, not a .npy file");
  }
  try {
    readNpy(dir + "/does-not-exist.npy");
    FAIL() << "no error for a missing file";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("does-not-exist.npy: cannot open .npy "
                                         "file: "),
              std::string::npos);
  }
}

TEST(Npy, ReadsNumPyStyleHeaders) {
  // As written by numpy.save (1-d tuple with trailing comma).
  HostTensor t = parseNpy(
      makeNpy("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", 24),
      "x");
  EXPECT_EQ(t.dtype, DType::F64);
  EXPECT_EQ(t.shape, Shape{3});
  t = parseNpy(makeNpy("{'descr': '|b1', 'fortran_order': False, 'shape': "
                       "(2, 2), }",
                       4, 2),
               "x");
  EXPECT_EQ(t.dtype, DType::I1);
  t = parseNpy(
      makeNpy("{'descr': '<i8', 'fortran_order': False, 'shape': (), }", 8),
      "x");
  EXPECT_EQ(t.shape, Shape{});
  t = parseNpy(
      makeNpy("{\"shape\": (1, 2), \"fortran_order\": False, \"descr\": "
              "\"<i4\"}",
              8),
      "x");
  EXPECT_EQ(t.dtype, DType::I32);
}

TEST(Npy, MalformedFiles) {
  expectError(bytesOf("not an npy file at all"), "bad magic");
  expectError(bytesOf(std::string("\x93NUMPY", 6)), "bad magic");
  expectError(
      makeNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16),
      "Fortran-order");
  expectError(
      makeNpy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8),
      "unsupported dtype '>f4'");
  expectError(
      makeNpy("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16),
      "unsupported dtype '<c8'");
  expectError(makeNpy("{'descr': [('a', '<f4')], 'fortran_order': False, "
                      "'shape': (2,), }",
                      8),
              "unsupported dtype");
  expectError(
      makeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
              20),
      "truncated .npy data");
  expectError(
      makeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 12),
      "trailing bytes");
  expectError(makeNpy("{'descr': '<f4', 'shape': (2,), }", 8),
              "malformed .npy header");
  expectError(
      makeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8),
      "malformed .npy header");
  expectError(
      makeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", 8),
      "malformed .npy header");
  std::vector<uint8_t> v9 =
      makeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8);
  v9[6] = 9;
  expectError(v9, "unsupported .npy format version 9.0");
  std::vector<uint8_t> cut =
      makeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8);
  cut.resize(30);
  expectError(cut, "truncated .npy header");
}

TEST(Npy, HugeShapesNameTheFile) {
  // An element count beyond 64 bits: the message names the file as well as
  // the shape.
  try {
    parseNpy(makeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': "
                     "(99999999999, 99999999999), }",
                     0),
             "huge.npy");
    FAIL() << "no error";
  } catch (const RuntimeError &e) {
    EXPECT_EQ(std::string(e.what()),
              "huge.npy: shape [99999999999x99999999999] is too large");
  }
  // 2^61 elements fit in 64 bits, their 8 * 2^61 bytes do not: "too large",
  // not a byte count wrapped to 0 and reported as "trailing bytes".
  try {
    parseNpy(makeNpy("{'descr': '<f8', 'fortran_order': False, 'shape': "
                     "(1073741824, 2147483648), }",
                     8),
             "wrap.npy");
    FAIL() << "no error";
  } catch (const RuntimeError &e) {
    EXPECT_EQ(std::string(e.what()),
              "wrap.npy: f64[1073741824x2147483648] is too large (more than "
              "2^64 bytes)");
  }
}

TEST(Npy, MissingFile) {
  try {
    readNpy("/nonexistent/dir/x.npy");
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/x.npy: cannot open"),
              std::string::npos);
  }
}

//===----------------------------------------------------------------------===//
// writeFileAtomic (issue 34, item 1)
//===----------------------------------------------------------------------===//

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The names in `dir` (without . and ..).
std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
        names.push_back(e->d_name);
    closedir(d);
  }
  return names;
}

template <typename F>
std::string errorOf(F f) {
  try {
    f();
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(FileIO, FullDeviceIsAnErrorNamingTheFileAndReason) {
  // A small file used to sit in the stream's buffer until the destructor,
  // which drops the error: written "successfully" to a full disk.
  std::string e = errorOf(
      [] { writeFileAtomic("/dev/full", "{}\n", FollowLinks::UserNamedPath); });
  EXPECT_EQ(e, "/dev/full: cannot write: No space left on device");
  HostTensor t;
  t.dtype = DType::F32;
  t.shape = {2};
  t.data.resize(8, 0);
  e = errorOf([&] { writeNpy("/dev/full", t, FollowLinks::UserNamedPath); });
  EXPECT_EQ(e, "/dev/full: cannot write: No space left on device");
  // The device node is still a device (never renamed over).
  struct stat st;
  ASSERT_EQ(::stat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // Devices that accept the data are fine.
  writeFileAtomic("/dev/null", "ok", FollowLinks::UserNamedPath);
}

TEST(FileIO, ReplacesAtomicallyAndNamesTheFinalFile) {
  std::string dir =
      ::testing::TempDir() + "/fileio_" + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0777);
  std::string path = dir + "/a.json";
  writeFileAtomic(path, "old contents\n", FollowLinks::Never);
  EXPECT_EQ(readAll(path), "old contents\n");
  writeFileAtomic(path, "new\n", FollowLinks::Never);
  EXPECT_EQ(readAll(path), "new\n");
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"a.json"});
  // A missing directory: the error names the file asked for.
  EXPECT_EQ(errorOf([&] {
              writeFileAtomic(dir + "/no/b.json", "x", FollowLinks::Never);
            }),
            dir + "/no/b.json: cannot create: No such file or directory");
  EXPECT_EQ(errorOf([&] { writeFileAtomic(dir, "x", FollowLinks::Never); }),
            dir + ": cannot write: Is a directory");

  // A write that fails part-way (RLIMIT_FSIZE: EFBIG after 4 KiB, like a
  // disk that fills) leaves the old file whole and no temporary behind.
  struct rlimit old;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  void (*oldHandler)(int) = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  std::string big(100000, 'x');
  std::string e =
      errorOf([&] { writeFileAtomic(path, big, FollowLinks::Never); });
  HostTensor t;
  t.dtype = DType::F64;
  t.shape = {1000};
  t.data.resize(8000, 1);
  std::string e2 = errorOf([&] { writeNpy(dir + "/w.npy", t); });
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, oldHandler);
  EXPECT_EQ(e, path + ": cannot write: File too large");
  EXPECT_EQ(e2, dir + "/w.npy: cannot write: File too large");
  EXPECT_EQ(readAll(path), "new\n");
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"a.json"});
}

/// A fresh directory for one test.
std::string freshDir(const std::string &name) {
  std::string dir =
      ::testing::TempDir() + "/" + name + "_" + std::to_string(::getpid());
  std::string cmd = "rm -rf '" + dir + "'";
  (void)std::system(cmd.c_str());
  ::mkdir(dir.c_str(), 0777);
  return dir;
}

bool isSymlink(const std::string &path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

TEST(FileIO, NeverFollowReplacesALinkNotItsTarget) {
  // A link planted in an output or checkpoint directory used to redirect
  // the write to its target (any file the user can write).
  std::string dir = freshDir("fileio_links");
  std::string victim = dir + "/victim.txt";
  writeFileAtomic(victim, "precious\n", FollowLinks::Never);
  ::mkdir((dir + "/out").c_str(), 0777);
  ASSERT_EQ(::symlink("../victim.txt", (dir + "/out/latest").c_str()), 0);
  ASSERT_EQ(::symlink("../victim.txt", (dir + "/out/w.npy").c_str()), 0);
  writeFileAtomic(dir + "/out/latest", "step-2\n", FollowLinks::Never);
  HostTensor t;
  t.dtype = DType::F32;
  t.shape = {2};
  t.data.resize(8, 0);
  writeNpy(dir + "/out/w.npy", t, FollowLinks::Never);
  EXPECT_EQ(readAll(victim), "precious\n");
  EXPECT_FALSE(isSymlink(dir + "/out/latest"));
  EXPECT_FALSE(isSymlink(dir + "/out/w.npy"));
  EXPECT_EQ(readAll(dir + "/out/latest"), "step-2\n");
  EXPECT_EQ(readNpy(dir + "/out/w.npy").shape, Shape{2});
  // A link to a device is replaced too (no write through /dev/full).
  ASSERT_EQ(::symlink("/dev/full", (dir + "/out/dev.json").c_str()), 0);
  writeFileAtomic(dir + "/out/dev.json", "{}\n", FollowLinks::Never);
  EXPECT_EQ(readAll(dir + "/out/dev.json"), "{}\n");
}

TEST(FileIO, UserNamedLinkIsWrittenThroughNeverRenamedOver) {
  // --trace /dev/stdout with stdout redirected to a regular file: the link
  // must stay a link (an earlier bug replaced /dev/stdout with a file).
  std::string dir = freshDir("fileio_usernamed");
  std::string target = dir + "/target.txt";
  writeFileAtomic(target, "old old old\n", FollowLinks::Never);
  std::string link = dir + "/link";
  ASSERT_EQ(::symlink("target.txt", link.c_str()), 0);
  struct stat before, after;
  ASSERT_EQ(::stat(target.c_str(), &before), 0);
  writeFileAtomic(link, "new\n", FollowLinks::UserNamedPath);
  EXPECT_TRUE(isSymlink(link));
  EXPECT_EQ(readAll(target), "new\n"); // truncated, written in place:
  ASSERT_EQ(::stat(target.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino); // the same file, not renamed over
  // A link to a device: written through, the device stays a device.
  std::string full = dir + "/full";
  ASSERT_EQ(::symlink("/dev/full", full.c_str()), 0);
  EXPECT_EQ(
      errorOf([&] { writeFileAtomic(full, "x", FollowLinks::UserNamedPath); }),
      full + ": cannot write: No space left on device");
  EXPECT_TRUE(isSymlink(full));
  std::string null = dir + "/null";
  ASSERT_EQ(::symlink("/dev/null", null.c_str()), 0);
  writeFileAtomic(null, "x", FollowLinks::UserNamedPath);
  EXPECT_TRUE(isSymlink(null));
}

TEST(FileIO, Fnv1a64) {
  // Reference values of 64-bit FNV-1a.
  EXPECT_EQ(fnv1a64("", 0), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a", 1), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar", 6), 0x85944171f73967e8ull);
}

} // namespace
