#pragma once
#include <algorithm>
#include <stdexcept>
#include <vector>

namespace torchprobe {

/// Median of a non-empty sample (mean of the two middle values for even sizes).
inline double median(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median of an empty sample");
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  return (upper + *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid))) / 2.0;
}

}  // namespace torchprobe
