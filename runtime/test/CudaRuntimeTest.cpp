//===- CudaRuntimeTest.cpp - libpipeopt_rt_cuda.so ------------------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// Two groups:
//  - CudaNoDriver: runs on machines without a CUDA driver (the build
//    machines): the library loads, and device calls fail with a clear
//    message instead of crashing. Skipped where a driver is installed.
//  - CudaDevice: needs a GPU (skipped otherwise, saying why): every device
//    kernel against the CPU implementation on random data (Kernels.cpp's
//    matmul / conv2d with strided, transposed and batched operands, Reduce's
//    addToSum, Optimizer's optimizerStep), and the mgpu* host ABI with a real
//    kernel image.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/CudaApi.h"
#include "pipeopt/runtime/Optimizer.h"
#include "pipeopt/runtime/Reduce.h"
#include "pipeopt/runtime/Types.h"
#include "pipeopt/runtime/pipeopt_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

// The device side's C symbols (libpipeopt_rt_cuda.so), as MLIR's lowering
// and RuntimeFunctions.def declare them.
extern "C" {
const pipeopt_rt_cuda_api *pipeopt_rt_cuda_get_api(int32_t version);
void *mgpuModuleLoad(void *data, size_t size);
void *mgpuModuleLoadJIT(void *data, int optLevel);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, int64_t gridX, int64_t gridY,
                      int64_t gridZ, int64_t blockX, int64_t blockY,
                      int64_t blockZ, int32_t smem, void *stream, void **params,
                      void **extra, int64_t paramsCount);
void *mgpuStreamCreate();
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamWaitEvent(void *stream, void *event);
void *mgpuEventCreate();
void mgpuEventDestroy(void *event);
void mgpuEventRecord(void *event, void *stream);
void mgpuEventSynchronize(void *event);
void *mgpuMemAlloc(uint64_t bytes, void *stream, uint8_t isHostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream);
#define PIPEOPT_RT_CUDA_TEST_DECL2_(Suffix, Name, Ret, Params)                 \
  PIPEOPT_RT_KIND_##Ret _mlir_ciface_##Name##_##Suffix PIPEOPT_RT_PARAMS Params;
#define PIPEOPT_RT_CUDA_TEST_DECL_(Suffix, CType, Ctx)                         \
  PIPEOPT_RT_CALL(PIPEOPT_RT_CUDA_TEST_DECL2_, Suffix, PIPEOPT_RT_UNPACK Ctx)
#define PIPEOPT_RT_GPU_FLOAT_FN(Name, Ret, Params)                             \
  PIPEOPT_RT_FLOAT_DTYPE_LIST(PIPEOPT_RT_CUDA_TEST_DECL_, (Name, Ret, Params))
#include "pipeopt/runtime/RuntimeFunctions.def"
}

namespace {

using namespace pipeopt::rt;

const pipeopt_rt_cuda_api *api() {
  return pipeopt_rt_cuda_get_api(PIPEOPT_RT_CUDA_API_VERSION);
}

/// Runs `f` on a new thread (the library's error and binding are per
/// thread) and waits for it.
void onThread(const std::function<void()> &f) {
  std::thread t(f);
  t.join();
}

bool driverInstalled() {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h)
    dlclose(h);
  return h != nullptr;
}

