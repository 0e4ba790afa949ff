//===- PartitionBench.cpp - Partitioner speed benchmark --------*- C++ -*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
//
// Time of the balanced (exact) partitioner on a synthetic transformer-like
// chain with residual skip connections: op k feeds k+1, and every 5th op also
// feeds k+4 (a residual); per-op compute 0.5-2 ms, activations 4 MB, links
// 10 us + 50 GB/s, one rematerializable mask used by every 10th op.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Partition/Partitioner.h"

#include "llvm/Support/Error.h"
#include <benchmark/benchmark.h>

#include <random>

using namespace pipeopt::partition;

static Graph chainWithSkips(int numOps, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> time(0.5e-3, 2e-3);
  Graph g;
  Node mask;
  mask.name = "mask";
  mask.rematerializable = true;
  mask.forwardSeconds = 1e-6;
  g.addNode(mask);
  for (int k = 0; k < numOps; ++k) {
    Node n;
    n.name = "op" + std::to_string(k);
    n.forwardSeconds = time(rng);
    n.flops = n.forwardSeconds * 400e12;
    n.paramBytes = (k % 3 == 0) ? 32e6 : 0;
    n.outputBytes = 4e6;
    g.addNode(n);
  }
  for (int k = 1; k <= numOps; ++k) {
    if (k < numOps)
      g.addEdge(k, k + 1, 4e6);
    if (k % 5 == 1 && k + 4 <= numOps)
      g.addEdge(k, k + 4, 4e6);
    if (k % 10 == 0)
      g.addEdge(0, k, 1e3);
  }
  return g;
}

/// Args: ops, stages, link bandwidth in GB/s (50: NVLink-class, comm is a
/// small fraction of a stage; 1: comm is significant, the lower bound looser).
static void BM_PartitionBalanced(benchmark::State &state) {
  int numOps = static_cast<int>(state.range(0));
  int numStages = static_cast<int>(state.range(1));
  double gbps = static_cast<double>(state.range(2));
  Graph g = chainWithSkips(numOps, 42);
  Options o;
  o.numStages = numStages;
  o.links.uniform = pipeopt::machine::Link{10e-6, gbps * 1e9};
  o.computeBaselines = false;
  double bottleneck = 0;
  for (auto _ : state) {
    llvm::Expected<Result> r = partition(g, o);
    if (!r) {
      state.SkipWithError(llvm::toString(r.takeError()).c_str());
      return;
    }
    bottleneck = r->report.bottleneckSeconds;
    benchmark::DoNotOptimize(r->partition.stageOf.data());
  }
  state.counters["bottleneck_ms"] = bottleneck * 1e3;
  state.counters["ops"] = numOps;
}
BENCHMARK(BM_PartitionBalanced)
    ->Args({10000, 64, 50})
    ->Args({100000, 64, 50})
    ->Args({100000, 64, 1})
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
