//===- CostModel.cpp - Per-op FLOP, byte and time estimates -----*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
//
// Formulas and their sources are in docs/CostModel.md. What each op kind
// costs (FLOPs, bytes, kind, weight operands) is the table in OpRules.cpp;
// this file turns an entry into times, parameter bytes and B / W.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Analysis/CostModel.h"
#include "OpRules.h"
#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"
#include "pipeopt/Support/Plural.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace pipeopt;
using namespace pipeopt::cost;
using llvm::StringRef;

StringRef cost::toString(OpKind kind) {
  switch (kind) {
  case OpKind::Constant:
    return "constant";
  case OpKind::View:
    return "view";
  case OpKind::Fill:
    return "fill";
  case OpKind::Contraction:
    return "contraction";
  case OpKind::Pooling:
    return "pooling";
  case OpKind::Elementwise:
    return "elementwise";
  case OpKind::Reduction:
    return "reduction";
  case OpKind::DataMovement:
    return "data-movement";
  case OpKind::Unknown:
    return "unknown";
  }
  return "unknown";
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

double cost::numElements(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type)) {
    if (!shaped.hasRank())
      return 1;
    double n = 1;
    for (int64_t d : shaped.getShape())
      n *= ShapedType::isDynamic(d) ? 1.0 : static_cast<double>(d);
    return n;
  }
  return 1;
}

static double elementBytes(Type elt) {
  if (elt.isIntOrFloat())
    return std::max<double>(1.0, std::ceil(elt.getIntOrFloatBitWidth() / 8.0));
  if (elt.isIndex())
    return 8;
  if (auto complex = dyn_cast<ComplexType>(elt))
    return 2 * elementBytes(complex.getElementType());
  return 0;
}

double cost::typeBytes(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    return numElements(type) * elementBytes(shaped.getElementType());
  if (type.isIntOrIndexOrFloat())
    return elementBytes(type);
  return 0;
}

std::string cost::typeKey(Type elt) {
  if (auto shaped = dyn_cast<ShapedType>(elt))
    elt = shaped.getElementType();
  if (elt.isF64())
    return "f64";
  if (elt.isF32())
    return "f32";
  if (elt.isBF16())
    return "bf16";
  if (elt.isF16())
    return "f16";
  if (auto f = dyn_cast<FloatType>(elt))
    return f.getWidth() <= 8 ? "f8" : "f32";
  if (elt.isInteger())
    return elt.getIntOrFloatBitWidth() <= 8 ? "i8" : "i32";
  if (elt.isIndex())
    return "i32";
  return "f32";
}

//===----------------------------------------------------------------------===//
// Estimation
//===----------------------------------------------------------------------===//

double cost::rooflineSeconds(const machine::Device &device, double flops,
                             double bytes, StringRef key, bool matrix) {
  double peak = device.peakFlops(key, matrix);
  double compute = peak > 0 ? flops / peak : 0;
  double bandwidth = device.bytesPerSecondFor(bytes);
  double memory = bandwidth > 0 ? bytes / bandwidth : 0;
  return std::max(compute, memory);
}

static double sumBytes(ValueRange values) {
  double b = 0;
  for (Value v : values)
    b += typeBytes(v.getType());
  return b;
}

static Type firstShapedType(ValueRange values) {
  for (Value v : values)
    if (isa<ShapedType>(v.getType()))
      return v.getType();
  return {};
}

static bool isTensorLike(Type type) {
  return isa<RankedTensorType, MemRefType, VectorType>(type);
}

static bool hasTensorOperandOrResult(Operation *op) {
  return llvm::any_of(op->getOperandTypes(), isTensorLike) ||
         llvm::any_of(op->getResultTypes(), isTensorLike);
}