std::vector<char> readFile(const char *path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

constexpr const char *kNoDriver = "no CUDA driver (libcuda.so.1 not found): ";

//===----------------------------------------------------------------------===//
// Without a driver
//===----------------------------------------------------------------------===//

TEST(CudaNoDriver, LibraryLoadsWithDlopen) {
  // What pipeopt-run does with a model that needs the library.
  void *h = dlopen(PIPEOPT_RT_CUDA_SO, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto get = reinterpret_cast<pipeopt_rt_cuda_get_api_fn>(
      dlsym(h, PIPEOPT_RT_CUDA_GET_API_SYMBOL));
  ASSERT_NE(get, nullptr);
  const pipeopt_rt_cuda_api *table = get(PIPEOPT_RT_CUDA_API_VERSION);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->version, PIPEOPT_RT_CUDA_API_VERSION);
  EXPECT_EQ(get(PIPEOPT_RT_CUDA_API_VERSION + 1), nullptr);
  EXPECT_NE(dlsym(h, "mgpuLaunchKernel"), nullptr);
  EXPECT_NE(dlsym(h, "_mlir_ciface_pipeopt_rt_gpu_matmul_f32"), nullptr);
  // Internals are hidden (the library does not interpose libpipeopt_rt).
  EXPECT_EQ(dlsym(h, "_ZN7pipeopt2rt12decodeMemRefEPK26pipeopt_rt_unranked_"
                     "memrefNS0_5DTypeE"),
            nullptr);
  dlclose(h);
}

TEST(CudaNoDriver, DeviceCallsFailWithTheReason) {
  if (driverInstalled())
    GTEST_SKIP() << "a CUDA driver (libcuda.so.1) is installed here";
  onThread([] {
    int32_t n = -1;
    EXPECT_NE(api()->device_count(&n), 0);
    EXPECT_EQ(n, -1);
    EXPECT_EQ(std::string(api()->last_error())
                  .rfind(std::string("device_count: ") + kNoDriver, 0),
              0u)
        << api()->last_error();
  });
  onThread([] {
    EXPECT_NE(api()->bind_thread(0, 3), 0);
    EXPECT_EQ(
        std::string(api()->last_error())
            .rfind(std::string("bind_thread (device 0, rank 3): ") + kNoDriver,
                   0),
        0u)
        << api()->last_error();
    EXPECT_EQ(api()->compute_stream(), nullptr);
    // Sticky: a later failure does not replace the first message.
    EXPECT_NE(api()->synchronize(), 0);
    EXPECT_NE(std::string(api()->last_error()).find(kNoDriver),
              std::string::npos);
    EXPECT_EQ(api()->unbind_thread(), 0);
  });
}

TEST(CudaNoDriver, ModuleLoadOnlyRecordsTheImage) {
  if (driverInstalled())
    GTEST_SKIP() << "a CUDA driver (libcuda.so.1) is installed here";
  std::vector<char> image = readFile(PIPEOPT_RT_TEST_FATBIN);
  ASSERT_FALSE(image.empty());
  // A global constructor at dlopen time: no driver needed.
  void *module = mgpuModuleLoad(image.data(), image.size());
  ASSERT_NE(module, nullptr);
  onThread([&] {
    EXPECT_EQ(mgpuModuleGetFunction(module, "pipeopt_test_axpy"), nullptr);
    EXPECT_EQ(std::string(api()->last_error())
                  .rfind(std::string("mgpuModuleGetFunction: ") + kNoDriver, 0),
              0u)
        << api()->last_error();
  });
  mgpuModuleUnload(module);
}

TEST(CudaNoDriver, UnboundThreadsGetAnError) {
  // Holds with and without a driver: nothing touches a device.
  onThread([] {
    EXPECT_EQ(mgpuStreamCreate(), nullptr);
    EXPECT_STREQ(api()->last_error(),
                 "mgpuStreamCreate: the calling thread is not bound to a CUDA "
                 "device (bind_thread was not called)");
    // Later mgpu* calls are skipped; the first error stays.
    EXPECT_EQ(mgpuMemAlloc(64, nullptr, 0), nullptr);
    EXPECT_EQ(std::string(api()->last_error()).rfind("mgpuStreamCreate: ", 0),
              0u);
  });
  onThread([] {
    void *p = &p;
    EXPECT_NE(api()->alloc(&p, 16), 0);
    EXPECT_EQ(std::string(api()->last_error())
                  .rfind("alloc: the calling thread is not bound", 0),
              0u)
        << api()->last_error();
  });
}

//===----------------------------------------------------------------------===//
// On a device
//===----------------------------------------------------------------------===//

/// A strided operand: sizes, strides (elements) and offset over a buffer of
/// span() elements.
struct Layout {
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  int64_t span() const {
    int64_t last = offset;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] == 0)
        return offset + 1;
      last += (sizes[d] - 1) * strides[d];
    }
    return last + 1;
  }
};

Layout dense(std::vector<int64_t> sizes) {
  Layout l;
  l.sizes = sizes;
  l.strides.assign(sizes.size(), 1);
  for (int d = int(sizes.size()) - 2; d >= 0; --d)
    l.strides[d] = l.strides[d + 1] * sizes[d + 1];
  return l;
}

