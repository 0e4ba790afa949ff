//===- PipeToRuntime.cpp - convert-pipe-to-runtime -----------------*- C++ -*-===//
//
// Part of pipeopt. Lowers per-rank pipe.programs to entry points that call
// the runtime C ABI (runtime/include/pipeopt/runtime/pipeopt_runtime.h) and
// writes the manifest pipeopt-run reads.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Conversion/PipeToRuntime/PipeToRuntime.h"
#include "pipeopt/Analysis/Parameters.h"
#include "pipeopt/Conversion/Passes.h"
#include "pipeopt/Conversion/RuntimeABI.h"
#include "pipeopt/Dialect/Pipe/IR/PipeDialect.h"
#include "pipeopt/Dialect/Pipe/IR/PipeOps.h"
#include "pipeopt/runtime/ManifestKeys.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <set>

namespace pipeopt {
#define GEN_PASS_DEF_CONVERTPIPETORUNTIMEPASS
#include "pipeopt/Conversion/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;
namespace pipe = pipeopt::pipe;
using pipeopt::RuntimeDecls;
using pipeopt::runtimeDTypeName;
namespace manifest = pipeopt::manifest;

std::string pipeopt::runtimeEntryPointName(int64_t rank) {
  return "pipeopt_rank_" + std::to_string(rank);
}

namespace {

//===----------------------------------------------------------------------===//
// Manifest data
//===----------------------------------------------------------------------===//

/// A tensor crossing the model boundary (input or output).
struct BoundaryTensor {
  RankedTensorType type;
  Location loc;
};

/// Which model arguments differ per microbatch (option microbatch-args).
struct MicrobatchPolicy {
  enum class Kind { Auto, All, None, List } kind = Kind::Auto;
  std::set<int64_t> indices;

  static FailureOr<MicrobatchPolicy> parse(StringRef text, std::string &err) {
    MicrobatchPolicy p;
    text = text.trim();
    if (text.empty() || text == "auto")
      return p;
    if (text == "all") {
      p.kind = Kind::All;
      return p;
    }
    if (text == "none") {
      p.kind = Kind::None;
      return p;
    }
    p.kind = Kind::List;
    SmallVector<StringRef> parts;
    text.split(parts, ',', -1, /*KeepEmpty=*/true);
    for (StringRef part : parts) {
      int64_t v;
      if (part.trim().empty()) {
        err = "microbatch-args: empty entry in '" + text.str() +
              "' (expected a comma-separated list of argument indices such "
              "as '0,3')";
        return failure();
      }
      if (part.trim().getAsInteger(10, v) || v < 0) {
        err = "microbatch-args: expected 'auto', 'all', 'none' or a "
              "comma-separated list of argument indices, got '" +
              text.str() + "'";
        return failure();
      }
      if (!p.indices.insert(v).second) {
        err = "microbatch-args: argument index " + std::to_string(v) +
              " is listed twice in '" + text.str() + "'";
        return failure();
      }
    }
    return p;
  }

  /// With a list: every index must be a model argument the programs read
  /// (`arguments`: the `pipe.input` indices), else `err` names the first
  /// one that is not and the valid range.
  LogicalResult checkIndices(const std::set<int64_t> &arguments,
                             std::string &err) const {
    if (kind != Kind::List)
      return success();
    for (int64_t v : indices) {
      if (arguments.count(v))
        continue;
      std::string valid;
      if (arguments.empty())
        valid = "the programs read no model argument";
      else if (int64_t(arguments.size()) == *arguments.rbegin() + 1)
        valid = "valid argument indices are 0 to " +
                std::to_string(*arguments.rbegin()) + " (the pipe.input "
                "indices of the programs)";
      else {
        valid = "the programs read model arguments ";
        llvm::raw_string_ostream os(valid);
        llvm::interleaveComma(arguments, os);
      }
      err = "microbatch-args: argument index " + std::to_string(v) +
            " is not an argument the programs read; " + valid;
      return failure();
    }
    return success();
  }

  bool isMicrobatched(int64_t index, RankedTensorType type) const {
    if (forced.count(index))
      return true;
    switch (kind) {
    case Kind::All:
      return true;
    case Kind::None:
      return false;
    case Kind::List:
      return indices.count(index) != 0;
    case Kind::Auto:
      return data.count(index) != 0;
    }
    return false;
  }

  /// For `auto`: model arguments that a stage function reading them
  /// classifies as per-example data (cost::classifyArguments, the rule
  /// pipe-differentiate uses too).
  std::set<int64_t> data;

  /// Model arguments that a stage function marks `pipe.microbatched` (a
  /// training target, which pipeopt-compile --train appends): per
  /// microbatch whatever the policy says.
  std::set<int64_t> forced;

