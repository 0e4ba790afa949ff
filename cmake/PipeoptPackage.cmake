#===- PipeoptPackage.cmake - install rules and the CMake package ---------===#
#
# `cmake --install <build> --prefix P` installs
#   P/include/pipeopt/...          headers, .td files and generated .inc files
#   P/lib/libPipeopt*.a            the libraries (pipeopt_install_library)
#   P/bin/pipeopt, ...             the tools (pipeopt_install_tool)
#   P/lib/cmake/pipeopt/           pipeoptConfig.cmake, its version file and
#                                  pipeoptTargets.cmake (namespace pipeopt::)
# and, with PIPEOPT_BUILD_RUNTIME, the runtime (runtime/CMakeLists.txt).
# A consumer: find_package(pipeopt CONFIG REQUIRED) and
# target_link_libraries(tool PRIVATE pipeopt::pipeopt); see README.md
# "Installing and using pipeopt as a library" and test/Install.
#
#===----------------------------------------------------------------------===#
include(CMakePackageConfigHelpers)

# The umbrella target pipeopt::pipeopt: every exported library (the target
# is not called `pipeopt`, which is the driver tool's name).
get_property(_pipeopt_libs GLOBAL PROPERTY PIPEOPT_EXPORTED_LIBS)
add_library(PipeoptUmbrella INTERFACE)
set_target_properties(PipeoptUmbrella PROPERTIES EXPORT_NAME pipeopt)
target_link_libraries(PipeoptUmbrella INTERFACE ${_pipeopt_libs})
target_compile_features(PipeoptUmbrella INTERFACE cxx_std_17)
target_include_directories(PipeoptUmbrella INTERFACE
  $<INSTALL_INTERFACE:include>)
install(TARGETS PipeoptUmbrella EXPORT pipeoptTargets)

# Headers: the sources' and the generated ones (ODS .inc, pass decls).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/pipeopt
  DESTINATION include
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td" PATTERN "*.def")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/pipeopt
  DESTINATION include
  FILES_MATCHING PATTERN "*.inc"
  PATTERN "CMakeFiles" EXCLUDE)

install(EXPORT pipeoptTargets
  NAMESPACE pipeopt::
  DESTINATION ${PIPEOPT_INSTALL_CMAKE_DIR})

# The MLIR this build used, so that the consumer links the same libMLIR.so.
set(PIPEOPT_MLIR_DIR "${MLIR_DIR}")
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/pipeoptConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/pipeoptConfig.cmake
  INSTALL_DESTINATION ${PIPEOPT_INSTALL_CMAKE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/pipeoptConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/cmake/pipeoptConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/pipeoptConfigVersion.cmake
  DESTINATION ${PIPEOPT_INSTALL_CMAKE_DIR})
