// The base library: flags read at parse time, files and file sets replaced whole, stop requests,
// child processes.
#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"
#include "torchprobe/cli_support.h"
#include "torchprobe/flags.h"
#include "torchprobe/input_error.h"
#include "torchprobe/interrupt.h"
#include "torchprobe/io.h"
#include "torchprobe/stats.h"
#include "torchprobe/strings.h"
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
  // Both bounds are inside: min and max are accepted, one beyond each refused.
  EXPECT_EQ(int_list_flag("--batch-sizes", "1,65536", 1, 65536), (std::vector<std::int64_t>{1, 65536}));
  EXPECT_THROW_WITH(int_list_flag("--batch-sizes", "65537", 1, 65536), InputError,
                    "65537 is out of range (1 to 65536)");
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(int_list_flag("--n", "9223372036854775807", 1, kMax), (std::vector<std::int64_t>{kMax}));
  EXPECT_THROW_WITH(int_list_flag("--n", "9223372036854775808", 1, kMax), InputError, "out of range");
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

// An empty item anywhere in a list is refused: first, between two commas, and last (a trailing comma is a
// list cut short, e.g. a shell variable that expanded to nothing), for string lists as for integer ones.
TEST(Flags, AnEmptyItemIsRefusedWhereverItStands) {
  using torchprobe::list_flag;
  EXPECT_EQ(list_flag("--devices", "cpu,cuda:0"), (std::vector<std::string>{"cpu", "cuda:0"}));
  EXPECT_EQ(list_flag("--devices", "cpu"), (std::vector<std::string>{"cpu"}));
  EXPECT_THROW_WITH(list_flag("--devices", "cpu,cuda:0,"), InputError, "--devices: empty item in 'cpu,cuda:0,'");
  EXPECT_THROW_WITH(list_flag("--devices", ",cpu"), InputError, "--devices: empty item in ',cpu'");
  EXPECT_THROW_WITH(list_flag("--devices", "cpu,,cuda:0"), InputError, "empty item");
  EXPECT_THROW_WITH(list_flag("--devices", ","), InputError, "empty item");
  EXPECT_THROW_WITH(torchprobe::int_list_flag("--batch-sizes", "4,64,", 1, 65536), InputError, "empty item in '4,64,'");
  // A list split already (CLI11's): the same rule and words, quoting the list as given.
  using torchprobe::check_list_items;
  EXPECT_NO_THROW(check_list_items("--dtypes", {"bf16", "fp32"}, "bf16,fp32"));
  EXPECT_NO_THROW(check_list_items("--dtypes", {}, ""));
  EXPECT_THROW_WITH(check_list_items("--dtypes", {"bf16", "fp32", "bf16"}, "bf16,fp32,bf16"), InputError,
                    "--dtypes: 'bf16' is listed twice in 'bf16,fp32,bf16'");
  EXPECT_THROW_WITH(check_list_items("--ops", {"add", ""}, "add,"), InputError, "--ops: empty item in 'add,'");
}

// The one splitter behind every comma list (flags, GLOO_SOCKET_IFNAME): every item, the empty ones at either end too.
TEST(Strings, SplitKeepsEveryItemEmptyOnesIncluded) {
  using V = std::vector<std::string>;
  EXPECT_EQ(torchprobe::split("a,b", ','), (V{"a", "b"}));
  EXPECT_EQ(torchprobe::split("a,,b", ','), (V{"a", "", "b"}));
  EXPECT_EQ(torchprobe::split(",a,", ','), (V{"", "a", ""}));
  EXPECT_EQ(torchprobe::split("", ','), (V{""}));
  EXPECT_EQ(torchprobe::split("abc", ','), (V{"abc"}));
  EXPECT_EQ(torchprobe::split("eth0;eth1", ';'), (V{"eth0", "eth1"}));
}

TEST(Flags, SizesAreAboveZeroAndFitInt64) {
  using torchprobe::byte_size_flag;
  EXPECT_EQ(byte_size_flag("--cpu-limit", "512MiB"), 512LL << 20);
  EXPECT_EQ(byte_size_flag("--cpu-limit", "1"), 1);  // the smallest size: one byte above the refused 0
  EXPECT_THROW_WITH(byte_size_flag("--cpu-limit", "0"), InputError, "--cpu-limit: the size must be above 0");
  EXPECT_THROW_WITH(byte_size_flag("--cpu-limit", "99999999999999999999999"), InputError, "bytes is too large");
  EXPECT_THROW_WITH(byte_size_flag("--cpu-limit", "lots"), InputError, "expected a size like 512MiB");
}