  /// Model arguments used as gather indices (an embedding's token ids) ->
  /// the smallest extent they index; written to the manifest as
  /// "index_bound" so that pipeopt-run's random inputs stay in range.
  std::map<int64_t, int64_t> indexBounds;
  /// Model arguments that hold class indices (pipe.class_count): their
  /// values must be in [0, index bound); the runtime checks them on load.
  std::set<int64_t> classIndices;
};

/// A model result and how the programs write it.
struct BoundaryOutput {
  BoundaryTensor tensor;
  /// The pipe.output ops' `reduce mean` and `name` (all agree).
  bool mean = false;
  std::string name;
  /// For a mean: the microbatches written, over all programs.
  std::set<int64_t> microbatches;
};

/// Everything the manifest records, collected while converting.
struct ManifestData {
  int64_t numRanks = 0;
  int64_t numStages = 0;
  int64_t numMicrobatches = 0;
  std::string schedule;
  std::map<int64_t, BoundaryTensor> inputs;
  std::map<int64_t, BoundaryOutput> outputs;
  /// One action of a rank: kind (PIPEOPT_RT_ACTION_*: 0 F, 1 B, 2 W,
  /// 3 BW), stage, microbatch.
  struct Action {
    int64_t kind, stage, microbatch;
  };
  /// [rank] -> actions in program order.
  std::map<int64_t, std::vector<Action>> actions;
  /// Trainable model argument -> ranks that hand the runtime its gradient
  /// (pipe.gradient).
  std::map<int64_t, std::set<int64_t>> parameters;
  /// The module's pipe.optimizer attribute (null: none given).
  DictionaryAttr optimizer;
  /// (stage, microbatch) -> rank that runs its forward.
  std::map<std::pair<int64_t, int64_t>, int64_t> forwardRank;
};

/// Records a boundary tensor; two different types for one index is an error.
LogicalResult recordBoundary(std::map<int64_t, BoundaryTensor> &table,
                             int64_t index, RankedTensorType type, Location loc,
                             StringRef what) {
  auto [it, inserted] = table.try_emplace(index, BoundaryTensor{type, loc});
  if (inserted || it->second.type == type)
    return success();
  InFlightDiagnostic diag = emitError(loc)
                            << "model " << what << " " << index << " is "
                            << type << " here but " << it->second.type
                            << " elsewhere";
  diag.attachNote(it->second.loc) << "first seen here";
  return failure();
}

/// Records the pipe.output `out`: its type (as recordBoundary), and its
/// reduction and name, which every pipe.output of the result, in every
/// program, must share; a mean result is written at most once per
/// microbatch over all programs.
LogicalResult recordOutput(std::map<int64_t, BoundaryOutput> &table,
                           pipe::OutputOp out) {
  auto type = cast<RankedTensorType>(out.getValue().getType());
  int64_t index = out.getResult();
  BoundaryOutput entry{BoundaryTensor{type, out.getLoc()},
                       out.getReduce().has_value(),
                       out.getNameAttr() ? out.getName()->str() : "",
                       {}};
  auto [it, inserted] = table.try_emplace(index, entry);
  BoundaryOutput &first = it->second;
  if (!inserted) {
    if (first.tensor.type != type) {
      InFlightDiagnostic diag = emitError(out.getLoc())
                                << "model result " << index << " is " << type
                                << " here but " << first.tensor.type
                                << " elsewhere";
      diag.attachNote(first.tensor.loc) << "first seen here";
      return failure();
    }
    if (first.mean != entry.mean || first.name != entry.name) {
      auto describe = [](const BoundaryOutput &o) {
        return std::string(o.mean ? "reduce mean" : "no reduction") +
               (o.name.empty() ? ", no name" : ", name \"" + o.name + "\"");
      };
      InFlightDiagnostic diag =
          out.emitOpError() << "writes model result " << index << " with "
                            << describe(entry) << ", but another program "
                            << "writes it with " << describe(first)
                            << "; every pipe.output of one result must agree";
      diag.attachNote(first.tensor.loc) << "first seen here";
      return failure();
    }
  }
  if (!entry.name.empty())
    for (const auto &[other, o] : table)
      if (other != index && o.name == entry.name) {
        InFlightDiagnostic diag = out.emitOpError()
                                  << "names model result " << index << " \""
                                  << entry.name << "\", but result " << other
                                  << " has that name already; result names "
                                     "must be unique";
        diag.attachNote(o.tensor.loc) << "result " << other;
        return failure();
      }
  if (first.mean &&
      !first.microbatches.insert(int64_t(out.getMicrobatch())).second)
    return out.emitOpError()
           << "writes model result " << index << " (reduce mean) for "
           << "microbatch " << out.getMicrobatch()
           << ", which another program writes too; a mean counts every "
              "microbatch once";
  return success();
}

llvm::json::Array shapeJson(RankedTensorType type) {
  llvm::json::Array a;
  for (int64_t d : type.getShape())
    a.push_back(d);
  return a;
}

/// Builds the manifest JSON (format: docs/Runtime.md; parser:
/// runtime/lib/Manifest.cpp).
llvm::json::Value manifestJson(const ManifestData &m,
                               const MicrobatchPolicy &policy) {
  llvm::json::Object root;
  root[manifest::kFormatVersion] = 1;
  root[manifest::kNumRanks] = m.numRanks;
  root[manifest::kNumStages] = m.numStages;
  root[manifest::kNumMicrobatches] = m.numMicrobatches;
  root[manifest::kSchedule] = m.schedule;
  llvm::json::Array entries;
  for (int64_t r = 0; r < m.numRanks; ++r)
    entries.push_back(pipeopt::runtimeEntryPointName(r));
  root[manifest::kEntryPoints] = std::move(entries);

  auto tensor = [&](int64_t index, RankedTensorType type, bool microbatched) {
    return llvm::json::Object{
        {manifest::kIndex, index},
        {manifest::kShape, shapeJson(type)},
        {manifest::kDType, *runtimeDTypeName(type.getElementType())},
        {manifest::kMicrobatched, microbatched}};
  };
  llvm::json::Array inputs;
  for (const auto &[index, t] : m.inputs) {
    llvm::json::Object entry =
        tensor(index, t.type, policy.isMicrobatched(index, t.type));
    if (auto it = policy.indexBounds.find(index);
        it != policy.indexBounds.end())
      entry[manifest::kIndexBound] = it->second;
    if (policy.classIndices.count(index))
      entry[manifest::kClassIndices] = true;
    inputs.push_back(std::move(entry));
  }
  root[manifest::kInputs] = std::move(inputs);
  // Every output is per microbatch: stacked, or averaged ("reduce").
  llvm::json::Array outputs;
  for (const auto &[index, o] : m.outputs) {
    llvm::json::Object entry = tensor(index, o.tensor.type, true);
    if (o.mean)
      entry[manifest::kReduce] = manifest::kReduceMean;
    if (!o.name.empty())
      entry[manifest::kName] = o.name;
    outputs.push_back(std::move(entry));
  }
  root[manifest::kOutputs] = std::move(outputs);

  // stage -> rank. Every microbatch has its own mapping (schedules with
  // several pipelines, e.g. Chimera, map stages differently per
  // microbatch); identical mappings are one pipeline. One pipeline is
  // written as [stage] -> rank, several as [pipeline][stage] -> rank.
  std::vector<std::vector<int64_t>> pipelines;
  bool complete = true;
  for (int64_t mb = 0; mb < m.numMicrobatches && complete; ++mb) {
    std::vector<int64_t> map;
    for (int64_t s = 0; s < m.numStages; ++s) {
      auto it = m.forwardRank.find({s, mb});
      if (it == m.forwardRank.end()) {
        complete = false;
        break;
      }
      map.push_back(it->second);
    }
    if (complete && !llvm::is_contained(pipelines, map))
      pipelines.push_back(map);
  }
  if (complete && !pipelines.empty()) {
    auto toJson = [](const std::vector<int64_t> &v) {
      llvm::json::Array a;
      for (int64_t x : v)
        a.push_back(x);
      return a;
    };
    if (pipelines.size() == 1) {
      root[manifest::kStageRank] = toJson(pipelines.front());
    } else {
      llvm::json::Array all;
      for (const auto &p : pipelines)
        all.push_back(toJson(p));
      root[manifest::kStageRank] = std::move(all);
    }
  }

  llvm::json::Array actions;
  for (int64_t r = 0; r < m.numRanks; ++r) {
    llvm::json::Array list;
    auto it = m.actions.find(r);
    if (it != m.actions.end())
      for (const ManifestData::Action &a : it->second) {
        static const char *const kinds[] = {"F", "B", "W", "BW"};
        list.push_back(llvm::json::Object{{manifest::kKind, kinds[a.kind]},
                                          {manifest::kStage, a.stage},
                                          {manifest::kMicrobatch, a.microbatch}});
      }
    actions.push_back(std::move(list));
  }
  root[manifest::kActions] = std::move(actions);

  // Training builds: the trainable arguments and the optimizer the runtime
  // applies after each step (docs/Runtime.md, "Training builds with
  // parameters").
  if (!m.parameters.empty() || m.optimizer) {
    llvm::json::Array params;
    for (const auto &[index, ranks] : m.parameters) {
      llvm::json::Array rs;
      for (int64_t r : ranks)
        rs.push_back(r);
      params.push_back(llvm::json::Object{{manifest::kIndex, index},
                                          {manifest::kRanks, std::move(rs)}});
    }
    root[manifest::kParameters] = std::move(params);
    llvm::json::Object training;
    training[manifest::kOptimizer] = "none";
    if (m.optimizer)
      for (NamedAttribute entry : m.optimizer) {
        StringRef key = entry.getName().getValue();
        if (auto f = dyn_cast<FloatAttr>(entry.getValue()))
          training[key] = f.getValueAsDouble();
        else if (auto n = dyn_cast<IntegerAttr>(entry.getValue()))
          training[key] = n.getInt();
        else if (auto t = dyn_cast<StringAttr>(entry.getValue()))
          training[key == "name" ? manifest::kOptimizer : key] =
              t.getValue().str();
      }
    root[manifest::kTraining] = std::move(training);
  }
  return llvm::json::Value(std::move(root));
}

//===----------------------------------------------------------------------===//
// Program lowering
//===----------------------------------------------------------------------===//

/// Builds the entry point of one pipe.program.
class ProgramLowering {
public:
  ProgramLowering(pipe::ProgramOp program, RuntimeDecls &decls,
                  const MicrobatchPolicy &policy, ManifestData &manifest,
                  uint64_t &numCalls)
      : program(program), decls(decls), policy(policy), manifest(manifest),
        numCalls(numCalls), b(program) {}

