//===- PipeoptModule.cpp - pipeopt's Python extension (_pipeopt) ---------===//
//
// Part of pipeopt. The native half of the `pipeopt` Python package
// (docs/Python.md): the compiler driver (lib/Driver, Driver.h) and the
// runtime Session (runtime/include/pipeopt/runtime/Session.h) bound with
// pybind11. The Python modules under python/pipeopt wrap these calls in the
// documented API; nothing here is meant to be called directly.
//
// Errors: a failed compilation raises pipeopt.CompileError carrying the
// diagnostics the driver printed (captured from stderr); a Session error
// of code 2 (usage: a bad name, shape or path) raises pipeopt.UsageError
// (a ValueError), one of code 1 (a rank failed) pipeopt.RunError (a
// RuntimeError).
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Driver/Driver.h"
#include "pipeopt/runtime/Communicator.h"
#include "pipeopt/runtime/Session.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <mutex>
#include <sstream>
#include <string>
#include <unistd.h>
#include <variant>
#include <vector>

namespace py = pybind11;
using namespace pipeopt;

namespace {

//===----------------------------------------------------------------------===//
// Exceptions
//===----------------------------------------------------------------------===//

// Created in PYBIND11_MODULE; the Python package re-exports them.
py::object compileErrorType;
py::object usageErrorType;
py::object runErrorType;

[[noreturn]] void raise(const py::object &type, const std::string &message) {
  PyErr_SetString(type.ptr(), message.c_str());
  throw py::error_already_set();
}

void check(const rt::Status &status) {
  if (status.ok())
    return;
  raise(status.code() == 2 ? usageErrorType : runErrorType, status.message());
}

//===----------------------------------------------------------------------===//
// Capturing what the driver prints
//===----------------------------------------------------------------------===//

/// Redirects file descriptor 2 into a temporary file for its lifetime and
/// returns what was written: the driver prints MLIR diagnostics (with
/// their locations and notes), --timing lines and its own errors to
/// stderr, and a Python caller wants them in the exception or as a string.
class StderrCapture {
public:
  StderrCapture() {
    std::fflush(stderr);
    llvm::errs().flush();
    char name[] = "/tmp/pipeopt-diagnostics-XXXXXX";
    fd = ::mkstemp(name);
    if (fd < 0)
      return;
    ::unlink(name);
    saved = ::dup(2);
    if (saved < 0 || ::dup2(fd, 2) < 0) {
      ::close(fd);
      fd = -1;
    }
  }
  /// Restores stderr and returns the captured text.
  std::string finish() {
    if (fd < 0)
      return "";
    std::fflush(stderr);
    llvm::errs().flush();
    ::dup2(saved, 2);
    ::close(saved);
    std::string text;
    ::lseek(fd, 0, SEEK_SET);
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0)
      text.append(buf, size_t(n));
    ::close(fd);
    fd = -1;
    return text;
  }
  ~StderrCapture() { finish(); }

private:
  int fd = -1;
  int saved = -1;
};

//===----------------------------------------------------------------------===//
// Compiling
//===----------------------------------------------------------------------===//

std::once_flag registerOnce;