// stats.h is layer 0 (the reporter's and the benchmarks' one summary), so its test is too.
TEST(Stats, SummaryIsExact) {
  using torchprobe::Stats;
  using torchprobe::summarize;
  const Stats s = summarize({4.0, 1.0, 3.0, 2.0});
  EXPECT_EQ(s.samples, 4);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 4.0);
  EXPECT_NEAR(s.stddev, 1.2909944487, 1e-9);  // sqrt(5/3)
  EXPECT_NEAR(s.cv_pct, 51.63977795, 1e-6);
  const Stats odd = summarize({9.0, -2.0, 5.0});
  EXPECT_DOUBLE_EQ(odd.median, 5.0);
  EXPECT_DOUBLE_EQ(odd.min, -2.0);
  EXPECT_DOUBLE_EQ(odd.max, 9.0);
  EXPECT_DOUBLE_EQ(odd.mean, 4.0);
  const Stats one = summarize({7.0});
  EXPECT_DOUBLE_EQ(one.median, 7.0);
  EXPECT_DOUBLE_EQ(one.min, 7.0);
  EXPECT_DOUBLE_EQ(one.max, 7.0);
  EXPECT_DOUBLE_EQ(one.stddev, 0.0);
  EXPECT_DOUBLE_EQ(one.cv_pct, 0.0);
  const Stats negative = summarize({-1.0, -3.0});  // a CV needs a positive mean
  EXPECT_NEAR(negative.stddev, 1.4142135624, 1e-9);
  EXPECT_DOUBLE_EQ(negative.cv_pct, 0.0);
  EXPECT_DOUBLE_EQ(torchprobe::median({5.0, 1.0, 3.0}), 3.0);
  EXPECT_THROW_WITH(summarize({}), std::invalid_argument, "empty sample");
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

TEST(Flags, SizesHaveAnUpperBoundThatIsSaid) {
  using torchprobe::byte_size_flag;
  EXPECT_EQ(byte_size_flag("--max-bytes", "16GiB", 16LL << 30), 16LL << 30);
  EXPECT_THROW_WITH(byte_size_flag("--max-bytes", "1000000TiB", 16LL << 30), InputError,
                    "--max-bytes: 1000000TiB is above the largest size this flag takes, 16.00 GiB");
  EXPECT_THROW_WITH(byte_size_flag("--max-bytes", "16GiB", (16LL << 30) - 1), InputError, "above the largest size");
}

TEST(Flags, NumericRangesRefuseWhatIsNotANumber) {
  const auto check = [](CLI::Validator v, std::string text) { return v(text); };
  const auto alpha = torchprobe::in_range(1e-9, 0.5);
  EXPECT_EQ(check(alpha, "0.05"), "");
  EXPECT_EQ(check(alpha, "1e-9"), "");  // both bounds are inside
  EXPECT_EQ(check(alpha, "0.5"), "");
  EXPECT_EQ(check(alpha, "0"), "Value 0 not in range 1e-09 to 0.5");
  EXPECT_EQ(check(alpha, "0.5000001"), "Value 0.5000001 not in range 1e-09 to 0.5");
  for (const std::string bad : {"nan", "NaN", "-nan", "inf", "-inf", "infinity", "1e999"}) {
    EXPECT_EQ(check(alpha, bad), "Value " + bad + " is not a finite number (range 1e-09 to 0.5)") << bad;
  }
  EXPECT_EQ(check(alpha, "0.05x"), "'0.05x' is not a number");
  EXPECT_EQ(check(alpha, ""), "'' is not a number");
  const auto count = torchprobe::in_range<std::int64_t>(0, 1000000);
  EXPECT_EQ(check(count, "0"), "");
  EXPECT_EQ(check(count, "+7"), "");
  EXPECT_EQ(check(count, "-1"), "Value -1 not in range 0 to 1000000");  // never wrapped into a huge count
  EXPECT_EQ(check(count, "1000001"), "Value 1000001 not in range 0 to 1000000");
  EXPECT_EQ(check(count, "99999999999999999999"), "Value 99999999999999999999 not in range 0 to 1000000");
  EXPECT_EQ(check(count, "1.5"), "'1.5' is not a whole number");
  EXPECT_EQ(check(count, "nan"), "'nan' is not a whole number");
}