OpCost cost::estimateOp(Operation *op, const machine::Device &device,
                        const CostOptions &options, std::string *remark) {
  OpCost c;
  rules::OpRule rule = rules::describeOp(op);

  // Layout ops on parameters are folded into their consumer.
  if (options.foldParameterLayout && rule.layout && op->getNumOperands() > 0 &&
      op->getNumResults() == 1) {
    Value src = op->getOperand(0);
    if (tracesToParameterSource(src)) {
      c.kind = OpKind::View;
      c.typeKey = typeKey(src.getType());
      c.paramBytes = 0;
      return c;
    }
  }

  c.kind = rule.kind;
  c.flops = rule.flops;
  c.bytesRead = rule.bytesRead;
  c.bytesWritten = rule.bytesWritten;
  if (rule.kind == OpKind::Unknown) {
    // Conservative: every operand and result crosses memory once, and one
    // operation per element of the largest of them.
    c.bytesRead = sumBytes(op->getOperands());
    c.bytesWritten = sumBytes(op->getResults());
    double elems = 0;
    for (Type t : op->getOperandTypes())
      elems = std::max(elems, numElements(t));
    for (Type t : op->getResultTypes())
      elems = std::max(elems, numElements(t));
    c.flops = elems;
    // Nested ops (e.g. an scf.if body) add their own estimates.
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Operation &nested : block) {
          if (nested.hasTrait<OpTrait::IsTerminator>())
            continue;
          OpCost n = estimateOp(&nested, device, options, nullptr);
          c.flops += n.flops;
          c.bytesRead += n.bytesRead;
          c.bytesWritten += n.bytesWritten;
        }
    if (remark)
      *remark = llvm::formatv("unknown op '{0}': conservative estimate "
                              "({1:F0} FLOP, {2:F0} bytes: every operand and "
                              "result "
                              "moved once, one operation per element)",
                              op->getName().getStringRef(), c.flops, c.bytes())
                    .str();
  }

  // Element type for the peak: the first input of a contraction, else the
  // first result (or operand).
  Type t = c.kind == OpKind::Contraction ? firstShapedType(op->getOperands())
                                         : Type();
  if (!t)
    t = op->getNumResults() ? op->getResult(0).getType()
                            : firstShapedType(op->getOperands());
  if (t)
    c.typeKey = typeKey(t);

  // Time: roofline + overhead for ops that launch work.
  bool launches = c.kind != OpKind::Constant && c.kind != OpKind::View &&
                  hasTensorOperandOrResult(op);
  if (c.kind != OpKind::Constant && c.kind != OpKind::View) {
    bool matrix = c.kind == OpKind::Contraction;
    double t = rooflineSeconds(device, c.flops, c.bytes(), c.typeKey, matrix);
    // Packing the operands comes on top of the compute (CostModel.h).
    if (matrix && device.contractionOperandBytesPerSecond > 0) {
      double peak = device.peakFlops(c.typeKey, true);
      t = std::max(t,
                   (peak > 0 ? c.flops / peak : 0) +
                       c.bytesRead / device.contractionOperandBytesPerSecond);
    }
    c.forwardSeconds = t + (launches ? device.opOverheadSeconds : 0);
  }

  // Parameters: bytes of the sources of the weight operands.
  llvm::SmallVector<ParameterUse, 2> params = parameterUses(op);
  for (const ParameterUse &use : params)
    c.paramBytes += typeBytes(use.root.getType());

  // Backward (docs/CostModel.md "Training"): the ratios of the op's kind.
  rules::BackwardRatios ratios = rules::backwardRatios(c.kind);
  bool weighted = !params.empty();
  c.backwardInputSeconds =
      (weighted ? ratios.inputWithWeight : ratios.inputWithoutWeight) *
      c.forwardSeconds;
  c.backwardWeightSeconds =
      (weighted ? ratios.weightWithWeight : ratios.weightWithoutWeight) *
      c.forwardSeconds;

  // B and W FLOPs in the ratio of the times (the rule's B = F means the
  // same FLOPs as F).
  if (c.forwardSeconds > 0) {
    c.backwardInputFlops = c.flops * c.backwardInputSeconds / c.forwardSeconds;
    c.backwardWeightFlops =
        c.flops * c.backwardWeightSeconds / c.forwardSeconds;
  }

  // Saved activations: the results of ops that compute something.
  if (c.kind != OpKind::Constant && c.kind != OpKind::View &&
      c.kind != OpKind::Fill)
    c.savedActivationBytes = sumBytes(op->getResults());
  return c;
}

//===----------------------------------------------------------------------===//
// CostAnalysis
//===----------------------------------------------------------------------===//

CostAnalysis::CostAnalysis(Operation *root)
    : root(root), machine(*machine::getDevicePreset("h100")) {}

CostAnalysis::CostAnalysis(Operation *root, machine::Machine machine,
                           CostOptions options)
    : root(root), machine(std::move(machine)), options(options) {}

const OpCost &CostAnalysis::get(Operation *op) {
  auto it = cache.find(op);
  if (it != cache.end())
    return it->second;
  std::string remark;
  OpCost c = estimateOp(op, machine.device, options, &remark);
  if (!remark.empty() && emitRemarks &&
      !remarked.count(op->getName().getStringRef())) {
    remarked[op->getName().getStringRef()] = true;
    op->emitRemark() << remark;
  }
  return cache[op] = c;
}

