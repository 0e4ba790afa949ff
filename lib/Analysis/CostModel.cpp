//===- CostModel.cpp - Per-op FLOP, byte and time estimates -----*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
//
// Formulas and their sources are in docs/CostModel.md; the comments here
// name the rule each branch implements.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"
#include "pipeopt/Analysis/CostModel.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSwitch.h"
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

static bool isTensorLike(Type type) {
  return isa<RankedTensorType, MemRefType, VectorType>(type);
}

static double sumBytes(ValueRange values) {
  double b = 0;
  for (Value v : values)
    b += typeBytes(v.getType());
  return b;
}

//===----------------------------------------------------------------------===//
// Op classification
//===----------------------------------------------------------------------===//

static bool isConstantOp(Operation *op) {
  if (op->hasTrait<OpTrait::ConstantLike>())
    return true;
  return llvm::StringSwitch<bool>(op->getName().getStringRef())
      .Cases({"tensor.empty", "tosa.const_shape",
              "ml_program.global_load_const", "arith.constant", "tosa.const"},
             true)
      .Default(false);
}

/// Ops that never move data: a row-major reshape of a tensor is a view.
static bool isViewOp(StringRef name) {
  return llvm::StringSwitch<bool>(name)
      .Cases({"tosa.reshape", "tosa.identity", "tensor.expand_shape",
              "tensor.collapse_shape", "tensor.cast", "tensor.reshape",
              "tensor.bitcast", "tensor.dim", "tensor.rank"},
             true)
      .Cases({"memref.cast", "memref.expand_shape", "memref.collapse_shape",
              "memref.reinterpret_cast", "memref.subview", "memref.view",
              "bufferization.to_tensor", "bufferization.to_buffer"},
             true)
      .Default(false);
}

/// Layout ops that a parameter may pass through on its way to a consumer;
/// returns the operand that carries the data, or nullptr.
static Value layoutSource(Operation *op) {
  StringRef name = op->getName().getStringRef();
  bool layout =
      isViewOp(name) || llvm::StringSwitch<bool>(name)
                            .Cases({"tosa.transpose", "tosa.cast", "tosa.slice",
                                    "tensor.extract_slice", "linalg.transpose",
                                    "linalg.broadcast", "linalg.copy"},
                                   true)
                            .Default(false);
  if (!layout) {
    // A linalg.generic that only copies its single input (a transpose or
    // broadcast written as a generic: no arithmetic in the body).
    auto generic = dyn_cast<linalg::GenericOp>(op);
    if (!generic || generic.getNumDpsInputs() != 1 ||
        generic.getNumDpsInits() != 1 ||
        !llvm::all_of(generic.getBody()->without_terminator(),
                      [](Operation &) { return false; }))
      return nullptr;
  }
  if (op->getNumOperands() == 0 || op->getNumResults() != 1)
    return nullptr;
  return op->getOperand(0);
}

bool cost::tracesToParameterSource(Value value, Value *root) {
  for (int depth = 0; depth < 64; ++depth) {
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      Operation *parent = arg.getOwner()->getParentOp();
      if (parent && isa<FunctionOpInterface>(parent) &&
          arg.getOwner()->isEntryBlock()) {
        if (root)
          *root = value;
        return true;
      }
      return false;
    }
    Operation *def = value.getDefiningOp();
    if (!def)
      return false;
    if (isConstantOp(def) && def->getName().getStringRef() != "tensor.empty" &&
        isTensorLike(value.getType())) {
      if (root)
        *root = value;
      return true;
    }
    Value src = layoutSource(def);
    if (!src)
      return false;
    value = src;
  }
  return false;
}

static bool isFunctionArgument(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && arg.getOwner()->isEntryBlock() &&
         isa_and_nonnull<FunctionOpInterface>(arg.getOwner()->getParentOp());
}

static bool isLinalgContraction(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp)
    return false;
  StringRef name = op->getName().getStringRef();
  if (name.contains("pooling"))
    return false;
  return linalg::isaContractionOpInterface(linalgOp) ||
         linalg::isaConvolutionOpInterface(linalgOp) || name.contains("conv") ||
         name.contains("matmul") || name.contains("matvec") ||
         name.contains("vecmat") || name.contains("dot");
}

static bool isTosaContraction(StringRef name) {
  return llvm::StringSwitch<bool>(name)
      .Cases({"tosa.matmul", "tosa.conv2d", "tosa.conv3d",
              "tosa.depthwise_conv2d", "tosa.transpose_conv2d"},
             true)
      .Default(false);
}