  LogicalResult run();

private:
  /// Calls runtime function `base` (typed by `element` if non-null) and
  /// folds its status into `pending` (the first nonzero status since the
  /// last check). With `check` (after every action's end), returns early
  /// with that status if it is nonzero and continues in a new block.
  ///
  /// Checking once per action instead of after every call is enough: after
  /// the first error the rank's context is poisoned and every later runtime
  /// call returns at once without doing anything, so the calls up to the
  /// action's end are no-ops. It matters for compile time: every early exit
  /// frees all buffers live at that point, so checking after each of n calls
  /// with m live buffers (a model's weights) emitted O(n * m) frees (26,000
  /// in BERT-base's reference build, two thirds of its LLVM time).
  LogicalResult callAndCheck(Location loc, StringRef base, Type element,
                             ValueRange args, bool check = false);
  /// An i64 constant.
  Value i64(Location loc, int64_t v) {
    return arith::ConstantIntOp::create(b, loc, v, 64);
  }
  /// Checks that `type` is a static tensor of a runtime dtype.
  LogicalResult checkTensor(Operation *op, Type type);
  /// Allocates a buffer for `type`, lets runtime function `base` fill it and
  /// returns it as a tensor.
  FailureOr<Value> fill(Operation *op, RankedTensorType type, StringRef base,
                        ArrayRef<int64_t> scalars);
  /// Passes the buffer of tensor `value` to runtime function `base`.
  LogicalResult drain(Operation *op, Value value, StringRef base,
                      ArrayRef<int64_t> scalars);

  LogicalResult lowerOp(Operation *op);
  /// After an action with `pipe.stash_bytes`: tells the runtime how many
  /// activation bytes the rank still holds for (stage, microbatch).
  LogicalResult reportStash(Operation *op, int64_t stage, int64_t mb) {
    auto bytes = op->getAttrOfType<IntegerAttr>(pipe::PipeDialect::StashBytesAttrHelper::getNameStr());
    if (!bytes)
      return success();
    Location loc = op->getLoc();
    return callAndCheck(loc, "pipeopt_rt_stash", Type(),
                        {i64(loc, stage), i64(loc, mb),
                         i64(loc, bytes.getInt())});
  }

  pipe::ProgramOp program;
  RuntimeDecls &decls;
  const MicrobatchPolicy &policy;
  ManifestData &manifest;
  uint64_t &numCalls;
  OpBuilder b;
  func::FuncOp fn;
  Block *exitBlock = nullptr;
  /// First nonzero status since the last check (null: none pending).
  Value pending;
  IRMapping mapping;
  /// Shared (not microbatched) inputs already read: argument -> tensor.
  llvm::DenseMap<int64_t, Value> sharedInputs;
  /// The module's optimizer updates within a call ("update_every"): no
  /// input is read once and shared.
  bool rereadWeights = false;
};

LogicalResult ProgramLowering::callAndCheck(Location loc, StringRef base,
                                            Type element, ValueRange args,
                                            bool check) {
  FailureOr<func::FuncOp> callee = decls.get(loc, base, element);
  if (failed(callee))
    return failure();
  auto call = func::CallOp::create(b, loc, *callee, args);
  ++numCalls;
  Value status = call.getResult(0);
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
  if (pending) {
    Value earlier =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, pending, zero);
    status = arith::SelectOp::create(b, loc, earlier, pending, status);
  }
  pending = status;
  if (!check)
    return success();
  pending = Value();
  Value failed = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                       status, zero);
  auto *cont = new Block();
  fn.getBody().getBlocks().insert(Region::iterator(exitBlock), cont);
  cf::CondBranchOp::create(b, loc, failed, exitBlock, ValueRange{status}, cont,
                           ValueRange{});
  b.setInsertionPointToStart(cont);
  return success();
}

