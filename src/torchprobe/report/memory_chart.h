#pragma once
// diagnose memory's picture: peak memory of a training step vs batch size, the fitted line, the budget and the
// largest batch that fits. LibTorch-free: the diagnostics hand it plain numbers.
#include <cstdint>
#include <string>
#include <vector>

namespace torchprobe::report {

struct MemoryTrialPoint {
  std::int64_t batch = 0;
  bool fits = false;
  std::int64_t peak_bytes = 0;  ///< fits only
};

struct MemoryChartInput {
  std::string model, device, device_name;
  bool gpu = false;                 ///< the budget is the device's memory, else the CPU child's address-space budget
  std::int64_t capacity_bytes = 0;  ///< the budget (0: unknown, not drawn)
  std::vector<MemoryTrialPoint> trials;
  double fit_intercept = 0.0, fit_slope = 0.0;  ///< peak bytes = intercept + slope x batch; slope 0: no fit
  int fit_points = 0;
  std::int64_t largest = 0, smallest_failing = 0;  ///< 0: none
};

/// The chart as a standalone SVG: trials that ran as dots, those that ran out of memory as crosses on the budget
/// line, the fit as a dashed line, the largest batch marked.
std::string memory_chart(const MemoryChartInput& input);

}  // namespace torchprobe::report
