//===- Autodiff.cpp - reverse-mode AD of linalg-on-tensors functions -*- C++
//-*-===//
//
// Part of pipeopt. See Autodiff.h for what is generated and supported.
//
// How it works. The forward body is cloned into the new function, then the
// reverse sweep walks the cloned ops backwards and emits, per op, the
// adjoints of its operands from the adjoints of its results. Adjoints of a
// tensor are accumulated: a linalg adjoint writes into the value's current
// adjoint as its `outs` (one op per contribution, no separate adds). Only
// values that are both active (depend on a differentiated argument) and
// useful (reach a seeded result) get adjoints, so ops off those paths need
// no rule.
//
// The adjoint of a linalg.generic with respect to one operand x (indexing
// map m) is a linalg.generic over the same loops that reads all forward
// operands, the result gradients (and the results, for max/min), recomputes
// the scalar body, runs the scalar reverse pass (ScalarRules.cpp) and
// accumulates into dx through m: loops that m does not use become
// reductions. When m is not a projected permutation (the input of a strided
// convolution) every loop is a reduction, which keeps the read-modify-write
// order of the loops. A tensor read in the body with tensor.extract (a
// gather) gets its gradient from an scf.for nest that scatter-adds.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Autodiff/Autodiff.h"

#include "AutodiffInternal.h"
#include "pipeopt/Analysis/CostModel.h"

#include "mlir/Pass/PassManager.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace pipeopt;
using namespace pipeopt::autodiff;

std::optional<Recompute> autodiff::parseRecompute(StringRef text) {
  if (text == "none")
    return Recompute::None;
  if (text == "elementwise")
    return Recompute::Elementwise;
  if (text == "all")
    return Recompute::All;
  return std::nullopt;
}

std::optional<Loss> autodiff::parseLoss(StringRef text) {
  if (text == "mse")
    return Loss::MSE;
  if (text == "cross-entropy")
    return Loss::CrossEntropy;
  return std::nullopt;
}

namespace {

constexpr const char *kPrefix = "pipe-differentiate: ";

int64_t bytesOf(Type t) {
  auto shaped = dyn_cast<ShapedType>(t);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  return shaped.getNumElements() * ((shaped.getElementTypeBitWidth() + 7) / 8);
}

Value zerosLike(OpBuilder &b, Location loc, Type t) {
  if (auto rt = dyn_cast<RankedTensorType>(t)) {
    Value empty =
        tensor::EmptyOp::create(b, loc, rt.getShape(), rt.getElementType());
    Value zero = arith::ConstantOp::create(b, loc, rt.getElementType(),
                                           b.getZeroAttr(rt.getElementType()));
    return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  }
  return arith::ConstantOp::create(b, loc, t, b.getZeroAttr(t));
}

/// x + y, element-wise for tensors.
Value addValues(OpBuilder &b, Location loc, Value x, Value y) {
  auto rt = dyn_cast<RankedTensorType>(x.getType());
  if (!rt)
    return arith::AddFOp::create(b, loc, x, y);
  AffineMap id = b.getMultiDimIdentityMap(rt.getRank());
  Value empty =
      tensor::EmptyOp::create(b, loc, rt.getShape(), rt.getElementType());
  SmallVector<utils::IteratorType> its(rt.getRank(),
                                       utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{rt}, ValueRange{x, y}, ValueRange{empty},
             SmallVector<AffineMap>{id, id, id}, its,
             [](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(
                   nb, l,
                   ValueRange{arith::AddFOp::create(nb, l, args[0], args[1])});
             })
      .getResult(0);
}

/// The values `op` reads: its operands and the values its regions use that
/// are defined outside it.
SmallVector<Value> readValues(Operation *op) {
  SmallVector<Value> values(op->getOperands());
  if (op->getNumRegions()) {
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(op->getRegions(), above);
    values.append(above.begin(), above.end());
  }
  return values;
}

/// Which results of `op` depend on an active value: result j does when the
/// value its body yields depends (through the body's ops, except those
/// without a gradient) on a block argument of an active operand or on an
/// active value the body captures. For other ops: all float results when any
/// value they read is active.
SmallVector<bool> resultActivity(Operation *op,
                                 function_ref<bool(Value)> isActive) {
  SmallVector<bool> result(op->getNumResults(), false);
  if (hasNoGradient(op))
    return result;
  auto l = dyn_cast<linalg::LinalgOp>(op);
  if (!l || !l.getBlock()) {
    bool any = llvm::any_of(readValues(op), isActive);
    for (auto [i, r] : llvm::enumerate(op->getResults()))
      result[i] = any && isFloatLike(r.getType());
    return result;
  }
  Block *body = l.getBlock();
  llvm::DenseSet<Value> dep;
  for (OpOperand &o : op->getOpOperands())
    if (isActive(o.get()))
      dep.insert(body->getArgument(o.getOperandNumber()));
  for (Operation &bop : body->without_terminator()) {
    if (hasNoGradient(&bop))
      continue;
    bool any = false;
    bop.walk([&](Operation *nested) {
      for (Value v : nested->getOperands()) {
        bool captured = !l->getRegion(0).isAncestor(v.getParentRegion());
        if (dep.contains(v) || (captured && isActive(v)))
          any = true;
      }
    });
    if (any)
      for (Value r : bop.getResults())
        dep.insert(r);
  }
  Operation *yield = body->getTerminator();
  for (auto [i, r] : llvm::enumerate(op->getResults()))
    result[i] = isFloatLike(r.getType()) && dep.contains(yield->getOperand(i));
  return result;
}

/// `g` without the inputs its body does not read (adjoint generics read
/// every forward operand at first), so that they are neither saved nor
/// loaded, and a two-input contraction stays one (the BLAS kernels' match).
/// Kept when the remaining maps would not determine every loop's range.
linalg::GenericOp pruneInputs(OpBuilder &b, linalg::GenericOp g) {
  Block *body = g.getBlock();
  // The body clones the whole forward payload; drop what the adjoint does
  // not use first.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body)))
    if (&op != body->getTerminator() && op.use_empty() &&
        wouldOpBeTriviallyDead(&op))
      op.erase();
  SmallVector<Value> ins;
  SmallVector<AffineMap> maps;
  SmallVector<unsigned> drop;
  for (OpOperand *o : g.getDpsInputOperands()) {
    unsigned i = o->getOperandNumber();
    if (body->getArgument(i).use_empty()) {
      drop.push_back(i);
      continue;
    }
    ins.push_back(o->get());
    maps.push_back(g.getMatchingIndexingMap(o));
  }
  if (drop.empty())
    return g;
  for (OpOperand &o : g.getDpsInitsMutable())
    maps.push_back(g.getMatchingIndexingMap(&o));
  if (!inversePermutation(concatAffineMaps(maps, b.getContext())))
    return g;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(g);
  auto pruned = linalg::GenericOp::create(b, g.getLoc(), g->getResultTypes(),
                                          ins, g.getDpsInits(), maps,
                                          g.getIteratorTypesArray());
  pruned.getRegion().takeBody(g.getRegion());
  for (unsigned i : llvm::reverse(drop))
    pruned.getBlock()->eraseArgument(i);
  g->replaceAllUsesWith(pruned->getResults());
  g->erase();
  return pruned;
}

/// The values `ops` (in order) compute that depend on `roots`: the
/// results resultActivity() marks, transitively.
llvm::DenseSet<Value> activeIn(ArrayRef<Operation *> ops,
                               ArrayRef<Value> roots) {
  llvm::DenseSet<Value> active(roots.begin(), roots.end());
  for (Operation *op : ops)
    for (auto [r, a] : llvm::zip(
             op->getResults(),
             resultActivity(op, [&](Value v) { return active.contains(v); })))
      if (a)
        active.insert(r);
  return active;
}

/// How output j of a linalg op combines its body value with the output.
enum class Combine { Elementwise, Sum, Difference, Max, Min };

struct OutputSeed {
  unsigned result;
  Combine combine;
  /// The body value whose adjoint the result gradient seeds: the yielded
  /// value (Elementwise) or the non-accumulator operand of the combiner.
  Value bodyValue;
};

/// The reverse pass of one linalg body: holds the scalar adjoints of body
/// clones and the ops cloned so far.
class BodyReverse {
public:
  /// `bm` maps the original body's block arguments (and, for the scatter
  /// loop, linalg.index results) to values at `nb`.
  BodyReverse(OpBuilder &nb, linalg::LinalgOp g, IRMapping &bm)
      : nb(nb), g(g), bm(bm) {}