/// The options of pipeopt-compile, for the Python keyword arguments:
/// (name, kind, help) with kind "flag" (a bool), "value" or "list".
std::vector<std::tuple<std::string, std::string, std::string>>
compileOptions() {
  std::call_once(registerOnce, [] { driver::registerCompileCLOptions(); });
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  llvm::cl::OptionCategory &cat = driver::getCompileCLCategory();
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::cl::Option *opt = entry.second;
    if (entry.first != opt->ArgStr || opt->ArgStr.empty())
      continue; // an alias's second name
    bool inCategory = false;
    for (llvm::cl::OptionCategory *c : opt->Categories)
      inCategory = inCategory || c == &cat;
    if (!inCategory)
      continue;
    std::string kind = "value";
    if (opt->getValueExpectedFlag() == llvm::cl::ValueOptional ||
        opt->getValueExpectedFlag() == llvm::cl::ValueDisallowed)
      kind = "flag";
    if (opt->getNumOccurrencesFlag() == llvm::cl::ZeroOrMore ||
        opt->getNumOccurrencesFlag() == llvm::cl::OneOrMore ||
        opt->getMiscFlags() & llvm::cl::CommaSeparated)
      kind = kind == "flag" ? kind : "list";
    out.emplace_back(opt->ArgStr.str(), kind, opt->HelpStr.str());
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Compiles with pipeopt-compile's command line `args` (without the tool
/// name), through the driver library; returns what the driver printed
/// (--timing lines, warnings). Raises CompileError with the diagnostics.
std::string compile(const std::vector<std::string> &args) {
  std::call_once(registerOnce, [] { driver::registerCompileCLOptions(); });
  std::vector<const char *> argv{"pipeopt-compile"};
  for (const std::string &a : args)
    argv.push_back(a.c_str());
  std::string parseErrors;
  llvm::raw_string_ostream errs(parseErrors);
  llvm::cl::ResetAllOptionOccurrences();
  bool parsed;
  std::string printedByParser;
  {
    // A value that does not parse is reported through errs(), not `errs`.
    StderrCapture capture;
    parsed = llvm::cl::ParseCommandLineOptions(int(argv.size()), argv.data(),
                                               "", &errs);
    printedByParser = capture.finish();
  }
  if (!parsed) {
    llvm::cl::ResetAllOptionOccurrences();
    raise(compileErrorType, errs.str() + printedByParser);
  }
  driver::CompileOptions options = driver::getCompileOptionsFromCL();
  llvm::cl::ResetAllOptionOccurrences();
  std::string printed;
  bool failed = false;
  {
    py::gil_scoped_release release;
    StderrCapture capture;
    llvm::Error err = driver::compile(std::move(options));
    if (err) {
      failed = true;
      driver::reportError(std::move(err), "pipeopt-compile");
    }
    printed = capture.finish();
  }
  if (failed)
    raise(compileErrorType, printed.empty() ? "compilation failed" : printed);
  return printed;
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

// Tensors cross the boundary through the buffer protocol (PEP 3118), not
// NumPy's C API: pybind11's NumPy support reads NumPy's descriptor structs,
// whose layout changed in NumPy 2, and Debian's pybind11 predates that.

/// The runtime dtype of a buffer's format ("f", "<d", "q", "?", ...).
rt::DType dtypeOf(const std::string &format, size_t itemsize) {
  std::string f = format;
  while (!f.empty() && std::strchr("@=<>!", f[0]))
    f.erase(0, 1);
  char c = f.size() == 1 ? f[0] : '\0';
  if (c == 'f' && itemsize == 4)
    return rt::DType::F32;
  if (c == 'd' && itemsize == 8)
    return rt::DType::F64;
  if (c == 'e' && itemsize == 2)
    return rt::DType::F16;
  if ((c == 'q' || c == 'l') && itemsize == 8)
    return rt::DType::I64;
  if ((c == 'i' || c == 'l') && itemsize == 4)
    return rt::DType::I32;
  if (c == 'b' && itemsize == 1)
    return rt::DType::I8;
  if (c == '?' && itemsize == 1)
    return rt::DType::I1;
  raise(usageErrorType, "unsupported element type '" + format + "' (" +
                            std::to_string(itemsize) +
                            " bytes): pipeopt takes float32, float64, "
                            "float16, int64, int32, int8 and bool");
}

/// The buffer-protocol format of a runtime dtype.
const char *formatOf(rt::DType t) {
  switch (t) {
  case rt::DType::F32:
    return "f";
  case rt::DType::F64:
    return "d";
  case rt::DType::F16:
    return "e";
  case rt::DType::BF16:
    return "H"; // no bfloat16 format: the raw bits
  case rt::DType::I64:
    return "q";
  case rt::DType::I32:
    return "i";
  case rt::DType::I8:
    return "b";
  case rt::DType::I1:
    return "?";
  }
  return "B";
}

/// A HostTensor holding a copy of the C-contiguous buffer `in`.
rt::HostTensor toHost(const py::buffer &in) {
  py::buffer_info info = in.request();
  rt::HostTensor t;
  t.dtype = dtypeOf(info.format, size_t(info.itemsize));
  py::ssize_t expected = info.itemsize;
  for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
    if (info.shape[size_t(d)] > 1 && info.strides[size_t(d)] != expected)
      raise(usageErrorType, "the array is not C-contiguous (pass "
                            "numpy.ascontiguousarray(a))");
    expected *= info.shape[size_t(d)];
  }
  for (py::ssize_t d : info.shape)
    t.shape.push_back(int64_t(d));
  t.data.resize(size_t(info.size * info.itemsize));
  if (!t.data.empty())
    std::memcpy(t.data.data(), info.ptr, t.data.size());
  return t;
}

/// A tensor handed to Python: numpy.asarray(tensor) views its bytes
/// without a copy and keeps it alive.
struct Tensor {
  rt::HostTensor t;
};

py::object toNumpy(rt::HostTensor &&t) {
  return py::cast(Tensor{std::move(t)});
}

/// A key that is an input/output index or a name.
using Key = std::variant<int, std::string>;

//===----------------------------------------------------------------------===//
// The session
//===----------------------------------------------------------------------===//

struct PySession {
  rt::Session session;
  /// Serializes the calls that run the ranks (run, synchronize, setWeight,
  /// ...): they release the GIL, and the session is not thread-safe.
  std::mutex busy;

  void load(const std::string &model, const std::string &manifest,
            const std::string &comm, double timeoutS, int threads,
            uint64_t seed, bool quiet, const std::string &pinRanks,
            const std::string &checkpointDir, int checkpointEvery,
            const std::string &trace, const std::string &profile,
            const std::vector<int> &devices, int dataParallel, int zeroStage,
            double bucketMiB) {
    rt::RunOptions o;
    o.modelPath = model;
    o.manifestPath = manifest;
    o.comm = comm;
    o.timeoutS = timeoutS;
    o.threads = threads;
    o.seed = seed;
    o.quiet = quiet;
    o.pinRanks = pinRanks;
    o.checkpointDir = checkpointDir;
    o.checkpointEvery = checkpointEvery;
    o.tracePath = trace;
    o.profilePath = profile;
    o.devices = devices;
    o.dataParallel = dataParallel;
    o.zeroStage = zeroStage;
    o.bucketMiB = bucketMiB;
    check(locked([&] { return session.load(o); }));
  }

  /// Runs `call` on the session without the GIL, after the session's
  /// other calls (`busy`).
  template <typename Fn>
  rt::Status locked(Fn &&call) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(busy);
    return call();
  }

  /// After a run of the ranks (run, synchronize) that failed, an MPI rank
  /// answers its peers' status queries before the error is raised.
  rt::Status abandonOnFailure(rt::Status st) {
    if (!st.ok() && st.code() == 1 && session.usesMpi())
      session.abandonAfterFailure();
    return st;
  }

  void run(int steps) {
    rt::Status st =
        abandonOnFailure(locked([&] { return session.run(steps); }));
    // Every failed local rank's error.
    if (!st.ok() && session.rankErrors().size() > 1) {
      std::string all;
      for (const std::string &e : session.rankErrors())
        all += (all.empty() ? "" : "\n") + e;
      raise(runErrorType, all);
    }
    check(st);
  }

  void setInput(const Key &key, const py::buffer &value) {
    rt::HostTensor t = toHost(value);
    check(locked([&] {
      return std::visit(
          [&](const auto &k) { return session.setInput(k, std::move(t)); },
          key);
    }));
  }

  void synchronize() {
    check(abandonOnFailure(locked([&] { return session.synchronize(); })));
  }

  py::object output(const Key &key) {
    rt::HostTensor t;
    check(locked([&] {
      return std::visit([&](const auto &k) { return session.output(k, t); },
                        key);
    }));
    return toNumpy(std::move(t));
  }

  py::object weight(const Key &key) {
    rt::HostTensor t;
    check(locked([&] {
      return std::visit([&](const auto &k) { return session.weight(k, t); },
                        key);
    }));
    return toNumpy(std::move(t));
  }

  void setWeight(const Key &key, const py::buffer &value) {
    rt::HostTensor t = toHost(value);
    check(locked([&] {
      return std::visit([&](const auto &k) { return session.setWeight(k, t); },
                        key);
    }));
  }

  py::tuple optimizerState(const Key &key) {
    rt::HostTensor first, second;
    int64_t step = 0;
    check(locked([&] {
      return std::visit(
          [&](const auto &k) {
            return session.optimizerState(k, first, second, step);
          },
          key);
    }));
    return py::make_tuple(toNumpy(std::move(first)), toNumpy(std::move(second)),
                          step);
  }

  void setOptimizerState(const Key &key, const py::buffer &first,
                         const py::buffer &second, int64_t step) {
    rt::HostTensor f = toHost(first), s = toHost(second);
    check(locked([&] {
      return std::visit(
          [&](const auto &k) {
            return session.setOptimizerState(k, f, s, step);
          },
          key);
    }));
  }

  std::vector<std::string> resume(const std::string &dir) {
    std::vector<std::string> notes;
    check(locked([&] { return session.resume(dir, &notes); }));
    return notes;
  }

  std::string writeResults() {
    std::ostringstream summary;
    check(locked([&] { return session.writeResults(summary); }));
    return summary.str();
  }
};

