//===- FuzzTorchCsv.cpp - libFuzzer target: torch schedule CSV ------------===//
//
// schedule::importCSV (lib/Schedule/CSV.cpp), the reader of torch
// `_dump_csv` schedules (`schedule=csv:<file>`, pipeopt-explore). Linked to
// the prebuilt libPipeoptSchedule.a of a g++ build: only this file is
// instrumented (fuzz/CMakeLists.txt says why). An accepted table is exported
// and imported again, which must succeed.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Schedule/Schedule.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace pipeopt::schedule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  CSVImportStats stats;
  CSVImportOptions opts;
  opts.stats = &stats;
  auto s = importCSV(text, opts);
  if (!s) {
    llvm::consumeError(s.takeError());
    return 0;
  }
  // corpus/torch-csv/regression-idle-rank.csv: a rank without actions (a
  // row of only UNSHARD cells) was exported as a blank line, which
  // importCSV rejects; it is now a line of empty cells.
  std::string again = exportCSV(*s);
  CSVImportOptions opts2;
  opts2.numStages = s->numStages;
  opts2.numMicrobatches = s->numMicrobatches;
  auto t = importCSV(again, opts2);
  if (!t) {
    // exportCSV wrote what importCSV does not read back.
    llvm::errs() << "round trip failed: " << llvm::toString(t.takeError())
                 << "\nexported:\n"
                 << again << "\n";
    std::abort();
  }
  return 0;
}