  /// Clones the body (without its yield); linalg.index ops whose results
  /// are already mapped are not cloned.
  void cloneBody() {
    for (Operation &op : g.getBlock()->without_terminator()) {
      if (isa<linalg::IndexOp>(op) && bm.contains(op.getResult(0)))
        continue;
      Operation *c = nb.clone(op, bm);
      clones.push_back({&op, c});
    }
  }

  void seed(Value bodyValue, Value g) { add(bm.lookupOrDefault(bodyValue), g); }

  /// Runs the scalar reverse pass from the seeds, restricted to the body
  /// values that depend on `targets` (original body values). Fails with a
  /// diagnostic at an op that has no rule.
  LogicalResult run(ArrayRef<Value> targets) {
    llvm::DenseSet<Value> dep(targets.begin(), targets.end());
    for (auto [orig, c] : clones)
      if (llvm::any_of(orig->getOperands(),
                       [&](Value v) { return dep.contains(v); }))
        for (Value r : orig->getResults())
          dep.insert(r);
    for (auto [orig, c] : llvm::reverse(clones)) {
      if (!llvm::any_of(orig->getResults(),
                        [&](Value r) { return dep.contains(r); }))
        continue;
      if (c->getNumResults() != 1)
        continue;
      Value gr = adj.lookup(c->getResult(0));
      if (!gr || hasNoGradient(c) || !isFloatLike(c->getResult(0).getType()))
        continue;
      if (isa<tensor::ExtractOp, linalg::IndexOp>(c))
        continue; // a gather's table is handled by the scatter loop
      FailureOr<SmallVector<Value>> d = scalarAdjoint(nb, c, gr);
      if (failed(d))
        return orig->emitError()
               << kPrefix << "cannot differentiate '" << orig->getName()
               << "' in the body of '" << g->getName()
               << "' (no derivative rule for this op)";
      for (auto [i, dv] : llvm::enumerate(*d))
        if (dv && dep.contains(orig->getOperand(i)))
          add(c->getOperand(i), dv);
    }
    return success();
  }

  /// The clone of an original body value (itself if not cloned: a value
  /// captured from outside).
  Value cloneOf(Value bodyValue) { return bm.lookupOrDefault(bodyValue); }

  /// The adjoint of (the clone of) an original body value, or null.
  Value adjointOf(Value bodyValue) {
    return adj.lookup(bm.lookupOrDefault(bodyValue));
  }

private:
  void add(Value v, Value g) {
    Value &slot = adj[v];
    slot =
        slot ? arith::AddFOp::create(nb, g.getLoc(), slot, g).getResult() : g;
  }

  OpBuilder &nb;
  linalg::LinalgOp g;
  IRMapping &bm;
  SmallVector<std::pair<Operation *, Operation *>> clones;
  DenseMap<Value, Value> adj;
};

/// Emits the forward clone and reverse sweep of one function into a block.
class Differentiator {
public:
  explicit Differentiator(OpBuilder &b) : b(b) {}

  /// Clones f's body at b (arguments mapped to `args`), then emits the
  /// backward seeded with `seeds` (one per result of f; null = none).
  /// `results` receives the cloned results, `grads` the gradients of the
  /// arguments `wrt`.
  LogicalResult run(func::FuncOp f, ValueRange args, ArrayRef<Value> seeds,
                    ArrayRef<unsigned> wrt, SmallVectorImpl<Value> &results,
                    SmallVectorImpl<Value> &grads) {
    Block &body = f.getBody().front();
    for (auto [a, v] : llvm::zip(body.getArguments(), args))
      fwdMap.map(a, v);
    for (Operation &op : body.without_terminator()) {
      Operation *c = b.clone(op, fwdMap);
      fwdOps.push_back(c);
    }
    for (Value r : body.getTerminator()->getOperands())
      results.push_back(fwdMap.lookupOrDefault(r));

    // Active: depends on a differentiated argument.
    SmallVector<Value> roots;
    for (unsigned i : wrt)
      roots.push_back(args[i]);
    active = activeIn(fwdOps, roots);
    // Useful: reaches a seeded result.
    for (auto [r, s] : llvm::zip(results, seeds))
      if (s)
        useful.insert(r);
    for (Operation *op : llvm::reverse(fwdOps))
      if (llvm::any_of(op->getResults(),
                       [&](Value r) { return useful.contains(r); }))
        for (Value v : readValues(op))
          useful.insert(v);

    for (auto [r, s] : llvm::zip(results, seeds))
      if (s)
        addAdjoint(r, s, r.getLoc());
    for (Operation *op : llvm::reverse(fwdOps)) {
      if (llvm::none_of(op->getResults(),
                        [&](Value r) { return adj.contains(r); }))
        continue;
      if (failed(adjointOf(op)))
        return failure();
    }
    for (unsigned i : wrt) {
      Value g = adj.lookup(args[i]);
      grads.push_back(g ? g
                        : zerosLike(b, args[i].getLoc(), args[i].getType()));
    }
    return success();
  }

  /// The forward clones, in order, and the mapping from f's values.
  SmallVector<Operation *> fwdOps;
  IRMapping fwdMap;

private:
  bool relevant(Value v) const {
    return active.contains(v) && useful.contains(v);
  }

  void addAdjoint(Value x, Value c, Location loc) {
    if (!relevant(x))
      return;
    Value &slot = adj[x];
    slot = slot ? addValues(b, loc, slot, c) : c;
  }

  Value currentOrZero(Value x, Location loc) {
    Value v = adj.lookup(x);
    return v ? v : zerosLike(b, loc, x.getType());
  }

  LogicalResult unsupported(Operation *op, const Twine &why) {
    return op->emitError() << kPrefix << "cannot differentiate '"
                           << op->getName() << "': " << why;
  }

  LogicalResult adjointOf(Operation *op) {
    Location loc = op->getLoc();
    if (auto l = dyn_cast<linalg::LinalgOp>(op))
      return linalgAdjoint(l);
    if (auto e = dyn_cast<tensor::ExpandShapeOp>(op)) {
      addAdjoint(e.getSrc(),
                 tensor::CollapseShapeOp::create(b, loc, e.getSrcType(),
                                                 adj[e.getResult()],
                                                 e.getReassociationIndices()),
                 loc);
      return success();
    }
    if (auto c = dyn_cast<tensor::CollapseShapeOp>(op)) {
      addAdjoint(c.getSrc(),
                 tensor::ExpandShapeOp::create(b, loc, c.getSrcType(),
                                               adj[c.getResult()],
                                               c.getReassociationIndices()),
                 loc);
      return success();
    }
    if (auto s = dyn_cast<tensor::ExtractSliceOp>(op)) {
      Value zero = zerosLike(b, loc, s.getSourceType());
      Value ins = tensor::InsertSliceOp::create(
          b, loc, adj[s.getResult()], zero, s.getMixedOffsets(),
          s.getMixedSizes(), s.getMixedStrides());
      addAdjoint(s.getSource(), ins, loc);
      return success();
    }
    if (auto s = dyn_cast<tensor::InsertSliceOp>(op)) {
      Value g = adj[s.getResult()];
      if (relevant(s.getSource()))
        addAdjoint(s.getSource(),
                   tensor::ExtractSliceOp::create(
                       b, loc, s.getSourceType(), g, s.getMixedOffsets(),
                       s.getMixedSizes(), s.getMixedStrides()),
                   loc);
      if (relevant(s.getDest())) {
        Value zero = zerosLike(b, loc, s.getSourceType());
        addAdjoint(s.getDest(),
                   tensor::InsertSliceOp::create(
                       b, loc, zero, g, s.getMixedOffsets(), s.getMixedSizes(),
                       s.getMixedStrides()),
                   loc);
      }
      return success();
    }
    if (auto p = dyn_cast<tensor::PadOp>(op)) {
      Value padValue = p.getConstantPaddingValue();
      if (!padValue)
        return unsupported(op, "only a padding value defined outside the "
                               "pad region is supported");
      if (relevant(padValue))
        return unsupported(op, "the padding value depends on a "
                               "differentiated argument");
      if (!p.getLow().empty() || !p.getHigh().empty())
        return unsupported(op, "dynamic padding amounts");
      RankedTensorType src = p.getSourceType();
      SmallVector<OpFoldResult> offsets, sizes, strides;
      for (auto [i, lo] : llvm::enumerate(p.getStaticLow())) {
        offsets.push_back(b.getIndexAttr(lo));
        sizes.push_back(b.getIndexAttr(src.getDimSize(i)));
        strides.push_back(b.getIndexAttr(1));
      }
      addAdjoint(p.getSource(),
                 tensor::ExtractSliceOp::create(b, loc, src, adj[p.getResult()],
                                                offsets, sizes, strides),
                 loc);
      return success();
    }
    if (auto c = dyn_cast<tensor::ConcatOp>(op)) {
      int64_t dim = c.getDim(), offset = 0;
      Value g = adj[c.getResult()];
      for (Value in : c.getInputs()) {
        auto t = cast<RankedTensorType>(in.getType());
        if (t.isDynamicDim(dim))
          return unsupported(op, "a dynamic size in the concatenated "
                                 "dimension");
        SmallVector<OpFoldResult> offsets, sizes, strides;
        for (int64_t i = 0; i < t.getRank(); ++i) {
          offsets.push_back(b.getIndexAttr(i == dim ? offset : 0));
          sizes.push_back(b.getIndexAttr(t.getDimSize(i)));
          strides.push_back(b.getIndexAttr(1));
        }
        if (relevant(in))
          addAdjoint(in,
                     tensor::ExtractSliceOp::create(b, loc, t, g, offsets,
                                                    sizes, strides),
                     loc);
        offset += t.getDimSize(dim);
      }
      return success();
    }
    if (auto c = dyn_cast<tensor::CastOp>(op)) {
      addAdjoint(c.getSource(),
                 tensor::CastOp::create(b, loc, c.getSource().getType(),
                                        adj[c.getResult()]),
                 loc);
      return success();
    }
    if (auto e = dyn_cast<tensor::ExtractOp>(op)) {
      Value zero = zerosLike(b, loc, e.getTensor().getType());
      addAdjoint(e.getTensor(),
                 tensor::InsertOp::create(b, loc, adj[e.getResult()], zero,
                                          e.getIndices()),
                 loc);
      return success();
    }
    if (op->getNumResults() == 1 &&
        isa<FloatType>(op->getResult(0).getType()) &&
        op->getNumRegions() == 0) {
      if (hasNoGradient(op))
        return success();
      FailureOr<SmallVector<Value>> d =
          scalarAdjoint(b, op, adj[op->getResult(0)]);
      if (failed(d))
        return unsupported(op, "no derivative rule for this op");
      for (auto [i, dv] : llvm::enumerate(*d))
        if (dv)
          addAdjoint(op->getOperand(i), dv, loc);
      return success();
    }
    if (op->getNumResults() && isa<ShapedType>(op->getResult(0).getType()) &&
        op->getNumRegions() == 0 &&
        (op->getDialect()->getNamespace() == "arith" ||
         op->getDialect()->getNamespace() == "math"))
      return unsupported(op, "element-wise arith/math on tensors must be "
                             "converted to linalg first "
                             "(convert-elementwise-to-linalg)");
    if (isa<func::CallOp>(op))
      return unsupported(op, "calls must be inlined first (pipe-prepare)");
    return unsupported(op, "no adjoint rule for this op");
  }

