#pragma once
// Wall time since a steady-clock instant, in seconds: for progress lines and budgets (never a
// measurement: those go through measure.h's timelines).
#include <chrono>

namespace torchprobe {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace torchprobe
