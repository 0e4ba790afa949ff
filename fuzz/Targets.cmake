#===- fuzz/Targets.cmake - the fuzz targets and their ctest runs ----------===#
# Included by fuzz/CMakeLists.txt and cmake/PipeoptFuzz.cmake.

get_filename_component(PIPEOPT_FUZZ_DIR "${CMAKE_CURRENT_LIST_DIR}" ABSOLUTE)

# pipeopt_fuzz_add_test(<target> <binary> <work dir> <seconds>): the test
# fuzz-<...> runs <binary> for <seconds> (seed 1) over a copy-on-write corpus:
# new inputs go to <work dir>/<target>, the seeds are read from
# fuzz/corpus/<target>. Fails on any crash, leak, timeout or sanitizer report.
function(pipeopt_fuzz_add_test target binary workdir seconds)
  string(REGEX REPLACE "^fuzz-" "" corpus ${target})
  file(MAKE_DIRECTORY ${workdir}/${corpus})
  add_test(NAME ${target}
    COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
      UBSAN_OPTIONS=print_stacktrace=1
      ${binary} -seed=1 -max_total_time=${seconds} -timeout=25
      -rss_limit_mb=2048 -print_final_stats=1
      -artifact_prefix=${workdir}/${corpus}-
      ${workdir}/${corpus} ${PIPEOPT_FUZZ_DIR}/corpus/${corpus})
  set_tests_properties(${target} PROPERTIES LABELS fuzz TIMEOUT 120)
endfunction()
