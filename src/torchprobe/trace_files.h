#pragma once
// Where torchprobe-bench --trace writes a benchmark's trace, and where `torchprobe report --traces` looks for it
// (header-only: the report has no LibTorch).
#include <cctype>
#include <string>

namespace torchprobe {

/// A benchmark's trace file name: its registered name with every character outside [A-Za-z0-9._-] as '_', and
/// ".json" ("train_step/net/cpu/batch:4/dtype:fp32/layout:nchw" -> "train_step_net_cpu_batch_4_dtype_fp32_layout_nchw.json").
inline std::string trace_file_name(const std::string& benchmark_name) {
  std::string out;
  for (const char c : benchmark_name) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    out += keep ? c : '_';
  }
  return out + ".json";
}

}  // namespace torchprobe
