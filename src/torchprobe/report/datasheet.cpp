#include "torchprobe/report/datasheet.h"

#include <array>
#include <cmath>

namespace torchprobe::report {

namespace {

constexpr const char* kH100 = "NVIDIA H100 Tensor Core GPU datasheet (dense: sparsity figures halved)";
constexpr const char* kH200 = "NVIDIA H200 Tensor Core GPU datasheet (dense: sparsity figures halved)";
constexpr const char* kA100 = "NVIDIA A100 Tensor Core GPU datasheet (dense: sparsity figures halved)";
constexpr Datasheet kH100Sxm{"H100 SXM5 80GB", kH100, 66.9, 66.9, 494.7, 989.4, 989.4, 3350.0};
constexpr Datasheet kH100Pcie{"H100 PCIe 80GB", kH100, 51.2, 51.2, 378.0, 756.5, 756.5, 2000.0};
constexpr Datasheet kH200Sxm{"H200 SXM 141GB", kH200, 66.9, 66.9, 494.7, 989.4, 989.4, 4800.0};  // H100's compute
constexpr Datasheet kA100Sxm80{"A100 SXM4 80GB", kA100, 19.5, 19.5, 156.0, 312.0, 312.0, 2039.0};
constexpr Datasheet kA100Sxm40{"A100 SXM4 40GB", kA100, 19.5, 19.5, 156.0, 312.0, 312.0, 1555.0};
constexpr Datasheet kA100Pcie80{"A100 PCIe 80GB", kA100, 19.5, 19.5, 156.0, 312.0, 312.0, 1935.0};

// CUDA's names for them, the more specific first: the SXM H100 is "NVIDIA H100 80GB HBM3", the PCIe one
// "NVIDIA H100 PCIe". Parts whose figures we have not checked against their datasheet map to nullptr, so they
// do not fall through to a neighbour with a similar name.
struct Entry {
  const char* name_contains;
  const Datasheet* sheet;
};
constexpr std::array<Entry, 8> kTable{{
    {"H100 PCIe", &kH100Pcie},
    {"H100 80GB HBM3", &kH100Sxm},
    {"H100 SXM", &kH100Sxm},
    {"H200 NVL", nullptr},  // a lower-power part under a similar name
    {"H200", &kH200Sxm},
    {"A100-SXM4-80GB", &kA100Sxm80},
    {"A100-SXM4-40GB", &kA100Sxm40},
    {"A100 80GB PCIe", &kA100Pcie80},
}};

}  // namespace

const Datasheet* datasheet_for(const std::string& device_name) {
  for (const auto& entry : kTable) {
    if (device_name.find(entry.name_contains) != std::string::npos) return entry.sheet;
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
