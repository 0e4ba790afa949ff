//===- SchedulePass.cpp - pipe-schedule: per-rank programs ------*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// pipe-schedule: stage graph -> schedule table (schedule library or torch
/// CSV) -> Send/Recv insertion and checks -> one pipe.program per rank (and,
/// with export-csv, the table written back as a CSV). The
/// IR conventions (operands of pipe.forward / pipe.backward, tags) are
/// documented in Passes.td.
///
//===----------------------------------------------------------------------===//

#include "pipeopt/Programs/ProgramTable.h"
#include "pipeopt/Programs/StageGraphInfo.h"
#include "pipeopt/Support/OptionRange.h"
#include "pipeopt/Support/Plural.h"

#include "pipeopt/Analysis/CostModel.h"
#include "pipeopt/Schedule/Schedule.h"
#include "pipeopt/Schedule/ZeroBubbleAuto.h"
#include "pipeopt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <tuple>

namespace pipeopt {
#define GEN_PASS_DEF_SCHEDULEPASS
#include "pipeopt/Transforms/Passes.h.inc"
} // namespace pipeopt

using namespace mlir;
using namespace pipeopt;
namespace sched = pipeopt::schedule;

namespace {
/// The `schedule` option's help with the registry's names (Passes.td has
/// the short form, which the generated pass documentation shows).
llvm::StringRef scheduleOptionHelp() {
  static const std::string help =
      "Schedule to generate (" + sched::scheduleNames() +
      ", or an alias; default " + sched::kDefaultSchedule.str() +
      "; not with csv)";
  return help;
}

struct SchedulePass : pipeopt::impl::SchedulePassBase<SchedulePass> {
  SchedulePass() { scheduleName.setDescription(scheduleOptionHelp()); }
  SchedulePass(SchedulePassOptions options) : Base(std::move(options)) {
    scheduleName.setDescription(scheduleOptionHelp());
  }
  void runOnOperation() override;

private:
  /// Builds the schedule table for `info` (generated or imported, with
  /// Send/Recv, validated and deadlock-checked); emits errors at `fn`.
  FailureOr<sched::Schedule> buildSchedule(const StageGraphInfo &info);
  /// zb-auto's inputs: memory-limit, comm-time and the per-stage F / B / W
  /// times of the cost model on `device` (unit times when some stage gets
  /// none).
  FailureOr<sched::AutoScheduleInputs> autoInputs(const StageGraphInfo &info);
  /// Emits the pipe.program of every rank of `s` at the end of the module.
  LogicalResult emitPrograms(const StageGraphInfo &info,
                             const sched::Schedule &s);
};

/// What one rank's program has produced so far.
struct RankState {
  /// (argument, microbatch) -> pipe.input result.
  std::map<std::pair<unsigned, int>, Value> inputs;
  /// (stage, microbatch) -> pipe.forward on this rank.
  std::map<std::pair<int, int>, pipe::ForwardOp> forwards;
  /// (stage, microbatch) -> pipe.backward full|input on this rank.
  std::map<std::pair<int, int>, pipe::BackwardOp> backwards;
  /// (from, to, microbatch, value) -> received activation.
  std::map<std::tuple<int, int, int, int>, Value> activations;
  /// (from, to, microbatch, value) -> received gradient of that activation.
  std::map<std::tuple<int, int, int, int>, Value> gradients;
};
} // namespace

/// Turns a library error into a diagnostic at `op`.
static LogicalResult report(Operation *op, const Twine &prefix, llvm::Error e) {
  std::string msg = llvm::toString(std::move(e));
  return op->emitError() << prefix << msg;
}

