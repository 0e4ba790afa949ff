//===- Parameters.cpp - Which values are model parameters --------*- C++
//-*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Analysis/Parameters.h"
#include "OpRules.h"
#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"

#include "mlir/Conversion/TosaToArith/TosaToArith.h"
#include "mlir/Conversion/TosaToLinalg/TosaToLinalg.h"
#include "mlir/Conversion/TosaToTensor/TosaToTensor.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <set>
#include <string>

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

//===----------------------------------------------------------------------===//
// Data and parameter arguments
//===----------------------------------------------------------------------===//

void cost::buildLowerTosaForAnalysis(OpPassManager &pm) {
  pm.addPass(tosa::createTosaToLinalgNamed());
  pm.addPass(tosa::createTosaToLinalg());
  pm.addPass(createTosaToArithPass());
  pm.addPass(createTosaToTensorPass());
  pm.addPass(createConvertElementwiseToLinalgPass());
  pm.addPass(createCanonicalizerPass());
}

/// True when operand `o` of linalg op `l` is combined with the data by
/// broadcast: `l` is all-parallel, `o` is a floating-point input that
/// traces to a function argument, and another input indexes a loop of
/// extent != 1 that `o`'s map does not. (The other input may be an
/// argument too: in a stage function the activations are.)
static bool isBroadcastArgument(linalg::LinalgOp l, OpOperand &o) {
  if (l.getNumLoops() != l.getNumParallelLoops() || !l.isDpsInput(&o))
    return false;
  auto type = dyn_cast<RankedTensorType>(o.get().getType());
  Value root;
  if (!type || !isa<FloatType>(type.getElementType()) ||
      !tracesToParameterSource(o.get(), &root) || !isFunctionArgument(root))
    return false;
  SmallVector<int64_t> ranges = l.getStaticLoopRanges();
  AffineMap map = l.getMatchingIndexingMap(&o);
  for (OpOperand *other : l.getDpsInputOperands()) {
    if (other == &o || !isa<RankedTensorType>(other->get().getType()))
      continue;
    AffineMap otherMap = l.getMatchingIndexingMap(other);
    for (unsigned j = 0; j < ranges.size(); ++j)
      if (ranges[j] != 1 && otherMap.isFunctionOfDim(j) &&
          !map.isFunctionOfDim(j))
        return true;
  }
  return false;
}

