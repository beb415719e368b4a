# All third-party packages are found, never downloaded. Feature switches land in config.h.

# Header-only: pip's LibTorch ships its own fmt headers ahead of the system ones on the include
# path, so linking a prebuilt libfmt could mix two fmt versions. Header-only is always consistent.
find_package(fmt REQUIRED)
# Layer 1 only: -DTORCHPROBE_WITH_LIBTORCH=OFF builds the LibTorch-free layer 0 (base, results, report,
# compare, history, explain and the `torchprobe` program) without looking for LibTorch, CUDA, NVTX or Gloo.
if(TORCHPROBE_WITH_LIBTORCH)
  # LibTorch: Debian's libtorch-dev (CPU), the official archive, or pip PyTorch's bundled copy
  # (-DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')).
  find_package(Torch REQUIRED)
  # TorchConfig finds c10 with find_library(c10 PATHS <its lib/>), which searches the system
  # directories first: with Debian's libtorch-dev also installed, a pip or archive LibTorch would
  # link Debian's libc10.so. Point TORCH_LIBRARIES at the selected LibTorch's own copies.
  set(_tp_own_lib "${TORCH_INSTALL_PREFIX}/lib")
  set(_tp_libraries "")
  foreach(_tp_item IN LISTS TORCH_LIBRARIES)
    if(_tp_item MATCHES "^/.*/(lib(c10|torch)[^/]*\\.so)$")
      set(_tp_name "${CMAKE_MATCH_1}")
      if(EXISTS "${_tp_own_lib}/${_tp_name}" AND NOT _tp_item STREQUAL "${_tp_own_lib}/${_tp_name}")
        message(STATUS "torchprobe: using ${_tp_own_lib}/${_tp_name} instead of ${_tp_item}")
        set(_tp_item "${_tp_own_lib}/${_tp_name}")
      endif()
    endif()
    list(APPEND _tp_libraries "${_tp_item}")
  endforeach()
  # pip's libtorch.so also exports its own static copy of std::filesystem, whose remove_all()
  # calls through a null pointer. Listing libstdc++ first makes the dynamic linker bind the
  # standard library's own definitions, for our code and for every test.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(_tp_libraries stdc++ ${_tp_libraries})
  endif()
  set(TORCH_LIBRARIES "${_tp_libraries}")
  # TorchConfig exports CAFFE2_USE_CUDA; it is the one switch for the CUDA half of the device seam.
  if(CAFFE2_USE_CUDA)
    set(TORCHPROBE_HAS_CUDA ON)
else()
  set(TORCHPROBE_HAS_CUDA OFF)
endif()
message(STATUS "torchprobe: LibTorch ${Torch_VERSION}, CUDA support: ${TORCHPROBE_HAS_CUDA}")
# NCCL (c10d's ProcessGroupNCCL, CUDA builds only): LibTorch carries the process group, its header
# needs nccl.h: pip's nvidia-nccl wheel next to torch/, or the CUDA toolkit's.
set(TORCHPROBE_HAS_NCCL OFF)
if(TORCHPROBE_HAS_CUDA)
  find_path(TORCHPROBE_NCCL_INCLUDE_DIR nccl.h
    HINTS "${TORCH_INSTALL_PREFIX}/../nvidia/nccl/include" "${CUDAToolkit_INCLUDE_DIRS}" /usr/local/cuda/include)
  if(TORCHPROBE_NCCL_INCLUDE_DIR)
    set(TORCHPROBE_HAS_NCCL ON)
  endif()
endif()
message(STATUS "torchprobe: NCCL process group: ${TORCHPROBE_HAS_NCCL} ${TORCHPROBE_NCCL_INCLUDE_DIR}")

# NVTX3 is header-only: the CUDA toolkit's CUDA::nvtx3 target, or standalone NVTX headers.
# Without it (or with TORCHPROBE_ENABLE_NVTX=OFF) every range compiles to nothing.
set(TORCHPROBE_HAS_NVTX OFF)
if(TORCHPROBE_ENABLE_NVTX)
  find_package(CUDAToolkit QUIET)
  if(TARGET CUDA::nvtx3)
    set(TORCHPROBE_NVTX_TARGET CUDA::nvtx3)
    set(TORCHPROBE_HAS_NVTX ON)
  else()
    find_path(TORCHPROBE_NVTX3_INCLUDE_DIR nvtx3/nvToolsExt.h)
    if(TORCHPROBE_NVTX3_INCLUDE_DIR)
      add_library(torchprobe_nvtx3 INTERFACE)
      target_include_directories(torchprobe_nvtx3 INTERFACE "${TORCHPROBE_NVTX3_INCLUDE_DIR}")
      target_link_libraries(torchprobe_nvtx3 INTERFACE ${CMAKE_DL_LIBS})
      set(TORCHPROBE_NVTX_TARGET torchprobe_nvtx3)
      set(TORCHPROBE_HAS_NVTX ON)
    endif()
  endif()
endif()
message(STATUS "torchprobe: NVTX ranges: ${TORCHPROBE_HAS_NVTX}")