  LogicalResult linalgAdjoint(linalg::LinalgOp op) {
    if (!op.hasPureTensorSemantics())
      return unsupported(op, "only linalg ops on tensors are supported");
    // Named ops are differentiated through a temporary generic form; the
    // forward keeps the named op (and its library kernel).
    linalg::GenericOp g = dyn_cast<linalg::GenericOp>(op.getOperation());
    Operation *temp = nullptr;
    if (!g) {
      IRRewriter rewriter(b.getContext());
      rewriter.setInsertionPoint(op);
      auto copy = cast<linalg::LinalgOp>(rewriter.clone(*op));
      FailureOr<linalg::GenericOp> gen =
          linalg::generalizeNamedOp(rewriter, copy);
      if (failed(gen)) {
        copy->erase();
        return unsupported(op, "it has no linalg.generic form");
      }
      g = *gen;
      temp = g;
    }
    LogicalResult result = genericAdjoint(op, g);
    if (temp)
      temp->erase();
    return result;
  }

  /// Classifies the seeded outputs of `g` (results of `op`).
  FailureOr<SmallVector<OutputSeed>> seedsOf(linalg::LinalgOp op,
                                             linalg::GenericOp g) {
    SmallVector<OutputSeed> seeds;
    unsigned numLoops = g.getNumLoops();
    for (unsigned j = 0; j < g.getNumDpsInits(); ++j) {
      if (!adj.contains(op->getResult(j)))
        continue;
      OpOperand *init = g.getDpsInitOperand(j);
      AffineMap map = g.getMatchingIndexingMap(init);
      Value yielded = g.getMatchingYieldValue(init)->get();
      if (map.isPermutation() && map.getNumDims() == numLoops) {
        seeds.push_back({j, Combine::Elementwise, yielded});
        continue;
      }
      BlockArgument acc = g.getMatchingBlockArgument(init);
      Operation *comb = yielded.getDefiningOp();
      auto reject = [&](const Twine &why) {
        return unsupported(op, "result " + Twine(j) + " is a reduction that " +
                                   why);
      };
      if (!comb || comb->getNumOperands() != 2 ||
          comb->getBlock() != g.getBlock())
        return reject("does not combine the accumulator with one operation");
      Combine kind;
      if (isa<arith::AddFOp>(comb))
        kind = Combine::Sum;
      else if (isa<arith::SubFOp>(comb))
        kind = Combine::Difference;
      else if (isa<arith::MaximumFOp, arith::MaxNumFOp>(comb))
        kind = Combine::Max;
      else if (isa<arith::MinimumFOp, arith::MinNumFOp>(comb))
        kind = Combine::Min;
      else
        return reject("combines with '" + comb->getName().getStringRef() +
                      "' (differentiable reductions: addf, subf, maximumf, "
                      "minimumf, maxnumf, minnumf)");
      Value h;
      if (comb->getOperand(0) == acc)
        h = comb->getOperand(1);
      else if (comb->getOperand(1) == acc && kind != Combine::Difference)
        h = comb->getOperand(0);
      else
        return reject("does not have the accumulator as an operand of its "
                      "last operation");
      // h must not read the accumulator.
      SmallVector<Value> work{h};
      llvm::DenseSet<Value> seen;
      while (!work.empty()) {
        Value v = work.pop_back_val();
        if (v == acc)
          return reject("reads the accumulator more than once");
        if (!seen.insert(v).second)
          continue;
        if (Operation *d = v.getDefiningOp())
          if (d->getBlock() == g.getBlock())
            work.append(d->operand_begin(), d->operand_end());
      }
      seeds.push_back({j, kind, h});
    }
    return seeds;
  }

  LogicalResult genericAdjoint(linalg::LinalgOp op, linalg::GenericOp g) {
    Location loc = op->getLoc();
    FailureOr<SmallVector<OutputSeed>> seeds = seedsOf(op, g);
    if (failed(seeds))
      return failure();
    if (seeds->empty())
      return success();

    // Captured tensors read with tensor.extract (gathers).
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(g.getRegion(), above);
    for (Value c : above) {
      if (!relevant(c))
        continue;
      if (!isa<RankedTensorType>(c.getType()))
        return unsupported(op, "its body uses a scalar defined outside it "
                               "that depends on a differentiated argument");
      if (llvm::any_of(c.getUsers(), [&](Operation *u) {
            return g->isProperAncestor(u) && !isa<tensor::ExtractOp>(u);
          }))
        return unsupported(op, "its body uses a tensor defined outside it "
                               "other than with tensor.extract");
      if (failed(scatterAdjoint(op, g, *seeds, c)))
        return failure();
    }

    for (OpOperand &opnd : g->getOpOperands()) {
      Value x = opnd.get();
      if (!relevant(x))
        continue;
      if (!isa<RankedTensorType>(x.getType()))
        return unsupported(op, "operand " + Twine(opnd.getOperandNumber()) +
                                   " is a scalar that depends on a "
                                   "differentiated argument");
      if (!g.payloadUsesValueFromOperand(&opnd))
        continue;
      if (g.isDpsInit(&opnd)) {
        unsigned j = g.getTiedOpResult(&opnd).getResultNumber();
        auto *it = llvm::find_if(
            *seeds, [&](const OutputSeed &s) { return s.result == j; });
        if (it == seeds->end())
          continue;
        if (it->combine != Combine::Elementwise) {
          initAdjoint(op, g, *it, x);
          continue;
        }
      }
      if (failed(operandAdjoint(op, g, *seeds, opnd)))
        return failure();
    }
    return success();
  }