static bool isTosaElementwise(Operation *op) {
  if (op->hasTrait<OpTrait::tosa::TosaElementwiseOperator>())
    return true;
  return llvm::StringSwitch<bool>(op->getName().getStringRef())
      .Cases({"tosa.mul", "tosa.negate", "tosa.cast", "tosa.rescale",
              "tosa.table", "tosa.select", "tosa.clamp", "tosa.erf",
              "tosa.sigmoid", "tosa.tanh"},
             true)
      .Default(false);
}

llvm::SmallVector<unsigned> cost::parameterOperands(Operation *op) {
  llvm::SmallVector<unsigned> result;
  StringRef name = op->getName().getStringRef();
  auto addIfParam = [&](unsigned i) {
    if (i < op->getNumOperands() && tracesToParameterSource(op->getOperand(i)))
      result.push_back(i);
  };
  if (isLinalgContraction(op)) {
    // Right-hand side / filter: the second DPS input.
    auto linalgOp = cast<linalg::LinalgOp>(op);
    if (linalgOp.getNumDpsInputs() >= 2)
      addIfParam(linalgOp.getDpsInputOperand(1)->getOperandNumber());
    return result;
  }
  if (name == "tosa.matmul") {
    addIfParam(1);
    return result;
  }
  if (isTosaContraction(name)) {
    addIfParam(1); // weight
    addIfParam(2); // bias
    return result;
  }
  if (name == "tosa.gather") {
    addIfParam(0); // the table (embedding)
    return result;
  }
  bool elementwise = isTosaElementwise(op) || isa<linalg::LinalgOp>(op) ||
                     name.starts_with("arith.") || name.starts_with("math.");
  if (!elementwise)
    return result;
  unsigned numCandidates = op->getNumOperands();
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    numCandidates = linalgOp.getNumDpsInputs(); // not the inits
  for (unsigned i = 0; i < numCandidates; ++i) {
    Value root;
    if (!tracesToParameterSource(op->getOperand(i), &root) ||
        !isFunctionArgument(root))
      continue;
    auto type = dyn_cast<RankedTensorType>(root.getType());
    if (type && type.getRank() <= 1)
      result.push_back(i); // scale / bias vectors
  }
  return result;
}

//===----------------------------------------------------------------------===//
// FLOP counting inside payload regions
//===----------------------------------------------------------------------===//

/// Scalar operations per execution of `block` (one iteration of a
/// structured op): every arith / math op counts 1 except casts, constants,
/// index computations and yields.
static double scalarOpsPerIteration(Block &block) {
  double n = 0;
  for (Operation &op : block) {
    StringRef name = op.getName().getStringRef();
    if (op.hasTrait<OpTrait::IsTerminator>() || isConstantOp(&op))
      continue;
    if (op.getNumRegions() > 0) {
      for (Region &r : op.getRegions())
        for (Block &b : r)
          n += scalarOpsPerIteration(b);
      continue;
    }
    bool isCast =
        llvm::StringSwitch<bool>(name)
            .Cases({"arith.extf", "arith.truncf", "arith.extsi", "arith.extui",
                    "arith.trunci", "arith.sitofp", "arith.uitofp",
                    "arith.fptosi", "arith.fptoui", "arith.index_cast",
                    "arith.index_castui", "arith.bitcast"},
                   true)
            .Default(false);
    if (isCast || name == "linalg.index" || name.starts_with("tensor."))
      continue;
    if (name.starts_with("arith.") || name.starts_with("math.") ||
        name.starts_with("complex."))
      n += 1;
  }
  return n;
}

//===----------------------------------------------------------------------===//
// Estimation
//===----------------------------------------------------------------------===//

double cost::rooflineSeconds(const DeviceSpec &device, double flops,
                             double bytes, StringRef key, bool matrix) {
  double peak = device.peakFlops(key, matrix);
  double compute = peak > 0 ? flops / peak : 0;
  double memory =
      device.memoryBandwidth > 0 ? bytes / device.memoryBandwidth : 0;
  return std::max(compute, memory);
}

static double resultElements(Operation *op) {
  double n = 0;
  for (Type t : op->getResultTypes())
    n += numElements(t);
  return n;
}

static Type firstShapedType(ValueRange values) {
  for (Value v : values)
    if (isa<ShapedType>(v.getType()))
      return v.getType();
  return {};
}