# Gloo's headers for c10d's ProcessGroupGloo: Debian's libgloo-dev. pip's LibTorch has Gloo inside
# libtorch_cpu but ships no Gloo headers; Debian's LibTorch links the system libgloo, which we
# then link too (its symbols are not re-exported).
# Distributed runs (torchprobe::dist) are optional: on where the headers are found, off with one
# message where they are not; -DTORCHPROBE_ENABLE_DIST=ON insists on them.
find_path(TORCHPROBE_GLOO_INCLUDE_DIR gloo/algorithm.h)
if(NOT DEFINED TORCHPROBE_ENABLE_DIST)
  if(TORCHPROBE_GLOO_INCLUDE_DIR)
    set(_tp_dist_default ON)
  else()
    set(_tp_dist_default OFF)
    message(STATUS "torchprobe: distributed runs (torchprobe::dist, torchprobe dist) off: Gloo's headers "
                   "(gloo/algorithm.h) not found; apt-get install libgloo-dev to build them")
  endif()
  option(TORCHPROBE_ENABLE_DIST "Build torchprobe::dist (c10d Gloo/NCCL process groups): needs Gloo's headers" ${_tp_dist_default})
endif()
if(TORCHPROBE_ENABLE_DIST AND NOT TORCHPROBE_GLOO_INCLUDE_DIR)
  message(FATAL_ERROR "torchprobe: TORCHPROBE_ENABLE_DIST is ON but Gloo's headers (gloo/algorithm.h) were not found: "
                      "apt-get install libgloo-dev, or configure with -DTORCHPROBE_ENABLE_DIST=OFF")
endif()
set(TORCHPROBE_HAS_DIST ${TORCHPROBE_ENABLE_DIST})
unset(TORCHPROBE_GLOO_LIBRARY)
find_library(_tp_torch_cpu torch_cpu NO_DEFAULT_PATH
  PATHS "${TORCH_INSTALL_PREFIX}/lib" "${TORCH_INSTALL_PREFIX}/lib/${CMAKE_LIBRARY_ARCHITECTURE}")
if(_tp_torch_cpu)
  execute_process(COMMAND ldd "${_tp_torch_cpu}" OUTPUT_VARIABLE _tp_ldd ERROR_QUIET)
  if(_tp_ldd MATCHES "libgloo\\.so")
    find_library(TORCHPROBE_GLOO_LIBRARY gloo)
  endif()
endif()
message(STATUS "torchprobe: Gloo headers ${TORCHPROBE_GLOO_INCLUDE_DIR}, library ${TORCHPROBE_GLOO_LIBRARY}")
else()
  set(TORCHPROBE_HAS_CUDA OFF)
  set(TORCHPROBE_HAS_NCCL OFF)
  set(TORCHPROBE_HAS_NVTX OFF)
  set(TORCHPROBE_HAS_DIST OFF)
  message(STATUS "torchprobe: LibTorch-free build (TORCHPROBE_WITH_LIBTORCH=OFF): layer 0 only")
endif()

find_package(nlohmann_json 3.9 REQUIRED)
# RE2 for the error classifier (`torchprobe explain`): linear-time matching of whatever users paste (1 MB
# lines, whole logs, binary); std::regex recurses per character and overflows the stack. Debian's
# libre2-dev ships only re2.pc, no CMake package: found by its header and library. cmake/torchprobeConfig.cmake.in
# repeats this for projects that link the installed (static) torchprobe::diagnostics.
find_path(TORCHPROBE_RE2_INCLUDE_DIR re2/re2.h)
find_library(TORCHPROBE_RE2_LIBRARY re2)
if(NOT TORCHPROBE_RE2_INCLUDE_DIR OR NOT TORCHPROBE_RE2_LIBRARY)
  message(FATAL_ERROR "torchprobe: RE2 not found (re2/re2.h: ${TORCHPROBE_RE2_INCLUDE_DIR}, libre2: "
                      "${TORCHPROBE_RE2_LIBRARY}): apt-get install libre2-dev (Debian/Ubuntu), or put an RE2 "
                      "install on CMAKE_PREFIX_PATH")
endif()
add_library(torchprobe::re2 UNKNOWN IMPORTED)
set_target_properties(torchprobe::re2 PROPERTIES IMPORTED_LOCATION "${TORCHPROBE_RE2_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${TORCHPROBE_RE2_INCLUDE_DIR}")
message(STATUS "torchprobe: RE2 ${TORCHPROBE_RE2_LIBRARY}")
find_package(CLI11 REQUIRED)
# SQLite for the performance history (torchprobe::history): Debian's libsqlite3-dev, found by CMake's
# own FindSQLite3 (the SQLite::SQLite3 target).
find_package(SQLite3 REQUIRED)
message(STATUS "torchprobe: SQLite ${SQLite3_VERSION} ${SQLite3_LIBRARIES}")
if(TORCHPROBE_BUILD_BENCH AND TORCHPROBE_WITH_LIBTORCH)
  find_package(benchmark REQUIRED)
endif()
if(TORCHPROBE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