/// The batch-dimension analysis of classifyArguments on a function of
/// linalg on tensors: the numbers of the data arguments.
static llvm::DenseSet<unsigned> reachBatch(func::FuncOp f) {
  llvm::DenseSet<unsigned> marked;
  Block &body = f.getBody().front();
  Operation *ret = body.getTerminator();
  llvm::DenseSet<std::pair<Value, unsigned>> seen;
  SmallVector<std::pair<Value, unsigned>> work;
  auto push = [&](Value v, unsigned d) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (t && d < t.getRank() && seen.insert({v, d}).second)
      work.push_back({v, d});
  };
  for (Value out : ret->getOperands())
    push(out, 0);
  // Set when the batch dimension is a unit dimension an expand adds in
  // front of a computed value (a batch-1 model that squeezes the batch
  // away for some ops: [5, 768] -> [1, 5, 768]).
  bool squeezed = false;
  while (!work.empty()) {
    auto [v, d] = work.pop_back_val();
    if (auto a = dyn_cast<BlockArgument>(v)) {
      if (a.getOwner() == &body && d == 0)
        marked.insert(a.getArgNumber());
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (!def)
      continue;
    if (auto l = dyn_cast<linalg::LinalgOp>(def)) {
      AffineMap p = l.getIndexingMapMatchingResult(cast<OpResult>(v));
      auto dim = dyn_cast<AffineDimExpr>(p.getResult(d));
      if (!dim)
        continue;
      bool unitBatch = l.getStaticLoopRanges()[dim.getPosition()] == 1;
      SmallVector<unsigned> params = parameterOperands(def);
      for (OpOperand &o : def->getOpOperands()) {
        if (llvm::is_contained(params, o.getOperandNumber()))
          continue;
        if (!isa<RankedTensorType>(o.get().getType()))
          continue;
        if (unitBatch && isBroadcastArgument(l, o))
          continue;
        AffineMap m = l.getMatchingIndexingMap(&o);
        for (auto [r, e] : llvm::enumerate(m.getResults()))
          if (e == dim)
            push(o.get(), r);
      }
      continue;
    }
    if (auto e = dyn_cast<tensor::ExpandShapeOp>(def)) {
      // The outer part of a split dimension ([32] -> [4, 8]) is that
      // dimension; a unit dimension an expand adds in front of one
      // ([10] -> [1, 10], a bias) is not.
      for (auto [i, group] : llvm::enumerate(e.getReassociationIndices())) {
        if (group.empty() || group.front() != int64_t(d))
          continue;
        if (e.getResultType().getDimSize(d) != 1 ||
            e.getSrcType().getDimSize(i) == 1)
          push(e.getSrc(), i);
        else if (d == 0 && !tracesToParameterSource(e.getSrc()))
          squeezed = true;
      }
      continue;
    }
    if (auto c = dyn_cast<tensor::CollapseShapeOp>(def)) {
      auto groups = c.getReassociationIndices();
      if (d < groups.size() && !groups[d].empty())
        push(c.getSrc(), groups[d].front());
      continue;
    }
    if (isa<tensor::ExtractSliceOp, tensor::PadOp, tensor::CastOp>(def)) {
      push(def->getOperand(0), d);
      continue;
    }
    if (auto s = dyn_cast<tensor::InsertSliceOp>(def)) {
      push(s.getDest(), d);
      if (s.getSourceType().getRank() == s.getDestType().getRank())
        push(s.getSource(), d);
      continue;
    }
    if (isa<tensor::ConcatOp>(def) ||
        def->getDialect()->getNamespace() == "arith" ||
        def->getDialect()->getNamespace() == "math") {
      for (Value o : def->getOperands())
        push(o, d);
      continue;
    }
  }
  if (!marked.empty() && !squeezed)
    return marked;
  // A batch-1 model whose batch dimension is squeezed away (JAX, torch-mlir
  // exports at batch 1), or results of rank 0, reach no argument, and a
  // squeezed batch dimension hides the arguments behind it (BERT's
  // attention mask reaches the output through [5, 768] -> [1, 5, 768]):
  // then the arguments with a leading 1 (rank >= 2) that no op reads as a
  // parameter (through layout ops) are data too.
  for (BlockArgument a : body.getArguments()) {
    auto t = dyn_cast<RankedTensorType>(a.getType());
    if (!t || t.getRank() < 2 || t.getDimSize(0) != 1)
      continue;
    bool parameter = false;
    SmallVector<Value> values{a};
    while (!values.empty() && !parameter) {
      Value v = values.pop_back_val();
      for (OpOperand &use : v.getUses()) {
        Operation *user = use.getOwner();
        if (use.getOperandNumber() == 0 && user->getNumResults() == 1 &&
            rules::describeOp(user).layout) {
          values.push_back(user->getResult(0));
          continue;
        }
        // A weight position, a table read element by element (a gather's
        // table, tensor.extract in a linalg body), or a broadcast operand.
        auto l = dyn_cast<linalg::LinalgOp>(user);
        if (llvm::is_contained(parameterOperands(user),
                               use.getOperandNumber()) ||
            (isa<tensor::ExtractOp>(user) && use.getOperandNumber() == 0) ||
            (l && isBroadcastArgument(l, use)))
          parameter = true;
      }
    }
    if (!parameter)
      marked.insert(a.getArgNumber());
  }
  return marked;
}

