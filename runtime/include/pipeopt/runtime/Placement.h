//===- Placement.h - Ranks onto cores, longest first ------------*- C++ -*-===//
//
// Part of the pipeopt runtime. Header-only and free of dependencies, so that
// pipe-simulate's event level (lib/Simulate, topology.pin_ranks) places
// pinned ranks exactly as pipeopt-run --pin-ranks does.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_RUNTIME_PLACEMENT_H
#define PIPEOPT_RUNTIME_PLACEMENT_H

#include <algorithm>
#include <cstddef>
#include <vector>

namespace pipeopt {
namespace rt {

/// The cores of `loads.size()` ranks: rank i gets core result[i] (an index
/// into `numCores` cores), assigned longest processing time first (Graham,
/// "Bounds on multiprocessing timing anomalies", SIAM J. Appl. Math. 17(2),
/// 1969): ranks by descending load (ties: lower rank), each onto the core
/// with the least load so far (ties: lower core). `loads` in seconds;
/// numCores < 1 counts as 1.
inline std::vector<int> assignRanksToCores(const std::vector<double> &loads,
                                           int numCores) {
  std::vector<size_t> order(loads.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return loads[a] > loads[b]; });
  std::vector<double> coreLoad(size_t(std::max(numCores, 1)), 0.0);
  std::vector<int> core(loads.size(), 0);
  for (size_t r : order) {
    size_t best = size_t(std::min_element(coreLoad.begin(), coreLoad.end()) -
                         coreLoad.begin());
    core[r] = int(best);
    coreLoad[best] += loads[r];
  }
  return core;
}

} // namespace rt
} // namespace pipeopt

#endif // PIPEOPT_RUNTIME_PLACEMENT_H