/// A ranked memref descriptor of any rank, and its unranked form.
struct Descriptor {
  std::vector<int64_t> words;
  pipeopt_rt_unranked_memref unranked{};
  Descriptor(void *data, const Layout &l) {
    size_t rank = l.sizes.size();
    words.assign(3 + 2 * rank, 0);
    std::memcpy(&words[0], &data, sizeof(void *));
    std::memcpy(&words[1], &data, sizeof(void *));
    words[2] = l.offset;
    for (size_t d = 0; d < rank; ++d) {
      words[3 + d] = l.sizes[d];
      words[3 + rank + d] = l.strides[d];
    }
    unranked.rank = int64_t(rank);
    unranked.descriptor = words.data();
  }
  pipeopt_rt_unranked_memref *get() { return &unranked; }
};

/// Device memory through the library's own table.
struct DeviceBuffer {
  void *ptr = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t bytes) : bytes(bytes) {
    EXPECT_EQ(api()->alloc(&ptr, bytes), 0) << api()->last_error();
  }
  ~DeviceBuffer() { api()->free(ptr); }
  void upload(const void *src) {
    EXPECT_EQ(api()->copy(ptr, src, bytes), 0) << api()->last_error();
  }
  void download(void *dst) {
    EXPECT_EQ(api()->copy(dst, ptr, bytes), 0) << api()->last_error();
  }
};

template <typename T>
std::vector<T> randomData(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> v(size_t(std::max<int64_t>(n, 1)));
  for (T &x : v)
    x = T(dist(rng));
  return v;
}

template <typename T>
void expectClose(const std::vector<T> &gpu, const std::vector<T> &cpu,
                 const std::string &what) {
  ASSERT_EQ(gpu.size(), cpu.size());
  double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  int bad = 0;
  for (size_t i = 0; i < gpu.size() && bad < 5; ++i) {
    double ref = cpu[i], got = gpu[i];
    if (!(std::fabs(got - ref) <= tol * std::max(1.0, std::fabs(ref)))) {
      ADD_FAILURE() << what << ": element " << i << " is " << got
                    << ", the CPU kernel gives " << ref;
      ++bad;
    }
  }
}

class CudaDevice : public ::testing::Test {
protected:
  void SetUp() override {
    int32_t n = 0;
    if (api()->device_count(&n) != 0)
      GTEST_SKIP() << "no CUDA device to run on: " << api()->last_error();
    devices = n;
    ASSERT_EQ(api()->bind_thread(0, 0), 0) << api()->last_error();
  }
  void TearDown() override {
    if (api()->compute_stream())
      EXPECT_EQ(api()->unbind_thread(), 0) << api()->last_error();
  }
  void expectNoError() { EXPECT_STREQ(api()->last_error(), ""); }
  int devices = 0;
};

/// Runs a kernel over operands (in the CPU version on host copies, in the
/// GPU version on device copies) and compares every element of every
/// operand's buffer, the gaps of strided views included.
template <typename T, typename CpuFn, typename GpuFn>
void compareKernel(const std::vector<Layout> &layouts, CpuFn cpu, GpuFn gpu,
                   const std::string &what, unsigned seed) {
  std::vector<std::vector<T>> host, fromGpu;
  std::vector<std::unique_ptr<DeviceBuffer>> dev;
  std::vector<Descriptor> hostRefs, devRefs;
  for (size_t i = 0; i < layouts.size(); ++i) {
    host.push_back(randomData<T>(layouts[i].span(), seed + unsigned(i)));
    dev.push_back(
        std::make_unique<DeviceBuffer>(host.back().size() * sizeof(T)));
    dev.back()->upload(host.back().data());
  }
  for (size_t i = 0; i < layouts.size(); ++i) {
    hostRefs.emplace_back(host[i].data(), layouts[i]);
    devRefs.emplace_back(dev[i]->ptr, layouts[i]);
  }
  ASSERT_EQ(cpu(hostRefs), 0) << what;
  ASSERT_EQ(gpu(devRefs), 0) << what << ": " << api()->last_error();
  ASSERT_EQ(api()->synchronize(), 0) << api()->last_error();
  ASSERT_STREQ(api()->last_error(), "") << what;
  for (size_t i = 0; i < layouts.size(); ++i) {
    std::vector<T> back(host[i].size());
    dev[i]->download(back.data());
    expectClose(back, host[i], what + ", operand " + std::to_string(i));
  }
}

struct MatmulCase {
  const char *name;
  Layout lhs, rhs, out;
  bool transLhs, transRhs;
};