  /// Adjoint of the initial value of a reduction output: the result
  /// gradient (sum, difference) or the part of it where the initial value
  /// is the extremum (max, min).
  void initAdjoint(linalg::LinalgOp op, linalg::GenericOp g,
                   const OutputSeed &s, Value init) {
    Location loc = op->getLoc();
    Value dy = adj[op->getResult(s.result)];
    if (s.combine == Combine::Sum || s.combine == Combine::Difference) {
      addAdjoint(init, dy, loc);
      return;
    }
    auto rt = cast<RankedTensorType>(init.getType());
    AffineMap id = b.getMultiDimIdentityMap(rt.getRank());
    Value y = op->getResult(s.result);
    Value empty =
        tensor::EmptyOp::create(b, loc, rt.getShape(), rt.getElementType());
    SmallVector<utils::IteratorType> its(rt.getRank(),
                                         utils::IteratorType::parallel);
    Value r =
        linalg::GenericOp::create(
            b, loc, TypeRange{rt}, ValueRange{init, y, dy}, ValueRange{empty},
            SmallVector<AffineMap>(4, id), its,
            [](OpBuilder &nb, Location l, ValueRange a) {
              Value eq = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                               a[0], a[1]);
              Value zero = arith::ConstantOp::create(
                  nb, l, a[2].getType(), nb.getZeroAttr(a[2].getType()));
              linalg::YieldOp::create(
                  nb, l,
                  ValueRange{arith::SelectOp::create(nb, l, eq, a[2], zero)});
            })
            .getResult(0);
    addAdjoint(init, r, loc);
  }

  /// Seeds `rev` from the result gradients. `dy(j)` / `y(j)` give result
  /// j's gradient / value at the current point, as scalars.
  void seedBody(OpBuilder &nb, Location loc, BodyReverse &rev,
                ArrayRef<OutputSeed> seeds, function_ref<Value(unsigned)> dy,
                function_ref<Value(unsigned)> y) {
    for (const OutputSeed &s : seeds) {
      Value g = dy(s.result);
      switch (s.combine) {
      case Combine::Elementwise:
      case Combine::Sum:
        break;
      case Combine::Difference:
        g = arith::NegFOp::create(nb, loc, g);
        break;
      case Combine::Max:
      case Combine::Min: {
        // The gradient goes to every element equal to the extremum.
        Value eq = arith::CmpFOp::create(nb, loc, arith::CmpFPredicate::OEQ,
                                         rev.cloneOf(s.bodyValue), y(s.result));
        Value zero = arith::ConstantOp::create(nb, loc, g.getType(),
                                               nb.getZeroAttr(g.getType()));
        g = arith::SelectOp::create(nb, loc, eq, g, zero);
        break;
      }
      }
      rev.seed(s.bodyValue, g);
    }
  }

  LogicalResult operandAdjoint(linalg::LinalgOp op, linalg::GenericOp g,
                               ArrayRef<OutputSeed> seeds, OpOperand &opnd) {
    Location loc = op->getLoc();
    Value x = opnd.get();
    unsigned numLoops = g.getNumLoops();
    AffineMap outMap = g.getMatchingIndexingMap(&opnd);
    SmallVector<Value> ins;
    SmallVector<AffineMap> maps;
    for (OpOperand &o : g->getOpOperands()) {
      ins.push_back(o.get());
      maps.push_back(g.getMatchingIndexingMap(&o));
    }
    DenseMap<unsigned, unsigned> dyPos, yPos;
    for (const OutputSeed &s : seeds) {
      AffineMap p = g.getMatchingIndexingMap(g.getDpsInitOperand(s.result));
      dyPos[s.result] = ins.size();
      ins.push_back(adj[op->getResult(s.result)]);
      maps.push_back(p);
      if (s.combine == Combine::Max || s.combine == Combine::Min) {
        yPos[s.result] = ins.size();
        ins.push_back(op->getResult(s.result));
        maps.push_back(p);
      }
    }
    SmallVector<utils::IteratorType> its(numLoops,
                                         utils::IteratorType::reduction);
    if (outMap.isProjectedPermutation())
      for (AffineExpr e : outMap.getResults())
        its[cast<AffineDimExpr>(e).getPosition()] =
            utils::IteratorType::parallel;
    // All-parallel: every element is written once, so the previous
    // adjoint is an input and the output starts empty (no `outs` read,
    // which element-wise fusion handles best). Otherwise the adjoint
    // accumulates in `outs`, starting from zero.
    bool allParallel = llvm::all_of(its, [](utils::IteratorType t) {
      return t == utils::IteratorType::parallel;
    });
    Value previous = adj.lookup(x);
    std::optional<unsigned> previousPos;
    Value acc;
    if (allParallel) {
      if (previous) {
        previousPos = ins.size();
        ins.push_back(previous);
        maps.push_back(outMap);
      }
      auto rt = cast<RankedTensorType>(x.getType());
      acc = tensor::EmptyOp::create(b, loc, rt.getShape(), rt.getElementType());
    } else {
      acc = currentOrZero(x, loc);
    }
    maps.push_back(outMap);
    LogicalResult status = success();
    Block *gBody = g.getBlock();
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange{x.getType()}, ins, ValueRange{acc}, maps, its,
        [&](OpBuilder &nb, Location l, ValueRange args) {
          IRMapping bm;
          for (auto [i, a] : llvm::enumerate(gBody->getArguments()))
            bm.map(a, args[i]);
          BodyReverse rev(nb, g, bm);
          rev.cloneBody();
          seedBody(
              nb, l, rev, seeds, [&](unsigned j) { return args[dyPos[j]]; },
              [&](unsigned j) { return args[yPos[j]]; });
          Value target = gBody->getArgument(opnd.getOperandNumber());
          status = rev.run({target});
          Value c = rev.adjointOf(target);
          Value out;
          if (!allParallel)
            out = args.back();
          else if (previousPos)
            out = args[*previousPos];
          if (!c)
            c = arith::ConstantOp::create(
                nb, l, args.back().getType(),
                nb.getZeroAttr(args.back().getType()));
          out = out ? arith::AddFOp::create(nb, l, out, c).getResult() : c;
          linalg::YieldOp::create(nb, l, ValueRange{out});
        });
    if (failed(status)) {
      generic->erase();
      return failure();
    }
    linalg::GenericOp pruned = pruneInputs(b, generic);
    // d(x + y)/dx: the adjoint is the result's gradient itself, not a copy.
    Block *pb = pruned.getBlock();
    if (allParallel && pruned.getNumDpsInputs() == 1 &&
        pruned.getIndexingMapsArray()[0] == outMap && outMap.isPermutation() &&
        outMap.isIdentity() &&
        pruned.getDpsInputOperand(0)->get().getType() == x.getType() &&
        pb->getOperations().size() == 1 &&
        pb->getTerminator()->getOperand(0) == pb->getArgument(0)) {
      adj[x] = pruned.getDpsInputOperand(0)->get();
      pruned->erase();
      return success();
    }
    adj[x] = pruned.getResult(0);
    return success();
  }

  /// The adjoint of a tensor the body of `g` reads with tensor.extract: an
  /// scf.for nest over g's loops that adds each read's adjoint at the
  /// index it read.
  LogicalResult scatterAdjoint(linalg::LinalgOp op, linalg::GenericOp g,
                               ArrayRef<OutputSeed> seeds, Value table) {
    Location loc = op->getLoc();
    SmallVector<int64_t> ranges = g.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic))
      return unsupported(op, "a gather in a body with dynamic loop bounds");
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t r : ranges) {
      lbs.push_back(arith::ConstantIndexOp::create(b, loc, 0));
      ubs.push_back(arith::ConstantIndexOp::create(b, loc, r));
      steps.push_back(arith::ConstantIndexOp::create(b, loc, 1));
    }
    Value acc0 = currentOrZero(table, loc);
    Block *gBody = g.getBlock();
    unsigned numLoops = g.getNumLoops();
    LogicalResult status = success();
    SmallVector<Value> targets;
    for (Operation &bop : gBody->without_terminator())
      if (auto e = dyn_cast<tensor::ExtractOp>(bop))
        if (e.getTensor() == table)
          targets.push_back(e.getResult());
    scf::LoopNest nest = scf::buildLoopNest(
        b, loc, lbs, ubs, steps, ValueRange{acc0},
        [&](OpBuilder &nb, Location l, ValueRange ivs,
            ValueRange iters) -> scf::ValueVector {
          auto at = [&](Value t, AffineMap m) -> Value {
            if (!isa<RankedTensorType>(t.getType()))
              return t;
            SmallVector<Value> idx;
            for (AffineExpr e : m.getResults())
              idx.push_back(affine::AffineApplyOp::create(
                  nb, l, AffineMap::get(numLoops, 0, e), ivs));
            return tensor::ExtractOp::create(nb, l, t, idx);
          };
          IRMapping bm;
          for (OpOperand &o : g->getOpOperands())
            bm.map(gBody->getArgument(o.getOperandNumber()),
                   at(o.get(), g.getMatchingIndexingMap(&o)));
          for (Operation &bop : gBody->without_terminator())
            if (auto index = dyn_cast<linalg::IndexOp>(bop))
              bm.map(index.getResult(), ivs[index.getDim()]);
          BodyReverse rev(nb, g, bm);
          rev.cloneBody();
          auto p = [&](unsigned j) {
            return g.getMatchingIndexingMap(g.getDpsInitOperand(j));
          };
          seedBody(
              nb, l, rev, seeds,
              [&](unsigned j) { return at(adj[op->getResult(j)], p(j)); },
              [&](unsigned j) { return at(op->getResult(j), p(j)); });
          status = rev.run(targets);
          Value accv = iters[0];
          for (Value t : targets) {
            Value c = rev.adjointOf(t);
            if (!c)
              continue;
            auto e = cast<tensor::ExtractOp>(bm.lookup(t).getDefiningOp());
            Value old = tensor::ExtractOp::create(nb, l, accv, e.getIndices());
            Value sum = arith::AddFOp::create(nb, l, old, c);
            accv = tensor::InsertOp::create(nb, l, sum, accv, e.getIndices());
          }
          return {accv};
        });
    if (failed(status)) {
      if (!nest.loops.empty())
        nest.loops.front()->erase();
      return failure();
    }
    adj[table] = nest.results.front();
    return success();
  }

  OpBuilder &b;
  llvm::DenseSet<Value> active, useful;
  DenseMap<Value, Value> adj;
};

