//===- AbiTest.cpp - C ABI over the loopback communicator -------*- C++ -*-===//

#include "TestMemRef.h"
#include "pipeopt/runtime/Context.h"
#include "pipeopt/runtime/pipeopt_runtime.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

using namespace pipeopt::rt;
using pipeopt_test::MemRef;

namespace {

struct RankOutcome {
  std::string error; ///< first runtime error ("" if none)
  int32_t rc = 0;
};

/// Runs `body(rank)` on n loopback ranks (threads) with rank contexts.
std::vector<RankOutcome>
runRanks(int n, double timeoutS, const std::function<int32_t(int)> &body,
         const Manifest *manifest = nullptr, const InputStore *inputs = nullptr,
         std::vector<std::unique_ptr<RankContext>> *keep = nullptr) {
  LoopbackWorld world(n);
  std::vector<std::unique_ptr<Communicator>> comms;
  std::vector<std::unique_ptr<RankContext>> ctxs;
  for (int r = 0; r < n; ++r) {
    comms.push_back(world.communicator(r));
    ctxs.push_back(std::make_unique<RankContext>(r, comms.back().get(),
                                                 manifest, inputs, timeoutS));
  }
  std::vector<RankOutcome> out(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      ScopedContext scope(ctxs[r].get());
      out[r].rc = body(r);
      if (const char *e = pipeopt_rt_last_error())
        out[r].error = e;
      comms[r]->close();
    });
  for (auto &t : threads)
    t.join();
  if (keep) {
    for (auto &c : ctxs)
      c->comm = nullptr;
    *keep = std::move(ctxs);
  }
  return out;
}

TEST(Abi, SendRecvF32) {
  auto out = runRanks(2, 5, [](int rank) -> int32_t {
    std::vector<float> buf(32);
    MemRef<2> m(buf.data(), {4, 8});
    if (rank == 0) {
      for (int i = 0; i < 32; ++i)
        buf[i] = float(i) * 0.5f;
      return _mlir_ciface_pipeopt_rt_send_f32(1, 0, 1, 2, 0, 0, m.get());
    }
    int32_t rc = _mlir_ciface_pipeopt_rt_recv_f32(0, 0, 1, 2, 0, 0, m.get());
    for (int i = 0; i < 32; ++i)
      if (buf[i] != float(i) * 0.5f)
        return 99;
    return rc;
  });
  EXPECT_EQ(out[0].rc, 0) << out[0].error;
  EXPECT_EQ(out[1].rc, 0) << out[1].error;
}

TEST(Abi, EveryDTypeRoundTrips) {
  auto out = runRanks(2, 5, [](int rank) -> int32_t {
    int32_t rc = 0;
#define PIPEOPT_RT_DTYPE(Suffix, CType, DTypeEnum, Bytes)                      \
  {                                                                            \
    CType v[3] = {CType(1), CType(0), CType(1)};                               \
    CType w[3] = {CType(0), CType(0), CType(0)};                               \
    MemRef<1> mv(v, {3}), mw(w, {3});                                          \
    if (rank == 0)                                                             \
      rc |= _mlir_ciface_pipeopt_rt_send_##Suffix(1, 0, 1, 0, 0, 0, mv.get()); \
    else {                                                                     \
      rc |= _mlir_ciface_pipeopt_rt_recv_##Suffix(0, 0, 1, 0, 0, 0, mw.get()); \
      if (w[0] != v[0] || w[1] != v[1] || w[2] != v[2])                        \
        rc |= 64;                                                              \
    }                                                                          \
  }
#include "pipeopt/runtime/RuntimeFunctions.def"
    return rc;
  });
  EXPECT_EQ(out[0].rc, 0) << out[0].error;
  EXPECT_EQ(out[1].rc, 0) << out[1].error;
}