LogicalResult ProgramLowering::checkTensor(Operation *op, Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return op->emitOpError() << "cannot be executed: " << type
                             << " is not a ranked tensor";
  if (!tensor.hasStaticShape())
    return op->emitOpError() << "cannot be executed: " << type
                             << " has a dynamic shape; the runtime needs "
                                "static shapes";
  if (tensor.getEncoding())
    return op->emitOpError() << "cannot be executed: " << type
                             << " has an encoding";
  if (!runtimeDTypeName(tensor.getElementType()))
    return op->emitOpError()
           << "cannot be executed: element type " << tensor.getElementType()
           << " is not supported by the runtime (supported: "
           << pipeopt::runtimeDTypeList() << ")";
  return success();
}

FailureOr<Value> ProgramLowering::fill(Operation *op, RankedTensorType type,
                                       StringRef base,
                                       ArrayRef<int64_t> scalars) {
  Location loc = op->getLoc();
  auto bufType = MemRefType::get(type.getShape(), type.getElementType());
  Value buf = memref::AllocOp::create(b, loc, bufType);
  Value unranked = memref::CastOp::create(
      b, loc, UnrankedMemRefType::get(type.getElementType(), 0), buf);
  SmallVector<Value> args;
  for (int64_t s : scalars)
    args.push_back(i64(loc, s));
  args.push_back(unranked);
  if (failed(callAndCheck(loc, base, type.getElementType(), args)))
    return failure();
  return bufferization::ToTensorOp::create(b, loc, type, buf,
                                           /*restrict=*/true,
                                           /*writable=*/true)
      .getResult();
}

LogicalResult ProgramLowering::drain(Operation *op, Value value,
                                     StringRef base,
                                     ArrayRef<int64_t> scalars) {
  Location loc = op->getLoc();
  auto type = cast<RankedTensorType>(value.getType());
  // A fully dynamic layout accepts whatever buffer the producer bufferizes
  // to without a copy; the runtime honours strides.
  auto bufType = MemRefType::get(
      type.getShape(), type.getElementType(),
      StridedLayoutAttr::get(
          b.getContext(), ShapedType::kDynamic,
          SmallVector<int64_t>(type.getRank(), ShapedType::kDynamic)));
  Value mapped = mapping.lookupOrDefault(value);
  Value buf = bufferization::ToBufferOp::create(b, loc, bufType, mapped,
                                                /*read_only=*/true);
  Value unranked = memref::CastOp::create(
      b, loc, UnrankedMemRefType::get(type.getElementType(), 0), buf);
  SmallVector<Value> args;
  for (int64_t s : scalars)
    args.push_back(i64(loc, s));
  args.push_back(unranked);
  return callAndCheck(loc, base, type.getElementType(), args);
}

LogicalResult ProgramLowering::lowerOp(Operation *op) {
  int64_t rank = program.getRank();
  if (auto input = dyn_cast<pipe::InputOp>(op)) {
    if (failed(checkTensor(op, input.getType())))
      return failure();
    auto type = cast<RankedTensorType>(input.getType());
    int64_t arg = input.getArgument();
    if (failed(recordBoundary(manifest.inputs, arg, type, op->getLoc(),
                              "argument")))
      return failure();
    // Asynchronous training updates weights within a call: every
    // microbatch reads them anew (and keeps its version for its backward).
    bool shared = !policy.isMicrobatched(arg, type) && !rereadWeights;
    if (shared) {
      if (Value v = sharedInputs.lookup(arg)) {
        mapping.map(input.getResult(), v);
        return success();
      }
    }
    FailureOr<Value> t = fill(op, type, "pipeopt_rt_input",
                              {arg, int64_t(input.getMicrobatch())});
    if (failed(t))
      return failure();
    if (shared)
      sharedInputs[arg] = *t;
    mapping.map(input.getResult(), *t);
    return success();
  }
  if (auto recv = dyn_cast<pipe::RecvOp>(op)) {
    if (failed(checkTensor(op, recv.getType())))
      return failure();
    pipe::TagAttr tag = recv.getTag();
    FailureOr<Value> t =
        fill(op, cast<RankedTensorType>(recv.getType()), "pipeopt_rt_recv",
             {int64_t(recv.getPeer()), tag.getSrcStage(), tag.getDstStage(),
              tag.getMicrobatch(), tag.getValueIndex(),
              tag.getDirection() == pipe::Direction::Backward ? 1 : 0});
    if (failed(t))
      return failure();
    mapping.map(recv.getResult(), *t);
    return success();
  }
  if (auto send = dyn_cast<pipe::SendOp>(op)) {
    if (failed(checkTensor(op, send.getValue().getType())))
      return failure();
    pipe::TagAttr tag = send.getTag();
    return drain(op, send.getValue(), "pipeopt_rt_send",
                 {int64_t(send.getPeer()), tag.getSrcStage(),
                  tag.getDstStage(), tag.getMicrobatch(), tag.getValueIndex(),
                  tag.getDirection() == pipe::Direction::Backward ? 1 : 0});
  }
  if (auto output = dyn_cast<pipe::OutputOp>(op)) {
    if (failed(checkTensor(op, output.getValue().getType())))
      return failure();
    if (failed(recordOutput(manifest.outputs, output)))
      return failure();
    return drain(op, output.getValue(), "pipeopt_rt_output",
                 {int64_t(output.getResult()),
                  int64_t(output.getMicrobatch())});
  }
  if (auto forward = dyn_cast<pipe::ForwardOp>(op)) {
    Location loc = op->getLoc();
    int64_t stage = forward.getStage();
    int64_t mb = forward.getMicrobatch();
    Value kind = i64(loc, /*PIPEOPT_RT_ACTION_F=*/0);
    if (failed(callAndCheck(loc, "pipeopt_rt_action_begin", Type(),
                            {kind, i64(loc, stage), i64(loc, mb)})))
      return failure();
    SmallVector<Value> args;
    for (Value v : forward.getArgs())
      args.push_back(mapping.lookupOrDefault(v));
    auto call = func::CallOp::create(b, loc, forward.getCalleeAttr(),
                                     forward.getResultTypes(), args);
    mapping.map(forward.getResults(), call.getResults());
    kind = i64(loc, 0);
    if (failed(callAndCheck(loc, "pipeopt_rt_action_end", Type(),
                            {kind, i64(loc, stage), i64(loc, mb)},
                            /*check=*/true)))
      return failure();
    manifest.actions[rank].push_back({0, stage, mb});
    if (failed(reportStash(op, stage, mb)))
      return failure();
    auto [it, inserted] = manifest.forwardRank.try_emplace({stage, mb}, rank);
    if (!inserted && it->second != rank)
      return op->emitOpError()
             << "forward of stage " << stage << " microbatch " << mb
             << " is scheduled on ranks " << it->second << " and " << rank;
    manifest.numStages = std::max(manifest.numStages, stage + 1);
    return success();
  }
  if (auto backward = dyn_cast<pipe::BackwardOp>(op)) {
    if (!backward.getCallee())
      return op->emitOpError()
             << "has no callee: run pipe-materialize-backward first (it "
                "generates the functions backward actions call; "
                "pipeopt-compile --train does)";
    Location loc = op->getLoc();
    int64_t stage = backward.getStage();
    int64_t mb = backward.getMicrobatch();
    int64_t kind = backward.getKind() == pipe::BackwardKind::Input    ? 1
                   : backward.getKind() == pipe::BackwardKind::Weight ? 2
                                                                      : 3;
    if (failed(callAndCheck(loc, "pipeopt_rt_action_begin", Type(),
                            {i64(loc, kind), i64(loc, stage), i64(loc, mb)})))
      return failure();
    SmallVector<Value> args;
    for (Value v : backward.getArgs())
      args.push_back(mapping.lookupOrDefault(v));
    auto call = func::CallOp::create(b, loc, *backward.getCallee(),
                                     backward.getResultTypes(), args);
    mapping.map(backward.getResults(), call.getResults());
    if (failed(callAndCheck(loc, "pipeopt_rt_action_end", Type(),
                            {i64(loc, kind), i64(loc, stage), i64(loc, mb)},
                            /*check=*/true)))
      return failure();
    manifest.actions[rank].push_back({kind, stage, mb});
    return reportStash(op, stage, mb);
  }
  if (auto gradient = dyn_cast<pipe::GradientOp>(op)) {
    if (failed(checkTensor(op, gradient.getValue().getType())))
      return failure();
    int64_t arg = gradient.getArgument();
    auto type = cast<RankedTensorType>(gradient.getValue().getType());
    if (failed(recordBoundary(manifest.inputs, arg, type, op->getLoc(),
                              "argument")))
      return failure();
    manifest.parameters[arg].insert(rank);
    return drain(op, gradient.getValue(), "pipeopt_rt_gradient",
                 {arg, int64_t(gradient.getStage()),
                  int64_t(gradient.getMicrobatch())});
  }
  if (op->getDialect() && isa<pipe::PipeDialect>(op->getDialect()))
    return op->emitOpError() << "cannot be converted to runtime calls";
  // Other ops (constants, tensor.empty, ...) are copied as they are.
  b.clone(*op, mapping);
  return success();
}

