#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include <torch/version.h>

#include "torchprobe/backend.h"
#include "torchprobe/backend_detail.h"
#include "torchprobe/input_error.h"
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

// The CPU allocation counter's state. Never destroyed: tensors allocated through the counter may
// be freed after it was uninstalled, even during static destruction at exit.
struct CounterState {
  std::mutex mutex;
  std::unordered_map<void*, std::size_t> sizes;
  std::int64_t current = 0, peak = 0;
  c10::Allocator* original = nullptr;
  c10::DeleterFnPtr original_deleter = nullptr;
  int installed = 0;  // nesting depth
};
CounterState& counter_state() {
  static auto* state = new CounterState;
  return *state;
}

void counting_delete(void* ptr) {
  CounterState& state = counter_state();
  c10::DeleterFnPtr deleter = nullptr;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    const auto it = state.sizes.find(ptr);
    if (it != state.sizes.end()) {
      state.current -= static_cast<std::int64_t>(it->second);
      state.sizes.erase(it);
    }
    deleter = state.original_deleter;
  }
  deleter(ptr);
}

// Wraps the CPU allocator that was installed before (c10's DefaultCPUAllocator): allocations it
// returns in its raw form (context == data, its own raw deleter) are recorded by address and
// handed out with counting_delete, which forgets them and calls the original deleter. Anything
// else passes through uncounted.
//
// Version seam: LibTorch 1.13 declares Allocator::allocate() const, 2.x (>= 2.3) non-const and
// adds a pure virtual copy_data(). Both allocate() overloads are defined, so whichever the
// LibTorch declares is overridden, and copy_data is a plain member where the base lacks it. No
// `override` on them for that reason.
class CountingCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(std::size_t n) const { return counted(n); }
  c10::DataPtr allocate(std::size_t n) { return counted(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }
  c10::DeleterFnPtr raw_deleter() const { return &counting_delete; }

 private:
  static c10::DataPtr counted(std::size_t n) {
    CounterState& state = counter_state();
    c10::DataPtr inner = state.original->allocate(n);
    void* ptr = inner.get();
    if (ptr == nullptr || inner.get_context() != ptr || inner.get_deleter() != state.original_deleter) return inner;
    const c10::Device device = inner.device();
    inner.release_context();
    {
      std::lock_guard<std::mutex> lock(state.mutex);
      try {
        state.sizes[ptr] = n;
      } catch (...) {  // std::bad_alloc under a tight memory limit: give the block back first
        state.original_deleter(ptr);
        throw;
      }
      state.current += static_cast<std::int64_t>(n);
      if (state.current > state.peak) state.peak = state.current;
    }
    return {ptr, ptr, &counting_delete, device};
  }
};

CountingCpuAllocator g_counting_allocator;

}  // namespace

CpuAllocationCounter::CpuAllocationCounter() {
  CounterState& state = counter_state();
  if (state.installed++ > 0) return;
  c10::Allocator* current = c10::GetCPUAllocator();
  if (state.original != nullptr && state.original != current) {
    state.installed = 0;
    throw std::runtime_error("CpuAllocationCounter: the CPU allocator changed since the counter was first installed");
  }
  state.original = current;
  state.original_deleter = current->raw_deleter();
  c10::SetCPUAllocator(&g_counting_allocator, /*priority=*/0);
  if (c10::GetCPUAllocator() != &g_counting_allocator) {
    state.installed = 0;
    throw std::runtime_error("CpuAllocationCounter: another CPU allocator with a higher priority is installed");
  }
  std::lock_guard<std::mutex> lock(state.mutex);
  state.peak = state.current;
}

CpuAllocationCounter::~CpuAllocationCounter() {
  CounterState& state = counter_state();
  if (--state.installed == 0) c10::SetCPUAllocator(state.original, /*priority=*/0);
}

AllocatorStats allocator_stats(const torch::Device& device) {
  if (device.is_cuda()) return detail::allocator_stats(cuda_index(device));
  AllocatorStats out;
  CounterState& state = counter_state();
  std::lock_guard<std::mutex> lock(state.mutex);
  out.available = state.installed > 0;
  out.allocated = {state.current, state.peak};
  out.reserved = out.active = out.allocated;
  out.live_allocations = static_cast<std::int64_t>(state.sizes.size());
  return out;
}

void reset_allocator_peaks(const torch::Device& device) {
  if (device.is_cuda()) return detail::reset_peak_memory(cuda_index(device));  // the caching allocator's peaks
  CounterState& state = counter_state();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.peak = state.current;
}

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

std::unique_ptr<HeldMemory> hold_device_memory(const torch::Device& device, std::int64_t leave_free_bytes) {
  if (!device.is_cuda()) throw InputError("hold_device_memory needs a CUDA device, not " + device.str());
  return detail::hold_device_memory(cuda_index(device), leave_free_bytes);
}

void profiler_capture_start() { detail::profiler_start(); }
void profiler_capture_stop() { detail::profiler_stop(); }
void enable_aten_nvtx_ranges() { detail::enable_aten_nvtx(); }
void disable_aten_nvtx_ranges() { detail::disable_aten_nvtx(); }

// Version seam for autocast: 2.4 replaced the per-backend setters (set_enabled for CUDA,
// set_cpu_enabled, set_autocast_gpu_dtype, ...) by ones taking a device type; 2.x deprecates the old.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define TORCHPROBE_AUTOCAST_BY_DEVICE_TYPE 1
#endif

