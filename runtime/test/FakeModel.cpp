//===- FakeModel.cpp - A hand-written "compiled model" for tests -*- C++
//-*-===//
//
// Stands in for a model .so produced by the compiler: exports
// pipeopt_rank_0/1 (two stages, one per rank, GPipe order: all forwards, then
// all full backwards) and pipeopt_single_0 (both stages on one rank, sending
// to itself), calling only the C ABI. Inputs: 0 = x f32[2x3] microbatched,
// 1 = w f32[3] shared. Outputs: 0 = y = x*w + 1 per microbatch, 1 = sum over
// microbatches of g = 2*y (not microbatched). Rank 1 sends g from a
// transposed (non-contiguous) buffer.
//
// A training step too (pipeopt_train_0 on one rank, pipeopt_train_split_0/1
// on two, with microbatches 0-1 on rank 0 and 2-3 on rank 1): per
// microbatch, y = x * w (broadcast over rows), loss = mean(y^2) over its 6
// elements and grad_w[j] = sum_i 2 * y[i][j] * x[i][j] / 6. Outputs: 0 =
// loss f32[] and 1 = grad_w f32[3], both averaged over microbatches
// ("reduce": "mean"), 2 = y f32[2x3] per microbatch. The gradient is
// written from a strided (every other element) buffer.
//
// PIPEOPT_FAKE_MODEL_BUG selects a fault: "shape" (rank 1 expects f32[2x4]),
// "stall" (rank 0 returns without sending), "fail" (rank 0 returns 1),
// "exit" (rank 0 process exits immediately), "kill" (rank 0 process is
// killed by SIGKILL); for the training step: "skip-mb3" (the gradient of
// microbatch 3 is never written), "twice" (the gradient of microbatch 0 is
// written twice), "overlap" (rank 1 of the split runs microbatches 1-3).
//
//===----------------------------------------------------------------------===//

#include "TestMemRef.h"

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

using pipeopt_test::MemRef;

namespace {

constexpr int kM = 4;

const char *bug() {
  const char *b = std::getenv("PIPEOPT_FAKE_MODEL_BUG");
  return b ? b : "";
}

#define CHECK(call)                                                            \
  do {                                                                         \
    int32_t rc_ = (call);                                                      \
    if (rc_)                                                                   \
      return rc_;                                                              \
  } while (0)

/// Stage 0 forward of microbatch mb: h = x * w, sent to `peer`.
int32_t stage0Forward(int mb, int peer) {
  float x[6], w[3], h[6];
  MemRef<2> mx(x, {2, 3}), mh(h, {2, 3});
  MemRef<1> mw(w, {3});
  CHECK(pipeopt_rt_action_begin(PIPEOPT_RT_ACTION_F, 0, mb));
  CHECK(_mlir_ciface_pipeopt_rt_input_f32(0, mb, mx.get()));
  // w is shared: like the compiler's code, read it for one microbatch per
  // call (the runtime rejects reads of a shared input for two microbatches).
  CHECK(_mlir_ciface_pipeopt_rt_input_f32(1, 0, mw.get()));
  for (int i = 0; i < 6; ++i)
    h[i] = x[i] * w[i % 3];
  CHECK(pipeopt_rt_action_end(PIPEOPT_RT_ACTION_F, 0, mb));
  CHECK(_mlir_ciface_pipeopt_rt_send_f32(peer, 0, 1, mb, 0, 0, mh.get()));
  return 0;
}

/// Stage 1 forward + backward of microbatch mb.
int32_t stage1(int mb, int peer) {
  float h[6], y[6], gt[6];
  MemRef<2> mh(h, {2, 3}), my(y, {2, 3});
  if (std::strcmp(bug(), "shape") == 0) {
    float h2[8];
    MemRef<2> mh2(h2, {2, 4});
    CHECK(_mlir_ciface_pipeopt_rt_recv_f32(peer, 0, 1, mb, 0, 0, mh2.get()));
  }
  CHECK(_mlir_ciface_pipeopt_rt_recv_f32(peer, 0, 1, mb, 0, 0, mh.get()));
  CHECK(pipeopt_rt_action_begin(PIPEOPT_RT_ACTION_F, 1, mb));
  for (int i = 0; i < 6; ++i)
    y[i] = h[i] + 1.0f;
  CHECK(pipeopt_rt_action_end(PIPEOPT_RT_ACTION_F, 1, mb));
  CHECK(_mlir_ciface_pipeopt_rt_output_f32(0, mb, my.get()));
  CHECK(pipeopt_rt_action_begin(PIPEOPT_RT_ACTION_BW, 1, mb));
  // g stored transposed: gt[j*2 + i] = g[i][j]; the view {2,3} strides {1,2}.
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      gt[j * 2 + i] = 2.0f * y[i * 3 + j];
  MemRef<2> mg(gt, {2, 3}, {1, 2});
  CHECK(pipeopt_rt_action_end(PIPEOPT_RT_ACTION_BW, 1, mb));
  CHECK(_mlir_ciface_pipeopt_rt_send_f32(peer, 1, 0, mb, 0, 1, mg.get()));
  return 0;
}

/// Stage 0 backward of microbatch mb: acc += g.
int32_t stage0Backward(int mb, int peer, float *acc) {
  float g[6];
  MemRef<2> mg(g, {2, 3});
  CHECK(_mlir_ciface_pipeopt_rt_recv_f32(peer, 1, 0, mb, 0, 1, mg.get()));
  CHECK(pipeopt_rt_action_begin(PIPEOPT_RT_ACTION_BW, 0, mb));
  for (int i = 0; i < 6; ++i)
    acc[i] += g[i];
  CHECK(pipeopt_rt_action_end(PIPEOPT_RT_ACTION_BW, 0, mb));
  return 0;
}

} // namespace