/// Ops of `body` (top level) that compute `roots`, transitively.
llvm::DenseSet<Operation *> sliceOf(Block &body, ArrayRef<Value> roots) {
  llvm::DenseSet<Operation *> ops;
  SmallVector<Value> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *d = v.getDefiningOp();
    if (!d || d->getBlock() != &body || !ops.insert(d).second)
      continue;
    for (Value r : readValues(d))
      work.push_back(r);
  }
  return ops;
}

/// Erases ops of `fn`'s body that nothing uses and that have no effects.
void eraseDeadOps(func::FuncOp fn) {
  Block &body = fn.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (&op != body.getTerminator() && op.use_empty() &&
        wouldOpBeTriviallyDead(&op))
      op.erase();
}

void dropStaleArgResultAttrs(func::FuncOp fn);

/// A function like `from` (attributes, arguments) named `name` that
/// returns `results` (values of from's body): the ops of from's body that
/// compute them, cloned in order, and those that are not trivially dead
/// (what eraseDeadOps would leave of a clone, without cloning the rest).
/// Each value of `replaced` becomes an argument appended after from's ones
/// and replaces that value in the clone. `removable` holds the ops of
/// from's body that wouldOpBeTriviallyDead() (the same for every slice of
/// one function, so computed once).
func::FuncOp cloneSlice(func::FuncOp from, StringRef name,
                        ArrayRef<Value> results, ArrayRef<Value> replaced,
                        const llvm::DenseSet<Operation *> &removable) {
  Block &src = from.getBody().front();
  llvm::DenseSet<Value> isReplaced(replaced.begin(), replaced.end());
  llvm::DenseSet<Value> live;
  for (Value v : results)
    if (!isReplaced.contains(v))
      live.insert(v);
  llvm::DenseSet<Operation *> keep;
  for (Operation &op : llvm::reverse(src.without_terminator())) {
    if (llvm::none_of(op.getResults(),
                      [&](Value r) { return live.contains(r); }) &&
        removable.contains(&op))
      continue;
    keep.insert(&op);
    for (Value v : readValues(&op))
      if (!isReplaced.contains(v))
        live.insert(v);
  }
  IRMapping m;
  auto fn = cast<func::FuncOp>(from->cloneWithoutRegions(m));
  fn.setSymName(name);
  Block *entry = new Block();
  fn.getBody().push_back(entry);
  for (BlockArgument a : src.getArguments())
    m.map(a, entry->addArgument(a.getType(), a.getLoc()));
  DenseMap<Value, Value> argOf;
  for (Value v : replaced) {
    BlockArgument a = entry->addArgument(v.getType(), v.getLoc());
    argOf[v] = a;
    m.map(v, a);
  }
  OpBuilder b = OpBuilder::atBlockEnd(entry);
  for (Operation &op : src.without_terminator()) {
    if (!keep.contains(&op))
      continue;
    b.clone(op, m);
    for (Value r : op.getResults())
      if (Value a = argOf.lookup(r))
        m.map(r, a);
  }
  SmallVector<Value> rs;
  for (Value v : results)
    rs.push_back(m.lookupOrDefault(v));
  func::ReturnOp::create(b, src.getTerminator()->getLoc(), rs);
  fn.setFunctionType(FunctionType::get(
      fn.getContext(), entry->getArgumentTypes(), ValueRange(rs).getTypes()));
  dropStaleArgResultAttrs(fn);
  return fn;
}

/// Drops the argument / result attributes of `fn` when their count no
/// longer matches its type: they were copied from the function it was
/// derived from (e.g. the pipe.output_name results of a training step that
/// is differentiated again), and a mismatched array is invalid IR.
void dropStaleArgResultAttrs(func::FuncOp fn) {
  if (ArrayAttr a = fn.getArgAttrsAttr(); a && a.size() != fn.getNumArguments())
    fn.removeArgAttrsAttr();
  if (ArrayAttr r = fn.getResAttrsAttr(); r && r.size() != fn.getNumResults())
    fn.removeResAttrsAttr();
}

/// Replaces fn's return operands and updates its type.
void setReturn(func::FuncOp fn, ValueRange values) {
  Operation *ret = fn.getBody().front().getTerminator();
  ret->setOperands(values);
  fn.setFunctionType(FunctionType::get(fn.getContext(),
                                       fn.getBody().front().getArgumentTypes(),
                                       ValueRange(values).getTypes()));
  dropStaleArgResultAttrs(fn);
}

/// Cheap to recompute: no reduction loops, no contraction.
bool isCheap(Operation *op) {
  if (auto l = dyn_cast<linalg::LinalgOp>(op))
    return l.getNumReductionLoops() == 0;
  return isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
             tensor::ExtractSliceOp, tensor::InsertSliceOp, tensor::PadOp,
             tensor::ConcatOp, tensor::CastOp, tensor::EmptyOp,
             tensor::ExtractOp>(op) ||
         (op->getNumRegions() == 0 &&
          (op->getDialect()->getNamespace() == "arith" ||
           op->getDialect()->getNamespace() == "math"));
}

/// True for ops that only move data: a linalg op whose body yields one of
/// its inputs unchanged (a copy, transpose or broadcast), reshapes.
bool isLayoutOp(Operation *op) {
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp>(op))
    return true;
  auto l = dyn_cast<linalg::LinalgOp>(op);
  if (!l || l.getNumReductionLoops() != 0 || l->getNumRegions() != 1 ||
      l.hasIndexSemantics())
    return false;
  Block &body = l->getRegion(0).front();
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  return yield && body.getOperations().size() == 1 &&
         yield.getNumOperands() == 1 &&
         llvm::is_contained(body.getArguments().take_front(l.getNumDpsInputs()),
                            yield.getOperand(0));
}

LogicalResult checkSymbol(func::FuncOp f, StringRef name) {
  auto module = f->getParentOfType<ModuleOp>();
  if (module && module.lookupSymbol(name))
    return f.emitError() << kPrefix << "cannot create @" << name
                         << ": the symbol already exists";
  return success();
}

func::FuncOp newFunction(func::FuncOp after, StringRef name,
                         FunctionType type) {
  OpBuilder mb(after->getContext());
  mb.setInsertionPointAfter(after);
  auto fn = func::FuncOp::create(mb, after.getLoc(), name, type);
  fn.setVisibility(after.getVisibility());
  fn.addEntryBlock();
  return fn;
}

} // namespace

