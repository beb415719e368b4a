// The CUDA half of the device seam (built only against a CUDA-enabled LibTorch). Uses the
// CUDA runtime directly for events and properties, and LibTorch's caching allocator for
// memory statistics; the calls used here exist in LibTorch 1.13 and 2.x alike.
#include <ATen/Context.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/cuda.h>
#include <torch/nn/parallel/data_parallel.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "torchprobe/backend_c10d.h"
#include "torchprobe/backend_detail.h"
#include "torchprobe/config.h"
#include "torchprobe/input_error.h"
#include "torchprobe/models/classifier.h"

#ifdef TORCHPROBE_HAS_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace torchprobe::backend::detail {
namespace {

void check(cudaError_t status, const char* what, int index) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + " on cuda:" + std::to_string(index) +
                             " failed: " + cudaGetErrorString(status));
  }
}

std::string format_version(int v) {  // CUDA encodes 13.0 as 13000
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

cudaStream_t current_stream(int index) {
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(index)).stream();
}

class CudaTimeline final : public Timeline {
 public:
  explicit CudaTimeline(int index) : index_(index) {}
  ~CudaTimeline() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  void mark() override {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index_));
    if (used_ == events_.size()) {
      cudaEvent_t e = nullptr;
      check(cudaEventCreate(&e), "cudaEventCreate", index_);
      events_.push_back(e);
    }
    check(cudaEventRecord(events_[used_], current_stream(index_)), "cudaEventRecord", index_);
    ++used_;
  }
  std::vector<double> elapsed_ms() override {
    std::vector<double> out;
    if (used_ == 0) return out;
    check(cudaEventSynchronize(events_[used_ - 1]), "cudaEventSynchronize", index_);
    for (size_t i = 1; i < used_; ++i) {
      float ms = 0.0f;
      check(cudaEventElapsedTime(&ms, events_[i - 1], events_[i]), "cudaEventElapsedTime", index_);
      out.push_back(ms);
    }
    return out;
  }
  void clear() override { used_ = 0; }

 private:
  int index_;
  std::vector<cudaEvent_t> events_;
  size_t used_ = 0;
};

class CudaFence final : public Fence {
 public:
  explicit CudaFence(int index) : index_(index) {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index_));
    check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate", index_);
    check(cudaEventRecord(event_, current_stream(index_)), "cudaEventRecord", index_);
  }
  ~CudaFence() override { cudaEventDestroy(event_); }
  void wait() override { check(cudaEventSynchronize(event_), "cudaEventSynchronize", index_); }

 private:
  int index_;
  cudaEvent_t event_ = nullptr;
};

class CudaCapturedWork final : public CapturedWork {
 public:
  CudaCapturedWork(int index, const std::function<void()>& body, int warmup_runs) : index_(index) {
    const auto device = static_cast<c10::DeviceIndex>(index);
    c10::cuda::CUDAGuard guard(device);
    // Capture needs a stream other than the legacy default one; the side stream first waits for
    // the work already queued (the inputs' copies), and the caller's stream waits for it after.
    const c10::cuda::CUDAStream caller = c10::cuda::getCurrentCUDAStream(device);
    const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device);
    at::cuda::CUDAEvent ready;
    ready.record(caller);
    ready.block(side);
    {
      c10::cuda::CUDAStreamGuard on_side(side);
      for (int i = 0; i < warmup_runs; ++i) body();
      graph_.capture_begin();
      try {
        body();
      } catch (...) {
        try {
          graph_.capture_end();
        } catch (...) {  // the capture is invalid anyway; report the body's error
        }
        throw;
      }
      graph_.capture_end();
    }
    at::cuda::CUDAEvent done;
    done.record(side);
    done.block(caller);
  }
  void replay() override {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index_));
    graph_.replay();
  }

 private:
  int index_;
  at::cuda::CUDAGraph graph_;
};

}  // namespace

bool compiled() { return true; }
int device_count() { return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0; }

std::string unavailable_reason() {
  if (device_count() > 0) return "";
  int n = 0;
  const cudaError_t status = cudaGetDeviceCount(&n);
  if (status != cudaSuccess) return std::string("CUDA runtime: ") + cudaGetErrorString(status);
  return "no CUDA device is visible (check CUDA_VISIBLE_DEVICES and the driver)";
}

CudaDeviceInfo device_info(int index) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties", index);
  CudaDeviceInfo info;
  info.index = index;
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  info.total_memory_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
  info.l2_cache_bytes = prop.l2CacheSize;
  return info;
}

std::string driver_version() {
  int v = 0;
  return cudaDriverGetVersion(&v) == cudaSuccess && v > 0 ? format_version(v) : "";
}
std::string runtime_version() {
  int v = 0;
  return cudaRuntimeGetVersion(&v) == cudaSuccess && v > 0 ? format_version(v) : "";
}
bool cudnn_usable() { return device_count() > 0 && torch::cuda::cudnn_is_available(); }
std::string cudnn_version() {
  if (!at::detail::getCUDAHooks().hasCuDNN()) return "";
  const long v = at::detail::getCUDAHooks().versionCuDNN();
  return v > 0 ? std::to_string(v) : "";
}

std::unique_ptr<Timeline> make_timeline(int index) { return std::make_unique<CudaTimeline>(index); }

void synchronize(int index) {
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index));
  check(cudaStreamSynchronize(current_stream(index)), "cudaStreamSynchronize", index);
}

std::unique_ptr<Fence> record_fence(int index) { return std::make_unique<CudaFence>(index); }