LogicalResult ProgramLowering::run() {
  Location loc = program.getLoc();
  MLIRContext *ctx = program.getContext();
  auto i32 = IntegerType::get(ctx, 32);
  fn = func::FuncOp::create(
      b, loc, pipeopt::runtimeEntryPointName(program.getRank()),
      FunctionType::get(ctx, {}, {i32}));
  fn.setPublic();
  fn->setAttr(pipe::PipeDialect::RankAttrHelper::getNameStr(), b.getI64IntegerAttr(program.getRank()));
  Block *entry = fn.addEntryBlock();
  if (manifest.optimizer)
    if (auto k = manifest.optimizer.getAs<IntegerAttr>("update_every"))
      rereadWeights = k.getInt() > 0;
  exitBlock = new Block();
  exitBlock->addArgument(i32, loc);
  fn.getBody().push_back(exitBlock);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(exitBlock);
    func::ReturnOp::create(b, loc, exitBlock->getArgument(0));
  }
  b.setInsertionPointToStart(entry);
  for (Operation &op : program.getBody().front())
    if (failed(lowerOp(&op)))
      return failure();
  Value status =
      pending ? pending : arith::ConstantIntOp::create(b, loc, 0, 32);
  cf::BranchOp::create(b, loc, exitBlock, ValueRange{status});
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertPipeToRuntimePass
    : pipeopt::impl::ConvertPipeToRuntimePassBase<ConvertPipeToRuntimePass> {
  using Base::Base;
  void runOnOperation() override;
};

