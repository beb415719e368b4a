#include "torchprobe/dist/process_group.h"

#include "torchprobe/device_spec.h"

#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "torchprobe/backend.h"
#include "torchprobe/backend_c10d.h"
#include "torchprobe/input_error.h"

namespace torchprobe::dist {
namespace {

const char* kTorchrunVariables = "torchrun sets MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE and LOCAL_RANK";

int integer_variable(const std::function<const char*(const char*)>& get, const char* name, int min, int max,
                     std::optional<int> fallback) {
  const char* text = get(name);
  if (text == nullptr || *text == '\0') {
    if (fallback) return *fallback;
    throw InputError(fmt::format("{} is not set ({}; scripts/launch.sh N does too)", name, kTorchrunVariables));
  }
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < min || value > max) {
    throw InputError(fmt::format("{}={} is not an integer in [{}, {}]", name, text, min, max));
  }
  return static_cast<int>(value);
}

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
std::string string_of(const std::vector<std::uint8_t>& b) { return {b.begin(), b.end()}; }

/// c10::Error's message without LibTorch's C++ backtrace.
std::string message_of(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

std::string seconds(std::chrono::milliseconds ms) { return fmt::format("{:.1f} s", static_cast<double>(ms.count()) / 1e3); }

// Thrown when the peer at MASTER_PORT accepted the connection but never answered the store's handshake.
struct StoreSilent : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Connects to (or hosts) the TCPStore with a deadline. LibTorch 2.x pings the server from the
// constructor with a blocking recv that has no timeout: a program on MASTER_PORT that accepts the
// connection and never answers (an HTTP server, a stopped rank 0) would hang the rank for ever. The
// constructor runs on its own thread; past the deadline that thread is left blocked (it owns nothing
// of ours and ends with the process) and the caller gets StoreSilent.
c10::intrusive_ptr<c10d::TCPStore> connect_store(const std::string& addr, const c10d::TCPStoreOptions& options,
                                                 std::chrono::milliseconds timeout) {
  auto promise = std::make_shared<std::promise<c10::intrusive_ptr<c10d::TCPStore>>>();
  auto future = promise->get_future();
  std::thread([promise, addr, options] {
    try {
      promise->set_value(c10::make_intrusive<c10d::TCPStore>(addr, options));
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  }).detach();
  // The constructor retries the connection itself for up to `timeout`; the handshake after it gets as long.
  if (future.wait_for(2 * timeout + std::chrono::seconds(1)) != std::future_status::ready) {
    throw StoreSilent("no answer to the store's handshake");
  }
  return future.get();
}

}  // namespace

DistEnv env_from(const std::function<const char*(const char*)>& get) {
  DistEnv env;
  const char* addr = get("MASTER_ADDR");
  if (addr == nullptr || *addr == '\0') {
    throw InputError(fmt::format("MASTER_ADDR is not set ({}; scripts/launch.sh N does too)", kTorchrunVariables));
  }
  env.master_addr = addr;
  env.master_port = integer_variable(get, "MASTER_PORT", 1, 65535, std::nullopt);
  env.world_size = integer_variable(get, "WORLD_SIZE", 1, 1 << 20, std::nullopt);
  env.rank = integer_variable(get, "RANK", 0, env.world_size - 1, std::nullopt);
  env.local_rank = integer_variable(get, "LOCAL_RANK", 0, 1 << 20, env.rank);
  return env;
}

DistEnv env_from_environment() { return env_from([](const char* name) { return std::getenv(name); }); }

torch::Device rank_device(const DistEnv& env, const std::string& text) {
  const int count = backend::cuda_device_count();
  if (text == "cuda" && count > 0 && env.local_rank >= count) {
    throw InputError(fmt::format("LOCAL_RANK={} but this host has {} CUDA device{}: start at most {} rank{} per host",
                                 env.local_rank, count, count == 1 ? "" : "s", count, count == 1 ? "" : "s"));
  }
  DeviceQuery query;
  query.list = false;
  query.cuda_index = env.local_rank;
  return parse_devices(text, query).front();
}

/// Where a rank runs, as it published itself in the store when it joined.
struct Peer {
  std::string host;
  long pid = 0;
};

/// Whether a process on this host has exited: gone, or a zombie its parent has not reaped yet. A peer
/// killed a moment ago may still be tearing down (its sockets close before it becomes a zombie), so
/// this waits until `deadline` for it to finish.
bool process_exited(long pid, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
    std::ifstream stat(fmt::format("/proc/{}/stat", pid));
    std::string line;
    if (std::getline(stat, line)) {
      const size_t paren = line.rfind(')');  // the command name may hold spaces and parentheses
      if (paren != std::string::npos && paren + 2 < line.size() && (line[paren + 2] == 'Z' || line[paren + 2] == 'X')) {
        return true;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string this_host() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::TCPStore> store;
  c10::intrusive_ptr<backend::CollectiveBackend> collectives;
  std::vector<Peer> peers;  ///< by rank

  backend::CollectiveBackend& live() const {
    if (!collectives) throw std::logic_error("ProcessGroup: a collective after shutdown()");
    return *collectives;
  }

  /// A collective failed (Gloo: "Connection reset by peer [127.0.0.1]:4123"; NCCL: a timeout): which peer
  /// is gone, where known. Ranks on this host are checked by their process ids.
  std::string explain(const DistEnv& env, const std::string& what, const std::string& message) const {
    const std::string host = this_host();
    std::string gone, others;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);  // for all peers
    for (int r = 0; r < static_cast<int>(peers.size()); ++r) {
      if (r == env.rank) continue;
      const Peer& p = peers[static_cast<size_t>(r)];
      const bool local = p.host == host;
      const bool exited = local && p.pid > 0 && process_exited(p.pid, deadline);
      const std::string who = fmt::format("rank {} (pid {} on {})", r, p.pid, p.host);
      if (exited) gone += (gone.empty() ? "" : ", ") + who;
      others += (others.empty() ? "" : ", ") + who + (local ? ", still running" : "");
    }
    const std::string cause = !gone.empty() ? fmt::format("{} exited or was killed: see its output", gone)
                                            : fmt::format("a peer went away, stalled or cannot be reached (the other ranks: "
                                                          "{}; the rendezvous store: {})",
                                                          others.empty() ? "none" : others, env.endpoint());
    return fmt::format("rank {} of {} (pid {} on {}): {} failed: {}; {}", env.rank, env.world_size, getpid(), host, what,
                       message, cause);
  }
};

ProcessGroup::ProcessGroup(const DistEnv& env, std::chrono::milliseconds timeout, torch::Device device)
    : env_(env), device_(device), impl_(new Impl) {
  if (device_.is_cuda()) {
    const std::string reason = backend::nccl_unsupported_reason(device_);
    if (!reason.empty()) throw InputError(reason);
  }
  const std::string who = fmt::format("rank {} of {}", env.rank, env.world_size);
  const auto silent_store = [&](const std::string& detail) {
    return std::runtime_error(fmt::format("{}: the rendezvous store at {} does not answer as a c10d TCPStore within {} "
                                          "(is MASTER_PORT another program's port, or did rank 0 stop?): {}",
                                          who, env.endpoint(), seconds(timeout), detail));
  };
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(env.master_port);
  options.isServer = env.rank == 0;
  options.numWorkers = static_cast<std::size_t>(env.world_size);
  options.waitWorkers = false;  // membership is checked below, with a clear error
  options.timeout = timeout;
  try {
    impl_->store = connect_store(env.master_addr, options, timeout);
  } catch (const StoreSilent& e) {
    throw silent_store(e.what());
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format(
        "{}: {} the rendezvous store at {} within {} ({}): {}", who,
        env.rank == 0 ? "could not host" : "could not reach", env.endpoint(), seconds(timeout),
        env.rank == 0 ? "is the port free and MASTER_ADDR an address of this host?"
                      : "is rank 0 running, and are MASTER_ADDR and MASTER_PORT the same for every rank?",
        message_of(e)));
  }
  // Every rank publishes its WORLD_SIZE; each compares with rank 0's, and rank 0 with everyone's.
  impl_->store->set(fmt::format("torchprobe/world_size/{}", env.rank), bytes_of(std::to_string(env.world_size)));
  const auto world_of = [&](int rank) {
    return std::stoi(string_of(impl_->store->get(fmt::format("torchprobe/world_size/{}", rank))));
  };
  // Rank 0 hosts the store: it waits until every rank has read its WORLD_SIZE before it goes on or
  // throws, so a peer sees the mismatch message rather than a broken pipe from a vanished store.
  const auto checked_key = [](int rank) { return fmt::format("torchprobe/world_size_checked/{}", rank); };
  try {
    if (env.rank == 0) {
      std::vector<std::string> keys, checked;
      for (int r = 1; r < env.world_size; ++r) keys.push_back(fmt::format("torchprobe/world_size/{}", r));
      for (int r = 1; r < env.world_size; ++r) checked.push_back(checked_key(r));
      if (!keys.empty()) impl_->store->wait(keys, timeout);
      std::string mismatch;
      for (int r = 1; r < env.world_size && mismatch.empty(); ++r) {
        if (world_of(r) != env.world_size) {
          mismatch = fmt::format("WORLD_SIZE mismatch: rank 0 was started with {} and rank {} with {}", env.world_size,
                                 r, world_of(r));
        }
      }
      if (!checked.empty()) impl_->store->wait(checked, timeout);
      if (!mismatch.empty()) throw InputError(mismatch);
    } else {
      impl_->store->wait({"torchprobe/world_size/0"}, timeout);
      const int world_of_0 = world_of(0);
      impl_->store->set(checked_key(env.rank), bytes_of("1"));
      if (world_of_0 != env.world_size) {
        throw InputError(fmt::format("WORLD_SIZE mismatch: rank {} was started with {} and rank 0 with {}", env.rank,
                                     env.world_size, world_of_0));
      }
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    std::string missing;
    try {
      for (int r = 0; r < env.world_size; ++r) {
        if (!impl_->store->check({fmt::format("torchprobe/world_size/{}", r)})) {
          missing += fmt::format("{}{}", missing.empty() ? "" : ", ", r);
        }
      }
    } catch (const std::exception&) {
      // The store does not answer at all: not a c10d store, or its host went away.
      throw silent_store(message_of(e));
    }
    throw std::runtime_error(fmt::format("{}: not every rank joined at {} within {} (missing: rank {}; not started, "
                                         "or started with another MASTER_ADDR/MASTER_PORT?): {}", who, env.endpoint(),
                                         seconds(timeout), missing.empty() ? "?" : missing, message_of(e)));
  }
  // Each rank says where it runs, so a failure later can name the rank that went away.
  try {
    impl_->store->set(fmt::format("torchprobe/peer/{}", env.rank), bytes_of(fmt::format("{} {}", this_host(), getpid())));
    for (int r = 0; r < env.world_size; ++r) {
      const std::string key = fmt::format("torchprobe/peer/{}", r);
      impl_->store->wait({key}, timeout);
      const std::string text = string_of(impl_->store->get(key));
      const size_t space = text.rfind(' ');
      impl_->peers.push_back({text.substr(0, space), space == std::string::npos ? 0 : std::atol(text.c_str() + space + 1)});
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: the ranks joined at {} but one went away before they all started: {}", who,
                                         env.endpoint(), message_of(e)));
  }
  if (device_.is_cuda()) {
    impl_->collectives = backend::make_nccl_backend(impl_->store, env.rank, env.world_size, timeout);
    return;
  }
  auto gloo_options = c10d::ProcessGroupGloo::Options::create();
  gloo_options->timeout = timeout;
  gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(env.master_addr == "localhost" ? "127.0.0.1" : env.master_addr));
  impl_->collectives = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, env.rank, env.world_size, gloo_options);
}