TEST(Abi, StridedBuffersArePackedAndUnpacked) {
  auto out = runRanks(2, 5, [](int rank) -> int32_t {
    if (rank == 0) {
      // A 3x2 transposed view of a row-major 2x3 array {0..5}.
      float a[6] = {0, 1, 2, 3, 4, 5};
      MemRef<2> t(a, {3, 2}, {1, 3});
      return _mlir_ciface_pipeopt_rt_send_f32(1, 0, 1, 0, 0, 0, t.get());
    }
    // Receive into column 1 of a 3x4 array (strides {4, 1}? no: a 3x2 view
    // with strides {4, 2}, offset 1).
    float b[12] = {0};
    MemRef<2> v(b, {3, 2}, {4, 2}, 1);
    int32_t rc = _mlir_ciface_pipeopt_rt_recv_f32(0, 0, 1, 0, 0, 0, v.get());
    // transposed: row i = (a[i], a[i+3]) = (i, i+3)
    for (int i = 0; i < 3; ++i)
      if (b[4 * i + 1] != float(i) || b[4 * i + 3] != float(i + 3))
        return 99;
    if (b[0] != 0 || b[2] != 0)
      return 98;
    return rc;
  });
  EXPECT_EQ(out[0].rc, 0) << out[0].error;
  EXPECT_EQ(out[1].rc, 0) << out[1].error;
}

TEST(Abi, ShapeMismatchNamesRankStageMicrobatch) {
  auto out = runRanks(2, 5, [](int rank) -> int32_t {
    std::vector<float> buf(64);
    if (rank == 0) {
      MemRef<2> m(buf.data(), {4, 16});
      return _mlir_ciface_pipeopt_rt_send_f32(1, 0, 1, 2, 0, 0, m.get());
    }
    MemRef<2> m(buf.data(), {4, 8});
    return _mlir_ciface_pipeopt_rt_recv_f32(0, 0, 1, 2, 0, 0, m.get());
  });
  EXPECT_EQ(out[0].rc, 0);
  EXPECT_NE(out[1].rc, 0);
  EXPECT_EQ(out[1].error,
            "rank 1: recv for stage 1 microbatch 2 value 0 expected f32[4x8] "
            "(128 bytes) but rank 0 sent f32[4x16] (256 bytes)");
}

TEST(Abi, DTypeMismatch) {
  auto out = runRanks(2, 5, [](int rank) -> int32_t {
    double d[2] = {1, 2};
    float f[2];
    if (rank == 0) {
      MemRef<1> m(d, {2});
      return _mlir_ciface_pipeopt_rt_send_f64(1, 0, 1, 0, 0, 0, m.get());
    }
    MemRef<1> m(f, {2});
    return _mlir_ciface_pipeopt_rt_recv_f32(0, 0, 1, 0, 0, 0, m.get());
  });
  EXPECT_EQ(out[1].error,
            "rank 1: recv for stage 1 microbatch 0 value 0 expected f32[2] (8 "
            "bytes) but rank 0 sent f64[2] (16 bytes)");
}

TEST(Abi, OrderMismatchAndPoisoning) {
  auto out = runRanks(2, 5, [](int rank) -> int32_t {
    float v[4] = {0};
    MemRef<1> m(v, {4});
    if (rank == 0) {
      _mlir_ciface_pipeopt_rt_send_f32(1, 0, 1, 3, 0, 0, m.get());
      return 0;
    }
    int32_t rc = _mlir_ciface_pipeopt_rt_recv_f32(0, 0, 1, 2, 0, 0, m.get());
    if (rc == 0)
      return 97;
    // Poisoned: even a valid call fails now, immediately.
    int32_t rc2 = pipeopt_rt_action_begin(0, 1, 0);
    return rc2 != 0 ? rc : 96;
  });
  EXPECT_NE(out[1].rc, 0);
  EXPECT_NE(out[1].rc, 96);
  EXPECT_NE(out[1].error.find("rank 1: recv for stage 1 microbatch 2 value 0 "
                              "(activation from rank 0 stage 0) but rank 0 "
                              "sent stage 0 -> 1 microbatch 3 value 0"),
            std::string::npos)
      << out[1].error;
}