namespace {
/// The caching allocator's per-device state exists only once CUDA is initialised, which LibTorch does
/// lazily at the first CUDA tensor: before that, its statistics calls throw "Invalid device argument"
/// (seen on an H200, 2026-11-27, when a test reset the peaks first). Creating an empty tensor runs
/// the lazy initialisation the same way in every LibTorch version.
void init_allocator(int index) {
  (void)torch::empty({0}, torch::TensorOptions().device(torch::kCUDA, static_cast<c10::DeviceIndex>(index)));
}
}  // namespace

void reset_peak_memory(int index) {
  init_allocator(index);
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(index));
}

std::int64_t peak_memory_bytes(int index) {
  init_allocator(index);
  const auto stats =
      c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
  return stats.allocated_bytes[0].peak;  // index 0 is StatType::AGGREGATE in 1.13 and 2.x
}

void release_cached_memory(int index) {
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index));
  c10::cuda::CUDACachingAllocator::emptyCache();
}

AllocatorStats allocator_stats(int index) {
  init_allocator(index);
  const auto device = static_cast<c10::DeviceIndex>(index);
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device);
  AllocatorStats out;
  out.available = true;
  out.allocated = {stats.allocated_bytes[0].current, stats.allocated_bytes[0].peak};  // [0]: StatType::AGGREGATE
  out.reserved = {stats.reserved_bytes[0].current, stats.reserved_bytes[0].peak};
  out.active = {stats.active_bytes[0].current, stats.active_bytes[0].peak};
  out.live_allocations = stats.allocation[0].current;
  out.alloc_retries = stats.num_alloc_retries;
  out.ooms = stats.num_ooms;
  c10::cuda::CUDAGuard guard(device);
  size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo", index);
  out.device_free = static_cast<std::int64_t>(free);
  out.device_total = static_cast<std::int64_t>(total);
  return out;
}

std::unique_ptr<CapturedWork> capture_work(int index, const std::function<void()>& body, int warmup_runs) {
  return std::make_unique<CudaCapturedWork>(index, body, warmup_runs);
}

namespace {
class CudaHeldMemory final : public HeldMemory {
 public:
  CudaHeldMemory(int index, std::int64_t leave_free) : index_(index) {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index));
    constexpr std::int64_t kMinChunk = std::int64_t{2} << 20;
    std::int64_t chunk = std::int64_t{1} << 30;
    while (chunk >= kMinChunk) {
      size_t free = 0, total = 0;
      check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo", index);
      if (static_cast<std::int64_t>(free) - leave_free < chunk) {
        chunk /= 2;
        continue;
      }
      void* ptr = nullptr;
      if (cudaMalloc(&ptr, static_cast<size_t>(chunk)) != cudaSuccess) {
        cudaGetLastError();  // a failed cudaMalloc is not sticky; clear it
        chunk /= 2;
        continue;
      }
      pointers_.push_back(ptr);
      bytes_ += chunk;
    }
  }
  ~CudaHeldMemory() override {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index_));
    for (void* ptr : pointers_) cudaFree(ptr);
  }
  std::int64_t bytes() const override { return bytes_; }

 private:
  int index_;
  std::vector<void*> pointers_;
  std::int64_t bytes_ = 0;
};
}  // namespace

std::unique_ptr<HeldMemory> hold_device_memory(int index, std::int64_t leave_free_bytes) {
  return std::make_unique<CudaHeldMemory>(index, leave_free_bytes);
}

void profiler_start() { cudaProfilerStart(); }
void profiler_stop() { cudaProfilerStop(); }

void enable_aten_nvtx() {
  using torch::profiler::impl::ProfilerConfig;
  using torch::profiler::impl::ProfilerState;
  torch::autograd::profiler::enableProfilerLegacy(ProfilerConfig(ProfilerState::NVTX, /*report_input_shapes=*/true));
}

void disable_aten_nvtx() {
  if (torch::profiler::impl::profilerEnabled()) torch::autograd::profiler::disableProfilerLegacy();
}

}  // namespace torchprobe::backend::detail

namespace torchprobe::backend::detail {

torch::Tensor data_parallel_forward(const std::shared_ptr<models::ClassifierImpl>& model, const torch::Tensor& input,
                                    const std::vector<torch::Device>& devices) {
  // With one device data_parallel runs module->to(device) and forward: the same arithmetic as a
  // plain forward, but Module::to would re-set the parameters the step keeps as views of its flat
  // buffer, so that case is the plain forward here.
  if (devices.size() == 1) return model->forward(input.to(devices.front()));
  return torch::nn::parallel::data_parallel(model, input, devices, /*output_device=*/devices.front(), /*dim=*/0);
}

}  // namespace torchprobe::backend::detail

namespace torchprobe::backend {

std::string nccl_unsupported_reason(const torch::Device& device) {
#ifdef TORCHPROBE_HAS_NCCL
  if (!device.is_cuda()) return "NCCL reduces CUDA tensors; " + device.str() + " is not a CUDA device (Gloo serves the CPU)";
  if (detail::device_count() == 0) return "no CUDA device for NCCL: " + detail::unavailable_reason();
  return "";
#else
  (void)device;
  return "this build has no NCCL process group (nccl.h was not found when it was configured)";
#endif
}

c10::intrusive_ptr<CollectiveBackend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                        int world_size, std::chrono::milliseconds timeout) {
#ifdef TORCHPROBE_HAS_NCCL
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, options);
#else
  (void)store, (void)rank, (void)world_size, (void)timeout;
  throw InputError(nccl_unsupported_reason(torch::Device(torch::kCUDA)));
#endif
}

}  // namespace torchprobe::backend
