//===- ScheduleBench.cpp - Schedule generator speed benchmark --*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// Time to generate a schedule table (makeSchedule) for S = 16 ranks and a
// growing number of microbatches M. zb-v, hanayo and chimera come from the
// greedy unit-time list scheduler; 1f1b is a closed-form generator, the
// baseline. The greedy scheduler is O(n log n) in the number of actions; a
// quadratic one shows up as a 4x step in time per 2x step in M.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Schedule/Schedule.h"

#include "llvm/Support/Error.h"
#include <benchmark/benchmark.h>

using namespace pipeopt::schedule;

static void generate(benchmark::State &state, const char *name) {
  ScheduleParams p;
  p.numRanks = 16;
  p.numMicrobatches = static_cast<int>(state.range(0));
  for (auto _ : state) {
    llvm::Expected<Schedule> s = makeSchedule(name, p);
    if (!s) {
      state.SkipWithError(llvm::toString(s.takeError()).c_str());
      return;
    }
    benchmark::DoNotOptimize(s->actions.data());
  }
  state.SetComplexityN(state.range(0));
}

#define PIPEOPT_SCHEDULE_BENCH(id, name)                                       \
  static void BM_##id(benchmark::State &state) { generate(state, name); }      \
  BENCHMARK(BM_##id)                                                           \
      ->RangeMultiplier(2)                                                     \
      ->Range(1024, 8192)                                                      \
      ->Unit(benchmark::kMillisecond)                                          \
      ->Complexity();

PIPEOPT_SCHEDULE_BENCH(OneFOneB, "1f1b")
PIPEOPT_SCHEDULE_BENCH(ZBV, "zb-v")
PIPEOPT_SCHEDULE_BENCH(Hanayo, "hanayo")
PIPEOPT_SCHEDULE_BENCH(Chimera, "chimera")

BENCHMARK_MAIN();
