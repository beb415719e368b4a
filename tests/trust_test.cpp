#include "torchprobe/trust.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

using namespace torchprobe;

namespace {

// A child process that spins on a core until killed.
class SpinningChild {
 public:
  SpinningChild() : pid_(fork()) {
    if (pid_ == 0) {
      volatile unsigned long n = 0;
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);  // never outlives a stuck test
      while (std::chrono::steady_clock::now() < end) n = n + 1;
      _exit(0);
    }
  }
  ~SpinningChild() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

}  // namespace

TEST(Trust, ABusyProcessIsFoundAndNamed) {
  SpinningChild child;
  ASSERT_GT(child.pid(), 0);
  const auto busy = trust::busy_processes(/*window_s=*/0.5, /*min_cpu_pct=*/10.0);
  const auto it = std::find_if(busy.begin(), busy.end(), [&](const trust::BusyProcess& p) { return p.pid == child.pid(); });
  ASSERT_NE(it, busy.end()) << "the spinning child was not seen";
  EXPECT_GE(it->cpu_pct, 10.0);
  EXPECT_FALSE(it->command.empty());
  for (const auto& p : busy) EXPECT_NE(p.pid, getpid()) << "this process is not 'other'";

  const auto warnings = trust::host_warnings(current_threads(), /*window_s=*/0.5);
  const auto w = std::find_if(warnings.begin(), warnings.end(), [](const trust::Warning& x) { return x.code == "busy_processes"; });
  ASSERT_NE(w, warnings.end());
  EXPECT_NE(w->message.find("pid " + std::to_string(child.pid())), std::string::npos) << w->message;
  EXPECT_NE(w->message.find("run on a quiet host"), std::string::npos);
}

TEST(Trust, WarningsTravelAsJson) {
  const std::vector<trust::Warning> warnings = {{"cpu_governor", "governor powersave: set performance"},
                                                {"busy_processes", "quote \" and backslash \\"}};
  const auto doc = nlohmann::json::parse(trust::warnings_json(warnings));
  ASSERT_EQ(doc.size(), 2u);
  EXPECT_EQ(doc[0]["code"], "cpu_governor");
  EXPECT_EQ(doc[1]["message"], "quote \" and backslash \\");
  EXPECT_EQ(trust::warnings_json({}), "[]");
}
