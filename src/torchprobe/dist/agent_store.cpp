#include "torchprobe/dist/agent_store.h"

#include <fmt/format.h>
#include <torch/version.h>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif

namespace torchprobe::dist {

#if TORCH_VERSION_MAJOR >= 2
c10::intrusive_ptr<c10d::Store> connect_agent_store(const std::string& host, int port, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(port);
  options.isServer = false;
  options.waitWorkers = false;
  options.timeout = timeout;
  return c10::make_intrusive<c10d::TCPStore>(host, options);
}
#else
namespace {

// TCPStore's 2.x wire protocol (torch/csrc/distributed/c10d/TCPStoreBackend.hpp): a query code, then
// values in host byte order, strings and byte vectors as a uint64 length and the bytes.
enum class Query : std::uint8_t { kValidate = 0, kSet, kCompareSet, kGet, kAdd, kCheck, kWait, kGetNumKeys, kDeleteKey,
                                  kAppend, kMultiGet, kMultiSet, kCancelWait, kPing };
constexpr std::uint32_t kValidationMagic = 0x3C85F7CE;
constexpr std::uint8_t kReady = 0;         // CheckResponseType::READY
constexpr std::uint8_t kStopWaiting = 0;   // WaitResponseType::STOP_WAITING
constexpr std::uint8_t kWaitCanceled = 1;  // WaitResponseType::WAIT_CANCELED

using Clock = std::chrono::steady_clock;

class Torch2StoreClient final : public c10d::Store {
 public:
  Torch2StoreClient(const std::string& host, int port, std::chrono::milliseconds timeout) : c10d::Store(timeout) {
    endpoint_ = fmt::format("{}:{}", host, port);
    connect_socket(host, port, timeout);
    std::lock_guard<std::mutex> lock(mutex_);
    begin(Query::kValidate);
    put_value(kValidationMagic);
    flush();
    const auto nonce = static_cast<std::uint32_t>(getpid());
    begin(Query::kPing);
    put_value(nonce);
    flush();
    if (get_value<std::uint32_t>() != nonce) throw std::runtime_error(fmt::format("{}: the store's ping answer is wrong", endpoint_));
  }
  ~Torch2StoreClient() override {
    if (fd_ >= 0) ::close(fd_);
  }

  void set(const std::string& key, const std::vector<std::uint8_t>& value) override {
    std::lock_guard<std::mutex> lock(mutex_);
    begin(Query::kSet);
    put_string(key);
    put_bytes(value);
    flush();
  }
  std::vector<std::uint8_t> get(const std::string& key) override {
    wait({key}, timeout_);
    std::lock_guard<std::mutex> lock(mutex_);
    begin(Query::kGet);
    put_string(key);
    flush();
    return get_bytes();
  }
  std::int64_t add(const std::string& key, std::int64_t value) override {
    std::lock_guard<std::mutex> lock(mutex_);
    begin(Query::kAdd);
    put_string(key);
    put_value(value);
    flush();
    return get_value<std::int64_t>();
  }
  bool deleteKey(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mutex_);
    begin(Query::kDeleteKey);
    put_string(key);
    flush();
    return get_value<std::int64_t>() == 1;
  }
  bool check(const std::vector<std::string>& keys) override {
    std::lock_guard<std::mutex> lock(mutex_);
    begin(Query::kCheck);
    put_keys(keys);
    flush();
    return get_value<std::uint8_t>() == kReady;
  }
  std::int64_t getNumKeys() override {
    std::lock_guard<std::mutex> lock(mutex_);
    begin(Query::kGetNumKeys);
    flush();
    return get_value<std::int64_t>();
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    std::lock_guard<std::mutex> lock(mutex_);
    begin(Query::kWait);
    put_keys(keys);
    flush();
    std::uint8_t answer = 0;
    if (receive(&answer, 1, timeout, /*throw_on_timeout=*/false)) {
      if (answer != kStopWaiting) throw std::runtime_error(fmt::format("{}: unexpected answer {} to a wait", endpoint_, answer));
      return;
    }
    // Timed out: cancel the wait as c10d's client does; the server may have answered just before.
    begin(Query::kCancelWait);
    flush();
    answer = get_value<std::uint8_t>();
    if (answer == kStopWaiting) answer = get_value<std::uint8_t>();
    if (answer != kWaitCanceled) throw std::runtime_error(fmt::format("{}: unexpected answer {} to a cancelled wait", endpoint_, answer));
    std::string names;
    for (const auto& k : keys) names += (names.empty() ? "" : ", ") + k;
    throw std::runtime_error(fmt::format("wait timeout after {} ms, keys: {}", timeout.count(), names));
  }

