#pragma once
// The one device-string grammar, used by every command: "cpu", "cuda", "cuda:N" and "all" (the CPU
// plus every GPU), comma-separated where a list is allowed. Where a list is meant "cuda" is every
// GPU; where one device is meant it is one GPU: cuda:0, or a rank's cuda:LOCAL_RANK.
#include <string>
#include <vector>

#include <torch/types.h>

namespace torchprobe {

/// "cpu" or "cuda:N" (always with the index).
std::string device_string(const torch::Device& device);

struct DeviceQuery {
  bool list = true;          ///< a comma-separated list (otherwise exactly one device, and no "all")
  int cuda_index = 0;        ///< one device meant: the GPU "cuda" stands for
  int cuda_count = -1;       ///< the CUDA devices that exist (-1: this host's)
};
/// Parses `text` by the grammar; order is kept and duplicates dropped. Throws InputError with one
/// wording: "invalid device 'X' (expected cpu, cuda, cuda:N or all, comma-separated)" for malformed
/// text, "device cuda:3 not found (this host has 1 CUDA device: cuda:0)" for a device this host lacks.
std::vector<torch::Device> parse_devices(const std::string& text, const DeviceQuery& query = {});

/// One device ("cuda" is cuda:0, as in PyTorch): parse_devices with list = false.
torch::Device parse_device(const std::string& text);
/// A list: parse_devices with list = true, against this host or a given number of CUDA devices.
std::vector<torch::Device> parse_device_list(const std::string& text);
std::vector<torch::Device> parse_device_list(const std::string& text, int cuda_device_count);

/// The CPU plus every CUDA device found at run time.
std::vector<torch::Device> all_devices();

}  // namespace torchprobe
