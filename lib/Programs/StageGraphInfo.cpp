//===- StageGraphInfo.cpp - Stage graph of an outlined function -*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Programs/StageGraphInfo.h"

#include "mlir/IR/BuiltinTypes.h"
#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace pipeopt;

bool pipeopt::isStageGraph(func::FuncOp fn) {
  if (fn.isExternal())
    return false;
  return !fn.getBody().getOps<pipe::StageCallOp>().empty();
}

double pipeopt::tensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  unsigned bits = tensor.getElementType().isIntOrFloat()
                      ? tensor.getElementType().getIntOrFloatBitWidth()
                      : 0;
  if (auto complex = dyn_cast<ComplexType>(tensor.getElementType()))
    if (complex.getElementType().isIntOrFloat())
      bits = 2 * complex.getElementType().getIntOrFloatBitWidth();
  return static_cast<double>(tensor.getNumElements()) * ((bits + 7) / 8);
}

int StageGraphInfo::incomingPosition(int stage, int fromStage,
                                     int valueIndex) const {
  const auto &in = incoming[stage];
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].peerStage == fromStage && in[i].valueIndex == valueIndex)
      return static_cast<int>(i);
  return -1;
}

FailureOr<StageGraphInfo> pipeopt::analyzeStageGraph(func::FuncOp fn) {
  StageGraphInfo info;
  info.func = fn;
  Block &body = fn.getBody().front();
  if (fn.getBody().getBlocks().size() != 1)
    return fn.emitError() << "stage graph function @" << fn.getSymName()
                          << " must have a single block";

  auto requireTensor = [](Operation *op, Type type,
                          const Twine &what) -> LogicalResult {
    if (isa<RankedTensorType>(type))
      return success();
    return op->emitError() << what << " has type " << type
                           << "; values crossing stages, model arguments and "
                              "results must be ranked tensors";
  };

  // Stage of the call producing each value.
  DenseMap<Operation *, int> stageOfCall;
  for (Operation &op : body) {
    if (isa<func::ReturnOp>(op))
      continue;
    auto call = dyn_cast<pipe::StageCallOp>(op);
    if (!call)
      return op.emitError()
             << "a stage graph may only contain pipe.stage_call and "
                "func.return, found '"
             << op.getName() << "'";
    int expected = info.numStages();
    if (call.getStage() != static_cast<uint64_t>(expected))
      return call.emitError()
             << "stage calls must appear once per stage in stage order: "
                "expected stage "
             << expected << ", found stage " << call.getStage();
    stageOfCall[call] = expected;
    info.calls.push_back(call);
  }
  int S = info.numStages();
  if (auto attr = fn->getAttrOfType<IntegerAttr>(
          pipe::PipeDialect::NumStagesAttrHelper::getNameStr()))
    if (attr.getInt() != S)
      return fn.emitError()
             << "pipe.num_stages = " << attr.getInt()
             << " but the stage graph has " << S << " stage calls";

  info.sources.resize(S);
  info.incoming.resize(S);
  info.outgoing.resize(S);
  for (int k = 0; k < S; ++k) {
    pipe::StageCallOp call = info.calls[k];
    for (auto [i, operand] : llvm::enumerate(call.getArgs())) {
      StageGraphInfo::Source src;
      if (auto arg = dyn_cast<BlockArgument>(operand)) {
        if (failed(
                requireTensor(call, operand.getType(),
                              "model argument #" + Twine(arg.getArgNumber()))))
          return failure();
        src.argIndex = arg.getArgNumber();
      } else {
        int from = stageOfCall.lookup(operand.getDefiningOp());
        if (failed(requireTensor(call, operand.getType(),
                                 "the value from stage " + Twine(from) +
                                     " (operand #" + Twine(i) + ")")))
          return failure();
        auto &values = info.edgeValues[{from, k}];
        auto it = llvm::find(values, operand);
        src.fromStage = from;
        src.valueIndex = static_cast<int>(it - values.begin());
        if (it == values.end())
          values.push_back(operand);
      }
      info.sources[k].push_back(src);
    }
  }

  for (auto &[edge, values] : info.edgeValues) {
    double bytes = 0;
    for (auto [vi, v] : llvm::enumerate(values)) {
      bytes += tensorBytes(v.getType());
      info.outgoing[edge.first].push_back(
          {edge.second, static_cast<int>(vi), v});
      info.incoming[edge.second].push_back(
          {edge.first, static_cast<int>(vi), v});
    }
    info.graph.edges.push_back({edge.first, edge.second, bytes});
  }
  info.graph.numStages = S;

  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto result = dyn_cast<OpResult>(v);
    if (!result)
      return ret.emitError() << "result #" << i
                             << " returns a model argument directly; every "
                                "result must be produced by a stage";
    if (failed(requireTensor(ret, v.getType(), "result #" + Twine(i))))
      return failure();
    info.outputs.push_back(
        {stageOfCall.lookup(result.getOwner()), result.getResultNumber()});
  }
  return info;
}