extern "C" __attribute__((visibility("default"))) int32_t pipeopt_rank_0(void) {
  if (std::strcmp(bug(), "stall") == 0)
    return 0;
  if (std::strcmp(bug(), "fail") == 0)
    return 1;
  if (std::strcmp(bug(), "exit") == 0)
    _exit(3);
  if (std::strcmp(bug(), "kill") == 0)
    raise(SIGKILL);
  float acc[6] = {0};
  for (int mb = 0; mb < kM; ++mb)
    CHECK(stage0Forward(mb, 1));
  for (int mb = 0; mb < kM; ++mb)
    CHECK(stage0Backward(mb, 1, acc));
  MemRef<2> ma(acc, {2, 3});
  CHECK(_mlir_ciface_pipeopt_rt_output_f32(1, -1, ma.get()));
  return 0;
}

extern "C" __attribute__((visibility("default"))) int32_t pipeopt_rank_1(void) {
  for (int mb = 0; mb < kM; ++mb)
    CHECK(stage1(mb, 0));
  return 0;
}

/// Both stages on rank 0 (self send/recv), for 1-rank manifests.
extern "C" __attribute__((visibility("default"))) int32_t
pipeopt_single_0(void) {
  float acc[6] = {0};
  for (int mb = 0; mb < kM; ++mb) {
    CHECK(stage0Forward(mb, 0));
    CHECK(stage1(mb, 0));
    CHECK(stage0Backward(mb, 0, acc));
  }
  MemRef<2> ma(acc, {2, 3});
  CHECK(_mlir_ciface_pipeopt_rt_output_f32(1, -1, ma.get()));
  return 0;
}

//===----------------------------------------------------------------------===//
// Training step
//===----------------------------------------------------------------------===//

namespace {

/// F+B+W of microbatch mb: loss, gradient of w, and y.
int32_t trainStep(int mb) {
  float x[6], w[3], y[6], loss = 0, grad[6] = {0};
  MemRef<2> mx(x, {2, 3}), my(y, {2, 3});
  MemRef<1> mw(w, {3});
  CHECK(pipeopt_rt_action_begin(PIPEOPT_RT_ACTION_F, 0, mb));
  CHECK(_mlir_ciface_pipeopt_rt_input_f32(0, mb, mx.get()));
  CHECK(_mlir_ciface_pipeopt_rt_input_f32(1, 0, mw.get()));
  for (int i = 0; i < 6; ++i) {
    y[i] = x[i] * w[i % 3];
    loss += y[i] * y[i] / 6.0f;
    grad[2 * (i % 3)] += 2.0f * y[i] * x[i] / 6.0f;
  }
  CHECK(pipeopt_rt_action_end(PIPEOPT_RT_ACTION_F, 0, mb));
  MemRef<0> ml(&loss);
  MemRef<1> mg(grad, {3}, {2});
  CHECK(_mlir_ciface_pipeopt_rt_output_f32(0, mb, ml.get()));
  if (!(std::strcmp(bug(), "skip-mb3") == 0 && mb == 3))
    CHECK(_mlir_ciface_pipeopt_rt_output_f32(1, mb, mg.get()));
  if (std::strcmp(bug(), "twice") == 0 && mb == 0)
    CHECK(_mlir_ciface_pipeopt_rt_output_f32(1, mb, mg.get()));
  CHECK(_mlir_ciface_pipeopt_rt_output_f32(2, mb, my.get()));
  return 0;
}

} // namespace

