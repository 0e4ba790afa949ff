//===- Trace.h - Chrome trace and SVG Gantt output of timelines ---*- C++
//-*-===//
//
// Part of pipeopt: an MLIR-based pipeline-parallelism compiler.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Views of a simulated Timeline for people:
///  - Chrome / Perfetto trace JSON (Trace Event Format): one process per
///    rank with a "compute" track and "send" / "recv" tracks, complete
///    ("X") events, and flow events ("s" at the start of each send, "f" at
///    the end of its recv) so the UI draws an arrow per transfer. Open in
///    https://ui.perfetto.dev or chrome://tracing.
///  - SVG Gantt chart: one row per rank, a box per compute action colored
///    by phase (F, B, W, BW) with the microbatch number inside, transfers as
///    thin bars under each row, and a time axis.
///
//===----------------------------------------------------------------------===//

#ifndef PIPEOPT_SIMULATE_TRACE_H
#define PIPEOPT_SIMULATE_TRACE_H

#include "pipeopt/Simulate/Simulator.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace pipeopt {
namespace sim {

/// Chrome trace JSON of `t` (timestamps in microseconds as the format
/// requires). `title` becomes the trace's metadata name.
std::string chromeTraceJSON(const Timeline &t, llvm::StringRef title = "");

/// Options of renderSvgGantt().
struct SvgOptions {
  std::string title;
  double widthPx = 1400;     ///< Width of the plot area.
  double rowHeightPx = 30;   ///< Height of one rank's compute row.
  bool showTransfers = true; ///< Draw transfers under each row.
};

/// Self-contained SVG document of `t`.
std::string renderSvgGantt(const Timeline &t, const SvgOptions &opts = {});

/// Write `content` to `path` ("-" is stdout).
llvm::Error writeTextFile(llvm::StringRef path, llvm::StringRef content);

} // namespace sim
} // namespace pipeopt

#endif // PIPEOPT_SIMULATE_TRACE_H
