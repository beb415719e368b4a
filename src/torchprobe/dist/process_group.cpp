#include "torchprobe/dist/process_group.h"

#include "torchprobe/device_spec.h"

#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "torchprobe/backend.h"
#include "torchprobe/backend_c10d.h"
#include "torchprobe/dist/agent_store.h"
#include "torchprobe/error.h"
#include "torchprobe/input_error.h"

namespace torchprobe::dist {
namespace {

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
std::string string_of(const std::vector<std::uint8_t>& b) { return {b.begin(), b.end()}; }

std::string seconds(std::chrono::milliseconds ms) { return fmt::format("{:.1f} s", static_cast<double>(ms.count()) / 1e3); }

using Clock = std::chrono::steady_clock;

/// What is left of the rendezvous' one deadline: at least 1 ms, since c10d reads a timeout of 0 as "none".
std::chrono::milliseconds left_until(Clock::time_point deadline) {
  return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                  std::chrono::milliseconds(1));
}

/// Runs `work` on a thread of its own and waits for it until `deadline`: its result, its exception, or
/// nothing when it is still running then. Past the deadline the thread is left blocked (LibTorch 2.x's
/// TCPStore constructor pings the server with a recv that has no timeout; 1.13's queries wait for their
/// answers without one; getaddrinfo can wait on a DNS server): it owns nothing of the caller's and ends
/// with the process. A thread that finished in time is joined, not left to wind down on its own: a rank 0
/// whose port was taken exits at once, and LeakSanitizer once reported 40 bytes of a detached thread
/// still unwinding at that exit (cli.hostile_dist's dist_rank0_port_taken, 1 of ~8 CI runs, 2026-11-27).
template <typename T>
std::optional<T> finish_by(std::function<T()> work, Clock::time_point deadline) {
  auto promise = std::make_shared<std::promise<T>>();
  auto future = promise->get_future();
  std::thread worker([promise, work = std::move(work)] {
    try {
      promise->set_value(work());
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  });
  if (future.wait_until(deadline) != std::future_status::ready) {
    worker.detach();
    return std::nullopt;
  }
  worker.join();  // it set its result last: it ends at once
  return future.get();
}

/// How long the checks after a missed deadline may take (whether anything listens, which ranks are
/// missing): the error comes this much after `--timeout` at most.
constexpr std::chrono::milliseconds kAfterDeadline{250};

/// Resolves MASTER_ADDR before anything connects to it, so a misspelt host is named as such rather
/// than as a store that does not answer. Within the deadline: a resolver can wait long on a DNS server.
void check_resolvable(const DistEnv& env, Clock::time_point deadline, std::chrono::milliseconds timeout) {
  const auto error = finish_by<std::string>(
      [host = env.master_addr, port = env.master_port] {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        addrinfo* found = nullptr;
        const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
        if (found != nullptr) freeaddrinfo(found);
        if (rc == EAI_SYSTEM) return std::string(std::strerror(errno));
        return rc == 0 ? std::string() : std::string(gai_strerror(rc));
      },
      deadline);
  if (!error) {
    throw std::runtime_error(fmt::format("could not resolve MASTER_ADDR {} within {} (is the DNS server reachable?)",
                                         env.master_addr, seconds(timeout)));
  }
  if (!error->empty()) {
    throw InputError(fmt::format("cannot resolve MASTER_ADDR {}: {} (it must name rank 0's host, as every rank resolves it)",
                                 env.master_addr, *error));
  }
}

/// Between attempts to connect to a store that refused the connection.
constexpr std::chrono::milliseconds kRetryPause{100};

/// Waits for every key until the deadline, a thousand at a time: a store takes a while to read one wait
/// for 100000 keys, and the wait's timeout starts only then.
void wait_all(c10d::Store& store, const std::vector<std::string>& keys, Clock::time_point deadline) {
  constexpr size_t kBatch = 1000;
  for (size_t i = 0; i < keys.size(); i += kBatch) {
    const auto end = keys.begin() + static_cast<std::ptrdiff_t>(std::min(keys.size(), i + kBatch));
    store.wait(std::vector<std::string>(keys.begin() + static_cast<std::ptrdiff_t>(i), end), left_until(deadline));
  }
}

/// `text` cut to `max` characters: c10d's messages can list every key a wait was for (one per rank).
std::string clipped(const std::string& text, size_t max = 200) {
  return text.size() <= max ? text : text.substr(0, max) + "...";
}

}  // namespace

std::string rank_list(const std::vector<int>& named, std::int64_t total) {
  const size_t shown = std::min(named.size(), kListedRanks);
  total = std::max(total, static_cast<std::int64_t>(shown));
  if (total == 0) return "no rank";
  if (shown == 0) return fmt::format("{} rank{}", total, total == 1 ? "" : "s");
  std::string out = total == 1 ? "rank " : "ranks ";
  const std::int64_t more = total - static_cast<std::int64_t>(shown);
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) out += i + 1 == shown && more == 0 ? " and " : ", ";
    out += std::to_string(named[i]);
  }
  if (more > 0) out += fmt::format(" and {} more", more);
  return out;
}