extern "C" __attribute__((visibility("default"))) int32_t
pipeopt_train_0(void) {
  for (int mb = 0; mb < kM; ++mb)
    CHECK(trainStep(mb));
  return 0;
}

extern "C" __attribute__((visibility("default"))) int32_t
pipeopt_train_split_0(void) {
  for (int mb = 0; mb < kM / 2; ++mb)
    CHECK(trainStep(mb));
  return 0;
}

extern "C" __attribute__((visibility("default"))) int32_t
pipeopt_train_split_1(void) {
  int first = std::strcmp(bug(), "overlap") == 0 ? kM / 2 - 1 : kM / 2;
  for (int mb = first; mb < kM; ++mb)
    CHECK(trainStep(mb));
  return 0;
}

//===----------------------------------------------------------------------===//
// Training with parameters (manifest "parameters"; pipeopt_rt_gradient)
//===----------------------------------------------------------------------===//
//
// y = x * w + b per microbatch (x f32[2x3] input 0, microbatched; w f32[3]
// input 1 and b f32[3] input 2 are parameters), loss = mean(y^2) over its 6
// elements. Stage 0: h = x * w; stage 1: y = h + b and the loss. Backward:
// dy = 2 y / 6, grad_b[j] = sum_i dy[i][j], grad_w[j] = sum_i dy[i][j] x[i][j].
// Each F stashes its 24 bytes (x, y) until its backward.
//
//   pipeopt_ptrain_0        one rank, both stages, F F BW BW per microbatch
//   pipeopt_ppipe_0/1       stage s on rank s, GPipe order (all F, all BW)
//   pipeopt_pdp_0/1         data parallel: microbatches 0-1 on rank 0, 2-3
//                           on rank 1, both ranks keep both parameters
//
// Faults (PIPEOPT_FAKE_MODEL_BUG): "tied" (ptrain reports grad_w in two
// halves, from stage 0 and stage 1), "p-none" (pdp rank 1 reports no grad_w),
// "p-skip3" (pdp rank 1 reports no grad_w for microbatch 3), "p-unknown"
// (ptrain reports a gradient of input 0), "die5" (the process exits in the
// 5th call of pipeopt_pdp_0).

namespace {

struct PTrainMb {
  float x[6], w[3], b[3], h[6], y[6], dy[6];
};

int32_t pForward0(PTrainMb &s, int mb) {
  MemRef<2> mx(s.x, {2, 3});
  MemRef<1> mw(s.w, {3});
  CHECK(pipeopt_rt_action_begin(PIPEOPT_RT_ACTION_F, 0, mb));
  CHECK(_mlir_ciface_pipeopt_rt_input_f32(0, mb, mx.get()));
  CHECK(_mlir_ciface_pipeopt_rt_input_f32(1, 0, mw.get()));
  for (int i = 0; i < 6; ++i)
    s.h[i] = s.x[i] * s.w[i % 3];
  CHECK(pipeopt_rt_action_end(PIPEOPT_RT_ACTION_F, 0, mb));
  CHECK(pipeopt_rt_stash(0, mb, 24));
  return 0;
}

int32_t pForward1(PTrainMb &s, int mb) {
  MemRef<1> mb_(s.b, {3});
  float loss = 0;
  CHECK(pipeopt_rt_action_begin(PIPEOPT_RT_ACTION_F, 1, mb));
  CHECK(_mlir_ciface_pipeopt_rt_input_f32(2, 0, mb_.get()));
  for (int i = 0; i < 6; ++i) {
    s.y[i] = s.h[i] + s.b[i % 3];
    loss += s.y[i] * s.y[i] / 6.0f;
  }
  CHECK(pipeopt_rt_action_end(PIPEOPT_RT_ACTION_F, 1, mb));
  MemRef<0> ml(&loss);
  CHECK(_mlir_ciface_pipeopt_rt_output_f32(0, mb, ml.get()));
  CHECK(pipeopt_rt_stash(1, mb, 24));
  return 0;
}

int32_t pBackward1(PTrainMb &s, int mb) {
  float gb[3] = {0, 0, 0};
  CHECK(pipeopt_rt_action_begin(PIPEOPT_RT_ACTION_BW, 1, mb));
  for (int i = 0; i < 6; ++i) {
    s.dy[i] = 2.0f * s.y[i] / 6.0f;
    gb[i % 3] += s.dy[i];
  }
  MemRef<1> mg(gb, {3});
  CHECK(_mlir_ciface_pipeopt_rt_gradient_f32(2, 1, mb, mg.get()));
  CHECK(pipeopt_rt_action_end(PIPEOPT_RT_ACTION_BW, 1, mb));
  CHECK(pipeopt_rt_stash(1, mb, 0));
  return 0;
}

/// `report` false: compute but do not report grad_w.
int32_t pBackward0(PTrainMb &s, int mb, bool report = true) {
  float gw[3] = {0, 0, 0};
  CHECK(pipeopt_rt_action_begin(PIPEOPT_RT_ACTION_BW, 0, mb));
  for (int i = 0; i < 6; ++i)
    gw[i % 3] += s.dy[i] * s.x[i];
  MemRef<1> mg(gw, {3});
  if (std::strcmp(bug(), "tied") == 0) {
    // Two halves (exact in binary) from two stages: they add up.
    float half[3] = {gw[0] / 2, gw[1] / 2, gw[2] / 2};
    MemRef<1> mh(half, {3});
    CHECK(_mlir_ciface_pipeopt_rt_gradient_f32(1, 0, mb, mh.get()));
    CHECK(_mlir_ciface_pipeopt_rt_gradient_f32(1, 1, mb, mh.get()));
  } else if (report) {
    CHECK(_mlir_ciface_pipeopt_rt_gradient_f32(1, 0, mb, mg.get()));
  }
  if (std::strcmp(bug(), "p-unknown") == 0)
    CHECK(_mlir_ciface_pipeopt_rt_gradient_f32(0, 0, mb, mg.get()));
  CHECK(pipeopt_rt_action_end(PIPEOPT_RT_ACTION_BW, 0, mb));
  CHECK(pipeopt_rt_stash(0, mb, 0));
  return 0;
}

int32_t pStep(int mb, bool reportW = true) {
  PTrainMb s;
  CHECK(pForward0(s, mb));
  CHECK(pForward1(s, mb));
  CHECK(pBackward1(s, mb));
  CHECK(pBackward0(s, mb, reportW));
  return 0;
}

} // namespace

