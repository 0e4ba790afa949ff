//===- PartitionGraph.cpp - Partitioner graph of a function body ----------===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// See include/pipeopt/Transforms/PartitionGraph.h.
///
//===----------------------------------------------------------------------===//

#include "pipeopt/Transforms/PartitionGraph.h"
#include "pipeopt/Analysis/Parameters.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>
#include <tuple>

using namespace mlir;
using namespace pipeopt;
namespace part = pipeopt::partition;

SmallVector<Value> pipeopt::valuesReadBy(Operation *op) {
  SmallVector<Value> inputs(op->getOperands());
  if (op->getNumRegions()) {
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(op->getRegions(), captured);
    inputs.append(captured.begin(), captured.end());
  }
  return inputs;
}

/// Kinds whose ops may be rematerialized when all their inputs are
/// constants, arguments or rematerializable.
static bool rematerializableKind(cost::OpKind kind) {
  switch (kind) {
  case cost::OpKind::Constant:
  case cost::OpKind::View:
  case cost::OpKind::Fill:
  case cost::OpKind::Elementwise:
  case cost::OpKind::DataMovement:
  case cost::OpKind::Reduction:
    return true;
  default:
    return false;
  }
}

llvm::Expected<FunctionGraph>
pipeopt::buildPartitionGraph(func::FuncOp fn, cost::CostAnalysis &analysis,
                             bool rematFromArguments) {
  if (!fn.getBody().hasOneBlock())
    return llvm::createStringError(
        "expected a single-block function body (structured control flow "
        "only)");
  FunctionGraph result;
  SmallVector<Operation *> &ops = result.ops;
  for (Operation &op : fn.getBody().front().without_terminator())
    ops.push_back(&op);
  if (ops.empty())
    return llvm::createStringError("the function has no ops to partition");

  llvm::DenseMap<Operation *, int> index;
  for (auto [i, op] : llvm::enumerate(ops))
    index[op] = static_cast<int>(i);
  // The weights each op reads (cost model's rule, Analysis/Parameters.h).
  cost::ParameterAnalysis parameters(fn);

  // Rematerializable ops: cheap, side-effect free, read no weight, every
  // input is a function argument or another rematerializable value, and no
  // result is a result of the function unless the op is a constant (a model
  // output is computed by a stage: without this rule a model of element-wise
  // ops on its inputs alone had no op to place; a returned constant is
  // materialized where it is returned).
  llvm::SmallPtrSet<Operation *, 8> returned;
  for (Value v : fn.getBody().front().getTerminator()->getOperands())
    if (Operation *def = v.getDefiningOp())
      returned.insert(def);
  std::vector<bool> &remat = result.remat;
  remat.assign(ops.size(), false);
  for (auto [i, op] : llvm::enumerate(ops)) {
    const cost::OpCost &c = analysis.get(op);
    if (!rematerializableKind(c.kind) || op->getNumResults() == 0 ||
        !isMemoryEffectFree(op) ||
        (returned.contains(op) && c.kind != cost::OpKind::Constant))
      continue;
    if (c.kind != cost::OpKind::Constant && c.kind != cost::OpKind::View &&
        !parameters.usesBy(op).empty())
      continue;
    bool ok = llvm::all_of(valuesReadBy(op), [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def)
        return rematFromArguments; // function argument
      auto it = index.find(def);
      return it != index.end() && remat[it->second];
    });
    remat[i] = ok;
  }

  // Nodes.
  part::Graph &graph = result.graph;
  llvm::DenseMap<Value, int> weightId;
  auto weightOf = [&](Value root) {
    auto it = weightId.find(root);
    if (it != weightId.end())
      return it->second;
    int id = static_cast<int>(graph.weightNames.size());
    std::string name;
    if (auto arg = dyn_cast<BlockArgument>(root))
      name = llvm::formatv("%arg{0}", arg.getArgNumber()).str();
    else
      name = llvm::formatv("{0}#{1}",
                           root.getDefiningOp()->getName().getStringRef(),
                           index.lookup(root.getDefiningOp()))
                 .str();
    graph.weightNames.push_back(name);
    graph.weightBytes.push_back(cost::typeBytes(root.getType()));
    weightId[root] = id;
    return id;
  };
  std::vector<bool> weightCounted;
  for (auto [i, op] : llvm::enumerate(ops)) {
    const cost::OpCost &c = analysis.get(op);
    part::Node node;
    node.name = llvm::formatv("{0}#{1}", op->getName().getStringRef(), i).str();
    node.forwardSeconds = c.forwardSeconds;
    node.backwardInputSeconds = c.backwardInputSeconds;
    node.backwardWeightSeconds = c.backwardWeightSeconds;
    node.flops = c.flops;
    node.backwardInputFlops = c.backwardInputFlops;
    node.backwardWeightFlops = c.backwardWeightFlops;
    node.rematerializable = remat[i];
    if (!remat[i]) {
      node.outputBytes = c.savedActivationBytes;
      // Weights: attributed (bytes) to their first placed reader.
      for (const cost::ParameterUse &use : parameters.usesBy(op)) {
        int id = weightOf(use.root);
        if (!llvm::is_contained(node.weights, id))
          node.weights.push_back(id);
        if (weightCounted.size() <= static_cast<size_t>(id))
          weightCounted.resize(id + 1, false);
        if (!weightCounted[id]) {
          weightCounted[id] = true;
          node.paramBytes += graph.weightBytes[id];
        }
      }
    }
    graph.addNode(std::move(node));
  }

  // Edges: one per (producer, consumer, result).
  std::set<std::tuple<int, int, int>> seen;
  for (auto [j, op] : llvm::enumerate(ops)) {
    for (Value v : valuesReadBy(op)) {
      Operation *def = v.getDefiningOp();
      if (!def)
        continue;
      auto it = index.find(def);
      if (it == index.end())
        continue;
      int from = it->second;
      int res = static_cast<int>(cast<OpResult>(v).getResultNumber());
      if (!seen.insert({from, static_cast<int>(j), res}).second)
        continue;
      graph.addEdge(from, static_cast<int>(j), cost::typeBytes(v.getType()),
                    res);
    }
  }
  return result;
}

partition::LinkModel pipeopt::linkModelFor(const machine::Topology &topology) {
  partition::LinkModel links;
  links.uniform = topology.intraNode;
  links.between = [topology](int a, int b) { return topology.between(a, b); };
  return links;
}
