//===- SessionStepsDriver.cpp - A training loop of Session::run(1) --------===//
//
// pipeopt-rt-session-steps: what a Python training loop does through the
// Session API, for the tests and the overhead measurement.
//
//   pipeopt-rt-session-steps MODEL MANIFEST COMM STEPS OUTDIR [I=NPY ...]
//                            [--random SEED]
//     loads MODEL (--comm COMM; one process per rank under mpirun with
//     mpi), sets input I from NPY (--random: the others get pipeopt-run
//     --seed SEED's random data), runs run(1) STEPS times without
//     gathering (setGatherAfterRun(false)), checks that weight() then asks
//     for synchronize() (MPI) or gathers by itself (loopback), calls
//     synchronize() in every process and writes, in rank 0's process,
//     OUTDIR/weight_<index>.npy, the optimizer moments (adam_m_, adam_v_,
//     momentum_<index>.npy) and OUTDIR/loss.npy as pipeopt-run
//     --output-dir does. Prints "session-steps: ok" (rank 0) on success.
//
//   pipeopt-rt-session-steps MODEL MANIFEST loopback STEPS - --bench ROUNDS
//     with random inputs: ROUNDS alternating rounds of one run(STEPS) and
//     of STEPS calls of run(1) (without gathering, and gathering after
//     every run), all in one session; prints each kind's median seconds
//     per step and the overhead of run(1) over run(STEPS).
//
//===----------------------------------------------------------------------===//

#include "pipeopt/runtime/Communicator.h"
#include "pipeopt/runtime/Npy.h"
#include "pipeopt/runtime/Session.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

using namespace pipeopt::rt;

namespace {

int fail(Session &s, const Status &st, const char *what) {
  std::cerr << "session-steps: " << what << ": " << st.message() << "\n";
  if (s.usesMpi()) {
    s.abandonAfterFailure();
    mpiAbort(1);
  }
  return 1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double seconds(const std::chrono::steady_clock::time_point &t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 6) {
    std::cerr << "usage: pipeopt-rt-session-steps MODEL MANIFEST COMM STEPS "
                 "OUTDIR [I=NPY ...] [--bench ROUNDS]\n";
    return 2;
  }
  RunOptions o;
  o.modelPath = argv[1];
  o.manifestPath = argv[2];
  o.comm = argv[3];
  o.quiet = true;
  const int steps = std::atoi(argv[4]);
  const std::string outDir = argv[5];
  int benchRounds = 0;
  long long randomSeed = -1;
  std::vector<std::pair<int, std::string>> inputs;
  for (int i = 6; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--bench" && i + 1 < argc) {
      benchRounds = std::atoi(argv[++i]);
      continue;
    }
    if (a == "--random" && i + 1 < argc) {
      randomSeed = std::atoll(argv[++i]);
      continue;
    }
    size_t eq = a.find('=');
    if (eq == std::string::npos) {
      std::cerr << "session-steps: expected I=NPY, got '" << a << "'\n";
      return 2;
    }
    inputs.emplace_back(std::atoi(a.substr(0, eq).c_str()), a.substr(eq + 1));
  }
  o.iterations = benchRounds > 0 ? 1 : steps;
  Session s;
  if (Status st = s.load(o, &argc, &argv); !st)
    return fail(s, st, "load");
  for (const auto &[index, path] : inputs)
    if (Status st = s.setInput(index, readNpy(path)); !st)
      return fail(s, st, "input");
  if (randomSeed >= 0)
    s.setRandomInputs(true, uint64_t(randomSeed));
  if (benchRounds > 0) {
    s.setRandomInputs(true, 1);
    s.setCollectOutputs(false);
    s.setGatherAfterRun(false);
    if (Status st = s.run(1); !st) // warm-up: the allocator, the caches
      return fail(s, st, "run");
    std::vector<double> once, loop, loopGather;
    for (int r = 0; r < benchRounds; ++r) {
      for (int k = 0; k < 3; ++k) {
        int kind = (k + r) % 3; // alternate the order
        s.setGatherAfterRun(kind == 2);
        auto t0 = std::chrono::steady_clock::now();
        if (kind == 0) {
          if (Status st = s.run(steps); !st)
            return fail(s, st, "run");
        } else {
          for (int i = 0; i < steps; ++i)
            if (Status st = s.run(1); !st)
              return fail(s, st, "run");
        }
        double perStep = seconds(t0) / steps;
        (kind == 0 ? once : kind == 1 ? loop : loopGather).push_back(perStep);
      }
    }
    double a = median(once), b = median(loop), c = median(loopGather);
    std::printf("session-steps: %d rounds of %d steps, median s/step: "
                "run(%d) %.5f, run(1) x%d %.5f (%+.2f%%), run(1) x%d with "
                "a gather after each %.5f (%+.2f%%)\n",
                benchRounds, steps, steps, a, steps, b, 100 * (b / a - 1),
                steps, c, 100 * (c / a - 1));
    return 0;
  }
  s.setGatherAfterRun(false);
  for (int i = 0; i < steps; ++i)
    if (Status st = s.run(1); !st)
      return fail(s, st, "run");
  const Manifest &m = s.manifest();
  if (s.hasRank0() && s.usesMpi()) {
    // Rank 0's copy is stale: only a collective synchronize() refreshes it.
    HostTensor t;
    Status st = s.weight(m.parameters.front().index, t);
    std::printf("session-steps: before synchronize: code %d: %s\n", st.code(),
                st.message().c_str());
  }
  if (Status st = s.synchronize(); !st)
    return fail(s, st, "synchronize");
  if (!s.hasRank0())
    return 0;
  for (const ManifestParameter &p : m.parameters) {
    HostTensor t;
    if (Status st = s.weight(p.index, t); !st)
      return fail(s, st, "weight");
    std::string i = std::to_string(p.index);
    writeNpy(outDir + "/weight_" + i + ".npy", t);
    // The optimizer state, named as --output-dir names it.
    HostTensor first, second;
    int64_t updates = 0;
    if (Status st = s.optimizerState(p.index, first, second, updates); !st)
      return fail(s, st, "optimizerState");
    if (!first.data.empty())
      writeNpy(outDir + "/" +
                   (m.training.optimizer == OptimizerKind::AdamW
                        ? "adam_m_"
                        : "momentum_") +
                   i + ".npy",
               first);
    if (!second.data.empty())
      writeNpy(outDir + "/adam_v_" + i + ".npy", second);
    std::printf("session-steps: parameter %s: %lld update(s)\n", i.c_str(),
                (long long)updates);
  }
  HostTensor losses;
  losses.dtype = DType::F32;
  losses.shape = {int64_t(s.losses().size())};
  losses.data.resize(s.losses().size() * 4);
  std::memcpy(losses.data.data(), s.losses().data(), losses.data.size());
  writeNpy(outDir + "/loss.npy", losses);
  std::printf("session-steps: ok\n");
  return 0;
}