/// Where a rank runs, as it published itself in the store when it joined.
struct Peer {
  std::string host;
  long pid = 0;
  std::string describe() const { return fmt::format("pid {} on {}", pid, host); }
};

/// A rank's published "node7 123" (its host, a space, its process id).
Peer peer_of(const std::string& text) {
  const size_t space = text.rfind(' ');
  if (space == std::string::npos) return {text, 0};
  return {text.substr(0, space), std::atol(text.c_str() + space + 1)};
}

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

/// Whether something accepts a TCP connection at addr:port now (`wait` at most).
bool accepts_connections(const std::string& addr, int port, std::chrono::milliseconds wait) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || found == nullptr) return false;
  bool accepted = false;
  for (addrinfo* a = found; a != nullptr && !accepted; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      accepted = true;
    } else if (errno == EINPROGRESS) {
      pollfd pfd{fd, POLLOUT, 0};
      int error = 0;
      socklen_t length = sizeof error;
      accepted = poll(&pfd, 1, static_cast<int>(wait.count())) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0;
    }
    close(fd);
  }
  freeaddrinfo(found);
  return accepted;
}

std::string owner_key(int rank) { return fmt::format("torchprobe/rank_owner/{}", rank); }
std::string claims_key(int rank) { return fmt::format("torchprobe/rank_claims/{}", rank); }
std::string world_key(int rank) { return fmt::format("torchprobe/world_size/{}", rank); }
// How many ranks have published their WORLD_SIZE: the missing ones are counted, not scanned for.
const char* const kJoinedKey = "torchprobe/joined";
// The ranks a second process claimed, numbered from 1 (a list: scanning every rank's claims would
// take as long as the job is large).
const char* const kDuplicatesKey = "torchprobe/duplicates";

/// Takes this process's RANK in the store: one process per rank. A second process with the same RANK
/// (the same command started twice, two jobs on one MASTER_PORT, a launcher that repeats RANK) would
/// otherwise overwrite the first one's addresses and hang the group until the timeout.
void claim_rank(c10d::Store& store, const DistEnv& env, const std::string& who) {
  const std::string identity = fmt::format("{} {}", this_host(), getpid());
  if (store.add(claims_key(env.rank), 1) == 1) {
    store.set(owner_key(env.rank), bytes_of(identity));
    return;
  }
  const auto duplicate = store.add(kDuplicatesKey, 1);
  store.set(fmt::format("{}/{}", kDuplicatesKey, duplicate), bytes_of(std::to_string(env.rank)));
  std::string other = "another process";
  try {
    // The first one publishes who it is right after its claim.
    store.wait({owner_key(env.rank)}, std::chrono::seconds(1));
    other = peer_of(string_of(store.get(owner_key(env.rank)))).describe();
  } catch (const std::exception&) {
    // Not published (it stopped in between): "another process" it is.
  }
  throw InputError(fmt::format("{}: {} already joined as RANK={} at {}: each process of a job needs its own RANK (the "
                               "same command started twice, or two jobs sharing MASTER_PORT?)",
                               who, other, env.rank, env.endpoint()));
}