TEST(Io, TextIsReadAsUtf8WhateverItsByteOrderMark) {
  EXPECT_EQ(io::decode_text("plain"), "plain");
  EXPECT_EQ(io::decode_text("\xEF\xBB\xBF{}"), "{}");
  // "{é😀}" in UTF-16LE and UTF-16BE with their marks; a lone surrogate becomes U+FFFD.
  EXPECT_EQ(io::decode_text(std::string("\xFF\xFE{\0\xE9\0\x3D\xD8\x00\xDE}\0", 12)), "{\xC3\xA9\xF0\x9F\x98\x80}");
  EXPECT_EQ(io::decode_text(std::string("\xFE\xFF\0{\0\xE9\xD8\x3D\xDE\x00\0}", 12)), "{\xC3\xA9\xF0\x9F\x98\x80}");
  EXPECT_EQ(io::decode_text(std::string("\xFF\xFE\x00\xD8x\0", 6)), "\xEF\xBF\xBDx");
  // The three-byte forms: U+20AC (the euro sign), U+0800 (the first) and U+FFFD's neighbour U+FFFC (the last
  // below the surrogate-free top); U+07FF is still two bytes. A lone low surrogate is U+FFFD too.
  EXPECT_EQ(io::decode_text(std::string("\xFF\xFE\xAC\x20\x00\x08\xFC\xFF\xFF\x07", 10)),
            "\xE2\x82\xAC\xE0\xA0\x80\xEF\xBF\xBC\xDF\xBF");
  EXPECT_EQ(io::decode_text(std::string("\xFE\xFF\x20\xAC\x08\x00", 6)), "\xE2\x82\xAC\xE0\xA0\x80");
  EXPECT_EQ(io::decode_text(std::string("\xFF\xFE\x00\xDCx\0", 6)), "\xEF\xBF\xBDx");
}

// A pipe that ends within the limit is read whole, up to exactly the limit; one byte more is refused.
TEST(Io, APipeIsReadWholeUpToExactlyItsLimit) {
  const auto through_a_pipe = [](size_t bytes, size_t limit) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    const pid_t writer = fork();
    if (writer == 0) {
      close(fds[0]);
      const std::string block(bytes, 'x');
      for (size_t done = 0; done < block.size();) {
        const ssize_t n = write(fds[1], block.data() + done, block.size() - done);
        if (n <= 0) _exit(1);
        done += static_cast<size_t>(n);
      }
      _exit(0);
    }
    close(fds[1]);
    std::string text;
    try {
      text = io::read_stream(fds[0], "stdin", limit);
    } catch (...) {
      close(fds[0]);
      waitpid(writer, nullptr, 0);
      throw;
    }
    close(fds[0]);
    waitpid(writer, nullptr, 0);
    return text;
  };
  EXPECT_EQ(through_a_pipe(1 << 20, 1 << 20).size(), size_t{1} << 20);
  EXPECT_EQ(through_a_pipe(1000, 1 << 20).size(), 1000u);
  EXPECT_THROW_WITH(through_a_pipe((1 << 20) + 1, 1 << 20), InputError, "stdin: more than 1 MiB from a pipe");
}

TEST(Io, InputsThatAreNotFilesAreRefusedOrBounded) {
  EXPECT_THROW_WITH(io::read_text_file("/dev/zero"), InputError, "/dev/zero: is a character device, not a file");
  const TempDir dir;
  EXPECT_THROW_WITH(io::read_text_file(dir.path().string()), InputError, "is a directory, not a file");
  // A pipe is read up to the limit, then refused, however much more it would give.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t writer = fork();
  if (writer == 0) {
    close(fds[0]);
    const std::string block(4096, 'x');
    while (write(fds[1], block.data(), block.size()) > 0) {
    }
    _exit(0);
  }
  close(fds[1]);
  EXPECT_THROW_WITH(io::read_stream(fds[0], "stdin", 1 << 20), InputError, "stdin: more than 1 MiB from a pipe");
  close(fds[0]);
  waitpid(writer, nullptr, 0);
}