FailureOr<Gradient> autodiff::differentiate(func::FuncOp f,
                                            const Options &options) {
  if (f.isExternal() || !f.getBody().hasOneBlock())
    return f.emitError() << kPrefix
                         << "expected a function with a body of one block";
  FunctionType type = f.getFunctionType();
  for (unsigned i : options.wrt) {
    if (i >= type.getNumInputs())
      return f.emitError() << kPrefix << "argument " << i
                           << " does not exist (the function has "
                           << type.getNumInputs() << ")";
    if (!isa<RankedTensorType>(type.getInput(i)) ||
        !isFloatLike(type.getInput(i)))
      return f.emitError() << kPrefix << "argument " << i << " of type "
                           << type.getInput(i)
                           << " cannot be differentiated (not a "
                              "floating-point ranked tensor)";
  }
  if (!llvm::is_sorted(options.wrt) ||
      std::adjacent_find(options.wrt.begin(), options.wrt.end()) !=
          options.wrt.end())
    return f.emitError() << kPrefix
                         << "differentiated arguments must be ascending";
  for (unsigned w : options.weights)
    if (!llvm::is_contained(options.wrt, w))
      return f.emitError() << kPrefix << "weight argument " << w
                           << " is not differentiated";
  std::string prefix =
      options.prefix.empty() ? f.getSymName().str() : options.prefix;
  for (StringRef suffix : {"_fwd", "_bwd", "_b", "_w"})
    if (failed(checkSymbol(f, prefix + suffix.str())))
      return failure();

  Block &body = f.getBody().front();
  if (options.wrt.empty())
    return f.emitError() << kPrefix << "@"
                         << (options.prefix.empty() ? f.getSymName()
                                                    : StringRef(options.prefix))
                         << " has no floating-point tensor argument to "
                            "differentiate";
  // Zeros and slices of the adjoints need static shapes.
  for (BlockArgument a : body.getArguments())
    if (auto t = dyn_cast<RankedTensorType>(a.getType());
        t && !t.hasStaticShape())
      return f.emitError() << kPrefix << "argument " << a.getArgNumber()
                           << " has the dynamic shape " << t
                           << "; only static shapes are differentiated";
  WalkResult dynamic = body.walk([&](Operation *op) {
    for (Value r : op->getResults())
      if (auto t = dyn_cast<RankedTensorType>(r.getType());
          t && !t.hasStaticShape()) {
        op->emitError() << kPrefix
                        << "this op's result has the dynamic "
                           "shape "
                        << t << "; only static shapes are differentiated";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  if (dynamic.wasInterrupted())
    return failure();
  SmallVector<Value> roots;
  for (unsigned i : options.wrt)
    roots.push_back(body.getArgument(i));
  SmallVector<Operation *> bodyOps;
  for (Operation &op : body.without_terminator())
    bodyOps.push_back(&op);
  llvm::DenseSet<Value> active = activeIn(bodyOps, roots);
  Gradient grad;
  SmallVector<Type> bwdInputs(type.getInputs());
  for (auto [i, r] : llvm::enumerate(body.getTerminator()->getOperands())) {
    if (!active.contains(r))
      continue;
    if (!isa<RankedTensorType>(r.getType()))
      return f.emitError() << kPrefix << "result " << i << " of type "
                           << r.getType()
                           << " depends on a differentiated argument but is "
                              "not a ranked tensor";
    grad.seeded.push_back(i);
    bwdInputs.push_back(r.getType());
  }
  if (grad.seeded.empty())
    return f.emitError()
           << kPrefix << "no result of @" << f.getSymName()
           << " is a floating-point tensor that depends on a differentiated "
              "argument: there is no gradient to compute";
  SmallVector<Type> wrtTypes;
  for (unsigned i : options.wrt)
    wrtTypes.push_back(type.getInput(i));

  // --- B+W with the whole forward recomputed --------------------------------
  func::FuncOp bwd =
      newFunction(f, prefix + "_bwd",
                  FunctionType::get(f.getContext(), bwdInputs, wrtTypes));
  Block &bb = bwd.getBody().front();
  OpBuilder b = OpBuilder::atBlockEnd(&bb);
  Differentiator d(b);
  unsigned numArgs = type.getNumInputs();
  SmallVector<Value> seeds(type.getNumResults());
  for (auto [k, r] : llvm::enumerate(grad.seeded))
    seeds[r] = bb.getArgument(numArgs + k);
  SmallVector<Value> results, grads;
  if (failed(d.run(f, bb.getArguments().take_front(numArgs), seeds, options.wrt,
                   results, grads))) {
    bwd.erase();
    return failure();
  }
  func::ReturnOp::create(b, f.getLoc(), grads);
  // --- What the backward reads from the forward: save or recompute ----------
  llvm::DenseSet<Operation *> fwdSet(d.fwdOps.begin(), d.fwdOps.end());
  llvm::DenseSet<Operation *> argDependent;
  for (Operation *op : d.fwdOps)
    if (llvm::any_of(readValues(op), [&](Value v) {
          if (auto a = dyn_cast<BlockArgument>(v))
            return a.getOwner() == &bb;
          return argDependent.contains(v.getDefiningOp());
        }))
      argDependent.insert(op);
  llvm::SetVector<Value> needed;
  for (Operation &op : bb) {
    if (fwdSet.contains(&op))
      continue;
    op.walk([&](Operation *nested) {
      for (Value v : nested->getOperands())
        if (Operation *def = v.getDefiningOp())
          if (fwdSet.contains(def))
            needed.insert(v);
    });
  }
  // Layout ops (transposes, broadcasts, reshapes) that read only weights:
  // their values are the same for every microbatch, so the backward
  // recomputes them instead of every microbatch's forward saving a copy
  // (GPT-2's tied LM head saved its 50257 x 512 transposed table per
  // microbatch; recomputed, the transpose folds into the backward's BLAS
  // call and is never materialized).
  llvm::DenseSet<Operation *> weightLayout;
  for (Operation *op : d.fwdOps) {
    if (!isLayoutOp(op))
      continue;
    if (llvm::all_of(readValues(op), [&](Value v) {
          if (auto a = dyn_cast<BlockArgument>(v))
            return a.getOwner() == &bb &&
                   llvm::is_contained(options.weights, a.getArgNumber());
          Operation *def = v.getDefiningOp();
          return def &&
                 (!argDependent.contains(def) || weightLayout.contains(def));
        }))
      weightLayout.insert(op);
  }
  llvm::SetVector<Value> saved;
  if (options.recompute != Recompute::All) {
    SmallVector<Value> work(needed.begin(), needed.end());
    llvm::DenseSet<Value> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!def || !fwdSet.contains(def) || !argDependent.contains(def) ||
          !seen.insert(v).second)
        continue;
      if ((options.recompute == Recompute::Elementwise && isCheap(def)) ||
          weightLayout.contains(def)) {
        for (Value r : readValues(def))
          work.push_back(r);
        continue;
      }
      saved.insert(v);
    }
  }
  // Saved values in forward order, so that the signature is stable.
  SmallVector<Value> savedList;
  for (Operation *op : d.fwdOps)
    for (Value r : op->getResults())
      if (saved.contains(r))
        savedList.push_back(r);
  // f's values for the saved ones (F returns them).
  DenseMap<Value, Value> original; // bwd's forward clone -> f's value
  for (Operation &op : body.without_terminator())
    for (Value r : op.getResults())
      if (Value c = d.fwdMap.lookupOrNull(r))
        original[c] = r;
  SmallVector<Value> savedInF;
  for (Value v : savedList) {
    savedInF.push_back(original.lookup(v));
    grad.savedBytes += bytesOf(v.getType());
  }
  grad.numSaved = savedList.size();
  for (auto [k, v] : llvm::enumerate(savedList)) {
    BlockArgument a = bb.insertArgument(numArgs + k, v.getType(), v.getLoc());
    v.replaceAllUsesWith(a);
  }
  savedList.clear(); // their ops are erased below
  eraseDeadOps(bwd);
  setReturn(bwd, bb.getTerminator()->getOperands());
  for (unsigned i = 0; i < numArgs; ++i)
    if (!bb.getArgument(i).use_empty() &&
        !llvm::is_contained(options.weights, i))
      grad.savedBytes += bytesOf(type.getInput(i));

  // --- F: f plus the saved values ------------------------------------------
  IRMapping fm;
  auto fwd = cast<func::FuncOp>(f->clone(fm));
  fwd.setSymName(prefix + "_fwd");
  f->getBlock()->getOperations().insert(Block::iterator(bwd), fwd);
  SmallVector<Value> fwdResults(
      fwd.getBody().front().getTerminator()->getOperands());
  for (Value v : savedInF)
    fwdResults.push_back(fm.lookup(v));
  setReturn(fwd, fwdResults);

  // --- B and W ------------------------------------------------------------
  // Common subexpressions of B+W (repeated zeros, empties and constants of
  // the reverse sweep) are removed before B and W are sliced from it, so
  // that neither slice has any either.
  if (options.eliminateCommonSubexpressions) {
    IRRewriter rewriter(bwd->getContext());
    DominanceInfo dominance(bwd);
    eliminateCommonSubExpressions(rewriter, dominance, bwd);
  }
  Block &bwdBody = bwd.getBody().front();
  Operation *ret = bwdBody.getTerminator();
  SmallVector<Value> bRoots, wRoots;
  SmallVector<unsigned> bIdx, wIdx;
  for (auto [k, i] : llvm::enumerate(options.wrt)) {
    bool isWeight = llvm::is_contained(options.weights, i);
    (isWeight ? wRoots : bRoots).push_back(ret->getOperand(k));
    (isWeight ? wIdx : bIdx).push_back(k);
  }
  llvm::DenseSet<Operation *> bOps = sliceOf(bwdBody, bRoots);
  llvm::DenseSet<Operation *> wAll = sliceOf(bwdBody, wRoots);
  // Values computed from no argument (zeros, constants) are recomputed by
  // W, not stashed.
  llvm::DenseSet<Operation *> argFree;
  for (Operation &op : bwdBody)
    if (llvm::none_of(readValues(&op), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return !def ? isa<BlockArgument>(v) &&
                            cast<BlockArgument>(v).getOwner() == &bwdBody
                      : def->getBlock() == &bwdBody && !argFree.contains(def);
        }))
      argFree.insert(&op);
  llvm::SetVector<Value> stash;
  auto maybeStash = [&](Value v) {
    if (Operation *def = v.getDefiningOp())
      if (bOps.contains(def) && !argFree.contains(def))
        stash.insert(v);
  };
  for (Operation &op : bwdBody) {
    if (!wAll.contains(&op) || bOps.contains(&op))
      continue;
    for (Value v : readValues(&op))
      maybeStash(v);
  }
  // A weight gradient computed by B ops only (e.g. shared with an input
  // gradient) is stashed too.
  for (Value v : wRoots)
    maybeStash(v);
  auto insertAfter = [&](func::FuncOp after, func::FuncOp fn) {
    after->getBlock()->getOperations().insert(std::next(Block::iterator(after)),
                                              fn);
  };
  SmallVector<Value> bResults(bRoots);
  bResults.append(stash.begin(), stash.end());
  llvm::DenseSet<Operation *> removable;
  for (Operation &op : bwdBody.without_terminator())
    if (wouldOpBeTriviallyDead(&op))
      removable.insert(&op);
  grad.b = cloneSlice(bwd, prefix + "_b", bResults, {}, removable);
  insertAfter(bwd, grad.b);
  grad.w =
      cloneSlice(bwd, prefix + "_w", wRoots, stash.getArrayRef(), removable);
  insertAfter(grad.b, grad.w);
  grad.numStash = stash.size();
  for (Value v : stash)
    grad.stashBytes += bytesOf(v.getType());
  grad.fwd = fwd;
  grad.bwd = bwd;
  return grad;
}

