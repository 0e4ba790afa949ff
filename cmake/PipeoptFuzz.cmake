#===- cmake/PipeoptFuzz.cmake - the libFuzzer targets of fuzz/ ------------===#
#
# The fuzz targets need clang (libFuzzer, -fsanitize=fuzzer), while pipeopt
# builds with any C++17 compiler, so fuzz/ is a separate CMake project that
# this file builds as an ExternalProject (in <build>/fuzz) when a clang++ is
# found that links -fsanitize=fuzzer,address,undefined and compiles the
# sources (captured structured bindings: clang >= 16; Debian 12: clang-16
# libclang-rt-16-dev, installed by scripts/setup.sh). Otherwise the fuzzers
# are skipped with a message. Every target gets a ctest, fuzz-<name>: a
# PIPEOPT_FUZZ_TEST_SECONDS run over the seed corpus fuzz/corpus/<name>.
# Long runs: scripts/fuzz.sh. docs/Fuzzing.md.
#
#===----------------------------------------------------------------------===#
option(PIPEOPT_BUILD_FUZZERS
  "Build and test the libFuzzer targets of fuzz/ when a suitable clang++ is found" ON)
set(PIPEOPT_FUZZ_TEST_SECONDS 5 CACHE STRING
  "Seconds each fuzz-<target> ctest fuzzes")
if(NOT PIPEOPT_BUILD_FUZZERS)
  return()
endif()

find_program(PIPEOPT_FUZZ_CXX NAMES clang++-19 clang++-18 clang++-17 clang++-16 clang++
  DOC "clang++ for the fuzz targets (fuzz/)")
set(_fuzz_ok OFF)
if(PIPEOPT_FUZZ_CXX)
  set(_dir ${CMAKE_BINARY_DIR}/CMakeFiles/pipeopt-fuzz-check)
  file(MAKE_DIRECTORY ${_dir})
  file(WRITE ${_dir}/check.cpp [[
#include <cstddef>
#include <cstdint>
#include <utility>
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  auto [a, b] = std::pair<size_t, int>(n, 0);
  return [&] { return int(a) + b; }() > 1000 && d ? 0 : 0;
}
]])
  execute_process(
    COMMAND ${PIPEOPT_FUZZ_CXX} -std=c++17 -Wno-c++20-extensions
      -fsanitize=fuzzer,address,undefined check.cpp -o check
    WORKING_DIRECTORY ${_dir} RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
  if(_rc EQUAL 0)
    set(_fuzz_ok ON)
  endif()
endif()
if(NOT _fuzz_ok)
  message(STATUS "pipeopt: fuzz targets skipped: no clang++ (>= 16) that links "
    "-fsanitize=fuzzer (found: '${PIPEOPT_FUZZ_CXX}'; Debian: clang-16 "
    "libclang-rt-16-dev)")
  return()
endif()
message(STATUS "pipeopt: fuzz targets with ${PIPEOPT_FUZZ_CXX} (<build>/fuzz)")

include(ExternalProject)
include(${PROJECT_SOURCE_DIR}/fuzz/Targets.cmake)
ExternalProject_Add(pipeopt-fuzzers
  SOURCE_DIR ${PROJECT_SOURCE_DIR}/fuzz
  BINARY_DIR ${CMAKE_BINARY_DIR}/fuzz
  CMAKE_ARGS
    -DCMAKE_CXX_COMPILER=${PIPEOPT_FUZZ_CXX}
    -DPIPEOPT_BUILD_DIR=${CMAKE_BINARY_DIR}
    -DFUZZ_LLVM_DIR=${LLVM_INSTALL_PREFIX}
  BUILD_ALWAYS ON
  INSTALL_COMMAND ""
  # fuzz-ir links the static libraries of this build.
  DEPENDS PipeoptInitAll
  USES_TERMINAL_BUILD ON)
set_target_properties(pipeopt-fuzzers PROPERTIES EXCLUDE_FROM_ALL OFF)

foreach(t manifest npy checkpoint machine-json torch-csv profile-json ir)
  pipeopt_fuzz_add_test(fuzz-${t} ${CMAKE_BINARY_DIR}/fuzz/fuzz-${t}
    ${CMAKE_BINARY_DIR}/fuzz/work ${PIPEOPT_FUZZ_TEST_SECONDS})
endforeach()
