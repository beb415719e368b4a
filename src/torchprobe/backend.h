#pragma once
// The one device seam. Everything that differs between a CPU-only LibTorch and a CUDA
// LibTorch (or between LibTorch versions) is declared here and implemented in
// backend_common.cpp (both builds) and backend_cuda.cpp / backend_nocuda.cpp (one of them).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

namespace torchprobe::models {
class ClassifierImpl;
}

namespace torchprobe::backend {

/// True when this binary was built against a CUDA-enabled LibTorch.
bool cuda_compiled();
/// Number of CUDA devices usable at run time (0 without CUDA support, driver or GPU).
int cuda_device_count();
/// Why CUDA is unusable, in words ("" when it is usable).
std::string cuda_unavailable_reason();

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int multiprocessors = 0;
  std::int64_t total_memory_bytes = 0;
  std::int64_t l2_cache_bytes = 0;
};
CudaDeviceInfo cuda_device_info(int index);
/// Driver and runtime versions as "13.0"; empty without CUDA.
std::string cuda_driver_version();
std::string cuda_runtime_version();
bool cudnn_usable();
std::string cudnn_version();

/// Ordered timestamps on one device. mark() never blocks; elapsed_ms() waits for the
/// device once and returns the intervals between consecutive marks.
class Timeline {
 public:
  virtual ~Timeline() = default;
  virtual void mark() = 0;
  virtual std::vector<double> elapsed_ms() = 0;
  virtual void clear() = 0;
};
/// Host clock on the CPU; CUDA events on the device's current stream on a GPU.
std::unique_ptr<Timeline> make_timeline(const torch::Device& device);

/// Waits until all queued work on the device has finished (no-op on the CPU).
void synchronize(const torch::Device& device);

/// Something that a host buffer must wait for before it is overwritten (an async copy).
class Fence {
 public:
  virtual ~Fence() = default;
  virtual void wait() = 0;
};
/// A fence for the work queued so far on the device; nullptr on the CPU (nothing pending).
std::unique_ptr<Fence> record_fence(const torch::Device& device);

/// Peak-memory tracking: caching-allocator statistics on a GPU, the process's peak
/// resident set on the CPU (whole process, so run one measurement at a time).
void reset_peak_memory(const torch::Device& device);
/// Bytes at peak since the last reset; for the CPU, growth of the peak RSS over the RSS at reset.
std::int64_t peak_memory_bytes(const torch::Device& device);
/// Returns cached, unused allocator blocks to the device (no-op on the CPU).
void release_cached_memory(const torch::Device& device);

/// One allocator statistic in bytes, as torch.cuda.memory_stats() reports it: now, and the
/// peak since the last reset_allocator_peaks().
struct MemoryStat {
  std::int64_t current = 0, peak = 0;
};
/// A memory_summary-style snapshot of the allocator that serves a device. GPU: LibTorch's
/// caching allocator and cudaMemGetInfo. CPU: the CpuAllocationCounter (available only while
/// one is installed); the CPU has no cache, so reserved and active equal allocated there.
struct AllocatorStats {
  bool available = false;
  MemoryStat allocated;  ///< bytes in live tensors
  MemoryStat reserved;   ///< bytes the allocator holds (cached blocks included)
  MemoryStat active;     ///< bytes in blocks in use, including the allocator's rounding
  std::int64_t live_allocations = 0;
  std::int64_t alloc_retries = 0;  ///< GPU: allocations that succeeded only after freeing the cache
  std::int64_t ooms = 0;           ///< GPU: out-of-memory errors the allocator raised
  std::int64_t device_total = -1, device_free = -1;  ///< GPU: cudaMemGetInfo; -1 on the CPU
};
AllocatorStats allocator_stats(const torch::Device& device);
void reset_allocator_peaks(const torch::Device& device);

/// Counts every CPU tensor allocation (bytes now, peak, live count) while an instance lives, by
/// wrapping c10's CPU allocator (c10::SetCPUAllocator). Instances nest: the outermost installs
/// and uninstalls. Memory allocated while it was installed is still freed correctly after it is
/// gone. Throws std::runtime_error when another CPU allocator outranks it.
class CpuAllocationCounter {
 public:
  CpuAllocationCounter();
  ~CpuAllocationCounter();
  CpuAllocationCounter(const CpuAllocationCounter&) = delete;
  CpuAllocationCounter& operator=(const CpuAllocationCounter&) = delete;
};