/// "; rank 1 was started 2 times" for every rank claimed by more than one process, the first
/// kListedRanks of them ("" when none).
std::string twice_started(c10d::Store& store) {
  const auto duplicates = store.add(kDuplicatesKey, 0);
  std::vector<int> ranks;
  for (std::int64_t i = 1; i <= duplicates && ranks.size() < kListedRanks; ++i) {
    const std::string key = fmt::format("{}/{}", kDuplicatesKey, i);
    if (!store.check({key})) continue;  // counted, then stopped before it said which rank
    const int rank = std::stoi(string_of(store.get(key)));
    if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) ranks.push_back(rank);
  }
  std::string out;
  for (const int r : ranks) out += fmt::format("; rank {} was started {} times", r, store.add(claims_key(r), 0));
  return out;
}

/// Which ranks have not published their WORLD_SIZE: all of them counted, the first kListedRanks named.
/// Throws when the store does not answer.
std::string missing_ranks(c10d::Store& store, const DistEnv& env) {
  const std::int64_t missing = env.world_size - store.add(kJoinedKey, 0);
  std::vector<int> named;
  const auto give_up = Clock::now() + kAfterDeadline;
  for (int r = 0; r < env.world_size && static_cast<std::int64_t>(named.size()) < std::min<std::int64_t>(missing, kListedRanks) &&
                  Clock::now() < give_up;
       ++r) {
    if (!store.check({world_key(r)})) named.push_back(r);
  }
  return rank_list(named, std::max<std::int64_t>(missing, static_cast<std::int64_t>(named.size())));
}

/// This host's address on the route to MASTER_ADDR: where the other ranks can reach this one. On one
/// host that is 127.0.0.1; across hosts (or network namespaces) the interface facing the master, not
/// whatever the host name resolves to. Falls back to MASTER_ADDR itself where there is no route.
std::string route_address(const std::string& master_addr) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  std::string out = master_addr == "localhost" ? "127.0.0.1" : master_addr;
  if (getaddrinfo(master_addr.c_str(), "9", &hints, &found) != 0 || found == nullptr) return out;
  const int fd = socket(found->ai_family, SOCK_DGRAM, 0);
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  char text[INET6_ADDRSTRLEN] = {};
  // A UDP connect sends nothing: it only asks the kernel which local address the route uses.
  if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
    const void* address = local.ss_family == AF_INET6 ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
                                                      : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
    if (inet_ntop(local.ss_family, address, text, sizeof text) != nullptr) out = text;
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  return out;
}

