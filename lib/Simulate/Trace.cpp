//===- Trace.cpp - Chrome trace and SVG Gantt output of timelines ---------===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Simulate/Trace.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

using namespace pipeopt;
using namespace pipeopt::sim;
using schedule::Phase;

//===----------------------------------------------------------------------===//
// Chrome trace
//===----------------------------------------------------------------------===//

std::string sim::chromeTraceJSON(const Timeline &t, llvm::StringRef title) {
  constexpr double us = 1e6;
  llvm::json::Array events;
  const int kCompute = 0, kSend = 1, kRecv = 2, kCollective = 3;
  for (int r = 0; r < t.numRanks; ++r) {
    events.push_back(llvm::json::Object{
        {"name", "process_name"},
        {"ph", "M"},
        {"pid", r},
        {"args",
         llvm::json::Object{{"name", llvm::formatv("rank {0}", r).str()}}}});
    events.push_back(
        llvm::json::Object{{"name", "process_sort_index"},
                           {"ph", "M"},
                           {"pid", r},
                           {"args", llvm::json::Object{{"sort_index", r}}}});
    const char *names[] = {"compute", "send", "recv", "collective"};
    for (int tid = 0; tid < (t.collectives.empty() ? 3 : 4); ++tid)
      events.push_back(llvm::json::Object{
          {"name", "thread_name"},
          {"ph", "M"},
          {"pid", r},
          {"tid", tid},
          {"args", llvm::json::Object{{"name", names[tid]}}}});
  }
  for (const TimedCompute &c : t.compute) {
    std::string name =
        llvm::formatv("{0}{1}", schedule::phaseName(c.action.phase),
                      c.action.microbatch)
            .str();
    events.push_back(llvm::json::Object{
        {"name", name},
        {"cat", schedule::phaseName(c.action.phase)},
        {"ph", "X"},
        {"pid", c.rank},
        {"tid", kCompute},
        {"ts", c.startSec * us},
        {"dur", (c.endSec - c.startSec) * us},
        {"args", llvm::json::Object{{"stage", c.action.stage},
                                    {"microbatch", c.action.microbatch}}}});
  }
  for (const TimedOptimizerStep &o : t.optimizerSteps)
    events.push_back(llvm::json::Object{
        {"name", llvm::formatv("optimizer s{0}", o.stage).str()},
        {"cat", "optimizer"},
        {"ph", "X"},
        {"pid", o.rank},
        {"tid", kCompute},
        {"ts", o.startSec * us},
        {"dur", (o.endSec - o.startSec) * us},
        {"args", llvm::json::Object{{"stage", o.stage}}}});
  for (const TimedCollective &c : t.collectives) {
    std::string stages;
    for (int st : c.stages)
      stages += (stages.empty() ? "s" : "+s") + std::to_string(st);
    std::string name = (c.tied ? "tied allreduce " : "allreduce ") + stages;
    llvm::json::Array ranks;
    for (int r : c.ranks)
      ranks.push_back(r);
    for (int r : c.ranks)
      events.push_back(llvm::json::Object{
          {"name", name},
          {"cat", "allreduce"},
          {"ph", "X"},
          {"pid", r},
          {"tid", kCollective},
          {"ts", c.startSec * us},
          {"dur", (c.endSec - c.startSec) * us},
          {"args", llvm::json::Object{{"bytes", c.bytes},
                                      {"ring_size", c.ringSize},
                                      {"ready_us", c.readySec * us},
                                      {"ranks", llvm::json::Array(ranks)}}}});
  }
  int64_t flowId = 0;
  for (const TimedTransfer &x : t.transfers) {
    std::string what =
        llvm::formatv("{0} s{1}->s{2} mb{3}", x.backward ? "grad" : "act",
                      x.srcStage, x.dstStage, x.microbatch)
            .str();
    llvm::json::Object args{{"bytes", x.bytes},
                            {"ready_us", x.readySec * us},
                            {"src_rank", x.srcRank},
                            {"dst_rank", x.dstRank}};
    double dur = (x.endSec - x.startSec) * us;
    events.push_back(llvm::json::Object{{"name", "send " + what},
                                        {"cat", "comm"},
                                        {"ph", "X"},
                                        {"pid", x.srcRank},
                                        {"tid", kSend},
                                        {"ts", x.startSec * us},
                                        {"dur", dur},
                                        {"args", llvm::json::Object(args)}});
    events.push_back(llvm::json::Object{{"name", "recv " + what},
                                        {"cat", "comm"},
                                        {"ph", "X"},
                                        {"pid", x.dstRank},
                                        {"tid", kRecv},
                                        {"ts", x.startSec * us},
                                        {"dur", dur},
                                        {"args", std::move(args)}});
    // Flow arrow from the send slice to the recv slice; both points lie
    // inside their slices ("e": bind to the enclosing slice).
    ++flowId;
    events.push_back(llvm::json::Object{{"name", "transfer"},
                                        {"cat", "comm"},
                                        {"ph", "s"},
                                        {"id", flowId},
                                        {"pid", x.srcRank},
                                        {"tid", kSend},
                                        {"ts", x.startSec * us},
                                        {"bp", "e"}});
    events.push_back(llvm::json::Object{{"name", "transfer"},
                                        {"cat", "comm"},
                                        {"ph", "f"},
                                        {"id", flowId},
                                        {"pid", x.dstRank},
                                        {"tid", kRecv},
                                        {"ts", x.startSec * us + dur / 2},
                                        {"bp", "e"}});
  }
  llvm::json::Object root{
      {"traceEvents", std::move(events)},
      {"displayTimeUnit", "ms"},
      {"otherData", llvm::json::Object{{"title", title.str()},
                                       {"level", levelName(t.level).str()},
                                       {"makespan_s", t.makespanSec}}}};
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::json::Value(std::move(root));
  return out;
}

