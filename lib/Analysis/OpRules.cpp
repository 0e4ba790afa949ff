//===- OpRules.cpp - The cost model's table of op kinds ----------*- C++
//-*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
//
// One case of describeOp() per op kind: its OpKind, FLOPs, bytes, whether a
// parameter passes through it and which operands hold weights. Adding an op
// kind is one case here (and a line in docs/CostModel.md's table and in
// test/Analysis/cost-model.mlir). Formulas and sources: docs/CostModel.md.
//
//===----------------------------------------------------------------------===//

#include "OpRules.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace pipeopt;
using namespace pipeopt::cost;
using namespace pipeopt::cost::rules;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static double sumBytes(ValueRange values) {
  double b = 0;
  for (Value v : values)
    b += typeBytes(v.getType());
  return b;
}

static double resultElements(Operation *op) {
  double n = 0;
  for (Type t : op->getResultTypes())
    n += numElements(t);
  return n;
}

/// Bytes of every ranked-tensor operand.
static double rankedTensorOperandBytes(Operation *op) {
  double b = 0;
  for (Value v : op->getOperands())
    if (isa<RankedTensorType>(v.getType()))
      b += typeBytes(v.getType());
  return b;
}

/// Extent `index` (negative: from the back) of operand `operand`'s ranked
/// tensor type; 1 when unknown.
static double dim(Operation *op, unsigned operand, int index) {
  if (operand >= op->getNumOperands())
    return 1;
  auto t = dyn_cast<RankedTensorType>(op->getOperand(operand).getType());
  if (!t)
    return 1;
  ArrayRef<int64_t> s = t.getShape();
  if (index < 0)
    index += s.size();
  if (index < 0 || index >= static_cast<int>(s.size()) ||
      ShapedType::isDynamic(s[index]))
    return 1;
  return static_cast<double>(s[index]);
}

bool rules::isConstantOp(Operation *op) {
  return op->hasTrait<OpTrait::ConstantLike>() ||
         isa<tensor::EmptyOp, ml_program::GlobalLoadConstOp>(op);
}

/// Ops of the arith and math dialects (element-wise, on tensors or
/// scalars).
static bool isArithOrMath(Operation *op) {
  return isa_and_nonnull<arith::ArithDialect, math::MathDialect>(
      op->getDialect());
}

/// Element-type conversions: no arithmetic (arith.extf, truncf, sitofp,
/// index_cast, bitcast, scaling_extf, ...).
static bool isCast(Operation *op) { return isa<CastOpInterface>(op); }

double rules::scalarOpsPerIteration(Block &block) {
  double n = 0;
  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>() || isConstantOp(&op))
      continue;
    if (op.getNumRegions() > 0) {
      for (Region &r : op.getRegions())
        for (Block &b : r)
          n += scalarOpsPerIteration(b);
      continue;
    }
    // linalg.index, tensor ops and other dialects count 0.
    bool counted = isArithOrMath(&op) ||
                   isa_and_nonnull<complex::ComplexDialect>(op.getDialect());
    if (counted && !isCast(&op))
      n += 1;
  }
  return n;
}

//===----------------------------------------------------------------------===//
// linalg
//===----------------------------------------------------------------------===//

/// The named pooling ops (they implement the convolution interface, but
/// cost the vector peak and have no weight).
static bool isLinalgPooling(Operation *op) {
  return isa<linalg::PoolingNhwcSumOp, linalg::PoolingNchwSumOp,
             linalg::PoolingNhwcMaxOp, linalg::PoolingNhwcMaxUnsignedOp,
             linalg::PoolingNchwMaxOp, linalg::PoolingNhwcMinOp,
             linalg::PoolingNhwcMinUnsignedOp, linalg::PoolingNwcSumOp,
             linalg::PoolingNcwSumOp, linalg::PoolingNwcMaxOp,
             linalg::PoolingNwcMaxUnsignedOp, linalg::PoolingNcwMaxOp,
             linalg::PoolingNwcMinOp, linalg::PoolingNwcMinUnsignedOp,
             linalg::PoolingNdhwcSumOp, linalg::PoolingNdhwcMaxOp,
             linalg::PoolingNdhwcMinOp>(op);
}