TEST(Abi, TimeoutWhenPeerNeverSends) {
  auto start = std::chrono::steady_clock::now();
  std::atomic<bool> done{false};
  auto out = runRanks(2, 0.5, [&](int rank) -> int32_t {
    if (rank == 0) {
      // Alive but never sends (a stall); wait until rank 1 gave up.
      while (!done)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return 0;
    }
    float v[2];
    MemRef<1> m(v, {2});
    int32_t rc = _mlir_ciface_pipeopt_rt_recv_f32(0, 0, 1, 0, 0, 0, m.get());
    done = true;
    return rc;
  });
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           start)
                 .count();
  EXPECT_NE(out[1].rc, 0);
  EXPECT_GE(s, 0.45);
  EXPECT_LT(s, 5.0);
  EXPECT_NE(out[1].error.find("rank 1: recv for stage 1 microbatch 0 value 0"),
            std::string::npos)
      << out[1].error;
  EXPECT_NE(out[1].error.find("timed out after 0.5 s waiting for rank 0"),
            std::string::npos)
      << out[1].error;
}

TEST(Abi, DeadPeerFailsWaitingRecv) {
  auto start = std::chrono::steady_clock::now();
  auto out = runRanks(2, 30, [&](int rank) -> int32_t {
    if (rank == 0)
      return 1; // the thread "dies" without sending; runRanks closes it
    float v[2];
    MemRef<1> m(v, {2});
    return _mlir_ciface_pipeopt_rt_recv_f32(0, 0, 1, 5, 0, 1, m.get());
  });
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           start)
                 .count();
  EXPECT_NE(out[1].rc, 0);
  EXPECT_LT(s, 10.0); // not the 30 s timeout
  EXPECT_NE(out[1].error.find("rank 1: recv for stage 1 microbatch 5 value 0 "
                              "(gradient from rank 0 stage 0): rank 0 exited"),
            std::string::npos)
      << out[1].error;
}

TEST(Abi, NoContextIsAnError) {
  float v[1];
  MemRef<1> m(v, {1});
  EXPECT_NE(_mlir_ciface_pipeopt_rt_send_f32(0, 0, 0, 0, 0, 0, m.get()), 0);
  EXPECT_EQ(pipeopt_rt_last_error(), nullptr);
  EXPECT_EQ(pipeopt_rt_abi_version(), PIPEOPT_RT_ABI_VERSION);
}

TEST(Abi, BadDescriptorAndPeer) {
  auto out = runRanks(1, 1, [](int) -> int32_t {
    return _mlir_ciface_pipeopt_rt_send_f32(0, 0, 1, 0, 0, 0, nullptr);
  });
  EXPECT_NE(out[0].error.find("null memref descriptor"), std::string::npos);
  out = runRanks(1, 1, [](int) -> int32_t {
    float v[1];
    MemRef<1> m(v, {1});
    return _mlir_ciface_pipeopt_rt_send_f32(3, 0, 1, 0, 0, 0, m.get());
  });
  EXPECT_NE(out[0].error.find("peer rank 3 is out of range"),
            std::string::npos)
      << out[0].error;
}

TEST(Abi, InputsOutputsAndActions) {
  Manifest man = parseManifest(R"({"num_ranks": 1, "num_stages": 1,
      "num_microbatches": 2,
      "inputs": [{"index": 0, "shape": [2], "dtype": "i32",
                  "microbatched": true},
                 {"index": 1, "shape": [], "dtype": "f64"}],
      "outputs": [{"index": 0, "shape": [2], "dtype": "i32"},
                  {"index": 1, "shape": [], "dtype": "f64",
                   "microbatched": false}]})",
                               "m");
  InputStore inputs;
  HostTensor x;
  x.dtype = DType::I32;
  x.shape = {2, 2};
  int32_t xv[4] = {1, 2, 3, 4};
  x.data.assign(reinterpret_cast<uint8_t *>(xv),
                reinterpret_cast<uint8_t *>(xv) + 16);
  inputs.set(man.inputs[0], 2, x);
  HostTensor w;
  w.dtype = DType::F64;
  double wv = 2.5;
  w.data.assign(reinterpret_cast<uint8_t *>(&wv),
                reinterpret_cast<uint8_t *>(&wv) + 8);
  inputs.set(man.inputs[1], 2, w);

  std::vector<std::unique_ptr<RankContext>> ctxs;
  auto out = runRanks(
      1, 1,
      [](int) -> int32_t {
        int32_t buf[2];
        double s;
        MemRef<1> mb(buf, {2});
        MemRef<0> ms(&s);
        if (pipeopt_rt_action_begin(0, 0, 1) ||
            _mlir_ciface_pipeopt_rt_input_i32(0, 1, mb.get()) ||
            _mlir_ciface_pipeopt_rt_input_f64(1, 1, ms.get()))
          return 1;
        if (buf[0] != 3 || buf[1] != 4 || s != 2.5)
          return 2;
        buf[0] *= 10;
        if (_mlir_ciface_pipeopt_rt_output_i32(0, 1, mb.get()) ||
            _mlir_ciface_pipeopt_rt_output_f64(1, 0, ms.get()) ||
            pipeopt_rt_action_end(0, 0, 1))
          return 3;
        // Wrong shape for input 0: error naming the input and microbatch.
        int32_t big[3];
        MemRef<1> mbig(big, {3});
        return _mlir_ciface_pipeopt_rt_input_i32(0, 0, mbig.get());
      },
      &man, &inputs, &ctxs);
  EXPECT_EQ(out[0].error, "rank 0: input 0 for microbatch 0: the program reads "
                          "i32[3] but the manifest declares i32[2]");
  ASSERT_EQ(ctxs.size(), 1u);
  RankContext &ctx = *ctxs[0];
  ASSERT_EQ(ctx.events.size(), 1u);
  EXPECT_EQ(ctx.events[0].microbatch, 1);
  EXPECT_GE(ctx.events[0].endS, ctx.events[0].beginS);
  ASSERT_EQ(ctx.outputs.size(), 2u);
  const HostTensor &o0 = ctx.outputs.at({0, 1});
  int32_t o0v[2];
  std::memcpy(o0v, o0.data.data(), 8);
  EXPECT_EQ(o0v[0], 30);
  EXPECT_EQ(ctx.outputs.count({1, -1}), 1u);
}

