#pragma once
// The device seam's c10d part: the collective backend for CUDA tensors (NCCL) exists only in CUDA
// builds of LibTorch, and the collectives' base class differs between versions (1.13:
// c10d::ProcessGroup; 2.x: c10d::Backend, which ProcessGroupGloo and ProcessGroupNCCL derive from).
// The store's wire protocol differs too: dist/agent_store.h connects to torchrun's agent store either way.
// Implemented in backend_cuda.cpp / backend_nocuda.cpp; included only by the dist code.
#include <chrono>
#include <string>

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/types.h>
#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace torchprobe::backend {

#if TORCH_VERSION_MAJOR >= 2
using CollectiveBackend = c10d::Backend;
#else
using CollectiveBackend = c10d::ProcessGroup;
#endif

/// Why NCCL collectives cannot run on `device` in this build ("" when they can): NCCL reduces
/// CUDA tensors only, and needs a CUDA LibTorch built with NCCL and its nccl.h at build time.
std::string nccl_unsupported_reason(const torch::Device& device);

/// c10d's ProcessGroupNCCL joined through `store`, with `timeout` for every collective.
/// Throws InputError with nccl_unsupported_reason() where NCCL is not available.
c10::intrusive_ptr<CollectiveBackend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                        int world_size, std::chrono::milliseconds timeout);

/// Flushes the backend's pending collectives and frees its communicators, as Python's
/// destroy_process_group() does; without it ProcessGroupNCCL aborts them in its destructor and
/// warns that destroy_process_group() was not called. Gloo has nothing to flush. LibTorch before
/// 2.6 has no Backend::shutdown: there it is a no-op.
inline void shutdown_backend(CollectiveBackend& collectives) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
  collectives.shutdown();
#else
  (void)collectives;
#endif
}

}  // namespace torchprobe::backend