void cost::applyMeasuredTimes(OpCost &c, const Profile::Times &times) {
  double ratio = times.forward >= 0 && c.forwardSeconds > 0
                     ? times.forward / c.forwardSeconds
                     : 1;
  double b = c.backwardInputSeconds, w = c.backwardWeightSeconds;
  if (times.forward >= 0)
    c.forwardSeconds = times.forward;
  if (times.backwardInput >= 0 || times.backwardWeight >= 0 ||
      times.backwardFull >= 0) {
    double full = times.backwardFull;
    double bShare = b + w > 0 ? b / (b + w) : 1;
    c.backwardInputSeconds = times.backwardInput >= 0 ? times.backwardInput
                             : full >= 0              ? full * bShare
                                                      : b * ratio;
    c.backwardWeightSeconds = times.backwardWeight >= 0 ? times.backwardWeight
                              : full >= 0               ? full * (1 - bShare)
                                                        : w * ratio;
  } else {
    c.backwardInputSeconds = b * ratio;
    c.backwardWeightSeconds = w * ratio;
  }
  c.measured = true;
}

void CostAnalysis::setMeasured(Operation *op, const Profile::Times &times) {
  OpCost c = get(op);
  applyMeasuredTimes(c, times);
  cache[op] = c;
}

void CostAnalysis::setBackward(Operation *op, double backwardInputSeconds,
                               double backwardWeightSeconds,
                               double backwardInputFlops,
                               double backwardWeightFlops) {
  OpCost c = get(op);
  c.backwardInputFlops = backwardInputFlops;
  c.backwardWeightFlops = backwardWeightFlops;
  if (!c.measured) {
    c.backwardInputSeconds = backwardInputSeconds;
    c.backwardWeightSeconds = backwardWeightSeconds;
  }
  cache[op] = c;
}

void CostAnalysis::setSavedActivationBytes(Operation *op, double bytes) {
  OpCost c = get(op);
  c.savedActivationBytes = bytes;
  cache[op] = c;
}

void CostAnalysis::scale(Operation *op, double factor) {
  OpCost c = get(op);
  c.forwardSeconds *= factor;
  c.backwardInputSeconds *= factor;
  c.backwardWeightSeconds *= factor;
  c.measured = true;
  cache[op] = c;
}

llvm::Error cost::applyProfile(CostAnalysis &analysis, Block &body,
                               const Profile &profile) {
  std::vector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  // Per-stage entries first, so per-op entries win where both apply.
  if (!profile.stages.empty()) {
    std::map<int, std::vector<Operation *>> byStage;
    for (Operation *op : ops)
      if (auto attr = op->getAttrOfType<IntegerAttr>(
              pipe::PipeDialect::StageAttrHelper::getNameStr()))
        byStage[attr.getInt()].push_back(op);
    if (byStage.empty())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "a per-stage profile needs the partition it was measured with: no "
          "op carries a 'pipe.stage' attribute (run -pipe-partition with the "
          "measured options first, or give per-op times)");
    for (const auto &[stage, times] : profile.stages)
      if (!byStage.count(stage))
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            llvm::formatv("profile stage {0} has no op with pipe.stage = {0}",
                          stage));
    // A per-stage profile (what pipeopt-run writes) measured with another
    // partition (another model, another stage count) must not be applied
    // silently to part of this one. Profiles that add per-op times may
    // cover the remaining stages op by op.
    if (profile.ops.empty() && byStage.size() != profile.stages.size())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("the profile has times for {0} stage(s) but the "
                        "partition has {1}: it was measured with another "
                        "partition (use the partitioned module it was "
                        "measured with)",
                        profile.stages.size(), byStage.size()));
    for (const auto &[stage, times] : profile.stages) {
      auto it = byStage.find(stage);
      // Each op gets the share of the measured stage time that its
      // estimate has of the estimated stage time (equal shares when the
      // estimates are all 0).
      double f = 0, b = 0, w = 0;
      for (Operation *op : it->second) {
        const OpCost &c = analysis.get(op);
        f += c.forwardSeconds;
        b += c.backwardInputSeconds;
        w += c.backwardWeightSeconds;
      }
      double n = static_cast<double>(it->second.size());
      auto share = [&](double measured, double estimate, double total) {
        if (measured < 0)
          return -1.0;
        return total > 0 ? measured * estimate / total : measured / n;
      };
      for (Operation *op : it->second) {
        OpCost c = analysis.get(op);
        Profile::Times t;
        t.forward = share(times.forward, c.forwardSeconds, f);
        t.backwardInput = share(times.backwardInput, c.backwardInputSeconds, b);
        t.backwardWeight =
            share(times.backwardWeight, c.backwardWeightSeconds, w);
        t.backwardFull =
            share(times.backwardFull,
                  c.backwardInputSeconds + c.backwardWeightSeconds, b + w);
        analysis.setMeasured(op, t);
      }
    }
  }
  for (const auto &[index, times] : profile.ops) {
    if (index >= static_cast<int>(ops.size()))
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("profile op index {0} is out of range: the function "
                        "has {1}",
                        index, countOf(ops.size(), "op")));
    analysis.setMeasured(ops[index], times);
  }
  return llvm::Error::success();
}
