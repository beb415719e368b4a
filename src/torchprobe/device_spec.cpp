#include "torchprobe/device_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "torchprobe/backend.h"
#include "torchprobe/device_token.h"
#include "torchprobe/error.h"
#include "torchprobe/strings.h"

namespace torchprobe {
namespace {

std::string describe_cuda_devices(int count) {
  if (count == 0) {
    const std::string reason = backend::cuda_unavailable_reason();
    return "this host has no CUDA device" + (reason.empty() ? "" : "; " + reason);
  }
  std::string list;
  for (int i = 0; i < count; ++i) list += (i ? ", cuda:" : "cuda:") + std::to_string(i);
  return fmt::format("this host has {} CUDA device{}: {}", count, count == 1 ? "" : "s", list);
}

// One item: "cpu", "cuda", "cuda:N" (N below 1000); false when malformed.
bool parse_one(const std::string& text, torch::Device* out, bool* bare_cuda) {
  *bare_cuda = false;
  if (text == "cpu") {
    *out = torch::Device(torch::kCPU);
    return true;
  }
  if (text == "cuda") {
    *bare_cuda = true;
    return true;
  }
  if (!is_indexed_device(text, "cuda")) return false;
  *out = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(std::stoi(text.substr(5))));
  return true;
}

[[noreturn]] void throw_bad_syntax(const std::string& item, bool list) {
  throw InputError(fmt::format("invalid device '{}' (expected {})", item,
                               list ? "cpu, cuda, cuda:N or all, comma-separated" : "one of cpu, cuda or cuda:N"));
}

void check_exists(const torch::Device& device, int cuda_count) {
  if (device.is_cuda() && device.index() >= cuda_count) {
    throw InputError(fmt::format("device {} not found ({})", device_string(device), describe_cuda_devices(cuda_count)));
  }
}

}  // namespace

std::string device_string(const torch::Device& device) {
  if (device.is_cpu()) return "cpu";
  if (device.is_cuda()) return "cuda:" + std::to_string(device.has_index() ? device.index() : 0);
  return device.str();
}

std::vector<torch::Device> parse_devices(const std::string& text, const DeviceQuery& query) {
  const int cuda_count = query.cuda_count >= 0 ? query.cuda_count : backend::cuda_device_count();
  std::vector<torch::Device> out;
  const auto add = [&out](const torch::Device& d) {
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  };
  const auto every_gpu = [&] {
    for (int i = 0; i < cuda_count; ++i) add(torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(i)));
  };
  std::vector<std::string> items = split(text, ',');
  for (auto& item : items) item = trim(item);
  if (!query.list && items.size() != 1) throw_bad_syntax(trim(text), /*list=*/false);
  for (const auto& item : items) {
    if (item.empty()) throw_bad_syntax(trim(text), query.list);
    if (item == "all") {
      if (!query.list) throw_bad_syntax(item, /*list=*/false);
      add(torch::Device(torch::kCPU));
      every_gpu();
      continue;
    }
    torch::Device device(torch::kCPU);
    bool bare_cuda = false;
    if (!parse_one(item, &device, &bare_cuda)) throw_bad_syntax(item, query.list);
    if (bare_cuda) {
      if (cuda_count == 0) throw InputError(fmt::format("device cuda not found ({})", describe_cuda_devices(0)));
      if (query.list) {
        every_gpu();
        continue;
      }
      device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(query.cuda_index));
    }
    check_exists(device, cuda_count);
    add(device);
  }
  return out;
}

torch::Device parse_device(const std::string& text) {
  DeviceQuery query;
  query.list = false;
  return parse_devices(text, query).front();
}

std::vector<torch::Device> parse_device_list(const std::string& text) { return parse_devices(text); }

std::vector<torch::Device> parse_device_list(const std::string& text, int cuda_device_count) {
  DeviceQuery query;
  query.cuda_count = cuda_device_count;
  return parse_devices(text, query);
}

std::vector<torch::Device> all_devices() { return parse_device_list("all"); }

}  // namespace torchprobe