/// Gloo's transport devices: the interfaces in GLOO_SOCKET_IFNAME (comma-separated, as PyTorch reads
/// it), else this host's address on the route to MASTER_ADDR.
std::vector<std::shared_ptr<::gloo::transport::Device>> gloo_devices(const DistEnv& env) {
  std::vector<std::shared_ptr<::gloo::transport::Device>> out;
  const char* names = std::getenv("GLOO_SOCKET_IFNAME");
  if (names == nullptr || *names == '\0') {
    out.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(route_address(env.master_addr)));
    return out;
  }
  for (const auto& name : split(names, ',')) {
    try {
      out.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
    } catch (const std::exception& e) {
      throw InputError(fmt::format("GLOO_SOCKET_IFNAME={}: no usable interface '{}' on this host ({})", names, name,
                                   message_without_backtrace(e)));
    }
  }
  return out;
}

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;  ///< the TCPStore, under this attempt's prefix
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
    std::vector<int> gone_ranks, other_ranks;
    std::string gone, others;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);  // for all peers
    for (int r = 0; r < static_cast<int>(peers.size()); ++r) {
      if (r == env.rank) continue;
      const Peer& p = peers[static_cast<size_t>(r)];
      const bool local = p.host == host;
      const bool exited = local && p.pid > 0 && process_exited(p.pid, deadline);
      const std::string who = fmt::format("rank {} ({})", r, p.describe());
      // Named up to kListedRanks each, then counted: a job can have thousands of ranks.
      if (exited && gone_ranks.size() < kListedRanks) gone += (gone.empty() ? "" : ", ") + who;
      if (exited) gone_ranks.push_back(r);
      if (other_ranks.size() < kListedRanks) others += (others.empty() ? "" : ", ") + who + (local ? ", still running" : "");
      other_ranks.push_back(r);
    }
    if (gone_ranks.size() > kListedRanks) gone += fmt::format(" and {} more", gone_ranks.size() - kListedRanks);
    if (other_ranks.size() > kListedRanks) others += fmt::format(" and {} more", other_ranks.size() - kListedRanks);
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
  static const bool quiet = (backend::quiet_library_logs(), true);  // once: other ranks' threads may log meanwhile
  (void)quiet;
  // One deadline for the whole rendezvous: resolving, connecting, the handshake and every store wait.
  const auto deadline = Clock::now() + timeout;
  const auto left = [&] { return left_until(deadline); };
  const std::string who = fmt::format("rank {} of {}", env.rank, env.world_size);
  check_resolvable(env, deadline, timeout);
  const auto silent_store = [&](const std::string& detail) {
    return std::runtime_error(fmt::format("{}: the rendezvous store at {} does not answer as a c10d TCPStore within {} "
                                          "(is MASTER_PORT another program's port, or did rank 0 stop?): {}",
                                          who, env.endpoint(), seconds(timeout), clipped(detail)));
  };
  const bool host_store = env.rank == 0 && !env.agent_store;  // under torchrun its agent hosts it
  const auto unreachable = [&](const std::string& detail) {
    return std::runtime_error(fmt::format(
        "{}: {} the rendezvous store at {} within {} ({}): {}", who, host_store ? "could not host" : "could not reach",
        env.endpoint(), seconds(timeout),
        host_store        ? "is the port free (another job's rank 0 or another program may hold it) and MASTER_ADDR an address of this host?"
        : env.agent_store ? "is torchrun's agent on MASTER_ADDR still running?"
                          : "is rank 0 running, and are MASTER_ADDR and MASTER_PORT the same for every rank?",
        clipped(detail)));
  };
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(env.master_port);
  options.isServer = host_store;
  options.numWorkers = static_cast<std::size_t>(env.world_size);
  options.waitWorkers = false;  // membership is checked below, with a clear error
  options.timeout = left();     // how long the constructor retries a refused connection
  std::optional<c10::intrusive_ptr<c10d::Store>> store;
  try {
    store = finish_by<c10::intrusive_ptr<c10d::Store>>(
        // By value: past the deadline this runs on after the constructor has thrown.
        [addr = env.master_addr, port = env.master_port, agent = env.agent_store, options, deadline] {
          c10::intrusive_ptr<c10d::Store> made;
          for (auto attempt = options;; attempt.timeout = left_until(deadline)) {
            try {
              if (agent) {
                made = connect_agent_store(addr, port, attempt.timeout);
              } else {
                made = c10::make_intrusive<c10d::TCPStore>(addr, attempt);
              }
              break;
            } catch (const std::exception&) {
              // LibTorch 1.13's client gives up on a refused connection up to a second before its timeout:
              // a rank 0 that starts late still has the rest of the deadline. A port rank 0 cannot take stays taken.
              if (attempt.isServer || Clock::now() + kRetryPause >= deadline) throw;
              std::this_thread::sleep_for(kRetryPause);
            }
          }
          // One round trip with an answer, inside the deadline: LibTorch 1.13's client connects to anything
          // and its queries with answers (add, check) wait for them without a timeout.
          made->check({"torchprobe/handshake"});
          return made;
        },
        deadline);
  } catch (const std::exception& e) {
    // A client that connected and then failed (LibTorch 2.x's handshake has timeouts of its own) met a
    // program that is not a store, or a store that went away.
    if (!host_store && accepts_connections(env.master_addr, env.master_port, kAfterDeadline)) {
      throw silent_store(message_without_backtrace(e));
    }
    throw unreachable(message_without_backtrace(e));
  }
  if (!store) {
    // Past the deadline: silent if something accepts connections there, unreachable if nothing does
    // (LibTorch 2.x's constructor retries with random back-off and can outlast the deadline).
    if (accepts_connections(env.master_addr, env.master_port, kAfterDeadline)) {
      throw silent_store("no answer to the store's handshake");
    }
    throw unreachable("nothing accepts connections there");
  }
  // Every key under this attempt's prefix: torchrun's agent keeps its store across restarts, and
  // a restarted group must not read the failed attempt's addresses and membership.
  impl_->store = c10::make_intrusive<c10d::PrefixStore>(fmt::format("torchprobe/attempt_{}", env.restart_count),
                                                        std::move(*store));
  try {
    claim_rank(*impl_->store, env, who);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw silent_store(message_without_backtrace(e));
  }
  // Every rank publishes its WORLD_SIZE; each compares with rank 0's, and rank 0 with everyone's.
  impl_->store->set(world_key(env.rank), bytes_of(std::to_string(env.world_size)));
  impl_->store->add(kJoinedKey, 1);
  const auto world_of = [&](int rank) { return std::stoi(string_of(impl_->store->get(world_key(rank)))); };
  // Rank 0 hosts the store: it waits until every rank has read its WORLD_SIZE before it goes on or
  // throws, so a peer sees the mismatch message rather than a broken pipe from a vanished store.
  const auto checked_key = [](int rank) { return fmt::format("torchprobe/world_size_checked/{}", rank); };
  try {
    if (env.rank == 0) {
      std::vector<std::string> keys, checked;
      for (int r = 1; r < env.world_size; ++r) keys.push_back(world_key(r));
      for (int r = 1; r < env.world_size; ++r) checked.push_back(checked_key(r));
      wait_all(*impl_->store, keys, deadline);
      std::string mismatch;
      for (int r = 1; r < env.world_size && mismatch.empty(); ++r) {
        if (world_of(r) != env.world_size) {
          mismatch = fmt::format("WORLD_SIZE mismatch: rank 0 was started with {} and rank {} with {}", env.world_size,
                                 r, world_of(r));
        }
      }
      wait_all(*impl_->store, checked, deadline);
      if (!mismatch.empty()) throw InputError(mismatch);
    } else {
      impl_->store->wait({world_key(0)}, left());
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
    std::string missing, twice;
    try {
      missing = missing_ranks(*impl_->store, env);
      twice = twice_started(*impl_->store);
    } catch (const std::exception&) {
      // The store does not answer at all: not a c10d store, or its host went away.
      throw silent_store(message_without_backtrace(e));
    }
    throw std::runtime_error(
        fmt::format("{}: not every rank joined at {} within {} (missing: {}; not started, "
                    "or started with another MASTER_ADDR/MASTER_PORT?{}): {}",
                    who, env.endpoint(), seconds(timeout), missing, twice, clipped(message_without_backtrace(e))));
  }
  // Where each rank runs (published when it claimed its rank), so a failure later can name the rank that went away.
  try {
    for (int r = 0; r < env.world_size; ++r) {
      const std::string key = owner_key(r);
      impl_->store->wait({key}, left());
      impl_->peers.push_back(peer_of(string_of(impl_->store->get(key))));
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: the ranks joined at {} but one went away before they all started: {}",
                                         who, env.endpoint(), clipped(message_without_backtrace(e))));
  }
  // The collectives' own timeout is the whole of --timeout: it bounds each collective from here on.
  if (device_.is_cuda()) {
    impl_->collectives = backend::make_nccl_backend(impl_->store, env.rank, env.world_size, timeout);
    return;
  }
  auto gloo_options = c10d::ProcessGroupGloo::Options::create();
  gloo_options->timeout = timeout;
  gloo_options->devices = gloo_devices(env);
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
    throw std::runtime_error(impl_->explain(env_, what, message_without_backtrace(e)));
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
      throw std::runtime_error(
          fmt::format("rank {} of {}: rank 0 stopped while the others waited for its "
                      "single-process run (see rank 0's output): {}",
                      env_.rank, env_.world_size, message_without_backtrace(e)));
    }
  }
  barrier();
}

}  // namespace torchprobe::dist
