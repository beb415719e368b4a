#include <chrono>
#include <stdexcept>

#include "torchprobe/backend.h"
#include "torchprobe/backend_detail.h"
#include "torchprobe/memory.h"

namespace torchprobe::backend {
namespace {

class HostTimeline final : public Timeline {
 public:
  void mark() override { marks_.push_back(std::chrono::steady_clock::now()); }
  std::vector<double> elapsed_ms() override {
    std::vector<double> out;
    for (size_t i = 1; i < marks_.size(); ++i) {
      out.push_back(std::chrono::duration<double, std::milli>(marks_[i] - marks_[i - 1]).count());
    }
    return out;
  }
  void clear() override { marks_.clear(); }

 private:
  std::vector<std::chrono::steady_clock::time_point> marks_;
};

int cuda_index(const torch::Device& device) { return device.has_index() ? device.index() : 0; }

// Baseline RSS at the last CPU reset, so peak_memory_bytes reports growth.
std::int64_t g_cpu_rss_baseline = 0;

}  // namespace

bool cuda_compiled() { return detail::compiled(); }
int cuda_device_count() { return detail::device_count(); }
std::string cuda_unavailable_reason() { return detail::unavailable_reason(); }
CudaDeviceInfo cuda_device_info(int index) { return detail::device_info(index); }
std::string cuda_driver_version() { return detail::driver_version(); }
std::string cuda_runtime_version() { return detail::runtime_version(); }
bool cudnn_usable() { return detail::cudnn_usable(); }
std::string cudnn_version() { return detail::cudnn_version(); }

std::unique_ptr<Timeline> make_timeline(const torch::Device& device) {
  if (device.is_cuda()) return detail::make_timeline(cuda_index(device));
  return std::make_unique<HostTimeline>();
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) detail::synchronize(cuda_index(device));
}

std::unique_ptr<Fence> record_fence(const torch::Device& device) {
  if (device.is_cuda()) return detail::record_fence(cuda_index(device));
  return nullptr;
}

void reset_peak_memory(const torch::Device& device) {
  if (device.is_cuda()) return detail::reset_peak_memory(cuda_index(device));
  reset_peak_rss();
  g_cpu_rss_baseline = current_rss_bytes();
}

std::int64_t peak_memory_bytes(const torch::Device& device) {
  if (device.is_cuda()) return detail::peak_memory_bytes(cuda_index(device));
  const std::int64_t growth = peak_rss_bytes() - g_cpu_rss_baseline;
  return growth > 0 ? growth : 0;
}

void release_cached_memory(const torch::Device& device) {
  if (device.is_cuda()) detail::release_cached_memory(cuda_index(device));
}

void profiler_capture_start() { detail::profiler_start(); }
void profiler_capture_stop() { detail::profiler_stop(); }
void enable_aten_nvtx_ranges() { detail::enable_aten_nvtx(); }
void disable_aten_nvtx_ranges() { detail::disable_aten_nvtx(); }

bool wants_pinned_staging(const torch::Device& device) { return device.is_cuda(); }

}  // namespace torchprobe::backend
