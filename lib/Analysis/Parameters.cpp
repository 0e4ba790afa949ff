//===- Parameters.cpp - Which values are model parameters --------*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Analysis/Parameters.h"
#include "OpRules.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;
using namespace pipeopt;
using namespace pipeopt::cost;

static bool isFunctionArgument(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && arg.getOwner()->isEntryBlock() &&
         isa_and_nonnull<FunctionOpInterface>(arg.getOwner()->getParentOp());
}

bool cost::tracesToParameterSource(Value value, Value *root) {
  for (int depth = 0; depth < 64; ++depth) {
    if (isa<BlockArgument>(value)) {
      if (!isFunctionArgument(value))
        return false;
      if (root)
        *root = value;
      return true;
    }
    Operation *def = value.getDefiningOp();
    if (rules::isConstantOp(def) && !isa<tensor::EmptyOp>(def) &&
        isa<RankedTensorType, MemRefType, VectorType>(value.getType())) {
      if (root)
        *root = value;
      return true;
    }
    // Through a layout op to the operand that carries the data.
    if (!rules::describeOp(def).layout || def->getNumOperands() == 0 ||
        def->getNumResults() != 1)
      return false;
    value = def->getOperand(0);
  }
  return false;
}

SmallVector<ParameterUse, 2> cost::parameterUses(Operation *op) {
  SmallVector<ParameterUse, 2> result;
  rules::OpRule rule = rules::describeOp(op);
  auto add = [&](unsigned i, bool argumentsOfRankAtMostOne) {
    Value root;
    if (i >= op->getNumOperands() ||
        !tracesToParameterSource(op->getOperand(i), &root))
      return;
    if (argumentsOfRankAtMostOne) {
      auto type = dyn_cast<RankedTensorType>(root.getType());
      if (!isFunctionArgument(root) || !type || type.getRank() > 1)
        return;
    }
    result.push_back({op, i, root});
  };
  switch (rule.weights) {
  case rules::WeightOperands::None:
    break;
  case rules::WeightOperands::Listed:
    for (unsigned i : rule.weightOperands)
      add(i, /*argumentsOfRankAtMostOne=*/false);
    break;
  case rules::WeightOperands::VectorArguments:
    for (unsigned i = 0; i < rule.numCandidates; ++i)
      add(i, /*argumentsOfRankAtMostOne=*/true);
    break;
  }
  return result;
}

SmallVector<unsigned> cost::parameterOperands(Operation *op) {
  SmallVector<unsigned> result;
  for (const ParameterUse &use : parameterUses(op))
    result.push_back(use.operand);
  return result;
}

ParameterAnalysis::ParameterAnalysis(Operation *root) {
  llvm::DenseSet<Value> seen;
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    SmallVector<ParameterUse, 2> found = parameterUses(op);
    if (found.empty())
      return;
    for (const ParameterUse &use : found)
      if (seen.insert(use.root).second)
        roots.push_back(use.root);
    uses[op] = std::move(found);
  });
}

ArrayRef<ParameterUse> ParameterAnalysis::usesBy(Operation *op) const {
  auto it = uses.find(op);
  if (it == uses.end())
    return {};
  return it->second;
}

SmallVector<unsigned> ParameterAnalysis::argumentNumbers(Operation *fn) const {
  SmallVector<unsigned> numbers;
  for (Value root : roots) {
    auto arg = dyn_cast<BlockArgument>(root);
    if (arg && arg.getOwner()->getParentOp() == fn &&
        arg.getOwner()->isEntryBlock())
      numbers.push_back(arg.getArgNumber());
  }
  llvm::sort(numbers);
  return numbers;
}