//===----------------------------------------------------------------------===//
// Loss and whole-gradient functions
//===----------------------------------------------------------------------===//

namespace {

/// A 0-d tensor holding sum(values) * scale, reducing all dims of the
/// element-wise `term(args)` over `ins` (all with the identity map over the
/// first input's shape, or the given maps).
Value reduceToScalar(
    OpBuilder &b, Location loc, Type elem, ValueRange ins,
    ArrayRef<AffineMap> maps, unsigned numLoops, double scale,
    function_ref<Value(OpBuilder &, Location, ValueRange)> term) {
  auto scalarType = RankedTensorType::get({}, elem);
  Value zero = zerosLike(b, loc, scalarType);
  SmallVector<AffineMap> allMaps(maps.begin(), maps.end());
  allMaps.push_back(AffineMap::get(numLoops, 0, {}, b.getContext()));
  SmallVector<utils::IteratorType> its(numLoops,
                                       utils::IteratorType::reduction);
  Value sum =
      linalg::GenericOp::create(
          b, loc, TypeRange{scalarType}, ins, ValueRange{zero}, allMaps, its,
          [&](OpBuilder &nb, Location l, ValueRange a) {
            Value t = term(nb, l, a.drop_back());
            linalg::YieldOp::create(
                nb, l, ValueRange{arith::AddFOp::create(nb, l, a.back(), t)});
          })
          .getResult(0);
  Value empty = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, elem);
  AffineMap scalarMap = AffineMap::get(0, 0, {}, b.getContext());
  return linalg::GenericOp::create(
             b, loc, TypeRange{scalarType}, ValueRange{sum}, ValueRange{empty},
             SmallVector<AffineMap>{scalarMap, scalarMap},
             SmallVector<utils::IteratorType>{},
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value c = arith::ConstantOp::create(
                   nb, l, elem, nb.getFloatAttr(elem, scale));
               linalg::YieldOp::create(
                   nb, l, ValueRange{arith::MulFOp::create(nb, l, a[0], c)});
             })
      .getResult(0);
}

} // namespace

FailureOr<func::FuncOp> autodiff::buildLossFunction(func::FuncOp f, Loss loss,
                                                    StringRef name) {
  if (f.isExternal() || !f.getBody().hasOneBlock())
    return f.emitError() << kPrefix
                         << "expected a function with a body of one block";
  if (failed(checkSymbol(f, name)))
    return failure();
  FunctionType type = f.getFunctionType();
  if (type.getNumResults() == 0)
    return f.emitError() << kPrefix
                         << "the model has no result to take a "
                            "loss of";
  Type y = type.getResult(0);
  auto yt = dyn_cast<RankedTensorType>(y);
  Type elem = yt ? yt.getElementType() : y;
  if (!isa<FloatType>(elem) || (yt && !yt.hasStaticShape()))
    return f.emitError() << kPrefix << "result 0 of type " << y
                         << " has no loss: expected a floating-point tensor "
                            "of static shape";
  SmallVector<Type> inputs(type.getInputs());
  Type targetType;
  switch (loss) {
  case Loss::Self:
    if (type.getNumResults() != 1 || (yt && yt.getNumElements() != 1))
      return f.emitError() << kPrefix
                           << "the model is not its own loss: it must return "
                              "exactly one floating-point scalar (tensor<f32>, "
                              "tensor<1xf32> or f32); give loss=mse or "
                              "loss=cross-entropy to append a loss";
    break;
  case Loss::MSE:
    if (!yt)
      return f.emitError() << kPrefix << "loss=mse needs a tensor result";
    targetType = yt;
    break;
  case Loss::CrossEntropy:
    if (!yt || yt.getRank() < 1)
      return f.emitError() << kPrefix
                           << "loss=cross-entropy needs logits of rank >= 1 "
                              "(classes last), got "
                           << y;
    targetType = RankedTensorType::get(yt.getShape().drop_back(),
                                       IntegerType::get(f.getContext(), 64));
    break;
  }
  if (targetType)
    inputs.push_back(targetType);
  auto scalarType = RankedTensorType::get({}, elem);
  func::FuncOp fn = newFunction(
      f, name, FunctionType::get(f.getContext(), inputs, {scalarType}));
  // The target of a cross entropy holds class indices in [0, C): the
  // runtime checks them (the one-hot selection below would silently drop an
  // index out of range).
  if (loss == Loss::CrossEntropy && yt)
    fn.setArgAttr(inputs.size() - 1, kClassCountAttr,
                  IntegerAttr::get(IntegerType::get(f.getContext(), 64),
                                   yt.getShape().back()));
  Block &body = fn.getBody().front();
  OpBuilder b = OpBuilder::atBlockEnd(&body);
  IRMapping m;
  Block &src = f.getBody().front();
  for (auto [a, v] : llvm::zip(src.getArguments(), body.getArguments()))
    m.map(a, v);
  for (Operation &op : src.without_terminator())
    b.clone(op, m);
  Value out = m.lookupOrDefault(src.getTerminator()->getOperand(0));
  Location loc = f.getLoc();
  Value lossValue;
  switch (loss) {
  case Loss::Self:
    if (!yt)
      lossValue =
          tensor::FromElementsOp::create(b, loc, scalarType, ValueRange{out});
    else if (yt.getRank() == 0)
      lossValue = out;
    else
      lossValue = tensor::CollapseShapeOp::create(
          b, loc, scalarType, out, SmallVector<ReassociationIndices>{});
    break;
  case Loss::MSE: {
    unsigned rank = yt.getRank();
    AffineMap id = b.getMultiDimIdentityMap(rank);
    lossValue = reduceToScalar(
        b, loc, elem, ValueRange{out, body.getArguments().back()}, {id, id},
        rank, 1.0 / double(yt.getNumElements()),
        [](OpBuilder &nb, Location l, ValueRange a) {
          Value diff = arith::SubFOp::create(nb, l, a[0], a[1]);
          return arith::MulFOp::create(nb, l, diff, diff).getResult();
        });
    break;
  }
  case Loss::CrossEntropy: {
    // lse = m + log(sum exp(y - m)) with m = max(y) over classes, per
    // position; loss = mean over positions of lse - y[target].
    unsigned rank = yt.getRank();
    auto posType = RankedTensorType::get(yt.getShape().drop_back(), elem);
    AffineMap id = b.getMultiDimIdentityMap(rank);
    // Positions: every loop but the classes (no result for rank-1 logits).
    SmallVector<AffineExpr> posDims;
    for (unsigned d = 0; d + 1 < rank; ++d)
      posDims.push_back(b.getAffineDimExpr(d));
    AffineMap pos = AffineMap::get(rank, 0, posDims, b.getContext());
    SmallVector<utils::IteratorType> its(rank - 1,
                                         utils::IteratorType::parallel);
    its.push_back(utils::IteratorType::reduction);
    auto reduce =
        [&](ValueRange ins, ArrayRef<AffineMap> maps, Value init,
            function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
          SmallVector<AffineMap> all(maps.begin(), maps.end());
          all.push_back(pos);
          return linalg::GenericOp::create(
                     b, loc, TypeRange{posType}, ins, ValueRange{init}, all,
                     its,
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       linalg::YieldOp::create(nb, l,
                                               ValueRange{body(nb, l, a)});
                     })
              .getResult(0);
        };
    Value empty = tensor::EmptyOp::create(b, loc, posType.getShape(), elem);
    Value negInf = arith::ConstantOp::create(
        b, loc, elem,
        b.getFloatAttr(elem, -std::numeric_limits<double>::infinity()));
    Value mInit = linalg::FillOp::create(b, loc, negInf, empty).getResult(0);
    Value mx =
        reduce({out}, {id}, mInit, [](OpBuilder &nb, Location l, ValueRange a) {
          return arith::MaximumFOp::create(nb, l, a[1], a[0]).getResult();
        });
    Value sumExp =
        reduce({out, mx}, {id, pos}, zerosLike(b, loc, posType),
               [](OpBuilder &nb, Location l, ValueRange a) {
                 Value e = math::ExpOp::create(
                     nb, l, arith::SubFOp::create(nb, l, a[0], a[1]));
                 return arith::AddFOp::create(nb, l, a[2], e).getResult();
               });
    Value target = body.getArguments().back();
    Value picked = reduce(
        {out, target}, {id, pos}, zerosLike(b, loc, posType),
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Value c = linalg::IndexOp::create(nb, l, rank - 1);
          Value t = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[1]);
          Value eq =
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, c, t);
          Value zero =
              arith::ConstantOp::create(nb, l, elem, nb.getZeroAttr(elem));
          Value sel = arith::SelectOp::create(nb, l, eq, a[0], zero);
          return arith::AddFOp::create(nb, l, a[2], sel).getResult();
        });
    unsigned prank = rank - 1;
    AffineMap pid = b.getMultiDimIdentityMap(prank);
    int64_t positions = posType.getNumElements();
    lossValue = reduceToScalar(
        b, loc, elem, ValueRange{mx, sumExp, picked}, {pid, pid, pid}, prank,
        1.0 / double(positions), [](OpBuilder &nb, Location l, ValueRange a) {
          Value lse = arith::AddFOp::create(nb, l, a[0],
                                            math::LogOp::create(nb, l, a[1]));
          return arith::SubFOp::create(nb, l, lse, a[2]).getResult();
        });
    break;
  }
  }
  func::ReturnOp::create(b, loc, ValueRange{lossValue});
  return fn;
}

