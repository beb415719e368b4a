# All third-party packages are found, never downloaded. Feature switches land in config.h.

# LibTorch: Debian's libtorch-dev (CPU), the official archive, or pip PyTorch's bundled copy
# (-DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')).
find_package(Torch REQUIRED)
# TorchConfig exports CAFFE2_USE_CUDA; it is the one switch for the CUDA half of the device seam.
if(CAFFE2_USE_CUDA)
  set(TORCHPROBE_HAS_CUDA ON)
else()
  set(TORCHPROBE_HAS_CUDA OFF)
endif()
message(STATUS "torchprobe: LibTorch ${Torch_VERSION}, CUDA support: ${TORCHPROBE_HAS_CUDA}")

find_package(fmt REQUIRED)
find_package(nlohmann_json 3.9 REQUIRED)
find_package(CLI11 REQUIRED)
if(TORCHPROBE_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
if(TORCHPROBE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