std::vector<MatmulCase> matmulCases() {
  return {
      {"2-D", dense({5, 7}), dense({7, 3}), dense({5, 3}), false, false},
      {"transposed lhs", dense({7, 5}), dense({7, 3}), dense({5, 3}), true,
       false},
      {"transposed rhs", dense({5, 7}), dense({3, 7}), dense({5, 3}), false,
       true},
      {"both transposed", dense({7, 5}), dense({3, 7}), dense({5, 3}), true,
       true},
      {"batched", dense({4, 5, 7}), dense({4, 7, 3}), dense({4, 5, 3}), false,
       false},
      {"batched, transposed rhs", dense({4, 5, 7}), dense({4, 3, 7}),
       dense({4, 5, 3}), false, true},
      {"matvec", dense({5, 7}), dense({7}), dense({5}), false, false},
      {"vecmat", dense({7}), dense({7, 3}), dense({3}), false, false},
      // No unit stride (packed), a padded leading dimension (in place), a
      // column-major output (packed and scattered back) with an offset.
      {"strided", Layout{{5, 7}, {16, 2}, 1}, Layout{{7, 3}, {5, 1}, 0},
       Layout{{5, 3}, {1, 5}, 3}, false, false},
      {"batched, strided", Layout{{3, 4, 6}, {1, 18, 3}, 0},
       Layout{{3, 6, 2}, {12, 2, 1}, 2}, Layout{{3, 4, 2}, {1, 6, 3}, 0}, false,
       false},
      {"size-1 dimensions", Layout{{1, 7}, {99, 1}, 0},
       Layout{{7, 1}, {1, 42}, 0}, Layout{{1, 1}, {5, 7}, 0}, false, false},
      {"strided vectors", Layout{{6, 4}, {1, 6}, 0}, Layout{{4}, {3}, 1},
       Layout{{6}, {2}, 0}, false, false},
  };
}

template <typename T>
void runMatmulCases(unsigned seed) {
  for (const MatmulCase &c : matmulCases()) {
    SCOPED_TRACE(c.name);
    compareKernel<T>(
        {c.lhs, c.rhs, c.out},
        [&](std::vector<Descriptor> &d) {
          if constexpr (std::is_same_v<T, float>)
            return _mlir_ciface_pipeopt_rt_matmul_f32(
                d[0].get(), d[1].get(), d[2].get(), c.transLhs, c.transRhs);
          else
            return _mlir_ciface_pipeopt_rt_matmul_f64(
                d[0].get(), d[1].get(), d[2].get(), c.transLhs, c.transRhs);
        },
        [&](std::vector<Descriptor> &d) {
          if constexpr (std::is_same_v<T, float>)
            return _mlir_ciface_pipeopt_rt_gpu_matmul_f32(
                d[0].get(), d[1].get(), d[2].get(), c.transLhs, c.transRhs);
          else
            return _mlir_ciface_pipeopt_rt_gpu_matmul_f64(
                d[0].get(), d[1].get(), d[2].get(), c.transLhs, c.transRhs);
        },
        std::string("matmul ") + c.name, seed++);
  }
}

TEST_F(CudaDevice, MatmulF32MatchesTheCpuKernel) { runMatmulCases<float>(1); }
TEST_F(CudaDevice, MatmulF64MatchesTheCpuKernel) {
  runMatmulCases<double>(100);
}

TEST_F(CudaDevice, MatmulShapeErrorIsRecorded) {
  std::vector<float> a(35), b(21), c(15);
  DeviceBuffer da(a.size() * 4), db(b.size() * 4), dc(c.size() * 4);
  Descriptor l(da.ptr, dense({5, 7})), r(db.ptr, dense({3, 7})),
      o(dc.ptr, dense({5, 3}));
  EXPECT_NE(
      _mlir_ciface_pipeopt_rt_gpu_matmul_f32(l.get(), r.get(), o.get(), 0, 0),
      0);
  EXPECT_STREQ(api()->last_error(),
               "pipeopt_rt_gpu_matmul (f32): operands f32[5x7] x f32[3x7] -> "
               "f32[5x3]: sizes do not match");
}

struct ConvCase {
  const char *name;
  int64_t layout;
  Layout in, filter, out;
  int64_t sh, sw, dh, dw;
};