void ConvertPipeToRuntimePass::runOnOperation() {
  ModuleOp module = getOperation();
  std::string err;
  FailureOr<MicrobatchPolicy> policy =
      MicrobatchPolicy::parse(microbatchArgs, err);
  SmallVector<pipe::ProgramOp> programs(module.getOps<pipe::ProgramOp>());
  if (failed(policy)) {
    // At the first program: a parsed module often has no location of its own.
    emitError(programs.empty() ? module.getLoc() : programs.front().getLoc())
        << err;
    return signalPassFailure();
  }
  if (programs.empty()) {
    module.emitError() << "no pipe.program to convert; run pipe-schedule "
                          "first (or pipeopt-compile --reference for an "
                          "unpartitioned model)";
    return signalPassFailure();
  }
  // pipe.rank marks the entry points this pass generates (and is removed
  // at its end); one already in the input would keep a function from being
  // treated as what it is (a stage graph is kept and its pipe.stage_call
  // left over).
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn->hasAttr(pipe::PipeDialect::RankAttrHelper::getNameStr())) {
      fn.emitError() << "'" << pipe::PipeDialect::RankAttrHelper::getNameStr()
                     << "' is set by convert-pipe-to-runtime on the per-rank "
                        "entry points it generates; remove it from @"
                     << fn.getSymName();
      return signalPassFailure();
    }
  // `auto`: model arguments that some stage function reading them
  // classifies as data (Analysis/Parameters.h).
  {
    std::map<Operation *, std::set<unsigned>> dataArgsOf;
    auto dataArgs = [&](func::FuncOp fn) -> const std::set<unsigned> & {
      auto [it, inserted] = dataArgsOf.try_emplace(fn);
      if (inserted && policy->kind == MicrobatchPolicy::Kind::Auto)
        for (unsigned n : pipeopt::cost::dataArguments(fn))
          it->second.insert(n);
      return it->second;
    };
    for (pipe::ProgramOp p : programs)
      p.walk([&](pipe::ForwardOp fwd) {
        auto fn = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            fwd, fwd.getCalleeAttr());
        if (!fn)
          return;
        const std::set<unsigned> &d = dataArgs(fn);
        for (auto [k, v] : llvm::enumerate(fwd.getArgs()))
          if (auto in = v.getDefiningOp<pipe::InputOp>()) {
            if (d.count(k))
              policy->data.insert(in.getArgument());
            if (fn.getArgAttr(k, pipe::PipeDialect::getMicrobatchedAttrName()))
              policy->forced.insert(in.getArgument());
            if (auto c = fn.getArgAttrOfType<IntegerAttr>(
                    k, pipe::PipeDialect::getClassCountAttrName())) {
              policy->indexBounds[in.getArgument()] = c.getInt();
              policy->classIndices.insert(in.getArgument());
            }
            auto type = dyn_cast<RankedTensorType>(v.getType());
            if (fn.isExternal() || !type ||
                !type.getElementType().isSignlessInteger())
              continue;
            if (std::optional<int64_t> bound =
                    pipeopt::gatherIndexBound(fn.getArgument(k))) {
              auto [it, inserted] =
                  policy->indexBounds.try_emplace(in.getArgument(), *bound);
              if (!inserted)
                it->second = std::min(it->second, *bound);
            }
          }
      });
  }

  // A listed argument index must be one the programs read (an index beyond
  // the model's arguments used to be accepted and silently ignored).
  std::set<int64_t> arguments;
  for (pipe::ProgramOp p : programs)
    p.walk([&](pipe::InputOp in) { arguments.insert(in.getArgument()); });
  if (failed(policy->checkIndices(arguments, err))) {
    emitError(programs.front().getLoc()) << err;
    return signalPassFailure();
  }

  // A per-microbatch argument read for microbatch m' must not feed an
  // action, send or output of another microbatch m (the pipe verifier checks
  // received and computed values; which arguments are per-microbatch is only
  // known here). Weights may be read once and shared.
  for (pipe::ProgramOp p : programs) {
    WalkResult walk = p.walk([&](pipe::InputOp in) -> WalkResult {
      auto type = dyn_cast<RankedTensorType>(in.getType());
      if (!type || !policy->isMicrobatched(in.getArgument(), type))
        return WalkResult::advance();
      for (OpOperand &use : in->getUses()) {
        Operation *user = use.getOwner();
        std::optional<int64_t> mb = pipe::getMicrobatch(user);
        if (!mb || *mb == static_cast<int64_t>(in.getMicrobatch()))
          continue;
        InFlightDiagnostic diag =
            user->emitOpError()
            << "is for microbatch " << *mb << ", but operand #"
            << use.getOperandNumber() << " is model argument "
            << in.getArgument() << " of microbatch " << in.getMicrobatch()
            << ", which differs per microbatch (microbatch-args="
            << microbatchArgs << ")";
        diag.attachNote(in.getLoc()) << "read here";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
  }

  // Programs must describe one pipeline: same ranks and microbatches, one
  // program per rank.
  ManifestData manifest;
  manifest.optimizer = module->getAttrOfType<DictionaryAttr>(
      pipe::PipeDialect::OptimizerAttrHelper::getNameStr());
  manifest.numRanks = programs.front().getNumRanks();
  manifest.numMicrobatches = programs.front().getNumMicrobatches();
  std::map<int64_t, pipe::ProgramOp> byRank;
  for (pipe::ProgramOp p : programs) {
    if (int64_t(p.getNumRanks()) != manifest.numRanks ||
        int64_t(p.getNumMicrobatches()) != manifest.numMicrobatches) {
      p.emitOpError() << "is a program of " << p.getNumRanks() << " ranks and "
                      << p.getNumMicrobatches() << " microbatches, but "
                      << programs.front().getSymName() << " has "
                      << manifest.numRanks << " ranks and "
                      << manifest.numMicrobatches << " microbatches";
      return signalPassFailure();
    }
    auto [it, inserted] = byRank.try_emplace(p.getRank(), p);
    if (!inserted) {
      p.emitOpError() << "is a second program for rank " << p.getRank();
      return signalPassFailure();
    }
    if (manifest.schedule.empty() && p.getSchedule())
      manifest.schedule = p.getSchedule()->str();
  }
  for (int64_t r = 0; r < manifest.numRanks; ++r)
    if (!byRank.count(r)) {
      programs.front().emitOpError()
          << "belongs to a pipeline of " << manifest.numRanks
          << " ranks, but rank " << r << " has no program";
      return signalPassFailure();
    }

  SymbolTable symbols(module);
  for (int64_t r = 0; r < manifest.numRanks; ++r) {
    std::string name = pipeopt::runtimeEntryPointName(r);
    if (Operation *clash = symbols.lookup(name)) {
      clash->emitOpError() << "uses the name @" << name
                           << ", which is reserved for the entry point of "
                              "rank "
                           << r;
      return signalPassFailure();
    }
  }

  RuntimeDecls decls(module, symbols);
  uint64_t calls = 0;
  for (auto &[rank, program] : byRank) {
    ProgramLowering lowering(program, decls, *policy, manifest, calls);
    if (failed(lowering.run()))
      return signalPassFailure();
  }
  // A mean is over every microbatch: one missing would silently average
  // over fewer (the runtime checks this again against the manifest).
  for (const auto &[index, o] : manifest.outputs) {
    if (!o.mean || int64_t(o.microbatches.size()) == manifest.numMicrobatches)
      continue;
    int64_t missing = 0;
    while (o.microbatches.count(missing))
      ++missing;
    emitError(o.tensor.loc)
        << "model result " << index
        << (o.name.empty() ? "" : " (\"" + o.name + "\")")
        << " is averaged over microbatches (reduce mean), but no program "
           "writes it for microbatch "
        << missing << " of " << manifest.numMicrobatches;
    return signalPassFailure();
  }
  for (pipe::ProgramOp p : programs)
    p.erase();
  numPrograms = programs.size();
  numRuntimeCalls = calls;

  // Stage-graph functions (pipe.stage_call) describe, they do not execute.
  // Functions with a body other than the entry points become private.
  SmallVector<func::FuncOp> graphs;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal() || fn->hasAttr(pipe::PipeDialect::RankAttrHelper::getNameStr()))
      continue;
    bool isGraph = false;
    fn.walk([&](pipe::StageCallOp) {
      isGraph = true;
      return WalkResult::interrupt();
    });
    if (isGraph)
      graphs.push_back(fn);
    else
      fn.setPrivate();
  }
  for (func::FuncOp fn : graphs)
    fn.erase();
  for (auto fn : module.getOps<func::FuncOp>())
    fn->removeAttr(pipe::PipeDialect::RankAttrHelper::getNameStr());
  // pipe.microbatched has been read (the policy's `forced` arguments).
  auto microbatched = StringAttr::get(
      module.getContext(), pipe::PipeDialect::getMicrobatchedAttrName());
  for (auto fn : module.getOps<func::FuncOp>())
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      fn.removeArgAttr(i, microbatched);

  // ml_program globals: constant loads become arith.constant (one-shot
  // bufferization has no model for global_load_const); plain loads are
  // bufferized to memref.global; stores would be state private to one rank
  // of the pipeline and are rejected.
  bool badGlobal = false;
  module.walk([&](Operation *op) {
    if (isa<ml_program::GlobalStoreOp>(op)) {
      op->emitOpError() << "writes model state, which cannot be split across "
                           "pipeline ranks; only reading ml_program globals "
                           "is supported";
      badGlobal = true;
      return;
    }
    auto load = dyn_cast<ml_program::GlobalLoadConstOp>(op);
    if (!load)
      return;
    auto global = SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(
        load, load.getGlobalAttr());
    auto value = global ? dyn_cast_or_null<DenseElementsAttr>(
                              global.getValueAttr())
                        : DenseElementsAttr();
    if (!value || value.getType() != load.getType()) {
      load.emitOpError() << "reads a global without a dense initial value of "
                            "its type; it cannot be turned into a constant";
      badGlobal = true;
      return;
    }
    OpBuilder b(load);
    auto c = arith::ConstantOp::create(b, load.getLoc(), value);
    load.getResult().replaceAllUsesWith(c.getResult());
    load.erase();
  });
  if (badGlobal)
    return signalPassFailure();

  // Nothing of the pipe dialect may be left.
  WalkResult left = module.walk([&](Operation *op) {
    if (op->getDialect() && isa<pipe::PipeDialect>(op->getDialect())) {
      op->emitOpError() << "is left over after convert-pipe-to-runtime";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (left.wasInterrupted())
    return signalPassFailure();

  // Prefer the stage count the partitioner recorded, if any is larger.
  module.walk([&](Operation *op) {
    if (auto n = op->getAttrOfType<IntegerAttr>(pipe::PipeDialect::NumStagesAttrHelper::getNameStr()))
      manifest.numStages = std::max(manifest.numStages, n.getInt());
  });
  if (manifest.numStages == 0)
    manifest.numStages = 1;

  if (!manifestPath.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(manifestPath, ec, llvm::sys::fs::OF_Text);
    if (ec) {
      module.emitError() << "cannot write manifest '" << manifestPath
                         << "': " << ec.message();
      return signalPassFailure();
    }
    os << llvm::formatv("{0:2}", manifestJson(manifest, *policy)) << "\n";
  }
}

} // namespace

// Declared in PipeToRuntime.h.
std::optional<int64_t> pipeopt::gatherIndexBound(Value root) {
  std::optional<int64_t> bound;
  SmallVector<Value> work{root};
  llvm::DenseSet<Value> seen{root};
  auto push = [&](Value v) {
    if (seen.insert(v).second)
      work.push_back(v);
  };
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(user)) {
        if (linalgOp.isDpsInput(&use) && linalgOp.getBlock())
          push(linalgOp.getMatchingBlockArgument(&use));
      } else if (auto yield = dyn_cast<linalg::YieldOp>(user)) {
        push(yield->getParentOp()->getResult(use.getOperandNumber()));
      } else if (isa<arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp,
                     arith::IndexCastOp, arith::IndexCastUIOp,
                     tensor::CollapseShapeOp, tensor::ExpandShapeOp,
                     tensor::ReshapeOp, tensor::CastOp, tensor::ExtractSliceOp>(
                     user)) {
        if (use.getOperandNumber() == 0)
          push(user->getResult(0));
      } else if (auto extract = dyn_cast<tensor::ExtractOp>(user)) {
        unsigned first = extract.getIndices().getBeginOperandIndex();
        if (use.getOperandNumber() < first)
          continue;
        int64_t extent = extract.getTensor().getType().getDimSize(
            use.getOperandNumber() - first);
        if (!ShapedType::isDynamic(extent))
          bound = bound ? std::min(*bound, extent) : extent;
      }
    }
  }
  return bound;
}


