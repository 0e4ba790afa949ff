#===- AddPipeopt.cmake - small helpers for pipeopt targets ---------------===#

# pipeopt_add_unittest(<name>Tests src... [LINK lib...])
# A GoogleTest binary under build/unittests, discovered by test/Unit (lit's
# GoogleTest format) and therefore run by check-pipeopt and ctest.
find_package(GTest REQUIRED)
add_custom_target(PipeoptUnitTests)
set_target_properties(PipeoptUnitTests PROPERTIES FOLDER "Tests")
function(pipeopt_add_unittest name)
  cmake_parse_arguments(ARG "" "" "LINK" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  set_target_properties(${name} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/unittests)
  target_link_libraries(${name} PRIVATE ${ARG_LINK} GTest::gtest GTest::gtest_main)
  llvm_update_compile_flags(${name})
  add_dependencies(PipeoptUnitTests ${name})
endfunction()

# pipeopt_add_core_library(<name> src... [LINK lib...])
# A pure-C++ library (no MLIR IR types): partitioner, schedules, simulator.
# It may use LLVM Support (Error/Expected, json, FormatVariadic).
function(pipeopt_add_core_library name)
  cmake_parse_arguments(ARG "" "" "LINK" ${ARGN})
  # Debian's LLVM is linked as one dylib (LLVM_LINK_LLVM_DYLIB); the static
  # LLVMSupport target also drags in a missing zstd target. Use the dylib.
  if(LLVM_LINK_LLVM_DYLIB)
    list(TRANSFORM ARG_LINK REPLACE "^LLVMSupport$" "LLVM")
  endif()
  add_llvm_library(${name} ${ARG_UNPARSED_ARGUMENTS} LINK_LIBS PUBLIC ${ARG_LINK})
endfunction()