//===----------------------------------------------------------------------===//
// SVG Gantt chart
//===----------------------------------------------------------------------===//

static std::string xmlEscape(llvm::StringRef s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out.push_back(c);
    }
  }
  return out;
}

static const char *phaseColor(Phase p) {
  switch (p) {
  case Phase::F:
    return "#4e79a7"; // blue
  case Phase::B:
    return "#59a14f"; // green
  case Phase::W:
    return "#f28e2b"; // orange
  case Phase::BW:
    return "#8e6cbf"; // purple
  default:
    return "#999999";
  }
}

/// Time formatted with a unit chosen from the axis span.
static std::string formatTime(double sec, double span) {
  char buf[64];
  if (span < 1e-3)
    std::snprintf(buf, sizeof(buf), "%.4g us", sec * 1e6);
  else if (span < 1.0)
    std::snprintf(buf, sizeof(buf), "%.4g ms", sec * 1e3);
  else
    std::snprintf(buf, sizeof(buf), "%.4g s", sec);
  return buf;
}

std::string sim::renderSvgGantt(const Timeline &t, const SvgOptions &opts) {
  const double left = 70, right = 20, top = opts.title.empty() ? 20 : 44;
  const double rowH = std::max(opts.rowHeightPx, 10.0);
  const double lane = opts.showTransfers ? std::max(rowH / 3, 5.0) : 0;
  const double gap = 6;
  const double plotW = std::max(opts.widthPx, 200.0);
  const double perRank = rowH + lane + gap;
  const double axisY = top + t.numRanks * perRank + 4;
  const double legendY = axisY + 38;
  const double width = left + plotW + right;
  const double height = legendY + 24;
  const double span = t.makespanSec > 0 ? t.makespanSec : 1;
  auto x = [&](double sec) { return left + sec / span * plotW; };

  // Ranks holding several stages: shade chunks differently.
  std::vector<std::set<int>> stagesOf(t.numRanks);
  for (const TimedCompute &c : t.compute)
    if (c.rank >= 0 && c.rank < t.numRanks)
      stagesOf[c.rank].insert(c.action.stage);

  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
                      "height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                      "font-family=\"sans-serif\">\n",
                      width, height);
  os << llvm::formatv("<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" "
                      "fill=\"white\"/>\n",
                      width, height);
  if (!opts.title.empty())
    os << llvm::formatv("<text x=\"{0}\" y=\"26\" font-size=\"16\" "
                        "font-weight=\"bold\">{1}</text>\n",
                        left, xmlEscape(opts.title));

  // Rows and labels.
  for (int r = 0; r < t.numRanks; ++r) {
    double y = top + r * perRank;
    os << llvm::formatv(
        "<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" "
        "fill=\"#f4f4f4\"/>\n",
        left, y, plotW, rowH);
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" font-size=\"12\" "
                        "text-anchor=\"end\">rank {2}</text>\n",
                        left - 8, y + rowH / 2 + 4, r);
  }

  // Compute boxes.
  const double fontSize = std::min(12.0, rowH * 0.5);
  for (const TimedCompute &c : t.compute) {
    if (c.rank < 0 || c.rank >= t.numRanks)
      continue;
    double y = top + c.rank * perRank;
    double x0 = x(c.startSec), w = std::max(x(c.endSec) - x0, 0.5);
    int chunk = 0;
    if (stagesOf[c.rank].size() > 1)
      chunk = static_cast<int>(std::distance(
          stagesOf[c.rank].begin(), stagesOf[c.rank].find(c.action.stage)));
    double opacity = chunk % 2 ? 0.6 : 1.0;
    os << llvm::formatv(
        "<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" "
        "fill=\"{4}\" fill-opacity=\"{5}\" stroke=\"white\" "
        "stroke-width=\"0.5\"><title>{6}{7} stage {8} rank {9}: "
        "{10} - {11}</title></rect>\n",
        x0, y, w, rowH, phaseColor(c.action.phase), opacity,
        schedule::phaseName(c.action.phase), c.action.microbatch,
        c.action.stage, c.rank, formatTime(c.startSec, span),
        formatTime(c.endSec, span));
    // Microbatch number when it fits (about 7 px per digit).
    std::string label = std::to_string(c.action.microbatch);
    if (w >= fontSize * 0.65 * label.size() + 2)
      os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" font-size=\"{2}\" "
                          "fill=\"white\" text-anchor=\"middle\">{3}</text>\n",
                          x0 + w / 2, y + rowH / 2 + fontSize * 0.35, fontSize,
                          label);
  }

  // Optimizer steps: compute-row boxes of their own color.
  for (const TimedOptimizerStep &o : t.optimizerSteps) {
    if (o.rank < 0 || o.rank >= t.numRanks)
      continue;
    double y = top + o.rank * perRank;
    double x0 = x(o.startSec), w = std::max(x(o.endSec) - x0, 0.5);
    os << llvm::formatv(
        "<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" "
        "fill=\"#b07aa1\"><title>optimizer step stage {4} rank "
        "{5}: {6} - {7}</title></rect>\n",
        x0, y, w, rowH, o.stage, o.rank, formatTime(o.startSec, span),
        formatTime(o.endSec, span));
  }

  // Gradient all-reduces: a bar in the lane of every participating rank.
  if (opts.showTransfers)
    for (const TimedCollective &c : t.collectives) {
      if (c.endSec <= c.startSec)
        continue;
      std::string stages;
      for (int st : c.stages)
        stages += (stages.empty() ? "" : ", ") + std::to_string(st);
      for (int r : c.ranks) {
        if (r < 0 || r >= t.numRanks)
          continue;
        double y = top + r * perRank + rowH + 1;
        double x0 = x(c.startSec), w = std::max(x(c.endSec) - x0, 0.5);
        os << llvm::formatv(
            "<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" "
            "fill=\"#edc948\"><title>{4}all-reduce stage {5} over {6} ranks: "
            "{7} bytes, {8} - {9}</title></rect>\n",
            x0, y, w, lane - 2, c.tied ? "tied-weight " : "", stages,
            c.ringSize, c.bytes, formatTime(c.startSec, span),
            formatTime(c.endSec, span));
      }
    }

  // Transfers: a thin bar in the sender's lane.
  if (opts.showTransfers)
    for (const TimedTransfer &xf : t.transfers) {
      if (xf.srcRank < 0 || xf.srcRank >= t.numRanks ||
          xf.endSec <= xf.startSec)
        continue;
      double y = top + xf.srcRank * perRank + rowH + 1;
      double x0 = x(xf.startSec), w = std::max(x(xf.endSec) - x0, 0.5);
      os << llvm::formatv(
          "<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" "
          "fill=\"{4}\"><title>{5} stage {6} -> {7} (rank {8} -> "
          "{9}) mb {10}: {11} bytes, {12} - {13}</title></rect>\n",
          x0, y, w, lane - 2, xf.backward ? "#e15759" : "#9c9c9c",
          xf.backward ? "gradient" : "activation", xf.srcStage, xf.dstStage,
          xf.srcRank, xf.dstRank, xf.microbatch, xf.bytes,
          formatTime(xf.startSec, span), formatTime(xf.endSec, span));
    }

  // Time axis with 1/2/5 x 10^k ticks.
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" "
                      "stroke=\"black\"/>\n",
                      left, axisY, left + plotW);
  double raw = span / 10;
  double p10 = std::pow(10.0, std::floor(std::log10(raw)));
  double step = p10;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p10 >= raw) {
      step = m * p10;
      break;
    }
  for (int i = 0; i * step <= span * (1 + 1e-9); ++i) {
    double tx = x(i * step);
    os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" "
                        "stroke=\"black\"/>\n",
                        tx, axisY, axisY + 5);
    os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" "
                        "stroke=\"#dddddd\" stroke-dasharray=\"2,3\"/>\n",
                        tx, top, axisY);
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" font-size=\"11\" "
                        "text-anchor=\"middle\">{2}</text>\n",
                        tx, axisY + 18, formatTime(i * step, span));
  }
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" font-size=\"11\" "
                      "text-anchor=\"end\">makespan {2} ({3})</text>\n",
                      left + plotW, axisY + 32, formatTime(t.makespanSec, span),
                      levelName(t.level));

  // Legend.
  double lx = left;
  struct Item {
    const char *label, *color;
  };
  const Item items[] = {{"F forward", phaseColor(Phase::F)},
                        {"B input grad", phaseColor(Phase::B)},
                        {"W weight grad", phaseColor(Phase::W)},
                        {"BW full backward", phaseColor(Phase::BW)},
                        {"activation transfer", "#9c9c9c"},
                        {"gradient transfer", "#e15759"},
                        {"optimizer step", "#b07aa1"},
                        {"gradient all-reduce", "#edc948"}};
  const bool hasPost = !t.collectives.empty() || !t.optimizerSteps.empty();
  for (const Item &it : items) {
    if (!hasPost && (it.color == std::string("#b07aa1") ||
                     it.color == std::string("#edc948")))
      continue;
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"12\" height=\"12\" "
                        "fill=\"{2}\"/>\n",
                        lx, legendY - 10, it.color);
    os << llvm::formatv(
        "<text x=\"{0}\" y=\"{1}\" font-size=\"11\">{2}</text>\n", lx + 16,
        legendY, it.label);
    lx += 20 + 7 * std::string(it.label).size();
  }
  os << "</svg>\n";
  return out;
}

llvm::Error sim::writeTextFile(llvm::StringRef path, llvm::StringRef content) {
  if (path == "-") {
    llvm::outs() << content;
    return llvm::Error::success();
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return llvm::createStringError(ec, "cannot write '%s': %s",
                                   path.str().c_str(), ec.message().c_str());
  os << content;
  return llvm::Error::success();
}
