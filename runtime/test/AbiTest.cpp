//===- AbiTest.cpp - C ABI over the loopback communicator -------*- C++ -*-===//

#include "TestMemRef.h"
#include "pipeopt/runtime/Context.h"
#include "pipeopt/runtime/pipeopt_runtime.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
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
  double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
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
  double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
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
  EXPECT_NE(out[0].error.find("peer rank 3 is out of range"), std::string::npos)
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

/// A view's descriptor as pipeopt_rt_input_view writes it (rank 2).
struct ViewDesc2 {
  void *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
};

TEST(Abi, InputViewsShowTheRuntimesDataInPlace) {
  Manifest man = parseManifest(R"({"num_ranks": 1, "num_stages": 1,
      "num_microbatches": 2,
      "inputs": [{"index": 0, "shape": [2, 3], "dtype": "f32",
                  "microbatched": true},
                 {"index": 1, "shape": [3, 2], "dtype": "f32",
                  "microbatched": false}]})",
                               "m");
  InputStore inputs;
  HostTensor x, w;
  x.dtype = w.dtype = DType::F32;
  x.shape = {2, 2, 3};
  w.shape = {3, 2};
  std::vector<float> xv(12), wv(6);
  for (int i = 0; i < 12; ++i)
    xv[size_t(i)] = float(i);
  for (int i = 0; i < 6; ++i)
    wv[size_t(i)] = float(100 + i);
  auto bytes = [](const std::vector<float> &v) {
    const auto *p = reinterpret_cast<const uint8_t *>(v.data());
    return std::vector<uint8_t>(p, p + v.size() * 4);
  };
  x.data = bytes(xv);
  w.data = bytes(wv);
  inputs.set(man.inputs[0], 2, x);
  inputs.set(man.inputs[1], 2, w);
  const uint8_t *xData = inputs.find(0)->second.data.data();
  const uint8_t *wData = inputs.find(1)->second.data.data();

  struct Seen {
    void *ptr = nullptr;
    ViewDesc2 desc{};
  } seen[3];
  std::vector<std::unique_ptr<RankContext>> ctxs;
  auto out = runRanks(
      1, 1,
      [&](int) -> int32_t {
        int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s33[2] = {3, 3};
        MemRef<1> shape23(s23, {2}), shape32(s32, {2}), shape33(s33, {2});
        pipeopt_rt_unranked_memref r[3] = {};
        _mlir_ciface_pipeopt_rt_input_view_f32(&r[0], 0, 1, shape23.get());
        _mlir_ciface_pipeopt_rt_input_view_f32(&r[1], 1, 1, shape32.get());
        if (const char *e = pipeopt_rt_last_error())
          return std::printf("%s\n", e), 1;
        // The wrong shape: an error, and a view of zeros.
        _mlir_ciface_pipeopt_rt_input_view_f32(&r[2], 1, 1, shape33.get());
        for (int i = 0; i < 3; ++i) {
          if (r[i].rank != 2 || !r[i].descriptor)
            return 10 + i;
          seen[i].desc = *static_cast<ViewDesc2 *>(r[i].descriptor);
          std::free(r[i].descriptor); // the caller frees it, as MLIR does
        }
        // The zeros live as long as the thread.
        for (int i = 0; i < 9; ++i)
          if (static_cast<const float *>(seen[2].desc.aligned)[i] != 0.0f)
            return 20;
        return pipeopt_rt_action_begin(0, 0, 0); // fails: poisoned
      },
      &man, &inputs, &ctxs);
  EXPECT_EQ(out[0].error, "rank 0: input 1 for microbatch 1: the program "
                          "reads f32[3x3] but the manifest declares f32[3x2]");
  // Microbatch 1's slice of x, in place: 6 floats after the start.
  EXPECT_EQ(seen[0].desc.aligned, xData + 6 * 4);
  EXPECT_EQ(seen[0].desc.allocated, seen[0].desc.aligned);
  EXPECT_EQ(seen[0].desc.offset, 0);
  EXPECT_EQ(seen[0].desc.sizes[0], 2);
  EXPECT_EQ(seen[0].desc.sizes[1], 3);
  EXPECT_EQ(seen[0].desc.strides[0], 3);
  EXPECT_EQ(seen[0].desc.strides[1], 1);
  EXPECT_EQ(static_cast<const float *>(seen[0].desc.aligned)[5], 11.0f);
  // The shared weight, in place.
  EXPECT_EQ(seen[1].desc.aligned, wData);
  EXPECT_EQ(seen[1].desc.strides[0], 2);
  // The failed view: zeros of the requested shape (checked above),
  // elsewhere.
  EXPECT_NE(seen[2].desc.aligned, wData);
  EXPECT_EQ(seen[2].desc.sizes[0], 3);
  EXPECT_EQ(seen[2].desc.sizes[1], 3);
}

