//===- DeviceAbiTest.cpp - The C ABI in device mode (fake CUDA) -*- C++ -*-===//
//
// Drives the ABI functions of a cuda build's rank (RankContext::device set)
// through the fake table of FakeCudaApi.h: memrefs are tracked "device"
// memory, so a host copy where none belongs, or a host pointer handed to a
// device function, shows in the counters.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaApi.h"
#include "TestMemRef.h"
#include "pipeopt/runtime/Device.h"
#include "pipeopt/runtime/Runner.h"
#include "pipeopt/runtime/pipeopt_runtime.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <thread>

using namespace pipeopt::rt;
using pipeopt_test::MemRef;

namespace {

/// `n` floats of fake device memory of the calling (bound) thread.
struct DevFloats {
  explicit DevFloats(size_t n) : n(n) {
    void *ptr = nullptr;
    EXPECT_EQ(fake_cuda::api()->alloc(&ptr, n * sizeof(float)), 0);
    p = static_cast<float *>(ptr);
    std::memset(p, 0, n * sizeof(float));
  }
  ~DevFloats() { fake_cuda::api()->free(p); }
  float &operator[](size_t i) { return p[i]; }
  float *p;
  size_t n;
};

/// A bound thread for the test's body: binds to `device` for its scope.
struct Bound {
  explicit Bound(const Device &d) : d(d) { d.bindThread(0); }
  ~Bound() { d.unbindThread(); }
  const Device &d;
};

std::string lastError() {
  const char *e = pipeopt_rt_last_error();
  return e ? e : "";
}

const char *kIoManifest = R"({
  "num_ranks": 1, "num_stages": 1, "num_microbatches": 2, "target": "cuda",
  "inputs": [{"index": 0, "shape": [2, 3], "dtype": "f32",
              "microbatched": true}],
  "outputs": [{"index": 0, "shape": [2, 3], "dtype": "f32"}]})";

InputStore ioInputs(const Manifest &m) {
  InputStore in;
  HostTensor t;
  t.dtype = DType::F32;
  t.shape = {2, 2, 3};
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i)
    x[i] = float(i) + 0.5f;
  t.data.resize(48);
  std::memcpy(t.data.data(), x.data(), 48);
  in.set(m.inputs[0], 2, t);
  return in;
}

TEST(DeviceAbi, InputAndOutputCrossOnceEach) {
  fake_cuda::reset();
  Manifest m = parseManifest(kIoManifest, "io");
  InputStore in = ioInputs(m);
  Device dev(fake_cuda::api(), 0);
  Bound bound(dev);
  RankContext ctx(0, nullptr, &m, &in, 5);
  ctx.device = &dev;
  ScopedContext scope(&ctx);
  DevFloats buf(6);
  MemRef<2> mr(buf.p, {2, 3});
  for (int mb = 0; mb < 2; ++mb) {
    ASSERT_EQ(_mlir_ciface_pipeopt_rt_input_f32(0, mb, mr.get()), 0)
        << lastError();
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(buf[i], float(mb * 6 + i) + 0.5f);
    for (int i = 0; i < 6; ++i)
      buf[i] *= 2; // the "kernel"
    ASSERT_EQ(_mlir_ciface_pipeopt_rt_output_f32(0, mb, mr.get()), 0)
        << lastError();
  }
  fake_cuda::Counters c = fake_cuda::counters();
  EXPECT_EQ(c.h2d, 2);
  EXPECT_EQ(c.d2h, 2);
  EXPECT_EQ(c.d2d, 0);
  EXPECT_EQ(c.h2h, 0);
  EXPECT_EQ(c.misuses, 0);
  for (int mb = 0; mb < 2; ++mb) {
    const HostTensor &t = ctx.outputs.at({0, mb});
    const float *y = reinterpret_cast<const float *>(t.data.data());
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(y[i], 2 * (float(mb * 6 + i) + 0.5f));
  }
}

