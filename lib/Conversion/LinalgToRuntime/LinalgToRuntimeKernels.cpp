//===- LinalgToRuntimeKernels.cpp - convert-linalg-to-runtime-kernels -----===//
//
// Part of pipeopt. Replaces GEMM-shaped contractions and 2-D convolutions on
// memrefs by calls of the runtime's library kernels (pipeopt_runtime.h,
// "KERNELS"). See the pass description in Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Conversion/Passes.h"
#include "pipeopt/Conversion/RuntimeABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

// Layout codes of pipeopt_rt_conv2d_<T> (pipeopt_runtime.h).
#include "pipeopt/runtime/pipeopt_runtime.h"

namespace pipeopt {
#define GEN_PASS_DEF_CONVERTLINALGTORUNTIMEKERNELSPASS
#include "pipeopt/Conversion/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;

namespace {

/// A contraction in the form of pipeopt_rt_matmul: out += op(lhs) x op(rhs).
struct MatmulCall {
  Value lhs, rhs, out;
  bool transLhs = false, transRhs = false;
};

/// Positions of the loop dimensions an operand's indexing map reads, in
/// order; fails unless the map is a permutation of distinct dimensions.
FailureOr<SmallVector<unsigned>> operandDims(AffineMap map) {
  SmallVector<unsigned> dims;
  for (AffineExpr e : map.getResults()) {
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d || llvm::is_contained(dims, d.getPosition()))
      return failure();
    dims.push_back(d.getPosition());
  }
  return dims;
}

/// True if every operand of `op` is a memref of one element type that the
/// runtime has kernels for (f32, f64).
bool hasKernelOperands(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics())
    return false;
  Type element;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    // One address space: host memory on the CPU, the gpu.alloc'ed device
    // memory of a cuda build (both memory space 0).
    if (!type || (element && type.getElementType() != element) ||
        type.getMemorySpace())
      return false;
    element = type.getElementType();
  }
  return element && pipeopt::runtimeHasKernelsFor(element);
}

/// Matches a linalg op on buffers as a pipeopt_rt_matmul call (see the pass
/// description for what qualifies).
FailureOr<MatmulCall> matchMatmul(linalg::LinalgOp op, int64_t minFlops) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.hasIndexSemantics() || !hasKernelOperands(op) ||
      !linalg::isaContractionOpInterface(op))
    return failure();
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->batch.size() > 1 || dims->m.size() > 1 ||
      dims->n.size() > 1 || dims->k.size() != 1 ||
      (dims->m.empty() && dims->n.empty()))
    return failure();

  // Small static problems stay loops.
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (!llvm::any_of(ranges, ShapedType::isDynamic)) {
    int64_t flops = 2;
    for (int64_t r : ranges)
      flops *= r;
    if (flops < minFlops)
      return failure();
  }

  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  FailureOr<SmallVector<unsigned>> a = operandDims(maps[0]),
                                   b = operandDims(maps[1]),
                                   c = operandDims(maps[2]);
  if (failed(a) || failed(b) || failed(c))
    return failure();
  Value aVal = op.getDpsInputOperand(0)->get(),
        bVal = op.getDpsInputOperand(1)->get(),
        cVal = op.getDpsInitOperand(0)->get();
  unsigned k = dims->k.front();
  std::optional<unsigned> batch;
  if (!dims->batch.empty())
    batch = dims->batch.front();

  // Strip the leading batch dimension from every operand.
  auto stripBatch = [&](SmallVector<unsigned> &v) {
    if (!batch)
      return true;
    if (v.empty() || v.front() != *batch)
      return false;
    v.erase(v.begin());
    return true;
  };
  if (!stripBatch(*a) || !stripBatch(*b) || !stripBatch(*c))
    return failure();

  MatmulCall call;
  call.out = cVal;
  if (c->size() == 2) {
    // out[p, q]: the kernel's lhs is the operand holding p, its rhs the one
    // holding q (A x B, or B^T x A^T when the output is [n, m]).
    unsigned p = (*c)[0], q = (*c)[1];
    bool pIsM = llvm::is_contained(dims->m, p);
    Value lhs = pIsM ? aVal : bVal, rhs = pIsM ? bVal : aVal;
    SmallVector<unsigned> &l = pIsM ? *a : *b, &r = pIsM ? *b : *a;
    if (l.size() != 2 || r.size() != 2)
      return failure();
    if (l == SmallVector<unsigned>{p, k})
      call.transLhs = false;
    else if (l == SmallVector<unsigned>{k, p})
      call.transLhs = true;
    else
      return failure();
    if (r == SmallVector<unsigned>{k, q})
      call.transRhs = false;
    else if (r == SmallVector<unsigned>{q, k})
      call.transRhs = true;
    else
      return failure();
    call.lhs = lhs;
    call.rhs = rhs;
    return call;
  }
  if (c->size() == 1 && !batch) {
    unsigned p = (*c)[0];
    bool pIsM = llvm::is_contained(dims->m, p);
    // matvec: out[m] = mat[m, k] x vec[k]; vecmat: out[n] = vec[k] x mat[k, n].
    SmallVector<unsigned> &mat = pIsM ? *a : *b, &vec = pIsM ? *b : *a;
    Value matVal = pIsM ? aVal : bVal, vecVal = pIsM ? bVal : aVal;
    if (vec != SmallVector<unsigned>{k} || mat.size() != 2)
      return failure();
    bool matIsKFirst = mat == SmallVector<unsigned>{k, p};
    if (!matIsKFirst && mat != SmallVector<unsigned>{p, k})
      return failure();
    if (pIsM) {
      call.lhs = matVal;
      call.rhs = vecVal;
      call.transLhs = matIsKFirst;
    } else {
      call.lhs = vecVal;
      call.rhs = matVal;
      call.transRhs = !matIsKFirst;
    }
    return call;
  }
  return failure();
}