void ProcessGroup::guarded(const std::string& what, const std::function<void()>& collective) {
  try {
    collective();
  } catch (const InputError&) {
    throw;
  } catch (const std::logic_error&) {
    throw;
  } catch (const std::exception& e) {
    throw std::runtime_error(impl_->explain(env_, what, message_of(e)));
  }
}

std::string ProcessGroup::backend_name() const { return device_.is_cuda() ? "nccl" : "gloo"; }

ProcessGroup::~ProcessGroup() = default;

int ProcessGroup::average_(torch::Tensor& flat, std::int64_t bucket_bytes) {
  if (flat.dim() != 1 || !flat.is_contiguous()) throw std::invalid_argument("average_: expected a contiguous 1-D tensor");
  if (bucket_bytes < flat.element_size()) throw InputError(fmt::format("bucket size {} B is below one element", bucket_bytes));
  const std::int64_t per_bucket = bucket_bytes / flat.element_size();
  std::vector<std::vector<at::Tensor>> buckets;
  std::vector<c10::intrusive_ptr<c10d::Work>> pending;
  for (std::int64_t start = 0; start < flat.numel(); start += per_bucket) {
    buckets.push_back({flat.narrow(0, start, std::min(per_bucket, flat.numel() - start))});
    guarded("the gradient all-reduce", [&] { pending.push_back(impl_->live().allreduce(buckets.back())); });
  }
  guarded("the gradient all-reduce", [&] {
    for (auto& work : pending) work->wait();
  });
  flat.div_(env_.world_size);
  return static_cast<int>(pending.size());
}