//===----------------------------------------------------------------------===//
// Single-stage reference program
//===----------------------------------------------------------------------===//

void pipeopt::keepReachedFunctions(ModuleOp module,
                                   ArrayRef<func::FuncOp> roots) {
  llvm::DenseSet<Operation *> reached;
  SmallVector<func::FuncOp> work(roots.begin(), roots.end());
  for (func::FuncOp root : roots)
    reached.insert(root);
  while (!work.empty()) {
    func::FuncOp f = work.pop_back_val();
    if (auto uses = SymbolTable::getSymbolUses(f))
      for (const SymbolTable::SymbolUse &use : *uses)
        if (auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
                module, use.getSymbolRef()))
          if (reached.insert(callee).second)
            work.push_back(callee);
  }
  for (auto f : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
    if (llvm::is_contained(roots, f) || f.isExternal())
      continue;
    if (reached.contains(f))
      f.setPrivate();
    else
      f.erase();
  }
}

FailureOr<func::FuncOp> pipeopt::findModelFunction(ModuleOp module,
                                                   StringRef function,
                                                   StringRef hint) {
  if (!function.empty()) {
    auto fn = module.lookupSymbol<func::FuncOp>(function);
    if (!fn || fn.isExternal())
      return module.emitError() << "no function @" << function
                                << " with a body in the module";
    return fn;
  }
  SmallVector<func::FuncOp> candidates;
  for (auto f : module.getOps<func::FuncOp>())
    if (f.isPublic() && !f.isExternal())
      candidates.push_back(f);
  if (candidates.size() == 1)
    return candidates.front();
  InFlightDiagnostic diag = module.emitError()
                            << "expected exactly one public function with a "
                               "body as the model, found "
                            << candidates.size() << "; " << hint;
  for (auto f : candidates)
    diag.attachNote(f.getLoc()) << "candidate @" << f.getSymName();
  return failure();
}