/// Fills kind, flops and bytes of a linalg structured op.
static void estimateLinalg(linalg::LinalgOp op, OpCost &c) {
  Operation *o = op.getOperation();
  StringRef name = o->getName().getStringRef();
  double volume = 1;
  if (op.getShapesToLoopsMap()) {
    for (int64_t r : op.getStaticLoopRanges())
      volume *= ShapedType::isDynamic(r) ? 1.0 : static_cast<double>(r);
  } else {
    volume = resultElements(o);
  }
  double perIter = scalarOpsPerIteration(*op.getBlock());
  // Reads: every input; inits only when the payload reads them
  // (accumulation). Writes: every init/result.
  for (OpOperand *in : op.getDpsInputOperands())
    c.bytesRead += typeBytes(in->get().getType());
  for (OpOperand &init : op.getDpsInitsMutable()) {
    if (op.payloadUsesValueFromOperand(&init))
      c.bytesRead += typeBytes(init.get().getType());
    c.bytesWritten += typeBytes(init.get().getType());
  }
  c.flops = volume * perIter;
  if (isa<linalg::FillOp>(o) || name == "linalg.fill") {
    c.kind = OpKind::Fill;
    c.flops = 0;
    c.bytesRead = 0;
    return;
  }
  if (isLinalgContraction(o)) {
    c.kind = OpKind::Contraction;
    return;
  }
  if (name.contains("pooling")) {
    c.kind = OpKind::Pooling;
    return;
  }
  if (perIter == 0) {
    c.kind = OpKind::DataMovement; // transpose, broadcast, copy, yield-only
    return;
  }
  c.kind =
      op.getNumReductionLoops() > 0 ? OpKind::Reduction : OpKind::Elementwise;
}

/// Fills kind, flops and bytes of a TOSA op; false if not recognized.
static bool estimateTosa(Operation *op, OpCost &c) {
  StringRef name = op->getName().getStringRef();
  if (!name.starts_with("tosa."))
    return false;
  double out = resultElements(op);
  double outBytes = sumBytes(op->getResults());
  auto shape = [&](unsigned i) -> ArrayRef<int64_t> {
    if (i < op->getNumOperands())
      if (auto t = dyn_cast<RankedTensorType>(op->getOperand(i).getType()))
        return t.getShape();
    return {};
  };
  auto dim = [&](unsigned operand, int index) -> double {
    ArrayRef<int64_t> s = shape(operand);
    if (index < 0)
      index += s.size();
    if (index < 0 || index >= static_cast<int>(s.size()) ||
        ShapedType::isDynamic(s[index]))
      return 1;
    return static_cast<double>(s[index]);
  };
  auto readAllTensors = [&] {
    for (Value v : op->getOperands())
      if (isa<RankedTensorType>(v.getType()))
        c.bytesRead += typeBytes(v.getType());
  };

  if (name == "tosa.matmul") {
    // A[N,H,C] x B[N,C,W] -> [N,H,W]: 2 N H W C.
    c.kind = OpKind::Contraction;
    c.flops = 2 * out * dim(0, -1);
    c.bytesRead = typeBytes(op->getOperand(0).getType()) +
                  typeBytes(op->getOperand(1).getType());
    c.bytesWritten = outBytes;
    return true;
  }
  if (name == "tosa.conv2d" || name == "tosa.conv3d") {
    // weight [OC, KH, KW, (KD,) IC]: 2 * out * (weight elems / OC) + bias.
    double weight = numElements(op->getOperand(1).getType());
    double oc = dim(1, 0);
    c.kind = OpKind::Contraction;
    c.flops = 2 * out * (weight / std::max(oc, 1.0)) + out;
    readAllTensors();
    c.bytesWritten = outBytes;
    return true;
  }
  if (name == "tosa.depthwise_conv2d") {
    // weight [KH, KW, C, M], out [N, OH, OW, C*M]: 2 * out * KH * KW + bias.
    c.kind = OpKind::Contraction;
    c.flops = 2 * out * dim(1, 0) * dim(1, 1) + out;
    readAllTensors();
    c.bytesWritten = outBytes;
    return true;
  }
  if (name == "tosa.transpose_conv2d") {
    // Every input element scatters into OC x KH x KW outputs.
    double in = numElements(op->getOperand(0).getType());
    c.kind = OpKind::Contraction;
    c.flops = 2 * in * dim(1, 0) * dim(1, 1) * dim(1, 2) + out;
    readAllTensors();
    c.bytesWritten = outBytes;
    return true;
  }
  if (name == "tosa.max_pool2d" || name == "tosa.avg_pool2d") {
    double window = 1;
    if (auto kernel = op->getAttrOfType<DenseI64ArrayAttr>("kernel"))
      for (int64_t k : kernel.asArrayRef())
        window *= static_cast<double>(k);
    c.kind = OpKind::Pooling;
    c.flops = out * window;
    c.bytesRead = typeBytes(op->getOperand(0).getType());
    c.bytesWritten = outBytes;
    return true;
  }
  if (name == "tosa.const" || name == "tosa.const_shape") {
    c.kind = OpKind::Constant;
    return true;
  }
  if (name == "tosa.reshape" || name == "tosa.identity") {
    c.kind = OpKind::View;
    return true;
  }
  if (name.starts_with("tosa.reduce_") || name == "tosa.argmax") {
    c.kind = OpKind::Reduction;
    c.flops = numElements(op->getOperand(0).getType());
    c.bytesRead = typeBytes(op->getOperand(0).getType());
    c.bytesWritten = outBytes;
    return true;
  }
  if (name == "tosa.gather") {
    // Reads the gathered rows and the indices, not the whole table.
    c.kind = OpKind::DataMovement;
    c.bytesRead = outBytes + typeBytes(op->getOperand(1).getType());
    c.bytesWritten = outBytes;
    return true;
  }
  if (name == "tosa.slice") {
    c.kind = OpKind::DataMovement;
    c.bytesRead = outBytes;
    c.bytesWritten = outBytes;
    return true;
  }
  if (name == "tosa.transpose" || name == "tosa.concat" || name == "tosa.pad" ||
      name == "tosa.tile" || name == "tosa.reverse" || name == "tosa.scatter" ||
      name == "tosa.resize") {
    c.kind = OpKind::DataMovement;
    readAllTensors();
    c.bytesWritten = outBytes;
    if (name == "tosa.resize")
      c.flops = 4 * out; // bilinear: weighted sum of 4 neighbours
    return true;
  }
  if (isTosaElementwise(op)) {
    c.kind = OpKind::Elementwise;
    c.flops = name == "tosa.cast" ? 0 : out;
    readAllTensors();
    c.bytesWritten = outBytes;
    return true;
  }
  return false;
}