void ProcessGroup::all_reduce_sum_(torch::Tensor& tensor) {
  std::vector<at::Tensor> tensors = {tensor};
  guarded("an all-reduce", [&] { impl_->live().allreduce(tensors)->wait(); });
}

void ProcessGroup::broadcast_(torch::Tensor& tensor, int root) {
  std::vector<at::Tensor> tensors = {tensor};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  guarded("a broadcast", [&] { impl_->live().broadcast(tensors, options)->wait(); });
}

void ProcessGroup::barrier() {
  if (!device_.is_cuda()) {
    guarded("a barrier", [&] { impl_->live().barrier()->wait(); });
    return;
  }
  // NCCL has no barrier of its own (c10d's guesses a device per rank): a one-element all-reduce
  // on this rank's device, waited for by the host.
  torch::Tensor token = torch::zeros({1}, torch::TensorOptions().device(device_));
  all_reduce_sum_(token);
  backend::synchronize(device_);
}

void ProcessGroup::shutdown() {
  if (!impl_->collectives) return;
  backend::shutdown_backend(*impl_->collectives);
  impl_->collectives.reset();
}

void ProcessGroup::run_on_rank0_alone(const std::function<void()>& work) {
  const std::string done = fmt::format("torchprobe/rank0_alone_done/{}", alone_rounds_++);
  if (env_.rank == 0) {
    work();
    impl_->store->set(done, bytes_of("1"));
  } else {
    try {
      impl_->store->wait({done}, kAloneWait);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("rank {} of {}: rank 0 stopped while the others waited for its "
                                           "single-process run (see rank 0's output): {}",
                                           env_.rank, env_.world_size, message_of(e)));
    }
  }
  barrier();
}

}  // namespace torchprobe::dist