namespace {
bool autocast_enabled(bool cuda) {
#ifdef TORCHPROBE_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}
void set_autocast_enabled(bool cuda, bool enabled) {
#ifdef TORCHPROBE_AUTOCAST_BY_DEVICE_TYPE
  at::autocast::set_autocast_enabled(cuda ? at::kCUDA : at::kCPU, enabled);
#else
  cuda ? at::autocast::set_enabled(enabled) : at::autocast::set_cpu_enabled(enabled);
#endif
}
torch::ScalarType autocast_dtype(bool cuda) {
#ifdef TORCHPROBE_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
#endif
}
void set_autocast_dtype(bool cuda, torch::ScalarType dtype) {
#ifdef TORCHPROBE_AUTOCAST_BY_DEVICE_TYPE
  at::autocast::set_autocast_dtype(cuda ? at::kCUDA : at::kCPU, dtype);
#else
  cuda ? at::autocast::set_autocast_gpu_dtype(dtype) : at::autocast::set_autocast_cpu_dtype(dtype);
#endif
}
}  // namespace

AutocastGuard::AutocastGuard(const torch::Device& device, torch::ScalarType dtype, bool cache)
    : cuda_(device.is_cuda()),
      was_enabled_(autocast_enabled(cuda_)),
      was_caching_(at::autocast::is_autocast_cache_enabled()),
      previous_dtype_(autocast_dtype(cuda_)) {
  const std::string reason = autocast_unsupported_reason(device, dtype);
  if (!reason.empty()) throw InputError(reason);
  set_autocast_dtype(cuda_, dtype);
  set_autocast_enabled(cuda_, true);
  at::autocast::set_autocast_cache_enabled(cache);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  // As torch.autocast's __exit__: the outermost region drops the cast-weight cache.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast_enabled(cuda_, was_enabled_);
  set_autocast_dtype(cuda_, previous_dtype_);
  at::autocast::set_autocast_cache_enabled(was_caching_);
}

std::string autocast_unsupported_reason(const torch::Device& device, torch::ScalarType dtype) {
  const std::string name = dtype == torch::kBFloat16 ? "bf16" : dtype == torch::kHalf ? "fp16" : c10::toString(dtype);
  if (dtype != torch::kBFloat16 && dtype != torch::kHalf) return "autocast needs bf16 or fp16, not " + name;
  if (device.is_cpu()) {
    return dtype == torch::kBFloat16 ? "" : "autocast to fp16 runs on GPUs only; the CPU autocasts to bf16";
  }
  if (!device.is_cuda()) return "autocast is supported on the CPU and CUDA devices only";
  if (dtype == torch::kBFloat16) {
    const CudaDeviceInfo info = cuda_device_info(cuda_index(device));
    if (info.cc_major < 8) {
      return "bf16 needs compute capability 8.0 or newer; " + info.name + " has " + std::to_string(info.cc_major) + "." +
             std::to_string(info.cc_minor) + " (use fp16)";
    }
  }
  return "";
}

CudnnBenchmarkGuard::CudnnBenchmarkGuard(bool enabled) : previous_(at::globalContext().benchmarkCuDNN()) {
  at::globalContext().setBenchmarkCuDNN(enabled);
}
CudnnBenchmarkGuard::~CudnnBenchmarkGuard() { at::globalContext().setBenchmarkCuDNN(previous_); }

std::string capture_unsupported_reason(const torch::Device& device) {
  if (!device.is_cuda()) return "CUDA graphs capture GPU work; " + device.str() + " is not a CUDA device";
  if (!cuda_compiled()) return "CUDA graphs need a CUDA-enabled LibTorch; this one is CPU-only";
  return "";
}

std::unique_ptr<CapturedWork> capture_work(const torch::Device& device, const std::function<void()>& body,
                                           int warmup_runs) {
  const std::string reason = capture_unsupported_reason(device);
  if (!reason.empty()) throw InputError(reason);
  return detail::capture_work(cuda_index(device), body, warmup_runs);
}

std::string data_parallel_unsupported_reason(const std::vector<torch::Device>& devices) {
  if (!cuda_compiled()) {
    return "torch::nn::parallel::data_parallel needs a CUDA-enabled LibTorch; this one is CPU-only";
  }
  if (devices.empty()) return "data_parallel needs at least one CUDA device";
  const int count = cuda_device_count();
  for (size_t i = 0; i < devices.size(); ++i) {
    const torch::Device& d = devices[i];
    if (!d.is_cuda()) return "data_parallel runs on CUDA devices; " + d.str() + " is not one";
    if (cuda_index(d) >= count) {
      return d.str() + " does not exist (this process sees " + std::to_string(count) + " CUDA device" +
             (count == 1 ? "" : "s") + ")";
    }
    for (size_t j = 0; j < i; ++j) {
      if (cuda_index(devices[j]) == cuda_index(d)) return d.str() + " is listed twice";
    }
  }
  return "";
}

torch::Tensor data_parallel_forward(const std::shared_ptr<models::ClassifierImpl>& model, const torch::Tensor& input,
                                    const std::vector<torch::Device>& devices) {
  return detail::data_parallel_forward(model, input, devices);  // devices checked once by the caller
}

bool wants_pinned_staging(const torch::Device& device) { return device.is_cuda(); }

}  // namespace torchprobe::backend