FailureOr<sched::AutoScheduleInputs>
SchedulePass::autoInputs(const StageGraphInfo &info) {
  sched::AutoScheduleInputs in;
  if (memoryLimit != 0)
    in.memoryLimit = static_cast<double>(memoryLimit);
  in.commSec = commTime;
  auto hw = machine::getDevicePreset(device);
  if (!hw) {
    func::FuncOp fn = info.func;
    return fn.emitError() << "pipe-schedule: "
                          << llvm::toString(hw.takeError());
  }
  ModuleOp module = getOperation();
  std::vector<double> f, b, w;
  for (pipe::StageCallOp call : info.calls) {
    auto fn =
        module.lookupSymbol<func::FuncOp>(pipe::StageCallOp(call).getCallee());
    double fs = 0, bs = 0, ws = 0;
    if (fn && !fn.isExternal()) {
      cost::CostAnalysis analysis(fn, *hw);
      analysis.emitRemarks = false;
      for (Block &block : fn.getBody())
        for (Operation &op : block.without_terminator()) {
          const cost::OpCost &c = analysis.get(&op);
          fs += c.forwardSeconds;
          bs += c.backwardInputSeconds;
          ws += c.backwardWeightSeconds;
        }
    }
    if (!(fs > 0 && bs > 0 && ws > 0))
      return in; // Some stage has no F, B or W time: unit times.
    f.push_back(fs);
    b.push_back(bs);
    w.push_back(ws);
  }
  in.forwardSec = std::move(f);
  in.backwardInputSec = std::move(b);
  in.backwardWeightSec = std::move(w);
  return in;
}

FailureOr<sched::Schedule>
SchedulePass::buildSchedule(const StageGraphInfo &info) {
  func::FuncOp fn = info.func;
  int S = info.numStages();
  sched::Schedule s;
  if (!csvPath.empty()) {
    auto buffer = llvm::MemoryBuffer::getFile(csvPath, /*IsText=*/true);
    if (!buffer)
      return fn.emitError() << "cannot read schedule CSV '" << csvPath
                            << "': " << buffer.getError().message();
    sched::CSVImportOptions opts;
    opts.name = "csv";
    opts.numStages = S;
    opts.numMicrobatches = static_cast<int>(numMicrobatches);
    auto imported = sched::importCSV((*buffer)->getBuffer(), opts);
    if (!imported)
      return report(
          fn, "invalid schedule CSV '" + csvPath + "': ", imported.takeError());
    s = std::move(*imported);
    if (s.numStages != S)
      return fn.emitError() << "schedule CSV '" << csvPath << "' has "
                            << countOf(s.numStages, "stage") << ", but @"
                            << fn.getSymName() << " has " << S;
  } else {
    sched::ScheduleParams p;
    p.numStages = S;
    p.numRanks = static_cast<int>(numRanks);
    p.virtualStages = static_cast<int>(virtualStages);
    p.numMicrobatches =
        numMicrobatches > 0 ? static_cast<int>(numMicrobatches) : S;
    p.waves = static_cast<int>(waves);
    // Empty: not given (see Passes.td), the registry's default schedule.
    llvm::StringRef name = scheduleName.empty()
                               ? llvm::StringRef(sched::kDefaultSchedule)
                               : llvm::StringRef(scheduleName);
    const sched::ScheduleInfo *row = sched::findSchedule(name);
    if (row && row->generate == sched::makeZBAuto) {
      FailureOr<sched::AutoScheduleInputs> in = autoInputs(info);
      if (failed(in))
        return failure();
      p.autoInputs = std::move(*in);
    }
    auto made = sched::makeSchedule(name, p);
    if (!made)
      return report(fn, "cannot schedule @" + fn.getSymName() + ": ",
                    made.takeError());
    s = std::move(*made);
  }

  if (printGrid)
    llvm::outs() << sched::renderGrid(s);

  if (s.hasCommunication()) {
    // An imported CSV with its own SEND/RECV actions: check them against
    // this stage graph instead of inserting new ones.
    if (llvm::Error e = sched::validate(s, info.graph))
      return report(fn, "invalid schedule '" + s.name + "': ", std::move(e));
    if (llvm::Error e = sched::checkDeadlockFree(s))
      return report(fn, "schedule '" + s.name + "' deadlocks: ", std::move(e));
    return s;
  }
  auto lowered = sched::insertCommunication(s, info.graph);
  if (!lowered)
    return report(fn,
                  "cannot insert send/recv into schedule '" + s.name + "': ",
                  lowered.takeError());
  if (llvm::Error e = sched::validate(*lowered, info.graph))
    return report(fn, "invalid schedule '" + s.name + "': ", std::move(e));
  if (llvm::Error e = sched::checkDeadlockFree(*lowered))
    return report(fn, "schedule '" + s.name + "' deadlocks: ", std::move(e));
  return std::move(*lowered);
}