TEST(Abi, UnbalancedActionsAreErrors) {
  auto out = runRanks(1, 1, [](int) -> int32_t {
    if (pipeopt_rt_action_begin(1, 0, 0))
      return 5;
    return pipeopt_rt_action_end(0, 0, 0);
  });
  EXPECT_NE(out[0].error.find("action end F for stage 0 microbatch 0 does not "
                              "match the open action B for stage 0"),
            std::string::npos)
      << out[0].error;
  out = runRanks(1, 1, [](int) -> int32_t {
    return pipeopt_rt_action_begin(7, 0, 0);
  });
  EXPECT_NE(out[0].error.find("invalid action kind 7"), std::string::npos);
}

TEST(Abi, EveryDefEntryIsExported) {
  void *self = dlopen(nullptr, RTLD_NOW);
  ASSERT_NE(self, nullptr);
  int count = 0;
#define PIPEOPT_RT_EXPECT_SYM_(Suffix, CType, DTypeEnum, Bytes, Name)          \
  EXPECT_NE(dlsym(RTLD_DEFAULT, "_mlir_ciface_" #Name "_" #Suffix), nullptr)   \
      << #Name "_" #Suffix;                                                    \
  ++count;
#define PIPEOPT_RT_TYPED_FN(Name, Ret, Params)                                 \
  PIPEOPT_RT_DTYPE_LIST(PIPEOPT_RT_EXPECT_SYM_, Name)
#define PIPEOPT_RT_EXPECT_FLOAT_SYM_(Suffix, CType, Name)                      \
  EXPECT_NE(dlsym(RTLD_DEFAULT, "_mlir_ciface_" #Name "_" #Suffix), nullptr)   \
      << #Name "_" #Suffix;                                                    \
  ++count;
#define PIPEOPT_RT_FLOAT_FN(Name, Ret, Params)                                 \
  PIPEOPT_RT_FLOAT_DTYPE_LIST(PIPEOPT_RT_EXPECT_FLOAT_SYM_, Name)
#define PIPEOPT_RT_FN(Name, Ret, Params)                                       \
  EXPECT_NE(dlsym(RTLD_DEFAULT, #Name), nullptr) << #Name;                     \
  EXPECT_NE(dlsym(RTLD_DEFAULT, "_mlir_ciface_" #Name), nullptr) << #Name;     \
  ++count;
#include "pipeopt/runtime/RuntimeFunctions.def"
  // 4 typed functions x 8 dtypes, 2 kernels x {f32, f64}, 3 untyped.
  EXPECT_EQ(count, 4 * 8 + 2 * 2 + 3);
}

} // namespace
