//===- BestMethod.cpp - Best method per stage count -----------------------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The explorer question of issue 14: for each stage count, which method
/// reaches the lowest f - f* at the common time budget with its tuned step
/// (the fair time-budget protocol of arXiv 2606.03498, notes section 4),
/// and by how much. A loop over tuneMethod(); nothing new about the methods.
///
//===----------------------------------------------------------------------===//

#include "ConvergeInternal.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace pipeopt;
using namespace pipeopt::converge;

llvm::Expected<ExploreResult> converge::exploreStages(
    const Objective &obj, const RunConfig &base,
    const std::vector<int> &stageCounts, const std::vector<Method> &methods,
    const std::vector<double> &steps, const std::vector<uint64_t> &seeds,
    const SelectionRule &rule, const std::function<void(int, int)> &progress) {
  if (stageCounts.empty() || methods.empty())
    return detail::error("explore needs at least one stage count and one "
                         "method");
  if (steps.empty() || seeds.empty())
    return detail::error("explore needs a step grid and at least one seed");
  ExploreResult out;
  out.objective = obj.name().str();
  out.budgetSlots = base.budgetSlots;
  out.costs = base.costs;
  out.budgetSec = base.budgetSec;
  const int total = static_cast<int>(stageCounts.size() * methods.size());
  int done = 0;
  for (int S : stageCounts) {
    ExploreRow row;
    row.stages = S;
    for (Method m : methods) {
      RunConfig c = base;
      c.stages = S;
      c.method = m;
      llvm::Expected<MethodResult> r = tuneMethod(obj, c, steps, seeds, rule);
      if (!r)
        return detail::error(llvm::formatv("S = {0}, {1}: {2}", S,
                                           methodName(m),
                                           llvm::toString(r.takeError()))
                                 .str());
      ExploreEntry e;
      e.method = m;
      e.stepSize = r->best().stepSize;
      e.finalSubopt = r->best().finalMean;
      e.tailMean = r->best().tailMean;
      e.stable = r->selectedStable;
      e.blockUpdates = r->best().runs.front().blockUpdates;
      row.entries.push_back(e);
      if (progress)
        progress(++done, total);
    }
    // Best: the lowest finite final f - f* (ties: the earlier method).
    for (int i = 0, n = static_cast<int>(row.entries.size()); i < n; ++i) {
      double v = row.entries[i].finalSubopt;
      if (std::isfinite(v) &&
          (row.best < 0 || v < row.entries[row.best].finalSubopt))
        row.best = i;
    }
    if (row.best >= 0) {
      double second = INFINITY;
      for (int i = 0, n = static_cast<int>(row.entries.size()); i < n; ++i)
        if (i != row.best)
          second = std::min(second, row.entries[i].finalSubopt);
      row.runnerUp = -1;
      for (int i = 0, n = static_cast<int>(row.entries.size()); i < n; ++i)
        if (i != row.best && row.entries[i].finalSubopt == second &&
            std::isfinite(second)) {
          row.runnerUp = i;
          break;
        }
      const double best = row.entries[row.best].finalSubopt;
      row.margin = row.runnerUp < 0 ? INFINITY
                   : best > 0       ? second / best
                                    : (second > 0 ? INFINITY : 1.0);
    }
    out.rows.push_back(std::move(row));
  }
  return out;
}

namespace {
llvm::json::Value num(double v) {
  if (std::isfinite(v))
    return v;
  return nullptr;
}
} // namespace

llvm::json::Value converge::toJSON(const ExploreResult &r) {
  llvm::json::Array rows;
  for (const ExploreRow &row : r.rows) {
    llvm::json::Array entries;
    for (const ExploreEntry &e : row.entries)
      entries.push_back(llvm::json::Object{
          {"method", methodName(e.method)},
          {"step_size", e.stepSize},
          {"final_suboptimality", num(e.finalSubopt)},
          {"tail_mean", num(e.tailMean)},
          {"stable", e.stable},
          {"block_updates", static_cast<int64_t>(e.blockUpdates)}});
    llvm::json::Object o{{"stages", row.stages},
                         {"methods", std::move(entries)}};
    if (row.best >= 0) {
      o["best"] = methodName(row.entries[row.best].method);
      o["best_final_suboptimality"] = num(row.entries[row.best].finalSubopt);
      o["runner_up"] =
          row.runnerUp >= 0
              ? llvm::json::Value(methodName(row.entries[row.runnerUp].method))
              : llvm::json::Value(nullptr);
      o["margin"] = num(row.margin);
    } else {
      o["best"] = nullptr;
      o["margin"] = nullptr;
    }
    rows.push_back(std::move(o));
  }
  llvm::json::Object top{{"experiment", "explore"},
                         {"objective", r.objective},
                         {"rows", std::move(rows)}};
  if (r.costs) {
    top["time_model"] = "cost-table";
    top["budget_s"] = r.budgetSec;
  } else {
    top["time_model"] = "unit-slots";
    top["budget_slots"] = static_cast<int64_t>(r.budgetSlots);
  }
  return top;
}

std::string converge::exploreTable(const ExploreResult &r) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("objective {0}, budget {1}: best method per S at the "
                      "budget (tuned steps; margin = runner-up f-f* / best "
                      "f-f*)\n",
                      r.objective,
                      r.costs
                          ? detail::formatAmount(r.budgetSec) + " s"
                          : llvm::formatv("{0} slots", r.budgetSlots).str());
  auto fmt = [](double v) {
    return std::isfinite(v) ? llvm::formatv("{0:e3}", v).str()
                            : std::string("diverged");
  };
  os << llvm::formatv("{0,5} {1,-14} {2,12} {3,-14} {4,10}  {5}\n", "S", "best",
                      "best f-f*", "runner-up", "margin", "all (method f-f*)");
  for (const ExploreRow &row : r.rows) {
    std::string all;
    for (const ExploreEntry &e : row.entries)
      all += (all.empty() ? "" : ", ") + methodName(e.method).str() + " " +
             fmt(e.finalSubopt);
    if (row.best < 0) {
      os << llvm::formatv("{0,5} {1,-14} {2,12} {3,-14} {4,10}  {5}\n",
                          row.stages, "-", "-", "-", "-", all);
      continue;
    }
    const ExploreEntry &b = row.entries[row.best];
    std::string margin = std::isfinite(row.margin)
                             ? llvm::formatv("{0:f2}x", row.margin).str()
                             : std::string("-");
    os << llvm::formatv("{0,5} {1,-14} {2,12} {3,-14} {4,10}  {5}\n",
                        row.stages, methodName(b.method), fmt(b.finalSubopt),
                        row.runnerUp >= 0
                            ? methodName(row.entries[row.runnerUp].method).str()
                            : std::string("-"),
                        margin, all);
  }
  return out;
}
