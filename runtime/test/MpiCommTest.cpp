//===- MpiCommTest.cpp - MPI communicator test (run under mpirun -np 2) ---===//
//
// Not a gtest binary: ctest runs `mpirun -np 2 MpiCommTest`. Checks
//   1. send/recv through the C ABI over MPI,
//   2. shape mismatch detection (message names rank, stage, microbatch),
//   3. a rank that exits early (rank 0 stops communicating and finalizes):
//      rank 1's recv reports a timeout within the configured 1 s.
// Exit status 0 on success on every rank.
//
//===----------------------------------------------------------------------===//

#include "TestMemRef.h"
#include "pipeopt/runtime/Context.h"

#include <chrono>
#include <cstdio>
#include <string>

using namespace pipeopt::rt;
using pipeopt_test::MemRef;

static int failures = 0;
#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "rank %d: FAILED %s: ", rank, #cond);               \
      std::fprintf(stderr, __VA_ARGS__);                                       \
      std::fprintf(stderr, "\n");                                              \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

int main(int argc, char **argv) {
  mpiInitialize(&argc, &argv);
  int rank = mpiWorldRank();
  if (mpiWorldSize() != 2) {
    std::fprintf(stderr, "run with mpirun -np 2\n");
    mpiFinalize();
    return 2;
  }
  {
    auto comm = createMpiCommunicator();
    RankContext ctx(rank, comm.get(), nullptr, nullptr, 10.0);
    ScopedContext scope(&ctx);
    std::vector<float> big(64), small(32);
    for (int i = 0; i < 64; ++i)
      big[i] = float(i) - 3.5f;
    MemRef<2> mbig(big.data(), {4, 16}), msmall(small.data(), {4, 8});
    if (rank == 0) {
      // 1. a correct message, 2. one with the wrong shape.
      EXPECT(_mlir_ciface_pipeopt_rt_send_f32(1, 0, 1, 0, 0, 0, mbig.get()) ==
                 0,
             "%s", pipeopt_rt_last_error());
      EXPECT(_mlir_ciface_pipeopt_rt_send_f32(1, 0, 1, 2, 0, 0, mbig.get()) ==
                 0,
             "%s", pipeopt_rt_last_error());
      comm->flush(10.0);
    } else {
      std::vector<float> got(64, 0);
      MemRef<2> mgot(got.data(), {4, 16});
      EXPECT(_mlir_ciface_pipeopt_rt_recv_f32(0, 0, 1, 0, 0, 0, mgot.get()) ==
                 0,
             "%s", pipeopt_rt_last_error());
      EXPECT(got == big, "payload differs");
      EXPECT(_mlir_ciface_pipeopt_rt_recv_f32(0, 0, 1, 2, 0, 0, msmall.get()) !=
                 0,
             "mismatch not detected");
      std::string err =
          pipeopt_rt_last_error() ? pipeopt_rt_last_error() : "(none)";
      EXPECT(err == "rank 1: recv for stage 1 microbatch 2 value 0 expected "
                    "f32[4x8] (128 bytes) but rank 0 sent f32[4x16] (256 "
                    "bytes)",
             "got '%s'", err.c_str());
      std::printf("rank 1 mismatch error: %s\n", err.c_str());

      // 3. Rank 0 has stopped; a fresh context with a 1 s timeout.
      RankContext ctx2(rank, comm.get(), nullptr, nullptr, 1.0);
      ScopedContext scope2(&ctx2);
      auto t0 = std::chrono::steady_clock::now();
      EXPECT(_mlir_ciface_pipeopt_rt_recv_f32(0, 0, 1, 3, 0, 0, mgot.get()) !=
                 0,
             "recv from a dead rank succeeded");
      double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count();
      err = pipeopt_rt_last_error() ? pipeopt_rt_last_error() : "(none)";
      EXPECT(err.find("rank 1: recv for stage 1 microbatch 3 value 0") == 0 &&
                 err.find("timed out after 1 s waiting for rank 0") !=
                     std::string::npos,
             "got '%s'", err.c_str());
      EXPECT(s >= 0.9 && s < 5.0, "timeout took %.2f s", s);
      std::printf("rank 1 timeout error after %.2f s: %s\n", s, err.c_str());
    }
  }
  mpiFinalize();
  if (failures == 0)
    std::printf("rank %d: MPI TEST PASS\n", rank);
  return failures ? 1 : 0;
}