/// Integer tensors are never parameters; those that carry the batch
/// dimension are data (classifyArguments). `data` holds the data found so
/// far; adds the integer tensor arguments of rank >= 1 whose dimension 0 is
/// a leading dimension of that data or, with none, the one all integer
/// tensor arguments share; else sets `undecided` to why not.
static void classifyIntegerArguments(func::FuncOp f,
                                     llvm::DenseSet<unsigned> &data,
                                     std::string *undecided) {
  auto integerTensor = [](Type t) -> RankedTensorType {
    auto rt = dyn_cast<RankedTensorType>(t);
    return rt && rt.getRank() >= 1 && isa<IntegerType>(rt.getElementType())
               ? rt
               : RankedTensorType();
  };
  // Constants pipe-lift-constants made arguments are not data.
  auto lifted = f->getAttrOfType<DenseI64ArrayAttr>(
      pipe::PipeDialect::LiftedConstantsAttrHelper::getNameStr());
  SmallVector<unsigned> candidates;
  for (auto [i, t] : llvm::enumerate(f.getArgumentTypes()))
    if (!data.contains(i) && integerTensor(t) &&
        !(lifted && llvm::is_contained(lifted.asArrayRef(), int64_t(i))))
      candidates.push_back(i);
  if (candidates.empty())
    return;
  // The batch's extent: dimension 0 of the data found, else of the integer
  // tensors themselves (a model that returns its loss, whose token ids are
  // its only data), when they agree.
  std::set<int64_t> extents;
  for (unsigned i : data)
    if (auto t = dyn_cast<RankedTensorType>(f.getArgumentTypes()[i]);
        t && t.getRank() >= 1)
      extents.insert(t.getDimSize(0));
  bool fromData = !extents.empty();
  if (!fromData)
    for (unsigned i : candidates)
      extents.insert(integerTensor(f.getArgumentTypes()[i]).getDimSize(0));
  extents.erase(ShapedType::kDynamic);
  if (fromData || extents.size() == 1) {
    for (unsigned i : candidates)
      if (extents.count(integerTensor(f.getArgumentTypes()[i]).getDimSize(0)))
        data.insert(i);
    return;
  }
  if (!undecided)
    return;
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "the integer tensor arguments ";
  llvm::interleaveComma(candidates, os, [&](unsigned i) {
    os << i << " (" << f.getArgumentTypes()[i] << ")";
  });
  os << " are never parameters, but which of them carry the batch "
        "dimension is unknown: no argument reaches the results along their "
        "dimension 0 (the results carry no batch dimension, e.g. a loss), "
        "and the integer arguments' leading dimensions "
     << (extents.empty() ? "are dynamic" : "differ");
  *undecided = os.str();
}

SmallVector<ArgumentKind> cost::classifyArguments(func::FuncOp f,
                                                  std::string *undecided) {
  SmallVector<ArgumentKind> kinds;
  for (Type t : f.getArgumentTypes()) {
    auto rt = dyn_cast<RankedTensorType>(t);
    kinds.push_back(rt && isa<FloatType>(rt.getElementType())
                        ? ArgumentKind::Parameter
                        : ArgumentKind::Other);
  }
  if (f.isExternal() || !f.getBody().hasOneBlock())
    return kinds;

  // TOSA is analysed in its linalg form, on a copy in a module of its own.
  bool hasTosa = false;
  f.walk([&](Operation *op) {
    if (isa_and_nonnull<tosa::TosaDialect>(op->getDialect()))
      hasTosa = true;
    return hasTosa ? WalkResult::interrupt() : WalkResult::advance();
  });
  llvm::DenseSet<unsigned> data;
  if (hasTosa) {
    MLIRContext *ctx = f.getContext();
    OwningOpRef<ModuleOp> module = ModuleOp::create(f.getLoc());
    module->getBody()->push_back(f.clone());
    auto copy = cast<func::FuncOp>(module->getBody()->front());
    // Diagnostics of the copy are not the user's; a copy that does not
    // lower is analysed as far as it got.
    ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
    PassManager pm(ctx, ModuleOp::getOperationName());
    buildLowerTosaForAnalysis(pm.nest<func::FuncOp>());
    (void)pm.run(*module);
    data = reachBatch(copy);
  } else {
    data = reachBatch(f);
  }
  classifyIntegerArguments(f, data, undecided);
  for (unsigned i : data)
    kinds[i] = ArgumentKind::Data;
  return kinds;
}

SmallVector<unsigned> cost::dataArguments(func::FuncOp f,
                                          std::string *undecided) {
  SmallVector<unsigned> data;
  for (auto [i, kind] : llvm::enumerate(classifyArguments(f, undecided)))
    if (kind == ArgumentKind::Data)
      data.push_back(i);
  return data;
}