std::vector<ConvCase> convCases() {
  // NCHW input 2x3x9x8, filter 4x3x3x2, stride (2, 1), dilation (1, 2):
  // output 2x4x4x6.
  return {
      {"nchw_fchw", PIPEOPT_RT_CONV_NCHW_FCHW, dense({2, 3, 9, 8}),
       dense({4, 3, 3, 2}), dense({2, 4, 4, 6}), 2, 1, 1, 2},
      {"nhwc_hwcf", PIPEOPT_RT_CONV_NHWC_HWCF, dense({2, 9, 8, 3}),
       dense({3, 2, 3, 4}), dense({2, 4, 6, 4}), 2, 1, 1, 2},
      {"nhwc_fhwc", PIPEOPT_RT_CONV_NHWC_FHWC, dense({2, 9, 8, 3}),
       dense({4, 3, 2, 3}), dense({2, 4, 6, 4}), 2, 1, 1, 2},
      {"nhwc_fchw", PIPEOPT_RT_CONV_NHWC_FCHW, dense({2, 9, 8, 3}),
       dense({4, 3, 3, 2}), dense({2, 4, 6, 4}), 2, 1, 1, 2},
      {"pointwise", PIPEOPT_RT_CONV_NHWC_HWCF, dense({1, 5, 5, 6}),
       dense({1, 1, 6, 2}), dense({1, 5, 5, 2}), 1, 1, 1, 1},
      // An output smaller than the input allows (the input is cropped).
      {"cropped output", PIPEOPT_RT_CONV_NCHW_FCHW, dense({1, 2, 10, 10}),
       dense({3, 2, 3, 3}), dense({1, 3, 5, 4}), 1, 1, 1, 1},
      // Strided input (every other channel) and a transposed output.
      {"strided operands", PIPEOPT_RT_CONV_NHWC_FHWC,
       Layout{{2, 6, 5, 3}, {180, 30, 6, 2}, 1}, dense({2, 2, 2, 3}),
       Layout{{2, 5, 4, 2}, {1, 16, 4, 2}, 0}, 1, 1, 1, 1},
  };
}

template <typename T>
void runConvCases(unsigned seed) {
  for (const ConvCase &c : convCases()) {
    SCOPED_TRACE(c.name);
    compareKernel<T>(
        {c.in, c.filter, c.out},
        [&](std::vector<Descriptor> &d) {
          if constexpr (std::is_same_v<T, float>)
            return _mlir_ciface_pipeopt_rt_conv2d_f32(d[0].get(), d[1].get(),
                                                      d[2].get(), c.layout,
                                                      c.sh, c.sw, c.dh, c.dw);
          else
            return _mlir_ciface_pipeopt_rt_conv2d_f64(d[0].get(), d[1].get(),
                                                      d[2].get(), c.layout,
                                                      c.sh, c.sw, c.dh, c.dw);
        },
        [&](std::vector<Descriptor> &d) {
          if constexpr (std::is_same_v<T, float>)
            return _mlir_ciface_pipeopt_rt_gpu_conv2d_f32(
                d[0].get(), d[1].get(), d[2].get(), c.layout, c.sh, c.sw, c.dh,
                c.dw);
          else
            return _mlir_ciface_pipeopt_rt_gpu_conv2d_f64(
                d[0].get(), d[1].get(), d[2].get(), c.layout, c.sh, c.sw, c.dh,
                c.dw);
        },
        std::string("conv2d ") + c.name, seed++);
  }
}

TEST_F(CudaDevice, Conv2dF32MatchesTheCpuKernel) { runConvCases<float>(7); }
TEST_F(CudaDevice, Conv2dF64MatchesTheCpuKernel) { runConvCases<double>(70); }

TEST_F(CudaDevice, GatherAndScatterAreInverse) {
  // A 3x4x5 view with padded, permuted strides over 200 int16 elements.
  Layout view{{3, 4, 5}, {2, 60, 12}, 3};
  std::vector<uint16_t> src(size_t(view.span()));
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = uint16_t(i * 7 + 1);
  std::vector<uint16_t> expected;
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t c = 0; c < 5; ++c)
        expected.push_back(src[size_t(3 + a * 2 + b * 60 + c * 12)]);
  DeviceBuffer dsrc(src.size() * 2), ddst(expected.size() * 2);
  dsrc.upload(src.data());
  auto *base = static_cast<uint16_t *>(dsrc.ptr) + 3;
  ASSERT_EQ(api()->gather(ddst.ptr, base, 2, 3, view.sizes.data(),
                          view.strides.data()),
            0)
      << api()->last_error();
  std::vector<uint16_t> got(expected.size());
  ddst.download(got.data());
  EXPECT_EQ(got, expected);
  // Scatter into a zeroed buffer writes exactly the view's elements.
  ASSERT_EQ(api()->zero(dsrc.ptr, dsrc.bytes), 0);
  ASSERT_EQ(api()->scatter(base, ddst.ptr, 2, 3, view.sizes.data(),
                           view.strides.data()),
            0)
      << api()->last_error();
  std::vector<uint16_t> back(src.size()), want(src.size(), 0);
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t c = 0; c < 5; ++c) {
        size_t i = size_t(3 + a * 2 + b * 60 + c * 12);
        want[i] = src[i];
      }
  dsrc.download(back.data());
  EXPECT_EQ(back, want);
  // Rank 9 is refused.
  int64_t sizes[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, strides[9] = {};
  EXPECT_NE(api()->gather(ddst.ptr, dsrc.ptr, 2, 9, sizes, strides), 0);
}