LogicalResult SchedulePass::emitPrograms(const StageGraphInfo &info,
                                         const sched::Schedule &s) {
  func::FuncOp fn = info.func;
  ModuleOp module = getOperation();
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);

  for (int r = 0; r < s.numRanks; ++r) {
    std::string name = (fn.getSymName() + "_rank" + Twine(r)).str();
    if (SymbolTable::lookupSymbolIn(module, name))
      return fn.emitError() << "cannot create program @" << name
                            << ": the symbol already exists (already "
                               "scheduled?)";
  }

  auto internalError = [&](int rank, const sched::Action &a,
                           const Twine &what) {
    return fn.emitError() << "internal error while emitting rank " << rank
                          << ", " << sched::describe(a) << ": " << what;
  };
  auto locOf = [&](int stage) { return info.calls[stage]->getLoc(); };
  auto tag = [&](bool backward, int from, int to, int mb, int vi) {
    return pipe::TagAttr::get(
        ctx, backward ? pipe::Direction::Backward : pipe::Direction::Forward,
        from, to, mb, vi);
  };

  b.setInsertionPointToEnd(module.getBody());
  for (int r = 0; r < s.numRanks; ++r) {
    std::string name = (fn.getSymName() + "_rank" + Twine(r)).str();
    auto program = pipe::ProgramOp::create(b, fn.getLoc(), name, r, s.numRanks,
                                           s.numMicrobatches);
    program.setScheduleAttr(b.getStringAttr(s.name));
    ++numPrograms;
    OpBuilder pb = OpBuilder::atBlockEnd(&program.getBody().front());
    RankState st;

    for (const sched::Action &a : s.actions[r]) {
      int m = a.microbatch;
      switch (a.phase) {
      case sched::Phase::F: {
        int k = a.stage;
        pipe::StageCallOp call = info.calls[k];
        Location loc = locOf(k);
        SmallVector<Value> operands;
        for (const StageGraphInfo::Source &src : info.sources[k]) {
          if (src.fromStage < 0) {
            Value &in = st.inputs[{src.argIndex, m}];
            if (!in)
              in = pipe::InputOp::create(pb, loc,
                                         fn.getArgument(src.argIndex).getType(),
                                         uint64_t(src.argIndex), uint64_t(m));
            operands.push_back(in);
            continue;
          }
          Value v = info.edgeValues.at({src.fromStage, k})[src.valueIndex];
          if (s.rankOf(src.fromStage, m) == r) {
            auto it = st.forwards.find({src.fromStage, m});
            if (it == st.forwards.end())
              return internalError(r, a,
                                   "producer stage " + Twine(src.fromStage) +
                                       " has not run on this rank");
            operands.push_back(
                it->second.getResult(StageGraphInfo::resultNumber(v)));
            continue;
          }
          auto it = st.activations.find({src.fromStage, k, m, src.valueIndex});
          if (it == st.activations.end())
            return internalError(r, a,
                                 "no pipe.recv of value " +
                                     Twine(src.valueIndex) + " from stage " +
                                     Twine(src.fromStage));
          operands.push_back(it->second);
        }
        auto fwd = pipe::ForwardOp::create(pb, loc, call.getResultTypes(),
                                           call.getCallee(), uint64_t(k),
                                           uint64_t(m), operands);
        st.forwards[{k, m}] = fwd;
        for (auto [i, out] : llvm::enumerate(info.outputs))
          if (out.first == k)
            pipe::OutputOp::create(pb, loc, fwd.getResult(out.second),
                                   uint64_t(i), uint64_t(m));
        break;
      }
      case sched::Phase::B:
      case sched::Phase::BW: {
        int k = a.stage;
        Location loc = locOf(k);
        SmallVector<Value> grads;
        for (const StageGraphInfo::EdgeValue &ev : info.outgoing[k]) {
          int j = ev.peerStage;
          if (s.rankOf(j, m) == r) {
            auto it = st.backwards.find({j, m});
            int pos = info.incomingPosition(j, k, ev.valueIndex);
            if (it == st.backwards.end() || pos < 0)
              return internalError(r, a,
                                   "consumer stage " + Twine(j) +
                                       " has no backward on this rank");
            grads.push_back(it->second.getResult(pos));
            continue;
          }
          auto it = st.gradients.find({k, j, m, ev.valueIndex});
          if (it == st.gradients.end())
            return internalError(r, a,
                                 "no pipe.recv of the gradient from "
                                 "stage " +
                                     Twine(j));
          grads.push_back(it->second);
        }
        SmallVector<Type> resultTypes;
        for (const StageGraphInfo::EdgeValue &ev : info.incoming[k])
          resultTypes.push_back(ev.value.getType());
        auto kind = a.phase == sched::Phase::B ? pipe::BackwardKind::Input
                                               : pipe::BackwardKind::Full;
        auto bwd = pipe::BackwardOp::create(pb, loc, resultTypes, kind,
                                            uint64_t(k), uint64_t(m), grads);
        st.backwards[{k, m}] = bwd;
        break;
      }
      case sched::Phase::W:
        pipe::BackwardOp::create(pb, locOf(a.stage), TypeRange(),
                                 pipe::BackwardKind::Weight, uint64_t(a.stage),
                                 uint64_t(m), ValueRange());
        break;
      case sched::Phase::Send: {
        Location loc = locOf(a.stage);
        if (!a.backward) {
          int i = a.stage, j = a.peerStage;
          auto it = st.forwards.find({i, m});
          if (it == st.forwards.end())
            return internalError(r, a, "the producing forward has not run");
          for (auto [vi, v] : llvm::enumerate(info.edgeValues.at({i, j}))) {
            pipe::SendOp::create(
                pb, loc, it->second.getResult(StageGraphInfo::resultNumber(v)),
                uint64_t(a.peerRank), tag(false, i, j, m, vi));
            ++numTransfers;
          }
        } else {
          // Gradient of edge i -> j, produced by the backward of stage j.
          int j = a.stage, i = a.peerStage;
          auto it = st.backwards.find({j, m});
          if (it == st.backwards.end())
            return internalError(r, a, "the producing backward has not run");
          for (size_t vi = 0, e = info.edgeValues.at({i, j}).size(); vi < e;
               ++vi) {
            int pos = info.incomingPosition(j, i, vi);
            pipe::SendOp::create(pb, loc, it->second.getResult(pos),
                                 uint64_t(a.peerRank), tag(true, j, i, m, vi));
            ++numTransfers;
          }
        }
        break;
      }
      case sched::Phase::Recv: {
        Location loc = locOf(a.stage);
        if (!a.backward) {
          int i = a.peerStage, j = a.stage;
          for (auto [vi, v] : llvm::enumerate(info.edgeValues.at({i, j})))
            st.activations[{i, j, m, static_cast<int>(vi)}] =
                pipe::RecvOp::create(pb, loc, v.getType(), uint64_t(a.peerRank),
                                     tag(false, i, j, m, vi));
        } else {
          int i = a.stage, j = a.peerStage;
          for (auto [vi, v] : llvm::enumerate(info.edgeValues.at({i, j})))
            st.gradients[{i, j, m, static_cast<int>(vi)}] =
                pipe::RecvOp::create(pb, loc, v.getType(), uint64_t(a.peerRank),
                                     tag(true, j, i, m, vi));
        }
        break;
      }
      }
    }
  }
  return success();
}

