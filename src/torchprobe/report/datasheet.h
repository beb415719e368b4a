#pragma once
// The vendor's datasheet figures of the GPUs we can name, printed beside the peaks a run measured
// (never in place of them): dense rates, i.e. the datasheet's "with sparsity" figures halved.
#include <string>

namespace torchprobe::report {

struct Datasheet {
  const char* part;    ///< e.g. "H100 SXM5 80GB"
  const char* source;  ///< the document the figures come from
  /// Dense TFLOP/s as a GEMM can reach them: fp64 on the FP64 tensor cores, fp32 without tensor cores (LibTorch's
  /// default matmul), tf32/bf16/fp16 on the tensor cores; 0 where the table has none.
  double fp64_tflops, fp32_tflops, tf32_tflops, bf16_tflops, fp16_tflops;
  double memory_gb_per_s;
};

/// The datasheet of the GPU a run named (CUDA's device name, e.g. "NVIDIA H100 80GB HBM3"); nullptr
/// for a part we have no figures for (every CPU, and GPUs not in the table).
const Datasheet* datasheet_for(const std::string& device_name);

/// The dense rate of `dtype` ("fp64", "fp32", "tf32", "bf16", "fp16") in GFLOP/s; NaN where the table has none.
double datasheet_gflop_per_s(const Datasheet& sheet, const std::string& dtype);

}  // namespace torchprobe::report
