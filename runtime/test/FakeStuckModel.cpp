//===- FakeStuckModel.cpp - A 3-rank fake model for fault tests -*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// Exports pipeopt_rank_0/1/2: a forward-only chain of three stages, stage r
// on rank r, kMb microbatches. Rank r, per microbatch: receives a f32[4]
// activation from rank r-1 (r > 0), runs action F of stage r, sends it on
// to rank r+1 (r < 2). For FaultTest.cpp, from the environment:
//   PIPEOPT_FAKE_STUCK_RANK=r   rank r never returns from its action F of
//                               microbatch PIPEOPT_FAKE_STUCK_MB (default 1;
//                               a stage stuck in compute), or, with
//                               PIPEOPT_FAKE_STUCK_MB=2, after its last
//                               action and send (nobody waits for it);
//   PIPEOPT_FAKE_DELAY_RANK=r, PIPEOPT_FAKE_DELAY_S=s
//                               rank r computes s seconds before its first
//                               receive of each call;
//   PIPEOPT_FAKE_SLEEP_MS=n     every action takes n ms (a run long enough
//                               to be suspended mid-way);
//   PIPEOPT_FAKE_STARTED=FILE   rank 0 creates FILE in its first call.
//
//===----------------------------------------------------------------------===//

#include "TestMemRef.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

using pipeopt_test::MemRef;

namespace {

constexpr int kRanks = 3, kMb = 2;

int envInt(const char *name, int dflt) {
  const char *v = std::getenv(name);
  return v && *v ? std::atoi(v) : dflt;
}

double envDouble(const char *name, double dflt) {
  const char *v = std::getenv(name);
  return v && *v ? std::atof(v) : dflt;
}

#define CHECK(call)                                                            \
  do {                                                                         \
    int32_t rc_ = (call);                                                      \
    if (rc_)                                                                   \
      return rc_;                                                              \
  } while (0)

int32_t chainRank(int r) {
  if (r == 0)
    if (const char *f = std::getenv("PIPEOPT_FAKE_STARTED"))
      if (FILE *fp = std::fopen(f, "w"))
        std::fclose(fp);
  if (r == envInt("PIPEOPT_FAKE_DELAY_RANK", -1))
    std::this_thread::sleep_for(
        std::chrono::duration<double>(envDouble("PIPEOPT_FAKE_DELAY_S", 0)));
  int sleepMs = envInt("PIPEOPT_FAKE_SLEEP_MS", 0);
  for (int mb = 0; mb < kMb; ++mb) {
    float h[4] = {float(mb), 1, 2, 3};
    MemRef<1> mh(h, {4});
    if (r > 0)
      CHECK(_mlir_ciface_pipeopt_rt_recv_f32(r - 1, r - 1, r, mb, 0, 0,
                                             mh.get()));
    CHECK(pipeopt_rt_action_begin(PIPEOPT_RT_ACTION_F, r, mb));
    if (sleepMs > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(sleepMs));
    if (r == envInt("PIPEOPT_FAKE_STUCK_RANK", -1) &&
        mb == envInt("PIPEOPT_FAKE_STUCK_MB", 1))
      for (;;) // stuck in compute, forever
        std::this_thread::sleep_for(std::chrono::seconds(1000));
    for (float &v : h)
      v += 1;
    CHECK(pipeopt_rt_action_end(PIPEOPT_RT_ACTION_F, r, mb));
    if (r + 1 < kRanks)
      CHECK(_mlir_ciface_pipeopt_rt_send_f32(r + 1, r, r + 1, mb, 0, 0,
                                             mh.get()));
  }
  if (r == envInt("PIPEOPT_FAKE_STUCK_RANK", -1) &&
      envInt("PIPEOPT_FAKE_STUCK_MB", 1) >= kMb)
    for (;;) // stuck after its last action
      std::this_thread::sleep_for(std::chrono::seconds(1000));
  return 0;
}

} // namespace

extern "C" __attribute__((visibility("default"))) int32_t pipeopt_rank_0(void) {
  return chainRank(0);
}
extern "C" __attribute__((visibility("default"))) int32_t pipeopt_rank_1(void) {
  return chainRank(1);
}
extern "C" __attribute__((visibility("default"))) int32_t pipeopt_rank_2(void) {
  return chainRank(2);
}
