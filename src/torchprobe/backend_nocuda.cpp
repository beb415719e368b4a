// The CUDA half of the device seam for a LibTorch built without CUDA: no device exists,
// and any attempt to use one is a programming error (device parsing rejects it earlier).
#include <stdexcept>

#include "torchprobe/backend_c10d.h"
#include "torchprobe/backend_detail.h"
#include "torchprobe/error.h"

namespace torchprobe::backend::detail {
namespace {
[[noreturn]] void no_cuda() {
  throw std::logic_error("torchprobe was built against a LibTorch without CUDA support");
}
}  // namespace

bool compiled() { return false; }
int device_count() { return 0; }
std::string unavailable_reason() { return "this LibTorch was built without CUDA support"; }
CudaDeviceInfo device_info(int) { no_cuda(); }
std::string driver_version() { return ""; }
std::string runtime_version() { return ""; }
bool cudnn_usable() { return false; }
std::string cudnn_version() { return ""; }
std::unique_ptr<Timeline> make_timeline(int) { no_cuda(); }
void synchronize(int) { no_cuda(); }
std::unique_ptr<Fence> record_fence(int) { no_cuda(); }
void reset_peak_memory(int) { no_cuda(); }
std::int64_t peak_memory_bytes(int) { no_cuda(); }
void release_cached_memory(int) { no_cuda(); }
AllocatorStats allocator_stats(int) { no_cuda(); }
std::unique_ptr<HeldMemory> hold_device_memory(int, std::int64_t) { no_cuda(); }
void profiler_start() {}
void profiler_stop() {}
std::unique_ptr<CapturedWork> capture_work(int, const std::function<void()>&, int) { no_cuda(); }
torch::Tensor data_parallel_forward(const std::shared_ptr<models::ClassifierImpl>&, const torch::Tensor&,
                                    const std::vector<torch::Device>&) {
  no_cuda();
}
void enable_aten_nvtx() {
  throw InputError("per-op NVTX ranges need a CUDA-enabled LibTorch (its profiler's NVTX mode); this one is CPU-only");
}
void disable_aten_nvtx() {}

}  // namespace torchprobe::backend::detail

namespace torchprobe::backend {

std::string nccl_unsupported_reason(const torch::Device&) {
  return "NCCL needs a CUDA-enabled LibTorch; this one is CPU-only (use the Gloo backend, --device cpu)";
}

c10::intrusive_ptr<CollectiveBackend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>&, int, int,
                                                        std::chrono::milliseconds) {
  throw InputError(nccl_unsupported_reason(torch::Device(torch::kCPU)));
}

}  // namespace torchprobe::backend
