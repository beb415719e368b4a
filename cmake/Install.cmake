# cmake --install: the libraries, their headers and torchprobeConfig.cmake, so other projects can
# find_package(torchprobe) and link torchprobe::base, ::report, ::history, ::explain (layer 0) and, with LibTorch,
# ::core, ::diagnostics (and ::dist where built); the programs into bin/ (torchprobe-measure beside torchprobe).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_tp_libraries torchprobe_base torchprobe_report torchprobe_history torchprobe_explain)
if(TORCHPROBE_WITH_LIBTORCH)
  list(APPEND _tp_libraries torchprobe_core torchprobe_diagnostics)
endif()
if(TORCHPROBE_HAS_DIST)
  list(APPEND _tp_libraries torchprobe_dist)
endif()
install(TARGETS ${_tp_libraries} EXPORT torchprobeTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
set(_tp_programs torchprobe)
if(TORCHPROBE_WITH_LIBTORCH)
  list(APPEND _tp_programs torchprobe-measure)
endif()
if(TORCHPROBE_BUILD_BENCH AND TORCHPROBE_WITH_LIBTORCH)
  list(APPEND _tp_programs torchprobe-bench)
endif()
install(TARGETS ${_tp_programs} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Headers keep their include paths ("torchprobe/...", "diagnostics/...") under include/torchprobe/.
# Not the private ones: the device seam's internals and the programs' CLI11 helpers.
install(DIRECTORY src/torchprobe DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/torchprobe FILES_MATCHING PATTERN "*.h"
  PATTERN "backend_detail.h" EXCLUDE PATTERN "cli_support.h" EXCLUDE PATTERN "sqlite.h" EXCLUDE
  PATTERN "compare_detail.h" EXCLUDE)
install(DIRECTORY diagnostics DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/torchprobe FILES_MATCHING PATTERN "*.h"
  PATTERN "classify_*.h" EXCLUDE PATTERN "explanations.h" EXCLUDE PATTERN "re2_options.h" EXCLUDE)
install(FILES ${PROJECT_BINARY_DIR}/src/generated/torchprobe/config.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/torchprobe/torchprobe)

set(_tp_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/torchprobe)
install(EXPORT torchprobeTargets NAMESPACE torchprobe:: DESTINATION ${_tp_cmake_dir})
configure_package_config_file(cmake/torchprobeConfig.cmake.in ${PROJECT_BINARY_DIR}/torchprobeConfig.cmake
  INSTALL_DESTINATION ${_tp_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/torchprobeConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/torchprobeConfig.cmake ${PROJECT_BINARY_DIR}/torchprobeConfigVersion.cmake
  DESTINATION ${_tp_cmake_dir})