/// Fills kind, flops and bytes of a tensor-dialect op; false if unknown.
static bool estimateTensor(Operation *op, OpCost &c) {
  StringRef name = op->getName().getStringRef();
  if (!name.starts_with("tensor."))
    return false;
  double outBytes = sumBytes(op->getResults());
  if (name == "tensor.empty") {
    c.kind = OpKind::Constant;
    return true;
  }
  if (isViewOp(name)) {
    c.kind = OpKind::View;
    return true;
  }
  if (name == "tensor.splat" || name == "tensor.from_elements") {
    c.kind = OpKind::Fill;
    c.bytesWritten = outBytes;
    return true;
  }
  if (name == "tensor.generate") {
    c.kind = OpKind::Fill;
    c.bytesWritten = outBytes;
    for (Region &r : op->getRegions())
      for (Block &b : r)
        c.flops += resultElements(op) * scalarOpsPerIteration(b);
    if (c.flops > 0)
      c.kind = OpKind::Elementwise;
    return true;
  }
  if (name == "tensor.extract_slice") {
    c.kind = OpKind::DataMovement;
    c.bytesRead = outBytes;
    c.bytesWritten = outBytes;
    return true;
  }
  if (name == "tensor.insert_slice" || name == "tensor.parallel_insert_slice") {
    // In place: copies the source into the destination.
    double src = typeBytes(op->getOperand(0).getType());
    c.kind = OpKind::DataMovement;
    c.bytesRead = src;
    c.bytesWritten = src;
    return true;
  }
  if (name == "tensor.extract" || name == "tensor.insert") {
    Type t = op->getNumResults() ? op->getResult(0).getType() : Type();
    double elt = 4;
    if (t)
      elt = isa<ShapedType>(t) ? typeBytes(cast<ShapedType>(t).getElementType())
                               : typeBytes(t);
    c.kind = OpKind::DataMovement;
    c.bytesRead = elt;
    c.bytesWritten = elt;
    return true;
  }
  if (name == "tensor.pad" || name == "tensor.concat" ||
      name == "tensor.gather" || name == "tensor.scatter" ||
      name == "tensor.pack" || name == "tensor.unpack") {
    c.kind = OpKind::DataMovement;
    for (Value v : op->getOperands())
      if (isa<RankedTensorType>(v.getType()))
        c.bytesRead += typeBytes(v.getType());
    c.bytesWritten = outBytes;
    return true;
  }
  return false;
}