/// The (layout, strides, dilations) of a supported convolution.
struct ConvCall {
  int64_t layout;
  SmallVector<int64_t, 2> strides, dilations;
};

template <typename ConvOp>
ConvCall convAttrs(ConvOp op, int64_t layout) {
  ConvCall c{layout, {}, {}};
  for (APInt v : op.getStrides().template getValues<APInt>())
    c.strides.push_back(v.getSExtValue());
  for (APInt v : op.getDilations().template getValues<APInt>())
    c.dilations.push_back(v.getSExtValue());
  return c;
}

FailureOr<ConvCall> matchConv(linalg::LinalgOp op) {
  if (!hasKernelOperands(op))
    return failure();
  return llvm::TypeSwitch<Operation *, FailureOr<ConvCall>>(op)
      .Case([](linalg::Conv2DNchwFchwOp c) {
        return convAttrs(c, PIPEOPT_RT_CONV_NCHW_FCHW);
      })
      .Case([](linalg::Conv2DNhwcHwcfOp c) {
        return convAttrs(c, PIPEOPT_RT_CONV_NHWC_HWCF);
      })
      .Case([](linalg::Conv2DNhwcFhwcOp c) {
        return convAttrs(c, PIPEOPT_RT_CONV_NHWC_FHWC);
      })
      .Default([](Operation *) { return failure(); });
}

