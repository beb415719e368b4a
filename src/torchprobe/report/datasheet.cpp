#include "torchprobe/report/datasheet.h"

#include <array>
#include <cmath>

namespace torchprobe::report {

namespace {

// CUDA names the SXM H100 "NVIDIA H100 80GB HBM3" and the PCIe one "NVIDIA H100 PCIe"; the more specific
// patterns come first. Parts whose figures we have not checked against their datasheet are left out.
struct Entry {
  const char* name_contains;
  Datasheet sheet;
};
constexpr const char* kH100 = "NVIDIA H100 Tensor Core GPU datasheet (dense: sparsity figures halved)";
constexpr const char* kH200 = "NVIDIA H200 Tensor Core GPU datasheet (dense: sparsity figures halved)";
constexpr const char* kA100 = "NVIDIA A100 Tensor Core GPU datasheet (dense: sparsity figures halved)";
constexpr std::array<Entry, 8> kTable{{
    {"H100 PCIe", {"H100 PCIe 80GB", kH100, 51.2, 51.2, 378.0, 756.5, 756.5, 2000.0}},
    {"H100 80GB HBM3", {"H100 SXM5 80GB", kH100, 66.9, 66.9, 494.7, 989.4, 989.4, 3350.0}},
    {"H100 SXM", {"H100 SXM5 80GB", kH100, 66.9, 66.9, 494.7, 989.4, 989.4, 3350.0}},
    {"H200 NVL", {"", "", 0, 0, 0, 0, 0, 0}},  // a different part (lower power): no figures checked
    {"H200", {"H200 SXM 141GB", kH200, 66.9, 66.9, 494.7, 989.4, 989.4, 4800.0}},
    {"A100-SXM4-80GB", {"A100 SXM4 80GB", kA100, 19.5, 19.5, 156.0, 312.0, 312.0, 2039.0}},
    {"A100-SXM4-40GB", {"A100 SXM4 40GB", kA100, 19.5, 19.5, 156.0, 312.0, 312.0, 1555.0}},
    {"A100 80GB PCIe", {"A100 PCIe 80GB", kA100, 19.5, 19.5, 156.0, 312.0, 312.0, 1935.0}},
}};

}  // namespace

const Datasheet* datasheet_for(const std::string& device_name) {
  for (const auto& entry : kTable) {
    if (device_name.find(entry.name_contains) != std::string::npos) {
      return entry.sheet.memory_gb_per_s > 0.0 ? &entry.sheet : nullptr;
    }
  }
  return nullptr;
}

double datasheet_gflop_per_s(const Datasheet& sheet, const std::string& dtype) {
  const double tflops = dtype == "fp64"   ? sheet.fp64_tflops
                        : dtype == "fp32" ? sheet.fp32_tflops
                        : dtype == "tf32" ? sheet.tf32_tflops
                        : dtype == "bf16" ? sheet.bf16_tflops
                        : dtype == "fp16" ? sheet.fp16_tflops
                                          : 0.0;
  return tflops > 0.0 ? tflops * 1e3 : std::nan("");
}

}  // namespace torchprobe::report
