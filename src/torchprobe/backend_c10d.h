#pragma once
// The device seam's c10d part: the collective backend for CUDA tensors (NCCL) exists only in CUDA
// builds of LibTorch, and the collectives' base class differs between versions (1.13:
// c10d::ProcessGroup; 2.x: c10d::Backend, which ProcessGroupGloo and ProcessGroupNCCL derive from).
// The store's wire protocol differs too: dist/agent_store.h connects to torchrun's agent store either way.
// And the logger: glog in Debian's build, c10's own in the wheels (quiet_library_logs()).
// Implemented in backend_cuda.cpp / backend_nocuda.cpp; included only by the dist code.
#include <chrono>
#include <cstdlib>
#include <string>

#include <c10/util/Logging.h>
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

/// Turns LibTorch's own log lines below FATAL off for the rest of the process: c10d's ("[c10d] The server
/// socket has failed to bind", the client's retries) and, where LibTorch logs through glog (Debian's 1.13),
/// glog's ("WARNING: Logging before InitGoogleLogging()"). The dist errors carry their cause in one line of
/// our own. Left alone where the user asked for LibTorch's logs (TORCH_CPP_LOG_LEVEL or GLOG_minloglevel set).
inline void quiet_library_logs() {
  for (const char* asked : {"TORCH_CPP_LOG_LEVEL", "GLOG_minloglevel"}) {
    if (const char* value = std::getenv(asked); value != nullptr && *value != '\0') return;
  }
  constexpr int kFatal = 3;  // c10's and glog's severity numbers agree: INFO 0, WARNING 1, ERROR 2, FATAL 3
  FLAGS_caffe2_log_level = kFatal;  // c10d's C10D_WARNING/C10D_ERROR, and c10's LOG without glog
#ifdef C10_USE_GLOG
  FLAGS_minloglevel = kFatal;
#endif
}

}  // namespace torchprobe::backend
