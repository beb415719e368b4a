// The base library: flags read at parse time, files and file sets replaced whole, stop requests,
// child processes.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_util.h"
#include "torchprobe/flags.h"
#include "torchprobe/input_error.h"
#include "torchprobe/interrupt.h"
#include "torchprobe/io.h"
#include "torchprobe/subprocess.h"

namespace {

using torchprobe::InputError;
namespace fs = std::filesystem;
namespace io = torchprobe::io;
namespace subprocess = torchprobe::subprocess;
namespace interrupt = torchprobe::interrupt;

std::string slurp(const fs::path& p) { return io::read_text_file(p.string()); }

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Flags, IntegerListsAreCheckedItemByItem) {
  using torchprobe::int_list_flag;
  EXPECT_EQ(int_list_flag("--batch-sizes", "4,64,256", 1, 65536), (std::vector<std::int64_t>{4, 64, 256}));
  EXPECT_EQ(int_list_flag("--batch-sizes", "+8", 1, 65536), (std::vector<std::int64_t>{8}));
  EXPECT_THROW_WITH(int_list_flag("--batch-sizes", "-1", 1, 65536), InputError, "--batch-sizes: -1 is out of range (1 to 65536)");
  EXPECT_THROW_WITH(int_list_flag("--batch-sizes", "0", 1, 65536), InputError, "0 is out of range");
  EXPECT_THROW_WITH(int_list_flag("--batch-sizes", "99999999999", 1, 65536), InputError, "99999999999 is out of range");
  EXPECT_THROW_WITH(int_list_flag("--batch-sizes", "99999999999999999999999", 1, 65536), InputError, "out of range");
  EXPECT_THROW_WITH(int_list_flag("--batch-sizes", "", 1, 65536), InputError, "--batch-sizes: empty list");
  EXPECT_THROW_WITH(int_list_flag("--batch-sizes", "4,,4", 1, 65536), InputError, "empty item in '4,,4'");
  EXPECT_THROW_WITH(int_list_flag("--batch-sizes", "4,8,4", 1, 65536), InputError, "'4' is listed twice");
  EXPECT_THROW_WITH(int_list_flag("--batch-sizes", "4,08,8", 1, 65536), InputError, "8 is listed twice");
  EXPECT_THROW_WITH(int_list_flag("--batch-sizes", "4x", 1, 65536), InputError, "'4x' is not a whole number");
  EXPECT_THROW_WITH(int_list_flag("--batch-sizes", "1e3", 1, 65536), InputError, "not a whole number");
  EXPECT_THROW_WITH(int_list_flag("--batch-sizes", " 4", 1, 65536), InputError, "not a whole number");
}

TEST(Flags, SizesAreAboveZeroAndFitInt64) {
  using torchprobe::byte_size_flag;
  EXPECT_EQ(byte_size_flag("--cpu-limit", "512MiB"), 512LL << 20);
  EXPECT_THROW_WITH(byte_size_flag("--cpu-limit", "0"), InputError, "--cpu-limit: the size must be above 0");
  EXPECT_THROW_WITH(byte_size_flag("--cpu-limit", "99999999999999999999999"), InputError, "bytes is too large");
  EXPECT_THROW_WITH(byte_size_flag("--cpu-limit", "lots"), InputError, "expected a size like 512MiB");
}

TEST(Io, FileIsReplacedWholeAndNoTemporaryIsLeft) {
  const TempDir dir;
  const fs::path file = dir.path() / "sub" / "out.json";
  io::write_text_file(file.string(), "first");
  io::write_text_file(file.string(), "second");
  EXPECT_EQ(slurp(file), "second");
  EXPECT_EQ(listing(file.parent_path()), std::vector<std::string>{"out.json"});
}

TEST(Io, FileSetIsStagedWholeBeforeAnyFileIsReplaced) {
  const TempDir dir;
  io::write_file_set(dir.path().string(), {{"a.csv", "old a"}, {"b.md", "old b"}});
  // The second file cannot be staged (its name is a path into a directory that does not exist): the
  // first must not have been replaced, and the staging directory must be gone.
  EXPECT_THROW_WITH(io::write_file_set(dir.path().string(), {{"a.csv", "new a"}, {"missing/b.md", "new b"}}), io::WriteError,
                    "missing/b.md");
  EXPECT_EQ(slurp(dir.path() / "a.csv"), "old a");
  EXPECT_EQ(slurp(dir.path() / "b.md"), "old b");
  EXPECT_EQ(listing(dir.path()), (std::vector<std::string>{"a.csv", "b.md"}));
  io::write_file_set(dir.path().string(), {{"a.csv", "new a"}, {"b.md", "new b"}});
  EXPECT_EQ(slurp(dir.path() / "a.csv"), "new a");
  EXPECT_EQ(slurp(dir.path() / "b.md"), "new b");
  EXPECT_EQ(listing(dir.path()), (std::vector<std::string>{"a.csv", "b.md"}));
}