extern "C" __attribute__((visibility("default"))) int32_t
pipeopt_ptrain_0(void) {
  for (int mb = 0; mb < kM; ++mb)
    CHECK(pStep(mb));
  return 0;
}

extern "C" __attribute__((visibility("default"))) int32_t
pipeopt_ppipe_0(void) {
  PTrainMb s[kM];
  for (int mb = 0; mb < kM; ++mb) {
    CHECK(pForward0(s[mb], mb));
    MemRef<2> mh(s[mb].h, {2, 3});
    CHECK(_mlir_ciface_pipeopt_rt_send_f32(1, 0, 1, mb, 0, 0, mh.get()));
  }
  for (int mb = 0; mb < kM; ++mb) {
    MemRef<2> md(s[mb].dy, {2, 3});
    CHECK(_mlir_ciface_pipeopt_rt_recv_f32(1, 1, 0, mb, 0, 1, md.get()));
    CHECK(pBackward0(s[mb], mb));
  }
  return 0;
}

extern "C" __attribute__((visibility("default"))) int32_t
pipeopt_ppipe_1(void) {
  PTrainMb s[kM];
  for (int mb = 0; mb < kM; ++mb) {
    MemRef<2> mh(s[mb].h, {2, 3});
    CHECK(_mlir_ciface_pipeopt_rt_recv_f32(0, 0, 1, mb, 0, 0, mh.get()));
    CHECK(pForward1(s[mb], mb));
  }
  for (int mb = 0; mb < kM; ++mb) {
    CHECK(pBackward1(s[mb], mb));
    MemRef<2> md(s[mb].dy, {2, 3});
    CHECK(_mlir_ciface_pipeopt_rt_send_f32(0, 1, 0, mb, 0, 1, md.get()));
  }
  return 0;
}

extern "C" __attribute__((visibility("default"))) int32_t pipeopt_pdp_0(void) {
  static int calls = 0;
  if (++calls == 5 && std::strcmp(bug(), "die5") == 0)
    _exit(3); // the process dies in step 5
  for (int mb = 0; mb < kM / 2; ++mb)
    CHECK(pStep(mb));
  return 0;
}

extern "C" __attribute__((visibility("default"))) int32_t pipeopt_pdp_1(void) {
  for (int mb = kM / 2; mb < kM; ++mb) {
    bool report = !(std::strcmp(bug(), "p-none") == 0 ||
                    (std::strcmp(bug(), "p-skip3") == 0 && mb == 3));
    CHECK(pStep(mb, report));
  }
  return 0;
}
