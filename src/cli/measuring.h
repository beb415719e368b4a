#pragma once
// The subcommands that need LibTorch. They live in the torchprobe-measure executable; the LibTorch-free
// `torchprobe` lists them in its help and, when one is asked for, replaces itself with torchprobe-measure
// (execv, same arguments, same process), so the user sees one command and pays LibTorch's start-up only
// when something is measured.
#include <array>
#include <string_view>

namespace torchprobe::cli {

struct MeasuringCommand {
  std::string_view name;
  std::string_view description;
};

inline constexpr std::array<MeasuringCommand, 3> kMeasuringCommands{{
    {"devices", "Inventory of the CPU, its threads and BLAS, every CUDA device, LibTorch"},
    {"diagnose", "Reproduce real errors, catch them and explain cause and fix"},
    {"dist", "One rank of a distributed job (torchrun's variables; scripts/launch.sh N)"},
}};

/// The description of a measuring subcommand (the same text in both executables' help).
constexpr std::string_view measuring_description(std::string_view name) {
  for (const auto& c : kMeasuringCommands) {
    if (c.name == name) return c.description;
  }
  return {};
}

/// The executable that runs them, installed and built beside `torchprobe`.
inline constexpr std::string_view kMeasureProgram = "torchprobe-measure";

}  // namespace torchprobe::cli