/// The buffer `v` is a view of (through view-like ops such as subview,
/// cast, expand/collapse_shape), or `v` itself.
Value viewRoot(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// True if no op strictly between `from` and `to` (one block, `from`
/// first) may write to or free the buffer `arg`, an argument of the enclosing
/// function. Conservative: a write counts as harmless only when its target
/// is a view of a buffer allocated in the function (which cannot alias an
/// argument) or of another argument of the function (distinct buffers, as
/// one-shot bufferization assumes at function boundaries and every caller
/// of a lowered stage function passes them); ops of unknown effect (calls)
/// count as writes.
bool argUnwrittenBetween(BlockArgument arg, Operation *from, Operation *to) {
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode()) {
    WalkResult r = op->walk([&](Operation *nested) {
      auto iface = dyn_cast<MemoryEffectOpInterface>(nested);
      if (!iface)
        return nested->hasTrait<OpTrait::HasRecursiveMemoryEffects>()
                   ? WalkResult::advance()
                   : WalkResult::interrupt();
      SmallVector<MemoryEffects::EffectInstance> effects;
      iface.getEffects(effects);
      for (MemoryEffects::EffectInstance &e : effects) {
        if (isa<MemoryEffects::Read>(e.getEffect()))
          continue;
        Value target = e.getValue();
        if (!target)
          return WalkResult::interrupt();
        Value root = viewRoot(target);
        if (root == arg)
          return WalkResult::interrupt();
        if (!isa<MemoryEffects::Write>(e.getEffect()))
          continue; // allocating or freeing another buffer
        auto otherArg = dyn_cast<BlockArgument>(root);
        bool distinct = root.getDefiningOp<memref::AllocOp>() ||
                        root.getDefiningOp<memref::AllocaOp>() ||
                        (otherArg && otherArg.getOwner() == arg.getOwner());
        if (!distinct)
          return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return false;
  }
  return true;
}

/// A conv_2d_nhwc_fhwc filter that is a function argument transposed from
/// [F, C, KH, KW] into a buffer of its own just for the convolution: TOSA's
/// conv2d takes FHWC filters, so a model exported from PyTorch (OIHW
/// weights) transposes every weight before every convolution, each call.
struct TransposedFilter {
  BlockArgument source;              // the [F, C, KH, KW] argument
  linalg::LinalgOp transpose;        // writes the FHWC buffer from it
  memref::AllocOp buffer;            // the FHWC buffer
  SmallVector<Operation *> deallocs; // the buffer's memref.deallocs
};

/// Matches the filter of `conv` (a linalg.conv_2d_nhwc_fhwc on memrefs) as
/// a TransposedFilter: a memref.alloc whose only users are `conv` (as its
/// filter), one copy-like linalg op (body: yield of its input) that writes
/// it whole from a function argument permuted as FCHW -> FHWC, and
/// deallocs; the transpose and `conv` in one block, nothing in between
/// that may write to or free the argument, the convolution's output not a
/// view of it, and the argument in the default memory space.
FailureOr<TransposedFilter> matchTransposedFilter(linalg::LinalgOp conv) {
  Value filter = conv.getDpsInputOperand(1)->get();
  auto alloc = filter.getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return failure();
  TransposedFilter t;
  t.buffer = alloc;
  for (OpOperand &use : alloc->getUses()) {
    Operation *user = use.getOwner();
    // The convolution reads the buffer as its filter and nothing else.
    if (user == conv.getOperation()) {
      if (&use != conv.getDpsInputOperand(1))
        return failure();
      continue;
    }
    if (isa<memref::DeallocOp>(user)) {
      t.deallocs.push_back(user);
      continue;
    }
    auto writer = dyn_cast<linalg::LinalgOp>(user);
    if (!writer || t.transpose)
      return failure();
    t.transpose = writer;
  }
  linalg::LinalgOp tr = t.transpose;
  if (!tr || tr.getNumDpsInputs() != 1 || tr.getNumDpsInits() != 1 ||
      tr.getDpsInitOperand(0)->get() != filter ||
      tr.getDpsInputOperand(0)->get() == filter ||
      tr.getNumLoops() != tr.getNumParallelLoops() ||
      tr->getBlock() != conv->getBlock() || !tr->isBeforeInBlock(conv))
    return failure();
  // The body copies: linalg.yield %in.
  Block *body = tr.getBlock();
  if (!body || body->getOperations().size() != 1)
    return failure();
  auto yield = dyn_cast<linalg::YieldOp>(body->getTerminator());
  if (!yield || yield->getNumOperands() != 1 ||
      yield->getOperand(0) != body->getArgument(0))
    return failure();
  auto source = dyn_cast<BlockArgument>(tr.getDpsInputOperand(0)->get());
  auto fn = conv->getParentOfType<func::FuncOp>();
  if (!source || !fn || source.getOwner() != &fn.getBody().front() ||
      viewRoot(conv.getDpsInitOperand(0)->get()) == source)
    return failure();
  auto sourceType = dyn_cast<MemRefType>(source.getType());
  if (!sourceType || sourceType.getMemorySpace())
    return failure();
  // out[l(0..3)] = in[m(0..3)] with both maps permutations; the output's
  // dim k is the FHWC dim; input dim i must be FHWC dim {0, 3, 1, 2}[i].
  SmallVector<AffineMap> maps = tr.getIndexingMapsArray();
  if (maps[0].getNumResults() != 4 || !maps[0].isPermutation() ||
      !maps[1].isPermutation())
    return failure();
  static constexpr unsigned fchwInFhwc[4] = {0, 3, 1, 2};
  for (unsigned i = 0; i < 4; ++i) {
    std::optional<unsigned> outDim = maps[1].getResultPosition(
        getAffineDimExpr(maps[0].getDimPosition(i), tr.getContext()));
    if (!outDim || *outDim != fchwInFhwc[i])
      return failure();
  }
  if (!argUnwrittenBetween(source, tr, conv))
    return failure();
  t.source = source;
  return t;
}

struct ConvertLinalgToRuntimeKernelsPass
    : pipeopt::impl::ConvertLinalgToRuntimeKernelsPassBase<
          ConvertLinalgToRuntimeKernelsPass> {
  using Base::Base;
  void runOnOperation() override;
};

void ConvertLinalgToRuntimeKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (failed(pipeopt::checkRuntimeTarget(module, target)))
    return signalPassFailure();
  // The same kernels under the device ABI's names (RuntimeFunctions.def,
  // PIPEOPT_RT_GPU_FLOAT_FN).
  bool cuda = target == "cuda";
  StringRef matmulFn = cuda ? "pipeopt_rt_gpu_matmul" : "pipeopt_rt_matmul";
  StringRef convFn = cuda ? "pipeopt_rt_gpu_conv2d" : "pipeopt_rt_conv2d";
  SymbolTable symbols(module);
  pipeopt::RuntimeDecls decls(module, symbols);

  // Ops of nested modules are left to a run on those modules: the
  // declarations must be in the symbol table the calls resolve in.
  SmallVector<linalg::LinalgOp> ops;
  module.walk([&](linalg::LinalgOp op) {
    if (op->getParentOfType<ModuleOp>() == module)
      ops.push_back(op);
  });

  // Replaces `op` by `base_<T>(memrefs as memref<*xT>..., scalars as i64...)`
  // inside a memref.alloca_scope: the memref<*xT> operands are descriptors
  // the LLVM lowering puts on the stack, and inside a loop (an scf.for of
  // the model) they would otherwise pile up until the stack overflows
  // (200,000 iterations did).
  auto replaceWithCall = [&](linalg::LinalgOp op, StringRef base,
                             ArrayRef<Value> memrefs,
                             ArrayRef<int64_t> scalars) -> LogicalResult {
    Location loc = op.getLoc();
    Type element = cast<MemRefType>(memrefs.front().getType()).getElementType();
    FailureOr<func::FuncOp> fn = decls.get(loc, base, element);
    if (failed(fn))
      return failure();
    OpBuilder outer(op);
    auto scope = memref::AllocaScopeOp::create(outer, loc, TypeRange{});
    Block *body = new Block();
    scope.getBodyRegion().push_back(body);
    OpBuilder b = OpBuilder::atBlockBegin(body);
    SmallVector<Value> args;
    for (Value v : memrefs)
      args.push_back(memref::CastOp::create(
          b, loc, UnrankedMemRefType::get(element, 0), v));
    for (int64_t v : scalars)
      args.push_back(arith::ConstantIntOp::create(b, loc, v, 64));
    func::CallOp::create(b, loc, *fn, args);
    memref::AllocaScopeReturnOp::create(b, loc, ValueRange{});
    op->erase();
    return success();
  };

  // Every transposed filter is matched before anything is rewritten: a
  // kernel call already emitted between another transpose and its
  // convolution would count as a possible write to the argument. A
  // transpose precedes its convolution in one block, so it is visited (and
  // left alone) before the convolution erases it.
  llvm::DenseMap<Operation *, TransposedFilter> transposed;
  if (!cuda)
    for (linalg::LinalgOp op : ops)
      if (isa<linalg::Conv2DNhwcFhwcOp>(op) && hasKernelOperands(op))
        if (FailureOr<TransposedFilter> t = matchTransposedFilter(op);
            succeeded(t))
          transposed.try_emplace(op, *t);

  for (linalg::LinalgOp op : ops) {
    if (FailureOr<MatmulCall> m = matchMatmul(op, minFlops); succeeded(m)) {
      if (failed(replaceWithCall(op, matmulFn, {m->lhs, m->rhs, m->out},
                                 {m->transLhs, m->transRhs})))
        return signalPassFailure();
      ++numMatmuls;
    } else if (FailureOr<ConvCall> c = matchConv(op); succeeded(c)) {
      // An FHWC filter transposed from an FCHW argument: the CPU kernel
      // reads the argument in place (layout NHWC_FCHW) and the transpose
      // goes.
      Value filter = op.getDpsInputOperand(1)->get();
      auto t = transposed.find(op);
      if (t != transposed.end()) {
        filter = t->second.source;
        c->layout = PIPEOPT_RT_CONV_NHWC_FCHW;
      }
      if (failed(replaceWithCall(op, convFn,
                                 {op.getDpsInputOperand(0)->get(), filter,
                                  op.getDpsInitOperand(0)->get()},
                                 {c->layout, c->strides[0], c->strides[1],
                                  c->dilations[0], c->dilations[1]})))
        return signalPassFailure();
      ++numConvs;
      if (t != transposed.end()) {
        t->second.transpose->erase();
        for (Operation *d : t->second.deallocs)
          d->erase();
        t->second.buffer->erase();
        ++numFoldedTransposes;
      }
    }
  }
}

} // namespace