TEST(DeviceAbi, HostPointerFailsTheRank) {
  fake_cuda::reset();
  Manifest m = parseManifest(kIoManifest, "io");
  InputStore in = ioInputs(m);
  Device dev(fake_cuda::api(), 0);
  Bound bound(dev);
  RankContext ctx(0, nullptr, &m, &in, 5);
  ctx.device = &dev;
  ScopedContext scope(&ctx);
  float host[6];
  MemRef<2> mr(host, {2, 3});
  EXPECT_NE(_mlir_ciface_pipeopt_rt_input_f32(0, 1, mr.get()), 0);
  std::string e = lastError();
  EXPECT_NE(e.find("rank 0"), std::string::npos) << e;
  EXPECT_NE(e.find("input 0 for microbatch 1"), std::string::npos) << e;
  EXPECT_NE(e.find("a host pointer where device memory belongs"),
            std::string::npos)
      << e;
}

TEST(DeviceAbi, StridedViewsAreGatheredAndScatteredOnTheDevice) {
  fake_cuda::reset();
  Manifest m = parseManifest(kIoManifest, "io");
  InputStore in = ioInputs(m);
  Device dev(fake_cuda::api(), 1);
  Bound bound(dev);
  RankContext ctx(0, nullptr, &m, &in, 5);
  ctx.device = &dev;
  ScopedContext scope(&ctx);
  // A transposed view of a [3, 2] buffer: element (i, j) at j * 2 + i.
  DevFloats buf(6);
  MemRef<2> mt(buf.p, {2, 3}, {1, 2});
  ASSERT_EQ(_mlir_ciface_pipeopt_rt_input_f32(0, 1, mt.get()), 0)
      << lastError();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      EXPECT_EQ(buf[j * 2 + i], float(6 + i * 3 + j) + 0.5f);
  ASSERT_EQ(_mlir_ciface_pipeopt_rt_output_f32(0, 1, mt.get()), 0)
      << lastError();
  const float *y =
      reinterpret_cast<const float *>(ctx.outputs.at({0, 1}).data.data());
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(y[i], float(6 + i) + 0.5f);
  fake_cuda::Counters c = fake_cuda::counters();
  EXPECT_EQ(c.scatters, 1);
  EXPECT_EQ(c.gathers, 1);
  EXPECT_EQ(c.h2d, 1);
  EXPECT_EQ(c.d2h, 1);
  EXPECT_EQ(c.misuses, 0);
}

TEST(DeviceAbi, LoopbackSendRecvStaysOnTheDevice) {
  fake_cuda::reset();
  size_t before = fake_cuda::liveBytes();
  LoopbackWorld world(2);
  std::vector<std::unique_ptr<Communicator>> comms;
  std::vector<Device> devs;
  for (int r = 0; r < 2; ++r) {
    comms.push_back(world.communicator(r));
    devs.emplace_back(fake_cuda::api(), r);
  }
  std::string errors[2];
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      Bound bound(devs[r]);
      RankContext ctx(r, comms[r].get(), nullptr, nullptr, 5);
      ctx.device = &devs[r];
      ScopedContext scope(&ctx);
      DevFloats a(32), b(32);
      MemRef<2> ma(a.p, {4, 8});
      MemRef<2> mt(b.p, {4, 8}, {1, 4}); // transposed
      if (r == 0) {
        for (int i = 0; i < 32; ++i) {
          a[i] = float(i) * 0.5f;
          b[i] = float(i) + 100;
        }
        if (_mlir_ciface_pipeopt_rt_send_f32(1, 0, 1, 2, 0, 0, ma.get()) ||
            _mlir_ciface_pipeopt_rt_send_f32(1, 0, 1, 3, 0, 0, mt.get()))
          errors[r] = lastError();
      } else {
        if (_mlir_ciface_pipeopt_rt_recv_f32(0, 0, 1, 2, 0, 0, mt.get()) ||
            _mlir_ciface_pipeopt_rt_recv_f32(0, 0, 1, 3, 0, 0, ma.get())) {
          errors[r] = lastError();
        } else {
          // mt (transposed) got a; ma got the transposed b.
          for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 8; ++j) {
              if (b[j * 4 + i] != float(i * 8 + j) * 0.5f)
                errors[r] = "wrong element of the first message";
              if (a[i * 8 + j] != float(j * 4 + i) + 100)
                errors[r] = "wrong element of the second message";
            }
        }
      }
      comms[r]->close();
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  fake_cuda::Counters c = fake_cuda::counters();
  EXPECT_EQ(c.h2d, 0);
  EXPECT_EQ(c.d2h, 0);
  EXPECT_EQ(c.h2h, 0);
  EXPECT_EQ(c.misuses, 0);
  EXPECT_EQ(c.d2d, 3); // two into message buffers, one out of them
  EXPECT_EQ(c.gathers, 1);
  EXPECT_EQ(c.scatters, 1);
  EXPECT_EQ(fake_cuda::liveBytes(), before) << "a message buffer leaked";
}