/// Device memory taken straight from the driver (cudaMalloc), outside LibTorch's caching allocator, and
/// given back when the object goes: what another process holding the GPU looks like to this one.
class HeldMemory {
 public:
  virtual ~HeldMemory() = default;
  virtual std::int64_t bytes() const = 0;
};
/// Takes all of the device's free memory but `leave_free_bytes` (in chunks down to 2 MiB). CUDA devices only.
std::unique_ptr<HeldMemory> hold_device_memory(const torch::Device& device, std::int64_t leave_free_bytes);

/// Brackets the measured region for profilers that capture one range (nsys
/// --capture-range=cudaProfilerApi): cudaProfilerStart/Stop on CUDA builds, nothing otherwise.
void profiler_capture_start();
void profiler_capture_stop();
/// Per-ATen-op NVTX ranges (with input shapes) from LibTorch's profiler in NVTX mode, as
/// PyTorch's emit_nvtx does, on the calling thread. Throws InputError without a CUDA LibTorch.
void enable_aten_nvtx_ranges();
/// Switches them off again (no-op where they were never on).
void disable_aten_nvtx_ranges();

/// Autocast (automatic mixed precision) on one device type while alive, as torch.autocast:
/// eligible ops (convolutions, matmuls) run in `dtype`, precision-sensitive ones (losses,
/// reductions) in fp32. `cache` = false disables the cast-weight cache, as CUDA-graph capture
/// needs. Restores the previous state on exit. Version seam: LibTorch 1.13's per-backend setters,
/// 2.4+'s per-device-type ones.
class AutocastGuard {
 public:
  AutocastGuard(const torch::Device& device, torch::ScalarType dtype, bool cache = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool cuda_;
  bool was_enabled_, was_caching_;
  torch::ScalarType previous_dtype_;
};
/// Why autocast to `dtype` cannot run on the device ("" when it can): the CPU autocasts to
/// bf16 only; GPUs to fp16, and to bf16 from compute capability 8.0.
std::string autocast_unsupported_reason(const torch::Device& device, torch::ScalarType dtype);

/// cuDNN autotuning (torch.backends.cudnn.benchmark) set while alive, the previous setting
/// restored on exit. A process-wide switch: the first call at each new shape tries every algorithm.
class CudnnBenchmarkGuard {
 public:
  explicit CudnnBenchmarkGuard(bool enabled);
  ~CudnnBenchmarkGuard();
  CudnnBenchmarkGuard(const CudnnBenchmarkGuard&) = delete;
  CudnnBenchmarkGuard& operator=(const CudnnBenchmarkGuard&) = delete;

 private:
  bool previous_;
};

/// Device work captured once and replayed (a CUDA graph): every kernel `body` queued, with the
/// same addresses, so the inputs it reads must be static buffers refilled before each replay.
class CapturedWork {
 public:
  virtual ~CapturedWork() = default;
  /// Queues the captured work on the device's current stream (no host synchronisation).
  virtual void replay() = 0;
};
/// Runs `body` `warmup_runs` times on a side stream (lazy allocations, cuBLAS workspaces and cuDNN
/// autotuning must happen before capture), captures one more run without executing it, and waits
/// for the side stream. CUDA builds and CUDA devices only: throws InputError otherwise.
std::unique_ptr<CapturedWork> capture_work(const torch::Device& device, const std::function<void()>& body,
                                           int warmup_runs);
/// Why capture_work cannot run on the device ("" when it can).
std::string capture_unsupported_reason(const torch::Device& device);

/// The forward of `model` through LibTorch's torch::nn::parallel::data_parallel: the batch is
/// scattered over `devices` (dimension 0), the model replicated onto each (Module::clone, on
/// every call), the replicas run on at::parallel_for's threads, and the outputs gathered on
/// devices.front(). Backward sums the replicas' gradients into `model`'s parameters (which must
/// live on devices.front()). In-place buffer updates (BatchNorm running statistics) in the
/// replicas are lost, as in LibTorch. Precondition, checked once by the caller (TrainStep's
/// constructor) rather than on every step: data_parallel_unsupported_reason(devices) is "".
torch::Tensor data_parallel_forward(const std::shared_ptr<models::ClassifierImpl>& model, const torch::Tensor& input,
                                    const std::vector<torch::Device>& devices);
/// Why data_parallel_forward cannot run over `devices` ("" when it can): a CUDA build, at least
/// one device, every one an existing CUDA device, none twice.
std::string data_parallel_unsupported_reason(const std::vector<torch::Device>& devices);

/// Whether tensors headed for this device should be staged in pinned host memory.
bool wants_pinned_staging(const torch::Device& device);

}  // namespace torchprobe::backend
