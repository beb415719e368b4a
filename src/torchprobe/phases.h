#pragma once
// The phases of a training step, in order: the names of the counters (<phase>_ms), the report's
// columns and the NVTX ranges. Header-only: the reporter has no LibTorch.
#include <array>

namespace torchprobe {

constexpr int kPhaseCount = 5;
constexpr std::array<const char*, kPhaseCount> kPhaseNames = {"h2d", "forward", "loss", "backward", "optimizer"};

}  // namespace torchprobe