TEST(Abi, InputViewOfAnEmptyInput) {
  Manifest man = parseManifest(R"({"num_ranks": 1, "num_stages": 1,
      "num_microbatches": 1,
      "inputs": [{"index": 0, "shape": [0, 3], "dtype": "f32"}]})",
                               "m");
  InputStore inputs;
  HostTensor e;
  e.shape = {0, 3};
  inputs.set(man.inputs[0], 1, e);
  auto out = runRanks(
      1, 1,
      [](int) -> int32_t {
        int64_t s[2] = {0, 3};
        MemRef<1> shape(s, {2});
        pipeopt_rt_unranked_memref r{};
        _mlir_ciface_pipeopt_rt_input_view_f32(&r, 0, 0, shape.get());
        bool ok = r.rank == 2 && r.descriptor &&
                  static_cast<ViewDesc2 *>(r.descriptor)->aligned;
        std::free(r.descriptor);
        if (!ok)
          return 5;
        return pipeopt_rt_action_begin(0, 0, 0) ||
               pipeopt_rt_action_end(0, 0, 0);
      },
      &man, &inputs);
  EXPECT_EQ(out[0].rc, 0) << out[0].error;
  EXPECT_EQ(out[0].error, "");
}

TEST(Abi, InputViewShapeOperandErrors) {
  auto out = runRanks(1, 1, [](int) -> int32_t {
    int64_t s[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    MemRef<1> nine(s, {9});
    pipeopt_rt_unranked_memref r{};
    _mlir_ciface_pipeopt_rt_input_view_f32(&r, 0, 0, nine.get());
    int32_t rc = pipeopt_rt_action_begin(0, 0, 0);
    std::free(r.descriptor);
    return rc;
  });
  EXPECT_EQ(out[0].error,
            "rank 0: input view 0 for microbatch 0: the shape operand must be "
            "a rank-1 i64 memref of at most 8 dimensions");
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
  out = runRanks(
      1, 1, [](int) -> int32_t { return pipeopt_rt_action_begin(7, 0, 0); });
  EXPECT_NE(out[0].error.find("invalid action kind 7"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// Training builds: gradients and stashed activations
//===----------------------------------------------------------------------===//

/// Two ranks, 4 microbatches; input 1 = w f32[3] is a parameter of rank 0
/// only, input 2 = an i32[2] shared input, input 0 = microbatched data.
struct TrainAbi {
  int M;
  Manifest man;
  InputStore inputs;
  /// `microbatches`: the manifest's num_microbatches.
  explicit TrainAbi(int microbatches = 4)
      : M(microbatches), man(parseManifest(R"({"num_ranks": 2, "num_stages": 2,
      "num_microbatches": )" + std::to_string(microbatches) +
                                               R"(,
      "inputs": [{"index": 0, "shape": [2], "dtype": "f32",
                  "microbatched": true},
                 {"index": 1, "shape": [3], "dtype": "f32", "name": "w"},
                 {"index": 2, "shape": [2], "dtype": "i32"}],
      "training": {"optimizer": "sgd", "lr": 0.5},
      "parameters": [{"index": 1, "ranks": [0]}]})",
                                           "m.json")) {
    HostTensor x;
    x.dtype = DType::F32;
    x.shape = {M, 2};
    x.data.assign(size_t(8 * M), 0);
    inputs.set(man.inputs[0], M, x);
    HostTensor w;
    w.dtype = DType::F32;
    w.shape = {3};
    float wv[3] = {1, 2, 3};
    w.data.assign(reinterpret_cast<uint8_t *>(wv),
                  reinterpret_cast<uint8_t *>(wv) + 12);
    inputs.set(man.inputs[1], M, w);
    HostTensor i;
    i.dtype = DType::I32;
    i.shape = {2};
    i.data.assign(8, 0);
    inputs.set(man.inputs[2], M, i);
  }
  /// Runs `body` on rank `rank` (the other rank does nothing); returns its
  /// first error.
  std::string run(int rank, const std::function<int32_t()> &body,
                  std::vector<std::unique_ptr<RankContext>> *keep = nullptr) {
    auto out = runRanks(
        2, 1,
        [&](int r) -> int32_t {
          currentContext()->initParameters();
          return r == rank ? body() : 0;
        },
        &man, &inputs, keep);
    return out[size_t(rank)].error;
  }
};

TEST(AbiTraining, GradientsAccumulateInDouble) {
  TrainAbi t;
  std::vector<std::unique_ptr<RankContext>> ctxs;
  std::string err = t.run(
      0,
      [] {
        float a[3] = {1, 2, 3}, b[3] = {0.5f, 0.5f, 0.5f},
              c[6] = {1e8f, 0, 1, 0, -1e8f, 0};
        MemRef<1> ma(a, {3}), mb(b, {3});
        MemRef<1> mc(c, {3}, {2}); // strided
        // Microbatch 0 from two stages (a tied weight): the two add up.
        if (_mlir_ciface_pipeopt_rt_gradient_f32(1, 0, 0, ma.get()) ||
            _mlir_ciface_pipeopt_rt_gradient_f32(1, 1, 0, mb.get()) ||
            _mlir_ciface_pipeopt_rt_gradient_f32(1, 1, 3, mc.get()) ||
            _mlir_ciface_pipeopt_rt_gradient_f32(1, 1, 3, ma.get()))
          return 1;
        // The parameter reads this rank's copy, which the launcher updates.
        float w[3];
        MemRef<1> mw(w, {3});
        if (_mlir_ciface_pipeopt_rt_input_f32(1, 2, mw.get()) || w[2] != 3)
          return 2;
        float nine = 9;
        std::memcpy(currentContext()->parameters.at(1).value.data.data(), &nine,
                    4);
        if (_mlir_ciface_pipeopt_rt_input_f32(1, 2, mw.get()) || w[0] != 9)
          return 3;
        return 0;
      },
      &ctxs);
  EXPECT_EQ(err, "");
  const ParameterState &st = ctxs[0]->parameters.at(1);
  // Summed in double: the small terms next to 1e8 survive (in f32 they
  // would be lost).
  EXPECT_EQ(st.gradSum,
            (std::vector<double>{1e8 + 1.5 + 1, 2.5 + 1 + 2, 3.5 - 1e8 + 3}));
  EXPECT_EQ(st.microbatches, (std::set<int>{0, 3}));
  // Rank 1 keeps no copy; the shared input store is untouched.
  EXPECT_TRUE(ctxs[1]->parameters.empty());
  float w0;
  std::memcpy(&w0, t.inputs.find(1)->second.data.data(), 4);
  EXPECT_EQ(w0, 1.0f);
  // A new call starts from zero.
  ctxs[0]->beginCall();
  EXPECT_EQ(ctxs[0]->parameters.at(1).gradSum, (std::vector<double>{0, 0, 0}));
  EXPECT_TRUE(ctxs[0]->parameters.at(1).microbatches.empty());
}

// One microbatch per step (the unpartitioned training step): the step's
// first f32 gradient is kept as reported, in f32, with no f64 sum; a
// second contribution moves it into the f64 sum, exactly.
TEST(AbiTraining, SoleF32GradientOfOneMicrobatchStaysF32) {
  TrainAbi t(1);
  std::vector<std::unique_ptr<RankContext>> ctxs;
  std::string err = t.run(
      0,
      [] {
        const ParameterState &st = currentContext()->parameters.at(1);
        float a[3] = {1e8f, -0.0f, 3}, b[3] = {1, 0.5f, 0.25f};
        MemRef<1> ma(a, {3}), mb(b, {3});
        if (_mlir_ciface_pipeopt_rt_gradient_f32(1, 0, 0, ma.get()))
          return 1;
        if (st.soleGradient != std::vector<float>{1e8f, -0.0f, 3} ||
            !std::signbit(st.soleGradient[1]) || !st.gradSum.empty())
          return 2;
        // The same microbatch again (a tied weight's second stage).
        if (_mlir_ciface_pipeopt_rt_gradient_f32(1, 1, 0, mb.get()))
          return 3;
        if (!st.soleGradient.empty() || st.soleGradient.capacity() != 0 ||
            st.gradSum != std::vector<double>{1e8 + 1, 0.5, 3.25} ||
            std::signbit(st.gradSum[1]))
          return 4;
        return 0;
      },
      &ctxs);
  EXPECT_EQ(err, "");
  ctxs[0]->beginCall();
  EXPECT_TRUE(ctxs[0]->parameters.at(1).soleGradient.empty());
}

// With several microbatches every gradient goes into the f64 sum.
TEST(AbiTraining, GradientsOfSeveralMicrobatchesAreSummedInDouble) {
  TrainAbi t(4);
  std::string err = t.run(0, [] {
    const ParameterState &st = currentContext()->parameters.at(1);
    float a[3] = {1, 2, 3};
    MemRef<1> ma(a, {3});
    if (_mlir_ciface_pipeopt_rt_gradient_f32(1, 0, 0, ma.get()))
      return 1;
    return st.soleGradient.empty() && st.gradSum == std::vector<double>{1, 2, 3}
               ? 0
               : 2;
  });
  EXPECT_EQ(err, "");
}

TEST(AbiTraining, GradientErrors) {
  TrainAbi t;
  float g3[3] = {0, 0, 0}, g4[4] = {0, 0, 0, 0};
  MemRef<1> m3(g3, {3}), m4(g4, {4});
  int32_t i3[3] = {0, 0, 0};
  MemRef<1> mi(i3, {3});
  double d3[3] = {0, 0, 0};
  MemRef<1> md(d3, {3});
  EXPECT_EQ(t.run(0,
                  [&] {
                    return _mlir_ciface_pipeopt_rt_gradient_f32(2, 1, 0,
                                                                m3.get());
                  }),
            "rank 0: gradient of input 2 from stage 1 for microbatch 0: input "
            "2 is not a parameter of the manifest m.json (\"parameters\")");
  EXPECT_EQ(t.run(0,
                  [&] {
                    return _mlir_ciface_pipeopt_rt_gradient_f32(7, 1, 0,
                                                                m3.get());
                  }),
            "rank 0: gradient of input 7 from stage 1 for microbatch 0: input "
            "7 is not a parameter of the manifest m.json (\"parameters\")");
  EXPECT_EQ(t.run(1,
                  [&] {
                    return _mlir_ciface_pipeopt_rt_gradient_f32(1, 1, 2,
                                                                m3.get());
                  }),
            "rank 1: gradient of parameter 1 ('w') from stage 1 for "
            "microbatch 2: the manifest m.json lists the parameter on rank(s) "
            "0 (\"parameters\"), not on rank 1");
  EXPECT_EQ(t.run(0,
                  [&] {
                    return _mlir_ciface_pipeopt_rt_gradient_f32(1, 0, 1,
                                                                m4.get());
                  }),
            "rank 0: gradient of parameter 1 ('w') from stage 0 for "
            "microbatch 1: the program reports f32[4] but the manifest "
            "declares the parameter f32[3]");
  EXPECT_EQ(t.run(0,
                  [&] {
                    return _mlir_ciface_pipeopt_rt_gradient_f64(1, 0, 1,
                                                                md.get());
                  }),
            "rank 0: gradient of parameter 1 ('w') from stage 0 for "
            "microbatch 1: the program reports f64[3] but the manifest "
            "declares the parameter f32[3]");
  EXPECT_EQ(t.run(0,
                  [&] {
                    return _mlir_ciface_pipeopt_rt_gradient_i32(1, 0, 1,
                                                                mi.get());
                  }),
            "rank 0: gradient of parameter 1 ('w') from stage 0 for "
            "microbatch 1: a gradient needs f32, f64, f16 or bf16, but the "
            "program reports i32");
  EXPECT_EQ(t.run(0,
                  [&] {
                    return _mlir_ciface_pipeopt_rt_gradient_f32(1, 0, 4,
                                                                m3.get());
                  }),
            "rank 0: gradient of parameter 1 ('w') from stage 0 for "
            "microbatch 4: microbatch out of range [0, 4)");
  // Reading a parameter on a rank that keeps no copy of it.
  EXPECT_EQ(
      t.run(1,
            [&] { return _mlir_ciface_pipeopt_rt_input_f32(1, 0, m3.get()); }),
      "rank 1: input 1 ('w') for microbatch 0: the input is a parameter "
      "that the manifest m.json does not give this rank (its \"ranks\" "
      "in \"parameters\" lack rank 1), so this rank keeps no copy of it "
      "that the optimizer updates");
  // Poisoned afterwards, like every other call.
  EXPECT_NE(
      t.run(0,
            [&] {
              if (_mlir_ciface_pipeopt_rt_gradient_f32(1, 0, 4, m3.get()) == 0)
                return 0;
              return _mlir_ciface_pipeopt_rt_gradient_f32(1, 0, 0, m3.get()) ==
                             0
                         ? 0
                         : 1;
            }),
      "");
}

TEST(AbiTraining, StashKeepsTotalAndPeak) {
  TrainAbi t;
  std::vector<std::unique_ptr<RankContext>> ctxs;
  EXPECT_EQ(t.run(
                0,
                [] {
                  // F of microbatches 0 and 1 (100 B each), a split B that
                  // keeps 30 B of microbatch 0, then W frees it, F of 2.
                  return pipeopt_rt_stash(0, 0, 100) ||
                         pipeopt_rt_stash(0, 1, 100) ||
                         pipeopt_rt_stash(0, 0, 30) ||
                         _mlir_ciface_pipeopt_rt_stash(1, 0, 5) ||
                         pipeopt_rt_stash(0, 0, 0) ||
                         pipeopt_rt_stash(0, 2, 60);
                },
                &ctxs),
            "");
  EXPECT_TRUE(ctxs[0]->stashUsed);
  EXPECT_FALSE(ctxs[1]->stashUsed);
  EXPECT_EQ(ctxs[0]->stashPeakBytes, 200);
  EXPECT_EQ(ctxs[0]->stashBytes, 165);
  EXPECT_EQ(t.run(0, [] { return pipeopt_rt_stash(1, 2, -1); }),
            "rank 0: stash for stage 1 microbatch 2: negative size -1 bytes");
  EXPECT_EQ(t.run(0, [] { return pipeopt_rt_stash(2, 0, 1); }),
            "rank 0: stash for stage 2 microbatch 0: stage out of range "
            "[0, 2)");
  EXPECT_EQ(t.run(0, [] { return pipeopt_rt_stash(0, 4, 1); }),
            "rank 0: stash for stage 0 microbatch 4: microbatch out of range "
            "[0, 4)");
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
#define PIPEOPT_RT_VIEW_FN(Name, Params)                                       \
  PIPEOPT_RT_DTYPE_LIST(PIPEOPT_RT_EXPECT_SYM_, Name)
#include "pipeopt/runtime/RuntimeFunctions.def"
  // 5 typed functions x 8 dtypes, 1 view function x 8 dtypes, 2 kernels x
  // {f32, f64}, 4 untyped.
  EXPECT_EQ(count, 5 * 8 + 8 + 2 * 2 + 4);
}

} // namespace