TEST(DeviceAbi, KernelErrorFailsTheNextCallNamingTheAction) {
  fake_cuda::reset();
  Manifest m = parseManifest(kIoManifest, "io");
  InputStore in = ioInputs(m);
  Device dev(fake_cuda::api(), 0);
  Bound bound(dev);
  RankContext ctx(0, nullptr, &m, &in, 5);
  ctx.device = &dev;
  ScopedContext scope(&ctx);
  DevFloats buf(6);
  MemRef<2> mr(buf.p, {2, 3});
  ASSERT_EQ(pipeopt_rt_action_begin(PIPEOPT_RT_ACTION_F, 0, 1), 0)
      << lastError();
  ASSERT_EQ(_mlir_ciface_pipeopt_rt_input_f32(0, 1, mr.get()), 0)
      << lastError();
  fake_cuda::recordError("cuLaunchKernel(main_kernel): an illegal memory "
                         "access was encountered");
  EXPECT_NE(_mlir_ciface_pipeopt_rt_output_f32(0, 1, mr.get()), 0);
  std::string e = lastError();
  EXPECT_NE(e.find("rank 0: CUDA error on device 0 in action F for stage 0 "
                   "microbatch 1"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("illegal memory access"), std::string::npos) << e;
  EXPECT_TRUE(ctx.outputs.empty()); // the output was not taken
  // The rank stays failed.
  EXPECT_NE(pipeopt_rt_action_end(PIPEOPT_RT_ACTION_F, 0, 1), 0);
}

//===----------------------------------------------------------------------===//
// Parameters: the device path gives the CPU path's weights
//===----------------------------------------------------------------------===//

std::string trainManifest(const std::string &optimizer, int updateEvery,
                          const std::string &ranks = "[0]", int numRanks = 1) {
  return R"({"num_ranks": )" + std::to_string(numRanks) +
         R"(, "num_stages": 1, "num_microbatches": 2,
    "target": "cuda",
    "inputs": [{"index": 0, "shape": [2, 3], "dtype": "f32",
                "microbatched": true},
               {"index": 1, "shape": [3], "dtype": "f32"}],
    "outputs": [{"index": 0, "shape": [], "dtype": "f32",
                 "reduce": "mean"}],
    "training": {"optimizer": ")" +
         optimizer + R"(", "lr": 0.125, "weight_decay": 0.01,
                 "update_every": )" +
         std::to_string(updateEvery) + R"(},
    "parameters": [{"index": 1, "ranks": )" +
         ranks + "}]}";
}

InputStore trainInputs(const Manifest &m) {
  InputStore in;
  HostTensor x;
  x.dtype = DType::F32;
  x.shape = {2, 2, 3};
  std::vector<float> xv(12);
  for (int i = 0; i < 12; ++i)
    xv[i] = 0.25f * float(i % 5) - 0.3f;
  x.data.resize(48);
  std::memcpy(x.data.data(), xv.data(), 48);
  in.set(m.inputs[0], 2, x);
  HostTensor w;
  w.dtype = DType::F32;
  w.shape = {3};
  float wv[3] = {0.5f, -1.25f, 2.0f};
  w.data.resize(12);
  std::memcpy(w.data.data(), wv, 12);
  in.set(m.inputs[1], 2, w);
  return in;
}

/// What one copy of the parameter ended with.
struct Trained {
  std::vector<uint8_t> value;
  std::vector<double> meanGrad, first, second;
  int64_t step = 0;
  fake_cuda::Counters duringSteps; ///< device mode: the steps' copies
};

/// Runs `steps` training steps of the fake program "loss = sum(x * w)^2 /
/// 6 per microbatch" on rank `rank` of `comm` (device `device` or, with
/// null, the host), the gradient reported from a strided buffer.
Trained train(const Manifest &m, const InputStore &in, Communicator &comm,
              int rank, const Device *device, int steps, std::string *error) {
  RankContext ctx(rank, &comm, &m, &in, 5);
  ctx.device = device;
  ctx.keepMeanGradients = true; // compared below, as --save-grads keeps them
  ScopedContext scope(&ctx);
  Trained out;
  auto fail = [&](const std::string &what) {
    *error = what + ": " + lastError();
  };
  ctx.initParameters();
  initDeviceParameters(ctx);
  fake_cuda::Counters start = fake_cuda::counters();
  {
    // Buffers: device memory in device mode, host memory otherwise.
    std::vector<float> hx(6), hw(3), hg(6), hl(1);
    std::unique_ptr<DevFloats> dx, dw, dg, dl;
    float *x = hx.data(), *w = hw.data(), *g = hg.data(), *l = hl.data();
    if (device) {
      dx = std::make_unique<DevFloats>(6);
      dw = std::make_unique<DevFloats>(3);
      dg = std::make_unique<DevFloats>(6);
      dl = std::make_unique<DevFloats>(1);
      x = dx->p, w = dw->p, g = dg->p, l = dl->p;
    }
    MemRef<2> mx(x, {2, 3});
    MemRef<1> mw(w, {3});
    MemRef<1> mg(g, {3}, {2}); // every other element
    MemRef<0> ml(l);
    for (int s = 1; s <= steps; ++s) {
      ctx.beginCall();
      for (int mb = 0; mb < 2; ++mb) {
        if (_mlir_ciface_pipeopt_rt_input_f32(0, mb, mx.get()))
          return fail("input x"), out;
        // A shared input: read once per call, except by asynchronous
        // schedules, which read the current version for every microbatch.
        if ((mb == 0 || m.training.updateEvery > 0) &&
            _mlir_ciface_pipeopt_rt_input_f32(1, mb, mw.get()))
          return fail("input w"), out;
        double y = 0;
        for (int i = 0; i < 6; ++i)
          y += double(x[i]) * w[i % 3];
        *l = float(y * y / 6);
        for (int j = 0; j < 3; ++j) {
          double sx = x[j] + x[3 + j];
          g[2 * j] = float(2 * y * sx / 6);
        }
        if (_mlir_ciface_pipeopt_rt_gradient_f32(1, 0, mb, mg.get()))
          return fail("gradient"), out;
        if (_mlir_ciface_pipeopt_rt_output_f32(0, mb, ml.get()))
          return fail("output"), out;
      }
      std::string e;
      try {
        e = updateParameters(ctx, comm, s, 5);
      } catch (const std::exception &ex) {
        e = ex.what();
      }
      if (!e.empty())
        return *error = e, out;
    }
  }
  fake_cuda::Counters end = fake_cuda::counters();
  out.duringSteps.h2d = end.h2d - start.h2d;
  out.duringSteps.d2h = end.d2h - start.d2h;
  out.duringSteps.d2d = end.d2d - start.d2d;
  out.duringSteps.optimizerSteps = end.optimizerSteps - start.optimizerSteps;
  out.duringSteps.misuses = end.misuses - start.misuses;
  ParameterState &st = ctx.parameters.at(1);
  refreshHostParameter(ctx, st);
  out.value = st.value.data;
  out.meanGrad = st.meanGrad;
  out.first = st.optimizer.first.toDoubles();
  out.second = st.optimizer.second.toDoubles();
  out.step = st.optimizer.step;
  return out;
}

void expectSameTraining(const std::string &optimizer, int updateEvery) {
  SCOPED_TRACE(optimizer + " update_every " + std::to_string(updateEvery));
  fake_cuda::reset();
  Manifest m = parseManifest(trainManifest(optimizer, updateEvery), "t");
  InputStore in = trainInputs(m);
  LoopbackWorld world(1);
  auto comm = world.communicator(0);
  const int steps = 3;
  std::string hostError, deviceError;
  Trained host = train(m, in, *comm, 0, nullptr, steps, &hostError);
  ASSERT_EQ(hostError, "");
  Device dev(fake_cuda::api(), 0);
  Trained onDevice;
  {
    Bound bound(dev);
    onDevice = train(m, in, *comm, 0, &dev, steps, &deviceError);
  }
  ASSERT_EQ(deviceError, "");
  // The steps changed the weights (unless there is no optimizer).
  EXPECT_NE(host.value, in.find(1)->second.data);
  EXPECT_EQ(onDevice.value, host.value);
  EXPECT_EQ(onDevice.meanGrad, host.meanGrad);
  EXPECT_EQ(onDevice.first, host.first);
  EXPECT_EQ(onDevice.second, host.second);
  EXPECT_EQ(onDevice.step, host.step);
  // A step's copies: x in (one per microbatch), the loss out (one per
  // microbatch), the weights device-to-device; nothing else crosses.
  EXPECT_EQ(onDevice.duringSteps.h2d, steps * 2);
  EXPECT_EQ(onDevice.duringSteps.d2h, steps * 2);
  EXPECT_EQ(onDevice.duringSteps.d2d, updateEvery ? steps * 2 : steps);
  EXPECT_EQ(onDevice.duringSteps.optimizerSteps,
            updateEvery ? steps * 2 / updateEvery : steps);
  EXPECT_EQ(onDevice.duringSteps.misuses, 0);
  EXPECT_EQ(fake_cuda::counters().misuses, 0);
}

TEST(DeviceAbi, SgdStepsGiveTheCpuWeights) { expectSameTraining("sgd", 0); }
TEST(DeviceAbi, MomentumStepsGiveTheCpuWeights) {
  expectSameTraining("momentum", 0);
}
TEST(DeviceAbi, AdamwStepsGiveTheCpuWeights) { expectSameTraining("adamw", 0); }
TEST(DeviceAbi, AsynchronousUpdatesGiveTheCpuWeights) {
  expectSameTraining("adamw", 1); // PipeDream
  expectSameTraining("sgd", 2);   // PipeDream-2BW with 2 stages
}

TEST(DeviceAbi, ParameterOfTwoRanksIsReducedLikeOnTheCpu) {
  fake_cuda::reset();
  Manifest m = parseManifest(trainManifest("adamw", 0, "[0, 1]", 2), "t");
  InputStore in = trainInputs(m);
  auto run = [&](bool onDevice, Trained *out, std::string *errors) {
    LoopbackWorld world(2);
    std::vector<std::unique_ptr<Communicator>> comms;
    std::vector<Device> devs;
    for (int r = 0; r < 2; ++r) {
      comms.push_back(world.communicator(r));
      devs.emplace_back(fake_cuda::api(), r);
    }
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, r] {
        if (onDevice) {
          Bound bound(devs[r]);
          out[r] = train(m, in, *comms[r], r, &devs[r], 2, &errors[r]);
        } else {
          out[r] = train(m, in, *comms[r], r, nullptr, 2, &errors[r]);
        }
        comms[r]->close();
      });
    for (auto &t : threads)
      t.join();
  };
  Trained host[2], dev[2];
  std::string hostErrors[2], devErrors[2];
  run(false, host, hostErrors);
  run(true, dev, devErrors);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(hostErrors[r], "") << r;
    ASSERT_EQ(devErrors[r], "") << r;
    EXPECT_EQ(dev[r].value, host[r].value);
    EXPECT_EQ(dev[r].meanGrad, host[r].meanGrad);
    EXPECT_EQ(dev[r].first, host[r].first);
    EXPECT_EQ(dev[r].second, host[r].second);
  }
  EXPECT_EQ(dev[0].value, dev[1].value);
  EXPECT_EQ(fake_cuda::counters().misuses, 0);
}

TEST(DeviceAbi, AssignDevices) {
  EXPECT_EQ(assignDevices({}, {0, 1, 2}, false, 0, 2),
            (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(assignDevices({1}, {0, 1}, false, 0, 2), (std::vector<int>{1, 1}));
  EXPECT_EQ(assignDevices({}, {5}, true, 3, 2), (std::vector<int>{1}));
  EXPECT_EQ(assignDevices({1, 0}, {4}, true, 2, 2), (std::vector<int>{1}));
  try {
    assignDevices({0, 3}, {0, 1}, false, 0, 2);
    FAIL() << "device 3 of 2 accepted";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("CUDA device 3 does not exist (2 "
                                         "visible"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
