#pragma once
// Private to the seam: the CUDA half, implemented by backend_cuda.cpp or backend_nocuda.cpp.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "torchprobe/backend.h"

namespace torchprobe::backend::detail {

bool compiled();
int device_count();
std::string unavailable_reason();
CudaDeviceInfo device_info(int index);
std::string driver_version();
std::string runtime_version();
bool cudnn_usable();
std::string cudnn_version();
std::unique_ptr<Timeline> make_timeline(int index);
void synchronize(int index);
std::unique_ptr<Fence> record_fence(int index);
void reset_peak_memory(int index);
std::int64_t peak_memory_bytes(int index);
void release_cached_memory(int index);
AllocatorStats allocator_stats(int index);
std::unique_ptr<HeldMemory> hold_device_memory(int index, std::int64_t leave_free_bytes);
void profiler_start();
void profiler_stop();
std::unique_ptr<CapturedWork> capture_work(int index, const std::function<void()>& body, int warmup_runs);
torch::Tensor data_parallel_forward(const std::shared_ptr<models::ClassifierImpl>& model, const torch::Tensor& input,
                                    const std::vector<torch::Device>& devices);
void enable_aten_nvtx();
void disable_aten_nvtx();

}  // namespace torchprobe::backend::detail
