//===- OutlineStagesPass.cpp - pipe-outline-stages: one func per stage -*- C++
//-*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
//
// Turns a partitioned function (pipe.stage on every op) into stage functions
// @<f>_stage<k> and a stage graph of pipe.stage_call ops in @<f>. See the
// pass description in Passes.td for the calling convention.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Support/OptionRange.h"

#include "pipeopt/Analysis/PartitionGraph.h"
#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"
#include "pipeopt/Support/Plural.h"
#include "pipeopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

namespace pipeopt {
#define GEN_PASS_DEF_OUTLINESTAGESPASS
#include "pipeopt/Transforms/Passes.h.inc"

#include <optional>
} // namespace pipeopt

using namespace mlir;
using namespace pipeopt;

namespace {

/// Ops that are always cloned instead of passed: constants and empty
/// tensors carry no data worth sending.
bool isAlwaysCloned(Operation *op) {
  if (op->getNumRegions() != 0)
    return false;
  return op->hasTrait<OpTrait::ConstantLike>() || isa<tensor::EmptyOp>(op) ||
         op->getName().getStringRef() == "tosa.const_shape";
}

struct OutlineStagesPass
    : pipeopt::impl::OutlineStagesPassBase<OutlineStagesPass> {
  using Base::Base;
  void runOnOperation() override;
  LogicalResult outline(func::FuncOp fn, SymbolTable &symbols);
};

} // namespace

void OutlineStagesPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  SmallVector<func::FuncOp> fns;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal() ||
        fn->hasAttr(pipe::PipeDialect::StageAttrHelper::getNameStr()))
      continue;
    bool partitioned = false;
    fn.walk([&](Operation *op) {
      if (op != fn &&
          op->hasAttr(pipe::PipeDialect::StageAttrHelper::getNameStr())) {
        partitioned = true;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (partitioned)
      fns.push_back(fn);
  }
  if (fns.empty()) {
    // Nothing to do is legal but almost always a mistake in the pipeline
    // (partition not run, or run twice): warn at the first function.
    Location loc = module.getLoc();
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal()) {
        loc = fn.getLoc();
        break;
      }
    emitWarning(loc) << "pipe-outline-stages: no partitioned function (no op "
                        "carries 'pipe.stage'; run -pipe-partition first); "
                        "the module is left unchanged";
    return;
  }
  for (func::FuncOp fn : fns)
    if (failed(outline(fn, symbols)))
      return signalPassFailure();
}