/// arith / math ops (on tensors or scalars).
static bool estimateArithMath(Operation *op, OpCost &c) {
  StringRef name = op->getName().getStringRef();
  if (!name.starts_with("arith.") && !name.starts_with("math."))
    return false;
  if (isConstantOp(op)) {
    c.kind = OpKind::Constant;
    return true;
  }
  bool isCast = name.ends_with("extf") || name.ends_with("truncf") ||
                name.ends_with("ext") || name.contains("tofp") ||
                name.contains("fpto") || name.contains("index_cast") ||
                name.ends_with("bitcast") || name.ends_with("extsi") ||
                name.ends_with("extui") || name.ends_with("trunci");
  c.kind = OpKind::Elementwise;
  c.flops = isCast ? 0 : resultElements(op);
  c.bytesRead = sumBytes(op->getOperands());
  c.bytesWritten = sumBytes(op->getResults());
  return true;
}

static bool hasTensorOperandOrResult(Operation *op) {
  return llvm::any_of(op->getOperandTypes(), isTensorLike) ||
         llvm::any_of(op->getResultTypes(), isTensorLike);
}

OpCost cost::estimateOp(Operation *op, const DeviceSpec &device,
                        const CostOptions &options, std::string *remark) {
  OpCost c;
  StringRef name = op->getName().getStringRef();
  bool known = true;

  // Layout ops on parameters are folded into their consumer.
  if (options.foldParameterLayout) {
    if (Value src = layoutSource(op)) {
      if (tracesToParameterSource(src)) {
        c.kind = OpKind::View;
        c.typeKey = typeKey(src.getType());
        c.paramBytes = 0;
        return c;
      }
    }
  }

  if (isConstantOp(op)) {
    c.kind = OpKind::Constant;
  } else if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    estimateLinalg(linalgOp, c);
  } else if (estimateTosa(op, c) || estimateTensor(op, c) ||
             estimateArithMath(op, c)) {
  } else if (isViewOp(name)) {
    c.kind = OpKind::View;
  } else if (name == "ml_program.global_load") {
    c.kind = OpKind::DataMovement;
    c.bytesRead = sumBytes(op->getResults());
    c.bytesWritten = c.bytesRead;
  } else {
    // Conservative: every operand and result crosses memory once, and one
    // operation per element of the largest of them.
    known = false;
    c.kind = OpKind::Unknown;
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
                              name, c.flops, c.bytes())
                    .str();
  }
  (void)known;

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
    c.forwardSeconds = rooflineSeconds(device, c.flops, c.bytes(), c.typeKey,
                                       c.kind == OpKind::Contraction) +
                       (launches ? device.opOverhead : 0);
  }

  // Parameters: bytes of the roots of the weight operands.
  llvm::SmallVector<unsigned> params = parameterOperands(op);
  for (unsigned i : params) {
    Value root;
    tracesToParameterSource(op->getOperand(i), &root);
    c.paramBytes += typeBytes(root.getType());
  }

  // Backward (docs/CostModel.md "Training"): contraction with a weight:
  // B = W = F; contraction of two activations: B = 2F (both input
  // gradients), W = 0; other ops: B = F, W = F if they read a weight
  // (scale / bias gradient), else 0. Constants, views, fills: 0.
  switch (c.kind) {
  case OpKind::Constant:
  case OpKind::View:
  case OpKind::Fill:
    break;
  case OpKind::Contraction:
    if (!params.empty()) {
      c.backwardInputSeconds = c.forwardSeconds;
      c.backwardWeightSeconds = c.forwardSeconds;
    } else {
      c.backwardInputSeconds = 2 * c.forwardSeconds;
    }
    break;
  case OpKind::Unknown:
    c.backwardInputSeconds = c.forwardSeconds;
    c.backwardWeightSeconds = c.forwardSeconds;
    break;
  default:
    c.backwardInputSeconds = c.forwardSeconds;
    c.backwardWeightSeconds = params.empty() ? 0 : c.forwardSeconds;
    break;
  }

  // B and W FLOPs in the ratio of the times (the rule's B = F means the
  // same FLOPs as F).
  if (c.forwardSeconds > 0) {
    c.backwardInputFlops =
        c.flops * c.backwardInputSeconds / c.forwardSeconds;
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
    : root(root), hardware(*getPreset("h100")) {}

CostAnalysis::CostAnalysis(Operation *root, Hardware hardware,
                           CostOptions options)
    : root(root), hardware(std::move(hardware)), options(options) {}

const OpCost &CostAnalysis::get(Operation *op) {
  auto it = cache.find(op);
  if (it != cache.end())
    return it->second;
  std::string remark;
  OpCost c = estimateOp(op, hardware.device, options, &remark);
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
      if (auto attr = op->getAttrOfType<IntegerAttr>(pipe::PipeDialect::StageAttrHelper::getNameStr()))
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
                        "has {1} ops",
                        index, ops.size()));
    analysis.setMeasured(ops[index], times);
  }
  return llvm::Error::success();
}