TEST(Io, ErrorsCarryTheReason) {
  EXPECT_THROW_WITH(io::write_text_file("/dev/null/x.json", "x"), io::WriteError, "Not a directory");
  EXPECT_THROW_WITH(io::write_file_set("/proc/torchprobe-no", {{"x", "y"}}), io::WriteError, "/proc/torchprobe-no");
  const TempDir dir;
  EXPECT_THROW_WITH(io::check_writable(dir.path().string()), io::WriteError, "it is a directory");
}

TEST(Interrupt, StopRequestsAreCheckedBetweenUnitsOfWork) {
  interrupt::reset_for_testing();
  EXPECT_FALSE(interrupt::requested());
  EXPECT_NO_THROW(interrupt::check());
  interrupt::request_stop("the results file cannot be written");
  interrupt::request_stop("a later reason");  // the first one wins
  EXPECT_TRUE(interrupt::requested());
  EXPECT_EQ(interrupt::exit_code(), 0);  // not a signal
  EXPECT_THROW_WITH(interrupt::check(), interrupt::Interrupted, "stopped: the results file cannot be written");
  interrupt::reset_for_testing();
  EXPECT_FALSE(interrupt::requested());
}

TEST(Interrupt, CleanupsAreRegisteredAndRemoved) {
  // TempDir registers its removal; once destroyed its cleanup is gone (a removed handle is a no-op).
  int handle = interrupt::add_cleanup([] {});
  interrupt::remove_cleanup(handle);
  interrupt::remove_cleanup(handle);
  EXPECT_EQ(interrupt::signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(interrupt::signal_name(SIGTERM), "SIGTERM");
}

TEST(Interrupt, GracefulSignalIsRecordedNotFatal) {
  // A forked copy of this test installs the graceful handler and signals itself: it must live on,
  // see the request, and report 128 + SIGTERM.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    interrupt::reset_for_testing();
    interrupt::install(interrupt::Mode::kGraceful);
    kill(getpid(), SIGTERM);
    for (int i = 0; i < 500 && !interrupt::requested(); ++i) usleep(1000);
    _exit(interrupt::requested() && interrupt::signal_number() == SIGTERM ? interrupt::exit_code() : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << subprocess::describe_status(status);
  EXPECT_EQ(WEXITSTATUS(status), 143);
}

TEST(Interrupt, ImmediateModeRunsTheCleanupsThenExits) {
  // Not in a TempDir: the forked child inherits that TempDir's own cleanup, which would remove the marker.
  std::string dir = (fs::temp_directory_path() / "torchprobe-marker-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string marker = dir + "/cleaned";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    interrupt::install(interrupt::Mode::kImmediate);
    interrupt::add_cleanup([marker] { std::ofstream(marker) << "yes"; });
    kill(getpid(), SIGINT);
    for (;;) pause();
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << subprocess::describe_status(status);
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_EQ(slurp(marker), "yes");
  fs::remove_all(dir);
}

TEST(Subprocess, ExitStatusLinesAndSignalsComeBack) {
  std::vector<std::string> out, err;
  subprocess::Options options;
  options.on_stdout_line = [&](const std::string& line) { out.push_back(line); };
  options.on_stderr_line = [&](const std::string& line) { err.push_back(line); };
  const int status = subprocess::run({"/bin/sh", "-c", "echo one; echo two; printf tail; echo oops >&2; exit 3"}, options);
  EXPECT_EQ(subprocess::describe_status(status), "exited with status 3");
  EXPECT_EQ(out, (std::vector<std::string>{"one", "two", "tail"}));
  EXPECT_EQ(err, std::vector<std::string>{"oops"});
  const int killed = subprocess::run({"/bin/sh", "-c", "kill -USR1 $$"}, options);
  EXPECT_EQ(subprocess::describe_status(killed), "was killed by SIGUSR1 (User defined signal 1)");
  EXPECT_THROW_WITH(subprocess::run({"/nonexistent/program"}), std::runtime_error,
                    "cannot run /nonexistent/program: No such file or directory");
  EXPECT_EQ(subprocess::last_lines("a\n\nb\nc\n", 2), "b | c");
}

TEST(Subprocess, TheChildDiesWithItsParent) {
  // A parent (forked here) starts a long child and is killed; the child must not outlive it.
  const TempDir dir;
  const std::string pid_file = dir.file("child.pid");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t parent = fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    subprocess::Options options;
    options.on_stdout_line = [&](const std::string& line) {
      std::ofstream(pid_file) << line;
      (void)!write(ready[1], "x", 1);
    };
    subprocess::run({"/bin/sh", "-c", "echo $$; exec sleep 60"}, options);
    _exit(0);
  }
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  const pid_t child = std::stoi(slurp(pid_file));
  kill(parent, SIGKILL);
  waitpid(parent, nullptr, 0);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    // The child is re-parented and reaped by init (or a subreaper) once killed; until then it may be a zombie.
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t paren = text.rfind(')');
    gone = text.empty() || (paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z');
    if (!gone) usleep(20000);
  }
  EXPECT_TRUE(gone) << "child " << child << " outlived its parent";
  close(ready[0]);
  close(ready[1]);
}

}  // namespace