FailureOr<func::FuncOp> autodiff::buildGradientFunction(func::FuncOp lossFn,
                                                        const Options &options,
                                                        StringRef name) {
  FunctionType type = lossFn.getFunctionType();
  auto lt = type.getNumResults() == 1
                ? dyn_cast<RankedTensorType>(type.getResult(0))
                : RankedTensorType();
  if (!lt || lt.getRank() != 0 || !isa<FloatType>(lt.getElementType()))
    return lossFn.emitError() << kPrefix
                              << "a loss function returns one 0-d "
                                 "floating-point tensor";
  if (failed(checkSymbol(lossFn, name)))
    return failure();
  for (unsigned i : options.wrt)
    if (i >= type.getNumInputs() || !isFloatLike(type.getInput(i)))
      return lossFn.emitError()
             << kPrefix << "argument " << i << " cannot be differentiated";
  SmallVector<Type> resultTypes{lt};
  for (unsigned i : options.wrt)
    resultTypes.push_back(type.getInput(i));
  func::FuncOp fn = newFunction(
      lossFn, name,
      FunctionType::get(lossFn.getContext(), type.getInputs(), resultTypes));
  Block &body = fn.getBody().front();
  OpBuilder b = OpBuilder::atBlockEnd(&body);
  Value one = arith::ConstantOp::create(
      b, lossFn.getLoc(), lt,
      DenseElementsAttr::get(lt, b.getFloatAttr(lt.getElementType(), 1.0)));
  Differentiator d(b);
  SmallVector<Value> results, grads;
  if (failed(d.run(lossFn, body.getArguments(), {one}, options.wrt, results,
                   grads))) {
    fn.erase();
    return failure();
  }
  SmallVector<Value> rs{results.front()};
  rs.append(grads);
  func::ReturnOp::create(b, lossFn.getLoc(), rs);
  return fn;
}

//===----------------------------------------------------------------------===//
// One op on its own (cost model)
//===----------------------------------------------------------------------===//

void autodiff::buildPrepareForDifferentiation(OpPassManager &pm) {
  cost::buildLowerTosaForAnalysis(pm);
}

FailureOr<OpBackward>
autodiff::differentiateOp(Operation *op, ArrayRef<unsigned> weightOperands,
                          function_ref<void(Operation *, bool)> visit) {
  MLIRContext *ctx = op->getContext();
  // Arguments: operands, then captured values.
  SmallVector<Value> inputs(op->getOperands());
  if (op->getNumRegions()) {
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(op->getRegions(), above);
    for (Value v : above)
      if (!llvm::is_contained(inputs, v))
        inputs.push_back(v);
  }
  SmallVector<unsigned> wrt, weights;
  for (auto [i, v] : llvm::enumerate(inputs)) {
    auto rt = dyn_cast<RankedTensorType>(v.getType());
    if (!rt || !isa<FloatType>(rt.getElementType()) || !rt.hasStaticShape())
      continue;
    wrt.push_back(i);
    // A value passed twice counts as a weight if any occurrence is one.
    for (unsigned w : weightOperands)
      if (w < op->getNumOperands() && op->getOperand(w) == v)
        weights.push_back(i);
  }
  llvm::sort(weights);
  weights.erase(std::unique(weights.begin(), weights.end()), weights.end());
  if (wrt.empty() || llvm::none_of(op->getResults(), [](Value r) {
        auto rt = dyn_cast<RankedTensorType>(r.getType());
        return rt && isa<FloatType>(rt.getElementType());
      }))
    return failure();

  // Diagnostics of the temporary IR are not the user's.
  ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
  OpBuilder b(ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToEnd(module->getBody());
  SmallVector<Type> types;
  for (Value v : inputs)
    types.push_back(v.getType());
  auto fn =
      func::FuncOp::create(b, op->getLoc(), "op",
                           FunctionType::get(ctx, types, op->getResultTypes()));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  IRMapping m;
  for (auto [v, a] : llvm::zip(inputs, entry->getArguments()))
    m.map(v, a);
  Operation *clone = b.clone(*op, m);
  func::ReturnOp::create(b, op->getLoc(), clone->getResults());
  if (clone->getDialect() && clone->getDialect()->getNamespace() == "tosa") {
    PassManager pm(ctx, ModuleOp::getOperationName());
    buildPrepareForDifferentiation(pm.nest<func::FuncOp>());
    if (failed(pm.run(*module)))
      return failure();
  }
  Options options;
  options.wrt = wrt;
  options.weights = weights;
  // The B and W costed are the slices without CSE (Options).
  options.eliminateCommonSubexpressions = false;
  FailureOr<Gradient> grad = differentiate(fn, options);
  if (failed(grad))
    return failure();
  for (auto [f, isW] : {std::pair{grad->b, false}, std::pair{grad->w, true}})
    for (Operation &g : f.getBody().front().without_terminator())
      visit(&g, isW);
  OpBackward r{grad->savedBytes, grad->stashBytes, {}, {}, 0};
  // What B+W reads: its first arguments are the function's (op's operands,
  // then captured values); F returns op's results, then the saved values.
  Block &bb = grad->bwd.getBody().front();
  r.readsOperand.assign(op->getNumOperands(), false);
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    r.readsOperand[i] = !bb.getArgument(i).use_empty();
  r.readsResult.assign(op->getNumResults(), false);
  Operation *ret = grad->fwd.getBody().front().getTerminator();
  unsigned numResults = op->getNumResults();
  for (unsigned k = 0; k < grad->numSaved; ++k) {
    Value saved = ret->getOperand(numResults + k);
    auto it = llvm::find(ret->getOperands().take_front(numResults), saved);
    if (it != ret->operand_begin() + numResults)
      r.readsResult[it - ret->operand_begin()] = true;
    else if (auto a = dyn_cast<BlockArgument>(saved);
             a && a.getArgNumber() < op->getNumOperands())
      r.readsOperand[a.getArgNumber()] = true;
    else
      r.internalSavedBytes += bytesOf(saved.getType());
  }
  return r;
}
