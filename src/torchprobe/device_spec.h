#pragma once
// The device-string grammar: "cpu", "cuda" (every GPU; one GPU, cuda:0, where one device is meant),
// "cuda:N" and "all" (the CPU plus every GPU), comma-separated in lists.
#include <string>
#include <vector>

#include <torch/types.h>

namespace torchprobe {

/// "cpu" or "cuda:N" (always with the index).
std::string device_string(const torch::Device& device);

/// One device: "cpu", "cuda" (= cuda:0, as in PyTorch) or "cuda:N". Throws InputError for
/// malformed strings and for devices this host does not have, naming what it does have.
torch::Device parse_device(const std::string& text);
/// A comma-separated list of "cpu", "cuda" (every GPU), "cuda:N" and "all" (the CPU plus every
/// GPU). Order is kept, duplicates dropped. Throws InputError like parse_device.
std::vector<torch::Device> parse_device_list(const std::string& text);
/// The same, against a given number of CUDA devices (for tests and what-if checks).
std::vector<torch::Device> parse_device_list(const std::string& text, int cuda_device_count);

/// The CPU plus every CUDA device found at run time.
std::vector<torch::Device> all_devices();

}  // namespace torchprobe
