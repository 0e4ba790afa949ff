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
  add_llvm_library(${name} BUILDTREE_ONLY ${ARG_UNPARSED_ARGUMENTS}
    LINK_LIBS PUBLIC ${ARG_LINK})
  pipeopt_install_library(${name})
endfunction()

#===----------------------------------------------------------------------===#
# Installation: `cmake --install <build> --prefix P` gives P/include/pipeopt
# (headers and the generated .inc files), P/lib (the libraries), P/bin (the
# tools) and P/lib/cmake/pipeopt (pipeoptConfig.cmake), so that another
# project does find_package(pipeopt CONFIG REQUIRED) and links the exported
# targets pipeopt::<Library> or the umbrella pipeopt::pipeopt.
#===----------------------------------------------------------------------===#
set(PIPEOPT_INSTALL_CMAKE_DIR lib/cmake/pipeopt)

# pipeopt_use_runtime_contract(<target>)
# Lets <target> include the runtime headers of the compiler-runtime
# contract (PipeoptRuntimeContract), also from its MLIR object library.
function(pipeopt_use_runtime_contract name)
  target_link_libraries(${name} PRIVATE PipeoptRuntimeContract)
  # The object library compiles the sources; MLIR links it with the plain
  # target_link_libraries signature, so it takes the contract's include
  # directory directly.
  if(TARGET obj.${name})
    target_include_directories(obj.${name} PRIVATE
      $<TARGET_PROPERTY:PipeoptRuntimeContract,INTERFACE_INCLUDE_DIRECTORIES>)
  endif()
endfunction()

# pipeopt_install_library(<name>)
# Installs library <name> into lib/ and adds it to the export set
# pipeoptTargets (as pipeopt::<name>). The libraries are created with
# DISABLE_INSTALL (add_mlir_library) or BUILDTREE_ONLY (add_llvm_library):
# otherwise the LLVM/MLIR helpers put them into their own MLIRTargets /
# LLVMExports sets too, and a dependency exported to two sets cannot be
# referenced from pipeoptTargets. Their upstream dependencies are the
# imported MLIR and LLVM dylib targets (MLIR_LINK_MLIR_DYLIB), which the
# package config brings back with find_dependency(MLIR).
function(pipeopt_install_library name)
  target_include_directories(${name} INTERFACE
    $<INSTALL_INTERFACE:include>)
  install(TARGETS ${name}
    EXPORT pipeoptTargets
    ARCHIVE DESTINATION lib
    LIBRARY DESTINATION lib
    RUNTIME DESTINATION bin)
  set_property(GLOBAL APPEND PROPERTY PIPEOPT_EXPORTED_LIBS ${name})
endfunction()

# pipeopt_add_mlir_library(<name> ...)
# add_mlir_library (same arguments) plus pipeopt_install_library.
function(pipeopt_add_mlir_library name)
  add_mlir_library(${name} DISABLE_INSTALL ${ARGN})
  pipeopt_install_library(${name})
endfunction()

# pipeopt_install_tool(<target>)
# Installs a tool into bin/. Its RUNPATH finds pipeopt's own shared
# libraries in ../lib and libMLIR.so / libLLVM.so where MLIR_DIR's LLVM
# keeps them (Debian: /usr/lib/llvm-22/lib, which is not on the loader's
# default path).
function(pipeopt_install_tool name)
  set_property(TARGET ${name} PROPERTY INSTALL_RPATH
    "\$ORIGIN/../lib;${LLVM_LIBRARY_DIR}")
  install(TARGETS ${name} RUNTIME DESTINATION bin)
endfunction()