LogicalResult OutlineStagesPass::outline(func::FuncOp fn,
                                         SymbolTable &symbols) {
  if (!fn.getBody().hasOneBlock())
    return fn.emitError() << "pipe-outline-stages: expected a single-block "
                             "function body";
  Block &body = fn.getBody().front();
  Operation *terminator = body.getTerminator();
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  llvm::DenseMap<Operation *, int> index;
  for (auto [i, op] : llvm::enumerate(ops))
    index[op] = static_cast<int>(i);

  // Stage of every op.
  std::optional<int64_t> givenStages;
  if (auto attr = fn->getAttrOfType<IntegerAttr>(
          pipe::PipeDialect::NumStagesAttrHelper::getNameStr()))
    givenStages = attr.getInt();
  std::vector<int64_t> stageOf(ops.size());
  int64_t maxStage = -1;
  for (auto [i, op] : llvm::enumerate(ops)) {
    auto attr = op->getAttrOfType<IntegerAttr>(
        pipe::PipeDialect::StageAttrHelper::getNameStr());
    if (!attr)
      return op->emitError() << "pipe-outline-stages: op has no 'pipe.stage' "
                                "attribute (run -pipe-partition first)";
    stageOf[i] = attr.getInt();
    if (stageOf[i] < 0 || stageOf[i] >= kMaxPipelineCount)
      return op->emitError()
             << "pipe-outline-stages: pipe.stage must be between 0 and "
             << kMaxPipelineCount - 1 << ", got " << stageOf[i];
    maxStage = std::max(maxStage, stageOf[i]);
  }
  int64_t numStages = givenStages ? *givenStages : maxStage + 1;
  if (failed(checkIntRange(fn.getLoc(), "pipe-outline-stages",
                           pipe::PipeDialect::NumStagesAttrHelper::getNameStr(),
                           numStages, 1, kMaxPipelineCount)))
    return failure();
  for (auto [i, op] : llvm::enumerate(ops))
    if (stageOf[i] >= numStages)
      return op->emitError()
             << "pipe-outline-stages: pipe.stage = " << stageOf[i]
             << " is out of range for " << countOf(numStages, "stage");

  // Rematerialized ops: marked (or constants), and fed only by arguments
  // and other rematerialized ops.
  std::vector<bool> remat(ops.size(), false);
  for (auto [i, op] : llvm::enumerate(ops)) {
    if (!op->hasAttr(pipe::PipeDialect::RematAttrHelper::getNameStr()) &&
        !isAlwaysCloned(op))
      continue;
    remat[i] = llvm::all_of(valuesReadBy(op), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return !def || remat[index.lookup(def)];
    });
    if (!remat[i] &&
        op->hasAttr(pipe::PipeDialect::RematAttrHelper::getNameStr()))
      return op->emitError() << "pipe-outline-stages: op is marked "
                                "'pipe.remat' but uses a value that is not "
                                "rematerializable";
  }

  // Placed ops per stage; dependency and type checks.
  std::vector<SmallVector<int>> placed(numStages);
  for (auto [i, op] : llvm::enumerate(ops)) {
    if (remat[i])
      continue;
    placed[stageOf[i]].push_back(static_cast<int>(i));
    for (Value v : valuesReadBy(op)) {
      Operation *def = v.getDefiningOp();
      if (!def)
        continue;
      int j = index.lookup(def);
      if (remat[j])
        continue;
      if (stageOf[j] > stageOf[i])
        return op->emitError()
               << "pipe-outline-stages: op of stage " << stageOf[i]
               << " uses a value produced in the later stage " << stageOf[j];
      if (stageOf[j] < stageOf[i] && !isa<RankedTensorType>(v.getType()))
        return def->emitError()
               << "pipe-outline-stages: value of type " << v.getType()
               << " flows from stage " << stageOf[j] << " to stage "
               << stageOf[i]
               << "; only ranked tensors can be passed between stages";
    }
  }
  for (int64_t k = 0; k < numStages; ++k)
    if (placed[k].empty())
      return fn.emitError()
             << "pipe-outline-stages: stage " << k << " of @" << fn.getSymName()
             << " is empty (no op has pipe.stage = " << k << ")";

  // Per stage: inputs (arguments, then values of earlier stages), needed
  // remat ops, and outputs (values used later or returned).
  std::vector<SmallVector<Value>> inputs(numStages), outputs(numStages);
  std::vector<SmallVector<int>> members(numStages); // remat + placed, sorted
  llvm::DenseMap<Value, int64_t> outputStage;
  auto addOutput = [&](Value v, int64_t stage) {
    if (outputStage.count(v))
      return;
    outputStage[v] = stage;
    outputs[stage].push_back(v);
  };
  // Outputs in program order of producers: collect (index, result) pairs.
  std::vector<std::vector<std::pair<int, unsigned>>> outKeys(numStages);
  for (int64_t k = 0; k < numStages; ++k) {
    llvm::SetVector<int> needed;
    llvm::SetVector<Value> argsUsed, external;
    SmallVector<int> work(placed[k].begin(), placed[k].end());
    if (k == numStages - 1)
      for (Value v : terminator->getOperands())
        if (Operation *def = v.getDefiningOp())
          if (remat[index.lookup(def)])
            work.push_back(index.lookup(def));
    llvm::DenseSet<int> visited;
    while (!work.empty()) {
      int i = work.pop_back_val();
      if (!visited.insert(i).second)
        continue;
      if (remat[i])
        needed.insert(i);
      for (Value v : valuesReadBy(ops[i])) {
        Operation *def = v.getDefiningOp();
        if (!def) {
          argsUsed.insert(v);
          continue;
        }
        int j = index.lookup(def);
        if (remat[j])
          work.push_back(j);
        else if (stageOf[j] != k)
          external.insert(v);
      }
    }
    SmallVector<Value> args(argsUsed.begin(), argsUsed.end());
    llvm::sort(args, [](Value a, Value b) {
      return cast<BlockArgument>(a).getArgNumber() <
             cast<BlockArgument>(b).getArgNumber();
    });
    SmallVector<Value> ext(external.begin(), external.end());
    auto key = [&](Value v) {
      return std::make_pair(index.lookup(v.getDefiningOp()),
                            cast<OpResult>(v).getResultNumber());
    };
    llvm::sort(ext, [&](Value a, Value b) { return key(a) < key(b); });
    inputs[k] = args;
    inputs[k].append(ext.begin(), ext.end());
    members[k].assign(needed.begin(), needed.end());
    members[k].append(placed[k].begin(), placed[k].end());
    llvm::sort(members[k]);
  }
  // Outputs: values of stage j consumed by another stage, or returned.
  for (int64_t k = 0; k < numStages; ++k)
    for (Value v : inputs[k])
      if (Operation *def = v.getDefiningOp())
        outKeys[stageOf[index.lookup(def)]].push_back(
            {index.lookup(def), cast<OpResult>(v).getResultNumber()});
  for (Value v : terminator->getOperands())
    if (Operation *def = v.getDefiningOp()) {
      int i = index.lookup(def);
      int64_t s = remat[i] ? numStages - 1 : stageOf[i];
      outKeys[s].push_back({i, cast<OpResult>(v).getResultNumber()});
    }
  for (int64_t k = 0; k < numStages; ++k) {
    llvm::sort(outKeys[k]);
    for (auto [i, r] : outKeys[k])
      addOutput(ops[i]->getResult(r), k);
  }

  // Create the stage functions right after @fn, in stage order.
  MLIRContext *ctx = fn.getContext();
  OpBuilder builder(ctx);
  builder.setInsertionPointAfter(fn);
  SmallVector<func::FuncOp> stageFns;
  for (int64_t k = 0; k < numStages; ++k) {
    std::string name = llvm::formatv("{0}_stage{1}", fn.getSymName(), k).str();
    if (symbols.lookup(name))
      return fn.emitError() << "pipe-outline-stages: cannot create @" << name
                            << ": the symbol already exists";
    SmallVector<Type> inTypes, outTypes;
    for (Value v : inputs[k])
      inTypes.push_back(v.getType());
    for (Value v : outputs[k])
      outTypes.push_back(v.getType());
    auto stageFn = func::FuncOp::create(
        builder, fn.getLoc(), name, builder.getFunctionType(inTypes, outTypes));
    stageFn->setAttr(pipe::PipeDialect::StageAttrHelper::getNameStr(),
                     builder.getI64IntegerAttr(k));
    Block *entry = stageFn.addEntryBlock();
    IRMapping mapping;
    for (auto [v, arg] : llvm::zip(inputs[k], entry->getArguments()))
      mapping.map(v, arg);
    OpBuilder inner = OpBuilder::atBlockEnd(entry);
    for (int i : members[k]) {
      Operation *clone = inner.clone(*ops[i], mapping);
      clone->removeAttr(pipe::PipeDialect::StageAttrHelper::getNameStr());
      clone->removeAttr(pipe::PipeDialect::RematAttrHelper::getNameStr());
      if (remat[i])
        ++numCloned;
    }
    SmallVector<Value> results;
    for (Value v : outputs[k])
      results.push_back(mapping.lookup(v));
    func::ReturnOp::create(inner, fn.getLoc(), results);
    symbols.insert(stageFn);
    builder.setInsertionPointAfter(stageFn);
    stageFns.push_back(stageFn);
    ++numStageFunctions;
  }

  // Rewrite @fn into the stage graph.
  OpBuilder graph(terminator);
  llvm::DenseMap<Value, Value> outer;
  for (int64_t k = 0; k < numStages; ++k) {
    SmallVector<Value> operands;
    for (Value v : inputs[k])
      operands.push_back(isa<BlockArgument>(v) ? v : outer.lookup(v));
    SmallVector<Type> outTypes;
    for (Value v : outputs[k])
      outTypes.push_back(v.getType());
    auto call = pipe::StageCallOp::create(
        graph, fn.getLoc(), outTypes,
        FlatSymbolRefAttr::get(ctx, stageFns[k].getSymName()),
        graph.getI64IntegerAttr(k), operands);
    for (auto [v, r] : llvm::zip(outputs[k], call.getResults()))
      outer[v] = r;
  }
  for (OpOperand &operand : terminator->getOpOperands())
    if (!isa<BlockArgument>(operand.get()))
      operand.set(outer.lookup(operand.get()));
  for (Operation *op : llvm::reverse(ops)) {
    op->dropAllUses();
    op->erase();
  }
  fn->setAttr(pipe::PipeDialect::NumStagesAttrHelper::getNameStr(),
              graph.getI64IntegerAttr(numStages));
  return success();
}