/// The runtime's C ABI (libpipeopt_rt.so) must be visible to the model .so
/// files the session dlopens (they call pipeopt_rt_* by name, resolved in
/// the global scope, as in pipeopt-run). Python loads extensions with
/// RTLD_LOCAL, so the already-loaded library is promoted to RTLD_GLOBAL.
void exportRuntimeSymbols() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&rt::mpiAbort), &info) ||
      !info.dli_fname)
    throw std::runtime_error("pipeopt: cannot locate libpipeopt_rt.so");
  if (!dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD))
    throw std::runtime_error(std::string("pipeopt: cannot export ") +
                             info.dli_fname + ": " + dlerror());
}

} // namespace

PYBIND11_MODULE(_pipeopt, m) {
  m.doc() = "pipeopt's native extension (use the pipeopt package)";
  exportRuntimeSymbols();

  compileErrorType =
      py::reinterpret_borrow<py::object>(PyErr_NewExceptionWithDoc(
          "pipeopt.CompileError",
          "pipeopt could not compile the model; the message holds the "
          "compiler's diagnostics (locations, notes).",
          PyExc_RuntimeError, nullptr));
  usageErrorType = py::reinterpret_borrow<py::object>(PyErr_NewExceptionWithDoc(
      "pipeopt.UsageError",
      "A bad argument, name, shape or path given to pipeopt (the runtime's "
      "exit code 2); the session is still usable.",
      PyExc_ValueError, nullptr));
  runErrorType = py::reinterpret_borrow<py::object>(PyErr_NewExceptionWithDoc(
      "pipeopt.RunError",
      "A rank failed while running (the runtime's exit code 1); the "
      "message names the rank, stage and microbatch.",
      PyExc_RuntimeError, nullptr));
  m.attr("CompileError") = compileErrorType;
  m.attr("UsageError") = usageErrorType;
  m.attr("RunError") = runErrorType;

  m.def("compile", &compile, py::arg("args"));
  m.def("compile_options", &compileOptions);

  py::class_<Tensor>(m, "Tensor", py::buffer_protocol())
      .def_buffer([](Tensor &x) {
        std::vector<py::ssize_t> shape(x.t.shape.begin(), x.t.shape.end());
        std::vector<py::ssize_t> strides(shape.size());
        py::ssize_t stride = py::ssize_t(rt::dtypeSize(x.t.dtype));
        for (size_t d = shape.size(); d-- > 0;) {
          strides[d] = stride;
          stride *= shape[d];
        }
        return py::buffer_info(
            x.t.data.data(), py::ssize_t(rt::dtypeSize(x.t.dtype)),
            formatOf(x.t.dtype), py::ssize_t(shape.size()), shape, strides);
      });

  py::class_<PySession>(m, "Session")
      .def(py::init<>())
      .def("load", &PySession::load, py::arg("model"), py::arg("manifest"),
           py::arg("comm"), py::arg("timeout_s"), py::arg("threads"),
           py::arg("seed"), py::arg("quiet"), py::arg("pin_ranks"),
           py::arg("checkpoint_dir"), py::arg("checkpoint_every"),
           py::arg("trace"), py::arg("profile"), py::arg("devices"),
           py::arg("data_parallel") = 1, py::arg("zero") = 0,
           py::arg("bucket_mb") = 25.0)
      .def("set_input", &PySession::setInput)
      .def("set_random_inputs",
           [](PySession &s, bool on, uint64_t seed) {
             s.session.setRandomInputs(on, seed);
           })
      .def("set_collect_outputs",
           [](PySession &s, bool on) { s.session.setCollectOutputs(on); })
      .def("set_inputs_from",
           [](PySession &s, const std::string &path) {
             check(s.locked([&] { return s.session.setInputsFrom(path); }));
           })
      .def("set_gather_after_run",
           [](PySession &s, bool on) { s.session.setGatherAfterRun(on); })
      .def("synchronize", &PySession::synchronize)
      .def("set_weight", &PySession::setWeight)
      .def("optimizer_state", &PySession::optimizerState)
      .def("set_optimizer_state", &PySession::setOptimizerState)
      .def("run", &PySession::run)
      .def("output", &PySession::output)
      .def("weight", &PySession::weight)
      .def("losses",
           [](PySession &s) { return std::vector<float>(s.session.losses()); })
      .def("steps_done", [](PySession &s) { return s.session.stepsDone(); })
      .def("has_rank0", [](PySession &s) { return s.session.hasRank0(); })
      .def("uses_mpi", [](PySession &s) { return s.session.usesMpi(); })
      .def("resume", &PySession::resume)
      .def("write_checkpoint",
           [](PySession &s, const std::string &dir) {
             check(s.locked([&] { return s.session.writeCheckpoint(dir); }));
           })
      .def("write_results", &PySession::writeResults);
}
