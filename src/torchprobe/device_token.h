#pragma once
// The one grammar of device tokens (header-only, layer 0): how a device is written in --devices items and in
// benchmark names ("train_step/net/cuda:0/..."), read back by the results reader.
#include <algorithm>
#include <cctype>
#include <string_view>
#include <vector>

namespace torchprobe {

/// "<kind>:<N>" with N of 1 to 3 digits (device indices stay below 1000): "cuda:0", "xpu:12".
inline bool is_indexed_device(std::string_view token, std::string_view kind) {
  if (token.size() < kind.size() + 2 || token.substr(0, kind.size()) != kind || token[kind.size()] != ':') return false;
  const std::string_view digits = token.substr(kind.size() + 1);
  return digits.size() <= 3 &&
         std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); });
}

/// One device as a results file names it: cpu, mps, cuda, xpu, cuda:N or xpu:N.
inline bool is_device_token(std::string_view token) {
  if (token == "cpu" || token == "mps" || token == "cuda" || token == "xpu") return true;
  return is_indexed_device(token, "cuda") || is_indexed_device(token, "xpu");
}

/// The items of a comma-separated device list ("cuda:0,cuda:1" -> "cuda:0", "cuda:1"; "cpu" -> "cpu").
inline std::vector<std::string_view> device_list_items(std::string_view token) {
  std::vector<std::string_view> items;
  for (size_t start = 0;;) {
    const size_t comma = token.find(',', start);
    items.push_back(token.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return items;
    start = comma + 1;
  }
}

/// A benchmark name's device: one device, or the comma-separated devices of one data_parallel process
/// ("cuda:0,cuda:1", as `torchprobe dist dataparallel` names its results).
inline bool is_device_list_token(std::string_view token) {
  const auto items = device_list_items(token);
  return std::all_of(items.begin(), items.end(), is_device_token);
}

}  // namespace torchprobe
