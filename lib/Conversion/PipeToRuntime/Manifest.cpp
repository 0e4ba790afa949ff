//===- Manifest.cpp - convert-pipe-to-runtime: the manifest ---------------===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Part 3 of convert-pipe-to-runtime (PipeToRuntimeInternal.h): the
/// manifest JSON that pipeopt-run reads, built from what the lowering
/// recorded (LoweringResults). Every key is a pipeopt::manifest constant
/// generated from runtime/include/pipeopt/runtime/ManifestKeys.def, which
/// the runtime's parser reads too. Format: docs/Runtime.md.
///
//===----------------------------------------------------------------------===//

#include "PipeToRuntimeInternal.h"

#include "pipeopt/Conversion/PipeToRuntime/PipeToRuntime.h"
#include "pipeopt/Support/FileOutput.h"
#include "pipeopt/runtime/ManifestKeys.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace pipeopt::pipe_to_runtime;
using pipeopt::runtimeDTypeName;
namespace manifest = pipeopt::manifest;

static llvm::json::Array shapeJson(RankedTensorType type) {
  llvm::json::Array a;
  for (int64_t d : type.getShape())
    a.push_back(d);
  return a;
}

llvm::json::Value
pipeopt::pipe_to_runtime::manifestJson(const LoweringResults &m,
                                       const MicrobatchPolicy &policy,
                                       StringRef target) {
  llvm::json::Object root;
  root[manifest::kFormatVersion] = 1;
  // CPU builds keep the manifest of before the key existed.
  if (target != "cpu")
    root[manifest::kTarget] = target.str();
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
      for (const LoweringResults::Action &a : it->second) {
        static const char *const kinds[] = {"F", "B", "W", "BW"};
        list.push_back(
            llvm::json::Object{{manifest::kKind, kinds[a.kind]},
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
    // Each field of the #pipe.optimizer under its key; the hyper-parameters
    // that do not apply to the kind are absent from both.
    llvm::json::Object training;
    training[manifest::kOptimizer] = "none";
    if (pipe::OptimizerAttr o = m.optimizer) {
      training[manifest::kOptimizer] =
          pipe::stringifyOptimizerKind(o.getKind()).str();
      for (auto [key, value] :
           {std::pair<const char *, FloatAttr>{manifest::kLr, o.getLr()},
            {manifest::kWeightDecay, o.getWeightDecay()},
            {manifest::kMomentum, o.getMomentum()},
            {manifest::kBeta1, o.getBeta1()},
            {manifest::kBeta2, o.getBeta2()},
            {manifest::kEps, o.getEps()}})
        if (value)
          training[key] = value.getValueAsDouble();
      if (std::optional<int64_t> k = o.getUpdateEvery())
        training[manifest::kUpdateEvery] = *k;
    }
    root[manifest::kTraining] = std::move(training);
  }
  return llvm::json::Value(std::move(root));
}

namespace {
/// A raw_ostream that feeds what is written to it into a BLAKE3 hasher, so
/// that a large module is hashed as it is printed, without a copy.
class HashingStream : public llvm::raw_ostream {
public:
  HashingStream() { SetUnbuffered(); }
  llvm::BLAKE3 hasher;

private:
  uint64_t pos = 0;
  void write_impl(const char *ptr, size_t size) override {
    hasher.update(llvm::StringRef(ptr, size));
    pos += size;
  }
  uint64_t current_pos() const override { return pos; }
};
} // namespace

uint64_t pipeopt::pipe_to_runtime::moduleHash(ModuleOp module,
                                              const llvm::json::Value &json) {
  HashingStream os;
  module->print(os, OpPrintingFlags().printGenericOpForm());
  os << '\0' << llvm::formatv("{0}", json);
  std::array<uint8_t, 8> bytes = os.hasher.final<8>();
  uint64_t hash = 0;
  for (uint8_t b : bytes)
    hash = hash << 8 | b;
  return hash;
}

std::string pipeopt::pipe_to_runtime::formatModuleHash(uint64_t hash) {
  return llvm::formatv("{0:x-16}", hash).str();
}

void pipeopt::pipe_to_runtime::addModuleHashFunction(ModuleOp module,
                                                     uint64_t hash) {
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = module.getLoc();
  auto fn = func::FuncOp::create(b, loc, kModuleHashSymbol,
                                 b.getFunctionType({}, {b.getIntegerType(64)}));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  Value c = arith::ConstantOp::create(
      b, loc,
      b.getIntegerAttr(b.getIntegerType(64), static_cast<int64_t>(hash)));
  func::ReturnOp::create(b, loc, c);
}

void pipeopt::pipe_to_runtime::addEmbeddedManifest(
    ModuleOp module, const llvm::json::Value &json) {
  std::string text = llvm::formatv("{0}", json).str();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto i8 = b.getIntegerType(8);
  auto type = RankedTensorType::get({int64_t(text.size())}, i8);
  auto data = DenseElementsAttr::get(
      type, llvm::ArrayRef<char>(text.data(), text.size()));
  memref::GlobalOp::create(b, module.getLoc(), kEmbeddedManifestSymbol,
                           b.getStringAttr("public"),
                           MemRefType::get({int64_t(text.size())}, i8), data,
                           /*constant=*/true, /*alignment=*/nullptr);
}

LogicalResult
pipeopt::pipe_to_runtime::writeManifest(ModuleOp module, StringRef path,
                                        const llvm::json::Value &json) {
  auto print = [&](llvm::raw_ostream &os) {
    os << llvm::formatv("{0:2}", json) << "\n";
  };
  // A regular file (or a new one) is written to a temporary and renamed
  // (writeFileAtomically): a failed write (a full disk) is an error naming
  // the file and leaves no partial manifest. Anything else ("-" for stdout,
  // /dev/stdout, a pipe, a symbolic link) is written in place: a rename
  // would replace the device node or the link itself.
  if (path != "-" && (!llvm::sys::fs::exists(path) ||
                      (llvm::sys::fs::is_regular_file(path) &&
                       !llvm::sys::fs::is_symlink_file(path)))) {
    std::string text;
    llvm::raw_string_ostream os(text);
    print(os);
    if (std::error_code ec = pipeopt::writeFileAtomically(path, text))
      return module.emitError()
             << "cannot write manifest '" << path << "': " << ec.message();
    return success();
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (!ec) {
    print(os);
    os.close();
    ec = os.error();
    os.clear_error();
  }
  if (ec)
    return module.emitError()
           << "cannot write manifest '" << path << "': " << ec.message();
  return success();
}