TEST_F(CudaDevice, AccumulateMatchesAddToSum) {
  const int64_t n = 1000;
  std::vector<double> sum = randomData<double>(n, 3), expected = sum;
  DeviceBuffer dsum(n * 8);
  dsum.upload(sum.data());
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    std::vector<double> values = randomData<double>(n, 4 + int(dt));
    std::vector<uint8_t> bytes(size_t(n) * dtypeSize(dt));
    for (int64_t i = 0; i < n; ++i) {
      uint8_t *p = bytes.data() + i * dtypeSize(dt);
      if (dt == DType::F32) {
        float f = float(values[i]);
        std::memcpy(p, &f, 4);
      } else if (dt == DType::F64) {
        std::memcpy(p, &values[i], 8);
      } else {
        uint16_t h = dt == DType::F16 ? doubleToHalf(values[i])
                                      : doubleToBf16(values[i]);
        std::memcpy(p, &h, 2);
      }
    }
    addToSum(dt, bytes.data(), expected);
    DeviceBuffer dgrad(bytes.size());
    dgrad.upload(bytes.data());
    ASSERT_EQ(api()->accumulate(static_cast<double *>(dsum.ptr), dgrad.ptr,
                                int32_t(dt), n),
              0)
        << api()->last_error();
  }
  std::vector<double> got(static_cast<size_t>(n));
  dsum.download(got.data());
  EXPECT_EQ(got, expected); // exact: every addition is one IEEE double add
  EXPECT_NE(api()->accumulate(static_cast<double *>(dsum.ptr), dsum.ptr,
                              int32_t(DType::I32), n),
            0);
}

/// Three steps of `kind` on the device and with optimizerStep, weights of
/// `dt`; both round the same double computations once, so they agree
/// exactly.
void compareOptimizer(OptimizerKind kind, DType dt) {
  const int64_t n = 777;
  TrainingConfig config;
  config.optimizer = kind;
  config.lr = 0.01;
  config.momentum = 0.8;
  config.weightDecay = 0.05;
  pipeopt_rt_cuda_optimizer gpuConfig{
      int32_t(kind), config.lr,  config.momentum,   config.beta1,
      config.beta2,  config.eps, config.weightDecay};
  HostTensor w;
  w.dtype = dt;
  w.shape = {n};
  doublesToTensor(randomData<double>(n, 11), w);
  DeviceBuffer dw(w.data.size()), dsum(n * 8), dfirst(n * 8), dsecond(n * 8);
  dw.upload(w.data.data());
  ASSERT_EQ(api()->zero(dfirst.ptr, dfirst.bytes), 0);
  ASSERT_EQ(api()->zero(dsecond.ptr, dsecond.bytes), 0);
  OptimizerState state;
  const double scale = 0.25; // the mean of 4 microbatches
  for (int64_t step = 1; step <= 3; ++step) {
    std::vector<double> sum = randomData<double>(n, 20 + unsigned(step));
    std::vector<double> g(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      g[i] = sum[i] * scale;
    std::vector<double> wd = tensorToDoubles(w);
    optimizerStep(config, wd, g, state);
    doublesToTensor(wd, w);
    dsum.upload(sum.data());
    ASSERT_EQ(api()->optimizer_step(&gpuConfig, dw.ptr, int32_t(dt),
                                    static_cast<double *>(dsum.ptr), scale,
                                    static_cast<double *>(dfirst.ptr),
                                    static_cast<double *>(dsecond.ptr), step,
                                    n),
              0)
        << api()->last_error();
  }
  std::vector<uint8_t> got(w.data.size());
  dw.download(got.data());
  EXPECT_EQ(got, w.data) << "weights after 3 steps, " << dtypeName(dt);
  if (!state.first.empty()) {
    std::vector<double> first(static_cast<size_t>(n));
    dfirst.download(first.data());
    EXPECT_EQ(first, state.first.toDoubles());
  }
  if (!state.second.empty()) {
    std::vector<double> second(static_cast<size_t>(n));
    dsecond.download(second.data());
    EXPECT_EQ(second, state.second.toDoubles());
  }
}

TEST_F(CudaDevice, OptimizerStepMatchesTheCpu) {
  for (OptimizerKind kind :
       {OptimizerKind::Sgd, OptimizerKind::Momentum, OptimizerKind::AdamW})
    for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
      SCOPED_TRACE(std::to_string(int(kind)) + " " + dtypeName(dt));
      compareOptimizer(kind, dt);
    }
}

