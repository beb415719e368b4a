#pragma once
// Device strings, the inventory of this host, and which BLAS the CPU path really uses.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "torchprobe/backend.h"

namespace torchprobe {

/// "cpu" or "cuda:N" (always with the index).
std::string device_string(const torch::Device& device);

/// One device: "cpu", "cuda" (= cuda:0, as in PyTorch) or "cuda:N". Throws InputError for
/// malformed strings and for devices this host does not have, naming what it does have.
torch::Device parse_device(const std::string& text);
/// A comma-separated list of "cpu", "cuda" (every GPU), "cuda:N" and "all" (the CPU plus every
/// GPU). Order is kept, duplicates dropped. Throws InputError like parse_device.
std::vector<torch::Device> parse_device_list(const std::string& text);
/// The same, against a given number of CUDA devices (for tests and what-if checks).
std::vector<torch::Device> parse_device_list(const std::string& text, int cuda_device_count);

/// The CPU plus every CUDA device found at run time.
std::vector<torch::Device> all_devices();

struct BlasInfo {
  std::string vendor;        ///< "OpenBLAS", "reference BLAS (netlib)", "MKL", ...
  std::string library_path;  ///< the shared object that provides sgemm_, if one does
  std::string detail;        ///< e.g. OpenBLAS's own config string
  bool is_reference = false;  ///< the unoptimised netlib BLAS: CPU figures would mislead
};
BlasInfo detect_blas();
/// The warning to print when blas.is_reference, with the fix; empty otherwise.
std::string blas_warning(const BlasInfo& blas);

struct CpuInfo {
  std::string model;
  int logical_cores = 0;
  int torch_threads = 0;       ///< LibTorch intra-op threads (at::get_num_threads)
  std::string vector_isa;      ///< ATen's dispatch level, e.g. "AVX2"; empty if unknown
};

struct Inventory {
  std::string torchprobe_version;
  std::string libtorch_version;
  bool cuda_compiled = false;
  std::string cuda_unavailable_reason;
  std::string cuda_driver_version, cuda_runtime_version;
  bool cudnn_usable = false;
  std::string cudnn_version;
  std::string hostname;
  CpuInfo cpu;
  BlasInfo blas;
  std::vector<backend::CudaDeviceInfo> gpus;
};
Inventory collect_inventory();
/// The inventory as a JSON document, the form kept with results (indent -1: one line).
std::string inventory_json(const Inventory& inventory, int indent = 2);
/// The inventory as aligned text for a terminal.
std::string inventory_text(const Inventory& inventory);

}  // namespace torchprobe