/// Matmuls, convolutions and every linalg op (generic included) that is a
/// contraction or convolution; the quantized matmuls (which declare neither
/// interface: their payload subtracts the zero points) are listed.
static bool isLinalgContraction(linalg::LinalgOp op) {
  if (isLinalgPooling(op))
    return false;
  return isa<linalg::QuantizedMatmulOp, linalg::QuantizedBatchMatmulOp>(
             op.getOperation()) ||
         linalg::isaContractionOpInterface(op) ||
         linalg::isaConvolutionOpInterface(op);
}

/// A linalg.generic that only copies its single input (a transpose or
/// broadcast written as a generic: nothing but the yield in its body).
static bool isCopyingGeneric(linalg::GenericOp op) {
  return op.getNumDpsInputs() == 1 && op.getNumDpsInits() == 1 &&
         op.getBody()->without_terminator().empty();
}

static OpRule describeLinalg(linalg::LinalgOp op) {
  OpRule r;
  Operation *o = op.getOperation();
  r.layout = isa<linalg::TransposeOp, linalg::BroadcastOp, linalg::CopyOp>(o);
  if (auto generic = dyn_cast<linalg::GenericOp>(o))
    r.layout = isCopyingGeneric(generic);
  double volume = 1;
  if (op.getShapesToLoopsMap()) {
    for (int64_t range : op.getStaticLoopRanges())
      volume *= ShapedType::isDynamic(range) ? 1.0 : static_cast<double>(range);
  } else {
    volume = resultElements(o);
  }
  double perIter = scalarOpsPerIteration(*op.getBlock());
  // Reads: every input; inits only when the payload reads them
  // (accumulation). Writes: every init/result.
  for (OpOperand *in : op.getDpsInputOperands())
    r.bytesRead += typeBytes(in->get().getType());
  for (OpOperand &init : op.getDpsInitsMutable()) {
    if (op.payloadUsesValueFromOperand(&init))
      r.bytesRead += typeBytes(init.get().getType());
    r.bytesWritten += typeBytes(init.get().getType());
  }
  r.flops = volume * perIter;
  bool contraction = isLinalgContraction(op);
  // Weights: a contraction's right-hand side / filter (second DPS input);
  // of any other structured op, its rank <= 1 argument inputs.
  if (contraction) {
    r.weights = WeightOperands::Listed;
    if (op.getNumDpsInputs() >= 2)
      r.weightOperands.push_back(op.getDpsInputOperand(1)->getOperandNumber());
  } else {
    r.weights = WeightOperands::VectorArguments;
    r.numCandidates = op.getNumDpsInputs();
  }
  if (isa<linalg::FillOp>(o)) {
    r.kind = OpKind::Fill;
    r.flops = 0;
    r.bytesRead = 0;
  } else if (contraction) {
    r.kind = OpKind::Contraction;
  } else if (isLinalgPooling(o)) {
    r.kind = OpKind::Pooling;
  } else if (perIter == 0) {
    r.kind = OpKind::DataMovement; // transpose, broadcast, copy, yield-only
  } else {
    r.kind =
        op.getNumReductionLoops() > 0 ? OpKind::Reduction : OpKind::Elementwise;
  }
  return r;
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

/// TOSA element-wise ops: those with the TosaElementwiseOperator trait, and
/// these, which lack it.
static bool isTosaElementwise(Operation *op) {
  return op->hasTrait<OpTrait::tosa::TosaElementwiseOperator>() ||
         isa<tosa::MulOp, tosa::CastOp, tosa::RescaleOp, tosa::TableOp>(op);
}

OpRule rules::describeOp(Operation *op) {
  OpRule r;
  if (isConstantOp(op)) {
    r.kind = OpKind::Constant;
    return r;
  }
  double out = resultElements(op);
  double outBytes = sumBytes(op->getResults());
  auto make = [&](OpKind kind, double flops, double read, double written) {
    r.kind = kind;
    r.flops = flops;
    r.bytesRead = read;
    r.bytesWritten = written;
    return r;
  };
  auto listed = [&](std::initializer_list<unsigned> operands) {
    r.weights = WeightOperands::Listed;
    r.weightOperands.assign(operands);
  };
  auto view = [&](Operation *) {
    r.layout = true;
    return make(OpKind::View, 0, 0, 0);
  };
  return llvm::TypeSwitch<Operation *, OpRule>(op)
      .Case<linalg::LinalgOp>(describeLinalg)
      // --- tosa ---
      .Case<tosa::MatMulOp>([&](tosa::MatMulOp) {
        // A[N,H,C] x B[N,C,W] -> [N,H,W]: 2 N H W C.
        listed({1});
        return make(OpKind::Contraction, 2 * out * dim(op, 0, -1),
                    typeBytes(op->getOperand(0).getType()) +
                        typeBytes(op->getOperand(1).getType()),
                    outBytes);
      })
      .Case<tosa::Conv2DOp, tosa::Conv3DOp>([&](Operation *) {
        // weight [OC, KH, KW, (KD,) IC]: 2 * out * (weight elems / OC) + bias.
        listed({1, 2});
        double weight = numElements(op->getOperand(1).getType());
        return make(OpKind::Contraction,
                    2 * out * (weight / std::max(dim(op, 1, 0), 1.0)) + out,
                    rankedTensorOperandBytes(op), outBytes);
      })
      .Case<tosa::DepthwiseConv2DOp>([&](tosa::DepthwiseConv2DOp) {
        // weight [KH, KW, C, M], out [N, OH, OW, C*M]: 2 * out * KH * KW +
        // bias.
        listed({1, 2});
        return make(OpKind::Contraction,
                    2 * out * dim(op, 1, 0) * dim(op, 1, 1) + out,
                    rankedTensorOperandBytes(op), outBytes);
      })
      .Case<tosa::TransposeConv2DOp>([&](tosa::TransposeConv2DOp) {
        // Every input element scatters into OC x KH x KW outputs.
        listed({1, 2});
        double in = numElements(op->getOperand(0).getType());
        return make(OpKind::Contraction,
                    2 * in * dim(op, 1, 0) * dim(op, 1, 1) * dim(op, 1, 2) +
                        out,
                    rankedTensorOperandBytes(op), outBytes);
      })
      .Case<tosa::MaxPool2dOp, tosa::AvgPool2dOp>([&](auto pool) {
        double window = 1;
        for (int64_t k : pool.getKernel())
          window *= static_cast<double>(k);
        return make(OpKind::Pooling, out * window,
                    typeBytes(op->getOperand(0).getType()), outBytes);
      })
      .Case<tosa::ReshapeOp, tosa::IdentityOp>(view)
      .Case<tosa::ReduceAllOp, tosa::ReduceAnyOp, tosa::ReduceMaxOp,
            tosa::ReduceMinOp, tosa::ReduceProductOp, tosa::ReduceSumOp,
            tosa::ArgMaxOp>([&](Operation *) {
        return make(OpKind::Reduction, numElements(op->getOperand(0).getType()),
                    typeBytes(op->getOperand(0).getType()), outBytes);
      })
      .Case<tosa::GatherOp>([&](tosa::GatherOp) {
        // The table (embedding) is the weight. Reads the gathered rows and
        // the indices, not the whole table.
        listed({0});
        return make(OpKind::DataMovement, 0,
                    outBytes + typeBytes(op->getOperand(1).getType()),
                    outBytes);
      })
      .Case<tosa::SliceOp>([&](tosa::SliceOp) {
        r.layout = true;
        return make(OpKind::DataMovement, 0, outBytes, outBytes);
      })
      .Case<tosa::TransposeOp, tosa::ConcatOp, tosa::PadOp, tosa::TileOp,
            tosa::ReverseOp, tosa::ScatterOp>([&](Operation *) {
        r.layout = isa<tosa::TransposeOp>(op);
        return make(OpKind::DataMovement, 0, rankedTensorOperandBytes(op),
                    outBytes);
      })
      .Case<tosa::ResizeOp>([&](tosa::ResizeOp) {
        // Bilinear: a weighted sum of 4 neighbours per output element.
        return make(OpKind::DataMovement, 4 * out, rankedTensorOperandBytes(op),
                    outBytes);
      })
      // --- tensor ---
      .Case<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp,
            tensor::ReshapeOp, tensor::BitcastOp, tensor::DimOp,
            tensor::RankOp>(view)
      .Case<tensor::SplatOp, tensor::FromElementsOp>(
          [&](Operation *) { return make(OpKind::Fill, 0, 0, outBytes); })
      .Case<tensor::GenerateOp>([&](tensor::GenerateOp) {
        double flops = 0;
        for (Region &region : op->getRegions())
          for (Block &b : region)
            flops += out * scalarOpsPerIteration(b);
        return make(flops > 0 ? OpKind::Elementwise : OpKind::Fill, flops, 0,
                    outBytes);
      })
      .Case<tensor::ExtractSliceOp>([&](tensor::ExtractSliceOp) {
        r.layout = true;
        return make(OpKind::DataMovement, 0, outBytes, outBytes);
      })
      .Case<tensor::InsertSliceOp, tensor::ParallelInsertSliceOp>(
          [&](Operation *) {
            // In place: copies the source into the destination.
            double src = typeBytes(op->getOperand(0).getType());
            return make(OpKind::DataMovement, 0, src, src);
          })
      .Case<tensor::ExtractOp, tensor::InsertOp>([&](Operation *) {
        // One element.
        Type t = op->getResult(0).getType();
        double elt = isa<ShapedType>(t)
                         ? typeBytes(cast<ShapedType>(t).getElementType())
                         : typeBytes(t);
        return make(OpKind::DataMovement, 0, elt, elt);
      })
      .Case<tensor::PadOp, tensor::ConcatOp, tensor::GatherOp,
            tensor::ScatterOp>([&](Operation *) {
        return make(OpKind::DataMovement, 0, rankedTensorOperandBytes(op),
                    outBytes);
      })
      // --- memref, bufferization, ml_program ---
      .Case<memref::CastOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
            memref::ReinterpretCastOp, memref::SubViewOp, memref::ViewOp,
            bufferization::ToTensorOp, bufferization::ToBufferOp>(view)
      .Case<ml_program::GlobalLoadOp>([&](ml_program::GlobalLoadOp) {
        return make(OpKind::DataMovement, 0, outBytes, outBytes);
      })
      .Default([&](Operation *) {
        if (isTosaElementwise(op)) {
          // One operation per output element (casts: none); scales and
          // biases are weights.
          r.layout = isa<tosa::CastOp>(op);
          r.weights = WeightOperands::VectorArguments;
          r.numCandidates = op->getNumOperands();
          return make(OpKind::Elementwise, isa<tosa::CastOp>(op) ? 0 : out,
                      rankedTensorOperandBytes(op), outBytes);
        }
        if (isArithOrMath(op)) {
          // On tensors or scalars: one operation per result element (casts:
          // none).
          r.weights = WeightOperands::VectorArguments;
          r.numCandidates = op->getNumOperands();
          return make(OpKind::Elementwise, isCast(op) ? 0 : out,
                      sumBytes(op->getOperands()), outBytes);
        }
        return make(OpKind::Unknown, 0, 0, 0);
      });
}

BackwardRatios rules::backwardRatios(OpKind kind) {
  // {B/F, W/F} with a weight, then without. A contraction with a weight:
  // B = W = F; of two activations: B = 2F (both input gradients), W = 0.
  // Other ops: B = F, W = F if they read a weight (scale / bias gradient).
  // Unknown ops: B = W = F. Constants, views, fills: nothing.
  switch (kind) {
  case OpKind::Constant:
  case OpKind::View:
  case OpKind::Fill:
    return {0, 0, 0, 0};
  case OpKind::Contraction:
    return {1, 1, 2, 0};
  case OpKind::Unknown:
    return {1, 1, 1, 1};
  case OpKind::Pooling:
  case OpKind::Elementwise:
  case OpKind::Reduction:
  case OpKind::DataMovement:
    return {1, 1, 1, 0};
  }
  return {1, 1, 1, 1};
}