void SchedulePass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<func::FuncOp> graphs;
  for (auto fn : module.getOps<func::FuncOp>())
    if (isStageGraph(fn))
      graphs.push_back(fn);
  // Options are checked first. Range checks come before the values are
  // narrowed to int (errors at the first stage graph, else at the module's
  // first op: a parsed module often has no location of its own).
  // 0 selects the default for num-microbatches, virtual-stages, num-ranks.
  Location loc = module.getLoc();
  if (!graphs.empty())
    loc = graphs.front().getLoc();
  else if (!module.getBody()->empty())
    loc = module.getBody()->front().getLoc();
  if (failed(checkIntRange(loc, "pipe-schedule", "num-microbatches",
                           numMicrobatches, 0, kMaxPipelineCount)) ||
      failed(checkIntRange(loc, "pipe-schedule", "virtual-stages",
                           virtualStages, 0, kMaxPipelineCount)) ||
      failed(checkIntRange(loc, "pipe-schedule", "num-ranks", numRanks, 0,
                           kMaxPipelineCount)) ||
      failed(checkIntRange(loc, "pipe-schedule", "waves", waves, 1,
                           kMaxPipelineCount)) ||
      failed(checkIntRange(loc, "pipe-schedule", "memory-limit", memoryLimit, 0,
                           kMaxPipelineCount)))
    return signalPassFailure();
  if (llvm::Expected<machine::Machine> hw = machine::getDevicePreset(device);
      !hw) {
    emitError(loc) << "pipe-schedule: " << llvm::toString(hw.takeError());
    return signalPassFailure();
  }
  if (csvPath.empty() && (memoryLimit != 0 || commTime != 0)) {
    const sched::ScheduleInfo *row = sched::findSchedule(
        scheduleName.empty() ? llvm::StringRef(sched::kDefaultSchedule)
                             : llvm::StringRef(scheduleName));
    if (row && row->generate != sched::makeZBAuto) {
      emitError(loc) << "pipe-schedule: memory-limit and comm-time apply to "
                        "schedule=zb-auto only, not to schedule="
                     << row->name;
      return signalPassFailure();
    }
  }
  if (!csvPath.empty()) {
    // The CSV is the whole table: generator options would be ignored.
    std::string ignored;
    auto add = [&](const std::string &o) {
      ignored += (ignored.empty() ? "" : ", ") + o;
    };
    if (!scheduleName.empty())
      add("schedule=" + scheduleName.getValue());
    if (virtualStages != 0)
      add("virtual-stages=" + std::to_string(virtualStages));
    if (numRanks != 0)
      add("num-ranks=" + std::to_string(numRanks));
    if (waves != 1)
      add("waves=" + std::to_string(waves));
    if (memoryLimit != 0)
      add("memory-limit=" + std::to_string(memoryLimit));
    if (commTime != 0)
      add("comm-time=" + llvm::formatv("{0}", commTime.getValue()).str());
    if (!ignored.empty()) {
      emitError(loc) << "pipe-schedule: csv='" << csvPath
                     << "' imports the whole schedule table, so " << ignored
                     << " would be ignored; give either csv or the schedule "
                        "options";
      return signalPassFailure();
    }
  }
  if (graphs.empty()) {
    module.emitError()
        << "no stage graph found: expected a func.func whose body is "
           "pipe.stage_call ops (run pipe-outline-stages first)";
    return signalPassFailure();
  }
  if (!csvPath.empty() && graphs.size() > 1) {
    graphs[1].emitError() << "a schedule CSV describes one model, but the "
                             "module has several stage graphs";
    return signalPassFailure();
  }
  if (!exportCSVPath.empty() && graphs.size() > 1) {
    graphs[1].emitError() << "pipe-schedule: export-csv writes one schedule, "
                             "but the module has several stage graphs";
    return signalPassFailure();
  }
  for (func::FuncOp fn : graphs) {
    FailureOr<StageGraphInfo> info = analyzeStageGraph(fn);
    if (failed(info))
      return signalPassFailure();
    FailureOr<sched::Schedule> s = buildSchedule(*info);
    if (failed(s) || failed(emitPrograms(*info, *s)))
      return signalPassFailure();
    // The table the programs were emitted from, send/recv included.
    if (!exportCSVPath.empty() &&
        failed(writeScheduleCSV(fn.getLoc(), "pipe-schedule", exportCSVPath, *s,
                                exportCSVComputeOnly)))
      return signalPassFailure();
  }
}