TEST(Io, StandardStreamsNamedAsFilesAreThoseStreams) {
  // `--junit /dev/stderr` goes to the error stream as a shell's redirection would, `/dev/stdout` to the output;
  // /dev/fd/N to descriptor N. A forked child points its descriptors 1, 2 and 5 at three files and writes to each name.
  const TempDir dir;
  const std::string out = (dir.path() / "out").string(), err = (dir.path() / "err").string(),
                    five = (dir.path() / "five").string();
  std::fflush(nullptr);  // nothing this process buffered may reach the child's files
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const auto point = [](const std::string& path, int fd) {
      const int f = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      return f >= 0 && dup2(f, fd) == fd;
    };
    if (!point(out, STDOUT_FILENO) || !point(err, STDERR_FILENO) || !point(five, 5)) _exit(1);
    try {
      io::write_text_file("/dev/stderr", "to the errors\n");
      io::write_text_file("/dev/stdout", "to the output\n");
      io::write_text_file("/dev/fd/5", "to five\n");
    } catch (...) {
      _exit(2);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << subprocess::describe_status(status);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(slurp(err), "to the errors\n");
  EXPECT_EQ(slurp(out), "to the output\n");
  EXPECT_EQ(slurp(five), "to five\n");
}

TEST(Io, OnlyRegularFilesAreReplaced) {
  const TempDir dir;
  const fs::path target = dir.path() / "real.md", link = dir.path() / "link.md";
  fs::create_symlink("sub/real.md", link);
  fs::create_directory(dir.path() / "sub");
  io::write_text_file(link.string(), "through the link");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(dir.path() / "sub" / "real.md"), "through the link");
  EXPECT_FALSE(io::replaces_whole("/dev/stdout"));
  EXPECT_TRUE(io::replaces_whole(link.string()));
  // A named pipe is written to, never replaced.
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(io::replaces_whole(fifo.string()));
  io::check_writable(fifo.string());  // no reader yet: fine
  const pid_t reader = fork();
  if (reader == 0) {
    std::ifstream in(fifo);
    std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    _exit(got == "into the pipe" ? 0 : 1);
  }
  io::write_text_file(fifo.string(), "into the pipe");
  int status = 0;
  waitpid(reader, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  struct stat st {};
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // Devices: a private node in the test's directory (root only), so a regression never touches /dev.
  const fs::path block = dir.path() / "blk", null = dir.path() / "null";
  if (mknod(block.c_str(), S_IFBLK | 0600, makedev(7, 250)) == 0 && mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) {
    EXPECT_THROW_WITH(io::write_text_file(block.string(), "x"), io::WriteError, "it is a block device, not a regular file");
    EXPECT_THROW_WITH(io::check_writable(block.string()), io::WriteError, "it is a block device");
    io::write_text_file(null.string(), "gone");
    ASSERT_EQ(lstat(block.c_str(), &st), 0);
    EXPECT_TRUE(S_ISBLK(st.st_mode));
    ASSERT_EQ(lstat(null.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_THROW_WITH(io::write_file_set(dir.path().string(), {{"null", "x"}}), io::WriteError,
                      "it is a character device, not a regular file (a file set replaces regular files only)");
  }
}

// The mode is 0666 less the umask whatever the umask (0644 under the usual 022), and a replaced file takes the new
// mode, not the old one (a file once written 0600 by hand is readable again after torchprobe writes it under 022).
TEST(Io, WrittenFilesGetTheUsualModeUnderTheUmask) {
  const TempDir dir;
  const auto mode_of = [](const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(stat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
  };
  for (const mode_t mask : {mode_t{022}, mode_t{077}, mode_t{002}, mode_t{0}, mode_t{027}}) {
    const std::string name = fmt::format("u{:03o}", mask);
    const mode_t old = umask(mask);
    io::write_text_file((dir.path() / (name + ".json")).string(), "x");
    io::write_file_set(dir.path().string(), {{name + ".md", "y"}});
    umask(old);
    EXPECT_EQ(mode_of(dir.path() / (name + ".json")), 0666u & ~mask) << name;
    EXPECT_EQ(mode_of(dir.path() / (name + ".md")), 0666u & ~mask) << name;
  }
  EXPECT_EQ(mode_of(dir.path() / "u022.json"), 0644u);
  EXPECT_EQ(mode_of(dir.path() / "u022.md"), 0644u);
  const fs::path file = dir.path() / "was_private.json";
  io::write_text_file(file.string(), "old");
  ASSERT_EQ(chmod(file.c_str(), 0600), 0);
  const mode_t old = umask(022);
  io::write_text_file(file.string(), "new");
  umask(old);
  EXPECT_EQ(mode_of(file), 0644u);
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

TEST(Interrupt, GracefulSignalIsRecordedThenASecondStopsAtOnce) {
  // A forked copy of this test installs the graceful handler and signals itself: it must live on and see the request
  // (128 + SIGTERM to exit with, once the current sample is done). A second SIGTERM (the user's second Ctrl-C) stops
  // it now with 128 + SIGTERM. The child waits far longer than either takes before giving up (exit 1 or 2).
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    interrupt::reset_for_testing();
    interrupt::install(interrupt::Mode::kGraceful);
    kill(getpid(), SIGTERM);
    for (int i = 0; i < 30000 && !interrupt::requested(); ++i) usleep(1000);
    if (!interrupt::requested() || interrupt::signal_number() != SIGTERM || interrupt::exit_code() != 143) _exit(1);
    kill(getpid(), SIGTERM);
    for (int i = 0; i < 30000; ++i) usleep(1000);
    _exit(2);  // still running: the second signal did not stop it
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << subprocess::describe_status(status);
  EXPECT_EQ(WEXITSTATUS(status), 143) << "1: the first signal was not recorded; 2: the second did not stop the process";
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