LogicalResult pipeopt::buildSingleStageProgram(ModuleOp module,
                                               StringRef function,
                                               int64_t numMicrobatches) {
  if (numMicrobatches < 1)
    return module.emitError() << "number of microbatches must be positive, got "
                              << numMicrobatches;
  FailureOr<func::FuncOp> found =
      findModelFunction(module, function, "name the model function");
  if (failed(found))
    return failure();
  func::FuncOp fn = *found;
  FunctionType type = fn.getFunctionType();
  for (auto [i, t] : llvm::enumerate(type.getInputs()))
    if (!isa<RankedTensorType>(t))
      return fn.emitOpError() << "argument " << i << " of type " << t
                              << " is not a ranked tensor";
  for (auto [i, t] : llvm::enumerate(type.getResults()))
    if (!isa<RankedTensorType>(t))
      return fn.emitOpError() << "result " << i << " of type " << t
                              << " is not a ranked tensor";

  OpBuilder b(module.getContext());
  // How each model result is written (result attributes pipe.reduce and
  // pipe.output_name, e.g. set by pipeopt-compile --train on the loss and
  // the gradients): moved from the function onto its pipe.output ops.
  MLIRContext *ctx = module.getContext();
  StringRef reduceName = pipe::PipeDialect::getReduceAttrName();
  StringRef nameName = pipe::PipeDialect::getOutputNameAttrName();
  SmallVector<pipe::OutputReductionAttr> reduceOf(type.getNumResults());
  SmallVector<StringAttr> nameOf(type.getNumResults());
  SmallVector<std::optional<uint64_t>> gradientOf(type.getNumResults());
  StringRef gradientOfName = pipe::PipeDialect::getGradientOfAttrName();
  for (unsigned i = 0; i < type.getNumResults(); ++i) {
    if (auto a = fn.getResultAttrOfType<IntegerAttr>(i, gradientOfName)) {
      int64_t arg = a.getInt();
      if (arg < 0 || arg >= int64_t(type.getNumInputs()) ||
          type.getInput(arg) != type.getResult(i))
        return fn.emitOpError()
               << "result " << i << " is marked as the gradient of argument "
               << arg << ", which does not exist or has another type";
      gradientOf[i] = uint64_t(arg);
      fn.removeResultAttr(i, StringAttr::get(module.getContext(),
                                             gradientOfName));
    }
    if (Attribute a = fn.getResultAttr(i, reduceName)) {
      auto text = dyn_cast<StringAttr>(a);
      std::optional<pipe::OutputReduction> kind =
          text ? pipe::symbolizeOutputReduction(text.getValue()) : std::nullopt;
      if (!kind)
        return fn.emitOpError()
               << "result " << i << ": attribute '" << reduceName
               << "' must be \"mean\", got " << a;
      reduceOf[i] = pipe::OutputReductionAttr::get(ctx, *kind);
    }
    if (Attribute a = fn.getResultAttr(i, nameName)) {
      nameOf[i] = dyn_cast<StringAttr>(a);
      if (!nameOf[i] || nameOf[i].getValue().empty())
        return fn.emitOpError() << "result " << i << ": attribute '" << nameName
                                << "' must be a non-empty string";
    }
    fn.removeResultAttr(i, StringAttr::get(ctx, reduceName));
    fn.removeResultAttr(i, StringAttr::get(ctx, nameName));
  }
  // A value returned twice (`return %0, %0`) becomes one result of the
  // stage function, written to both model outputs (buffer-results-to-out-
  // params crashes on a function returning one buffer twice).
  SmallVector<unsigned> resultOf; // model result -> stage function result
  if (fn.getBody().hasOneBlock()) {
    Operation *ret = fn.getBody().front().getTerminator();
    SmallVector<Value> unique;
    llvm::BitVector repeated(ret->getNumOperands());
    for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
      auto *it = llvm::find(unique, v);
      resultOf.push_back(static_cast<unsigned>(it - unique.begin()));
      if (it == unique.end())
        unique.push_back(v);
      else
        repeated.set(i);
    }
    if (repeated.any()) {
      ret->setOperands(unique);
      // Drops the repeated results' types and attributes.
      if (failed(fn.eraseResults(repeated)))
        return fn.emitOpError() << "cannot remove its repeated results";
    }
  }
  if (resultOf.empty())
    for (unsigned i = 0; i < type.getNumResults(); ++i)
      resultOf.push_back(i);
  fn->setAttr(pipe::PipeDialect::StageAttrHelper::getNameStr(), b.getI64IntegerAttr(0));
  b.setInsertionPointToEnd(module.getBody());
  Location loc = fn.getLoc();
  std::string name = (fn.getSymName() + "_rank0").str();
  if (module.lookupSymbol(name))
    return module.emitError() << "symbol @" << name << " already exists";
  auto program = pipe::ProgramOp::create(b, loc, name, 0, 1, numMicrobatches);
  program.setScheduleAttr(b.getStringAttr("unpartitioned"));
  b.setInsertionPointToStart(&program.getBody().front());
  for (int64_t mb = 0; mb < numMicrobatches; ++mb) {
    SmallVector<Value> args;
    for (auto [i, t] : llvm::enumerate(type.getInputs()))
      args.push_back(pipe::InputOp::create(b, loc, t, uint64_t(i), uint64_t(mb)));
    auto forward = pipe::ForwardOp::create(
        b, loc, fn.getFunctionType().getResults(), fn.getSymName(),
        /*stage=*/uint64_t(0), uint64_t(mb), args);
    for (auto [i, r] : llvm::enumerate(resultOf)) {
      if (gradientOf[i]) {
        pipe::GradientOp::create(b, loc, forward.getResult(r), *gradientOf[i],
                                 /*stage=*/0, uint64_t(mb));
        continue;
      }
      auto out = pipe::OutputOp::create(b, loc, forward.getResult(r),
                                        uint64_t(i), uint64_t(mb));
      if (reduceOf[i])
        out.setReduceAttr(reduceOf[i]);
      if (nameOf[i])
        out.setNameAttr(nameOf[i]);
    }
  }
  return success();
}