 private:
  void connect_socket(const std::string& host, int port, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    std::string last = "no address";
    for (;;) {
      addrinfo* found = nullptr;
      const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
      if (rc != 0) {
        last = gai_strerror(rc);
      } else {
        for (addrinfo* a = found; a != nullptr && fd_ < 0; a = a->ai_next) {
          const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
          if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
            fd_ = fd;
          } else {
            last = std::strerror(errno);
            if (fd >= 0) ::close(fd);
          }
        }
        freeaddrinfo(found);
      }
      if (fd_ >= 0) return;
      if (Clock::now() >= deadline) throw std::runtime_error(fmt::format("cannot connect to {}: {}", endpoint_, last));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  void begin(Query query) { out_.assign(1, static_cast<std::uint8_t>(query)); }
  template <typename T>
  void put_value(T value) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&value);
    out_.insert(out_.end(), p, p + sizeof value);
  }
  void put_bytes(const std::vector<std::uint8_t>& bytes) {
    put_value<std::uint64_t>(bytes.size());
    out_.insert(out_.end(), bytes.begin(), bytes.end());
  }
  void put_string(const std::string& s) { put_bytes({s.begin(), s.end()}); }
  void put_keys(const std::vector<std::string>& keys) {
    put_value<std::uint64_t>(keys.size());
    for (const auto& k : keys) put_string(k);
  }
  void flush() {
    size_t sent = 0;
    while (sent < out_.size()) {
      const ssize_t n = ::send(fd_, out_.data() + sent, out_.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error(fmt::format("{}: sending to the store failed: {}", endpoint_, std::strerror(errno)));
      sent += static_cast<size_t>(n);
    }
  }
  /// Reads exactly `size` bytes within `timeout`. On a timeout: throws, or returns false (nothing read yet).
  bool receive(void* data, size_t size, std::chrono::milliseconds timeout, bool throw_on_timeout = true) {
    auto* p = static_cast<std::uint8_t*>(data);
    const auto deadline = Clock::now() + timeout;
    size_t got = 0;
    while (got < size) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd pfd{fd_, POLLIN, 0};
      const int ready = left > 0 ? ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 1 << 30))) : 0;
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        if (!throw_on_timeout && got == 0) return false;
        throw std::runtime_error(fmt::format("{}: no answer from the store within {} ms", endpoint_, timeout.count()));
      }
      const ssize_t n = ::recv(fd_, p + got, size - got, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        throw std::runtime_error(fmt::format("{}: the store closed the connection{}", endpoint_,
                                             n < 0 ? std::string(": ") + std::strerror(errno) : std::string()));
      }
      got += static_cast<size_t>(n);
    }
    return true;
  }
  template <typename T>
  T get_value() {
    T value{};
    receive(&value, sizeof value, timeout_);
    return value;
  }
  std::vector<std::uint8_t> get_bytes() {
    const auto size = get_value<std::uint64_t>();
    if (size > (std::uint64_t{1} << 32)) throw std::runtime_error(fmt::format("{}: a {} B value from the store", endpoint_, size));
    std::vector<std::uint8_t> bytes(static_cast<size_t>(size));
    if (size > 0) receive(bytes.data(), bytes.size(), timeout_);
    return bytes;
  }

  std::string endpoint_;
  int fd_ = -1;
  std::mutex mutex_;
  std::vector<std::uint8_t> out_;
};

}  // namespace

c10::intrusive_ptr<c10d::Store> connect_agent_store(const std::string& host, int port, std::chrono::milliseconds timeout) {
  return c10::make_intrusive<Torch2StoreClient>(host, port, timeout);
}
#endif

}  // namespace torchprobe::dist
