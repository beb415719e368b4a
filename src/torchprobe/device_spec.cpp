#include "torchprobe/device_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "torchprobe/backend.h"
#include "torchprobe/error.h"

namespace torchprobe {
namespace {

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

std::string describe_cuda_devices(int count) {
  if (count == 0) {
    const std::string reason = backend::cuda_unavailable_reason();
    return "this host has no CUDA device" + (reason.empty() ? "" : "; " + reason);
  }
  std::string list;
  for (int i = 0; i < count; ++i) list += (i ? ", cuda:" : "cuda:") + std::to_string(i);
  return fmt::format("this host has {} CUDA device{}: {}", count, count == 1 ? "" : "s", list);
}

// Parses "cuda:N" / "cuda" / "cpu" without checking existence; nullopt-like via bool.
bool parse_one(const std::string& text, torch::Device* out, bool* every_gpu) {
  *every_gpu = false;
  if (text == "cpu") {
    *out = torch::Device(torch::kCPU);
    return true;
  }
  if (text == "cuda") {
    *every_gpu = true;
    *out = torch::Device(torch::kCUDA, 0);
    return true;
  }
  const std::string prefix = "cuda:";
  if (text.compare(0, prefix.size(), prefix) != 0) return false;
  const std::string digits = text.substr(prefix.size());
  if (digits.empty() || digits.size() > 3 ||
      !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return false;
  }
  *out = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(std::stoi(digits)));
  return true;
}

[[noreturn]] void throw_bad_syntax(const std::string& text) {
  throw InputError(fmt::format("invalid device '{}' (expected cpu, cuda, cuda:N or all)", text));
}

void check_exists(const torch::Device& device, int cuda_count) {
  if (device.is_cuda() && device.index() >= cuda_count) {
    throw InputError(fmt::format("device {} not found ({})", device_string(device),
                                 describe_cuda_devices(cuda_count)));
  }
}

}  // namespace

std::string device_string(const torch::Device& device) {
  if (device.is_cpu()) return "cpu";
  if (device.is_cuda()) return "cuda:" + std::to_string(device.has_index() ? device.index() : 0);
  return device.str();
}

std::vector<torch::Device> parse_device_list(const std::string& text, int cuda_count) {
  std::vector<torch::Device> out;
  const auto add = [&out](const torch::Device& d) {
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  };
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = trim(text.substr(start, comma - start));
    start = comma + 1;
    if (item.empty()) throw_bad_syntax(text);
    if (item == "all") {
      add(torch::Device(torch::kCPU));
      for (int i = 0; i < cuda_count; ++i) add(torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(i)));
      continue;
    }
    torch::Device device(torch::kCPU);
    bool every_gpu = false;
    if (!parse_one(item, &device, &every_gpu)) throw_bad_syntax(item);
    if (every_gpu) {
      if (cuda_count == 0) {
        throw InputError(fmt::format("device cuda not found ({})", describe_cuda_devices(0)));
      }
      for (int i = 0; i < cuda_count; ++i) add(torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(i)));
      continue;
    }
    check_exists(device, cuda_count);
    add(device);
  }
  return out;
}

std::vector<torch::Device> parse_device_list(const std::string& text) {
  return parse_device_list(text, backend::cuda_device_count());
}

torch::Device parse_device(const std::string& text) {
  const std::string item = trim(text);
  torch::Device device(torch::kCPU);
  bool every_gpu = false;
  if (!parse_one(item, &device, &every_gpu)) throw_bad_syntax(item);
  check_exists(device, backend::cuda_device_count());
  return device;
}

std::vector<torch::Device> all_devices() { return parse_device_list("all"); }

}  // namespace torchprobe