/// The mgpu* sequence generated host code runs, with the test kernel.
void runAxpy(void *module) {
  const int64_t n = 1000;
  std::vector<float> x = randomData<float>(n, 5), y = randomData<float>(n, 6);
  void *stream = mgpuStreamCreate();
  ASSERT_NE(stream, nullptr) << api()->last_error();
  EXPECT_EQ(stream, api()->compute_stream());
  void *dx = mgpuMemAlloc(n * 4, stream, 0),
       *dy = mgpuMemAlloc(n * 4, stream, 0);
  mgpuMemcpy(dx, x.data(), n * 4, stream);
  mgpuMemcpy(dy, y.data(), n * 4, stream);
  void *fn = mgpuModuleGetFunction(module, "pipeopt_test_axpy");
  ASSERT_NE(fn, nullptr) << api()->last_error();
  float a = 2.5f;
  int64_t count = n;
  void *params[] = {&dy, &dx, &a, &count};
  mgpuLaunchKernel(fn, (n + 127) / 128, 1, 1, 128, 1, 1, 0, stream, params,
                   nullptr, 4);
  void *event = mgpuEventCreate();
  mgpuEventRecord(event, stream);
  mgpuStreamWaitEvent(stream, event);
  mgpuEventSynchronize(event);
  mgpuEventDestroy(event);
  std::vector<float> got(static_cast<size_t>(n));
  mgpuMemcpy(got.data(), dy, n * 4, stream);
  mgpuStreamSynchronize(stream);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(got[i], y[i] + a * x[i]) << i;
  mgpuMemset32(dy, 0x3f800000u, size_t(n), stream); // 1.0f
  mgpuMemcpy(got.data(), dy, n * 4, stream);
  mgpuStreamSynchronize(stream);
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[n - 1], 1.0f);
  mgpuMemFree(dx, stream);
  mgpuMemFree(dy, stream);
  mgpuStreamDestroy(stream); // the compute stream: a no-op
  mgpuStreamSynchronize(stream);
  EXPECT_STREQ(api()->last_error(), "");
}

TEST_F(CudaDevice, MgpuAbiRunsAKernelOnEveryDevice) {
  std::vector<char> image = readFile(PIPEOPT_RT_TEST_FATBIN);
  ASSERT_FALSE(image.empty());
  void *module = mgpuModuleLoad(image.data(), image.size());
  runAxpy(module);
  // The same module on the other devices, each from its own thread.
  for (int d = 1; d < std::min(devices, 4); ++d)
    onThread([&] {
      ASSERT_EQ(api()->bind_thread(d, d), 0) << api()->last_error();
      runAxpy(module);
      EXPECT_EQ(api()->unbind_thread(), 0);
    });
  EXPECT_EQ(mgpuModuleGetFunction(module, "no_such_kernel"), nullptr);
  EXPECT_NE(std::string(api()->last_error()).find("cuLibraryGetKernel"),
            std::string::npos)
      << api()->last_error();
  mgpuModuleUnload(module);
}

TEST_F(CudaDevice, MgpuJitModuleFromPtx) {
  std::vector<char> ptx = readFile(PIPEOPT_RT_TEST_PTX);
  ASSERT_FALSE(ptx.empty());
  ptx.push_back('\0');
  void *module = mgpuModuleLoadJIT(ptx.data(), 2);
  runAxpy(module);
  mgpuModuleUnload(module);
}

} // namespace
